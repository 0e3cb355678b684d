#include "internal/trace_reader.h"

#include <charconv>
#include <cmath>
#include <filesystem>
#include <limits>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "internal/azure_time.h"
#include "kvplan/core/error.h"
#include "kvplan/core/json_input.h"

namespace kvplan::sim::internal {

namespace {

using nlohmann::json;

constexpr int64_t kMaxTokens = std::numeric_limits<int32_t>::max();
constexpr int32_t kMooncakeBlockTokens = 512;  // Mooncake's hash_ids each name 512 prompt tokens
constexpr std::string_view kUtf8Bom = "\xEF\xBB\xBF";

std::string_view trim(std::string_view s) {
  const size_t a = s.find_first_not_of(" \t");
  if (a == std::string_view::npos) return {};
  return s.substr(a, s.find_last_not_of(" \t") - a + 1);
}

std::vector<std::string_view> split(std::string_view s, char sep) {
  std::vector<std::string_view> parts;
  for (;;) {
    const size_t at = s.find(sep);
    parts.push_back(trim(s.substr(0, at)));
    if (at == std::string_view::npos) return parts;
    s = s.substr(at + 1);
  }
}

template <typename T>
std::optional<T> parse_whole(std::string_view s) {
  T value{};
  const auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), value);
  if (s.empty() || ec != std::errc() || end != s.data() + s.size()) return std::nullopt;
  return value;
}

// A JSON value as it appears in an error message, cut short if long.
std::string shown(const json& value) {
  // summarised, never walked: a deep or huge value must not cost a stack or a megabyte here
  return json_brief(value);
}

std::string shown(std::string_view text) {
  return text.size() > 60 ? std::string(text.substr(0, 57)) + "..." : std::string(text);
}

// The first `prompt_tokens / block_tokens` entries: a last, partial block is not shareable.
void keep_whole_blocks(std::vector<uint64_t>& hashes, int64_t prompt_tokens, int32_t block_tokens) {
  const auto whole = static_cast<size_t>(prompt_tokens / block_tokens);
  if (hashes.size() > whole) hashes.resize(whole);
}

json parse_json_line(const std::string& path, int64_t line, std::string_view text) {
  return parse_json_input(text, fmt::format("trace '{}' line {}", path, line));
}

}  // namespace

TraceFormat classify_first_line(const std::string& path, int64_t line, std::string_view text) {
  text = trim(text);
  if (text.starts_with('{')) {
    const json row = parse_json_line(path, line, text);
    if (row.is_object() && row.contains("timestamp")) return TraceFormat::kMooncakeJsonl;
    if (row.is_object() && row.contains("arrival_s")) return TraceFormat::kNativeJsonl;
    throw ConfigError(fmt::format(
        "trace '{}' line {}: a JSON row needs field 'timestamp' (Mooncake) or 'arrival_s' (kvplan JSONL)", path,
        line));
  }
  if (text.starts_with('#')) return TraceFormat::kNativeCsv;
  const std::string_view first_column = split(text, ',').front();
  if (first_column == "TIMESTAMP") return TraceFormat::kAzureCsv;
  if (first_column == "arrival_s") return TraceFormat::kNativeCsv;
  throw ConfigError(fmt::format(
      "trace '{}' line {}: first line '{}' is not an Azure CSV header (TIMESTAMP,ContextTokens,GeneratedTokens), "
      "a kvplan CSV header (arrival_s,prompt_tokens,output_tokens[,prefix_hashes]) or a JSON row",
      path, line, shown(text)));
}

TraceReader::TraceReader(std::string path) : path_(std::move(path)), in_(path_) {
  std::error_code ec;
  if (std::filesystem::is_directory(path_, ec)) {
    throw ConfigError(fmt::format("trace '{}': is a directory, not a trace file", path_));
  }
  if (!in_) throw ConfigError(fmt::format("trace '{}': cannot open the file", path_));
  std::string text;
  if (!next_line(text)) throw ConfigError(fmt::format("trace '{}': the file is empty", path_));
  format_ = classify_first_line(path_, line_, text);
  switch (format_) {
    case TraceFormat::kAzureCsv: read_csv_header(text); break;
    case TraceFormat::kNativeCsv:
      while (text.starts_with('#')) {
        const std::string_view comment = trim(std::string_view(text).substr(1));
        if (comment.starts_with("hash_block_tokens")) {
          const size_t eq = comment.find('=');
          const std::string_view value = eq == std::string_view::npos ? comment : trim(comment.substr(eq + 1));
          const auto tokens = parse_whole<int32_t>(value);
          if (eq == std::string_view::npos || !tokens || *tokens < 1) {
            fail("hash_block_tokens", value, "an integer >= 1, as in '# hash_block_tokens=16'");
          }
          csv_hash_block_tokens_ = *tokens;
        }
        if (!next_line(text)) fail_line("ends before the header arrival_s,prompt_tokens,output_tokens");
      }
      read_csv_header(text);
      break;
    case TraceFormat::kMooncakeJsonl:
    case TraceFormat::kNativeJsonl:
      pending_ = std::move(text);  // the first line is already a row
      has_pending_ = true;
      break;
  }
}

