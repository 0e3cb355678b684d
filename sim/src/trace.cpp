// Trace replay: a RequestSource over a trace file (rows parsed by internal/trace_reader), with
// TraceOptions applied. Holds one row at a time.
#include "kvplan/sim/trace.h"

#include <cmath>
#include <filesystem>
#include <optional>

#include <fmt/format.h>

#include "internal/trace_reader.h"
#include "kvplan/core/error.h"
#include "kvplan/core/number_text.h"

namespace kvplan::sim {

namespace {

using internal::TraceReader;
using internal::TraceRow;

void validate(const TraceOptions& options) {
  if (!(std::isfinite(options.time_scale) && options.time_scale > 0)) {
    throw ConfigError(fmt::format("trace options: time_scale={} must be > 0", options.time_scale));
  }
  if (options.max_requests < 0) {
    throw ConfigError(fmt::format("trace options: max_requests={} must be >= 0 (0: all rows)", options.max_requests));
  }
  if (options.max_total_tokens < 0) {
    throw ConfigError(
        fmt::format("trace options: max_total_tokens={} must be >= 0 (0: no limit)", options.max_total_tokens));
  }
}

class TraceSource final : public RequestSource {
 public:
  TraceSource(const std::string& path, const TraceOptions& options) : reader_(path), options_(options) {}

  std::optional<RequestSpec> next() override {
    if (options_.max_requests > 0 && emitted_ >= options_.max_requests) return finish();
    while (reader_.next(row_)) {
      // Azure's clock is wall time, so arrivals count from its first row; Mooncake and kvplan
      // traces already hold offsets from the trace start and are taken as they are.
      if (!have_origin_) {
        origin_ns_ = reader_.format() == TraceFormat::kAzureCsv ? row_.time_ns : 0;
        have_origin_ = true;
      }
      int64_t output = row_.output_tokens;
      if (output == 0) {
        output = 1;
        ++zero_outputs_;
      }
      if (options_.max_total_tokens > 0 && row_.prompt_tokens + output > options_.max_total_tokens) {
        ++skipped_;
        continue;
      }
      const TimeNs offset_ns = row_.time_ns - origin_ns_;
      RequestSpec r;
      r.id = emitted_++;
      r.arrival_ns = options_.time_scale == 1.0
                         ? offset_ns
                         : static_cast<TimeNs>(std::llround(static_cast<double>(offset_ns) * options_.time_scale));
      r.prompt_tokens = static_cast<int32_t>(row_.prompt_tokens);
      r.output_tokens = static_cast<int32_t>(output);
      r.hash_block_tokens = row_.hash_block_tokens;
      r.prefix_hashes = std::move(row_.prefix_hashes);
      last_arrival_ns_ = r.arrival_ns;
      return r;
    }
    return finish();
  }

  // "azure_llm_2023_conv.csv: 19,366 requests over 3501.7 s (Azure CSV)". Before this source has
  // reached its end, the totals come from a second pass over the file (streamed, done once).
  std::string describe() const override {
    if (!summary_) {
      TraceSource counter(reader_.path(), options_);
      while (counter.next()) {
      }
      summary_ = counter.summary_;
    }
    const Summary& s = *summary_;
    std::string text = fmt::format("{}: {} requests over {:.1f} s ({})",
                                   std::filesystem::path(reader_.path()).filename().string(),
                                   with_commas(s.requests), ns_to_seconds(s.last_arrival_ns),
                                   trace_format_name(reader_.format()));
    if (options_.time_scale != 1.0) text += fmt::format(", time scaled by {}", options_.time_scale);
    if (s.zero_outputs > 0) text += fmt::format("; {} zero-token outputs read as 1", with_commas(s.zero_outputs));
    if (s.skipped > 0) {
      text += fmt::format("; {} rows over max_total_tokens={} skipped", with_commas(s.skipped),
                          options_.max_total_tokens);
    }
    return text;
  }

 private:
  struct Summary {
    int64_t requests = 0;
    TimeNs last_arrival_ns = 0;
    int64_t zero_outputs = 0;
    int64_t skipped = 0;
  };

  std::optional<RequestSpec> finish() {
    if (!summary_) summary_ = Summary{emitted_, last_arrival_ns_, zero_outputs_, skipped_};
    return std::nullopt;
  }

  TraceReader reader_;
  TraceOptions options_;
  TraceRow row_;
  bool have_origin_ = false;
  TimeNs origin_ns_ = 0;
  int64_t emitted_ = 0;
  TimeNs last_arrival_ns_ = 0;
  int64_t zero_outputs_ = 0;
  int64_t skipped_ = 0;
  mutable std::optional<Summary> summary_;  // set at the end, or by describe()'s own pass
};

}  // namespace

std::string_view trace_format_name(TraceFormat format) {
  switch (format) {
    case TraceFormat::kAzureCsv: return "Azure CSV";
    case TraceFormat::kMooncakeJsonl: return "Mooncake JSONL";
    case TraceFormat::kNativeCsv: return "kvplan CSV";
    case TraceFormat::kNativeJsonl: return "kvplan JSONL";
  }
  return "?";
}

TraceFormat detect_trace_format(const std::string& path) { return TraceReader(path).format(); }

std::unique_ptr<RequestSource> open_trace(const std::string& path, const TraceOptions& options) {
  validate(options);
  return std::make_unique<TraceSource>(path, options);
}

TraceLengths read_trace_lengths(const std::string& path) {
  TraceLengths lengths;
  TraceSource source(path, TraceOptions{});
  while (auto r = source.next()) {
    lengths.prompt.push_back(r->prompt_tokens);
    lengths.output.push_back(r->output_tokens);
    lengths.total.push_back(r->total_tokens());
    lengths.duration_s = ns_to_seconds(r->arrival_ns);
  }
  return lengths;
}

}  // namespace kvplan::sim
