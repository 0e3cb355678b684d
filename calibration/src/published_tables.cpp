// The shared part of the published-table readers (published_tables.h).
#include "published_tables.h"

#include <fmt/format.h>

#include "kvplan/core/build_info.h"

namespace kvplan::calibration::internal {

RunInfo published_info(std::string gpu_name, const std::string& source_table, std::string source_and_version,
                       std::string date_utc, const std::string& snapshot) {
  RunInfo i;
  i.gpu_name = std::move(gpu_name);
  i.gpu_uuid = fmt::format("published: {} {}", snapshot, source_table);
  i.driver_version = i.cuda_version = i.cupti_version = "not published";
  i.kvplan_version = std::string(build_version());
  i.git_commit = std::string(build_commit());  // the kvplan that imported the table
  i.host = "published: " + std::move(source_and_version);
  i.started_utc = std::move(date_utc);
  i.mode = "published";
  return i;
}

void add_kernel(PublishedRun& run, const std::string& kernel, OpClass c, const std::string& description) {
  for (const KernelInfo& k : run.kernels) {
    if (k.kernel == kernel) return;
  }
  run.kernels.push_back(KernelInfo{kernel, std::string(op_class_name(c)), description});
}

void add_row(PublishedRun& run, const std::string& kernel, const StepOp& op, const nlohmann::json& params,
             double median_ns, double min_ns) {
  Measurement m;
  m.kernel = kernel;
  m.op_class = std::string(op_class_name(op.op_class));
  m.params_json = params.dump();  // sorted keys, no spaces: canonical
  m.median_ns = median_ns;
  m.min_ns = min_ns;
  m.flops = op.flops;
  m.bytes = op.bytes;
  run.rows.push_back(std::move(m));
}

bool TableSink::wanted(const std::string& table, const char* preset) {
  if (options.gpu.empty() || options.gpu == preset) return true;
  ++other_gpu_rows[table];
  return false;
}

void TableSink::append(std::vector<PublishedRun> runs) {
  for (PublishedRun& r : runs) out.runs.push_back(std::move(r));
}

}  // namespace kvplan::calibration::internal