bool TraceReader::next_line(std::string& text) {
  while (std::getline(in_, text)) {
    ++line_;
    if (!text.empty() && text.back() == '\r') text.pop_back();
    if (line_ == 1 && text.starts_with(kUtf8Bom)) text.erase(0, kUtf8Bom.size());
    if (!trim(text).empty()) return true;
  }
  return false;
}

void TraceReader::fail(std::string_view field, std::string_view value, std::string_view rule) const {
  throw ConfigError(
      fmt::format("trace '{}' line {}: field '{}' value '{}' must be {}", path_, line_, field, value, rule));
}

void TraceReader::fail_line(std::string_view what) const {
  throw ConfigError(fmt::format("trace '{}' line {}: {}", path_, line_, what));
}

void TraceReader::read_csv_header(std::string text) {
  const std::vector<std::string_view> names = split(text, ',');
  num_cols_ = names.size();
  const bool azure = format_ == TraceFormat::kAzureCsv;
  for (size_t i = 0; i < names.size(); ++i) {
    const int col = static_cast<int>(i);
    const std::string_view name = names[i];
    if (name == (azure ? "TIMESTAMP" : "arrival_s")) time_col_ = col;
    else if (name == (azure ? "ContextTokens" : "prompt_tokens")) prompt_col_ = col;
    else if (name == (azure ? "GeneratedTokens" : "output_tokens")) output_col_ = col;
    else if (!azure && name == "prefix_hashes") hashes_col_ = col;
    else if (!azure) {  // Azure may grow columns; our own format should not hold typos
      fail_line(fmt::format("column '{}' is not one of arrival_s, prompt_tokens, output_tokens, prefix_hashes",
                            shown(name)));
    }
  }
  const char* required[] = {azure ? "TIMESTAMP" : "arrival_s", azure ? "ContextTokens" : "prompt_tokens",
                            azure ? "GeneratedTokens" : "output_tokens"};
  const int cols[] = {time_col_, prompt_col_, output_col_};
  for (int i = 0; i < 3; ++i) {
    if (cols[i] < 0) fail_line(fmt::format("the header lacks column '{}'", required[i]));
  }
  if (hashes_col_ >= 0 && csv_hash_block_tokens_ == 0) {
    fail_line("column 'prefix_hashes' needs a '# hash_block_tokens=N' line before the header");
  }
}

bool TraceReader::next(TraceRow& row) {
  std::string text;
  if (has_pending_) {
    text = std::move(pending_);
    has_pending_ = false;
  } else {
    do {
      if (!next_line(text)) return false;
    } while (format_ == TraceFormat::kNativeCsv && text.starts_with('#'));  // comments
  }
  row.line = line_;
  row.hash_block_tokens = 0;
  row.prefix_hashes.clear();
  std::string time_text;
  if (format_ == TraceFormat::kAzureCsv || format_ == TraceFormat::kNativeCsv) {
    parse_csv_row(text, row, time_text);
  } else {
    parse_json_row(text, row, time_text);
  }
  if (have_previous_ && row.time_ns < previous_time_ns_) {
    const char* field = format_ == TraceFormat::kAzureCsv       ? "TIMESTAMP"
                        : format_ == TraceFormat::kMooncakeJsonl ? "timestamp"
                                                                 : "arrival_s";
    fail(field, time_text,
         fmt::format("no earlier than the previous row's {}: rows must be in arrival order", previous_time_text_));
  }
  have_previous_ = true;
  previous_time_ns_ = row.time_ns;
  previous_time_text_ = std::move(time_text);
  return true;
}

