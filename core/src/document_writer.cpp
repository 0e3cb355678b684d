// core/src/document_writer.cpp — the nlohmann::json builder behind DocumentWriter.
#include "kvplan/core/document_writer.h"

#include <stdexcept>
#include <utility>

namespace kvplan {

// A pointer to an open container stays valid while it is open: an object's members live in
// std::map nodes, and an open array's element is its last, appended to only after it closes.
nlohmann::json& JsonDocumentWriter::place(nlohmann::json v) {
  if (open_.empty()) {
    if (has_root_) throw std::logic_error("JsonDocumentWriter: a second value at the top level");
    has_root_ = true;
    root_ = std::move(v);
    return root_;
  }
  nlohmann::json& parent = *open_.back();
  if (parent.is_object()) return parent[key_] = std::move(v);
  parent.push_back(std::move(v));
  return parent.back();
}

void JsonDocumentWriter::begin_object() { open_.push_back(&place(nlohmann::json::object())); }
void JsonDocumentWriter::begin_array() { open_.push_back(&place(nlohmann::json::array())); }
void JsonDocumentWriter::end() {
  if (open_.empty()) throw std::logic_error("JsonDocumentWriter: end() with nothing open");
  open_.pop_back();
}
void JsonDocumentWriter::key(std::string_view name) { key_.assign(name); }
void JsonDocumentWriter::null() { place(nullptr); }
void JsonDocumentWriter::boolean(bool v) { place(v); }
void JsonDocumentWriter::integer(int64_t v) { place(v); }
void JsonDocumentWriter::unsigned_integer(uint64_t v) { place(v); }
void JsonDocumentWriter::number(double v) { place(v); }
void JsonDocumentWriter::string(std::string_view v) { place(std::string(v)); }

nlohmann::json JsonDocumentWriter::take() {
  if (!open_.empty()) throw std::logic_error("JsonDocumentWriter: take() with a value still open");
  has_root_ = false;
  return std::move(root_);
}

}  // namespace kvplan
