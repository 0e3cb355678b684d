#include "report_format.h"

#include <cmath>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "kvplan/core/error.h"

namespace kvplan::cli {

namespace {
constexpr double kGiB = 1073741824.0;

nlohmann::json bytes_number(double v) {
  if (std::floor(v) == v) return static_cast<int64_t>(v);
  return v;
}

std::string bytes_text(double v) {
  if (std::floor(v) == v) return with_commas(static_cast<int64_t>(v));
  return fmt::format("{:.2f}", v);
}
}  // namespace

std::string with_commas(int64_t v) {
  std::string digits = std::to_string(v < 0 ? -v : v);
  std::string out;
  for (size_t i = 0; i < digits.size(); ++i) {
    if (i > 0 && (digits.size() - i) % 3 == 0) out += ',';
    out += digits[i];
  }
  return v < 0 ? "-" + out : out;
}

std::string gib_text(int64_t bytes) { return fmt::format("{:.2f} GiB", static_cast<double>(bytes) / kGiB); }

std::string parallel_text(const Parallelism& p) {
  std::string out = fmt::format("tp={}, pp={}", p.tensor_parallel, p.pipeline_parallel);
  if (p.data_parallel > 1) out += fmt::format(", dp={}", p.data_parallel);
  if (p.expert_parallel) out += fmt::format(", ep={}", p.expert_parallel_size());
  return out;
}

MemoryAnswer answer_memory(const Scenario& s) {
  MemoryPlan plan = plan_memory(s.model, s.gpu, s.scheme, s.parallel, s.serving);
  // The cache as the engine stores it (SGLang's 1-token pages, vLLM < 0.7.1's per-head MLA cache).
  KvLayout layout = build_kv_layout(s.model, plan.kv_scheme, s.parallel, plan.pipeline_stage);
  MemoryAnswer a{s, std::move(plan), std::move(layout), count_parameters(s.model),
                 kv_bytes_per_token(s.model, s.scheme), std::nullopt};
  if (!s.lengths.empty()) {
    a.fit = fit_distribution(a.plan, a.layout, parse_length_distribution(s.lengths, "--lengths"));
  }
  return a;
}

std::string format_memory_text(const MemoryAnswer& a) {
  const Scenario& s = a.scenario;
  const MemoryPlan& p = a.plan;
  std::string out;
  // What the answer must not be trusted for comes first.
  for (const std::string& w : p.warnings) out += fmt::format("WARNING: {}\n", w);
  if (!p.warnings.empty()) out += "\n";
  out += fmt::format("{} on {} ({}), {}\n", s.model.name, s.gpu.name, parallel_text(s.parallel), p.engine_label);
  out += fmt::format("  model: {} parameters ({} active per token){}; weights {} as {}\n",
                     with_commas(a.params.total()), with_commas(a.params.active()),
                     a.params.vision > 0 ? fmt::format(", of which the {} vision encoder {}",
                                                       vision_kind_name(s.model.vision.kind),
                                                       with_commas(a.params.vision))
                                         : std::string(),
                     gib_text(weight_bytes_total(s.model, s.serving.weights)), s.serving.weights.describe());
  // What the user said about this GPU's memory, where it differs from the preset.
  std::vector<std::string> given;
  if (s.gpu.usable_memory_source == kGpuTotalMemoryGiven) {
    given.push_back(fmt::format("total memory {:.2f} GiB ({})", p.gpu_total_bytes / kGiB, kGpuTotalMemoryGiven));
  }
  if (s.serving.memory_in_use_bytes > 0) {
    given.push_back(fmt::format("{:.2f} GiB already in use by other processes (given with --gpu-memory-in-use)",
                                s.serving.memory_in_use_bytes / kGiB));
  }
  if (!given.empty()) out += fmt::format("  GPU: {}\n", fmt::join(given, "; "));
  out += fmt::format("  KV scheme: {}\n", p.kv_scheme.describe());
  out += fmt::format("  KV bytes per token: {} B for the whole model (one copy); {} B on each GPU\n",
                     bytes_text(a.kv_bytes_per_token), bytes_text(a.layout.bytes_per_token()));
  for (const KvLayerGroup& g : a.layout.groups()) {
    if (holds_kv_per_token(g.kind)) {
      out += fmt::format("    {:<24} {:>3} layers x {} B/token{}\n", g.name, g.num_layers, bytes_text(g.bytes_per_token),
                         g.shared_layers > 0 ? fmt::format(" (+{} layers sharing KV)", g.shared_layers) : "");
    } else {
      out += fmt::format("    {:<24} {:>3} layers x {} B/request of state\n", g.name, g.num_layers,
                         with_commas(g.state_bytes_per_request));
    }
  }
  out += "\n  GPU memory (one GPU)                        GiB  how\n";
  out += fmt::format("    total the driver reports         {:>10.2f}  {}\n", p.gpu_total_bytes / kGiB,
                     s.gpu.usable_memory_source);
  out += fmt::format("    engine budget                    {:>10.2f}\n", p.engine_budget_bytes / kGiB);
  for (const MemoryTerm& t : p.terms) {
    out += fmt::format("    {} {:<30} {:>10.2f}  {}\n", t.subtracted ? "-" : " ",
                       t.subtracted ? t.label : "(" + t.label + ", not subtracted)", t.bytes / kGiB, t.how);
  }
  out += fmt::format("    = KV cache budget                {:>10.2f}\n\n", p.kv_budget_bytes / kGiB);
  if (s.serving.engine == Engine::kStatic) {
    out += fmt::format("  static batch slots of {} tokens: {}\n", with_commas(p.max_model_len),
                       with_commas(p.requests_at_max_len));
  } else {
    out += fmt::format("  KV cache: {} blocks x {} tokens = {} tokens ({} per block)\n", with_commas(p.num_blocks),
                       p.tokens_per_block, with_commas(p.kv_cache_tokens), p.block_bytes / 1048576.0);
    out += fmt::format("  engine's maximum concurrency for {} tokens per request: {:.2f}x\n",
                       with_commas(p.max_model_len), p.max_concurrency);
    out += fmt::format("  requests of {} tokens that fit (windows, eviction and state applied): {}\n",
                       with_commas(p.max_model_len), with_commas(p.requests_at_max_len));
  }
  if (a.fit) {
    const DistributionFit& f = *a.fit;
    out += fmt::format("  lengths {}: mean {:.0f} tokens, p99 {} tokens\n", f.distribution, f.mean_tokens,
                       with_commas(f.p99_tokens));
    out += fmt::format("    concurrent requests that fit: {} at the mean, {} if all were p99\n",
                       with_commas(f.requests_at_mean), with_commas(f.requests_at_p99));
  }
  if (!p.fits) {
    for (const std::string& why : p.problems) out += fmt::format("  DOES NOT FIT: {}\n", why);
  }
  if (p.data_parallel > 1) {
    out += fmt::format("  whole deployment ({} data-parallel ranks): {} KV tokens, {} requests of {} tokens\n",
                       p.data_parallel, with_commas(p.total_kv_cache_tokens()),
                       with_commas(p.total_requests_at_max_len()), with_commas(p.max_model_len));
  }
  for (const std::string& n : p.notes) out += fmt::format("  note: {}\n", n);
  out += fmt::format("  sources: GPU figures from {}; model config from {}\n", s.gpu.source,
                     s.model.source.empty() ? "the given file" : s.model.source);
  return out;
}

nlohmann::json memory_json(const MemoryAnswer& a) {
  const Scenario& s = a.scenario;
  const MemoryPlan& p = a.plan;
  nlohmann::json j;
  j["model"] = s.model.id;
  j["gpu"] = s.gpu.id;
  j["engine"] = p.engine_label;
  j["warnings"] = p.warnings;
  j["tensor_parallel_size"] = s.parallel.tensor_parallel;
  j["pipeline_parallel_size"] = s.parallel.pipeline_parallel;
  j["data_parallel_size"] = s.parallel.data_parallel;
  j["expert_parallel_size"] = s.parallel.expert_parallel_size();
  j["gpus"] = s.parallel.gpus();
  j["kv_scheme"] = p.kv_scheme.describe();
  j["weights_format"] = s.serving.weights.describe();
  j["quantization"] = {{"method", std::string(quant_method_name(s.serving.weights.quant.method))},
                       {"description", s.serving.weights.quant.description},
                       {"origin", s.serving.weights.quant.origin}};
  j["vision_parameters"] = a.params.vision;
  j["kv_bytes_per_token"] = bytes_number(a.kv_bytes_per_token);
  j["kv_bytes_per_token_per_gpu"] = bytes_number(a.layout.bytes_per_token());
  j["num_parameters"] = a.params.total();
  j["num_active_parameters"] = a.params.active();
  j["weights_bytes"] = weight_bytes_total(s.model, s.serving.weights);
  j["weights_bytes_per_gpu"] = p.term("weights");
  j["gpu_total_bytes"] = p.gpu_total_bytes;
  j["gpu_memory_in_use_bytes"] = s.serving.memory_in_use_bytes;
  j["engine_budget_bytes"] = p.engine_budget_bytes;
  j["kv_budget_bytes"] = p.kv_budget_bytes;
  j["block_bytes"] = p.block_bytes;
  j["tokens_per_block"] = p.tokens_per_block;
  j["num_blocks"] = p.num_blocks;
  j["kv_cache_tokens"] = p.kv_cache_tokens;
  j["max_model_len"] = p.max_model_len;
  j["max_concurrency"] = p.max_concurrency;
  j["requests_at_max_len"] = p.requests_at_max_len;
  j["total_kv_cache_tokens"] = p.total_kv_cache_tokens();
  j["total_requests_at_max_len"] = p.total_requests_at_max_len();
  j["fits"] = p.fits;
  j["terms"] = nlohmann::json::array();
  for (const MemoryTerm& t : p.terms) {
    j["terms"].push_back({{"key", t.key}, {"label", t.label}, {"bytes", t.bytes}, {"subtracted", t.subtracted}, {"how", t.how}});
  }
  j["layer_groups"] = nlohmann::json::array();
  for (const KvLayerGroup& g : a.layout.groups()) {
    j["layer_groups"].push_back({{"name", g.name}, {"layers", g.num_layers}, {"shared_layers", g.shared_layers},
                                 {"bytes_per_token_per_layer", bytes_number(g.bytes_per_token)},
                                 {"state_bytes_per_request_per_layer", g.state_bytes_per_request}});
  }
  if (a.fit) {
    j["distribution"] = {{"lengths", a.fit->distribution}, {"mean_tokens", a.fit->mean_tokens},
                         {"p99_tokens", a.fit->p99_tokens}, {"requests_at_mean", a.fit->requests_at_mean},
                         {"requests_at_p99", a.fit->requests_at_p99}};
  }
  j["problems"] = p.problems;
  j["notes"] = p.notes;
  j["sources"] = {{"gpu", s.gpu.source}, {"gpu_total", s.gpu.usable_memory_source}, {"model", s.model.source}};
  return j;
}

}  // namespace kvplan::cli
