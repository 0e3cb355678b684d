// published_import.h on small hand-made tables: runs and their provenance, shapes, FLOPs, bytes and
// times of each row, the kv_len conventions of the collector versions, the L40S L2 filter,
// malformed input named by file, line and field, and the "published (...)" label of a fit.
#include "kvplan/calibration/published_import.h"

#include <unistd.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <string>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "kvplan/calibration/fit_run.h"
#include "kvplan/calibration/row_ops.h"
#include "kvplan/core/error.h"
#include "kvplan/core/presets.h"

namespace kvplan::calibration {
namespace {

namespace fs = std::filesystem;

class Dir {
 public:
  Dir() : path_(fs::path(::testing::TempDir()) / ("kvplan_published_" + std::to_string(getpid()) + "_" +
                                                  std::to_string(counter_++))) {
    fs::remove_all(path_);
    fs::create_directories(path_);
  }
  ~Dir() { fs::remove_all(path_); }
  std::string write(const std::string& name, const std::string& text) const {
    std::ofstream(path_ / name) << text;
    return (path_ / name).string();
  }
  std::string path() const { return path_.string(); }

 private:
  static inline int counter_ = 0;
  fs::path path_;
};

const char* kGemm =
    "gpu,vllm_version,gemm_dtype,m,n,k,latency_ms\n"
    "h100_sxm,0.24.0,bfloat16,16,4096,4096,0.0155\n"
    "h100_sxm,0.24.0,fp8,16,4096,4096,0.0121\n"
    "h200_sxm,0.24.0,bfloat16,16,4096,4096,0.0150\n";

std::string error_of(const std::string& dir, const std::string& file) {
  try {
    read_published_table(dir + "/" + file);
  } catch (const ConfigError& e) {
    return e.what();
  }
  return "";
}

TEST(PublishedImport, GemmRowsRunsAndProvenance) {
  Dir d;
  const PublishedTables t = read_published_table(d.write("aiconfigurator_vllm_gemm_h100_h200.csv", kGemm));
  ASSERT_EQ(t.runs.size(), 2u);  // one run per (table, GPU, engine version)
  const PublishedRun& h100 = t.runs[0];
  EXPECT_EQ(h100.gpu_preset, "h100-sxm");
  EXPECT_EQ(h100.info.gpu_name, "NVIDIA H100 80GB HBM3");
  EXPECT_EQ(h100.info.mode, "published");
  EXPECT_EQ(h100.info.host, "published: aiconfigurator, vLLM 0.24.0");
  EXPECT_NE(h100.info.gpu_uuid.find("h100_sxm/gemm/vllm/0.24.0/gemm_perf.parquet (blob a5225c8185be"), std::string::npos)
      << h100.info.gpu_uuid;
  EXPECT_EQ(h100.info.started_utc, "2026-07-13T00:00:00Z");
  ASSERT_EQ(h100.rows.size(), 2u);
  const Measurement& bf16 = h100.rows[0];
  EXPECT_EQ(bf16.kernel, "aic_gemm_bf16");
  EXPECT_EQ(bf16.op_class, "gemm");
  EXPECT_EQ(bf16.params_json, R"({"dtype":"bf16","k":4096,"m":16,"n":4096})");
  EXPECT_DOUBLE_EQ(bf16.median_ns, 0.0155 * 1e6);
  EXPECT_DOUBLE_EQ(bf16.flops, 2.0 * 16 * 4096 * 4096);
  EXPECT_DOUBLE_EQ(bf16.bytes, 4096.0 * 4096 * 2 + 16.0 * 8192 * 2);  // bf16 weights + activations
  const Measurement& fp8 = h100.rows[1];
  EXPECT_EQ(fp8.params_json, R"({"dtype":"fp8_e4m3","k":4096,"m":16,"n":4096})");
  EXPECT_DOUBLE_EQ(fp8.bytes, 4096.0 * 4096 + 4 + 16.0 * 8192 * 2);  // 1-byte weights + fp32 scale
  EXPECT_EQ(t.runs[1].info.gpu_name, "NVIDIA H200");
  // --gpu keeps one GPU's rows and says how many it left out
  const PublishedTables only = read_published_table(d.path() + "/aiconfigurator_vllm_gemm_h100_h200.csv", {"h200"});
  ASSERT_EQ(only.runs.size(), 1u);
  EXPECT_EQ(only.runs[0].gpu_preset, "h200");
  ASSERT_EQ(only.notes.size(), 1u);
  EXPECT_NE(only.notes[0].find("2 row(s) of other GPUs than h200"), std::string::npos) << only.notes[0];
}

TEST(PublishedImport, DecodeKvLenConventionPerCollectorVersion) {
  Dir d;
  d.write("aiconfigurator_vllm_decode_attention_h100_h200.csv",
          "gpu,vllm_version,batch_size,step,kv_len,num_heads,num_kv_heads,kv_cache_dtype,latency_ms\n"
          "h100_sxm,0.24.0,32,4095,4096,32,8,bfloat16,0.09\n"
          "h100_sxm,0.24.0,32,4095,4096,32,8,fp8,0.06\n");
  d.write("aiconfigurator_vllm_decode_attention_a100_l40s.csv",
          "gpu,vllm_version,kernel_source,batch_size,step,kv_len,num_heads,num_kv_heads,kv_cache_dtype,latency_ms\n"
          "a100_sxm,0.14.0,vllm_flash_attn,8,1023,1023,32,8,bfloat16,0.05\n");
  const PublishedTables t = read_published_tables(d.path());
  ASSERT_EQ(t.runs.size(), 2u);  // files in name order: a100_l40s first
  const Measurement& a100 = t.runs[0].rows.at(0);
  EXPECT_EQ(t.runs[0].info.gpu_name, "NVIDIA A100-SXM4-80GB");
  EXPECT_EQ(t.runs[0].info.host, "published: aiconfigurator, vLLM 0.14.0");
  // 0.14.0: kv_len = step (1023 tokens attended)
  EXPECT_EQ(a100.params_json,
            R"({"batch":8,"head_dim":128,"kv_dtype":"bf16","kv_len":1023,"num_heads":32,"num_kv_heads":8,"src_step":1023})");
  EXPECT_DOUBLE_EQ(a100.bytes, 8.0 * 1023 * 2 * 8 * 128 * 2 + 8.0 * 32 * 256 * 2);
  // 0.24.0: kv_len = step + 1; fp8 KV is one byte per element
  const Measurement& fp8 = t.runs[1].rows.at(1);
  EXPECT_EQ(fp8.kernel, "aic_decode_vllm_flash_attn_fa3");
  EXPECT_DOUBLE_EQ(fp8.bytes, 32.0 * 4096 * 2 * 8 * 128 * 1 + 32.0 * 32 * 256 * 2);
  EXPECT_DOUBLE_EQ(fp8.flops, 2.0 * 32 * 4096 * 32 * 256);
  EXPECT_DOUBLE_EQ(fp8.median_ns, 60000);
  EXPECT_EQ(row_op(fp8).grid_dtype, DType::kFp8E4M3);

  // a 0.24.0 row with kv_len = step is refused, naming the field and the rule
  d.write("aiconfigurator_vllm_decode_attention_h100_h200.csv",
          "gpu,vllm_version,batch_size,step,kv_len,num_heads,num_kv_heads,kv_cache_dtype,latency_ms\n"
          "h100_sxm,0.24.0,32,4095,4095,32,8,bfloat16,0.09\n");
  EXPECT_EQ(error_of(d.path(), "aiconfigurator_vllm_decode_attention_h100_h200.csv"),
            "aiconfigurator_vllm_decode_attention_h100_h200.csv line 2: field 'kv_len'='4095' must be step + 1 = 4096 "
            "for the vLLM 0.24.0 collector (tokens attended per sequence)");
  // an unread collector version is refused
  d.write("aiconfigurator_vllm_decode_attention_h100_h200.csv",
          "gpu,vllm_version,batch_size,step,kv_len,num_heads,num_kv_heads,kv_cache_dtype,latency_ms\n"
          "h200_sxm,0.19.0,32,4095,4096,32,8,bfloat16,0.09\n");
  EXPECT_NE(error_of(d.path(), "aiconfigurator_vllm_decode_attention_h100_h200.csv")
                .find("line 2: field 'vllm_version'='0.19.0' is a collector version whose conventions kvplan has not "
                      "checked"),
            std::string::npos);
}

TEST(PublishedImport, L40sDecodeCellsThatFitInL2AreLeftOut) {
  Dir d;
  // KV read: 1·1024·2·8·128·2 = 4 MiB (in the 96 MB L2: left out); 1·64 tokens = 256 KiB (kept:
  // latency-bound); 64·4096 tokens = 1 GiB (kept).
  const PublishedTables t = read_published_table(
      d.write("aiconfigurator_vllm_decode_attention_a100_l40s.csv",
              "gpu,vllm_version,kernel_source,batch_size,step,kv_len,num_heads,num_kv_heads,kv_cache_dtype,latency_ms\n"
              "l40s,0.24.0,vllm_flash_attn_fa2,1,1023,1024,32,8,bfloat16,0.010\n"
              "l40s,0.24.0,vllm_flash_attn_fa2,1,63,64,32,8,bfloat16,0.008\n"
              "l40s,0.24.0,vllm_flash_attn_fa2,64,4095,4096,32,8,bfloat16,1.6\n"));
  ASSERT_EQ(t.runs.size(), 1u);
  EXPECT_EQ(t.runs[0].rows.size(), 2u);
  ASSERT_EQ(t.notes.size(), 1u);
  EXPECT_NE(t.notes[0].find("1 L40S row(s) whose KV (1 MiB to 96 MiB) fits in the L2 not imported"), std::string::npos)
      << t.notes[0];
}

TEST(PublishedImport, PrefillAllReduceAndVidurElementwise) {
  Dir d;
  d.write("aiconfigurator_vllm_prefill_attention_h100_h200.csv",
          "gpu,vllm_version,batch_size,isl,num_heads,num_kv_heads,kv_cache_dtype,latency_ms\n"
          "h100_sxm,0.24.0,2,1024,32,8,bfloat16,0.2\n");
  d.write("vidur_h100_allreduce.csv",
          "node,num_workers,size_fp16_elements,min_ms,median_ms,max_ms\n"
          "h100_dgx,8,2048,0.015,0.037,0.038\n"
          "h100_pairwise_nvlink,2,2048,0.015,0.020,0.038\n");
  d.write("vidur_gemm_shapes_derived.csv",
          "model,tp,op,gemm_m,gemm_n,gemm_k,n_head,n_kv_head,n_embd,n_expanded_embd,use_gated_mlp\n"
          "m/x,2,mlp_down_proj,num_tokens,4096,5504,32,8,4096,11008,True\n");
  d.write("vidur_mlp_block_ops_h100_a100.csv",
          "gpu,model,tp,num_tokens,source_row,emb_median_ms,input_layernorm_median_ms,attn_pre_proj_median_ms,"
          "attn_rope_median_ms,attn_post_proj_median_ms,post_attention_layernorm_median_ms,mlp_up_proj_median_ms,"
          "mlp_act_median_ms,mlp_down_proj_median_ms,add_median_ms\n"
          "a100,m/x,2,8,7,0.008,0.004,0.063,0.005,0.025,,0.111,0.008,0.061,0.002\n");
  const PublishedTables t = read_published_tables(d.path());
  ASSERT_EQ(t.runs.size(), 3u);
  const Measurement& prefill = t.runs[0].rows.at(0);
  EXPECT_EQ(prefill.op_class, "attention_prefill");
  EXPECT_DOUBLE_EQ(prefill.flops, 2.0 * 2 * (1024.0 * 1025 / 2) * 32 * 256);
  EXPECT_DOUBLE_EQ(prefill.bytes, 2048.0 * 32 * 256 * 2 + 2048.0 * 2 * 8 * 128 * 2);

  const PublishedRun& ar = t.runs[1];
  EXPECT_EQ(ar.info.gpu_name, "h100_dgx");
  EXPECT_EQ(ar.gpu_preset, "h100-sxm");
  ASSERT_EQ(ar.rows.size(), 1u);  // the NVLink-pair row is another topology
  EXPECT_EQ(ar.rows[0].params_json, R"({"bytes":4096,"ranks":8,"src_row":0})");
  EXPECT_DOUBLE_EQ(ar.rows[0].bytes, 2.0 * 7 / 8 * 4096);
  EXPECT_DOUBLE_EQ(ar.rows[0].median_ns, 37000);
  EXPECT_DOUBLE_EQ(ar.rows[0].min_ns, 15000);

  const PublishedRun& el = t.runs[2];
  EXPECT_EQ(el.gpu_preset, "a100-80gb");
  EXPECT_EQ(el.info.host, "published: vidur, sarathi-serve layers fp16");
  ASSERT_EQ(el.rows.size(), 4u);  // the empty post-attention norm cell is no row
  EXPECT_EQ(el.rows[0].kernel, "vidur_input_layernorm");
  EXPECT_DOUBLE_EQ(el.rows[0].bytes, 4.0 * 8 * 4096 * 2 + 4096 * 2);
  EXPECT_EQ(el.rows[1].kernel, "vidur_attn_rope");  // TP 2: 16 query and 4 KV heads of 128
  EXPECT_DOUBLE_EQ(el.rows[1].bytes, 2.0 * 8 * (16 + 4) * 128 * 2);
  EXPECT_EQ(el.rows[2].kernel, "vidur_mlp_act_mul");  // intermediate per GPU: k of mlp_down_proj
  EXPECT_DOUBLE_EQ(el.rows[2].bytes, 3.0 * 8 * 5504 * 2);
  EXPECT_EQ(el.rows[3].params_json, R"({"hidden":4096,"src_model":"m/x","src_row":7,"src_tp":2,"tokens":8})");
}

TEST(PublishedImport, MalformedRowsNameFileLineAndField) {
  Dir d;
  d.write("aiconfigurator_vllm_gemm_h100_h200.csv",
          "gpu,vllm_version,gemm_dtype,m,n,k,latency_ms\nh100_sxm,0.24.0,bfloat16,16,4096,4096,0.0155\n"
          "h100_sxm,0.24.0,bfloat16,16,4096,4096,abc\n");
  EXPECT_EQ(error_of(d.path(), "aiconfigurator_vllm_gemm_h100_h200.csv"),
            "aiconfigurator_vllm_gemm_h100_h200.csv line 3: field 'latency_ms'='abc' must be a number");
  d.write("aiconfigurator_vllm_gemm_h100_h200.csv",
          "gpu,vllm_version,gemm_dtype,m,n,k,latency_ms\nh100_sxm,0.24.0,bfloat16,-4,4096,4096,0.01\n");
  EXPECT_EQ(error_of(d.path(), "aiconfigurator_vllm_gemm_h100_h200.csv"),
            "aiconfigurator_vllm_gemm_h100_h200.csv line 2: field 'm'='-4' must be >= 1");
  d.write("aiconfigurator_vllm_gemm_h100_h200.csv",
          "gpu,vllm_version,gemm_dtype,m,n,k,latency_ms\nh100_sxm,0.24.0,fp8_block,16,4096,4096,0.01\n");
  EXPECT_NE(error_of(d.path(), "aiconfigurator_vllm_gemm_h100_h200.csv")
                .find("line 2: field 'gemm_dtype'='fp8_block' must be bfloat16 or fp8"),
            std::string::npos);
  d.write("aiconfigurator_vllm_gemm_h100_h200.csv", "gpu,vllm_version,gemm_dtype,m,n,k,latency_ms\nh100_sxm,0.24.0\n");
  EXPECT_EQ(error_of(d.path(), "aiconfigurator_vllm_gemm_h100_h200.csv"),
            "aiconfigurator_vllm_gemm_h100_h200.csv line 2: 2 fields, the header has 7 (every row must have one per "
            "column)");
  d.write("aiconfigurator_vllm_gemm_h100_h200.csv", "gpu,vllm_version,m,n,k,latency_ms\n");
  EXPECT_EQ(error_of(d.path(), "aiconfigurator_vllm_gemm_h100_h200.csv"),
            "aiconfigurator_vllm_gemm_h100_h200.csv line 1: column 'gemm_dtype' is missing (the header must name it)");
  d.write("aiconfigurator_vllm_gemm_h100_h200.csv",
          "gpu,vllm_version,gemm_dtype,m,n,k,latency_ms\nb200,0.24.0,bfloat16,16,4096,4096,0.01\n");
  EXPECT_NE(error_of(d.path(), "aiconfigurator_vllm_gemm_h100_h200.csv").find("field 'gpu'='b200'"), std::string::npos);
  EXPECT_THROW(read_published_table(d.write("other.csv", "a,b\n1,2\n")), ConfigError);
  Dir empty;
  EXPECT_THROW(read_published_tables(empty.path()), ConfigError);
}

// Rows written by the importer, fitted through the store: classes say "published (...)", never
// "measured", and the held-out error is stored.
TEST(PublishedImport, FittedClassesAreLabelledPublished) {
  Dir d;
  std::string gemm = "gpu,vllm_version,gemm_dtype,m,n,k,latency_ms\n";
  const GpuSpec gpu = resolve_gpu("h100-sxm");
  for (int m : {1, 4, 16, 64, 256, 1024, 4096}) {
    for (int n : {1024, 4096, 16384}) {
      for (int k : {1024, 4096, 8192}) {
        // 70% of bf16 peak with a 4 us latency, or 85% of bandwidth: a clean roofline
        const double c = 2.0 * m * n * k / (0.7 * gpu.peak_flops_bf16) + 4e-6;
        const double b = (2.0 * n * k + 2.0 * m * (n + k)) / (0.85 * gpu.memory_bandwidth_bytes_per_s) + 4e-6;
        gemm += "h100_sxm,0.24.0,bfloat16," + std::to_string(m) + "," + std::to_string(n) + "," + std::to_string(k) +
                "," + std::to_string(std::max(c, b) * 1e3) + "\n";
      }
    }
  }
  d.write("aiconfigurator_vllm_gemm_h100_h200.csv", gemm);
  CalibrationStore db = CalibrationStore::in_memory();
  const PublishedImportResult r = import_published(db, d.path(), {"h100-sxm"});
  ASSERT_EQ(r.run_ids.size(), 1u);
  EXPECT_EQ(r.rows, 63);
  const RunFit f = fit_runs(db, {}, "h100-sxm");
  const OpClassProfile& g = f.report.profile.at(OpClass::kGemm);
  EXPECT_EQ(g.source, "published (aiconfigurator, vLLM 0.24.0, NVIDIA H100 80GB HBM3)");
  EXPECT_EQ(g.source.find("measured"), std::string::npos);
  EXPECT_EQ(f.report.profile.at(OpClass::kAttentionDecode).source, "datasheet");
  EXPECT_EQ(f.report.profile.source_kind(), "mixed");
  ASSERT_EQ(f.report.classes.size(), 1u);
  EXPECT_GT(f.report.classes[0].heldout.rows, 0);
  EXPECT_GT(g.heldout_p90_rel_error, 0.0);
  EXPECT_LT(g.heldout_p90_rel_error, 0.05);  // a clean roofline is predicted on unseen shapes
  EXPECT_EQ(f.class_runs.at(OpClass::kGemm), std::to_string(r.run_ids[0]));
  // importing the same tables again adds new runs (published runs are data, not machines)
  EXPECT_EQ(import_published(db, d.path(), {"h100-sxm"}).run_ids.size(), 1u);
}

}  // namespace
}  // namespace kvplan::calibration
