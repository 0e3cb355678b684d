// The Azure AI benchmarking guide's MI300X microbenchmarks -> calibration runs (published_tables.h):
// hipBLASLt FP8 GEMMs, BabelStream HBM kernels and the 8-GPU RCCL all-reduce of one ND MI300X v5
// VM. Facts about the source (commits, harness settings, traps) are from data/measurements/README.md
// (section "Azure AI benchmarking guide") and the harness in the guide's repository.
//
// The file prints rates (TFLOP/s, TB/s, GB/s of bus bandwidth), not times. Each row's time is the
// harness's own rate formula inverted, with the sizes the harness ran:
//   GEMM        time = 2·m·n·k / TFLOP/s                (hipblaslt-bench's flop count)
//   BabelStream time = bytes moved / TB/s, bytes = k·8·1,308,622,848 (double arrays of the fork the
//               harness clones; k = 2 for Copy and Mul, 3 for Add and Triad; BabelStream's best run)
//   RCCL        time = 2·(n−1)/n · message / busbw      (rccl-tests' bus bandwidth, in place, n = 8)
// Left out, each with a note: the NVIDIA rows (those GPUs have tables measured inside vLLM), the
// MI300X GEMM and BabelStream rows of the older results version (one version per benchmark: the
// newer ROCm build is kept), BabelStream's Dot (a reduction, not an elementwise kernel), the
// FlashAttention row (which pass and mask it times is not stated) and TransferBench (one number per
// direction, transfer size not stated). Classes without rows (attention, MoE, KV write, ...) stay
// "datasheet" in the fitted profile.
#include <array>
#include <map>
#include <string>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "kvplan/calibration/row_ops.h"
#include "kvplan/core/error.h"
#include "published_tables.h"

