// kvplan_validate_mla_module — does the sum of kvplan's MLA operators match vLLM's whole MLA module?
//
//   ./build/bench/kvplan_validate_mla_module [--dir data/measurements] [--markdown] [--dsa]
//
// vLLM publishes its MLA attention only as a whole module (data/measurements README, §6c of the
// shared README): one DeepseekV2MLAAttention.forward with DeepSeek-V3 geometry — the projections,
// the latent norms, RoPE, the cache write, the attention kernel (or the absorb BMMs and the
// kernel) and o_proj. kvplan never fits those rows (its operator list prices the projections as
// GEMMs and the kernel by SGLang's table, core/mixer_ops.h), so every row is an out-of-sample check
// of the SHIPPED profile (data/profiles) on the sum of the MLA layer's operators. Rows whose linear
// layers run in bf16 are checked (kvplan's fp8-block GEMM has no published variant yet). Per GPU,
// phase, vLLM backend and KV dtype: rows, median and p90 of |predicted/measured - 1| and the median
// signed error.
//
// --dsa: the same check on vLLM's DeepSeek Sparse Attention module (shared README §7a, DeepSeek-V3.2
// and GLM-5, fp8-block linear layers): kvplan fits only SGLang's prefill DSA kernels
// (mixer_ops.h), so its decode pricing (the paged indexer read as attention_decode, the attention as
// mla_decode over the selected latents) is checked here out of sample. Context rows ran eager (no
// CUDA graph; a host floor of ~1.4 ms, README §7a): reported apart, by size.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <map>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "kvplan/calibration/fitter.h"
#include "kvplan/core/error.h"
#include "kvplan/core/kv_layout.h"
#include "kvplan/core/op_time.h"
#include "kvplan/core/presets.h"
#include "kvplan/core/published_profiles.h"
#include "kvplan/core/step_ops.h"
#include "kvplan/core/weight_quant.h"

namespace {

namespace cal = kvplan::calibration;

struct Line {
  std::vector<double> abs_err, signed_err;
};

std::vector<std::string> split(const std::string& line) {
  std::vector<std::string> out;
  std::stringstream ss(line);
  std::string f;
  while (std::getline(ss, f, ',')) out.push_back(f);
  return out;
}

}  // namespace

