// aiconfigurator's tables of today's attention variants and of vLLM's all-reduce (README §6c-§6g,
// §6i; published_tables.h): MLA attention kernels (SGLang, TensorRT-LLM), the MLA absorb BMMs
// (vLLM, SGLang, TensorRT-LLM), Gated DeltaNet (vLLM), Mamba-2's causal conv1d (TensorRT-LLM) and
// vLLM's tensor-parallel all-reduce (CUDA-graph rows). Each row becomes the operator of
// core/mixer_ops.h (or row_ops.h) that the step's operator list uses for the same work.
#include <map>
#include <set>
#include <string>

#include <fmt/format.h>

#include "kvplan/calibration/row_ops.h"
#include "kvplan/core/mixer_ops.h"
#include "aic_tables.h"
#include "published_tables.h"

namespace kvplan::calibration::internal {

namespace {

using Json = nlohmann::json;

constexpr const char* kSnapshot = "ai-dynamo/aiconfigurator@095f58a51c4c";
constexpr const char* kAdded = "2026-07-13T00:00:00Z";

constexpr AicGpu kGpus[] = {{"h100_sxm", "NVIDIA H100 80GB HBM3", "h100-sxm"},
                            {"h200_sxm", "NVIDIA H200", "h200"},
                            {"b200_sxm", "NVIDIA B200", "b200"}};

}  // namespace

const AicGpu& gpu_of(const CsvReader& csv) {
  const std::string_view key = csv.text("gpu");
  for (const AicGpu& g : kGpus) {
    if (key == g.key) return g;
  }
  csv.fail("gpu", "is not a GPU of the section 6 tables (h100_sxm, h200_sxm, b200_sxm)");
}

namespace {

// Git blobs (first 12 hex) of the parquet tables (README §6), by "<gpu key>/<table>".
const std::map<std::string, std::string>& blobs() {
  static const std::map<std::string, std::string> b = {
      {"h100_sxm/mla/sglang/0.5.14/context_mla_perf", "80623fc3dbc9"},
      {"h200_sxm/mla/sglang/0.5.14/context_mla_perf", "d321b3be94d6"},
      {"b200_sxm/mla/sglang/0.5.14/context_mla_perf", "13658b844b85"},
      {"h100_sxm/mla/sglang/0.5.14/generation_mla_perf", "4c146441df97"},
      {"h200_sxm/mla/sglang/0.5.14/generation_mla_perf", "44de57bb70c2"},
      {"b200_sxm/mla/sglang/0.5.14/generation_mla_perf", "844e39362954"},
      {"h100_sxm/mla/trtllm/1.3.0rc20/context_mla_perf", "a3e8b0e2be44"},
      {"h200_sxm/mla/trtllm/1.3.0rc20/context_mla_perf", "91eaeceab86b"},
      {"b200_sxm/mla/trtllm/1.3.0rc20/context_mla_perf", "4bcb863b64c8"},
      {"h100_sxm/mla/trtllm/1.3.0rc20/generation_mla_perf", "03db3a576aef"},
      {"h200_sxm/mla/trtllm/1.3.0rc20/generation_mla_perf", "e93ec280a580"},
      {"b200_sxm/mla/trtllm/1.3.0rc20/generation_mla_perf", "cc56280e656d"},
      {"h100_sxm/mla_bmm/vllm/0.24.0/mla_bmm_perf", "2e020476f10f"},
      {"h200_sxm/mla_bmm/vllm/0.24.0/mla_bmm_perf", "6bbeccbb7023"},
      {"b200_sxm/mla_bmm/vllm/0.24.0/mla_bmm_perf", "79fe377baa9e"},
      {"h100_sxm/mla_bmm/sglang/0.5.14/mla_bmm_perf", "f4ab58d9ce1f"},
      {"h200_sxm/mla_bmm/sglang/0.5.14/mla_bmm_perf", "1b8a464ccc22"},
      {"b200_sxm/mla_bmm/sglang/0.5.14/mla_bmm_perf", "10338bff6530"},
      {"h100_sxm/mla_bmm/trtllm/1.3.0rc20/mla_bmm_perf", "89a2c78f268d"},
      {"h200_sxm/mla_bmm/trtllm/1.3.0rc20/mla_bmm_perf", "b8a7a6606499"},
      {"b200_sxm/mla_bmm/trtllm/1.3.0rc20/mla_bmm_perf", "9b99502aa5b7"},
      {"h100_sxm/linear_attention/vllm/0.24.0/gdn_perf", "aef87872e2b0"},
      {"h200_sxm/linear_attention/vllm/0.24.0/gdn_perf", "bd5d925f82dc"},
      {"b200_sxm/linear_attention/vllm/0.24.0/gdn_perf", "717b772b7b3f"},
      {"h100_sxm/linear_attention/trtllm/1.3.0rc20/mamba2_perf", "d26da7481472"},
      {"h200_sxm/linear_attention/trtllm/1.3.0rc20/mamba2_perf", "f47d9837a56a"},
      {"b200_sxm/linear_attention/trtllm/1.3.0rc20/mamba2_perf", "a023e9f4c927"},
      {"h100_sxm/sparse_attention/sglang/0.5.14/glm5_dsa_attn_module_perf", "17c2a075d45d"},
      {"h200_sxm/sparse_attention/sglang/0.5.14/glm5_dsa_attn_module_perf", "068ab0ab45ca"},
      {"b200_sxm/sparse_attention/sglang/0.5.14/glm5_dsa_attn_module_perf", "9ff9013dd22a"},
      {"h100_sxm/sparse_attention/sglang/0.5.14/glm5_mqa_logits_module_perf", "32d5a417b263"},
      {"h200_sxm/sparse_attention/sglang/0.5.14/glm5_mqa_logits_module_perf", "202462c13b0a"},
      {"b200_sxm/sparse_attention/sglang/0.5.14/glm5_mqa_logits_module_perf", "9ebe349a5414"},
      {"h100_sxm/sparse_attention/sglang/0.5.14/glm5_topk_module_perf", "db4a42444cbc"},
      {"h200_sxm/sparse_attention/sglang/0.5.14/glm5_topk_module_perf", "a4a6a804665d"},
      {"b200_sxm/sparse_attention/sglang/0.5.14/glm5_topk_module_perf", "ba6db8291c10"},
      {"h100_sxm/sparse_attention/vllm/0.24.0/dsv4_csa_context_module_perf", "2b30ecb6c277"},
      {"h200_sxm/sparse_attention/vllm/0.24.0/dsv4_csa_context_module_perf", "415505236de3"},
      {"b200_sxm/sparse_attention/vllm/0.24.0/dsv4_csa_context_module_perf", "51360b476a9e"},
      {"h100_sxm/sparse_attention/vllm/0.24.0/dsv4_csa_generation_module_perf", "60a6daab4c14"},
      {"h200_sxm/sparse_attention/vllm/0.24.0/dsv4_csa_generation_module_perf", "49488ab59791"},
      {"b200_sxm/sparse_attention/vllm/0.24.0/dsv4_csa_generation_module_perf", "dccd19f00862"},
      {"h100_sxm/sparse_attention/vllm/0.24.0/dsv4_hca_context_module_perf", "44998cb78d5d"},
      {"h200_sxm/sparse_attention/vllm/0.24.0/dsv4_hca_context_module_perf", "492173b6a579"},
      {"b200_sxm/sparse_attention/vllm/0.24.0/dsv4_hca_context_module_perf", "882f5c317e48"},
      {"h100_sxm/sparse_attention/vllm/0.24.0/dsv4_hca_generation_module_perf", "69f492bfb6c6"},
      {"h200_sxm/sparse_attention/vllm/0.24.0/dsv4_hca_generation_module_perf", "82d892bff00a"},
      {"b200_sxm/sparse_attention/vllm/0.24.0/dsv4_hca_generation_module_perf", "57823ea2f4c0"},
      {"h100_sxm/mhc/vllm/0.24.0/mhc_module_perf", "cc3d4c5e6d78"},
      {"h200_sxm/mhc/vllm/0.24.0/mhc_module_perf", "985f89f05f49"},
      {"b200_sxm/mhc/vllm/0.24.0/mhc_module_perf", "03b47161cad0"},
      {"h100_sxm/comm/vllm/0.24.0/custom_allreduce_perf", "d691ef869995"},
      {"h200_sxm/comm/vllm/0.24.0/custom_allreduce_perf", "1b77f0fe5526"},
      {"b200_sxm/comm/vllm/0.24.0/custom_allreduce_perf", "e0de0938ed22"}};
  return b;
}

}  // namespace

PublishedRun& run_of(Runs& runs, const CsvReader& csv, const AicGpu& gpu, const std::string& table,
                     const std::string& what) {
  const std::string key = fmt::format("{}/{}", gpu.key, table);
  const bool fresh = !runs.has(key);
  PublishedRun& run = runs.get(key);
  if (fresh) {
    auto blob = blobs().find(key);
    run.info = published_info(gpu.device,
                              fmt::format("{}.parquet ({}; copied as {})", key,
                                          blob != blobs().end() ? "blob " + blob->second : "blob not recorded",
                                          csv.file()),
                              what, kAdded, kSnapshot);
    run.gpu_preset = gpu.preset;
    run.table = csv.file();
  }
  return run;
}

namespace {

DType kv_dtype_of(const CsvReader& csv) {
  const std::string_view t = csv.text("kv_cache_dtype");
  if (t == "bfloat16") return DType::kBF16;
  if (t == "fp8") return DType::kFp8E4M3;
  csv.fail("kv_cache_dtype", "must be bfloat16 or fp8");
}

// The engine of an MLA row, from the collector's `framework` string (spellings vary, README §6).
MlaOpEngine engine_of(const CsvReader& csv, std::string& version) {
  const std::string_view f = csv.text("framework");
  version = std::string(csv.text("version"));
  if (f == "SGLang" || f == "sglang") return MlaOpEngine::kSglang;
  if (f == "TRTLLM") return MlaOpEngine::kTrtllm;
  if (f == "VLLM" || f == "vLLM") return MlaOpEngine::kVllm;
  csv.fail("framework", "must be SGLang, TRTLLM or VLLM");
}

const char* engine_key(MlaOpEngine e) {
  switch (e) {
    case MlaOpEngine::kSglang: return "sglang";
    case MlaOpEngine::kTrtllm: return "trtllm";
    case MlaOpEngine::kVllm: break;
  }
  return "vllm";
}

std::string engine_what(MlaOpEngine e, const std::string& version) {
  return fmt::format("aiconfigurator, {} {}", mla_op_engine_label(e), version);
}

// Keeps the first row of each (kernel, params): the H100 SGLang tables hold every key twice
// (two passes, median ratio 1.0005; README §6d), and AIC's loader keeps the first.
struct FirstOnly {
  std::set<std::string> seen;
  int64_t repeats = 0;  // rows refused by first()
  bool first(const std::string& gpu, const std::string& kernel, const Json& params) {
    if (seen.insert(gpu + "|" + kernel + "|" + params.dump()).second) return true;
    ++repeats;
    return false;
  }
};

}  // namespace

// §6d: SGLang 0.5.14 and TensorRT-LLM 1.3.0rc20 MLA attention kernels, DeepSeek geometry
// (kv_lora 512, rope 64, nope 128, v 128). Context: `isl` new tokens, no prefix. Generation: one
// new token after `step` past tokens, attended KV = step + 1.
void read_aic_mla_attention(TableSink& sink, CsvReader& csv) {
  Runs runs;
  FirstOnly once;
  const MlaDims dims;
  while (csv.next()) {
    const AicGpu& gpu = gpu_of(csv);
    std::string version;
    const MlaOpEngine engine = engine_of(csv, version);
    if (engine == MlaOpEngine::kVllm) csv.fail("framework", "must be SGLang or TRTLLM in this table");
    const std::string op(csv.text("op_name"));
    const bool prefill = op == "mla_context";
    if (!prefill && op != "mla_generation") csv.fail("op_name", "must be mla_context or mla_generation");
    if (csv.text("mla_dtype") != "bfloat16") csv.fail("mla_dtype", "must be bfloat16 (the only one published)");
    const DType kv = kv_dtype_of(csv);
    const int64_t heads = csv.integer("num_heads", 1), batch = csv.integer("batch_size", 1);
    const int64_t isl = csv.integer("isl", 1), step = csv.integer("step", 0);
    const double ms = csv.positive("latency");
    if (prefill && step != 0) csv.fail("step", "must be 0 in context rows (no cached prefix)");
    if (!prefill && isl != 1) csv.fail("isl", "must be 1 in generation rows (one new token per sequence)");
    if (!sink.wanted(csv.file(), gpu.preset)) continue;
    const std::string kernel = fmt::format("aic_mla_{}_{}_{}", prefill ? "context" : "generation", engine_key(engine),
                                           csv.text("kernel_source"));
    Json params = {{"mla", prefill ? "prefill" : "decode"}, {"engine", engine_key(engine)}, {"num_heads", heads},
                   {"batch", batch}, {"kv_dtype", std::string(dtype_name(kv))}};
    const double b = static_cast<double>(batch);
    StepOp row_op;
    // SGLang's collector runs every backend but trtllm_mla (B200) in the absorbed form, context rows
    // included (collect_mla.py: head_dim 576, v_head_dim 512, one KV head): read them as that form.
    const bool absorbed = prefill && engine == MlaOpEngine::kSglang && csv.text("kernel_source") != "trtllm_mla";
    if (prefill) {
      params["isl"] = isl;
      if (absorbed) params["form"] = "absorbed";
      const double pairs = b * static_cast<double>(causal_pairs(0, isl, INT64_MAX));
      row_op = absorbed ? mla_absorbed_prefill_op(engine, dims, b, b * static_cast<double>(isl), pairs,
                                                  b * static_cast<double>(isl), heads, kv)
                        : mla_prefill_op(engine, dims, b, b * static_cast<double>(isl), pairs,
                                         b * static_cast<double>(isl), heads, kv);
    } else {
      const int64_t kv_len = step + 1;
      params["kv_len"] = kv_len;
      const double bpt = static_cast<double>(dims.kv_lora_rank + dims.rope_dim) * (is_fp8(kv) ? 1.0 : 2.0);
      row_op = mla_decode_op(engine, dims, b, b * static_cast<double>(kv_len), static_cast<double>(kv_len),
                             b * static_cast<double>(kv_len) * bpt, bpt, 1, heads, kv);
    }
    if (!once.first(gpu.key, kernel, params)) continue;
    const std::string family = engine == MlaOpEngine::kSglang ? "sglang/0.5.14" : "trtllm/1.3.0rc20";
    PublishedRun& run = run_of(runs, csv, gpu,
                               fmt::format("mla/{}/{}_mla_perf", family, prefill ? "context" : "generation"),
                               engine_what(engine, version));
    add_kernel(run, kernel, prefill ? OpClass::kMlaPrefill : OpClass::kMlaDecode,
               fmt::format("{} MLA attention kernel ({}), DeepSeek geometry, heads per GPU; {}; no projections or "
                           "absorb BMMs",
                           mla_op_engine_label(engine), csv.text("kernel_source"),
                           !prefill  ? "absorbed decode over the latent cache"
                           : absorbed ? "causal prefill, no cached prefix, in the absorbed form (576/512, one latent head)"
                                      : "causal prefill, no cached prefix"));
    add_row(run, kernel, row_op, params, ms * kNsPerMs);
  }
  if (once.repeats > 0) {
    sink.out.notes.push_back(fmt::format("{}: {} repeated row(s) (second measurement pass) not imported; the first "
                                         "of each kept, as AIC's loader does",
                                         csv.file(), once.repeats));
  }
  sink.append(runs.take());
}

// §6e: the absorb BMMs per engine and dtype; num_tokens decode tokens, num_heads per GPU.
void read_aic_mla_bmm(TableSink& sink, CsvReader& csv) {
  Runs runs;
  FirstOnly once;
  const MlaDims dims;
  while (csv.next()) {
    const AicGpu& gpu = gpu_of(csv);
    std::string version;
    const MlaOpEngine engine = engine_of(csv, version);
    const std::string op(csv.text("op_name"));
    const bool pre = op == "mla_gen_pre";
    if (!pre && op != "mla_gen_post") csv.fail("op_name", "must be mla_gen_pre or mla_gen_post");
    const std::string_view dtype = csv.text("bmm_dtype");
    if (dtype != "bfloat16" && dtype != "fp8") csv.fail("bmm_dtype", "must be bfloat16 or fp8");
    const bool fp8 = dtype == "fp8";
    if (fp8 && engine == MlaOpEngine::kVllm) csv.fail("bmm_dtype", "must be bfloat16 for vLLM (it has no fp8 BMM)");
    const int64_t tokens = csv.integer("num_tokens", 1), heads = csv.integer("num_heads", 1);
    const double ms = csv.positive("latency");
    if (!sink.wanted(csv.file(), gpu.preset)) continue;
    const std::string kernel = fmt::format("aic_mla_bmm_{}", csv.text("kernel_source"));
    const Json params = {{"mla_bmm", pre ? "pre" : "post"}, {"engine", engine_key(engine)}, {"tokens", tokens},
                         {"num_heads", heads}, {"dtype", fp8 ? "fp8" : "bf16"}};
    if (!once.first(gpu.key, kernel, params)) continue;
    PublishedRun& run = run_of(runs, csv, gpu, fmt::format("mla_bmm/{}/{}/mla_bmm_perf", engine_key(engine), version),
                               engine_what(engine, version));
    add_kernel(run, kernel, OpClass::kMlaBmm,
               fmt::format("{} MLA absorb BMM ({}): q_nope x W_UK (pre) or latent out x W_UV (post), heads per GPU",
                           mla_op_engine_label(engine), csv.text("kernel_source")));
    add_row(run, kernel, mla_bmm_op(engine, dims, pre, static_cast<double>(tokens), heads, fp8), params, ms * kNsPerMs);
  }
  if (once.repeats > 0) {
    sink.out.notes.push_back(fmt::format("{}: {} repeated row(s) not imported (first of each kept)", csv.file(),
                                         once.repeats));
  }
  sink.append(runs.take());
}

// §6f: Gated DeltaNet, vLLM 0.24.0. Every shape has two rows (conv1d and the delta rule); the
// layer's core is their sum, which is the one gated_deltanet op. Heads are per GPU.
void read_aic_gdn(TableSink& sink, CsvReader& csv) {
  struct Shape {
    const AicGpu* gpu = nullptr;
    bool prefill = false;
    int64_t batch = 0, seq_len = 0, hk = 0, dk = 0, hv = 0, dv = 0, d_conv = 0;
    double ns = 0;
    int kernels = 0;
  };
  std::map<std::string, Shape> shapes;  // sorted by key: deterministic run order
  std::vector<std::string> order;
  while (csv.next()) {
    const AicGpu& gpu = gpu_of(csv);
    const std::string phase(csv.text("phase"));
    const bool prefill = phase == "context";
    if (!prefill && phase != "generation") csv.fail("phase", "must be context or generation");
    const std::string_view k = csv.text("kernel_source");
    const bool known = prefill ? (k == "causal_conv1d_fn" || k == "chunk_gated_delta_rule_flashinfer")
                               : (k == "causal_conv1d_update" || k == "fused_recurrent_gated_delta_rule_packed_decode");
    if (!known) csv.fail("kernel_source", "is not one of the two kernels of its phase (README §6f)");
    Shape s;
    s.gpu = &gpu;
    s.prefill = prefill;
    s.batch = csv.integer("batch_size", 1);
    s.seq_len = csv.integer("seq_len", 1);
    s.hk = csv.integer("num_k_heads", 1);
    s.dk = csv.integer("head_k_dim", 1);
    s.hv = csv.integer("num_v_heads", 1);
    s.dv = csv.integer("head_v_dim", 1);
    s.d_conv = csv.integer("d_conv", 1);
    const double ms = csv.positive("latency");
    if (csv.integer("num_tokens", 1) != s.batch * s.seq_len) {
      csv.fail("num_tokens", fmt::format("must be batch_size x seq_len = {}", s.batch * s.seq_len));
    }
    if (!sink.wanted(csv.file(), gpu.preset)) continue;
    // model_name too: two models with the same per-GPU shape are two measurements of it
    const std::string key = fmt::format("{}|{}|{}|{}|{}|{}|{}|{}|{}|{}", gpu.key, phase, csv.text("model_name"), s.batch,
                                        s.seq_len, s.hk, s.dk, s.hv, s.dv, s.d_conv);
    auto [it, fresh] = shapes.try_emplace(key, s);
    if (fresh) order.push_back(key);
    it->second.ns += ms * kNsPerMs;
    it->second.kernels += 1;
  }
  Runs runs;
  FirstOnly once;
  int64_t halves = 0;
  for (const std::string& key : order) {
    const Shape& s = shapes.at(key);
    if (s.kernels != 2) {
      ++halves;
      continue;
    }
    PublishedRun& run = run_of(runs, csv, *s.gpu, "linear_attention/vllm/0.24.0/gdn_perf", "aiconfigurator, vLLM 0.24.0");
    const std::string kernel = s.prefill ? "aic_gdn_context" : "aic_gdn_generation";
    add_kernel(run, kernel, OpClass::kGatedDeltaNet,
               s.prefill ? "vLLM Gated DeltaNet prefill: causal_conv1d_fn + chunk_gated_delta_rule (FlashInfer), "
                           "the two kernels' times summed; no projections, gating or norm"
                         : "vLLM Gated DeltaNet decode: causal_conv1d_update + fused recurrent gated delta rule, the "
                           "two kernels' times summed; no projections, gating or norm");
    const Json params = {{"gdn", s.prefill ? "prefill" : "decode"}, {"batch", s.batch}, {"seq_len", s.seq_len},
                         {"hk", s.hk}, {"dk", s.dk}, {"hv", s.hv}, {"dv", s.dv}, {"d_conv", s.d_conv}};
    // another model with the same per-GPU shape: the first measurement kept
    if (!once.first(s.gpu->key, kernel, params)) continue;
    add_row(run, kernel, gdn_row_op(s.prefill, s.batch, s.seq_len, s.hk, s.dk, s.hv, s.dv, s.d_conv), params, s.ns);
  }
  if (halves > 0 || once.repeats > 0) {
    sink.out.notes.push_back(fmt::format("{}: {} shape(s) with only one of their two kernels and {} shape(s) already "
                                         "measured for another model not imported (the first kept)",
                                         csv.file(), halves, once.repeats));
  }
  sink.append(runs.take());
}

// §7e: Kimi delta attention. Only the SGLang rows are read: its kimi-k3 build runs the fla Triton
// kernels (chunk_kda, fused_recurrent_kda) that stock vLLM's layers/kda.py also calls for
// Kimi-Linear; the vLLM rows time a preview build's FlashKDA CUDA kernels, which no released vLLM
// runs. A shape's layer core is its kernels' sum: context = causal_conv1d_fn_qkv3 (the q, k and v
// convolutions) + chunk_kda; generation = causal_conv1d_update + fused_recurrent_kda_packed_decode,
// or kda_fused_decode alone (the fused 12-head shard). Speculative "verify" rows are not read.
void read_aic_kda(TableSink& sink, CsvReader& csv) {
  struct Shape {
    const AicGpu* gpu = nullptr;
    bool prefill = false;
    int64_t batch = 0, seq_len = 0, heads = 0, dk = 0, dv = 0, d_conv = 0;
    double ns = 0;
    int kernels = 0;  // kernel rows summed
    bool fused = false;
  };
  std::map<std::string, Shape> shapes;
  std::vector<std::string> order;
  int64_t other_framework = 0, verify = 0;
  while (csv.next()) {
    const AicGpu& gpu = gpu_of(csv);
    const std::string phase(csv.text("phase"));
    if (phase == "verify") {
      ++verify;
      continue;
    }
    const bool prefill = phase == "context";
    if (!prefill && phase != "generation") csv.fail("phase", "must be context, generation or verify");
    if (csv.text("framework") != "SGLang") {
      ++other_framework;
      continue;
    }
    const std::string_view k = csv.text("kernel_source");
    const bool fused = k == "kda_fused_decode";
    const bool known = prefill ? (k == "causal_conv1d_fn_qkv3" || k == "chunk_kda")
                               : (fused || k == "causal_conv1d_update" || k == "fused_recurrent_kda_packed_decode");
    if (!known) csv.fail("kernel_source", "is not one of the KDA kernels of its phase (README §7e)");
    Shape sh;
    sh.gpu = &gpu;
    sh.prefill = prefill;
    sh.batch = csv.integer("batch_size", 1);
    sh.seq_len = csv.integer("seq_len", 1);
    sh.heads = csv.integer("num_k_heads", 1);
    sh.dk = csv.integer("head_k_dim", 1);
    sh.dv = csv.integer("head_v_dim", 1);
    sh.d_conv = csv.integer("d_conv", 1);
    if (csv.integer("num_v_heads", 1) != sh.heads) csv.fail("num_v_heads", "must equal num_k_heads (KDA has one head count)");
    if (csv.integer("num_tokens", 1) != sh.batch * sh.seq_len) {
      csv.fail("num_tokens", fmt::format("must be batch_size x seq_len = {}", sh.batch * sh.seq_len));
    }
    const double ms = csv.positive("latency");
    if (!sink.wanted(csv.file(), gpu.preset)) continue;
    const std::string key = fmt::format("{}|{}|{}|{}|{}|{}|{}|{}", gpu.key, phase, sh.batch, sh.seq_len, sh.heads, sh.dk,
                                        sh.dv, sh.d_conv);
    auto [it, fresh] = shapes.try_emplace(key, sh);
    if (fresh) order.push_back(key);
    it->second.ns += ms * kNsPerMs;
    it->second.kernels += 1;
    it->second.fused = it->second.fused || fused;
  }
  Runs runs;
  int64_t incomplete = 0;
  for (const std::string& key : order) {
    const Shape& sh = shapes.at(key);
    if (sh.kernels != (sh.fused ? 1 : 2)) {
      ++incomplete;
      continue;
    }
    PublishedRun& run = run_of(runs, csv, *sh.gpu, "linear_attention/sglang/0.5.16/kda_perf",
                               "aiconfigurator, SGLang 0.5.16 (kimi-k3 build)");
    const std::string kernel = sh.prefill ? "aic_kda_context" : "aic_kda_generation";
    add_kernel(run, kernel, OpClass::kKimiDelta,
               sh.prefill ? "Kimi delta attention prefill: causal_conv1d_fn on q, k and v + chunk_kda (fla Triton), the "
                            "kernels' times summed; no projections, gates or norm"
                          : "Kimi delta attention decode: causal_conv1d_update + fused_recurrent_kda_packed_decode (fla "
                            "Triton; kda_fused_decode where SGLang fuses them), summed; no projections, gates or norm");
    const Json params = {{"kda", sh.prefill ? "prefill" : "decode"}, {"batch", sh.batch}, {"seq_len", sh.seq_len},
                         {"heads", sh.heads}, {"dk", sh.dk}, {"dv", sh.dv}, {"d_conv", sh.d_conv}};
    add_row(run, kernel, kda_row_op(sh.prefill, sh.batch, sh.seq_len, sh.heads, sh.dk, sh.dv, sh.d_conv), params, sh.ns);
  }
  sink.out.notes.push_back(fmt::format(
      "{}: {} vLLM preview row(s) (FlashKDA) and {} speculative verify row(s) not imported; {} shape(s) without all "
      "their kernels skipped",
      csv.file(), other_framework, verify, incomplete));
  sink.append(runs.take());
}

// §6g: TensorRT-LLM's Mamba-2 tables hold only the causal conv1d (the SSM scan rows are absent);
// nheads etc. are full-model values.
void read_aic_mamba2(TableSink& sink, CsvReader& csv) {
  Runs runs;
  FirstOnly once;
  while (csv.next()) {
    const AicGpu& gpu = gpu_of(csv);
    const std::string phase(csv.text("phase"));
    const bool prefill = phase == "context";
    if (!prefill && phase != "generation") csv.fail("phase", "must be context or generation");
    const std::string_view k = csv.text("kernel_source");
    if (k != (prefill ? "causal_conv1d_fn" : "causal_conv1d_update")) {
      csv.fail("kernel_source", prefill ? "must be causal_conv1d_fn in context rows" : "must be causal_conv1d_update");
    }
    const int64_t batch = csv.integer("batch_size", 1), seq_len = csv.integer("seq_len", 1);
    const int64_t heads = csv.integer("nheads", 1), head_dim = csv.integer("head_dim", 1);
    const int64_t groups = csv.integer("n_groups", 1), d_state = csv.integer("d_state", 1);
    const int64_t d_conv = csv.integer("d_conv", 2);
    const double ms = csv.positive("latency");
    if (!sink.wanted(csv.file(), gpu.preset)) continue;
    const int64_t channels = heads * head_dim + 2 * groups * d_state;
    PublishedRun& run = run_of(runs, csv, gpu, "linear_attention/trtllm/1.3.0rc20/mamba2_perf",
                               "aiconfigurator, TensorRT-LLM 1.3.0rc20");
    const std::string kernel = prefill ? "aic_mamba2_causal_conv1d_fn" : "aic_mamba2_causal_conv1d_update";
    add_kernel(run, kernel, OpClass::kConv1d,
               prefill ? "TensorRT-LLM Mamba-2 causal_conv1d_fn over x, B, C (d_inner + 2 n_groups d_state channels)"
                       : "TensorRT-LLM Mamba-2 causal_conv1d_update (one token, conv state read and written)");
    const Json params = {{"conv1d", prefill ? "prefill" : "decode"}, {"batch", batch}, {"seq_len", seq_len},
                         {"channels", channels}, {"d_conv", d_conv}};
    // another model with the same channel count: the first measurement kept
    if (!once.first(gpu.key, kernel, params)) continue;
    add_row(run, kernel, conv1d_row_op(prefill, batch, seq_len, channels, d_conv), params, ms * kNsPerMs);
  }
  if (once.repeats > 0) {
    sink.out.notes.push_back(fmt::format("{}: {} row(s) of a shape already measured for another model not imported "
                                         "(the first kept)",
                                         csv.file(), once.repeats));
  }
  sink.append(runs.take());
}

// §7c: SGLang's GLM-5 DSA kernels, each timed alone on random inputs: the indexer's fp8 MQA logits,
// the top-k (two score modes) and FlashMLA's sparse attention in bf16. `num_heads` is GLM-5's native
// 64 (SGLang pads heads outside the kernels, so they do not depend on TP); `isl` query tokens per
// request after `step` cached ones. The copied rows are decode (isl 1) or context without a prefix.
void read_aic_glm5_dsa(TableSink& sink, CsvReader& csv, bool topk_file) {
  // GLM-5's attention geometry (README §7a/7c): kv_lora 512, rope 64, indexer 32 heads x 128, top 2048
  const DsaDims dsa{32, 128, 2048};
  const MlaDims mla{512, 64, 192, 256};
  constexpr int64_t kHeads = 64;
  const double latent_bytes = 2.0 * static_cast<double>(mla.kv_lora_rank + mla.rope_dim);  // bf16 in the kernel
  Runs runs;
  int64_t unmeasured = 0, flat = 0, prefill_kernel_decode = 0;
  while (csv.next()) {
    const AicGpu& gpu = gpu_of(csv);
    const std::string op(csv.text("op_name"));
    OpClass c = OpClass::kDsaTopk;
    if (op == "glm5_dsa_attn_module") c = OpClass::kDsaAttention;
    else if (op == "glm5_mqa_logits_module") c = OpClass::kDsaIndexer;
    else if (op != "glm5_topk_module") csv.fail("op_name", "must be glm5_dsa_attn_module, glm5_mqa_logits_module or glm5_topk_module");
    if ((c == OpClass::kDsaTopk) != topk_file) csv.fail("op_name", "is not a table of this file");
    if (csv.text("architecture") != "GlmMoeDsaForCausalLM") csv.fail("architecture", "must be GlmMoeDsaForCausalLM");
    if (csv.integer("num_heads", 1) != kHeads) csv.fail("num_heads", "must be 64 (GLM-5's native head count)");
    if (csv.integer("compress_ratio", 1) != 1) csv.fail("compress_ratio", "must be 1 (uniform DSA)");
    const int64_t batch = csv.integer("batch_size", 1), isl = csv.integer("isl", 1), past = csv.integer("step", 0);
    if (isl > 1 && past != 0) csv.fail("step", "must be 0 in context rows (the copied rows have no cached prefix)");
    if (isl == 1 && c != OpClass::kDsaTopk) {
      // Decode rows of the prefill kernels (flash_mla_sparse_fwd, the non-paged fp8_mqa_logits):
      // engines decode with FlashMLA's decode kernel and fp8_paged_mqa_logits instead (mixer_ops.h).
      ++prefill_kernel_decode;
      continue;
    }
    if (topk_file) {
      const std::string_view mode = csv.text("score_mode");
      if (mode != "flat" && mode != "top_last") csv.fail("score_mode", "must be flat or top_last");
      if (mode == "flat") {
        ++flat;  // all-tied scores, the worst case; top_last is the collector's representative input
        continue;
      }
    }
    const std::string_view latency = csv.text("latency");
    if (latency == "0" || latency == "0.0") {
      ++unmeasured;  // past + isl <= 2048: everything is selected, nothing was timed
      continue;
    }
    const double ms = csv.positive("latency");
    if (!sink.wanted(csv.file(), gpu.preset)) continue;
    const bool prefill = isl > 1;
    const char* table = c == OpClass::kDsaAttention ? "glm5_dsa_attn_module_perf"
                        : c == OpClass::kDsaIndexer ? "glm5_mqa_logits_module_perf"
                                                    : "glm5_topk_module_perf";
    PublishedRun& run = run_of(runs, csv, gpu, fmt::format("sparse_attention/sglang/0.5.14/{}", table),
                               "aiconfigurator, SGLang 0.5.14 kernels (GLM-5 DSA)");
    const std::string kernel = fmt::format("aic_glm5_{}_{}", std::string(csv.text("kernel_source")),
                                           prefill ? "context" : "generation");
    add_kernel(run, kernel, c,
               c == OpClass::kDsaAttention ? "SGLang flash_mla_sparse_fwd: sparse MLA over the top-2048 latents, bf16, "
                                             "d_qk 576 / d_v 512, GLM-5's 64 heads"
               : c == OpClass::kDsaIndexer ? "SGLang deep_gemm.fp8_mqa_logits: GLM-5 indexer scores, 32 heads x 128 in "
                                             "fp8, over each request's past + new keys"
                                           : "SGLang fast_topk_transform_fused: top-2048 of the indexer logits plus the "
                                             "page-table transform; 'top_last' scores (clear winners)");
    const Json params = {{"dsa", op_class_name(c)}, {"batch", batch}, {"isl", isl}, {"past", past},
                         {"num_heads", kHeads}, {"index_heads", dsa.index_heads}, {"index_dim", dsa.index_dim},
                         {"topk", dsa.topk}, {"kv_lora_rank", mla.kv_lora_rank}, {"rope_dim", mla.rope_dim},
                         {"latent_bytes", latent_bytes}};
    add_row(run, kernel, dsa_row_op(c, batch, isl, past, dsa, mla, kHeads, latent_bytes), params, ms * kNsPerMs);
  }
  if (unmeasured > 0 || flat > 0 || prefill_kernel_decode > 0) {
    sink.out.notes.push_back(fmt::format(
        "{}: not imported: {} 'flat' top-k row(s) (all-tied scores), {} row(s) with latency 0 (past + new <= 2048: "
        "everything selected, not timed), {} decode row(s) of the prefill kernels (engines decode with FlashMLA's decode "
        "kernel and fp8_paged_mqa_logits)",
        csv.file(), flat, unmeasured, prefill_kernel_decode));
  }
  sink.append(runs.take());
}

// §6i: vLLM's tensor_model_parallel_all_reduce on bf16 tensors of message_size ELEMENTS. Only the
// CUDA-graph rows (AIC drops the eager ones: they time an input clone too).
void read_aic_vllm_all_reduce(TableSink& sink, CsvReader& csv) {
  Runs runs;
  int64_t eager = 0;
  while (csv.next()) {
    const AicGpu& gpu = gpu_of(csv);
    const std::string_view backend = csv.text("backend");
    if (backend != "vllm_graph" && backend != "vllm_eager") csv.fail("backend", "must be vllm_graph or vllm_eager");
    if (csv.text("allreduce_dtype") != "bfloat16") csv.fail("allreduce_dtype", "must be bfloat16");
    const int64_t ranks = csv.integer("num_gpus", 2), elements = csv.integer("message_size", 1);
    const double ms = csv.positive("latency");
    if (backend == "vllm_eager") {
      ++eager;
      continue;
    }
    if (!sink.wanted(csv.file(), gpu.preset)) continue;
    PublishedRun& run = run_of(runs, csv, gpu, "comm/vllm/0.24.0/custom_allreduce_perf", "aiconfigurator, vLLM 0.24.0");
    const std::string kernel = "aic_vllm_all_reduce_graph";
    add_kernel(run, kernel, OpClass::kCollective,
               "vLLM tensor_model_parallel_all_reduce (its custom all-reduce for small tensors, NCCL / symmetric memory "
               "for large), bf16, 5 calls on distinct buffers in one CUDA graph, per call");
    const Json params = {{"bytes", 2 * elements}, {"ranks", ranks}, {"collective", "vllm_all_reduce"}};
    add_row(run, kernel, collective_op(CollectiveKind::kVllmAllReduce, 2.0 * static_cast<double>(elements),
                                       static_cast<int>(ranks)),
            params, ms * kNsPerMs);
  }
  if (eager > 0) {
    sink.out.notes.push_back(fmt::format("{}: {} eager row(s) not imported (they time an input clone too; AIC drops "
                                         "them)",
                                         csv.file(), eager));
  }
  sink.append(runs.take());
}

}  // namespace kvplan::calibration::internal