namespace kvplan::calibration::internal {

namespace {

using Json = nlohmann::json;

constexpr const char* kAzureDevice = "AMD Instinct MI300X";
constexpr const char* kAzurePreset = "mi300x";
constexpr const char* kAzureResults = "Azure_Results/ND_MI300X_v5_results.md";
// The two versions of the results file the collection holds (README: both kept, by source_commit).
// The GEMM and BabelStream tables are read from the newer ROCm build; the RCCL table exists only in
// the older one (the newer version of the file has no RCCL rows).
constexpr const char* kAzureNewer = "a8263ef1e16a3b8811f8e3c59fab9045f016dee8";  // ROCm 6.8.5, HIP 6.2.41134
constexpr const char* kAzureOlder = "fa25d56569f790a54d9908c7f0395063065a8bd1";  // ROCm 6.8.1, HIP 6.2.41133
constexpr const char* kAzureOlderDate = "2025-02-28T20:05:36Z";                // the fork's commit fa25d56
constexpr const char* kAzureNewerDate = "not published (version held in a code index; newer ROCm build)";

// BabelStream fork cloned by the harness (Benchmarks/AMD/HBMBandwidth.py): gitaumark/BabelStream,
// src/main.cpp sets ARRAY_SIZE = 1,308,622,848 and runs double unless --float is given.
constexpr double kBabelStreamElements = 1308622848.0;
constexpr double kBabelStreamElementBytes = 8.0;
// BabelStream's kernels: arrays read or written per element (its own byte count) and FLOPs.
struct BabelKernel {
  const char* name;
  const char* kernel;
  int arrays;
  double flops_per_element;
};
constexpr BabelKernel kBabelKernels[] = {
    {"Copy", "copy", 2, 0}, {"Mul", "mul", 2, 1}, {"Add", "add", 3, 1}, {"Triad", "triad", 3, 2}};

// rccl-tests all_reduce_perf -b 8 -e 8G -f 2 -g 8 (Benchmarks/AMD/RCCLBandwidth.py): message i of the
// sweep is 8·2^i bytes, printed with the harness's own labels (RCCLBandwidth.py's list).
constexpr std::array<const char*, 31> kRcclLabels = {
    "8 ", "16 ", "32 ", "64 ", "128 ", "256 ", "512 ", "1K", "2K", "4K", "8K", "16K", "32K", "65K", "132K", "256K",
    "524K", "1M", "2M", "4M", "8M", "16M", "33M", "67M", "134M", "268M", "536M", "1G", "2G", "4G", "8G"};
constexpr int kRcclRanks = 8;

double rccl_bytes(const CsvReader& csv, std::string_view label) {
  for (size_t i = 0; i < kRcclLabels.size(); ++i) {
    if (label == kRcclLabels[i]) return 8.0 * static_cast<double>(int64_t{1} << i);
  }
  csv.fail("params", "must be message=<label> with a label of the harness's sweep 8 B .. 8G (1K, 2K, .., 65K, 132K, ..)");
}

// "m=1024,n=2145,k=1024" -> {1024, 2145, 1024}.
std::array<int64_t, 3> gemm_shape(const CsvReader& csv) {
  const std::string p(csv.text("params"));
  std::array<int64_t, 3> mnk{};
  const char* keys[] = {"m=", "n=", "k="};
  size_t at = 0;
  for (int i = 0; i < 3; ++i) {
    if (p.compare(at, 2, keys[i]) != 0) csv.fail("params", "must be m=<int>,n=<int>,k=<int>");
    at += 2;
    const size_t end = p.find(',', at);
    const std::string digits = p.substr(at, end == std::string::npos ? std::string::npos : end - at);
    if (digits.empty() || digits.size() > 12 || digits.find_first_not_of("0123456789") != std::string::npos) {
      csv.fail("params", "must be m=<int>,n=<int>,k=<int>");
    }
    mnk[static_cast<size_t>(i)] = std::stoll(digits);
    if (mnk[static_cast<size_t>(i)] < 1) csv.fail("params", "m, n and k must be >= 1");
    at = end == std::string::npos ? p.size() : end + 1;
  }
  if (at != p.size()) csv.fail("params", "must be m=<int>,n=<int>,k=<int> and nothing else");
  return mnk;
}

// The item of the `software` column ("ROCm 6.8.5; RCCL 2.22.3-develop; HIP 6.2.41134") that starts
// with `name`, e.g. "ROCm 6.8.5"; the whole column when none does.
std::string software_item(const CsvReader& csv, std::string_view name) {
  const std::string_view all = csv.text("software");
  size_t at = 0;
  while (at < all.size()) {
    size_t end = all.find(';', at);
    if (end == std::string_view::npos) end = all.size();
    std::string_view item = all.substr(at, end - at);
    while (!item.empty() && item.front() == ' ') item.remove_prefix(1);
    if (item.rfind(name, 0) == 0) return std::string(item);
    at = end + 1;
  }
  return std::string(all);
}

// The run of one benchmark of one results version; `what` names the tool, e.g. "hipBLASLt".
PublishedRun& azure_run(Runs& runs, const CsvReader& csv, const std::string& benchmark, const std::string& what,
                        const std::string& commit) {
  const std::string key = benchmark + "/" + commit;
  const bool fresh = !runs.has(key);
  PublishedRun& run = runs.get(key);
  if (fresh) {
    std::string software = software_item(csv, "ROCm ");
    if (benchmark == "rccl") software = software_item(csv, "RCCL ") + ", " + software;
    run.info = published_info(kAzureDevice,
                              fmt::format("{} {} @ {} (copied as {})", std::string(csv.text("source_repo")),
                                          kAzureResults, commit.substr(0, 12), csv.file()),
                              fmt::format("Azure AI benchmarking guide ND MI300X v5, {}, {}", what, software),
                              commit == kAzureOlder ? kAzureOlderDate : kAzureNewerDate,
                              "yosoyjay/AI-benchmarking-guide@" + commit.substr(0, 12));
    run.gpu_preset = kAzurePreset;
    run.table = csv.file();
  }
  return run;
}

}  // namespace

void read_azure_microbench(TableSink& sink, CsvReader& csv) {
  Runs runs;
  std::map<std::string, int64_t> left_out;  // why -> rows
  while (csv.next()) {
    const std::string gpu(csv.text("gpu")), benchmark(csv.text("benchmark")), commit(csv.text("source_commit"));
    if (gpu != kAzureDevice) {
      if (gpu.rfind("NVIDIA ", 0) != 0) csv.fail("gpu", "must be AMD Instinct MI300X or an NVIDIA device");
      ++left_out["NVIDIA row(s) (those GPUs have operator tables measured inside vLLM)"];
      continue;
    }
    if (commit != kAzureNewer && commit != kAzureOlder) {
      csv.fail("source_commit", fmt::format("must be one of the two results versions read ({} or {})", kAzureNewer,
                                            kAzureOlder));
    }
    const std::string params(csv.text("params"));
    if (benchmark == "gemm_hipblaslt") {
      if (csv.text("dtype") != "fp8") csv.fail("dtype", "must be fp8 (the harness runs hipBLASLt f8_r inputs)");
      if (csv.text("unit") != "TFLOP/s") csv.fail("unit", "must be TFLOP/s");
      const std::array<int64_t, 3> mnk = gemm_shape(csv);
      const double tflops = csv.positive("value");
      if (commit != kAzureNewer) {
        ++left_out["hipBLASLt row(s) of the older results version (ROCm 6.8.1; the ROCm 6.8.5 version is imported)"];
        continue;
      }
      if (!sink.wanted(csv.file(), kAzurePreset)) continue;
      PublishedRun& run = azure_run(runs, csv, "gemm", "hipBLASLt fp8", commit);
      const std::string kernel = "azure_hipblaslt_fp8";
      add_kernel(run, kernel, OpClass::kGemm,
                 "hipblaslt-bench matmul, fp8 (f8_r) A and B, fp16 output, f32 compute, transA T; 2,000 timed "
                 "iterations after 100 cold ones, --flush with 512 MiB rotating buffers (operands not cache-resident); "
                 "time = 2mnk / the printed TFLOP/s");
      const DType dtype = DType::kFp8E4M3;
      const double m = static_cast<double>(mnk[0]), n = static_cast<double>(mnk[1]), k = static_cast<double>(mnk[2]);
      const Json row = {{"m", mnk[0]}, {"n", mnk[1]}, {"k", mnk[2]}, {"dtype", std::string(dtype_name(dtype))}};
      add_row(run, kernel, gemm_op(m, n, k, dtype), row, 2.0 * m * n * k / (tflops * 1e12) * 1e9);
    } else if (benchmark == "hbm_bandwidth_babelstream_hip") {
      if (csv.text("unit") != "TB/s") csv.fail("unit", "must be TB/s");
      const double tb_per_s = csv.positive("value");
      if (params == "Dot") {
        ++left_out["BabelStream Dot row(s) (a reduction, not an elementwise kernel)"];
        continue;
      }
      const BabelKernel* bk = nullptr;
      for (const BabelKernel& b : kBabelKernels) {
        if (params == b.name) bk = &b;
      }
      if (bk == nullptr) csv.fail("params", "must be Copy, Mul, Add, Triad or Dot");
      if (commit != kAzureNewer) {
        ++left_out["BabelStream row(s) of the older results version (the newer one is imported)"];
        continue;
      }
      if (!sink.wanted(csv.file(), kAzurePreset)) continue;
      PublishedRun& run = azure_run(runs, csv, "babelstream", "BabelStream", commit);
      const std::string kernel = std::string("azure_babelstream_") + bk->kernel;
      add_kernel(run, kernel, OpClass::kElementwise,
                 fmt::format("BabelStream (HIP) {} over double arrays of 1,308,622,848 elements, best of 100 runs; "
                             "value = mean over the harness's runs of BabelStream's MBytes/sec",
                             params));
      StepOp op;
      op.name = "babelstream";
      op.op_class = OpClass::kElementwise;
      op.dtype = DType::kBF16;  // the roof's compute dtype only: memory-bound by 3 orders of magnitude
      op.bytes = bk->arrays * kBabelStreamElementBytes * kBabelStreamElements;
      op.flops = bk->flops_per_element * kBabelStreamElements;
      const Json row = {{"kernel", params}, {"elements", static_cast<int64_t>(kBabelStreamElements)},
                        {"element_bytes", static_cast<int64_t>(kBabelStreamElementBytes)}};
      add_row(run, kernel, op, row, op.bytes / (tb_per_s * 1e12) * 1e9);
    } else if (benchmark == "allreduce_busbw_8gpu") {
      if (csv.text("unit") != "GB/s") csv.fail("unit", "must be GB/s");
      if (params.rfind("message=", 0) != 0) csv.fail("params", "must be message=<label>");
      const double bytes = rccl_bytes(csv, std::string_view(params).substr(8));
      const double busbw = csv.positive("value");
      if (!sink.wanted(csv.file(), kAzurePreset)) continue;
      PublishedRun& run = azure_run(runs, csv, "rccl", "rccl-tests 8 GPUs", commit);
      const std::string kernel = "azure_rccl_all_reduce";
      add_kernel(run, kernel, OpClass::kCollective,
                 "rccl-tests all_reduce_perf, 8 GPUs in one process (-g 8), float, in-place bus bandwidth averaged "
                 "over 40 iterations; the results name the NVLS algorithm, which RCCL does not have (its own choice "
                 "ran); time = 2(n-1)/n x message / busbw");
      const StepOp op = collective_op(CollectiveKind::kAllReduce, bytes, kRcclRanks);
      const Json row = {{"bytes", static_cast<int64_t>(bytes)}, {"ranks", kRcclRanks}, {"collective", "all_reduce"}};
      add_row(run, kernel, op, row, op.bytes / (busbw * 1e9) * 1e9);
    } else if (benchmark == "attention_prefill_fa2_benchmark") {
      ++left_out["FlashAttention row(s) (which pass and whether causal is not stated)"];
    } else if (benchmark == "transferbench") {
      ++left_out["TransferBench row(s) (one number per direction; transfer size not stated)"];
    } else {
      csv.fail("benchmark",
               "must be gemm_hipblaslt, hbm_bandwidth_babelstream_hip, allreduce_busbw_8gpu, "
               "attention_prefill_fa2_benchmark or transferbench for the MI300X");
    }
  }
  for (const auto& [why, n] : left_out) sink.out.notes.push_back(fmt::format("{}: {} {} not imported", csv.file(), n, why));
  sink.append(runs.take());
}

}  // namespace kvplan::calibration::internal
