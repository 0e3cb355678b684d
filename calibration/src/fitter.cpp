// fit_profile: alternating active-set least squares for the roofline-with-curves model (see fitter.h).
#include "kvplan/calibration/fitter.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <limits>
#include <map>
#include <optional>

#include <Eigen/Dense>
#include <fmt/format.h>
#include <fmt/ranges.h>
#include <nlohmann/json.hpp>

#include "kvplan/calibration/heldout_split.h"
#include "kvplan/calibration/row_ops.h"
#include "kvplan/core/error.h"
#include "kvplan/core/op_time.h"

namespace kvplan::calibration {

namespace {

constexpr int kCompute = 0;
constexpr int kMemory = 1;
constexpr double kNsPerS = 1e9;
// A side whose active sizes span less than this factor has "one size".
constexpr double kOneSizeSpread = 1.05;
// A side whose rows all take more than 1000x the datasheet's fixed latency cannot measure one (it is
// below their timing noise): e_max only, as for one size.
constexpr double kLatencyVisibleShare = 1e-3;

// One side of the max in the linear parameters: time_s = (u · size + v) / roof.
struct Side {
  double u = 1;  // 1 / e_max, >= 1
  double v = 0;  // half_size / e_max, >= 0 (FLOPs or bytes)
  EfficiencyCurve curve() const { return EfficiencyCurve{1.0 / u, v / u}; }
  static Side from(const EfficiencyCurve& c) { return Side{1.0 / c.e_max, c.half_size / c.e_max}; }
};

struct Row {
  std::array<double, 2> size{};  // FLOPs, bytes
  std::array<double, 2> roof{};  // FLOP/s, bytes/s
  double t_s = 0;                // measured median, seconds
};

double side_time_s(const Side& s, const Row& r, int k) {
  if (r.size[k] <= 0) return 0;
  return (s.u * r.size[k] + s.v) / r.roof[k];
}

// Which side sets the row's time; ties go to memory (as for a zero-FLOP copy).
int active_side(const std::array<Side, 2>& p, const Row& r) {
  return side_time_s(p[kCompute], r, kCompute) > side_time_s(p[kMemory], r, kMemory) ? kCompute : kMemory;
}

double objective(const std::array<Side, 2>& p, const std::vector<Row>& rows) {
  double sum = 0;
  for (const Row& r : rows) {
    double t = std::max(side_time_s(p[kCompute], r, kCompute), side_time_s(p[kMemory], r, kMemory));
    double e = t / r.t_s - 1.0;
    sum += e * e;
  }
  return sum;
}

double sse(const std::vector<double>& a, const std::vector<double>& b, double u, double v) {
  double s = 0;
  for (std::size_t i = 0; i < a.size(); ++i) {
    double e = a[i] * u + b[i] * v - 1.0;
    s += e * e;
  }
  return s;
}

// min Σ (a_i u + b_i v − 1)²  s.t. u >= 1, v >= 0 — the relative residuals of the rows on one
// side (a_i = size_i / (roof_i · t_i), b_i = 1 / (roof_i · t_i)). Exact for a convex quadratic in
// two variables: the interior optimum if feasible, else the best of the clamped optima on the
// faces u = 1 and v = 0 (the corner is covered by the clamping).
Side solve_side(const std::vector<double>& a, const std::vector<double>& b) {
  const auto n = static_cast<Eigen::Index>(a.size());
  Eigen::MatrixXd m(n, 2);
  Eigen::VectorXd y = Eigen::VectorXd::Ones(n);
  for (Eigen::Index i = 0; i < n; ++i) {
    m(i, 0) = a[static_cast<std::size_t>(i)];
    m(i, 1) = b[static_cast<std::size_t>(i)];
  }
  // Column scaling: b is ~1e-10 of a (latency in FLOPs vs. FLOPs); unscaled QR would lose v.
  Eigen::Vector2d scale(m.col(0).norm(), m.col(1).norm());
  std::vector<Side> candidates;
  if (scale(0) > 0 && scale(1) > 0) {
    Eigen::MatrixXd ms = m;
    ms.col(0) /= scale(0);
    ms.col(1) /= scale(1);
    Eigen::ColPivHouseholderQR<Eigen::MatrixXd> qr(ms);
    if (qr.rank() == 2) {
      Eigen::Vector2d x = qr.solve(y);
      Side s{x(0) / scale(0), x(1) / scale(1)};
      if (std::isfinite(s.u) && std::isfinite(s.v) && s.u >= 1.0 && s.v >= 0.0) return s;
    }
  }
  double saa = 0, sa = 0, sbb = 0, sb_1a = 0;
  for (std::size_t i = 0; i < a.size(); ++i) {
    saa += a[i] * a[i];
    sa += a[i];
    sbb += b[i] * b[i];
    sb_1a += b[i] * (1.0 - a[i]);
  }
  candidates.push_back(Side{saa > 0 ? std::max(1.0, sa / saa) : 1.0, 0.0});    // face v = 0
  candidates.push_back(Side{1.0, sbb > 0 ? std::max(0.0, sb_1a / sbb) : 0.0});  // face u = 1
  const Side* best = &candidates[0];
  for (const Side& c : candidates) {
    if (sse(a, b, c.u, c.v) < sse(a, b, best->u, best->v)) best = &c;
  }
  return *best;
}

// e_max only, with v = u · h (h = datasheet half_size): min Σ ((a_i + b_i h) u − 1)², u >= 1.
Side solve_scale(const std::vector<double>& a, const std::vector<double>& b, double h) {
  double num = 0, den = 0;
  for (std::size_t i = 0; i < a.size(); ++i) {
    double c = a[i] + b[i] * h;
    num += c;
    den += c * c;
  }
  double u = den > 0 ? std::max(1.0, num / den) : 1.0;
  return Side{u, u * h};
}

struct ClassFitResult {
  std::array<Side, 2> sides;
  std::array<CurveFitInfo, 2> info;
  int iterations = 0;
};

// The fixed latency (seconds) a side implies for the first row's roof: v / roof. Rows of one
// class share their roofs unless their dtypes differ; the first row is a fair representative.
double latency_s(const Side& s, const Row& r, int k) { return s.v / r.roof[k]; }

ClassFitResult fit_sides(const std::vector<Row>& rows, const OpClassProfile& datasheet, const FitOptions& opt) {
  const std::array<Side, 2> start = {Side::from(datasheet.compute), Side::from(datasheet.memory)};
  const std::array<double, 2> datasheet_h = {datasheet.compute.half_size, datasheet.memory.half_size};
  std::array<Side, 2> p = start;
  std::vector<int> assign(rows.size(), -1);
  ClassFitResult best;
  best.sides = p;
  double best_obj = std::numeric_limits<double>::infinity();
  for (int it = 1; it <= opt.max_iterations; ++it) {
    bool changed = false;
    std::array<int, 2> count = {0, 0};
    for (std::size_t i = 0; i < rows.size(); ++i) {
      int k = active_side(p, rows[i]);
      changed |= k != assign[i];
      assign[i] = k;
      ++count[k];
    }
    if (!changed) break;
    // Too few rows to split between the sides: all of them go to the side most of them are on.
    std::string pooled;
    if (count[kCompute] < opt.min_points && count[kMemory] < opt.min_points) {
      const int k = count[kCompute] > count[kMemory] ? kCompute : kMemory;
      std::fill(assign.begin(), assign.end(), k);
      pooled = "; too few rows to split between the sides, all fitted to this one";
    }
    std::array<CurveFitInfo, 2> info;
    for (int k : {kCompute, kMemory}) {
      std::vector<double> a, b;
      double lo = std::numeric_limits<double>::infinity(), hi = 0;
      bool latency_visible = false;  // some row is short enough for the datasheet's fixed latency to show
      for (std::size_t i = 0; i < rows.size(); ++i) {
        if (assign[i] != k || rows[i].size[k] <= 0) continue;
        const Row& r = rows[i];
        a.push_back(r.size[k] / (r.roof[k] * r.t_s));
        b.push_back(1.0 / (r.roof[k] * r.t_s));
        lo = std::min(lo, r.size[k]);
        hi = std::max(hi, r.size[k]);
        latency_visible |= start[k].v / r.roof[k] >= kLatencyVisibleShare * r.t_s;
      }
      if (static_cast<int>(a.size()) < opt.min_points) continue;
      info[k].fitted = true;
      if (hi < lo * kOneSizeSpread) {
        p[k] = solve_scale(a, b, datasheet_h[k]);
        info[k].how = "e_max only (every row has one size; half_size kept from the datasheet)" + pooled;
      } else if (!latency_visible) {
        p[k] = solve_scale(a, b, datasheet_h[k]);
        info[k].how = "e_max only (every row is too long for a fixed latency to show; half_size kept from the "
                      "datasheet)" + pooled;
      } else {
        p[k] = solve_side(a, b);
        info[k].how = "slope and intercept" + pooled;
      }
    }
    // A side without enough rows keeps its datasheet e_max, but its fixed latency is capped at the
    // fitted side's: a datasheet latency larger than the measured one would otherwise claim (and
    // mispredict) the small kernels the data show to be faster.
    for (int k : {kCompute, kMemory}) {
      if (info[k].fitted) continue;
      p[k] = start[k];
      const int other = 1 - k;
      info[k].how = count[k] == 0 ? "datasheet (no rows bound by this side)"
                                  : fmt::format("datasheet (only {} row(s) bound by this side)", count[k]);
      if (info[other].fitted) {
        const double cap = latency_s(p[other], rows.front(), other);
        if (latency_s(p[k], rows.front(), k) > cap) {
          p[k].v = cap * rows.front().roof[k];
          info[k].how += "; fixed latency capped at the fitted side's";
        }
      }
    }
    double obj = objective(p, rows);
    if (obj < best_obj) {
      best_obj = obj;
      best.sides = p;
      best.info = info;
      best.iterations = it;
    }
  }
  // Active counts at the kept solution.
  best.info[kCompute].active_rows = best.info[kMemory].active_rows = 0;
  for (const Row& r : rows) ++best.info[active_side(best.sides, r)].active_rows;
  return best;
}

double percentile(std::vector<double> v, double q) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  // Nearest rank: the smallest value with at least q of the values at or below it.
  auto rank = static_cast<std::size_t>(std::ceil(q * static_cast<double>(v.size())));
  return v[std::clamp<std::size_t>(rank, 1, v.size()) - 1];
}

}  // namespace

