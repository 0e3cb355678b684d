// python/src/dict_writer.cpp — Python objects from DocumentWriter calls.
#include "dict_writer.h"

#include <algorithm>
#include <stdexcept>
#include <string>
#include <unordered_map>

namespace py = pybind11;

namespace kvplan::python {
namespace {

// A document's keys are a few dozen field names written again on every answer: their Python
// strings are made once (a str caches its hash, so the dict insert does not hash it again). Kept
// for the life of the process (never destroyed after the interpreter), and bounded: past
// kMaxCachedKeys names a key is made afresh each time.
constexpr size_t kMaxCachedKeys = 4096;

struct NameHash {
  using is_transparent = void;
  size_t operator()(std::string_view s) const { return std::hash<std::string_view>{}(s); }
};

py::object key_object(std::string_view name) {
  static auto* cache = new std::unordered_map<std::string, py::object, NameHash, std::equal_to<>>();
  auto it = cache->find(name);
  if (it != cache->end()) return it->second;
  py::str made(name.data(), name.size());
  if (cache->size() < kMaxCachedKeys) cache->emplace(std::string(name), made);
  return made;
}

std::string_view utf8_of(const py::object& s) {
  Py_ssize_t size = 0;
  const char* data = PyUnicode_AsUTF8AndSize(s.ptr(), &size);  // owned by s (ASCII: its own buffer)
  if (data == nullptr) throw py::error_already_set();
  return {data, static_cast<size_t>(size)};
}

}  // namespace

void DictWriter::place(py::object v) {
  if (open_.empty()) {
    root_ = std::move(v);
    return;
  }
  Open& parent = open_.back();
  if (parent.is_object) {
    parent.members.push_back(Member{std::move(key_), key_text_, parent.members.size(), std::move(v)});
    key_text_ = {};
  } else {
    parent.items.push_back(std::move(v));
  }
}

void DictWriter::begin_object() { open_.push_back(Open{true, std::move(key_), key_text_, {}, {}}); }
void DictWriter::begin_array() { open_.push_back(Open{false, std::move(key_), key_text_, {}, {}}); }

void DictWriter::end() {
  if (open_.empty()) throw std::logic_error("DictWriter: end() with nothing open");
  Open closed = std::move(open_.back());
  open_.pop_back();
  key_ = std::move(closed.key);
  key_text_ = closed.key_text;
  if (!closed.is_object) {
    py::list list(closed.items.size());
    for (size_t i = 0; i < closed.items.size(); ++i) list[i] = std::move(closed.items[i]);
    place(std::move(list));
    return;
  }
  // In nlohmann::json's order (std::map of std::string: byte-wise); a repeated key, later written
  // later, overwrites the value and keeps its place.
  std::sort(closed.members.begin(), closed.members.end(), [](const Member& a, const Member& b) {
    return a.text != b.text ? a.text < b.text : a.order < b.order;
  });
  py::dict d;
  for (const Member& m : closed.members) {
    if (PyDict_SetItem(d.ptr(), m.key.ptr(), m.value.ptr()) != 0) throw py::error_already_set();
  }
  place(std::move(d));
}

void DictWriter::key(std::string_view name) {
  key_ = key_object(name);
  key_text_ = utf8_of(key_);
}
void DictWriter::null() { place(py::none()); }
void DictWriter::boolean(bool v) { place(py::bool_(v)); }
void DictWriter::integer(int64_t v) { place(py::int_(v)); }
void DictWriter::unsigned_integer(uint64_t v) { place(py::int_(v)); }
void DictWriter::number(double v) { place(py::float_(v)); }
void DictWriter::string(std::string_view v) { place(py::str(v.data(), v.size())); }

py::object DictWriter::take() {
  if (!open_.empty()) throw std::logic_error("DictWriter: take() with a value still open");
  return std::move(root_);
}

}  // namespace kvplan::python