void TraceReader::parse_csv_row(std::string_view text, TraceRow& row, std::string& time_text) {
  const std::vector<std::string_view> fields = split(text, ',');
  if (fields.size() != num_cols_) {
    fail_line(fmt::format("has {} fields where the header names {}", fields.size(), num_cols_));
  }
  const bool azure = format_ == TraceFormat::kAzureCsv;
  const std::string_view when = fields[static_cast<size_t>(time_col_)];
  time_text = std::string(when);
  if (azure) {
    const auto ns = parse_wall_clock_ns(when);
    if (!ns) fail("TIMESTAMP", shown(when), "a time like 2023-11-16 18:15:46.6805900");
    row.time_ns = *ns;
  } else {
    const auto seconds = parse_whole<double>(when);
    if (!seconds || !std::isfinite(*seconds) || *seconds < 0 || *seconds > 1e9) {
      fail("arrival_s", shown(when), "a number of seconds in [0, 1e9]");
    }
    row.time_ns = seconds_to_ns(*seconds);
  }
  auto tokens = [&](int col, const char* field, int64_t low) {
    const std::string_view value = fields[static_cast<size_t>(col)];
    const auto n = parse_whole<int64_t>(value);
    if (!n || *n < low || *n > kMaxTokens) {
      fail(field, shown(value), fmt::format("an integer in [{}, {}]", low, kMaxTokens));
    }
    return *n;
  };
  row.prompt_tokens = tokens(prompt_col_, azure ? "ContextTokens" : "prompt_tokens", 1);
  row.output_tokens = tokens(output_col_, azure ? "GeneratedTokens" : "output_tokens", 0);
  if (hashes_col_ < 0) return;
  const std::string_view list = fields[static_cast<size_t>(hashes_col_)];
  for (std::string_view item : split(list, ' ')) {
    if (item.empty()) continue;  // runs of spaces
    const auto hash = parse_whole<uint64_t>(item);
    if (!hash) fail("prefix_hashes", shown(item), "unsigned 64-bit integers separated by spaces");
    row.prefix_hashes.push_back(*hash);
  }
  row.hash_block_tokens = csv_hash_block_tokens_;
  keep_whole_blocks(row.prefix_hashes, row.prompt_tokens, row.hash_block_tokens);
}

void TraceReader::parse_json_row(std::string_view text, TraceRow& row, std::string& time_text) {
  const json j = parse_json_line(path_, line_, text);
  if (!j.is_object()) fail_line("is not a JSON object");
  const bool mooncake = format_ == TraceFormat::kMooncakeJsonl;
  auto field = [&](const char* name, bool required) -> const json* {
    const auto it = j.find(name);
    if (it == j.end()) {
      if (required) fail_line(fmt::format("field '{}' is missing", name));
      return nullptr;
    }
    return &*it;
  };
  auto tokens = [&](const char* name, int64_t low) {
    const json& v = *field(name, true);
    if (!v.is_number_integer() || v.get<int64_t>() < low || v.get<int64_t>() > kMaxTokens) {
      fail(name, shown(v), fmt::format("an integer in [{}, {}]", low, kMaxTokens));
    }
    return v.get<int64_t>();
  };

  const char* time_name = mooncake ? "timestamp" : "arrival_s";
  const json& when = *field(time_name, true);
  time_text = shown(when);
  // Mooncake: milliseconds (integers in the released traces); native: seconds.
  const double limit = mooncake ? 1e12 : 1e9;  // about 31 years either way
  if (!when.is_number() || !std::isfinite(when.get<double>()) || when.get<double>() < 0 || when.get<double>() > limit) {
    fail(time_name, time_text, mooncake ? "a number of milliseconds in [0, 1e12]" : "a number of seconds in [0, 1e9]");
  }
  if (mooncake) {
    row.time_ns = when.is_number_integer() ? when.get<int64_t>() * kNsPerMs
                                           : static_cast<TimeNs>(std::llround(when.get<double>() * 1e6));
  } else {
    row.time_ns = seconds_to_ns(when.get<double>());
  }
  row.prompt_tokens = tokens(mooncake ? "input_length" : "prompt_tokens", 1);
  row.output_tokens = tokens(mooncake ? "output_length" : "output_tokens", 0);

  const char* hashes_name = mooncake ? "hash_ids" : "prefix_hashes";
  const json* hashes = field(hashes_name, false);
  if (mooncake) {
    row.hash_block_tokens = kMooncakeBlockTokens;
  } else if (const json* block = field("hash_block_tokens", false)) {
    if (!block->is_number_integer() || block->get<int64_t>() < 1 || block->get<int64_t>() > kMaxTokens) {
      fail("hash_block_tokens", shown(*block), fmt::format("an integer in [1, {}]", kMaxTokens));
    }
    row.hash_block_tokens = block->get<int32_t>();
  } else if (hashes != nullptr) {
    fail_line("field 'prefix_hashes' needs field 'hash_block_tokens' (prompt tokens per hash)");
  }
  if (hashes == nullptr) return;
  if (!hashes->is_array()) fail(hashes_name, shown(*hashes), "an array of unsigned 64-bit integers");
  row.prefix_hashes.reserve(hashes->size());
  for (const json& h : *hashes) {
    if (!h.is_number_unsigned()) fail(hashes_name, shown(h), "an unsigned 64-bit integer");
    row.prefix_hashes.push_back(h.get<uint64_t>());
  }
  keep_whole_blocks(row.prefix_hashes, row.prompt_tokens, row.hash_block_tokens);
}

}  // namespace kvplan::sim::internal
