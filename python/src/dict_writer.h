// python/src/dict_writer.h — a DocumentWriter that builds Python dicts, lists and scalars directly,
// without an nlohmann::json in between (Scenario.memory()). Each dict's keys are in sorted order,
// as the dict made from the JSON document had them (nlohmann::json keeps an object's keys sorted),
// so the result and json.dumps of it are what they were.
#pragma once

#include <pybind11/pybind11.h>

#include <cstddef>
#include <cstdint>
#include <string_view>
#include <vector>

#include "kvplan/core/document_writer.h"

namespace kvplan::python {

class DictWriter final : public DocumentWriter {
 public:
  void begin_object() override;
  void begin_array() override;
  void end() override;
  void key(std::string_view name) override;
  void null() override;
  void boolean(bool v) override;
  void integer(int64_t v) override;
  void unsigned_integer(uint64_t v) override;
  void number(double v) override;
  void string(std::string_view v) override;
  pybind11::object take();  // once the outermost value is closed

 private:
  // A key as written: its Python string and that string's UTF-8 (owned by the string).
  struct Key {
    pybind11::object object;
    std::string_view text;
    bool interned = false;  // the process-wide object for its name (stable identity)
  };
  struct Member {
    Key key;
    uint32_t order = 0;  // when it was written: a repeated key keeps its last value, as in the JSON
    pybind11::object value;
  };
  // An open object or array: its values are the tail of members_ or items_ from `first` on (one
  // stack for all levels, so no container is made per value).
  struct Open {
    bool is_object = false;
    Key key;  // where it goes in the object around it, placed when it closes
    size_t first = 0;
  };
  void place(pybind11::object v);
  // Indices (from `first`) of members_'s tail in nlohmann::json's key order (byte-wise, then as written).
  const std::vector<uint32_t>& sorted_order(size_t first);

  pybind11::object root_;
  std::vector<Open> open_;
  std::vector<Member> members_;
  std::vector<pybind11::object> items_;
  Key key_;
  std::vector<uint32_t> order_;            // scratch for sorted_order
  std::vector<const PyObject*> shape_;     // scratch for sorted_order
};

}  // namespace kvplan::python
