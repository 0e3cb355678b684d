// kvplan/core/document_writer.h — a JSON-shaped document (objects, arrays, scalars) written once,
// value by value, to whatever builds it: an nlohmann::json (what the CLI prints) or, in the Python
// module, dicts and lists directly. One function describes an answer's fields; each output is a
// writer, so the JSON and the Python dict cannot drift apart.
//
//   JsonDocumentWriter w;
//   w.begin_object();
//   write_field(w, "model", std::string("llama-3.1-8b"));
//   write_field(w, "num_blocks", int64_t{27815});
//   w.end();
//   nlohmann::json j = w.take();          // {"model": "llama-3.1-8b", "num_blocks": 27815}
//
// Values keep their C++ kind as nlohmann::json would: bool, signed and unsigned integers, floating
// point, strings and null stay distinct (a byte count written as int64_t is an integer in both
// outputs, a double is a float).
#pragma once

#include <concepts>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

namespace kvplan {

class DocumentWriter {
 public:
  virtual ~DocumentWriter() = default;
  virtual void begin_object() = 0;
  virtual void begin_array() = 0;
  virtual void end() = 0;                         // closes the innermost open object or array
  virtual void key(std::string_view name) = 0;    // in an object: the next value's key
  virtual void null() = 0;
  virtual void boolean(bool v) = 0;
  virtual void integer(int64_t v) = 0;
  virtual void unsigned_integer(uint64_t v) = 0;
  virtual void number(double v) = 0;
  virtual void string(std::string_view v) = 0;
};

// One value by its C++ type.
inline void write_value(DocumentWriter& w, bool v) { w.boolean(v); }
inline void write_value(DocumentWriter& w, std::nullptr_t) { w.null(); }
template <std::signed_integral T>
void write_value(DocumentWriter& w, T v) {
  w.integer(v);
}
template <std::unsigned_integral T>
  requires(!std::same_as<T, bool>)
void write_value(DocumentWriter& w, T v) {
  w.unsigned_integer(v);
}
template <std::floating_point T>
void write_value(DocumentWriter& w, T v) {
  w.number(v);
}
inline void write_value(DocumentWriter& w, std::string_view v) { w.string(v); }
inline void write_value(DocumentWriter& w, const std::string& v) { w.string(v); }
inline void write_value(DocumentWriter& w, const char* v) { w.string(v); }
inline void write_value(DocumentWriter& w, const std::vector<std::string>& v) {
  w.begin_array();
  for (const std::string& s : v) w.string(s);
  w.end();
}

// key, then value, in the open object.
template <class T>
void write_field(DocumentWriter& w, std::string_view name, const T& v) {
  w.key(name);
  write_value(w, v);
}

// Builds an nlohmann::json; take() once the outermost value is closed.
class JsonDocumentWriter final : public DocumentWriter {
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
  nlohmann::json take();

 private:
  nlohmann::json& place(nlohmann::json v);  // the new value at the open object's key or array's end

  nlohmann::json root_;
  std::vector<nlohmann::json*> open_;  // the open objects and arrays, innermost last
  std::string key_;
  bool has_root_ = false;
};

}  // namespace kvplan
