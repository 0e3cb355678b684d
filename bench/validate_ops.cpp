// kvplan_validate_ops — how well profiles fitted from PUBLISHED operator tables predict operators
// they were not fitted on (DESIGN §6, docs/benchmarks.md (operator times)).
//
//   ./build/bench/kvplan_validate_ops [--dir data/measurements] [--gpu h100-sxm] [--worst 10] [--markdown]
//                                     [--min-heldout-rows N]
//   ./build/bench/kvplan_validate_ops --transfer [--markdown]
//
// For each GPU with published tables (h100-sxm, h200, b200, a100-80gb, l40s, mi300x): read the tables
// (published_import.h), fit a profile on the deterministic 70% of shapes (heldout_split.h) exactly
// as `kvplan calibrate fit` does, and price the other 30% through the cost model's own formula
// (core/op_time.h). Per class and variant (GEMM bf16 / fp8, decode attention by KV dtype, prefill
// attention, all-reduce, elementwise): rows, median and p90 of |predicted/measured − 1| for the
// fitted profile, for the same profile without its shape grids (curves and floor only), and for the
// plain datasheet profile on the same rows. --worst N lists the N worst held-out rows per line.
// A class with fewer rows than the fitter's min_rows_for_heldout (60) is fitted on all of them and
// has no held-out line; --min-heldout-rows N lowers that bound for this check (the MI300X tables
// have 4 to 24 rows per class: --gpu mi300x --min-heldout-rows 3 holds out their 30% of shapes).
//
// --transfer: how far a profile carries to another GPU (core/default_profile.h). For every ordered
// pair of GPUs with published tables, the SHIPPED profile of the source (data/profiles), transferred
// to the target's datasheet roofs, prices all of the target's rows; next to it, the target's own
// shipped profile on its held-out rows. Per class and variant present on both: median and p90 of
// |predicted/measured − 1|, and the ratio of the p90s (the band widening a transfer needs).
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <map>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "kvplan/calibration/fitter.h"
#include "kvplan/calibration/heldout_split.h"
#include "kvplan/calibration/published_import.h"
#include "kvplan/calibration/row_ops.h"
#include "kvplan/core/error.h"
#include "kvplan/core/op_time.h"
#include "kvplan/core/presets.h"
#include "kvplan/core/published_profiles.h"

