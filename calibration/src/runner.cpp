// Host logic of the calibration runner (runner.h): always built, tested with MockActivitySource.
#include "kvplan/calibration/runner.h"

#include <algorithm>
#include <charconv>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <iostream>
#include <numeric>

namespace kvplan::calibration {

namespace {

void append_escaped(std::string& out, const std::string& s) {
  out += '"';
  for (char c : s) {
    switch (c) {
      case '"': out += "\\\""; break;
      case '\\': out += "\\\\"; break;
      case '\n': out += "\\n"; break;
      case '\t': out += "\\t"; break;
      default:
        if (static_cast<unsigned char>(c) < 0x20) {
          char buf[8];
          std::snprintf(buf, sizeof buf, "\\u%04x", static_cast<unsigned>(static_cast<unsigned char>(c)));
          out += buf;
        } else {
          out += c;
        }
    }
  }
  out += '"';
}

void append_double(std::string& out, double v) {
  if (!std::isfinite(v)) {  // JSON has no NaN/inf; parameters never need them
    out += "null";
    return;
  }
  char buf[64];
  auto [end, ec] = std::to_chars(buf, buf + sizeof buf, v);  // shortest round-trip form
  std::string text(buf, ec == std::errc() ? end : buf);
  // Keep doubles distinguishable from integers: 2.0 prints as "2.0", not "2".
  if (text.find_first_of(".eE") == std::string::npos) text += ".0";
  out += text;
}

std::string format_seconds(double s) {
  char buf[32];
  if (s < 120) {
    std::snprintf(buf, sizeof buf, "%.1fs", s);
  } else {
    std::snprintf(buf, sizeof buf, "%dm%02ds", static_cast<int>(s) / 60, static_cast<int>(s) % 60);
  }
  return buf;
}

double median_of(std::vector<double> v) { return compute_stats(std::move(v)).median_ns; }

}  // namespace

std::string Params::to_json() const {
  std::string out = "{";
  bool first = true;
  for (const auto& [key, value] : values_) {
    if (!first) out += ',';
    first = false;
    append_escaped(out, key);
    out += ':';
    if (const auto* i = std::get_if<int64_t>(&value)) {
      out += std::to_string(*i);
    } else if (const auto* d = std::get_if<double>(&value)) {
      append_double(out, *d);
    } else if (const auto* s = std::get_if<std::string>(&value)) {
      append_escaped(out, *s);
    } else {
      const auto& list = std::get<std::vector<int64_t>>(value);
      out += '[';
      for (size_t k = 0; k < list.size(); ++k) {
        if (k) out += ',';
        out += std::to_string(list[k]);
      }
      out += ']';
    }
  }
  return out + "}";
}

DurationStats compute_stats(std::vector<double> v) {
  DurationStats s;
  s.n = static_cast<int>(v.size());
  if (v.empty()) return s;
  std::sort(v.begin(), v.end());
  const size_t n = v.size();
  s.min_ns = v.front();
  s.median_ns = n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
  const double rank = 0.9 * static_cast<double>(n - 1);
  const size_t lo = static_cast<size_t>(std::floor(rank));
  const size_t hi = std::min(lo + 1, n - 1);
  s.p90_ns = v[lo] + (rank - static_cast<double>(lo)) * (v[hi] - v[lo]);
  s.mean_ns = std::accumulate(v.begin(), v.end(), 0.0) / static_cast<double>(n);
  return s;
}

Runner::Runner(ActivitySource& source, RepetitionTimer& timer, KernelNameTable names, RunnerOptions options)
    : source_(source), timer_(timer), names_(std::move(names)), options_(std::move(options)) {
  if (!options_.progress) options_.progress = &std::cerr;
  if (!options_.now_s) {
    options_.now_s = [] {
      return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
    };
  }
}

void Runner::progress_line(int index, int total, const std::string& kernel, const char* what, double start_s) {
  const double elapsed = options_.now_s() - start_s;
  const int done = index + 1;
  const double eta = done > 0 ? elapsed / done * (total - done) : 0.0;
  *options_.progress << "[calibrate] shape " << done << "/" << total << " " << kernel << " " << what << " elapsed "
                     << format_seconds(elapsed) << " eta " << format_seconds(eta) << "\n";
  options_.progress->flush();
}

bool Runner::rows_for_shape(const Shape& shape, std::vector<KernelRecord> records, const std::vector<double>& event_ns,
                            int reps, std::vector<Measurement>* rows, std::string* why, RunReport* report) const {
  std::stable_sort(records.begin(), records.end(),
                   [](const KernelRecord& a, const KernelRecord& b) { return a.start_ns < b.start_ns; });
  std::vector<std::string> ids(records.size());
  std::vector<std::string> component_order;
  for (size_t i = 0; i < records.size(); ++i) {
    std::optional<KernelId> id = names_.classify(records[i].name);
    if (!id) {
      ++report->unknown_kernels[records[i].name];
      ids[i] = "unknown";
      continue;
    }
    ids[i] = id->id;
    if (std::find(component_order.begin(), component_order.end(), id->id) == component_order.end()) {
      component_order.push_back(id->id);
    }
  }
  if (reps <= 0 || records.empty()) {
    *why = "no device records for " + std::to_string(reps) + " repetitions";
    return false;
  }
  if (records.size() % static_cast<size_t>(reps) != 0) {
    *why = std::to_string(records.size()) + " records do not split into " + std::to_string(reps) + " repetitions";
    return false;
  }
  const size_t per_rep = records.size() / static_cast<size_t>(reps);
  std::vector<double> rep_ns(static_cast<size_t>(reps), 0.0);
  std::map<std::string, std::vector<double>> component_ns;
  for (const std::string& c : component_order) component_ns[c].assign(static_cast<size_t>(reps), 0.0);
  for (size_t i = 0; i < records.size(); ++i) {
    const size_t rep = i / per_rep;
    rep_ns[rep] += records[i].duration_ns();
    if (ids[i] != "unknown") component_ns[ids[i]][rep] += records[i].duration_ns();
  }
  const DurationStats st = compute_stats(rep_ns);
  const double ev = median_of(event_ns);
  Measurement m;
  m.kernel = shape.kernel;
  m.op_class = shape.op_class;
  m.params_json = shape.params.to_json();
  m.n = st.n;
  m.min_ns = st.min_ns;
  m.median_ns = st.median_ns;
  m.p90_ns = st.p90_ns;
  m.mean_ns = st.mean_ns;
  m.bytes = shape.bytes;
  m.flops = shape.flops;
  m.event_median_ns = ev;
  m.cupti_event_ratio = ev > 0 ? st.median_ns / ev : 0.0;
  rows->push_back(m);
  // A shape made of several kernels (split-KV decode + combine) also gets one row per component,
  // to show where the time goes. Bytes/FLOPs belong to the shape, not to each kernel, so these rows
  // carry none, no event time and op_class "" (breakdown only: the fitter fits the shape's row).
  if (component_order.size() > 1) {
    for (const std::string& c : component_order) {
      if (c == shape.kernel) continue;
      const DurationStats cs = compute_stats(component_ns[c]);
      Measurement r;
      r.kernel = c;
      r.op_class = "";
      r.params_json = m.params_json;
      r.n = cs.n;
      r.min_ns = cs.min_ns;
      r.median_ns = cs.median_ns;
      r.p90_ns = cs.p90_ns;
      r.mean_ns = cs.mean_ns;
      rows->push_back(r);
    }
  }
  return true;
}

Status Runner::measure_overhead(const Shape& shape, const Launch& launch, std::vector<Measurement>* rows) {
  std::vector<double> on_ns, off_ns, ignored;
  std::vector<KernelRecord> discard;
  if (Status s = source_.set_tracing(true); !s.ok()) return s;
  if (Status s = timer_.time_repetitions(options_.warmup, launch, &ignored); !s.ok()) return s;
  if (Status s = timer_.time_repetitions(options_.reps, launch, &on_ns); !s.ok()) return s;
  if (Status s = source_.flush(&discard); !s.ok()) return s;
  if (Status s = source_.set_tracing(false); !s.ok()) return s;
  Status timed = timer_.time_repetitions(options_.reps, launch, &off_ns);
  // Tracing back on even when the untraced run failed: later shapes need it.
  if (Status s = source_.set_tracing(true); !s.ok()) return s;
  if (!timed.ok()) return timed;
  if (Status s = source_.flush(&discard); !s.ok()) return s;
  // Per launch: a repetition holds kernels_per_rep launches (event resolution is ~0.5 us).
  const double per = shape.kernels_per_rep > 0 ? shape.kernels_per_rep : 1;
  for (double& x : on_ns) x /= per;
  for (double& x : off_ns) x /= per;
  const DurationStats on = compute_stats(on_ns), off = compute_stats(off_ns);
  Measurement m;
  m.kernel = shape.kernel;
  m.op_class = shape.op_class;
  m.params_json = shape.params.to_json();
  m.n = on.n;
  // Per-launch cost of tracing: event time with tracing on minus off.
  m.min_ns = on.min_ns - off.min_ns;
  m.median_ns = on.median_ns - off.median_ns;
  m.p90_ns = on.p90_ns - off.p90_ns;
  m.mean_ns = on.mean_ns - off.mean_ns;
  m.event_median_ns = off.median_ns;  // untraced time per launch
  m.cupti_event_ratio = off.median_ns > 0 ? on.median_ns / off.median_ns : 0.0;  // traced / untraced
  rows->push_back(m);
  return Status::success();
}

Status Runner::measure(const Shape& shape, std::vector<Measurement>* rows, bool* rejected, RunReport* report) {
  *rejected = false;
  if (!shape.prepare) return Status::error("params", -1, "shape " + shape.kernel + " has no prepare", "runner");
  Launch launch;
  if (Status s = shape.prepare(&launch); !s.ok()) return s;
  if (!launch) return Status::error("params", -1, "prepare of " + shape.kernel + " set no launch", "runner");
  if (shape.mode == Shape::Mode::kCuptiOverhead) return measure_overhead(shape, launch, rows);

  std::vector<double> ignored, event_ns;
  std::vector<KernelRecord> discard, records;
  if (Status s = source_.set_tracing(true); !s.ok()) return s;
  if (Status s = timer_.time_repetitions(options_.warmup, launch, &ignored); !s.ok()) return s;
  // Warm-up records (module load, handle creation, first touches) and anything before them.
  if (Status s = source_.flush(&discard); !s.ok()) return s;
  const int64_t dropped_before = source_.dropped_records();
  if (Status s = timer_.time_repetitions(options_.reps, launch, &event_ns); !s.ok()) return s;
  if (Status s = source_.flush(&records); !s.ok()) return s;
  std::string why;
  if (source_.dropped_records() != dropped_before) {
    why = "CUPTI dropped " + std::to_string(source_.dropped_records() - dropped_before) + " records";
  } else if (rows_for_shape(shape, std::move(records), event_ns, options_.reps, rows, &why, report)) {
    return Status::success();
  }
  rows->clear();
  *rejected = true;
  report->warnings.push_back(shape.kernel + " " + shape.params.to_json() + ": " + why);
  return Status::success();
}

RunReport Runner::run(const std::vector<Shape>& shapes, const Sink& sink) {
  RunReport report;
  report.shapes_total = static_cast<int>(shapes.size());
  const double start_s = options_.now_s();
  if (Status s = source_.start(); !s.ok()) {
    report.status = s;
    return report;
  }
  for (size_t i = 0; i < shapes.size(); ++i) {
    const Shape& shape = shapes[i];
    const int index = static_cast<int>(i);
    if (options_.has_shape && options_.has_shape(shape.kernel, shape.params.to_json())) {
      ++report.shapes_resumed;
      progress_line(index, report.shapes_total, shape.kernel, "resumed (already stored)", start_s);
      continue;
    }
    std::vector<Measurement> rows;
    bool rejected = false;
    Status s = measure(shape, &rows, &rejected, &report);
    if (!s.ok()) {
      report.status = s;
      progress_line(index, report.shapes_total, shape.kernel, ("FAILED: " + s.describe()).c_str(), start_s);
      break;
    }
    if (rejected) {
      ++report.shapes_rejected;
      progress_line(index, report.shapes_total, shape.kernel, ("rejected: " + report.warnings.back()).c_str(), start_s);
      continue;
    }
    try {
      sink(rows);
    } catch (const std::exception& e) {
      report.status = Status::error("sink", -1, e.what(), "runner");
      progress_line(index, report.shapes_total, shape.kernel, "FAILED: sink", start_s);
      break;
    }
    ++report.shapes_measured;
    progress_line(index, report.shapes_total, shape.kernel, "measured", start_s);
  }
  for (const auto& [name, count] : report.unknown_kernels) {
    *options_.progress << "[calibrate] unknown kernel (no name rule; time counted in its shape): " << name << " x"
                       << count << "\n";
  }
  if (Status s = source_.stop(); !s.ok() && report.status.ok()) report.status = s;
  return report;
}

}  // namespace kvplan::calibration