Roofs roofs_for(OpClass c, const GpuSpec& gpu, DType compute) {
  Roofs r;
  r.peak_flops = gpu.peak_flops(compute);
  switch (c) {
    case OpClass::kCollective:
      r.bandwidth = gpu.interconnect_bytes_per_s > 0 ? gpu.interconnect_bytes_per_s : gpu.pcie_bytes_per_s;
      break;
    case OpClass::kCopyH2D:
    case OpClass::kCopyD2H: r.bandwidth = gpu.pcie_bytes_per_s; break;
    default: r.bandwidth = gpu.memory_bandwidth_bytes_per_s; break;
  }
  return r;
}

DType row_compute_dtype(const Measurement& m) {
  nlohmann::json j = nlohmann::json::parse(m.params_json, nullptr, /*allow_exceptions=*/false);
  if (!j.is_object()) return DType::kBF16;
  for (const char* key : {"dtype", "compute_dtype"}) {
    auto it = j.find(key);
    if (it != j.end() && it->is_string()) {
      try {
        return parse_dtype(it->get<std::string>(), key);
      } catch (const ConfigError&) {
        return DType::kBF16;
      }
    }
  }
  return DType::kBF16;
}

double predicted_kernel_ns(const OpClassProfile& c, double flops, double bytes, const Roofs& roofs) {
  double t = 0;
  if (flops > 0 && roofs.peak_flops > 0) t = flops / (roofs.peak_flops * c.compute.at(flops));
  if (bytes > 0 && roofs.bandwidth > 0) t = std::max(t, bytes / (roofs.bandwidth * c.memory.at(bytes)));
  return t * kNsPerS;
}