namespace {

namespace cal = kvplan::calibration;
using kvplan::OpClass;

struct Line {
  std::string gpu, cls, variant;
  std::vector<double> fitted, curves, datasheet;
  std::vector<std::pair<double, cal::Measurement>> worst;  // (signed error, row)
  int64_t train_rows = 0;
};

double median(std::vector<double> v) { return cal::error_stats(std::move(v)).median; }
double p90(std::vector<double> v) { return cal::error_stats(std::move(v)).p90; }

std::string pct(double v) { return fmt::format("{:.1f}%", v * 100); }

// "gemm|bf16", "elementwise|vidur_add": the line a row's error goes to, and its two halves.
std::pair<std::string, std::string> class_and_variant(const kvplan::StepOp& op, const cal::Measurement& m) {
  return {std::string(kvplan::op_class_name(op.op_class)),
          op.shape.dims > 0 ? std::string(kvplan::op_grid_variant(op)) : m.kernel};
}

struct TransferLine {
  std::string from, to, cls, variant;
  std::vector<double> transferred, native;
};

int run_transfer(const cal::PublishedTables& tables, bool markdown) {
  // Not mi300x: its shipped classes are fitted on every row (too few to split), so "own held-out" would be
  // in-sample; and default_profile never transfers across vendors.
  const char* gpus[] = {"h100-sxm", "h200", "b200", "a100-80gb", "l40s"};
  const cal::FitOptions defaults;
  std::vector<TransferLine> lines;
  for (const char* to : gpus) {
    const kvplan::GpuSpec gpu = kvplan::resolve_gpu(to);
    const kvplan::PerfProfile* own = kvplan::published_profile(to);
    if (own == nullptr) continue;
    std::vector<cal::Measurement> rows;
    for (const cal::PublishedRun& r : tables.runs) {
      if (r.gpu_preset == to) rows.insert(rows.end(), r.rows.begin(), r.rows.end());
    }
    for (const char* from : gpus) {
      if (std::string(from) == to) continue;
      const kvplan::PerfProfile* src = kvplan::published_profile(from);
      if (src == nullptr) continue;
      const kvplan::PerfProfile moved = src->transferred_to(gpu);
      std::map<std::string, TransferLine> by_key;
      for (const cal::Measurement& m : rows) {
        const kvplan::StepOp op = cal::row_op(m);
        // Only classes both GPUs fitted from published rows (the others are datasheet on both).
        if (src->at(op.op_class).source.rfind("published", 0) != 0) continue;
        if (own->at(op.op_class).source.rfind("published", 0) != 0) continue;
        const auto [cls, variant] = class_and_variant(op, m);
        TransferLine& l = by_key[cls + "|" + variant];
        if (l.cls.empty()) l = TransferLine{from, to, cls, variant, {}, {}};
        l.transferred.push_back(std::abs(kvplan::op_kernel_ns(moved.at(op.op_class), gpu, op) / m.median_ns - 1));
        if (cal::is_heldout(m, defaults.heldout_percent)) {
          l.native.push_back(std::abs(kvplan::op_kernel_ns(own->at(op.op_class), gpu, op) / m.median_ns - 1));
        }
      }
      for (auto& [key, l] : by_key) lines.push_back(std::move(l));
    }
  }
  if (markdown) {
    std::printf("| from | to | class | variant | rows | transferred median / p90 | own profile (held-out) median / p90 | "
                "p90 ratio |\n|---|---|---|---|---|---|---|---|\n");
  } else {
    std::printf("%-10s %-10s %-18s %-24s %7s %22s %22s %7s\n", "from", "to", "class", "variant", "rows",
                "transferred med/p90", "own held-out med/p90", "ratio");
  }
  for (const TransferLine& l : lines) {
    if (l.native.empty()) continue;
    const double ratio = p90(l.native) > 0 ? p90(l.transferred) / p90(l.native) : 0;
    const std::string t = pct(median(l.transferred)) + " / " + pct(p90(l.transferred));
    const std::string n = pct(median(l.native)) + " / " + pct(p90(l.native));
    if (markdown) {
      std::printf("| %s | %s | %s | %s | %zu | %s | %s | %.1f |\n", l.from.c_str(), l.to.c_str(), l.cls.c_str(),
                  l.variant.c_str(), l.transferred.size(), t.c_str(), n.c_str(), ratio);
    } else {
      std::printf("%-10s %-10s %-18s %-24s %7zu %22s %22s %7.1f\n", l.from.c_str(), l.to.c_str(), l.cls.c_str(),
                  l.variant.c_str(), l.transferred.size(), t.c_str(), n.c_str(), ratio);
    }
  }
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  std::string dir = std::string(KVPLAN_SOURCE_DIR) + "/data/measurements";
  std::string only_gpu;
  int worst = 0;
  bool markdown = false;
  bool transfer = false;
  cal::FitOptions options;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--dir" && i + 1 < argc) {
      dir = argv[++i];
    } else if (a == "--gpu" && i + 1 < argc) {
      only_gpu = argv[++i];
    } else if (a == "--worst" && i + 1 < argc) {
      worst = std::atoi(argv[++i]);
    } else if (a == "--markdown") {
      markdown = true;
    } else if (a == "--transfer") {
      transfer = true;
    } else if (a == "--min-heldout-rows" && i + 1 < argc) {
      options.min_rows_for_heldout = std::atoi(argv[++i]);
      if (options.min_rows_for_heldout < options.min_points) {
        std::fprintf(stderr, "kvplan_validate_ops: --min-heldout-rows=%d must be >= %d (the rows a fit needs)\n",
                     options.min_rows_for_heldout, options.min_points);
        return 2;
      }
    } else {
      std::fprintf(stderr,
                   "usage: %s [--dir DIR] [--gpu ID] [--worst N] [--markdown] [--transfer] [--min-heldout-rows N]\n",
                   argv[0]);
      return 2;
    }
  }
  try {
    const auto t0 = std::chrono::steady_clock::now();
    const cal::PublishedTables tables = cal::read_published_tables(dir);
    if (transfer) return run_transfer(tables, markdown);
    std::vector<Line> lines;
    for (const char* gpu_id : {"h100-sxm", "h200", "b200", "a100-80gb", "l40s", "mi300x"}) {
      if (!only_gpu.empty() && only_gpu != gpu_id) continue;
      const kvplan::GpuSpec gpu = kvplan::resolve_gpu(gpu_id);
      std::vector<cal::Measurement> rows;
      for (const cal::PublishedRun& r : tables.runs) {
        if (r.gpu_preset == gpu_id) rows.insert(rows.end(), r.rows.begin(), r.rows.end());
      }
      if (rows.empty()) continue;
      const auto tf = std::chrono::steady_clock::now();
      const cal::FitReport fit = cal::fit_profile(rows, gpu, std::string("published ") + gpu_id, options);
      std::fprintf(stderr, "%s: %zu rows fitted in %.1f s\n", gpu_id, rows.size(),
                   std::chrono::duration<double>(std::chrono::steady_clock::now() - tf).count());
      const kvplan::PerfProfile datasheet = kvplan::PerfProfile::datasheet_default(gpu);
      const cal::FitOptions& defaults = options;
      std::map<OpClass, bool> validated;  // classes the fitter split (enough rows)
      for (const cal::ClassFit& c : fit.classes) validated[c.op_class] = c.heldout.rows > 0;
      std::map<std::string, Line> by_key;
      for (const cal::Measurement& m : rows) {
        if (!cal::is_heldout(m, defaults.heldout_percent)) continue;
        const kvplan::StepOp op = cal::row_op(m);
        if (!validated[op.op_class]) continue;  // fitted on every row: nothing held out
        const kvplan::OpClassProfile& fitted = fit.profile.at(op.op_class);
        kvplan::OpClassProfile curves = fitted;
        curves.grids.clear();
        const auto [cls, variant] = class_and_variant(op, m);
        Line& l = by_key[cls + "|" + variant];
        l.gpu = gpu_id;
        l.cls = cls;
        l.variant = variant;
        const double pred = kvplan::op_kernel_ns(fitted, gpu, op);
        l.fitted.push_back(std::abs(pred / m.median_ns - 1));
        l.curves.push_back(std::abs(kvplan::op_kernel_ns(curves, gpu, op) / m.median_ns - 1));
        l.datasheet.push_back(std::abs(kvplan::op_kernel_ns(datasheet.at(op.op_class), gpu, op) / m.median_ns - 1));
        if (worst > 0) l.worst.emplace_back(pred / m.median_ns - 1, m);
      }
      for (const cal::Measurement& m : rows) {
        if (cal::is_heldout(m, defaults.heldout_percent)) continue;
        const kvplan::StepOp op = cal::row_op(m);
        const auto [cls, variant] = class_and_variant(op, m);
        auto it = by_key.find(cls + "|" + variant);
        if (it != by_key.end()) ++it->second.train_rows;
      }
      // Every class with several variants or kernels also gets an "(all)" line.
      std::map<std::string, Line> all;
      std::map<std::string, int> parts;
      for (const auto& [key, l] : by_key) {
        Line& a = all[l.cls];
        a.gpu = l.gpu;
        a.cls = l.cls;
        a.variant = "(all)";
        a.train_rows += l.train_rows;
        a.fitted.insert(a.fitted.end(), l.fitted.begin(), l.fitted.end());
        a.curves.insert(a.curves.end(), l.curves.begin(), l.curves.end());
        a.datasheet.insert(a.datasheet.end(), l.datasheet.begin(), l.datasheet.end());
        ++parts[l.cls];
      }
      for (auto& [key, l] : by_key) lines.push_back(std::move(l));
      for (auto& [cls, a] : all) {
        if (parts[cls] > 1) lines.push_back(std::move(a));
      }
    }
    const char* head = "| GPU | class | variant | fitted rows | held-out rows | median | p90 | curves only median / p90 | datasheet median / p90 |";
    if (markdown) {
      std::printf("%s\n|---|---|---|---|---|---|---|---|---|\n", head);
    } else {
      std::printf("%-10s %-18s %-32s %7s %7s %8s %8s %17s %17s\n", "gpu", "class", "variant", "fitted", "heldout",
                  "median", "p90", "curves med/p90", "datasheet med/p90");
    }
    for (Line& l : lines) {
      const std::string curves = pct(median(l.curves)) + " / " + pct(p90(l.curves));
      const std::string ds = pct(median(l.datasheet)) + " / " + pct(p90(l.datasheet));
      if (markdown) {
        std::printf("| %s | %s | %s | %lld | %zu | %s | %s | %s | %s |\n", l.gpu.c_str(), l.cls.c_str(),
                    l.variant.c_str(), static_cast<long long>(l.train_rows), l.fitted.size(),
                    pct(median(l.fitted)).c_str(), pct(p90(l.fitted)).c_str(), curves.c_str(), ds.c_str());
      } else {
        std::printf("%-10s %-18s %-32s %7lld %7zu %8s %8s %17s %17s\n", l.gpu.c_str(), l.cls.c_str(), l.variant.c_str(),
                    static_cast<long long>(l.train_rows), l.fitted.size(), pct(median(l.fitted)).c_str(),
                    pct(p90(l.fitted)).c_str(), curves.c_str(), ds.c_str());
      }
      if (worst > 0) {
        std::sort(l.worst.begin(), l.worst.end(),
                  [](const auto& a, const auto& b) { return std::abs(a.first) > std::abs(b.first); });
        for (int i = 0; i < worst && i < static_cast<int>(l.worst.size()); ++i) {
          std::printf("    %+7.1f%%  %s %s  measured %.1f us\n", l.worst[i].first * 100, l.worst[i].second.kernel.c_str(),
                      l.worst[i].second.params_json.c_str(), l.worst[i].second.median_ns / 1000);
        }
      }
    }
    std::fprintf(stderr, "total %.1f s\n",
                 std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
  } catch (const kvplan::ConfigError& e) {
    std::fprintf(stderr, "kvplan_validate_ops: %s\n", e.what());
    return 2;
  }
  return 0;
}
