// Published serving runs -> kvplan flags. Every mapping choice is written next to the code and
// repeated in the row's notes, so the report says what was approximated.
#include "serving_cases.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <fstream>
#include <map>
#include <regex>
#include <set>
#include <sstream>

#include <fmt/format.h>

#include "kvplan/core/error.h"
#include "kvplan/core/gpu_spec.h"
#include "kvplan/core/model_config.h"
#include "kvplan/core/parallelism.h"
#include "kvplan/core/param_count.h"
#include "kvplan/core/presets.h"
#include "serving_csv.h"
#include "serving_split.h"

namespace kvplan::bench {

namespace {

// The leading integer of a text ("2048 (startup log: ...)" -> 2048); -1 when there is none.
int64_t leading_int(const std::string& text) {
  size_t i = 0;
  while (i < text.size() && std::isspace(static_cast<unsigned char>(text[i]))) ++i;
  if (i >= text.size() || !std::isdigit(static_cast<unsigned char>(text[i]))) return -1;
  int64_t v = 0;
  while (i < text.size() && std::isdigit(static_cast<unsigned char>(text[i]))) v = v * 10 + (text[i++] - '0');
  return v;
}

double to_double(const std::string& text) {
  try {
    return text.empty() ? 0.0 : std::stod(text);
  } catch (const std::exception&) {
    return 0.0;
  }
}

// "MAJOR.MINOR[.PATCH]" at the start of a version text ("0.7.3.dev138+g21f6 (image ...)", "v0.11.0"),
// or "" when the text does not start with one.
std::string version_prefix(const std::string& text) {
  std::string s = text;
  if (!s.empty() && (s[0] == 'v' || s[0] == 'V')) s.erase(0, 1);
  size_t i = 0;
  int dots = 0;
  while (i < s.size() && (std::isdigit(static_cast<unsigned char>(s[i])) || (s[i] == '.' && dots < 2))) {
    if (s[i] == '.') ++dots;
    ++i;
  }
  std::string v = s.substr(0, i);
  while (!v.empty() && v.back() == '.') v.pop_back();
  return v.find('.') == std::string::npos ? "" : v;
}

// The number after `key` in `text` ("--gpu_memory_utilization=0.98", "max_model_len 16384"), or "".
std::string number_after(const std::string& text, const std::string& key) {
  size_t at = text.find(key);
  if (at == std::string::npos) return "";
  size_t i = at + key.size();
  while (i < text.size() && (text[i] == '=' || text[i] == ' ')) ++i;
  size_t j = i;
  while (j < text.size() && (std::isdigit(static_cast<unsigned char>(text[j])) || text[j] == '.')) ++j;
  return text.substr(i, j - i);
}

void add_note(ServingCase& c, const std::string& note) {
  if (!c.notes.empty()) c.notes.append("; ");
  c.notes.append(note);
}

const std::map<std::string, std::string>& model_presets() {
  static const std::map<std::string, std::string> m = {
      {"meta-llama/Llama-3.1-8B-Instruct", "llama-3.1-8b"},
      // NVIDIA's ModelOpt FP8 export of the same model: per-tensor FP8 W8A8, i.e. the bf16 preset with
      // --quantization fp8 (the row's precision fp8 / gemm fp8 says so).
      {"nvidia/Llama-3.1-8B-Instruct-FP8", "llama-3.1-8b"},
      {"meta-llama/Llama-3.1-70B", "llama-3.1-70b"},
      {"meta-llama/Llama-3.1-70B-Instruct", "llama-3.1-70b"},
      {"Qwen/Qwen3-32B", "qwen3-32b"},
      {"Qwen/Qwen3-235B-A22B-FP8", "qwen3-235b-a22b-fp8"},
      {"openai/gpt-oss-120b", "gpt-oss-120b"},
      {"deepseek-ai/DeepSeek-R1", "deepseek-r1"},
      {"deepseek-ai/DeepSeek-V3", "deepseek-v3"},
      {"Qwen/Qwen2-7B-Instruct", "qwen2-7b"},
      {"meta-llama/Llama-3.3-70B-Instruct", "llama-3.3-70b"},
      {"meta-llama/Llama-2-7b-chat-hf", "llama-2-7b"},  // the chat fine-tune: the same architecture
  };
  return m;
}

// The families added in issue 24 (run on both GPUs' files since issue 26; the name is history).
const std::map<std::string, std::string>& new_family_presets() {
  static const std::map<std::string, std::string> m = {
      {"MiniMaxAI/MiniMax-M2.5", "minimax-m2.5"},
      {"moonshotai/Kimi-K2.5", "kimi-k2.5"},
      {"Qwen/Qwen3.5-397B-A17B", "qwen3.5-397b-a17b"},
      {"zhipuai/GLM-5", "glm-5-fp8"},  // rows: fp8 gemm, fp8_block MoE: the FP8 release
      // NVIDIA's per-tensor FP8 checkpoint of Llama-3.1-8B (ModelOpt): the bf16 preset with
      // --quantization fp8 (the same weight bytes and GEMM format; noted per row).
      {"nvidia/Llama-3.1-8B-Instruct-FP8", "llama-3.1-8b"},
  };
  return m;
}

// Presets whose checkpoint carries its own quantization_config (fp8 block, MXFP4): kvplan uses it.
bool preset_is_quantized(const std::string& preset) {
  return preset == "qwen3-235b-a22b-fp8" || preset == "gpt-oss-120b" || preset == "deepseek-r1" || preset == "deepseek-v3" ||
         preset == "minimax-m2.5" || preset == "kimi-k2.5" || preset == "glm-5-fp8";
}

void bench_flags(ServingCase& c, int64_t num_prompts) {
  c.sim_flags["client"] = "bench";
  c.sim_flags["max-concurrency"] = std::to_string(c.concurrency);
  c.sim_flags["num-prompts"] = std::to_string(num_prompts);
  c.sim_flags["random-input-len"] = std::to_string(c.isl);
  c.sim_flags["random-output-len"] = std::to_string(c.osl);
  c.sim_flags["seed"] = std::to_string(1);  // (a literal trips GCC 12 -Wrestrict)
  if (c.replicas > 1 && c.deployment != "disagg") {
    c.sim_flags["replicas"] = std::to_string(c.replicas);
    c.sim_flags["router"] = "least-outstanding";
  }
}

}  // namespace

int64_t steady_state_prompts(int64_t concurrency) { return 2 * concurrency + std::max<int64_t>(2 * concurrency, 32); }

std::string ServingCase::command() const {
  std::string out = "kvplan simulate";
  for (const auto& [k, v] : memory_flags) out += fmt::format(" --{} {}", k, v);
  for (const auto& [k, v] : sim_flags) out += fmt::format(" --{} {}", k, v);
  return out;
}

namespace {

// One pool's parallelism as aiconfigurator's columns give it (prefix "" for agg rows, "prefill_" or
// "decode_" for the pools of a disaggregated row). Its GPUs are tp x attention_dp = moe_tp x moe_ep
// (e.g. DeepSeek-R1 on 8 H200s with attention DP: tp 1, attention_dp 8, moe_tp 1, moe_ep 8); a 0 or
// empty size is one.
struct PoolColumns {
  int64_t tp = 1, pp = 1, attention_dp = 1, moe_tp = 1, moe_ep = 1;
  int64_t workers = -1;  // engine instances of the pool (disagg; -1: not recorded)
  bool moe_recorded = true;  // false: the MoE columns are 0 (vLLM disagg rows: not recorded)
  bool operator==(const PoolColumns& o) const {
    return tp == o.tp && pp == o.pp && attention_dp == o.attention_dp && moe_tp == o.moe_tp && moe_ep == o.moe_ep;
  }
  std::string describe() const {
    return fmt::format("tp {} pp {} attention-dp {} moe tp {} ep {}", tp, pp, attention_dp, moe_tp, moe_ep);
  }
};

PoolColumns pool_columns(const Record& r, const std::string& prefix, const std::string& path) {
  PoolColumns p;
  p.tp = std::max<int64_t>(1, leading_int(field(r, prefix + "tp_size", path)));
  p.pp = std::max<int64_t>(1, leading_int(field(r, prefix + "pp_size", path)));
  p.attention_dp = std::max<int64_t>(1, leading_int(field(r, prefix + "attention_dp_size", path)));
  p.moe_recorded = field(r, prefix + "moe_tp_size", path) != "0" && field(r, prefix + "moe_ep_size", path) != "0";
  p.moe_tp = std::max<int64_t>(1, leading_int(field(r, prefix + "moe_tp_size", path)));
  p.moe_ep = std::max<int64_t>(1, leading_int(field(r, prefix + "moe_ep_size", path)));
  if (!prefix.empty()) p.workers = leading_int(field(r, prefix + "num_workers", path));
  return p;
}

// The pool as kvplan flags (tensor/pipeline/data parallel sizes, expert parallelism), or why it has
// none. Attention DP D: kvplan's --data-parallel-size D, one engine instance per DP rank, experts
// over all tp x D GPUs (--enable-expert-parallel). MoE TP x EP hybrids (moe_tp > 1 and moe_ep > 1)
// have no kvplan form: its expert parallelism spreads whole experts over all GPUs.
std::string pool_flags(const PoolColumns& p, bool moe_model, plan::SettingValues& flags) {
  flags["tensor-parallel-size"] = std::to_string(p.tp);
  if (p.pp > 1) flags["pipeline-parallel-size"] = std::to_string(p.pp);
  if (p.attention_dp > 1) flags["data-parallel-size"] = std::to_string(p.attention_dp);
  const int64_t gpus = p.tp * p.attention_dp;
  if (!moe_model) {
    if (p.attention_dp > 1) return fmt::format("attention DP {} on a dense model", p.attention_dp);
    return "";
  }
  if (!p.moe_recorded && p.attention_dp > 1) {
    return fmt::format("attention DP {} with the MoE split not recorded (moe tp/ep columns 0)", p.attention_dp);
  }
  if (p.moe_tp > 1 && p.moe_ep > 1) {
    // MoE TP x EP: experts over moe_ep groups, each split over moe_tp GPUs (parallelism.h's
    // expert_parallel_ranks), a split TensorRT-LLM and SGLang run and vLLM has no form for.
    const auto engine = flags.find("engine");
    if (engine != flags.end() && engine->second == "vllm") {
      return fmt::format("MoE split tp {} x ep {} (vLLM has no MoE TP x EP split)", p.moe_tp, p.moe_ep);
    }
    if (p.moe_tp * p.moe_ep != gpus) {
      return fmt::format("MoE split tp {} x ep {} on the {} GPUs of tp {} x attention DP {}", p.moe_tp, p.moe_ep, gpus,
                         p.tp, p.attention_dp);
    }
    // DeepSeek's "cfg181"/"cfg183" rows record tp (or attention DP) 64 = moe tp 8 x ep 8 on H200, whose
    // NVLink domain is 8 GPUs: the shape of the split columns the repair above multiplies out, but their
    // ids do not say how; nothing confirms a 64-GPU reading, so they stay refused.
    const auto gpu = flags.find("gpu");
    const int domain = gpu != flags.end() ? resolve_gpu(gpu->second).scale_up_domain_gpus : 8;
    if (gpus > domain) {
      return fmt::format("MoE split tp {} x ep {} over {} GPUs, beyond one {}-GPU NVLink domain (columns that look "
                         "multiplied, with no id to read them by)",
                         p.moe_tp, p.moe_ep, gpus, domain);
    }
    flags["enable-expert-parallel"] = "true";
    flags["expert-parallel-size"] = std::to_string(p.moe_ep);
    return "";
  }
  if (p.moe_ep > 1) {
    if (p.moe_ep != gpus) return fmt::format("MoE ep {} differs from the {} GPUs of tp {} x attention DP {}", p.moe_ep,
                                             gpus, p.tp, p.attention_dp);
    flags["enable-expert-parallel"] = "true";
  } else if (p.attention_dp > 1 && p.moe_tp != gpus) {
    // kvplan's DP without expert parallelism splits each expert over all tp x DP GPUs (parallelism.h)
    return fmt::format("attention DP {} with MoE tp {}, not the {} GPUs of tp {} x attention DP {}", p.attention_dp,
                       p.moe_tp, gpus, p.tp, p.attention_dp);
  }
  return "";
}

// A disaggregated row as kvplan's prefill and decode pools (simulation.h's ClusterConfig): P prefill
// and D decode engine instances (an attention-DP worker of DP size N is N instances), the KV moved
// between them over the link kvplan's default picks (sim/kv_transfer.h: NVLink when both pools fit
// one scale-up domain, else RDMA at the ConnectX-7 line rate). Sets why_not when the row cannot
// be run that way.
void disagg_flags(ServingCase& c, const PoolColumns& prefill, const PoolColumns& decode, bool moe);

bool is_moe_preset(const std::string& preset) {
  static const std::set<std::string> moe = {"qwen3-235b-a22b-fp8", "gpt-oss-120b", "deepseek-r1", "deepseek-v3", "minimax-m2.5",
                                            "kimi-k2.5",          "glm-5-fp8",    "qwen3.5-397b-a17b"};
  return moe.count(preset) > 0;
}

void disagg_flags(ServingCase& c, const PoolColumns& prefill, const PoolColumns& decode, bool moe) {
  if (prefill.workers <= 0 || decode.workers <= 0) {
    // The prefill pool's size sets how long prompts queue, so TTFT cannot be reproduced without it.
    c.why_not = "prefill/decode worker counts not recorded (prefill_num_workers, decode_num_workers empty)";
    c.excluded = true;
    return;
  }
  for (const PoolColumns* pool : {&prefill, &decode}) {
    if (pool->moe_tp > 1 && pool->moe_ep > 1) {
      // kvplan's --prefill-* flags have no expert-parallel size of their own (the prefill pool keeps
      // the decode pool's), so a pool with MoE TP x EP is not expressed.
      c.why_not = fmt::format("disagg: a pool with MoE split tp {} x ep {} (the --prefill-* flags have no "
                              "expert-parallel size)",
                              pool->moe_tp, pool->moe_ep);
      return;
    }
  }
  plan::SettingValues prefill_flags;
  std::string why = pool_flags(decode, moe, c.memory_flags);
  if (why.empty()) why = pool_flags(prefill, moe, prefill_flags);
  if (!why.empty()) {
    c.why_not = "disagg: " + why;
    return;
  }
  if (!(prefill == decode)) {
    // The prefill pool's own parallelism (kvplan's --prefill-* flags; sim ClusterConfig::prefill_parallel).
    c.sim_flags["prefill-tensor-parallel-size"] = std::to_string(prefill.tp);
    c.sim_flags["prefill-data-parallel-size"] = std::to_string(prefill.attention_dp);
    c.sim_flags["prefill-expert-parallel"] = prefill_flags.count("enable-expert-parallel") ? "true" : "false";
    if (prefill.pp != decode.pp) {
      c.why_not = fmt::format("disagg: prefill pp {} differs from decode pp {} (kvplan's pools share the pipeline split)",
                              prefill.pp, decode.pp);
      return;
    }
  }
  const int64_t prefill_instances = prefill.workers * prefill.attention_dp;
  const int64_t decode_instances = decode.workers * decode.attention_dp;
  c.sim_flags["prefill-replicas"] = std::to_string(prefill_instances);
  c.sim_flags["decode-replicas"] = std::to_string(decode_instances);
  c.sim_flags["router"] = "least-outstanding";
  c.replicas = decode_instances;
  add_note(c, fmt::format("disagg: {} prefill worker(s) of {} and {} decode worker(s) of {}; KV over kvplan's default "
                          "link; MTP not recorded in the row (run without)",
                          prefill.workers, prefill.describe(), decode.workers, decode.describe()));
}

// Some rows of the H200 dump (source_file=2026-04-06.csv) carry an aggregated deployment's split
// multiplied into its columns: id "..._tp8_ep8_..." with tp_size (or attention_dp_size) 64 = 8 x 8,
// moe_tp_size 8 and moe_ep_size 8, and batch_size divided by 8 when the 64 is the attention DP size.
// Where the same measurement is also recorded by another row, that row reads tp 8 (or attention DP
// 8), moe tp 1, moe ep 8 (24 of 24 such pairs). The id's tp N / ep M identifies the pattern; the
// repair reads the row that way. Returns the note, or "" when the row does not show the pattern: a
// real MoE tp x ep split, such as TensorRT-LLM's tp 4 = moe tp 2 x ep 2 on H100 with an id
// "..._tp4_epnone_...", is left as it is, and so are DeepSeek's "cfg181" rows, which look multiplied
// but whose id does not say their split.
std::string repair_multiplied_split(Record& r, const std::string& path) {
  if (field(r, "mode", path) != "agg") return "";
  static const std::regex kSplitInId(R"(_tp(\d+)_ep(\d+)(_|$))");
  std::smatch split;
  const std::string& id = field(r, "id", path);
  if (!std::regex_search(id, split, kSplitInId)) return "";
  const int64_t n = leading_int(split[1].str()), m = leading_int(split[2].str());
  const int64_t tp = std::max<int64_t>(1, leading_int(field(r, "tp_size", path)));
  const int64_t dp = std::max<int64_t>(1, leading_int(field(r, "attention_dp_size", path)));
  const int64_t moe_tp = leading_int(field(r, "moe_tp_size", path)), moe_ep = leading_int(field(r, "moe_ep_size", path));
  if (n <= 1 || m <= 1 || moe_tp != n || moe_ep != m || tp * dp != n * m) return "";
  const std::string was = fmt::format("tp {} attention-dp {} moe tp {} ep {} batch {}", tp, dp, moe_tp, moe_ep,
                                      field(r, "batch_size", path));
  if (dp > 1) {
    r["attention_dp_size"] = std::to_string(dp / m);
    r["batch_size"] = std::to_string(leading_int(field(r, "batch_size", path)) * m);
  } else {
    r["tp_size"] = std::to_string(tp / m);
  }
  r["moe_tp_size"] = "1";
  return fmt::format("split columns multiplied in the record ({}): read as its id says, tp {} / ep {} on {} GPUs", was,
                     n, m, n);
}

// A measurement the source records more than once (the H200 dump holds 179 such rows, the H100 one
// 49: the same run under two or three sources): the first row in file order is scored, the others
// are excluded and listed, so that one run counts once and cannot sit in both halves of the split.
void exclude_repeated_measurements(std::vector<ServingCase>& cases) {
  std::map<std::string, std::string> first;  // key -> id of the row scored
  for (ServingCase& c : cases) {
    // The sweep key names the run's model, engine, release, GPU and deployment columns and lengths.
    std::string key = fmt::format("{}|{}|{}|{}", c.sweep_key, c.concurrency, std::llround(c.measured_ttft_ms * 100),
                                  std::llround(c.measured_tpot_ms * 100));
    for (const auto& [flag, value] : c.memory_flags) key += "|" + flag + "=" + value;
    for (const auto& [flag, value] : c.sim_flags) key += "|" + flag + "=" + value;
    const auto [it, added] = first.emplace(key, c.id);
    if (added) continue;
    c.why_not = fmt::format("the same measurement as row {} (TTFT {:.2f} ms, TPOT {:.2f} ms, same run settings): "
                            "scored once",
                            it->second, c.measured_ttft_ms, c.measured_tpot_ms);
    c.excluded = true;
  }
}

// A vLLM run recorded with its experts split by tensor parallelism alone (moe tp = tp, ep 1) on a
// checkpoint whose block-scaled experts vLLM cannot split that way: each GPU's expert width is not a
// multiple of block_n, and vLLM stops at load ("The output_size of gate's and up's weight = 192 is
// not divisible by weight quantization block_n = 128"; fp8.py Fp8MoEMethod.create_weights). The fix
// vLLM's users apply, and the only way such a run starts, is --enable-expert-parallel: public reports
// for MiniMax-M2.5 on 8 x H200 and MiniMax-M2.7 on A100 with vLLM 0.19 say so. Such a row is read as
// expert parallelism over its tp GPUs; the note says why. Empty when the recorded split is one vLLM
// starts, or when expert parallelism would be refused as well.
std::string expert_parallel_only_split(const std::string& preset, PoolColumns& p) {
  if (p.attention_dp != 1 || p.moe_ep != 1 || p.tp <= 1 || p.moe_tp != p.tp) return "";
  const ModelConfig m = resolve_model(preset);
  const WeightFormat weights{DType::kBF16, m.quantization};
  const Parallelism tp_only{.tensor_parallel = static_cast<int>(p.tp)};
  Parallelism ep = tp_only;
  ep.expert_parallel = true;
  try {
    validate_split(m, tp_only, weights);
    return "";  // vLLM starts the split as recorded
  } catch (const ConfigError& refused) {
    try {
      validate_split(m, ep, weights);
    } catch (const ConfigError&) {
      return "";
    }
    const std::string was = p.describe();
    p.moe_tp = 1;
    p.moe_ep = p.tp;
    return fmt::format("recorded {}, which vLLM refuses to start ({}); read as {} (--enable-expert-parallel)", was,
                       refused.what(), p.describe());
  }
}

// A vLLM run recorded with more MoE GPUs than tp GPUs and no attention-DP size: tp t, moe tp m > t,
// ep 1 (the H200 set's Qwen3-235B-A22B-FP8 runs on vLLM 0.12: tp 1 with moe tp 2 or 4, tp 2 with
// moe tp 4). vLLM splits a MoE model's experts over all dp x tp GPUs when it runs data parallel
// (FusedMoEParallelConfig.make flattens TP across DP, with or without expert parallelism), so m GPUs
// at tp t are m / t data-parallel ranks. The measurements agree: TPOT follows the MoE GPUs, not tp
// (2000 x 100 tokens: moe tp 2 at tp 1 / tp 2 57.8 / 55.3 ms, moe tp 4 at tp 1 / tp 2 / tp 4 42.6 /
// 44.7 / 38.3 ms), and tp 1 alone cannot hold the 220 GiB of weights on one H200. Read so; the note
// says why. Empty for any other split.
std::string vllm_data_parallel_split(PoolColumns& p) {
  if (p.attention_dp != 1 || p.moe_ep != 1 || p.moe_tp <= p.tp || p.moe_tp % p.tp != 0) return "";
  const std::string was = p.describe();
  p.attention_dp = p.moe_tp / p.tp;
  return fmt::format("recorded {} without an attention-DP size; vLLM splits a MoE model's experts over all tp x dp "
                     "GPUs of a data-parallel run (FusedMoEParallelConfig flattens TP across DP), so {} MoE GPUs at "
                     "tp {} are {} data-parallel ranks: read as {}",
                     was, p.moe_tp, p.tp, p.attention_dp, p.describe());
}

}  // namespace

std::vector<ServingCase> read_aiconfigurator_e2e(const std::string& path, const std::string& gpu) {
  std::vector<ServingCase> out;
  for (Record r : read_csv(path)) {
    const std::string& mode = field(r, "mode", path);
    if (mode != "agg" && mode != "disagg") {
      throw ConfigError(fmt::format("{}: row {}: mode '{}' is neither agg nor disagg", path, field(r, "id", path), mode));
    }
    ServingCase c;
    c.id = field(r, "id", path);
    c.source = "aiconfigurator silicon_sample.csv (" + field(r, "silicon_data_source", path) + ")";
    c.engine = field(r, "backend", path);
    c.model = field(r, "model_path", path);
    if (const std::string repaired = repair_multiplied_split(r, path); !repaired.empty()) add_note(c, repaired);
    c.sweep_key = aiconfigurator_sweep_key(r);
    const std::string& system = field(r, "system", path);
    if (system == "h100_sxm") {
      c.gpu = "h100-sxm";
    } else if (system == "h200_sxm") {
      c.gpu = "h200";
    } else {
      throw ConfigError(fmt::format("{}: row {}: system '{}' is not a GPU kvplan maps (h100_sxm, h200_sxm)", path, c.id,
                                    system));
    }
    if (!gpu.empty() && c.gpu != gpu) {
      throw ConfigError(fmt::format("{}: row {}: system '{}' is not the GPU asked for ({})", path, c.id, system, gpu));
    }
    c.isl = leading_int(field(r, "isl", path));
    c.osl = leading_int(field(r, "osl", path));
    c.measured_ttft_ms = to_double(field(r, "silicon_ttft_ms", path));
    c.measured_tpot_ms = to_double(field(r, "silicon_tpot_ms", path));
    const std::string& src = field(r, "silicon_data_source", path);
    const bool disagg = mode == "disagg";
    const int64_t batch = leading_int(field(r, disagg ? "decode_batch_size" : "batch_size", path));
    const std::string conc_text = number_after(src, "silicon_concurrency");
    c.concurrency = conc_text.empty() ? batch : leading_int(conc_text);
    if (conc_text.empty()) add_note(c, fmt::format("no silicon_concurrency: concurrency = batch_size {}", batch));
    PoolColumns agg = pool_columns(r, "", path);
    if (!disagg && c.engine == "vllm") {
      if (const std::string read = vllm_data_parallel_split(agg); !read.empty()) add_note(c, read);
    }
    const PoolColumns prefill = disagg ? pool_columns(r, "prefill_", path) : PoolColumns{};
    const PoolColumns decode = disagg ? pool_columns(r, "decode_", path) : PoolColumns{};
    c.deployment = disagg ? "disagg" : agg.attention_dp > 1 ? "attention DP" : "agg";

    const auto known = model_presets().find(c.model);
    const auto added = new_family_presets().find(c.model);
    const std::string* preset_id = known != model_presets().end()       ? &known->second
                                   : added != new_family_presets().end() ? &added->second
                                                                         : nullptr;
    if (preset_id == nullptr) {
      c.why_not = fmt::format("no kvplan model preset for {}", c.model);
      out.push_back(std::move(c));
      continue;
    }
    c.memory_flags["model"] = *preset_id;
    c.memory_flags["gpu"] = c.gpu;
    c.memory_flags["engine"] = c.engine;
    const std::string version = version_prefix(field(r, "backend_version", path));
    // vLLM: its accounting and scheduler rules; SGLang: the bench start (sim::default_bench_start).
    if ((c.engine == "vllm" || c.engine == "sglang") && !version.empty()) c.memory_flags["engine-version"] = version;

    // Precision: '' is the checkpoint's bf16; fp8 on a bf16 checkpoint is vLLM/TRT-LLM fp8
    // (per-tensor W8A8), i.e. --quantization fp8; a quantized checkpoint keeps its own config.
    const std::string& precision = field(r, "precision", path);
    const std::string& gemm = field(r, "gemm_quant_mode", path);
    if (preset_is_quantized(*preset_id)) {
      add_note(c, fmt::format("weights: the checkpoint's own quantization_config (row: precision {}, gemm {})",
                              precision.empty() ? "-" : precision, gemm.empty() ? "-" : gemm));
    } else if (precision.empty()) {
      // bf16, the checkpoint's own dtype (README 1e: empty precision = native bf16, inference).
    } else if (precision == "fp8" && (gemm == "fp8" || gemm == "fp8_block" || gemm.empty())) {
      // 128x128 block-scaled FP8 (the FP8 releases of DeepSeek, Qwen3.5, GLM-5; SGLang's online fp8)
      // is its own format: the same bytes as per-tensor fp8 up to the scales, but not the same
      // kernels — vLLM's fused MoE for per-tensor fp8 is up to 6x slower than the block-scaled one
      // at small batches (aiconfigurator's H200 MoE table, 512 experts, 4 tokens: 1.04 vs 0.17 ms),
      // so a block-scaled run priced as per-tensor fp8 is far too slow (Qwen3.5-397B on H200: TPOT
      // +124%). Either part block-scaled: --quantization fp8-block (kvplan's GEMM class has no
      // block-scaled variant on Hopper and uses the fp8 rate for the dense GEMMs; the MoE class has).
      const bool block = gemm == "fp8_block" || field(r, "moe_quant_mode", path) == "fp8_block";
      c.memory_flags["quantization"] = block ? "fp8-block" : "fp8";
      if (block && gemm != "fp8_block") {
        add_note(c, "per-tensor fp8 GEMMs with fp8_block experts run as fp8-block (one --quantization for both)");
      } else if (block && field(r, "moe_quant_mode", path) != "fp8_block" && !field(r, "moe_quant_mode", path).empty()) {
        add_note(c, "fp8_block GEMMs with per-tensor fp8 experts run as fp8-block (one --quantization for both)");
      }
      if (c.model == "nvidia/Llama-3.1-8B-Instruct-FP8") {
        add_note(c, "NVIDIA's FP8 checkpoint run as the bf16 preset with --quantization fp8 (per-tensor W8A8)");
      }
    } else {
      c.why_not = fmt::format("precision {} / gemm {} has no kvplan --quantization", precision, gemm);
    }

    const bool moe = is_moe_preset(*preset_id);
    if (!disagg && moe && c.engine == "vllm") {
      if (const std::string read = expert_parallel_only_split(*preset_id, agg); !read.empty()) add_note(c, read);
    }
    if (!disagg) {
      const std::string why = pool_flags(agg, moe, c.memory_flags);
      if (c.why_not.empty()) c.why_not = why;
      c.replicas = agg.attention_dp;  // one engine instance per attention-DP rank
      if (agg.attention_dp > 1) {
        add_note(c, fmt::format("attention DP {}: {} engine instances of tp {}", agg.attention_dp, agg.attention_dp, agg.tp));
      }
      // Several engine instances behind one endpoint: concurrency = replicas x batch_size.
      if (agg.attention_dp == 1 && batch > 0 && c.concurrency > batch && c.concurrency % batch == 0) {
        c.replicas = c.concurrency / batch;
        add_note(c, fmt::format("{} replicas of batch {} (silicon_concurrency {} / batch_size {})", c.replicas, batch,
                                c.concurrency, batch));
      }
    } else if (c.why_not.empty()) {
      disagg_flags(c, prefill, decode, moe);
    }
    if (c.isl <= 0 || c.osl <= 0 || c.concurrency <= 0) {
      if (c.why_not.empty()) c.why_not = "missing isl, osl or concurrency";
    }
    bench_flags(c, steady_state_prompts(c.concurrency));
    out.push_back(std::move(c));
  }
  exclude_repeated_measurements(out);
  return out;
}

std::vector<ServingCase> read_public_runs(const std::string& path) {
  static const std::map<std::string, std::string> gpus = {
      {"NVIDIA H200 SXM5 141GB", "h200"},
      {"AMD Instinct MI300X 192GB", "mi300x"},
      {"AMD Instinct MI300X 192GB (Hot Aisle node)", "mi300x"},
      {"NVIDIA A100 80GB (SXM/PCIe not stated)", "a100-80gb"},
      {"NVIDIA A100 SXM4 40GB (inferred from Azure Standard_ND96asr_v4)", "a100-40gb"},
      // The source says "H100" only; run as the SXM part (the common cloud H100), noted per row.
      {"NVIDIA H100 (SXM/PCIe not stated)", "h100-sxm"},
      {"NVIDIA A10", "a10"},
  };
  std::vector<ServingCase> out;
  for (const Record& r : read_csv(path)) {
    ServingCase c;
    c.id = field(r, "source_id", path) + " row " + field(r, "row_id", path);
    c.source = fmt::format("{} line {}", field(r, "source_url", path), field(r, "source_line", path));
    c.engine = field(r, "engine", path);
    c.model = field(r, "model", path);
    c.measured_ttft_ms = to_double(field(r, "mean_ttft_ms", path));
    c.measured_tpot_ms = to_double(field(r, "mean_tpot_ms", path));
    const std::string& notes = field(r, "notes", path);
    const int64_t completed = leading_int(field(r, "completed_requests", path));
    c.isl = leading_int(field(r, "input_len", path));
    c.osl = leading_int(field(r, "output_len", path));
    if (c.isl <= 0 && completed > 0) {
      // ShareGPT: kvplan runs fixed lengths at the dataset's means (the spread is lost).
      c.isl = std::llround(to_double(field(r, "total_input_tokens", path)) / static_cast<double>(completed));
      c.osl = std::llround(to_double(field(r, "total_output_tokens", path)) / static_cast<double>(completed));
      add_note(c, fmt::format("dataset lengths run as fixed means {}/{}", c.isl, c.osl));
    } else if (completed > 0 && field(r, "len_basis", path).find("no --ignore-eos") != std::string::npos) {
      const int64_t mean_out =
          std::llround(to_double(field(r, "total_output_tokens", path)) / static_cast<double>(completed));
      if (mean_out > 0 && mean_out != c.osl) {
        add_note(c, fmt::format("no --ignore-eos: output {} -> mean printed {}", c.osl, mean_out));
        c.osl = mean_out;
      }
    }
    const std::string& load_kind = field(r, "load_kind", path);
    const int64_t num_prompts = leading_int(field(r, "num_prompts", path));
    const std::string& load_value = field(r, "load_value", path);
    // request_rate inf: a burst; a finite request_rate: open-loop Poisson arrivals (vLLM's and
    // SGLang's benchmark clients draw exponential gaps at that mean rate).
    const bool poisson = load_kind == "request_rate" && load_value != "inf";
    c.burst = load_kind == "request_rate" && !poisson;
    if (poisson) c.rate = to_double(load_value);
    c.concurrency = c.burst || c.rate > 0 ? num_prompts : leading_int(field(r, "load_value", path));

    auto preset = model_presets().find(c.model);
    auto gpu = gpus.find(field(r, "gpu", path));
    if (preset == model_presets().end()) {
      c.why_not = fmt::format("no kvplan model preset for {}", c.model);
    } else if (gpu == gpus.end()) {
      c.why_not = fmt::format("GPU '{}' has no unambiguous kvplan preset", field(r, "gpu", path));
    } else if (notes.find("--enable-dp-attention") != std::string::npos) {
      c.why_not = "SGLang --enable-dp-attention with TP-sharded MoE and unstated DP size";
    } else if (leading_int(field(r, "ep", path)) > 1) {
      c.why_not = fmt::format("MoE split tp {} x ep {} (the public run does not say how its engine combines them)",
                              field(r, "tp", path), field(r, "ep", path));
    } else if (poisson && !(c.rate > 0 && std::isfinite(c.rate))) {
      c.why_not = fmt::format("request_rate '{}' is neither inf nor a positive number", load_value);
    } else if (c.concurrency <= 0 || c.isl <= 0 || c.osl <= 0) {
      c.why_not = "missing lengths or load";
    }
    if (!c.why_not.empty()) {
      out.push_back(std::move(c));
      continue;
    }
    c.gpu = gpu->second;
    if (gpu->first == "NVIDIA H100 (SXM/PCIe not stated)") add_note(c, "H100 variant not stated: run as H100 SXM");
    c.memory_flags["model"] = preset->second;
    c.memory_flags["gpu"] = c.gpu;
    c.memory_flags["engine"] = c.engine;
    const std::string version = version_prefix(field(r, "engine_version", path));
    if ((c.engine == "vllm" || c.engine == "sglang") && !version.empty()) c.memory_flags["engine-version"] = version;
    const int64_t tp = std::max<int64_t>(1, leading_int(field(r, "tp", path)));
    c.memory_flags["tensor-parallel-size"] = std::to_string(tp);
    if (const int64_t pp = leading_int(field(r, "pp", path)); pp > 1) {
      c.memory_flags["pipeline-parallel-size"] = std::to_string(pp);
      if (notes.find("two ") != std::string::npos && notes.find("nodes") != std::string::npos) {
        add_note(c, "pipeline stages on two nodes: the inter-node link is not modelled");
      }
    }
    const std::string& weights = field(r, "weight_dtype", path);
    if (!preset_is_quantized(preset->second) && weights.rfind("fp8", 0) == 0) c.memory_flags["quantization"] = "fp8";
    if (const int64_t seqs = leading_int(field(r, "max_num_seqs", path)); seqs > 0) {
      c.memory_flags["max-num-seqs"] = std::to_string(seqs);
    }
    if (const int64_t tokens = leading_int(field(r, "max_num_batched_tokens", path)); tokens > 0) {
      c.memory_flags["max-num-batched-tokens"] = std::to_string(tokens);
    }
    for (const char* key : {"gpu_memory_utilization", "gpu-memory-utilization"}) {
      if (std::string v = number_after(notes, key); !v.empty()) c.memory_flags["gpu-memory-utilization"] = v;
    }
    for (const char* key : {"--max-model-len", "max_model_len"}) {
      if (std::string v = number_after(notes, key); !v.empty()) c.memory_flags["max-model-len"] = v;
    }
    if (notes.find("--num-scheduler-steps") != std::string::npos) add_note(c, "multi-step scheduling not modelled");
    if (field(r, "prefix_caching", path).rfind("on", 0) == 0) add_note(c, "warm prefix cache across runs not modelled");
    if (c.rate > 0) {
      // Open loop: num_prompts requests with Poisson arrivals, statistics over all of them, as
      // the benchmark clients print them (no warm-up is left out).
      c.sim_flags["arrivals"] = "poisson";
      c.sim_flags["rate"] = fmt::format("{}", c.rate);
      c.sim_flags["num-requests"] = std::to_string(num_prompts);
      c.sim_flags["prompt-lengths"] = fmt::format("fixed:{}", c.isl);
      c.sim_flags["output-lengths"] = fmt::format("fixed:{}", c.osl);
      c.sim_flags["seed"] = std::to_string(1);
      add_note(c, fmt::format("Poisson arrivals at {} req/s, statistics over all requests", load_value));
    } else if (c.burst) {
      // Every request at t = 0: an open-loop burst (1 ns apart), statistics over all requests, as printed.
      c.sim_flags["arrivals"] = "constant";
      c.sim_flags["rate"] = "1e9";
      c.sim_flags["num-requests"] = std::to_string(num_prompts);
      c.sim_flags["prompt-lengths"] = fmt::format("fixed:{}", c.isl);
      c.sim_flags["output-lengths"] = fmt::format("fixed:{}", c.osl);
      c.sim_flags["seed"] = std::to_string(1);
      add_note(c, "burst: all requests at t=0, statistics over all of them");
    } else {
      // The run as made: the source's own number of prompts. When that leaves no steady state
      // (N <= 2C), warm-up and cool-down shrink to N/4 each and the row is flagged.
      bench_flags(c, num_prompts);
      if (num_prompts <= 2 * c.concurrency) {
        c.sim_flags["warmup-requests"] = std::to_string(num_prompts / 4);
        c.sim_flags["cooldown-requests"] = std::to_string(num_prompts / 4);
        add_note(c, fmt::format("{} prompts at concurrency {}: no steady state, warm-up/cool-down {} each", num_prompts,
                                c.concurrency, num_prompts / 4));
      }
    }
    out.push_back(std::move(c));
  }
  return out;
}

}  // namespace kvplan::bench