ErrorStats error_stats(std::vector<double> rel) {
  ErrorStats e;
  e.rows = static_cast<int64_t>(rel.size());
  if (rel.empty()) return e;
  double sum = 0;
  for (double v : rel) sum += v;
  e.mean = sum / static_cast<double>(rel.size());
  e.median = percentile(rel, 0.5);
  e.p90 = percentile(rel, 0.9);
  e.max = percentile(std::move(rel), 1.0);
  return e;
}

double predicted_row_ns(const OpClassProfile& c, const GpuSpec& gpu, const Measurement& row) {
  return op_kernel_ns(c, gpu, row_op(row));
}

FitReport fit_profile(const std::vector<Measurement>& rows, const GpuSpec& gpu, std::string_view label,
                      const FitOptions& options) {
  const std::string source = fmt::format("measured ({})", label);
  return fit_profile(rows, gpu, [&](OpClass) { return source; }, options);
}

FitReport fit_profile(const std::vector<Measurement>& rows, const GpuSpec& gpu, const ClassSource& source_of,
                      const FitOptions& options) {
  FitReport report;
  const PerfProfile datasheet = PerfProfile::datasheet_default(gpu);
  report.profile = datasheet;
  for (std::size_t i = 0; i < kNumOpClasses; ++i) {
    OpClassProfile& c = report.profile.at(static_cast<OpClass>(i));
    c.note = "no calibration rows for this class; " + c.note;
  }

  // Usable rows per class, with the operator each stands for.
  struct ClassRow {
    const Measurement* m = nullptr;
    StepOp op;
    bool heldout = false;
  };
  std::map<OpClass, std::vector<ClassRow>> by_class;
  std::map<std::string, int64_t> unknown_classes;
  int64_t unusable = 0;
  for (const Measurement& m : rows) {
    OpClass c{};
    try {
      c = parse_op_class(m.op_class, "calibration row");
    } catch (const ConfigError&) {
      ++unknown_classes[m.op_class];
      continue;
    }
    const bool ok = std::isfinite(m.median_ns) && m.median_ns > 0 && std::isfinite(m.flops) && m.flops >= 0 &&
                    std::isfinite(m.bytes) && m.bytes >= 0 && (m.flops > 0 || m.bytes > 0);
    if (!ok) {
      ++unusable;
      continue;
    }
    by_class[c].push_back(ClassRow{&m, row_op(m), false});
  }
  for (const auto& [name, n] : unknown_classes) {
    report.warnings.push_back(fmt::format("{} row(s) with operator class '{}' skipped: not a PerfProfile class", n, name));
  }
  if (unusable > 0) {
    report.warnings.push_back(fmt::format(
        "{} row(s) skipped: median time must be > 0 and FLOPs/bytes finite, >= 0 and not both 0", unusable));
  }

  std::string counts;
  for (auto& [cls, list] : by_class) {
    const OpClassProfile& ds = datasheet.at(cls);
    counts += fmt::format("{}{}: {}", counts.empty() ? "" : ", ", op_class_name(cls), list.size());
    if (static_cast<int>(list.size()) < options.min_points) {
      report.warnings.push_back(fmt::format("class {}: {} usable row(s), need >= {}; datasheet values kept",
                                            op_class_name(cls), list.size(), options.min_points));
      continue;
    }
    // Held-out split by shape (heldout_split.h), when the class has enough rows for both sides.
    int64_t n_heldout = 0;
    if (options.heldout_percent > 0 && static_cast<int64_t>(list.size()) >= options.min_rows_for_heldout) {
      for (ClassRow& r : list) {
        r.heldout = is_heldout(*r.m, options.heldout_percent);
        n_heldout += r.heldout ? 1 : 0;
      }
      if (static_cast<int64_t>(list.size()) - n_heldout < options.min_points) {
        for (ClassRow& r : list) r.heldout = false;
        n_heldout = 0;
      }
    }

    // 1. Curves, on the fitted rows. The critical path of decode attention multiplies the memory
    // time by κ >= 1, independent of the curve: it is folded into the row's memory roof.
    std::vector<Row> fit_rows;
    std::vector<const ClassRow*> fitted;
    for (const ClassRow& cr : list) {
      if (cr.heldout) continue;
      const StepOp& op = cr.op;
      Row r;
      r.size = {op.flops, op.bytes};
      double kappa = 1.0;
      if (op.critical_ctas > 0 && op.critical_bytes > 0 && gpu.num_sms > 0 && op.bytes > 0) {
        const double share = std::min(1.0, static_cast<double>(op.critical_ctas) / gpu.num_sms);
        kappa = std::max(1.0, op.critical_bytes / (op.bytes * share));
      }
      r.roof = {gpu.peak_flops(op.dtype), stream_bandwidth(gpu, op.stream) / kappa};
      r.t_s = cr.m->median_ns / kNsPerS;
      if (r.roof[kCompute] <= 0 || r.roof[kMemory] <= 0) continue;
      fit_rows.push_back(r);
      fitted.push_back(&cr);
    }
    if (static_cast<int>(fit_rows.size()) < options.min_points) {
      report.warnings.push_back(fmt::format("class {}: GPU '{}' has no roof for these rows; datasheet kept",
                                            op_class_name(cls), gpu.id));
      continue;
    }
    ClassFitResult f = fit_sides(fit_rows, ds, options);

    ClassFit out;
    out.op_class = cls;
    out.compute = f.info[kCompute];
    out.memory = f.info[kMemory];
    out.iterations = f.iterations;
    out.num_points = static_cast<int64_t>(fit_rows.size());
    OpClassProfile& p = out.profile;
    p.compute = f.sides[kCompute].curve();  // unfitted sides: datasheet, latency capped (fit_sides)
    p.memory = f.sides[kMemory].curve();
    p.launch_overhead_ns = ds.launch_overhead_ns;

    // 2. One grid per variant on ln(measured / curve time) of the fitted rows with a shape.
    if (options.fit_grids && !grid_axes(cls).empty()) {
      std::map<std::string, std::vector<GridSample>, std::less<>> samples;
      for (const ClassRow* cr : fitted) {
        if (cr->op.shape.dims <= 0) continue;
        const double curve_ns = op_roofline_s(p, gpu, cr->op) * kNsPerS;
        if (!(curve_ns > 0)) continue;
        GridSample s;
        s.x = grid_coordinates(cls, cr->op.shape);
        s.y = std::log(cr->m->median_ns / curve_ns);
        s.key_hash = split_hash(split_key(*cr->m));
        samples[std::string(op_grid_variant(cr->op))].push_back(s);
      }
      for (const auto& [variant, list_v] : samples) {
        if (static_cast<int>(list_v.size()) < options.min_grid_rows) {
          report.warnings.push_back(fmt::format("class {} variant {}: {} row(s) with a shape, need >= {} for a grid",
                                                op_class_name(cls), variant, list_v.size(), options.min_grid_rows));
          continue;
        }
        GridFitOptions grid_options = options.grid;
        // The fused MoE's coordinates are expected loads (fused_moe.h), continuous rather than a
        // table's few sizes, so "a knot at every present value" would mean a knot per row.
        if (cls == OpClass::kMoeGemm) grid_options.max_knots_per_axis = std::min(grid_options.max_knots_per_axis, 12);
        // DeepSeek-V4's module tables place the cached prefix at 65,536 - isl for every isl: a knot per
        // value would quadruple the grids (and every start-up's profile parse) for no held-out gain.
        if (cls == OpClass::kDsv4Attention) grid_options.max_knots_per_axis = std::min(grid_options.max_knots_per_axis, 12);
        GridFit g = fit_shape_grid(list_v, grid_axes(cls), grid_options);
        VariantFit v;
        v.variant = variant;
        v.cells = static_cast<int64_t>(g.grid.size());
        v.smoothing = g.smoothing;
        v.axis_weights = g.axis_weights;
        p.grids[variant] = std::move(g.grid);
        out.variants.push_back(std::move(v));
      }
    }

    // 3. Floor: no kernel of the class was measured faster than this. The fastest row shows the
    // class's shortest kernel only when its time is a fixed latency: on the fitted curve of its
    // active side, the latency part is at least the throughput part (size <= half_size). Rows that
    // are all large (the Azure guide's BabelStream moves 21 GB per kernel) say nothing about how
    // short a small kernel can be, so they set no floor.
    if (options.fit_floor) {
      double floor = std::numeric_limits<double>::infinity();
      size_t fastest = fitted.size();
      for (size_t i = 0; i < fitted.size(); ++i) {
        const double t = fitted[i]->m->median_ns / std::max(1, fitted[i]->op.kernels);
        if (t < floor) {
          floor = t;
          fastest = i;
        }
      }
      if (fastest < fitted.size()) {
        const Row& r = fit_rows[fastest];
        const int k = active_side(f.sides, r);
        if (f.sides[k].v < f.sides[k].u * r.size[k]) floor = std::numeric_limits<double>::infinity();
      }
      if (std::isfinite(floor)) p.floor_ns = std::floor(floor);  // whole ns, never above a measured kernel
      out.floor_ns = p.floor_ns;
    }

    // 4. Errors through the whole class profile (op_time.h): fitted rows and held-out rows, per
    // class and per variant.
    std::vector<double> rel_fit, rel_out;
    std::map<std::string, std::pair<std::vector<double>, std::vector<double>>, std::less<>> rel_variant;
    for (const ClassRow& cr : list) {
      const double e = std::abs(op_kernel_ns(p, gpu, cr.op) / cr.m->median_ns - 1.0);
      (cr.heldout ? rel_out : rel_fit).push_back(e);
      if (cr.op.shape.dims > 0) {
        auto& v = rel_variant[std::string(op_grid_variant(cr.op))];
        (cr.heldout ? v.second : v.first).push_back(e);
      }
    }
    const ErrorStats fit_stats = error_stats(rel_fit);
    out.mape = fit_stats.mean;
    out.p90_rel_error = fit_stats.p90;
    out.max_rel_error = fit_stats.max;
    out.heldout = error_stats(rel_out);
    p.heldout_p90_rel_error = out.heldout.p90;
    for (VariantFit& v : out.variants) {
      auto it = rel_variant.find(v.variant);
      if (it == rel_variant.end()) continue;
      v.fitted = error_stats(it->second.first);
      v.heldout = error_stats(it->second.second);
    }

    p.source = source_of(cls);
    std::string grids;
    for (const VariantFit& v : out.variants) {
      grids += fmt::format("{}{} ({} cells, λ {}, axis weights {})", grids.empty() ? "" : ", ", v.variant, v.cells,
                           v.smoothing, fmt::join(v.axis_weights, "/"));
    }
    const std::string heldout =
        out.heldout.rows > 0
            ? fmt::format("held-out {} rows ({}% of shapes): median error {:.1f}%, p90 {:.1f}%", out.heldout.rows,
                          options.heldout_percent, out.heldout.median * 100, out.heldout.p90 * 100)
            : std::string("no held-out rows (too few rows to split)");
    p.note = fmt::format(
        "{} rows fitted, MAPE {:.1f}%, p90 error {:.1f}%; {}; compute curve: {} ({} rows), memory curve: {} ({} rows); "
        "shape grids: {}; floor {:.0f} ns; launch overhead from the datasheet",
        out.num_points, out.mape * 100, out.p90_rel_error * 100, heldout, out.compute.how, out.compute.active_rows,
        out.memory.how, out.memory.active_rows, grids.empty() ? "none" : grids, p.floor_ns);
    report.profile.at(cls) = p;
    report.classes.push_back(out);
  }
  if (report.classes.empty()) {
    std::string why = counts.empty() ? "no usable rows" : "usable rows per class: " + counts;
    for (const std::string& w : report.warnings) why += "; " + w;
    throw ConfigError(fmt::format("calibration fit ({}): no operator class has >= {} usable rows ({})", gpu.id,
                                  options.min_points, why));
  }
  return report;
}

PerfProfile transfer_profile(const PerfProfile& profile, const GpuSpec& target) {
  PerfProfile out = profile.transferred_to(target);
  for (std::size_t i = 0; i < kNumOpClasses; ++i) {
    const OpClassProfile& from = profile.at(static_cast<OpClass>(i));
    OpClassProfile& c = out.at(static_cast<OpClass>(i));
    if (from.source.rfind("measured (", 0) == 0) {
      // "measured (h100-sxm run 3)" -> note keeps "h100-sxm run 3".
      std::string what = from.source.substr(10, from.source.size() - 11);
      c.source = fmt::format("transferred (from {})", profile.gpu_id());
      c.note = fmt::format("measured on {}, efficiencies applied to {}'s roofs; {}", what, target.id, from.note);
    }
  }
  return out;
}

}  // namespace kvplan::calibration
