// plan/src/memory.cpp — the memory answer, its comparisons and the vLLM log check, as data, JSON
// and text (what `kvplan memory` prints).
#include "kvplan/plan/memory.h"

#include <cmath>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "kvplan/core/error.h"
#include "kvplan/core/vllm_log.h"
#include "kvplan/plan/text.h"

namespace kvplan::plan {

namespace {

constexpr double kGiB = 1073741824.0;

// A byte figure: an integer when whole (most are), else a float.
void write_bytes_number(DocumentWriter& w, double v) {
  if (std::floor(v) == v) {
    w.integer(static_cast<int64_t>(v));
  } else {
    w.number(v);
  }
}

std::string bytes_text(double v) {
  if (std::floor(v) == v) return with_commas(static_cast<int64_t>(v));
  return fmt::format("{:.2f}", v);
}

// The answer's figures for a scenario; the two answer_memory() overloads differ only in whether
// the scenario is copied into the answer or, resolved for this answer alone, moved (a model and a
// GPU with their strings and layer lists).
struct Figures {
  MemoryPlan plan;
  KvLayout layout;
  ParamCount params;
  double kv_bytes_per_token = 0;
};

Figures figures(const ResolvedScenario& s) {
  MemoryPlan plan = plan_memory(s.model, s.gpu, s.scheme, s.parallel, s.serving);
  // The cache as the engine stores it (SGLang's 1-token pages, vLLM < 0.7.1's per-head MLA cache).
  KvLayout layout = build_kv_layout(s.model, plan.kv_scheme, s.parallel, plan.pipeline_stage);
  return {std::move(plan), std::move(layout), count_parameters(s.model), kv_bytes_per_token(s.model, s.scheme)};
}

void add_fit(MemoryAnswer& a) {
  if (a.scenario.fit_lengths) a.fit = fit_distribution(a.plan, a.layout, *a.scenario.fit_lengths);
}

}  // namespace

MemoryAnswer answer_memory(const Scenario& scenario) {
  ResolvedScenario s = resolve(scenario);
  Figures f = figures(s);
  MemoryAnswer a{std::move(s), std::move(f.plan), std::move(f.layout), f.params, f.kv_bytes_per_token, std::nullopt};
  add_fit(a);
  return a;
}

MemoryAnswer answer_memory(const ResolvedScenario& s) {
  Figures f = figures(s);
  MemoryAnswer a{s, std::move(f.plan), std::move(f.layout), f.params, f.kv_bytes_per_token, std::nullopt};
  add_fit(a);
  return a;
}

std::string memory_text(const MemoryAnswer& a) {
  const ResolvedScenario& s = a.scenario;
  const MemoryPlan& p = a.plan;
  std::string out;
  // What the answer must not be trusted for comes first.
  for (const std::string& w : p.warnings) out += fmt::format("WARNING: {}\n", w);
  if (!p.warnings.empty()) out += "\n";
  out += fmt::format("{} on {} ({}), {}\n", s.model.name, s.gpu.name, parallel_text(s.parallel), p.engine_label);
  out += fmt::format("  model: {} parameters ({} active per token){}; weights {} as {}\n",
                     with_commas(a.params.total()), with_commas(a.params.active()),
                     a.params.vision == 0 ? std::string()
                     : s.model.audio.kind == VisionKind::kNone
                         ? fmt::format(", of which the {} vision encoder {}", vision_kind_name(s.model.vision.kind),
                                       with_commas(a.params.vision))
                         : fmt::format(", of which the encoders ({}, {}) {}", vision_kind_name(s.model.vision.kind),
                                       vision_kind_name(s.model.audio.kind), with_commas(a.params.vision)),
                     gib_text(weight_bytes_total(s.model, s.serving.weights, a.params)), s.serving.weights.describe());
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
  out += fmt::format("  KV scheme: {}{}\n", p.kv_scheme.describe(),
                     s.model.count_layers(LayerKind::kCompressedAttention) > 0
                         ? " (DeepSeek-V4's fp8 layout: a scale byte per 64 NoPE dims; --fp8-scales does not apply)"
                         : "");
  out += fmt::format("  KV bytes per token: {} B for the whole model (one copy); {} B on each GPU\n",
                     bytes_text(a.kv_bytes_per_token), bytes_text(a.layout.bytes_per_token()));
  const bool compressed = s.model.count_layers(LayerKind::kCompressedAttention) > 0;
  if (compressed) {
    // DeepSeek-V4: the windows and compressor states are bounded per request; only the compressed
    // caches grow with the length.
    double growing = 0;
    for (const KvLayerGroup& g : a.layout.groups()) growing += g.compress_ratio > 1 ? g.num_layers * g.bytes_per_token : 0;
    out += fmt::format("    (windows and compressor states at their per-token rate; beyond them a request grows by "
                       "{} B per token on each GPU, its compressed caches)\n",
                       bytes_text(growing));
  }
  for (const KvLayerGroup& g : a.layout.groups()) {
    if (compressed && g.compress_ratio > 1) {
      out += fmt::format("    {:<24} {:>3} layers x {} B per {} tokens\n", g.name, g.num_layers,
                         with_commas(g.entry_bytes()), g.compress_ratio);
    } else if (compressed) {
      out += fmt::format("    {:<24} {:>3} layers x {} B/token, the last {} tokens\n", g.name, g.num_layers,
                         with_commas(g.entry_bytes()), g.window_tokens);
    } else if (holds_kv_per_token(g.kind)) {
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
    // A block's bytes span every KV layer on this GPU (MemoryPlan::block_bytes), so say so with the unit.
    out += fmt::format("  KV cache: {} blocks x {} tokens = {} tokens ({} B = {:.2f} MiB per block, all KV layers)\n",
                       with_commas(p.num_blocks), p.tokens_per_block, with_commas(p.kv_cache_tokens),
                       with_commas(p.block_bytes), p.block_bytes / 1048576.0);
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
    // The KV answer is not the binding limit when the engine runs fewer sequences at once.
    if (p.max_num_seqs > 0 && f.requests_at_mean > p.max_num_seqs) {
      out += fmt::format("    but max_num_seqs={} binds first: the engine runs at most {} at once (latency targets may "
                         "bind lower still: kvplan capacity)\n",
                         p.max_num_seqs, with_commas(p.max_num_seqs));
    }
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

void write_memory(const MemoryAnswer& a, DocumentWriter& w) {
  const ResolvedScenario& s = a.scenario;
  const MemoryPlan& p = a.plan;
  w.begin_object();
  write_field(w, "model", s.model.id);
  write_field(w, "gpu", s.gpu.id);
  write_field(w, "engine", p.engine_label);
  write_field(w, "warnings", p.warnings);
  write_field(w, "tensor_parallel_size", s.parallel.tensor_parallel);
  write_field(w, "pipeline_parallel_size", s.parallel.pipeline_parallel);
  write_field(w, "data_parallel_size", s.parallel.data_parallel);
  write_field(w, "expert_parallel_size", s.parallel.expert_parallel_size());
  write_field(w, "gpus", s.parallel.gpus());
  write_field(w, "kv_scheme", p.kv_scheme.describe());
  write_field(w, "weights_format", s.serving.weights.describe());
  w.key("quantization");
  w.begin_object();
  write_field(w, "method", quant_method_name(s.serving.weights.quant.method));
  write_field(w, "description", s.serving.weights.quant.description);
  write_field(w, "origin", s.serving.weights.quant.origin);
  w.end();
  write_field(w, "vision_parameters", a.params.vision);
  w.key("kv_bytes_per_token");
  write_bytes_number(w, a.kv_bytes_per_token);
  w.key("kv_bytes_per_token_per_gpu");
  write_bytes_number(w, a.layout.bytes_per_token());
  write_field(w, "num_parameters", a.params.total());
  write_field(w, "num_active_parameters", a.params.active());
  write_field(w, "weights_bytes", weight_bytes_total(s.model, s.serving.weights, a.params));
  write_field(w, "weights_bytes_per_gpu", p.term("weights"));
  write_field(w, "gpu_total_bytes", p.gpu_total_bytes);
  write_field(w, "gpu_memory_in_use_bytes", s.serving.memory_in_use_bytes);
  write_field(w, "engine_budget_bytes", p.engine_budget_bytes);
  write_field(w, "kv_budget_bytes", p.kv_budget_bytes);
  write_field(w, "block_bytes", p.block_bytes);
  write_field(w, "tokens_per_block", p.tokens_per_block);
  write_field(w, "num_blocks", p.num_blocks);
  write_field(w, "kv_cache_tokens", p.kv_cache_tokens);
  write_field(w, "max_model_len", p.max_model_len);
  write_field(w, "max_concurrency", p.max_concurrency);
  write_field(w, "requests_at_max_len", p.requests_at_max_len);
  write_field(w, "total_kv_cache_tokens", p.total_kv_cache_tokens());
  write_field(w, "total_requests_at_max_len", p.total_requests_at_max_len());
  write_field(w, "fits", p.fits);
  w.key("terms");
  w.begin_array();
  for (const MemoryTerm& t : p.terms) {
    w.begin_object();
    write_field(w, "key", t.key);
    write_field(w, "label", t.label);
    write_field(w, "bytes", t.bytes);
    write_field(w, "subtracted", t.subtracted);
    write_field(w, "how", t.how);
    w.end();
  }
  w.end();
  w.key("layer_groups");
  w.begin_array();
  for (const KvLayerGroup& g : a.layout.groups()) {
    w.begin_object();
    write_field(w, "name", g.name);
    write_field(w, "layers", g.num_layers);
    write_field(w, "shared_layers", g.shared_layers);
    w.key("bytes_per_token_per_layer");
    write_bytes_number(w, g.bytes_per_token);
    write_field(w, "state_bytes_per_request_per_layer", g.state_bytes_per_request);
    w.end();
  }
  w.end();
  if (a.fit) {
    w.key("distribution");
    w.begin_object();
    write_field(w, "lengths", a.fit->distribution);
    write_field(w, "mean_tokens", a.fit->mean_tokens);
    write_field(w, "p99_tokens", a.fit->p99_tokens);
    write_field(w, "requests_at_mean", a.fit->requests_at_mean);
    write_field(w, "requests_at_p99", a.fit->requests_at_p99);
    w.end();
  }
  // The price of the deployment's GPUs per hour (null when neither given nor in the preset).
  const bool priced = s.usd_per_gpu_hour > 0;
  w.key("cost");
  w.begin_object();
  if (priced) {
    write_field(w, "usd_per_gpu_hour", s.usd_per_gpu_hour);
    write_field(w, "usd_per_hour", s.usd_per_gpu_hour * s.parallel.gpus());
  } else {
    write_field(w, "usd_per_gpu_hour", nullptr);
    write_field(w, "usd_per_hour", nullptr);
  }
  write_field(w, "source", s.price_source);
  w.end();
  write_field(w, "problems", p.problems);
  write_field(w, "notes", p.notes);
  w.key("sources");
  w.begin_object();
  write_field(w, "gpu", s.gpu.source);
  write_field(w, "gpu_total", s.gpu.usable_memory_source);
  write_field(w, "model", s.model.source);
  w.end();
  w.end();
}

nlohmann::json memory_json(const MemoryAnswer& a) {
  JsonDocumentWriter w;
  write_memory(a, w);
  return w.take();
}

MemoryComparison compare_memory(const Scenario& base, const std::string& name, const std::vector<std::string>& values) {
  const Setting* row = find_setting(name);
  if (row == nullptr || row->command != Command::kMemory) {
    throw ConfigError(fmt::format("--compare={}=...: '{}' is not a setting of `kvplan memory` (kvplan memory --help "
                                  "lists them)",
                                  name, name));
  }
  MemoryComparison c;
  c.setting = row->flag;
  c.values = values;
  for (const std::string& v : values) {
    Scenario s = base;
    row->set(s, v);
    c.answers.push_back(answer_memory(s));
  }
  return c;
}

nlohmann::json comparison_json(const MemoryComparison& c) {
  nlohmann::json out = nlohmann::json::array();
  for (size_t i = 0; i < c.answers.size(); ++i) {
    nlohmann::json j = memory_json(c.answers[i]);
    j["compare"] = {{"key", c.setting}, {"value", c.values[i]}};
    out.push_back(j);
  }
  return out;
}

std::string comparison_text(const MemoryComparison& c) {
  const MemoryAnswer& first = c.answers.front();
  const std::string& key = c.setting;
  std::string out = fmt::format("{} on {} (tp={}), {} — comparing {}\n\n", first.scenario.model.name,
                                first.scenario.gpu.name, first.scenario.parallel.tensor_parallel,
                                first.plan.engine_label, key);
  out += fmt::format("{:<16} {:>12} {:>12} {:>12} {:>14} {:>12} {:>10}", key, "KV B/token", "weights GiB", "KV GiB",
                     "KV tokens", "max conc.", "requests");
  const bool fit = first.fit.has_value();
  if (fit) out += fmt::format(" {:>10} {:>10}", "at mean", "at p99");
  out += "\n";
  for (size_t i = 0; i < c.answers.size(); ++i) {
    const MemoryAnswer& a = c.answers[i];
    out += fmt::format("{:<16} {:>12.1f} {:>12.2f} {:>12.2f} {:>14} {:>11.2f}x {:>10}", c.values[i],
                       a.kv_bytes_per_token, a.plan.term("weights") / kGiB, a.plan.kv_budget_bytes / kGiB,
                       with_commas(a.plan.kv_cache_tokens), a.plan.max_concurrency,
                       with_commas(a.plan.requests_at_max_len));
    if (fit) out += fmt::format(" {:>10} {:>10}", with_commas(a.fit->requests_at_mean), with_commas(a.fit->requests_at_p99));
    if (!a.plan.fits) out += std::string("  does not fit") + (a.plan.problems.empty() ? "" : ": " + a.plan.problems.front());
    out += "\n";
  }
  out += fmt::format("\n(max_model_len {} tokens; 'requests' = requests of that length that fit)\n",
                     with_commas(first.plan.max_model_len));
  return out;
}

LogCheck check_vllm_log(const std::string& path, const LogOverrides& overrides) {
  LogCheck c;
  c.log_path = path;
  c.log = load_vllm_log(path);
  c.scenario = scenario_from_vllm_log(c.log, path, overrides);
  const LogScenario& s = c.scenario;
  c.plan = plan_memory(s.model, s.gpu, s.scheme, s.parallel, s.serving);
  c.rows = compare_to_log(c.log, c.plan);
  return c;
}

nlohmann::json log_check_json(const LogCheck& c) {
  nlohmann::json j;
  j["log"] = c.log_path;
  j["model"] = c.scenario.model.id;
  j["gpu"] = c.scenario.gpu.id;
  j["engine"] = c.plan.engine_label;
  j["assumptions"] = c.scenario.assumptions;
  j["rows"] = nlohmann::json::array();
  for (const LogComparisonRow& row : c.rows) {
    nlohmann::json e = {{"term", row.term}, {"predicted", row.predicted}, {"unit", row.unit}};
    e["printed"] = row.printed ? nlohmann::json(*row.printed) : nlohmann::json(nullptr);
    j["rows"].push_back(e);
  }
  return j;
}

std::string log_check_text(const LogCheck& c) {
  const LogScenario& s = c.scenario;
  std::string out = fmt::format(
      "{}\n  model {} ({}), GPU {} x{}, {}, gpu_memory_utilization {:.2f}, max_model_len {}\n\n", c.log_path,
      s.model.id, c.log.model, s.gpu.id, s.parallel.tensor_parallel, c.plan.engine_label,
      s.serving.gpu_memory_utilization, with_commas(c.plan.max_model_len));
  out += fmt::format("  {:<22} {:>14} {:>14} {:>9}\n", "term", "printed", "kvplan", "error");
  for (const LogComparisonRow& row : c.rows) {
    const std::string printed = row.printed ? fmt::format("{:.2f}", *row.printed) : "-";
    std::string error;
    if (row.printed && *row.printed != 0) error = fmt::format("{:+.1f}%", 100.0 * (row.predicted - *row.printed) / *row.printed);
    out += fmt::format("  {:<22} {:>14} {:>14.2f} {:>9}  {}\n", row.term, printed, row.predicted, error, row.unit);
  }
  for (const std::string& a : s.assumptions) out += "  assumed: " + a + "\n";
  return out;
}

}  // namespace kvplan::plan
