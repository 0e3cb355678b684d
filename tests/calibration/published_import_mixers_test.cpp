// The section 6 readers of published_import_mixers.cpp on small hand-made tables: the MLA decode
// attends step + 1 tokens of the latent cache, repeated measurement passes keep the first, Gated
// DeltaNet's two kernel rows become one row with their summed time, a Mamba-2 shape measured for
// two models is imported once, vLLM's eager all-reduce rows are left out, and the GLM-5 DSA kernel
// tables keep their context rows and measured top-k rows only.
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "kvplan/calibration/published_import.h"
#include "kvplan/calibration/row_ops.h"
#include "kvplan/core/error.h"

namespace kvplan::calibration {
namespace {

namespace fs = std::filesystem;

std::string write(const std::string& name, const std::string& text) {
  const fs::path dir = fs::path(::testing::TempDir()) / ("kvplan_mixers_" + std::to_string(getpid()));
  fs::create_directories(dir);
  std::ofstream(dir / name) << text;
  return (dir / name).string();
}

// The MLA attention table (README §6d) with these data rows under its header.
std::string write_mla_attention(const std::string& rows) {
  return write("aiconfigurator_mla_attention_sglang_trtllm_h100_h200_b200.csv",
               "gpu,framework,version,op_name,kernel_source,mla_dtype,kv_cache_dtype,num_heads,batch_size,isl,"
               "tp_size,step,latency\n" +
                   rows);
}

TEST(PublishedImportMixers, MlaDecodeReadsTheLatentOfStepPlusOneTokens) {
  const std::string path = write_mla_attention(
      "h200_sxm,SGLang,0.5.14,mla_generation,flash_attention,bfloat16,fp8,16,4,1,8,1023,0.02\n"
      "h200_sxm,SGLang,0.5.14,mla_generation,flash_attention,bfloat16,fp8,16,4,1,8,1023,0.03\n"  // second pass
      "h200_sxm,TRTLLM,1.3.0rc20,mla_context,default,bfloat16,bfloat16,128,2,100,1,0,0.05\n");
  const PublishedTables t = read_published_table(path);
  ASSERT_EQ(t.runs.size(), 2u);  // SGLang generation, TRT-LLM context
  ASSERT_EQ(t.runs[0].rows.size(), 1u);  // the repeated pass is not imported
  const Measurement& m = t.runs[0].rows[0];
  EXPECT_EQ(m.op_class, "mla_decode");
  EXPECT_DOUBLE_EQ(m.median_ns, 20000.0);  // the first pass
  // 4 x 16 heads x (2 x 512 + 64) x 2 B of queries / outputs + 4 x 1024 tokens x 576 B of fp8 latent
  EXPECT_DOUBLE_EQ(m.bytes, 4.0 * 16 * 1088 * 2 + 4.0 * 1024 * 576);
  const StepOp op = row_op(m);
  EXPECT_STREQ(op.grid_variant, "sglang_fp8");
  EXPECT_DOUBLE_EQ(op.shape.v[1], 1024.0);
  EXPECT_EQ(t.runs[0].info.host, "published: aiconfigurator, SGLang 0.5.14");
  const Measurement& c = t.runs[1].rows.at(0);
  EXPECT_EQ(c.op_class, "mla_prefill");
  // 2 x 5050 causal pairs x 128 heads x (128 + 64 + 128) x 2 FLOPs
  EXPECT_DOUBLE_EQ(c.flops, 2.0 * 2 * 5050 * 128 * 320);
  EXPECT_STREQ(row_op(c).grid_variant, "trtllm_bf16");
}

TEST(PublishedImportMixers, SglangHopperContextRowsAreTheAbsorbedForm) {
  // SGLang's collector runs FA3 on Hopper with head_dim 576, v_head_dim 512 and one KV head, context
  // rows included; its B200 backend (trtllm_mla) runs the per-head form, as TensorRT-LLM's does.
  const std::string path = write_mla_attention(
      "h200_sxm,SGLang,0.5.14,mla_context,flash_attention,bfloat16,bfloat16,16,2,100,8,0,0.04\n"
      "b200_sxm,SGLang,0.5.14,mla_context,trtllm_mla,bfloat16,bfloat16,16,2,100,8,0,0.03\n");
  const PublishedTables t = read_published_table(path);
  ASSERT_EQ(t.runs.size(), 2u);
  const Measurement& h = t.runs[0].rows.at(0);
  EXPECT_EQ(h.op_class, "mla_prefill");
  // 2 sequences x 5,050 causal pairs x 16 heads x (2 x 512 + 64) x 2 FLOPs
  EXPECT_DOUBLE_EQ(h.flops, 2.0 * 2 * 5050 * 16 * 1088);
  // queries and outputs 200 tokens x 16 heads x 1,088 x 2 B + the 200 tokens' latent x 576 x 2 B
  EXPECT_DOUBLE_EQ(h.bytes, 200.0 * 16 * 1088 * 2 + 200.0 * 576 * 2);
  const StepOp ho = row_op(h);  // the stored parameters rebuild the same form
  EXPECT_DOUBLE_EQ(ho.flops, h.flops);
  EXPECT_STREQ(ho.grid_variant, "sglang_bf16");
  const Measurement& b = t.runs[1].rows.at(0);
  EXPECT_DOUBLE_EQ(b.flops, 2.0 * 2 * 5050 * 16 * 320);  // (128 + 64 + 128) per head
  EXPECT_DOUBLE_EQ(row_op(b).flops, b.flops);
}

TEST(PublishedImportMixers, GatedDeltaNetSumsItsTwoKernels) {
  const std::string head =
      "gpu,framework,version,op_name,kernel_source,phase,batch_size,seq_len,num_tokens,d_model,d_conv,num_k_heads,"
      "head_k_dim,num_v_heads,head_v_dim,model_name,latency\n";
  const std::string path = write("aiconfigurator_gdn_vllm_h100_h200_b200.csv",
                                 head +
                                     "h100_sxm,vLLM,0.24.0,gdn,causal_conv1d_update,generation,8,1,8,2048,4,16,128,32,128,A,0.002\n"
                                     "h100_sxm,vLLM,0.24.0,gdn,fused_recurrent_gated_delta_rule_packed_decode,generation,8,1,8,"
                                     "2048,4,16,128,32,128,A,0.005\n"
                                     // the same per-GPU shape for another model: imported once
                                     "h100_sxm,vLLM,0.24.0,gdn,causal_conv1d_update,generation,8,1,8,4096,4,16,128,32,128,B,0.0021\n"
                                     "h100_sxm,vLLM,0.24.0,gdn,fused_recurrent_gated_delta_rule_packed_decode,generation,8,1,8,"
                                     "4096,4,16,128,32,128,B,0.0052\n"
                                     // a shape with one kernel only: left out
                                     "h100_sxm,vLLM,0.24.0,gdn,causal_conv1d_fn,context,1,64,64,2048,4,16,128,32,128,A,0.003\n");
  const PublishedTables t = read_published_table(path);
  ASSERT_EQ(t.runs.size(), 1u);
  ASSERT_EQ(t.runs[0].rows.size(), 1u);
  const Measurement& m = t.runs[0].rows[0];
  EXPECT_EQ(m.op_class, "gated_deltanet");
  EXPECT_NEAR(m.median_ns, 7000.0, 1e-6);  // 2 us conv1d update + 5 us recurrent update
  // state: 32 x 128 x 128 x 4 B fp32 + 3 x (2 x 16 x 128 + 32 x 128) x 2 B conv = 2,146,304 B per sequence
  const double channels = 2.0 * 16 * 128 + 32 * 128;
  const double state = 32.0 * 128 * 128 * 4 + 3 * channels * 2;
  EXPECT_DOUBLE_EQ(m.bytes, 2.0 * 8 * state + 8.0 * (2 * 16 * 128 + 2 * 32 * 128) * 2 + 2.0 * 8 * channels * 2);
  EXPECT_STREQ(row_op(m).grid_variant, "decode");
  EXPECT_EQ(t.notes.size(), 1u);
}

// README §7e: SGLang's fla Triton KDA kernels summed per shape (the fused 12-head decode alone);
// the vLLM preview's FlashKDA rows and the speculative verify rows are left out.
TEST(PublishedImportMixers, KimiDeltaSumsSglangKernelsOnly) {
  const std::string head =
      "gpu,framework,version,op_name,kernel_source,phase,batch_size,seq_len,num_tokens,d_model,d_conv,num_k_heads,"
      "head_k_dim,num_v_heads,head_v_dim,model_name,latency\n";
  const std::string path = write(
      "aiconfigurator_kda_h100_h200_b200.csv",
      head +
          "h100_sxm,SGLang,0.5.16,kda,causal_conv1d_update,generation,8,1,8,7168,4,24,128,24,128,K3,0.002\n"
          "h100_sxm,SGLang,0.5.16,kda,fused_recurrent_kda_packed_decode,generation,8,1,8,7168,4,24,128,24,128,K3,0.006\n"
          "h100_sxm,SGLang,0.5.16,kda,kda_fused_decode,generation,8,1,8,7168,4,12,128,12,128,K3,0.004\n"
          "h100_sxm,SGLang,0.5.16,kda,causal_conv1d_update,verify,8,2,16,7168,4,24,128,24,128,K3,0.003\n"
          "h100_sxm,VLLM,0.1.dev19262,kda,fused_kda_decode,generation,8,1,8,7168,4,24,128,24,128,K3,0.005\n"
          // a context shape with one of its two kernels: left out
          "h100_sxm,SGLang,0.5.16,kda,chunk_kda,context,1,64,64,7168,4,24,128,24,128,K3,0.01\n");
  const PublishedTables t = read_published_table(path);
  ASSERT_EQ(t.runs.size(), 1u);
  ASSERT_EQ(t.runs[0].rows.size(), 2u);
  const Measurement& pair = t.runs[0].rows[0];
  EXPECT_EQ(pair.op_class, "kimi_delta");
  EXPECT_NEAR(pair.median_ns, 8000.0, 1e-6);  // 2 us conv update + 6 us recurrent update
  // state: 24 x 128 x 128 x 4 B fp32 + 3 x 24 x (2 x 128 + 128) x 2 B conv windows
  const double channels = 24.0 * (2 * 128 + 128);
  const double state = 24.0 * 128 * 128 * 4 + 3 * channels * 2;
  // 8 tokens: 2·8·state + 8 x 24 x (3 x 128 + 2 x 128) x 2 (q, k, g, v in; o out) + 2 x 8 x channels x 2
  EXPECT_DOUBLE_EQ(pair.bytes, 2.0 * 8 * state + 8.0 * 24 * (3 * 128 + 2 * 128) * 2 + 2.0 * 8 * channels * 2);
  EXPECT_DOUBLE_EQ(pair.flops, 8.0 * 24 * 7 * 128 * 128 + 2.0 * 8 * channels * 4);
  EXPECT_STREQ(row_op(pair).grid_variant, "decode");
  EXPECT_NEAR(t.runs[0].rows[1].median_ns, 4000.0, 1e-6);  // the fused 12-head kernel alone
  ASSERT_EQ(t.notes.size(), 1u);
  EXPECT_NE(t.notes[0].find("1 vLLM preview row(s) (FlashKDA) and 1 speculative verify row(s)"), std::string::npos)
      << t.notes[0];
  EXPECT_NE(t.notes[0].find("1 shape(s) without all their kernels"), std::string::npos) << t.notes[0];
}

// DeepSeek-V4's module rows: the geometry follows from num_heads x tp_size (64: V4-Flash, 128: V4-Pro),
// the shape from batch, isl and step; a decode row's step is the past without the new token.
TEST(PublishedImportMixers, DeepseekV4ModulesAndHyperConnections) {
  const std::string head =
      "gpu,framework,version,op_name,kernel_source,model,architecture,mla_dtype,kv_cache_dtype,gemm_type,num_heads,"
      "batch_size,isl,tp_size,step,compress_ratio,latency\n";
  const std::string path = write(
      "aiconfigurator_dsv4_attention_vllm_h100_h200_b200.csv",
      head +
          "h200_sxm,VLLM,0.24.0,dsv4_csa_context_module,FLASHMLA_SPARSE_DSV4,x/Flash,DeepseekV4ForCausalLM,bfloat16,"
          "fp8,fp8_block,8,1,2048,8,0,4,0.6148\n"
          "h200_sxm,VLLM,0.24.0,dsv4_hca_generation_module,FLASHMLA_SPARSE_DSV4,x/Pro,DeepseekV4ForCausalLM,bfloat16,"
          "fp8,fp8_block,16,64,1,8,4096,128,0.0611\n");
  const PublishedTables t = read_published_table(path);
  ASSERT_EQ(t.runs.size(), 2u);  // one run per parquet table
  const Measurement& csa = t.runs[0].rows[0];
  EXPECT_EQ(csa.op_class, "dsv4_attention");
  EXPECT_NEAR(csa.median_ns, 614800.0, 1e-6);
  const StepOp a = row_op(csa);
  EXPECT_STREQ(a.grid_variant, "flash_csa_prefill");
  EXPECT_EQ(a.shape.dims, 4);
  EXPECT_DOUBLE_EQ(a.shape.v[1], 2048);
  const StepOp b = row_op(t.runs[1].rows[0]);
  EXPECT_STREQ(b.grid_variant, "pro_hca_decode");  // 16 heads x TP 8 = 128: V4-Pro
  EXPECT_DOUBLE_EQ(b.shape.v[0], 64);
  EXPECT_DOUBLE_EQ(b.shape.v[1], 4096);
  // a row whose geometry is neither model's is refused, naming the column
  const std::string bad = write("aiconfigurator_dsv4_attention_vllm_h100_h200_b200.csv",
                                head + "h200_sxm,VLLM,0.24.0,dsv4_csa_context_module,K,x,DeepseekV4ForCausalLM,bfloat16,"
                                       "fp8,fp8_block,48,1,64,1,0,4,0.1\n");
  EXPECT_THROW(read_published_table(bad), ConfigError);

  const std::string mhc = write("aiconfigurator_mhc_vllm_h100_h200_b200.csv",
                                "gpu,framework,version,op_name,kernel_source,architecture,num_tokens,num_sites,hc_mult,"
                                "hidden_size,sinkhorn_iters,latency\n"
                                "h200_sxm,VLLM,0.24.0,pre,k,DeepseekV4ForCausalLM,2048,2,4,4096,20,0.0931\n");
  const PublishedTables m = read_published_table(mhc);
  ASSERT_EQ(m.runs.size(), 1u);
  const Measurement& pre = m.runs[0].rows[0];
  EXPECT_EQ(pre.op_class, "mhc");
  // both sites: 2 x 2 x 2,048 x (2 + 4) x 4 x 4 x 4,096 FLOPs; 2 x (2,048 x 5 x 4,096 x 2 + 24 x 16,384 x 4) B
  EXPECT_DOUBLE_EQ(pre.flops, 2.0 * 2 * 2048 * 24 * 4 * 4096);
  EXPECT_DOUBLE_EQ(pre.bytes, 2.0 * (2048.0 * 5 * 4096 * 2 + 24.0 * 16384 * 4));
}

// MiniMax-M3's sparse attention module rows (README §7d): KV heads max(1, heads / 16); a decode row's
// step is the tokens cached before the new one. FLOPs and bytes by hand from msa_attention_op's formula.
TEST(PublishedImportMixers, MiniMaxSparseAttentionModules) {
  const std::string head =
      "gpu,framework,version,op_name,kernel_source,model,architecture,mla_dtype,kv_cache_dtype,gemm_type,num_heads,"
      "batch_size,isl,tp_size,step,latency\n";
  const std::string path =
      write("aiconfigurator_msa_module_vllm_h100_h200_b200.csv",
            head +
                "h100_sxm,VLLM,0.24.0,msa_context_module,MiniMaxM3SparseTritonImpl,MiniMaxAI/MiniMax-M3,"
                "MiniMaxM3ForCausalLM,bfloat16,bfloat16,fp8_block,64,1,2048,1,0,1.5\n"
                "h200_sxm,VLLM,0.24.0,msa_generation_module,MiniMaxM3SparseTritonImpl,MiniMaxAI/MiniMax-M3,"
                "MiniMaxM3ForCausalLM,bfloat16,fp8,fp8_block,8,64,1,1,131071,0.6\n");
  const PublishedTables t = read_published_table(path);
  ASSERT_EQ(t.runs.size(), 2u);  // one run per (GPU, table)
  const Measurement& ctx = t.runs[0].rows[0];
  EXPECT_EQ(ctx.op_class, "msa_attention");
  EXPECT_NEAR(ctx.median_ns, 1.5e6, 1e-6);
  // 64 heads, 4 KV heads: projection parameters 6,144 x (8,192 + 1,024 + 512 + 128) + 8,192 x 6,144 = 110,886,912;
  // 2,048 tokens seeing 1,024 keys on average, all attended (under 16 x 128)
  EXPECT_DOUBLE_EQ(ctx.flops, 2.0 * 2048 * 110886912 + 2.0 * 2048 * 4 * 128 * 1024 + 4.0 * 2048 * 64 * 128 * 1024);
  const StepOp a = row_op(ctx);
  EXPECT_STREQ(a.grid_variant, "bf16_prefill");
  EXPECT_EQ(a.shape.dims, 4);
  EXPECT_DOUBLE_EQ(a.shape.v[1], 2048);
  EXPECT_DOUBLE_EQ(a.shape.v[3], 64);
  const Measurement& dec = t.runs[1].rows[0];
  // 8 heads, 1 KV head: parameters 6,144 x 1,536 + 1,024 x 6,144 = 15,728,640; each of 64 sequences sees
  // 131,072 keys, the indexer scores all of them, attention reads 2,048
  EXPECT_DOUBLE_EQ(dec.flops, 2.0 * 64 * 15728640 + 2.0 * 64 * 128 * 131072 + 4.0 * 64 * 8 * 128 * 2048);
  // weights (fp8) + activations 64 x 7,168 x 4 + per sequence every bf16 index key and 2,048 fp8 K/V
  // tokens + the inserts 64 x (256 + 256)
  EXPECT_DOUBLE_EQ(dec.bytes, 15728640.0 + 64.0 * 7168 * 4 + 64.0 * (131072.0 * 256 + 256.0 * 2048) + 64.0 * 512);
  const StepOp b = row_op(dec);
  EXPECT_STREQ(b.grid_variant, "fp8_decode");
  EXPECT_DOUBLE_EQ(b.shape.v[1], 131071);
  // a head count no TP <= 8 deployment of the model has is refused, naming the column
  const std::string bad = write("aiconfigurator_msa_module_vllm_h100_h200_b200.csv",
                                head + "h200_sxm,VLLM,0.24.0,msa_context_module,K,x,MiniMaxM3ForCausalLM,bfloat16,"
                                       "fp8,fp8_block,128,1,64,1,0,0.1\n");
  EXPECT_THROW(read_published_table(bad), ConfigError);
}

TEST(PublishedImportMixers, Mamba2SameShapeOnceAndVllmEagerLeftOut) {
  const std::string mamba = write(
      "aiconfigurator_mamba2_trtllm_h100_h200_b200.csv",
      "gpu,framework,version,op_name,kernel_source,phase,batch_size,seq_len,num_tokens,d_model,d_state,d_conv,nheads,"
      "head_dim,n_groups,chunk_size,model_name,latency\n"
      "b200_sxm,TRTLLM,1.3.0rc20,mamba2,causal_conv1d_fn,context,1,128,128,8192,128,4,64,64,8,256,X,0.01\n"
      "b200_sxm,TRTLLM,1.3.0rc20,mamba2,causal_conv1d_fn,context,1,128,128,2688,128,4,64,64,8,128,Y,0.011\n");
  const PublishedTables m = read_published_table(mamba);
  ASSERT_EQ(m.runs.size(), 1u);
  ASSERT_EQ(m.runs[0].rows.size(), 1u);  // 64 x 64 + 2 x 8 x 128 = 6144 channels, measured twice
  EXPECT_EQ(m.runs[0].rows[0].op_class, "conv1d");
  EXPECT_DOUBLE_EQ(m.runs[0].rows[0].flops, 2.0 * 128 * 6144 * 4);
  const std::string ar = write("aiconfigurator_custom_allreduce_vllm_h100_h200_b200.csv",
                               "gpu,framework,version,op_name,kernel_source,allreduce_dtype,num_gpus,message_size,latency,"
                               "backend\n"
                               "h200_sxm,vLLM,0.24.0,all_reduce,vLLM_custom_graph,bfloat16,4,4096,0.005,vllm_graph\n"
                               "h200_sxm,vLLM,0.24.0,all_reduce,vLLM_custom_eager,bfloat16,4,4096,0.02,vllm_eager\n");
  const PublishedTables a = read_published_table(ar);
  ASSERT_EQ(a.runs.size(), 1u);
  ASSERT_EQ(a.runs[0].rows.size(), 1u);
  const StepOp op = row_op(a.runs[0].rows[0]);
  EXPECT_STREQ(op.grid_variant, "vllm_all_reduce");
  EXPECT_DOUBLE_EQ(op.shape.v[0], 8192.0);  // 4096 bf16 ELEMENTS = 8192 B per rank
  EXPECT_DOUBLE_EQ(op.bytes, 2.0 * 3 / 4 * 8192);
}

// README §7c: the prefill kernels' decode rows, the all-tied 'flat' top-k rows and the latency-0
// top-k rows (everything selected) are not imported; a context row becomes the step's operator.
TEST(PublishedImportMixers, Glm5DsaKeepsContextRowsAndMeasuredTopK) {
  const std::string cols =
      "gpu,framework,version,op_name,kernel_source,model,architecture,mla_dtype,kv_cache_dtype,gemm_type,num_heads,"
      "batch_size,isl,tp_size,step,compress_ratio,latency";
  const std::string dsa = write(
      "aiconfigurator_glm5_dsa_sglang_h100_h200_b200.csv",
      cols + "\n"
             "h200_sxm,SGLang,kernel-level,glm5_dsa_attn_module,flash_mla_sparse_fwd,zai-org/GLM-5,GlmMoeDsaForCausalLM,"
             "bfloat16,fp8_e4m3,fp8_block,64,2,4096,1,0,1,1.5\n"
             "h200_sxm,SGLang,kernel-level,glm5_dsa_attn_module,flash_mla_sparse_fwd,zai-org/GLM-5,GlmMoeDsaForCausalLM,"
             "bfloat16,fp8_e4m3,fp8_block,64,8,1,1,4095,1,0.06\n"  // decode row of the prefill kernel
             "h200_sxm,SGLang,kernel-level,glm5_mqa_logits_module,fp8_mqa_logits,zai-org/GLM-5,GlmMoeDsaForCausalLM,"
             "fp8_e4m3,fp8_e4m3,fp8_block,64,1,100,1,0,1,0.01\n");
  const PublishedTables t = read_published_table(dsa);
  ASSERT_EQ(t.runs.size(), 2u);  // attention, indexer
  const Measurement& a = t.runs[0].rows.at(0);
  EXPECT_EQ(t.runs[0].rows.size(), 1u);
  EXPECT_EQ(a.op_class, "dsa_attention");
  // 2 x (2048 x 2049 / 2 + 2048 x 2048) sparse pairs x 64 heads x 1,088 x 2 FLOPs
  const double sparse = 2.0 * (2048.0 * 2049 / 2 + 2048.0 * 2048);
  EXPECT_DOUBLE_EQ(a.flops, 2.0 * sparse * 64 * 1088);
  EXPECT_DOUBLE_EQ(a.bytes, sparse * 1152 + 8192.0 * 64 * 1088 * 2);
  EXPECT_STREQ(row_op(a).grid_variant, "prefill");
  const Measurement& ix = t.runs[1].rows.at(0);
  EXPECT_EQ(ix.op_class, "dsa_indexer");
  EXPECT_DOUBLE_EQ(ix.flops, 2.0 * 5050 * 32 * 128);  // 5,050 causal pairs, 32 indexer heads x 128
  EXPECT_DOUBLE_EQ(row_op(ix).flops, ix.flops);

  const std::string topk = write(
      "aiconfigurator_glm5_topk_sglang_h100_h200_b200.csv",
      cols + ",score_mode\n"
             "b200_sxm,SGLang,kernel-level,glm5_topk_module,fast_topk_transform_fused,nvidia/GLM-5.2-NVFP4,"
             "GlmMoeDsaForCausalLM,fp8_e4m3,fp8_e4m3,fp8_block,64,4,1,1,1000,1,0,top_last\n"  // <= 2048: not timed
             "b200_sxm,SGLang,kernel-level,glm5_topk_module,fast_topk_transform_fused,nvidia/GLM-5.2-NVFP4,"
             "GlmMoeDsaForCausalLM,fp8_e4m3,fp8_e4m3,fp8_block,64,4,1,1,8191,1,0.02,flat\n"
             "b200_sxm,SGLang,kernel-level,glm5_topk_module,fast_topk_transform_fused,nvidia/GLM-5.2-NVFP4,"
             "GlmMoeDsaForCausalLM,fp8_e4m3,fp8_e4m3,fp8_block,64,4,1,1,8191,1,0.01,top_last\n");
  const PublishedTables k = read_published_table(topk);
  ASSERT_EQ(k.runs.size(), 1u);
  ASSERT_EQ(k.runs[0].rows.size(), 1u);
  const Measurement& m = k.runs[0].rows[0];
  EXPECT_EQ(m.op_class, "dsa_topk");
  EXPECT_DOUBLE_EQ(m.median_ns, 10000.0);
  // 4 sequences x 8,192 logits of 4 B read, 4 x 2,048 int32 indices written
  EXPECT_DOUBLE_EQ(m.bytes, 4.0 * 4 * 8192 + 4.0 * 4 * 2048);
  EXPECT_STREQ(row_op(m).grid_variant, "decode");
  ASSERT_FALSE(k.notes.empty());
  EXPECT_NE(k.notes.back().find("1 'flat' top-k row(s)"), std::string::npos) << k.notes.back();
}

}  // namespace
}  // namespace kvplan::calibration
