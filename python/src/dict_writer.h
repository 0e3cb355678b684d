// python/src/dict_writer.h — a DocumentWriter that builds Python dicts, lists and scalars directly,
// without an nlohmann::json in between (Scenario.memory()). Each dict's keys are in sorted order,
// as the dict made from the JSON document had them (nlohmann::json keeps an object's keys sorted),
// so the result and json.dumps of it are what they were.
#pragma once

#include <pybind11/pybind11.h>

#include <cstddef>
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
  struct Member {
    pybind11::object key;
    std::string_view text;  // the key's UTF-8, owned by `key`
    size_t order = 0;       // when it was written: a repeated key keeps its last value, as in the JSON
    pybind11::object value;
  };
  struct Open {
    bool is_object = false;
    pybind11::object key;   // where it goes in the object around it, placed when it closes
    std::string_view key_text;
    std::vector<pybind11::object> items;  // an array's values, until it closes
    std::vector<Member> members;          // an object's, until it closes
  };
  void place(pybind11::object v);

  pybind11::object root_;
  std::vector<Open> open_;
  pybind11::object key_;
  std::string_view key_text_;
};

}  // namespace kvplan::python
