// `kvplan simulate --explain-step B,C[,P]`: the cost of one engine step, operator by operator, with
// what sets each one's time (compute, memory or the kernel floor), the measured shape correction,
// and where every number comes from. B decode sequences of C tokens of context each, plus (P > 0)
// one prefill chunk of P new tokens.
#include <iostream>
#include <vector>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "commands.h"
#include "kvplan/core/json_input.h"
#include "kvplan/core/error.h"
#include "kvplan/sim/cost_model.h"
#include "kvplan/sim/serving_overheads.h"
#include "report_format.h"
#include "sim_options.h"

namespace kvplan::cli {

namespace {

struct ExplainShape {
  int64_t batch = 0;
  int64_t context = 0;
  int64_t prefill = 0;
};

ExplainShape parse_explain(const std::string& text) {
  ExplainShape e;
  std::vector<int64_t> parts;
  size_t start = 0;
  while (start <= text.size()) {
    const size_t comma = text.find(',', start);
    const std::string part = text.substr(start, comma == std::string::npos ? std::string::npos : comma - start);
    parts.push_back(parse_int_flag("explain-step", part));
    if (comma == std::string::npos) break;
    start = comma + 1;
  }
  if (parts.size() < 2 || parts.size() > 3 || parts[0] < 0 || parts[1] < 0 || (parts.size() == 3 && parts[2] < 0) ||
      parts[0] > 1'000'000 || parts[1] > 100'000'000 || (parts.size() == 3 && parts[2] > 10'000'000)) {
    throw ConfigError(fmt::format(
        "--explain-step={} must be BATCH,CONTEXT or BATCH,CONTEXT,PREFILL_TOKENS (non-negative; batch at most "
        "1,000,000, context at most 100,000,000 tokens)",
        text));
  }
  e.batch = parts[0];
  e.context = parts[1];
  e.prefill = parts.size() == 3 ? parts[2] : 0;
  if (e.batch == 0 && e.prefill == 0) {
    throw ConfigError(fmt::format("--explain-step={}: the step has no work (batch 0 and no prefill)", text));
  }
  return e;
}

}  // namespace

int run_explain_step(const SimRequest& request) {
  const ExplainShape e = parse_explain(request.explain_step);
  sim::SimulationConfig config = build_simulation(build_scenario(request.memory_flags), request.sim_flags);
  const sim::StepTimeSource source = sim::resolve_step_time_source(config);
  const PerfProfile& profile = source.profile;
  sim::CostOptions options = config.cost;
  options.weights = config.serving.weights;
  options.memoise = false;
  const MemoryPlan plan = plan_memory(config.model, config.gpu, config.scheme, config.parallel, config.serving);
  sim::StepCostModel model(config.model, config.gpu, plan.kv_scheme, config.parallel, profile, options);
  std::vector<int64_t> decode(static_cast<size_t>(e.batch), e.context);
  std::vector<sim::PrefillChunk> prefill;
  if (e.prefill > 0) prefill.push_back(sim::PrefillChunk{.context_tokens = 0, .new_tokens = e.prefill});
  sim::StepWork work;
  work.decode_contexts = decode;
  work.prefill = prefill;
  const sim::StepBreakdown b = model.explain(work);

  if (request.json) {
    nlohmann::json j;
    j["warnings"] = plan.warnings;
    j["step"] = {{"decode_sequences", e.batch}, {"context_tokens", e.context}, {"prefill_tokens", e.prefill}};
    j["total_ns"] = b.total_ns;
    j["profile_source"] = profile.source_kind();
    j["step_time_source"] = source.summary;
    j["engine_step_overhead_ns"] = config.overheads.step.ns;
    j["engine_step_overhead_source"] = config.overheads.step.source;
    j["engine_step_time_factor"] = config.overheads.step_factor.value;
    j["engine_step_time_factor_source"] = config.overheads.step_factor.source;
    j["step_with_overhead_ns"] =
        sim::engine_step_ns(b.total_ns, config.overheads.step_factor.value, config.overheads.step.ns);
    j["weights"] = model.weights_note();
    j["ops"] = nlohmann::json::array();
    for (const sim::OpCost& op : b.ops) {
      j["ops"].push_back({{"name", op.name}, {"class", op.op_class}, {"stream", op.stream}, {"instances", op.instances},
                          {"time_ns", op.time_ns}, {"launch_ns", op.launch_ns}, {"limit", op.limit},
                          {"grid_factor", op.grid_factor}, {"flops", op.flops}, {"bytes", op.bytes},
                          {"source", op.source}});
    }
    j["sources"] = model.sources();
    std::cout << json_text(j, 2) << "\n";
    return 0;
  }
  std::string out;
  for (const std::string& w : plan.warnings) out += fmt::format("WARNING: {}\n", w);
  out += fmt::format("One step of {} on {} ({}): {} decode sequence(s) of {} tokens{}\n", config.model.name,
                     config.gpu.name, parallel_text(config.parallel), e.batch, with_commas(e.context),
                     e.prefill > 0 ? fmt::format(" + a prefill chunk of {} tokens", with_commas(e.prefill)) : "");
  out += fmt::format("{}; CUDA graphs {}\n\n", model.weights_note(),
                     options.cuda_graphs && e.prefill == 0 ? "on (no launch overhead)" : "off for this step");
  out += fmt::format("  {:<38} {:>6} {:>10} {:>6}  {:<7} {:>6}  {}\n", "operator (all layers)", "count", "us", "share",
                     "limit", "grid", "source");
  double sum = 0;
  for (const sim::OpCost& op : b.ops) sum += static_cast<double>(op.time_ns);
  for (const sim::OpCost& op : b.ops) {
    out += fmt::format("  {:<38} {:>6} {:>10.1f} {:>5.1f}%  {:<7} {:>6}  {}\n", op.name, op.instances,
                       static_cast<double>(op.time_ns) / 1e3, sum > 0 ? 100.0 * static_cast<double>(op.time_ns) / sum : 0.0,
                       op.limit, op.grid_factor == 1.0 ? std::string("-") : fmt::format("x{:.2f}", op.grid_factor),
                       op.source);
  }
  out += fmt::format("\n  step time (critical path over compute, communication and copy streams): {:.1f} us\n",
                     static_cast<double>(b.total_ns) / 1e3);
  if (config.overheads.step_factor.value != 1.0) {
    out += fmt::format("  x engine step-time factor {:.3f} — {}\n", config.overheads.step_factor.value,
                       config.overheads.step_factor.source);
  }
  out += fmt::format("  + engine step overhead (scheduler, sampling, CPU): {:.1f} us — {}\n",
                     static_cast<double>(config.overheads.step.ns) / 1e3, config.overheads.step.source);
  out += fmt::format("  = {:.1f} us per step as the simulator advances time\n",
                     static_cast<double>(sim::engine_step_ns(b.total_ns, config.overheads.step_factor.value,
                                                             config.overheads.step.ns)) / 1e3);
  out += fmt::format("  step times: {}\n", source.summary);
  out += "  terms: compute = FLOPs / (peak x e_c), memory = bytes / (bandwidth x e_m); the larger, times the\n"
         "  measured shape correction (grid), never below the class's per-kernel floor, plus launch overhead\n"
         "  outside CUDA graphs (docs/cost-model.md)\n";
  out += "\n  where each operator class's numbers come from:\n";
  for (const std::string& line : model.sources()) out += "    " + line + "\n";
  std::cout << out;
  return 0;
}

}  // namespace kvplan::cli
