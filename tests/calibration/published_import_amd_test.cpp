// published_import_amd.cpp on a small hand-made copy of the Azure guide's table: which rows are
// imported and which are left out (with a note), each row's time from the printed rate by the
// harness's own formula (worked by hand below), the provenance of the runs, malformed input, the
// "published (...)" label of the fit, and the shipped mi300x profile (which classes are published,
// which stay datasheet).
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>

#include <gtest/gtest.h>

#include "kvplan/calibration/fit_run.h"
#include "kvplan/calibration/published_import.h"
#include "kvplan/core/default_profile.h"
#include "kvplan/core/error.h"
#include "kvplan/core/presets.h"
#include "kvplan/core/published_profiles.h"

namespace kvplan::calibration {
namespace {

namespace fs = std::filesystem;

constexpr const char* kName = "azure_ai_benchmarking_guide_microbench.csv";
constexpr const char* kHeader = "gpu,azure_vm,source_repo,source_path,source_commit,software,benchmark,dtype,params,value,unit,notes\n";
constexpr const char* kNew = "AMD Instinct MI300X,ND MI300X v5,yosoyjay/AI-benchmarking-guide (fork),Azure_Results/ND_MI300X_v5_results.md,"
                             "a8263ef1e16a3b8811f8e3c59fab9045f016dee8,ROCm 6.8.5; RCCL 2.22.3-develop; HIP 6.2.41134,";
constexpr const char* kOld = "AMD Instinct MI300X,ND MI300X v5,yosoyjay/AI-benchmarking-guide (fork),Azure_Results/ND_MI300X_v5_results.md,"
                             "fa25d56569f790a54d9908c7f0395063065a8bd1,ROCm 6.8.1; RCCL 2.22.3-develop; HIP 6.2.41133,";

std::string write_table(const std::string& body) {
  static int counter = 0;
  const fs::path dir = fs::path(::testing::TempDir()) / ("kvplan_azure_" + std::to_string(getpid()) + "_" +
                                                         std::to_string(counter++));
  fs::create_directories(dir);
  std::ofstream(dir / kName) << kHeader << body;
  return (dir / kName).string();
}

std::string table() {
  std::string t;
  t += "NVIDIA H100 80GB HBM3,ND H100 v5,Azure/AI-benchmarking-guide,x.md,8fd0c6e1bd0f853ef8f0500a3640a7d80a2a92ef,CUDA 12.5,"
       "gemm_cublaslt,fp8,\"m=1024,n=1024,k=1024\",500,TFLOP/s,\n";
  t += std::string(kNew) + "gemm_hipblaslt,fp8,\"m=4096,n=4096,k=4096\",1085.4,TFLOP/s,\n";
  t += std::string(kNew) + "gemm_hipblaslt,fp8,\"m=1024,n=2145,k=1024\",396.2,TFLOP/s,\n";
  t += std::string(kOld) + "gemm_hipblaslt,fp8,\"m=4096,n=4096,k=4096\",955.17,TFLOP/s,\n";
  t += std::string(kNew) + "hbm_bandwidth_babelstream_hip,,Triad,4.10,TB/s,\n";
  t += std::string(kNew) + "hbm_bandwidth_babelstream_hip,,Copy,4.15,TB/s,\n";
  t += std::string(kNew) + "hbm_bandwidth_babelstream_hip,,Dot,4.0,TB/s,\n";
  t += std::string(kOld) + "allreduce_busbw_8gpu,,message=1K,0.04,GB/s,\n";
  t += std::string(kOld) + "allreduce_busbw_8gpu,,message=132K,4.18,GB/s,\n";
  t += std::string(kOld) + "allreduce_busbw_8gpu,,message=8G,316.82,GB/s,\n";
  t += std::string(kNew) + "attention_prefill_fa2_benchmark,,\"Flash Attention 2.0; headdim=64, batch=2, seqlen=8192\",328.6,TFLOP/s,\n";
  t += std::string(kNew) + "transferbench,,Host to Device,55,GB/s,\n";
  return t;
}

bool has_note(const PublishedTables& t, const std::string& text) {
  for (const std::string& n : t.notes) {
    if (n.find(text) != std::string::npos) return true;
  }
  return false;
}

TEST(PublishedImportAmd, RowsTimesAndProvenance) {
  const PublishedTables t = read_published_table(write_table(table()));
  ASSERT_EQ(t.runs.size(), 3u);  // hipBLASLt and BabelStream of the newer version, RCCL of the older
  for (const PublishedRun& r : t.runs) {
    EXPECT_EQ(r.gpu_preset, "mi300x");
    EXPECT_EQ(r.info.gpu_name, "AMD Instinct MI300X");
    EXPECT_EQ(r.info.mode, "published");
  }
  const PublishedRun& gemm = t.runs[0];
  EXPECT_EQ(gemm.info.host, "published: Azure AI benchmarking guide ND MI300X v5, hipBLASLt fp8, ROCm 6.8.5");
  EXPECT_NE(gemm.info.gpu_uuid.find("Azure_Results/ND_MI300X_v5_results.md @ a8263ef1e16a"), std::string::npos)
      << gemm.info.gpu_uuid;
  ASSERT_EQ(gemm.rows.size(), 2u);
  EXPECT_EQ(gemm.rows[0].kernel, "azure_hipblaslt_fp8");
  EXPECT_EQ(gemm.rows[0].op_class, "gemm");
  EXPECT_EQ(gemm.rows[0].params_json, R"({"dtype":"fp8_e4m3","k":4096,"m":4096,"n":4096})");
  // 2·4096³ = 137,438,953,472 FLOPs at 1,085.4 TFLOP/s: 126.625 us.
  EXPECT_NEAR(gemm.rows[0].median_ns, 126625.2, 0.1);
  EXPECT_DOUBLE_EQ(gemm.rows[0].flops, 2.0 * 4096 * 4096 * 4096);
  // 2·1024·2145·1024 = 4,498,391,040 FLOPs at 396.2 TFLOP/s: 11.354 us.
  EXPECT_NEAR(gemm.rows[1].median_ns, 11353.8, 0.1);

  const PublishedRun& stream = t.runs[1];
  EXPECT_EQ(stream.info.host, "published: Azure AI benchmarking guide ND MI300X v5, BabelStream, ROCm 6.8.5");
  ASSERT_EQ(stream.rows.size(), 2u);  // Triad, Copy; Dot is a reduction
  EXPECT_EQ(stream.rows[0].kernel, "azure_babelstream_triad");
  EXPECT_EQ(stream.rows[0].op_class, "elementwise");
  // Triad: 3 double arrays of 1,308,622,848 elements = 31,406,948,352 B at 4.10 TB/s: 7.660231 ms.
  EXPECT_DOUBLE_EQ(stream.rows[0].bytes, 31406948352.0);
  EXPECT_NEAR(stream.rows[0].median_ns, 7660231.3, 1.0);
  // Copy: 2 arrays = 20,937,965,568 B at 4.15 TB/s: 5.045293 ms.
  EXPECT_DOUBLE_EQ(stream.rows[1].bytes, 20937965568.0);
  EXPECT_NEAR(stream.rows[1].median_ns, 5045292.9, 1.0);

  const PublishedRun& rccl = t.runs[2];
  EXPECT_EQ(rccl.info.host,
            "published: Azure AI benchmarking guide ND MI300X v5, rccl-tests 8 GPUs, RCCL 2.22.3-develop, ROCm 6.8.1");
  EXPECT_EQ(rccl.info.started_utc, "2025-02-28T20:05:36Z");
  ASSERT_EQ(rccl.rows.size(), 3u);
  EXPECT_EQ(rccl.rows[0].op_class, "collective");
  EXPECT_EQ(rccl.rows[0].params_json, R"({"bytes":1024,"collective":"all_reduce","ranks":8})");
  // 1 KiB: bus bytes 2·7/8·1024 = 1,792 at 0.04 GB/s: 44.8 us.
  EXPECT_DOUBLE_EQ(rccl.rows[0].bytes, 1792.0);
  EXPECT_NEAR(rccl.rows[0].median_ns, 44800.0, 1e-6);
  // "132K" is the harness's label of 8·2^14 = 131,072 B; "8G" of 8·2^30 = 8,589,934,592 B.
  EXPECT_EQ(rccl.rows[1].params_json, R"({"bytes":131072,"collective":"all_reduce","ranks":8})");
  EXPECT_NEAR(rccl.rows[2].median_ns, 1.75 * 8589934592.0 / 316.82e9 * 1e9, 1e-3);

  EXPECT_TRUE(has_note(t, "1 NVIDIA row(s)")) << t.notes.size();
  EXPECT_TRUE(has_note(t, "1 hipBLASLt row(s) of the older results version"));
  EXPECT_TRUE(has_note(t, "1 BabelStream Dot row(s)"));
  EXPECT_TRUE(has_note(t, "1 FlashAttention row(s)"));
  EXPECT_TRUE(has_note(t, "1 TransferBench row(s)"));
  // --gpu h100-sxm: no MI300X row is imported, and the note counts them.
  const PublishedTables other = read_published_table(write_table(table()), {"h100-sxm"});
  EXPECT_TRUE(other.runs.empty());
  EXPECT_TRUE(has_note(other, "row(s) of other GPUs than h100-sxm"));
}

TEST(PublishedImportAmd, MalformedRowsNameFileLineAndField) {
  auto error_of = [](const std::string& body) {
    try {
      read_published_table(write_table(body));
    } catch (const ConfigError& e) {
      return std::string(e.what());
    }
    return std::string();
  };
  std::string e = error_of(std::string(kOld) + "allreduce_busbw_8gpu,,message=3K,1.0,GB/s,\n");
  EXPECT_NE(e.find("line 2"), std::string::npos) << e;
  EXPECT_NE(e.find("'params'='message=3K'"), std::string::npos) << e;
  e = error_of(std::string(kNew) + "gemm_hipblaslt,fp8,\"m=4096,n=4096\",1085.4,TFLOP/s,\n");
  EXPECT_NE(e.find("m=<int>,n=<int>,k=<int>"), std::string::npos) << e;
  e = error_of(std::string(kNew) + "gemm_hipblaslt,bf16,\"m=4096,n=4096,k=4096\",600,TFLOP/s,\n");
  EXPECT_NE(e.find("'dtype'='bf16'"), std::string::npos) << e;
  e = error_of(std::string(kNew) + "gemm_hipblaslt,fp8,\"m=4096,n=4096,k=4096\",0,TFLOP/s,\n");
  EXPECT_NE(e.find("'value'"), std::string::npos) << e;
  e = error_of("AMD Instinct MI300X,v,r,p,0123456789012345678901234567890123456789,ROCm 7,gemm_hipblaslt,fp8,\"m=1,n=1,k=1\",1,TFLOP/s,\n");
  EXPECT_NE(e.find("'source_commit'"), std::string::npos) << e;
}

TEST(PublishedImportAmd, FittedClassesAreLabelledPublished) {
  const std::string path = write_table(table());
  CalibrationStore db = CalibrationStore::open(path + ".sqlite", OpenMode::kCreate);
  const PublishedImportResult r = import_published(db, fs::path(path).parent_path().string(), {"mi300x"});
  EXPECT_EQ(r.rows, 7);
  FitOptions options;
  options.min_points = 2;  // two rows per class here
  const RunFit f = fit_runs(db, {}, "mi300x", options);
  EXPECT_EQ(f.report.profile.at(OpClass::kGemm).source,
            "published (Azure AI benchmarking guide ND MI300X v5, hipBLASLt fp8, ROCm 6.8.5, AMD Instinct MI300X)");
  EXPECT_EQ(f.report.profile.at(OpClass::kCollective).source.rfind("published (Azure AI benchmarking guide", 0), 0u);
  EXPECT_EQ(f.report.profile.at(OpClass::kElementwise).source.rfind("published (Azure AI benchmarking guide", 0), 0u);
  // No attention rows: those classes are the datasheet's and say so.
  EXPECT_EQ(f.report.profile.at(OpClass::kAttentionDecode).source, "datasheet");
  EXPECT_EQ(f.report.profile.at(OpClass::kAttentionPrefill).source, "datasheet");
}

// The shipped profile (scripts/fit_published_profiles.sh): GEMM, all-reduce and elementwise from the
// Azure guide; attention, MoE and the rest datasheet. MI325X (same architecture) and MI355X (CDNA 4)
// take it by transfer; no NVIDIA GPU does (another vendor).
TEST(PublishedImportAmd, ShippedMi300xProfileAndItsTransfers) {
  const PerfProfile* p = published_profile("mi300x");
  ASSERT_NE(p, nullptr);
  for (OpClass c : {OpClass::kGemm, OpClass::kCollective, OpClass::kElementwise}) {
    EXPECT_EQ(p->at(c).source.rfind("published (Azure AI benchmarking guide ND MI300X v5, ", 0), 0u)
        << op_class_name(c) << ": " << p->at(c).source;
  }
  for (OpClass c : {OpClass::kAttentionPrefill, OpClass::kAttentionDecode, OpClass::kMoeGemm, OpClass::kKvWrite}) {
    EXPECT_EQ(p->at(c).source, "datasheet") << op_class_name(c);
  }
  const ProfileChoice mi325x = default_profile(resolve_gpu("mi325x"));
  EXPECT_EQ(mi325x.kind, "transferred");
  EXPECT_EQ(mi325x.from_gpu, "mi300x");
  EXPECT_EQ(mi325x.profile.at(OpClass::kGemm).source, "transferred (from mi300x)");
  EXPECT_EQ(mi325x.profile.at(OpClass::kAttentionDecode).source, "datasheet");
  const ProfileChoice mi355x = default_profile(resolve_gpu("mi355x"));
  EXPECT_EQ(mi355x.kind, "transferred");
  EXPECT_EQ(mi355x.from_gpu, "mi300x");
  EXPECT_NE(mi355x.summary.find("cdna3 -> cdna4"), std::string::npos) << mi355x.summary;
  EXPECT_NE(default_profile(resolve_gpu("h20")).from_gpu, "mi300x");
}

}  // namespace
}  // namespace kvplan::calibration