int main(int argc, char** argv) {
  std::string dir = std::string(KVPLAN_SOURCE_DIR) + "/data/measurements";
  bool markdown = false;
  bool dsa = false;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--dir" && i + 1 < argc) {
      dir = argv[++i];
    } else if (a == "--markdown") {
      markdown = true;
    } else if (a == "--dsa") {
      dsa = true;
    } else {
      std::fprintf(stderr, "usage: %s [--dir DIR] [--markdown] [--dsa]\n", argv[0]);
      return 2;
    }
  }
  const std::string path =
      dir + (dsa ? "/aiconfigurator_dsa_module_vllm_h100_h200_b200.csv" : "/aiconfigurator_mla_module_vllm_h100_h200_b200.csv");
  std::ifstream in(path);
  if (!in) {
    std::fprintf(stderr, "kvplan_validate_mla_module: cannot read %s\n", path.c_str());
    return 2;
  }
  // The operators of kvplan's MLA layer that vLLM's module times (not the input norm, the
  // all-reduce or the MLP).
  const std::set<std::string> module_ops = {
      "qkv_a_proj", "qkv_a_norm", "q_b_proj", "q_proj", "kv_a_proj", "kv_a_norm", "rope", "kv_write", "kv_b_proj",
      "attention_prefill", "q_absorb", "attention_decode", "v_absorb", "o_proj",
      // DSA
      "indexer_wq_b", "indexer_wk", "indexer_weights_proj", "indexer_norm_rope_quant", "dsa_indexer", "dsa_topk",
      "attention_decode_topk"};
  const std::map<std::string, std::string> dsa_models = {{"deepseek-ai/DeepSeek-V3.2", "deepseek-v3.2"},
                                                         {"zai-org/GLM-5", "glm-5"}};
  const std::map<std::string, std::string> presets = {{"h100_sxm", "h100-sxm"}, {"h200_sxm", "h200"}, {"b200_sxm", "b200"}};
  try {
    std::map<std::string, kvplan::ModelConfig> models;
    models["deepseek-v3"] = kvplan::resolve_model("deepseek-v3");
    for (const auto& [hf, id] : dsa_models) models[id] = kvplan::resolve_model(id);
    std::string line;
    std::getline(in, line);
    if (!line.empty() && line.back() == '\r') line.pop_back();
    std::map<std::string, size_t> col;
    const std::vector<std::string> header = split(line);
    for (size_t i = 0; i < header.size(); ++i) col[header[i]] = i;
    for (const char* c : {"gpu", "op_name", "kernel_source", "kv_cache_dtype", "gemm_type", "num_heads", "batch_size",
                          "isl", "step", "latency"}) {
      if (col.count(c) == 0) throw kvplan::ConfigError(fmt::format("{}: no column '{}'", path, c));
    }
    std::map<std::string, Line> lines;
    int64_t skipped = 0;
    while (std::getline(in, line)) {
      if (!line.empty() && line.back() == '\r') line.pop_back();
      if (line.empty()) continue;
      const std::vector<std::string> f = split(line);
      auto at = [&](const char* c) { return f.at(col.at(c)); };
      if (at("gemm_type") != (dsa ? "fp8_block" : "bfloat16")) {
        ++skipped;
        continue;
      }
      const kvplan::ModelConfig& model = models.at(dsa ? dsa_models.at(at("model")) : "deepseek-v3");
      const int native_heads = model.mla.num_heads;
      const std::string gpu_id = presets.at(at("gpu"));
      const kvplan::GpuSpec gpu = kvplan::resolve_gpu(gpu_id);
      const kvplan::PerfProfile& profile = *kvplan::published_profile(gpu_id);
      const int heads = std::stoi(at("num_heads")), batch = std::stoi(at("batch_size"));
      const int64_t isl = std::stoll(at("isl")), step = std::stoll(at("step"));
      const double measured_ns = std::stod(at("latency")) * 1e6;
      const bool prefill = at("op_name") == (dsa ? "dsa_context_module" : "mla_context_module");
      if (native_heads % heads != 0) {
        ++skipped;
        continue;
      }
      kvplan::KvScheme scheme;
      scheme.kv_dtype = at("kv_cache_dtype") == "fp8" ? kvplan::DType::kFp8E4M3 : kvplan::DType::kBF16;
      const kvplan::Parallelism parallel{native_heads / heads, 1};
      const kvplan::KvLayout layout = kvplan::build_kv_layout(model, scheme, parallel);
      kvplan::StepShapeBuilder b(layout);
      for (int i = 0; i < batch; ++i) {
        if (prefill) {
          b.add_prefill(dsa ? step : 0, isl, true);  // DSA context rows: step = cached prefix (README §7a)
        } else {
          b.add_decode(step - 1);  // step counts the new token (README §6c)
        }
      }
      kvplan::StepOpsOptions options;
      options.engine = kvplan::Engine::kVllm;
      if (dsa) {  // 128x128 block-scaled fp8 linear layers, at the fp8 rate (DeepGEMM)
        options.weights.quant = kvplan::quantization_from_flag("fp8-block", 128);
        options.gemm_dtype = kvplan::DType::kFp8E4M3;
      }
      const kvplan::StepOps ops = kvplan::build_step_ops(model, layout, parallel, b.shape(), options);
      const kvplan::StepLayerType& type = ops.types.at(0);
      double predicted_ns = 0;
      for (int i = type.first_op; i < type.end_op; ++i) {
        const kvplan::StepOp& op = ops.ops[static_cast<size_t>(i)];
        if (module_ops.count(op.name) == 0) continue;
        predicted_ns += kvplan::op_kernel_ns(profile.at(op.op_class), gpu, op);
      }
      // DSA context rows ran eager: small ones sit on a host floor (README §7a)
      const std::string phase = !prefill ? "decode"
                                : !dsa   ? "prefill"
                                : int64_t{batch} * isl >= 8192 ? "prefill>=8k tok (eager)"
                                                               : "prefill<8k tok (eager)";
      const std::string key = fmt::format("{}|{}|{}|{}", gpu_id, phase, at("kernel_source"), at("kv_cache_dtype"));
      Line& l = lines[key];
      l.abs_err.push_back(std::abs(predicted_ns / measured_ns - 1));
      l.signed_err.push_back(predicted_ns / measured_ns - 1);
    }
    if (markdown) {
      std::printf("| GPU | phase | vLLM backend | KV | rows | median | p90 | median signed |\n|---|---|---|---|---|---|---|---|\n");
    } else {
      std::printf("%-10s %-24s %-22s %-9s %6s %8s %8s %14s\n", "gpu", "phase", "backend", "kv", "rows", "median", "p90",
                  "median signed");
    }
    for (auto& [key, l] : lines) {
      std::vector<std::string> k;
      std::stringstream ss(key);
      std::string part;
      while (std::getline(ss, part, '|')) k.push_back(part);
      std::vector<double> s = l.signed_err;
      std::sort(s.begin(), s.end());
      const double med_signed = s[s.size() / 2];
      const cal::ErrorStats e = cal::error_stats(l.abs_err);
      if (markdown) {
        std::printf("| %s | %s | %s | %s | %zu | %.1f%% | %.1f%% | %+.1f%% |\n", k[0].c_str(), k[1].c_str(),
                    k[2].c_str(), k[3].c_str(), l.abs_err.size(), e.median * 100, e.p90 * 100, med_signed * 100);
      } else {
        std::printf("%-10s %-24s %-22s %-9s %6zu %7.1f%% %7.1f%% %13.1f%%\n", k[0].c_str(), k[1].c_str(), k[2].c_str(),
                    k[3].c_str(), l.abs_err.size(), e.median * 100, e.p90 * 100, med_signed * 100);
      }
    }
    std::fprintf(stderr, "%lld row(s) not checked (fp8-block / nvfp4 linear layers, or a head count that is not 128/TP)\n",
                 static_cast<long long>(skipped));
  } catch (const kvplan::ConfigError& e) {
    std::fprintf(stderr, "kvplan_validate_mla_module: %s\n", e.what());
    return 2;
  }
  return 0;
}
