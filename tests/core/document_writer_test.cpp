// JsonDocumentWriter (core/document_writer.h): nested objects and arrays, each C++ kind kept as the
// JSON kind nlohmann::json would give it, and misuse refused.
#include "kvplan/core/document_writer.h"

#include <cstdint>
#include <stdexcept>
#include <string>
#include <vector>

#include <gtest/gtest.h>

namespace kvplan {
namespace {

TEST(DocumentWriter, BuildsWhatNlohmannWouldFromTheSameValues) {
  JsonDocumentWriter w;
  w.begin_object();
  write_field(w, "name", std::string("llama"));
  write_field(w, "layers", 32);                     // int
  write_field(w, "bytes", int64_t{1} << 40);        // int64_t
  write_field(w, "blocks", size_t{7});              // unsigned
  write_field(w, "ratio", 0.5);                     // double
  write_field(w, "fits", true);
  write_field(w, "price", nullptr);
  write_field(w, "notes", std::vector<std::string>{"a", "b"});
  w.key("terms");
  w.begin_array();
  for (int i = 0; i < 2; ++i) {
    w.begin_object();
    write_field(w, "i", i);
    w.key("empty");
    w.begin_array();
    w.end();
    w.end();
  }
  w.end();
  w.key("sources");
  w.begin_object();
  write_field(w, "gpu", "datasheet");
  w.end();
  w.end();
  const nlohmann::json got = w.take();

  nlohmann::json want;
  want["name"] = std::string("llama");
  want["layers"] = 32;
  want["bytes"] = int64_t{1} << 40;
  want["blocks"] = size_t{7};
  want["ratio"] = 0.5;
  want["fits"] = true;
  want["price"] = nullptr;
  want["notes"] = std::vector<std::string>{"a", "b"};
  want["terms"] = nlohmann::json::array({{{"i", 0}, {"empty", nlohmann::json::array()}},
                                         {{"i", 1}, {"empty", nlohmann::json::array()}}});
  want["sources"] = {{"gpu", "datasheet"}};
  EXPECT_EQ(got, want);
  EXPECT_EQ(got.dump(), want.dump());
  EXPECT_TRUE(got["layers"].is_number_integer() && !got["layers"].is_number_unsigned());
  EXPECT_TRUE(got["blocks"].is_number_unsigned());
  EXPECT_TRUE(got["ratio"].is_number_float());
  EXPECT_TRUE(got["price"].is_null());
}

TEST(DocumentWriter, ARepeatedKeyKeepsTheLastValueAsNlohmannDoes) {
  JsonDocumentWriter w;
  w.begin_object();
  write_field(w, "x", 1);
  write_field(w, "x", 2);
  w.end();
  EXPECT_EQ(w.take().dump(), R"({"x":2})");
}

TEST(DocumentWriter, ATopLevelScalarOrArrayIsADocumentToo) {
  JsonDocumentWriter a;
  a.integer(-3);
  EXPECT_EQ(a.take().dump(), "-3");
  JsonDocumentWriter b;
  b.begin_array();
  b.string("s");
  b.end();
  EXPECT_EQ(b.take().dump(), R"(["s"])");
}

TEST(DocumentWriter, MisuseIsRefusedNotGuessed) {
  JsonDocumentWriter w;
  EXPECT_THROW(w.end(), std::logic_error);  // nothing open
  w.begin_object();
  EXPECT_THROW(w.take(), std::logic_error);  // still open
  w.end();
  JsonDocumentWriter two;
  two.integer(1);
  EXPECT_THROW(two.integer(2), std::logic_error);  // a second top-level value
}

}  // namespace
}  // namespace kvplan
