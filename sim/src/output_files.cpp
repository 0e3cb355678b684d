#include "kvplan/core/json_input.h"
#include "kvplan/sim/output_files.h"

#include <filesystem>
#include <system_error>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "kvplan/config.h"
#include "kvplan/core/atomic_file.h"
#include "kvplan/core/error.h"

namespace kvplan::sim {

namespace {

nlohmann::json percentiles_json(const Percentiles& p) {
  return {{"mean", p.mean}, {"p50", p.p50}, {"p90", p.p90}, {"p95", p.p95}, {"p99", p.p99}, {"max", p.max}};
}

std::string_view workload_kind_name(WorkloadKind k) {
  switch (k) {
    case WorkloadKind::kOpenLoop: return "open-loop";
    case WorkloadKind::kClosedLoop: return "closed-loop";
    case WorkloadKind::kTrace: return "trace";
    case WorkloadKind::kList: return "list";
  }
  return "?";
}

}  // namespace

RequestCsvWriter::RequestCsvWriter(const std::string& path) : file_(path) {
  file_.stream() << "id,replica,user,turn,prompt_tokens,output_tokens,cached_tokens,arrival_ns,scheduled_ns,"
          "first_token_ns,finish_ns,queue_ms,ttft_ms,tpot_ms,e2e_ms,max_gap_ms,preemptions\n";
}

void RequestCsvWriter::write(const RequestRecord& r) {
  file_.stream() << fmt::format("{},{},{},{},{},{},{},{},{},{},{},{:.3f},{:.3f},{:.3f},{:.3f},{:.3f},{}\n", r.id, r.replica,
                      r.user, r.turn, r.prompt_tokens, r.output_tokens, r.cached_tokens, r.arrival_ns,
                      r.scheduled_ns, r.first_token_ns, r.finish_ns, ns_to_ms(r.queue_ns()), ns_to_ms(r.ttft_ns()),
                      r.tpot_ns() * 1e-6, ns_to_ms(r.e2e_ns()), ns_to_ms(r.max_gap_ns), r.preemptions);
}

void RequestCsvWriter::commit() { file_.commit(); }
void RequestCsvWriter::keep_partial() { file_.keep_partial(); }

void clear_outputs(const std::string& dir) {
  // summary.json first: it is the completion marker, so the directory never shows an old marker
  // next to new files.
  for (const char* name : {"summary.json", "requests.csv", "timeseries.csv"}) {
    for (const std::string& p : {dir + "/" + name, dir + "/" + name + ".partial"}) {
      std::error_code ec;
      std::filesystem::remove(p, ec);
      if (ec) throw ConfigError(fmt::format("--out={}: cannot remove the earlier run's '{}' ({})", dir, p, ec.message()));
    }
  }
}

void write_timeseries_csv(const std::string& path, const std::vector<TimeSeriesRow>& rows, bool complete) {
  AtomicFile file(path);
  std::ostream& out = file.stream();
  out << "time_s,kv_token_bytes,kv_allocated_bytes,kv_reserved_bytes,kv_internal_fragmentation_bytes,"
         "kv_external_fragmentation_bytes,kv_cached_bytes,kv_capacity_bytes,kv_used_share,prefix_hit_rate,"
         "running,waiting,swapped,preemptions,batch_tokens,batch_seqs,host_kv_bytes\n";
  for (const TimeSeriesRow& r : rows) {
    double share = r.kv_capacity_bytes > 0 ? static_cast<double>(r.kv_token_bytes) / static_cast<double>(r.kv_capacity_bytes) : 0;
    out << fmt::format("{:.3f},{},{},{},{},{},{},{},{:.6f},{:.6f},{},{},{},{},{},{},{}\n", ns_to_seconds(r.time_ns),
                       r.kv_token_bytes, r.kv_allocated_bytes, r.kv_reserved_bytes, r.kv_internal_fragmentation_bytes,
                       r.kv_external_fragmentation_bytes, r.kv_cached_bytes, r.kv_capacity_bytes, share,
                       r.prefix_hit_rate, r.running, r.waiting, r.swapped, r.preemptions, r.batch_tokens,
                       r.batch_seqs, r.host_kv_bytes);
  }
  if (complete) {
    file.commit();
  } else {
    file.keep_partial();
  }
}

nlohmann::json run_summary_json(const RunSummary& s) {
  return {{"finished", s.finished},
          {"measured", s.measured},
          {"warmup_excluded", s.warmup_excluded},
          {"cooldown_excluded", s.cooldown_excluded},
          {"unfinished", s.unfinished},
          {"rejected", s.rejected},
          {"duration_s", s.duration_s},
          {"requests_per_s", s.requests_per_s},
          {"output_tokens_per_s", s.output_tokens_per_s},
          {"total_tokens_per_s", s.total_tokens_per_s},
          {"goodput_requests_per_s", s.goodput_requests_per_s},
          {"slo_attainment", s.slo_attainment},
          {"meets_slo", s.meets_slo},
          {"queue_ms", percentiles_json(s.queue_ms)},
          {"ttft_ms", percentiles_json(s.ttft_ms)},
          {"tpot_ms", percentiles_json(s.tpot_ms)},
          {"e2e_ms", percentiles_json(s.e2e_ms)},
          {"max_gap_ms", percentiles_json(s.max_gap_ms)},
          {"preemptions", s.preemptions},
          {"prefix_hit_rate", s.prefix_hit_rate},
          {"limits",
           {{"steps", s.limits.steps},
            {"seq_limited_steps", s.limits.seq_limited_steps},
            {"kv_limited_steps", s.limits.kv_limited_steps},
            {"peak_running", s.limits.peak_running},
            {"max_num_seqs", s.limits.max_num_seqs},
            {"peak_kv_used", s.limits.peak_kv_used}}}};
}

nlohmann::json summary_json(const SimulationConfig& c, const SimulationResult& r, const std::string& interrupted) {
  nlohmann::json j;
  j["kvplan_version"] = KVPLAN_VERSION;
  j["complete"] = interrupted.empty();
  if (!interrupted.empty()) j["interrupted"] = interrupted;
  j["warnings"] = r.plan.warnings;
  j["inputs"] = {{"model", c.model.id},
                 {"gpu", c.gpu.id},
                 {"kv_scheme", c.scheme.describe()},
                 {"tensor_parallel", c.parallel.tensor_parallel},
                 {"pipeline_parallel", c.parallel.pipeline_parallel},
                 {"data_parallel", c.parallel.data_parallel},
                 {"expert_parallel", c.parallel.expert_parallel_size()},
                 {"weights", c.serving.weights.describe()},
                 {"engine", engine_name(c.serving.engine)},
                 {"scheduler", scheduler_kind_name(c.scheduler.kind)},
                 {"kv_policy", kv_policy_name(c.kv_policy)},
                 {"prefix_caching", c.prefix_caching},
                 {"preemption", preemption_mode_name(c.scheduler.preemption)},
                 {"spec_draft_tokens", c.scheduler.spec.draft_tokens},
                 {"spec_acceptance", c.scheduler.spec.acceptance_rate},
                 {"replicas", c.cluster.replicas},
                 {"prefill_replicas", c.cluster.prefill_replicas},
                 {"decode_replicas", c.cluster.decode_replicas},
                 {"router", router_kind_name(c.cluster.router)},
                 {"workload", workload_kind_name(c.workload.kind)},
                 {"client", c.workload.kind == WorkloadKind::kClosedLoop ? closed_loop_client_name(c.workload.client)
                                                                         : std::string_view("none")},
                 {"trace", c.workload.trace_path},
                 {"seed", c.seed},
                 {"slo", c.slo.describe()}};
  if (c.workload.kind == WorkloadKind::kClosedLoop && c.workload.client == ClosedLoopClient::kBench) {
    const BenchOptions& b = c.workload.bench;
    BenchClientSpec spec;
    spec.max_concurrency = c.workload.closed.num_users;
    spec.options = b;
    j["bench"] = {{"max_concurrency", c.workload.closed.num_users},
                  {"num_prompts", b.num_prompts},
                  {"prompt_lengths", c.workload.closed.first_prompt.describe()},
                  {"output_lengths", c.workload.closed.output.describe()},
                  {"warmup_requests", bench_warmup(spec)},
                  {"cooldown_requests", bench_cooldown(spec)},
                  {"start", bench_start_name(b.start)},
                  {"stagger_jitter", b.jitter},
                  {"stagger_window_ms", ns_to_ms(r.bench_window_ns)},
                  {"rule", "users start at floor(window*(u + jitter*U_u)/C); statistics leave out the first "
                           "warmup and the last cooldown finished requests (docs/simulator.md)"}};
  }
  // Every latency below includes these terms; each number names its source.
  j["serving_overheads"] = {{"request_ms", ns_to_ms(c.overheads.request.ns)},
                            {"request_source", c.overheads.request.source},
                            {"request_applies_to", "TTFT and E2E (the request reaches the engine this long after it is sent)"},
                            {"request_per_in_flight_ms", ns_to_ms(c.overheads.request_per_in_flight.ns)},
                            {"request_per_in_flight_source", c.overheads.request_per_in_flight.source},
                            {"request_per_in_flight_prefill_share", c.overheads.request_per_in_flight_prefill_share.value},
                            {"request_per_in_flight_prefill_share_source",
                             c.overheads.request_per_in_flight_prefill_share.source},
                            {"request_spread_ms", ns_to_ms(c.overheads.request_spread.ns)},
                            {"request_spread_source", c.overheads.request_spread.source},
                            {"step_ms", ns_to_ms(c.overheads.step.ns)},
                            {"step_source", c.overheads.step.source},
                            {"step_time_factor", c.overheads.step_factor.value},
                            {"step_time_factor_source", c.overheads.step_factor.source},
                            {"prefill_time_factor", c.overheads.prefill_step_factor.value},
                            {"prefill_time_factor_source", c.overheads.prefill_step_factor.source},
                            {"step_applies_to", "every engine step (so TPOT, TTFT and E2E)"}};
  j["summary"] = run_summary_json(r.summary);
  j["memory"] = {{"kv_capacity_bytes_per_replica", r.kv_capacity_bytes},
                 {"num_blocks", r.plan.num_blocks},
                 {"block_bytes", r.plan.block_bytes},
                 {"kv_cache_tokens", r.plan.kv_cache_tokens}};
  if (!r.timeseries.empty()) {
    // Time-weighted: each row holds until the next one (idle stretches have no rows of their own);
    // the last row counts for one sample interval.
    double peak = 0, weighted = 0, total = 0;
    for (size_t i = 0; i < r.timeseries.size(); ++i) {
      const TimeSeriesRow& t = r.timeseries[i];
      double share = t.kv_capacity_bytes > 0 ? static_cast<double>(t.kv_token_bytes) / static_cast<double>(t.kv_capacity_bytes) : 0;
      const double weight = i + 1 < r.timeseries.size()
                                ? static_cast<double>(r.timeseries[i + 1].time_ns - t.time_ns)
                                : static_cast<double>(c.sample_interval_ns);
      peak = std::max(peak, share);
      weighted += share * weight;
      total += weight;
    }
    j["memory"]["kv_token_share_peak"] = peak;
    j["memory"]["kv_token_share_mean"] = total > 0 ? weighted / total : 0.0;
  }
  j["engine"] = {{"events", r.events}, {"steps", r.steps}, {"cost_memo_hits", r.cost_memo_hits},
                 {"cost_memo_misses", r.cost_memo_misses}, {"peak_active_requests", r.peak_active_requests},
                 {"end_s", ns_to_seconds(r.end_ns)}};
  j["step_time_source"] = r.step_time_source;
  j["latency_band"] = {{"ttft_p90_rel_error", r.latency_band.ttft_p90_rel_error},
                       {"tpot_p90_rel_error", r.latency_band.tpot_p90_rel_error},
                       {"validated", r.latency_band.ttft_p90_rel_error > 0 || r.latency_band.tpot_p90_rel_error > 0},
                       {"how", r.latency_band.how}};
  j["cost_sources"] = r.cost_sources;
  if (!r.kv_link.kind.empty()) {
    j["kv_transfer"] = {{"link", r.kv_link.kind},
                        {"bytes_per_s_per_gpu", r.kv_link.bytes_per_s},
                        {"source", r.kv_link.source},
                        {"transfers", r.kv_transfers},
                        {"bytes_per_gpu", r.kv_transfer_bytes_total},
                        {"mean_ms", r.kv_transfers > 0 ? ns_to_ms(r.kv_transfer_ns_total) / static_cast<double>(r.kv_transfers) : 0.0},
                        {"in_ttft", true}};
  }
  j["notes"] = r.notes;
  return j;
}

void write_summary_json(const std::string& path, const SimulationConfig& config, const SimulationResult& result,
                        const std::string& interrupted) {
  write_file_atomically(path, json_text(summary_json(config, result, interrupted), 2) + "\n");
}

}  // namespace kvplan::sim
