// What `kvplan calibrate from-runs` prints (runs_fit.h): the deployment, the errors before and
// after the fit, and with --explain every run's measured value and both predictions, the fitted
// terms next to the shipped defaults and a plain sentence for each large change.
#include <cmath>

#include <fmt/format.h>

#include "kvplan/plan/runs_fit.h"

namespace kvplan::plan {

namespace {

// A fitted term is a large change from the default past this ratio (either way).
constexpr double kLargeRatio = 1.5;

std::string pc(double x) { return fmt::format("{:+.0f}%", x * 100); }

std::string engine_word(const std::string& e) {
  if (e == "vllm") return "vLLM";
  if (e == "sglang") return "SGLang";
  if (e == "trtllm") return "TensorRT-LLM";
  return e;
}

// "3.1x" or "0.4x" (or "new: 0 by default") of fitted against shipped.
std::string ratio_words(double fitted, double shipped) {
  if (shipped == 0) return "is not in the default (0)";
  return fmt::format("is {:.1f}x", fitted / shipped);
}

bool large(double fitted, double shipped) {
  if (shipped == 0) return fitted > 0;
  const double r = fitted / shipped;
  return r > kLargeRatio || r < 1 / kLargeRatio;
}

// One sentence per large change: what the term is, how far it moved, where to look.
std::vector<std::string> sentences(const RunsFit& f) {
  std::vector<std::string> out;
  const std::string dflt = fmt::format("the shipped {} default", engine_word(f.deployment.engine));
  const ServingTerms& a = f.fitted;
  const ServingTerms& b = f.shipped;
  if (large(a.request_ms, b.request_ms)) {
    out.push_back(fmt::format(
        "your deployment's per-request overhead ({:.1f} ms) {} {} ({:.1f} ms): {}", a.request_ms,
        ratio_words(a.request_ms, b.request_ms), dflt, b.request_ms,
        a.request_ms > b.request_ms ? "look at tokenisation, the HTTP front end or a proxy between client and server"
                                    : "your front end adds less per request than the published runs' did"));
  }
  const double a_load = a.per_in_flight_ms + a.prefill_share, b_load = b.per_in_flight_ms + b.prefill_share;
  if (large(a_load, b_load)) {
    out.push_back(fmt::format(
        "the delay each request adds to the others in flight (now {}) {} {} ({}): {}",
        a.prefill_share > 0 ? fmt::format("{:.4f} x the prompt's prefill", a.prefill_share)
                            : fmt::format("{:.3f} ms", a.per_in_flight_ms),
        ratio_words(a_load, b_load), dflt,
        b.prefill_share > 0 ? fmt::format("{:.4f} x the prompt's prefill", b.prefill_share)
                            : fmt::format("{:.3f} ms", b.per_in_flight_ms),
        a_load > b_load ? "the front end (HTTP, tokenisation, streaming every running request's output) saturates "
                          "with load: more API server processes or a faster host CPU"
                        : "your runs queue less at the front end than the closed-loop sweeps the default came from"));
  }
  if (large(a.step_ms, b.step_ms)) {
    out.push_back(fmt::format(
        "your engine's CPU time per step ({:.3f} ms) {} {} ({:.3f} ms): {}", a.step_ms, ratio_words(a.step_ms, b.step_ms),
        dflt, b.step_ms,
        a.step_ms > b.step_ms ? "look at the scheduler, sampling and output processing, CUDA graphs off, or a slow or "
                                "busy host CPU"
                              : "your engine overlaps more CPU work with the GPU than the default assumes"));
  }
  if (std::fabs(a.factor / b.factor - 1) > 0.25) {
    out.push_back(fmt::format(
        "your GPU's steps take {:.2f}x the time of the default's ({:.3f} vs {:.3f}): {}", a.factor / b.factor, a.factor,
        b.factor,
        a.factor > b.factor ? "slower kernels than the operator tables (another engine version or attention backend), "
                              "lower clocks or a power cap, or a slower variant of the GPU (PCIe instead of SXM)"
                            : "faster kernels than the operator tables (a newer engine version or kernel library)"));
  }
  return out;
}

std::string errors_line(const char* what, const RunErrors& e) {
  return fmt::format("  {:<28} TTFT median |e| {:>4.0f}%, p90 {:>4.0f}%;  TPOT median |e| {:>4.0f}%, p90 {:>4.0f}%  ({} runs)\n",
                     what, e.ttft_median_abs * 100, e.ttft_p90_abs * 100, e.tpot_median_abs * 100, e.tpot_p90_abs * 100,
                     e.runs);
}

nlohmann::json terms_json(const ServingTerms& t) {
  return {{"request_overhead_ms", t.request_ms},
          {"request_overhead_per_in_flight_ms", t.per_in_flight_ms},
          {"request_overhead_per_in_flight_prefill_share", t.prefill_share},
          {"step_overhead_ms", t.step_ms},
          {"step_time_factor", t.factor}};
}

nlohmann::json errors_json(const RunErrors& e) {
  return {{"runs", e.runs},
          {"ttft_median_abs_rel_error", e.ttft_median_abs},
          {"ttft_p90_abs_rel_error", e.ttft_p90_abs},
          {"tpot_median_abs_rel_error", e.tpot_median_abs},
          {"tpot_p90_abs_rel_error", e.tpot_p90_abs}};
}

}  // namespace

std::string runs_fit_text(const RunsFit& f, bool explain) {
  const RunsDeployment& d = f.deployment;
  std::string out = fmt::format("deployment: {} on {} with {} {} (tp {})\n", d.model, d.gpu, engine_word(d.engine),
                                d.engine_version.empty() ? "(version not stated)" : d.engine_version,
                                d.flags.count("tensor-parallel-size") ? d.flags.at("tensor-parallel-size") : "1");
  for (const std::string& s : d.from) out += "  " + s + "\n";
  out += fmt::format("{} runs; {}\n", f.points.size(),
                     f.held_out ? "errors on the held-out quarter (calibration::split_hash of file name and line), the "
                                  "fit on the rest"
                                : "IN-SAMPLE errors: fewer than 4 runs, nothing held out");
  for (const std::string& n : f.notes) out += "  note: " + n + "\n";
  out += errors_line("shipped defaults:", f.before);
  out += errors_line("fitted to your runs:", f.after);
  const ServingTerms& t = f.fitted;
  out += fmt::format(
      "fitted terms: per request {:.3f} ms, per other request in flight {}, per step {:.3f} ms, step-time factor {:.3f}\n",
      t.request_ms,
      f.prefill_shaped ? fmt::format("{:.4f} x the prompt's prefill", t.prefill_share)
                       : fmt::format("{:.3f} ms", t.per_in_flight_ms),
      t.step_ms, t.factor);
  if (!explain) return out;

  out += "\nper run (error = (predicted - measured) / measured):\n";
  out += fmt::format("  {:<44} {:<22} {:>5} {:>9} {:>9} {:>6} {:>9} {:>6} | {:>8} {:>8} {:>6} {:>8} {:>6}\n", "run",
                     "load", "half", "TTFT ms", "before", "err", "after", "err", "TPOT ms", "before", "err", "after",
                     "err");
  for (const RunPoint& p : f.points) {
    out += fmt::format(
        "  {:<44} {:<22} {:>5} {:>9.1f} {:>9.1f} {:>6} {:>9.1f} {:>6} | {:>8.2f} {:>8.2f} {:>6} {:>8.2f} {:>6}\n",
        p.run->id.size() > 44 ? "..." + p.run->id.substr(p.run->id.size() - 41) : p.run->id, p.run->load_text(),
        p.held_out ? "held" : "fit", p.measured_ttft_ms, p.before_ttft_ms, pc((p.before_ttft_ms - p.measured_ttft_ms) / p.measured_ttft_ms),
        p.after_ttft_ms, pc((p.after_ttft_ms - p.measured_ttft_ms) / p.measured_ttft_ms), p.measured_tpot_ms,
        p.before_tpot_ms, pc((p.before_tpot_ms - p.measured_tpot_ms) / p.measured_tpot_ms), p.after_tpot_ms,
        pc((p.after_tpot_ms - p.measured_tpot_ms) / p.measured_tpot_ms));
  }
  if (!f.points.empty()) {
    out += fmt::format("  (compared: {} and {}, as the files give them)\n", f.points[0].ttft_stat, f.points[0].tpot_stat);
  }
  const ServingTerms& s = f.shipped;
  out += "\nterm                                   shipped default    fitted to your runs\n";
  out += fmt::format("  per request (ms)                     {:>12.3f}       {:>12.3f}\n", s.request_ms, t.request_ms);
  out += fmt::format("  per other request in flight (ms)     {:>12.3f}       {:>12.3f}\n", s.per_in_flight_ms,
                     t.per_in_flight_ms);
  out += fmt::format("  ... as a share of the prompt prefill {:>12.4f}       {:>12.4f}\n", s.prefill_share, t.prefill_share);
  out += fmt::format("  per step (ms)                        {:>12.3f}       {:>12.3f}\n", s.step_ms, t.step_ms);
  out += fmt::format("  step-time factor                     {:>12.3f}       {:>12.3f}\n", s.factor, t.factor);
  const std::vector<std::string> said = sentences(f);
  if (said.empty()) out += "no term moved more than 1.5x from its default.\n";
  for (const std::string& line : said) out += "- " + line + "\n";
  return out;
}

nlohmann::json runs_fit_json(const RunsFit& f) {
  nlohmann::json runs = nlohmann::json::array();
  for (const RunPoint& p : f.points) {
    runs.push_back({{"id", p.run->id},
                    {"format", p.run->format},
                    {"load", p.run->load_text()},
                    {"held_out", p.held_out},
                    {"ttft_statistic", p.ttft_stat},
                    {"tpot_statistic", p.tpot_stat},
                    {"measured_ttft_ms", p.measured_ttft_ms},
                    {"measured_tpot_ms", p.measured_tpot_ms},
                    {"before_ttft_ms", p.before_ttft_ms},
                    {"before_tpot_ms", p.before_tpot_ms},
                    {"after_ttft_ms", p.after_ttft_ms},
                    {"after_tpot_ms", p.after_tpot_ms}});
  }
  return {{"label", "fitted to your runs"},
          {"model", f.deployment.model},
          {"gpu", f.deployment.gpu},
          {"engine", f.deployment.engine},
          {"engine_version", f.deployment.engine_version},
          {"held_out", f.held_out},
          {"errors_on", f.held_out ? "held-out quarter" : "in-sample"},
          {"shipped", terms_json(f.shipped)},
          {"fitted", terms_json(f.fitted)},
          {"before", errors_json(f.before)},
          {"after", errors_json(f.after)},
          {"changes", sentences(f)},
          {"notes", f.notes},
          {"runs", runs}};
}

}  // namespace kvplan::plan
