// Trace readers: small files written here for each format with values checked by hand, malformed
// rows, and the traces shipped in data/traces (row counts and known rows).
#include "kvplan/sim/trace.h"

#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <functional>
#include <initializer_list>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "kvplan/core/error.h"

namespace kvplan::sim {
namespace {

// A file under the test temp dir; the pid keeps concurrent runs of this binary apart.
std::string write_file(const std::string& name, const std::string& content) {
  const std::string path = ::testing::TempDir() + "kvplan_" + std::to_string(::getpid()) + "_" + name;
  std::ofstream(path, std::ios::binary) << content;
  return path;
}

std::string shipped(const std::string& name) { return std::string(KVPLAN_SOURCE_DIR) + "/data/traces/" + name; }

std::vector<RequestSpec> read_all(const std::string& path, const TraceOptions& options = {}) {
  std::vector<RequestSpec> out;
  auto source = open_trace(path, options);
  while (auto r = source->next()) out.push_back(*r);
  return out;
}

void expect_config_error(const std::function<void()>& f, std::initializer_list<std::string> parts) {
  try {
    f();
    ADD_FAILURE() << "expected ConfigError";
  } catch (const ConfigError& e) {
    for (const std::string& part : parts) EXPECT_NE(std::string(e.what()).find(part), std::string::npos) << e.what();
  }
}

void expect_bad_trace(const std::string& name, const std::string& content, std::initializer_list<std::string> parts) {
  const std::string path = write_file(name, content);
  expect_config_error([&] { read_all(path); }, parts);
}

const char* const kAzureHeader = "TIMESTAMP,ContextTokens,GeneratedTokens\n";

TEST(TraceTest, AzureTimestampsAcrossMinuteHourDayAndYear) {
  // CRLF line ends and no final newline, as Windows tools write them.
  const std::string path = write_file("azure.csv",
                                      "TIMESTAMP,ContextTokens,GeneratedTokens\r\n"
                                      "2023-12-31 23:59:59.9999999,374,44\r\n"
                                      "2024-01-01 00:00:00.5,396,109\r\n"
                                      "2024-01-01 00:01:00,10,0\r\n"
                                      "2024-01-01 01:00:00.000000001,20,5");
  EXPECT_EQ(detect_trace_format(path), TraceFormat::kAzureCsv);
  const auto rs = read_all(path);
  ASSERT_EQ(rs.size(), 4u);
  EXPECT_EQ(rs[0].arrival_ns, 0);
  EXPECT_EQ(rs[1].arrival_ns, 500'000'100);         // 0.5 s + 100 ns to the new year
  EXPECT_EQ(rs[2].arrival_ns, 60'000'000'100);      // a minute later
  EXPECT_EQ(rs[3].arrival_ns, 3'600'000'000'101);   // an hour, 100 ns and the 9th fraction digit
  EXPECT_EQ(rs[0].prompt_tokens, 374);
  EXPECT_EQ(rs[0].output_tokens, 44);
  EXPECT_EQ(rs[2].output_tokens, 1);  // 0 read as 1
  for (size_t i = 0; i < rs.size(); ++i) {
    EXPECT_EQ(rs[i].id, static_cast<int64_t>(i));
    EXPECT_EQ(rs[i].hash_block_tokens, 0);
    EXPECT_TRUE(rs[i].prefix_hashes.empty());
  }
  const std::string text = open_trace(path, {})->describe();  // before any row is read
  EXPECT_NE(text.find("azure.csv: 4 requests over 3600.0 s (Azure CSV); 1 zero-token outputs read as 1"),
            std::string::npos)
      << text;
}

TEST(TraceTest, AzureTimestampsFollowTheGregorianCalendar) {
  const std::string path = write_file("azure_leap.csv", std::string(kAzureHeader) +
                                                            "2023-02-28 23:00:00,1,1\n"
                                                            "2023-03-01 00:00:00,1,1\n"   // 2023: no Feb 29
                                                            "2024-02-28 23:00:00,1,1\n"   // 365 days on
                                                            "2024-03-01 00:00:00,1,1\n"); // + 25 h (Feb 29)
  const auto rs = read_all(path);
  ASSERT_EQ(rs.size(), 4u);
  EXPECT_EQ(rs[1].arrival_ns, 3'600 * kNsPerSecond);
  EXPECT_EQ(rs[2].arrival_ns, 31'536'000 * kNsPerSecond);           // 365 * 86'400 s
  EXPECT_EQ(rs[3].arrival_ns, (31'536'000 + 90'000) * kNsPerSecond);  // + 25 * 3'600 s
  expect_bad_trace("azure_feb29.csv", std::string(kAzureHeader) + "2023-02-29 00:00:00,1,1\n",
                   {"line 2", "field 'TIMESTAMP' value '2023-02-29 00:00:00'"});
}

TEST(TraceTest, AzureMalformedRowsNameLineFieldAndValue) {
  expect_bad_trace("azure_bad_hour.csv",
                   std::string(kAzureHeader) + "2023-11-16 18:15:46.6805900,374,44\n2023-11-16 25:00:00.0,1,1\n",
                   {"line 3", "field 'TIMESTAMP' value '2023-11-16 25:00:00.0' must be a time like"});
  expect_bad_trace("azure_bad_second.csv", std::string(kAzureHeader) + "2023-11-16 18:15:60,1,1\n",
                   {"line 2", "value '2023-11-16 18:15:60'"});  // no leap seconds
  expect_bad_trace("azure_bad_fraction.csv", std::string(kAzureHeader) + "2023-11-16 18:15:46.1234567890,1,1\n",
                   {"line 2", "TIMESTAMP"});
  expect_bad_trace("azure_order.csv",
                   std::string(kAzureHeader) + "2023-11-16 18:15:46.5,1,1\n\n2023-11-16 18:15:46.4,1,1\n",
                   {"line 4", "field 'TIMESTAMP' value '2023-11-16 18:15:46.4'", "arrival order"});
  expect_bad_trace("azure_negative.csv", std::string(kAzureHeader) + "2023-11-16 18:15:46,-5,1\n",
                   {"line 2", "field 'ContextTokens' value '-5' must be an integer in [1, 2147483647]"});
  expect_bad_trace("azure_text.csv", std::string(kAzureHeader) + "2023-11-16 18:15:46,5,many\n",
                   {"line 2", "field 'GeneratedTokens' value 'many'"});
  expect_bad_trace("azure_fields.csv", std::string(kAzureHeader) + "2023-11-16 18:15:46,5\n",
                   {"line 2", "has 2 fields where the header names 3"});
}

TEST(TraceTest, MooncakeKeepsOnlyWholeHashBlocks) {
  const std::string path = write_file(
      "mooncake.jsonl",
      "{\"timestamp\": 0, \"input_length\": 1100, \"output_length\": 10, \"hash_ids\": [7, 8, 9]}\n"
      "{\"timestamp\": 1500, \"input_length\": 512, \"output_length\": 0, \"hash_ids\": [7]}\n"
      "{\"timestamp\": 1500, \"input_length\": 511, \"output_length\": 3, \"hash_ids\": [5]}\n");
  EXPECT_EQ(detect_trace_format(path), TraceFormat::kMooncakeJsonl);
  const auto rs = read_all(path);
  ASSERT_EQ(rs.size(), 3u);
  EXPECT_EQ(rs[0].arrival_ns, 0);
  EXPECT_EQ(rs[0].prompt_tokens, 1100);
  EXPECT_EQ(rs[0].hash_block_tokens, 512);
  EXPECT_EQ(rs[0].prefix_hashes, (std::vector<uint64_t>{7, 8}));  // 1100 / 512 = 2 whole blocks
  EXPECT_EQ(rs[1].arrival_ns, 1'500'000'000);                     // 1500 ms
  EXPECT_EQ(rs[1].output_tokens, 1);
  EXPECT_EQ(rs[1].prefix_hashes, (std::vector<uint64_t>{7}));     // exactly one block
  EXPECT_TRUE(rs[2].prefix_hashes.empty());                       // 511 tokens: no whole block
}

TEST(TraceTest, MooncakeMalformedRows) {
  const std::string good = "{\"timestamp\": 0, \"input_length\": 10, \"output_length\": 1}\n";
  expect_bad_trace("mc_missing.jsonl", good + "{\"timestamp\": 5, \"output_length\": 1}\n",
                   {"line 2", "field 'input_length' is missing"});
  expect_bad_trace("mc_json.jsonl", good + "{\"timestamp\": 5, \"input_length\": 10,\n",
                   {"line 2", "is not valid JSON"});
  expect_bad_trace("mc_hash.jsonl", good + "{\"timestamp\": 5, \"input_length\": 10, \"output_length\": 1, "
                                           "\"hash_ids\": [1, -2]}\n",
                   {"line 2", "field 'hash_ids' value '-2' must be an unsigned 64-bit integer"});
  expect_bad_trace("mc_type.jsonl", good + "{\"timestamp\": 5, \"input_length\": \"10\", \"output_length\": 1}\n",
                   {"line 2", "field 'input_length' value '\"10\"'"});
  expect_bad_trace("mc_order.jsonl",
                   "{\"timestamp\": 9, \"input_length\": 10, \"output_length\": 1}\n" + good,
                   {"line 2", "field 'timestamp' value '0'", "arrival order"});
}

TEST(TraceTest, NativeCsvWithHashBlocks) {
  const std::string path = write_file("native.csv",
                                      "# hash_block_tokens=16\n"
                                      "arrival_s,prompt_tokens,output_tokens,prefix_hashes\n"
                                      "0.25,40,8,11 12 13\n"
                                      "# a comment row\n"
                                      "0.5,32,1,11  12\n"
                                      "1.75,5,2,\n");
  EXPECT_EQ(detect_trace_format(path), TraceFormat::kNativeCsv);
  const auto rs = read_all(path);
  ASSERT_EQ(rs.size(), 3u);
  EXPECT_EQ(rs[0].arrival_ns, 250'000'000);  // native times are taken as given, not from row 1
  EXPECT_EQ(rs[0].hash_block_tokens, 16);
  EXPECT_EQ(rs[0].prefix_hashes, (std::vector<uint64_t>{11, 12}));  // 40 / 16 = 2 whole blocks
  EXPECT_EQ(rs[1].arrival_ns, 500'000'000);
  EXPECT_EQ(rs[1].prefix_hashes, (std::vector<uint64_t>{11, 12}));
  EXPECT_EQ(rs[2].arrival_ns, 1'750'000'000);
  EXPECT_EQ(rs[2].prompt_tokens, 5);
  EXPECT_EQ(rs[2].output_tokens, 2);
  EXPECT_TRUE(rs[2].prefix_hashes.empty());

  const auto plain = read_all(write_file("plain.csv", "arrival_s,prompt_tokens,output_tokens\n3,7,9\n"));
  ASSERT_EQ(plain.size(), 1u);
  EXPECT_EQ(plain[0].arrival_ns, 3 * kNsPerSecond);
  EXPECT_EQ(plain[0].hash_block_tokens, 0);
}

TEST(TraceTest, NativeCsvMalformed) {
  expect_bad_trace("n_nodirective.csv", "arrival_s,prompt_tokens,output_tokens,prefix_hashes\n0,1,1,5\n",
                   {"line 1", "prefix_hashes", "hash_block_tokens"});
  expect_bad_trace("n_directive.csv", "# hash_block_tokens=zero\narrival_s,prompt_tokens,output_tokens\n",
                   {"line 1", "field 'hash_block_tokens' value 'zero'"});
  expect_bad_trace("n_column.csv", "arrival_s,prompt_tokens,output_tokens,prefix_hash\n",
                   {"line 1", "column 'prefix_hash'"});
  expect_bad_trace("n_arrival.csv", "arrival_s,prompt_tokens,output_tokens\n0,1,1\nsoon,1,1\n",
                   {"line 3", "field 'arrival_s' value 'soon'"});
  expect_bad_trace("n_hash.csv", "# hash_block_tokens=4\narrival_s,prompt_tokens,output_tokens,prefix_hashes\n"
                                 "0,8,1,1 x\n",
                   {"line 3", "field 'prefix_hashes' value 'x'"});
}

TEST(TraceTest, NativeJsonl) {
  const std::string path = write_file(
      "native.jsonl",
      "{\"arrival_s\": 0.0, \"prompt_tokens\": 64, \"output_tokens\": 4, \"hash_block_tokens\": 32, "
      "\"prefix_hashes\": [1, 2, 3]}\n"
      "\n"
      "{\"arrival_s\": 2.5, \"prompt_tokens\": 10, \"output_tokens\": 4}\n");
  EXPECT_EQ(detect_trace_format(path), TraceFormat::kNativeJsonl);
  const auto rs = read_all(path);
  ASSERT_EQ(rs.size(), 2u);
  EXPECT_EQ(rs[0].hash_block_tokens, 32);
  EXPECT_EQ(rs[0].prefix_hashes, (std::vector<uint64_t>{1, 2}));  // 64 / 32 = 2 whole blocks
  EXPECT_EQ(rs[1].arrival_ns, 2'500'000'000);
  EXPECT_EQ(rs[1].hash_block_tokens, 0);
  expect_bad_trace("nj_nosize.jsonl", "{\"arrival_s\": 0, \"prompt_tokens\": 4, \"output_tokens\": 1, "
                                      "\"prefix_hashes\": [1]}\n",
                   {"line 1", "needs field 'hash_block_tokens'"});
  expect_bad_trace("nj_negative.jsonl", "{\"arrival_s\": -1, \"prompt_tokens\": 4, \"output_tokens\": 1}\n",
                   {"line 1", "field 'arrival_s' value '-1'"});
}

TEST(TraceTest, OptionsScaleLimitAndSkip) {
  const std::string path = write_file("azure_opts.csv", std::string(kAzureHeader) +
                                                            "2023-11-16 18:00:00,100,10\n"
                                                            "2023-11-16 18:00:01,5000,10\n"
                                                            "2023-11-16 18:00:03,200,10\n"
                                                            "2023-11-16 18:00:04,300,10\n");
  const auto half = read_all(path, {.time_scale = 0.5});
  ASSERT_EQ(half.size(), 4u);
  EXPECT_EQ(half[1].arrival_ns, 500'000'000);
  EXPECT_EQ(half[3].arrival_ns, 2'000'000'000);

  EXPECT_EQ(read_all(path, {.max_requests = 2}).size(), 2u);

  TraceOptions skip{.max_total_tokens = 1000};  // row 2 holds 5010 tokens
  const auto kept = read_all(path, skip);
  ASSERT_EQ(kept.size(), 3u);
  EXPECT_EQ(kept[1].id, 1);
  EXPECT_EQ(kept[1].prompt_tokens, 200);
  EXPECT_EQ(kept[1].arrival_ns, 3 * kNsPerSecond);  // time still counts from the file's first row
  const std::string text = open_trace(path, skip)->describe();
  EXPECT_NE(text.find(": 3 requests over 4.0 s (Azure CSV); 1 rows over max_total_tokens=1000 skipped"),
            std::string::npos)
      << text;

  expect_config_error([&] { open_trace(path, {.time_scale = 0}); }, {"time_scale=0", "must be > 0"});
  expect_config_error([&] { open_trace(path, {.max_requests = -1}); }, {"max_requests=-1"});
}

TEST(TraceTest, UnreadableOrUnknownFiles) {
  expect_config_error([] { detect_trace_format("/nonexistent/kvplan/trace.csv"); },
                      {"trace '/nonexistent/kvplan/trace.csv'", "cannot open"});
  expect_config_error([] { detect_trace_format(write_file("empty.csv", "\n\n")); }, {"empty"});
  expect_config_error([] { detect_trace_format(::testing::TempDir()); }, {"is a directory"});
  expect_config_error([] { detect_trace_format(write_file("other.csv", "time,in,out\n")); },
                      {"line 1", "first line 'time,in,out'"});
  expect_config_error([] { detect_trace_format(write_file("other.jsonl", "{\"t\": 1}\n")); },
                      {"line 1", "'timestamp'", "'arrival_s'"});
}

// ---- The shipped traces ------------------------------------------------------------------------

TEST(TraceTest, ShippedAzureConversationTrace) {
  const std::string path = shipped("azure_llm_2023_conv.csv");
  const auto rs = read_all(path);
  ASSERT_EQ(rs.size(), 19'366u);  // `wc -l` 19,366: header plus rows, no final newline
  EXPECT_EQ(rs[0].prompt_tokens, 374);  // 2023-11-16 18:15:46.6805900,374,44
  EXPECT_EQ(rs[0].output_tokens, 44);
  EXPECT_EQ(rs[1].arrival_ns, 4'314'579'000);  // 18:15:50.9951690 - 18:15:46.6805900
  EXPECT_EQ(rs.back().arrival_ns, 3'501'721'937'000);  // 19:14:08.4025270, 58 min 21.721937 s on
  EXPECT_EQ(rs.back().prompt_tokens, 197);
  EXPECT_EQ(open_trace(path, {})->describe(), "azure_llm_2023_conv.csv: 19,366 requests over 3501.7 s (Azure CSV)");

  const TraceLengths lengths = read_trace_lengths(path);
  ASSERT_EQ(lengths.prompt.size(), 19'366u);
  EXPECT_EQ(lengths.total[0], 374 + 44);
  EXPECT_DOUBLE_EQ(lengths.duration_s, 3501.721937);
}

TEST(TraceTest, ShippedAzureCodeTrace) {
  const auto rs = read_all(shipped("azure_llm_2023_code.csv"));
  ASSERT_EQ(rs.size(), 8'819u);
  EXPECT_EQ(rs[0].prompt_tokens, 4808);  // 2023-11-16 18:17:03.9799600,4808,10
  EXPECT_EQ(rs.back().arrival_ns, 3'435'948'056'000);  // 19:14:19.9280160 - 18:17:03.9799600
}

TEST(TraceTest, ShippedMooncakeTraces) {
  const std::string path = shipped("mooncake_conversation.jsonl");
  EXPECT_EQ(detect_trace_format(path), TraceFormat::kMooncakeJsonl);
  const auto rs = read_all(path);
  ASSERT_EQ(rs.size(), 12'031u);
  // Row 1: input 6758 tokens, hash_ids [0..13]: 6758 / 512 = 13 whole blocks, ids 0..12.
  EXPECT_EQ(rs[0].prompt_tokens, 6758);
  EXPECT_EQ(rs[0].output_tokens, 500);
  EXPECT_EQ(rs[0].hash_block_tokens, 512);
  std::vector<uint64_t> expected(13);
  for (size_t i = 0; i < expected.size(); ++i) expected[i] = i;
  EXPECT_EQ(rs[0].prefix_hashes, expected);
  EXPECT_EQ(rs[1].prefix_hashes.front(), 0u);   // row 2 shares row 1's first block
  EXPECT_EQ(rs.back().arrival_ns, 3'536'999 * kNsPerMs);
  for (const RequestSpec& r : rs) {
    ASSERT_LE(static_cast<int64_t>(r.prefix_hashes.size()), r.prompt_tokens / 512) << r.id;
  }
  EXPECT_EQ(read_trace_lengths(shipped("mooncake_synthetic.jsonl")).prompt.size(), 3'993u);
}

}  // namespace
}  // namespace kvplan::sim
