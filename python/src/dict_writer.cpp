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
// strings (and the UTF-8 views of them) are made once (a str caches its hash, so the dict insert
// does not hash it again). Kept for the life of the process (never destroyed after the
// interpreter), and bounded: past kMaxCachedKeys names a key is made afresh each time.
constexpr size_t kMaxCachedKeys = 4096;

struct NameHash {
  using is_transparent = void;
  size_t operator()(std::string_view s) const { return std::hash<std::string_view>{}(s); }
};

std::string_view utf8_of(const py::object& s) {
  Py_ssize_t size = 0;
  const char* data = PyUnicode_AsUTF8AndSize(s.ptr(), &size);  // owned by s (ASCII: its own buffer)
  if (data == nullptr) throw py::error_already_set();
  return {data, static_cast<size_t>(size)};
}

// An object's shape: its interned keys' identities in the order written. The same shapes recur on
// every answer (one per kind of object), so each one's sorted order is found once; bounded like
// the key cache, past which an order is sorted afresh each time.
using Shape = std::vector<const PyObject*>;
struct ShapeHash {
  size_t operator()(const Shape& s) const {
    size_t h = s.size();
    for (const PyObject* p : s) h = h * 1099511628211u ^ std::hash<const void*>{}(p);
    return h;
  }
};
constexpr size_t kMaxCachedShapes = 1024;

}  // namespace

void DictWriter::place(py::object v) {
  if (open_.empty()) {
    root_ = std::move(v);
    return;
  }
  const Open& parent = open_.back();
  if (parent.is_object) {
    members_.push_back(Member{std::move(key_), static_cast<uint32_t>(members_.size() - parent.first), std::move(v)});
    key_ = Key{};
  } else {
    items_.push_back(std::move(v));
  }
}

void DictWriter::begin_object() { open_.push_back(Open{true, std::move(key_), members_.size()}); }
void DictWriter::begin_array() { open_.push_back(Open{false, std::move(key_), items_.size()}); }

void DictWriter::end() {
  if (open_.empty()) throw std::logic_error("DictWriter: end() with nothing open");
  Open closed = std::move(open_.back());
  open_.pop_back();
  key_ = std::move(closed.key);
  if (!closed.is_object) {
    const size_t n = items_.size() - closed.first;
    py::list list(n);
    for (size_t i = 0; i < n; ++i) PyList_SET_ITEM(list.ptr(), i, items_[closed.first + i].release().ptr());
    items_.resize(closed.first);
    place(std::move(list));
    return;
  }
  py::dict d;
  for (uint32_t i : sorted_order(closed.first)) {
    const Member& m = members_[closed.first + i];
    if (PyDict_SetItem(d.ptr(), m.key.object.ptr(), m.value.ptr()) != 0) throw py::error_already_set();
  }
  members_.resize(closed.first);
  place(std::move(d));
}

const std::vector<uint32_t>& DictWriter::sorted_order(size_t first) {
  static auto* shapes = new std::unordered_map<Shape, std::vector<uint32_t>, ShapeHash>();
  const auto begin = members_.begin() + static_cast<std::ptrdiff_t>(first);
  const bool interned = std::all_of(begin, members_.end(), [](const Member& m) { return m.key.interned; });
  if (interned) {
    shape_.clear();
    for (auto it = begin; it != members_.end(); ++it) shape_.push_back(it->key.object.ptr());
    auto found = shapes->find(shape_);
    if (found != shapes->end()) return found->second;
  }
  // In nlohmann::json's order (std::map of std::string: byte-wise); a repeated key, later written
  // later, overwrites the value and keeps its place.
  order_.resize(members_.size() - first);
  for (uint32_t i = 0; i < order_.size(); ++i) order_[i] = i;
  std::sort(order_.begin(), order_.end(), [&](uint32_t a, uint32_t b) {
    const Member& x = *(begin + a);
    const Member& y = *(begin + b);
    return x.key.text != y.key.text ? x.key.text < y.key.text : x.order < y.order;
  });
  if (interned && shapes->size() < kMaxCachedShapes) return shapes->emplace(shape_, order_).first->second;
  return order_;
}

void DictWriter::key(std::string_view name) {
  // Most names are string literals at fixed addresses: a direct-mapped table on the address finds
  // them without hashing the text (the text is still compared: an address may be reused).
  struct Recent {
    const char* data = nullptr;
    Key key;
  };
  static auto* recent = new std::vector<Recent>(512);
  Recent& slot = (*recent)[(reinterpret_cast<uintptr_t>(name.data()) >> 3) & (recent->size() - 1)];
  if (slot.data == name.data() && slot.key.text == name) {
    key_ = slot.key;
    return;
  }
  static auto* cache = new std::unordered_map<std::string, Key, NameHash, std::equal_to<>>();
  auto it = cache->find(name);
  if (it != cache->end()) {
    key_ = it->second;
  } else {
    py::str made(name.data(), name.size());
    key_ = Key{made, utf8_of(made), cache->size() < kMaxCachedKeys};
    if (!key_.interned) return;
    cache->emplace(std::string(name), key_);
  }
  slot = Recent{name.data(), key_};
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
