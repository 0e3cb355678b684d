// plan/src/deployment_report.cpp — a deployment plan as text (the cheapest, the fronts with their
// binding constraints, every candidate with --explain), JSON and CSV (deployment.h).
#include <algorithm>
#include <map>
#include <set>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "kvplan/core/number_text.h"
#include "kvplan/plan/deployment.h"

namespace kvplan::plan {

namespace {

std::string load_text(double load, bool users) {
  return users ? with_commas(static_cast<int64_t>(load)) + " users" : fmt::format("{:.3g} req/s", load);
}

nlohmann::json candidate_json(const DeploymentCandidate& c) {
  nlohmann::json j;
  j["index"] = c.index;
  j["label"] = c.label;
  j["scenario_deployment"] = c.scenario_deployment;
  j["gpu"] = c.gpu;
  j["tensor_parallel_size"] = c.tensor_parallel;
  j["pipeline_parallel_size"] = c.pipeline_parallel;
  j["prefill_engines"] = c.prefill_engines;
  j["decode_engines"] = c.decode_engines;
  j["settings"] = c.values;
  j["status"] = c.status;
  j["why"] = c.why;
  j["gpus_per_replica"] = c.gpus_per_replica;
  j["usd_per_gpu_hour"] = c.usd_per_gpu_hour;
  j["price_source"] = c.price_source;
  j["warnings"] = c.warnings;
  j["probes"] = c.probes;
  if (c.status == "searched" || c.status == "no_capacity") {
    j["capacity_per_replica"] = c.capacity;
    j["unbounded"] = c.unbounded;
    j["replicas"] = c.replicas;
    j["served"] = c.served;
    j["usd_per_hour"] = c.usd_per_hour;
    j["binding_constraint"] = c.binding;
    j["binding_why"] = c.binding_why;
    j["p90_ttft_ms"] = c.p90_ttft_ms;
    j["p90_tpot_ms"] = c.p90_tpot_ms;
    j["output_tokens_per_s_per_replica"] = c.output_tokens_per_s;
    j["step_time_source"] = c.step_time_source;
    j["step_time_kind"] = c.step_time_kind;
    j["step_time_caveat"] = c.step_time_caveat;
  }
  return j;
}

// Why a searched candidate is not the cheapest: dearer, or as dear and serving less (or later).
std::string lost_by(const DeploymentCandidate& c, const DeploymentCandidate& best, bool users) {
  const double more = c.usd_per_hour - best.usd_per_hour;
  if (more >= 0.005) return fmt::format(" — ${:.2f}/hour dearer than the cheapest", more);
  return fmt::format(" — as dear as the cheapest, serving {}{}", load_text(c.served, users),
                     c.served < best.served ? fmt::format(" against {}", load_text(best.served, users)) : " (found later)");
}

std::string csv_field(const std::string& s) {
  if (s.find_first_of(",\"\n") == std::string::npos) return s;
  std::string out = "\"";
  for (char ch : s) out += ch == '"' ? std::string("\"\"") : std::string(1, ch);
  return out + "\"";
}

}  // namespace

nlohmann::json deployment_plan_json(const DeploymentPlan& p) {
  nlohmann::json j;
  j["model"] = p.model;
  j["workload"] = p.workload;
  j["slo"] = p.slo;
  j["target"] = {{p.users ? "users" : "requests_per_s", p.target}};
  j["partial"] = p.partial;
  j["exact_front"] = p.exact_front;
  j["simulations"] = p.simulations;
  j["cheapest"] = p.cheapest ? nlohmann::json(*p.cheapest) : nlohmann::json(nullptr);
  j["front"] = p.front;
  j["token_front"] = p.token_front;
  j["notes"] = p.notes;
  j["cost_basis"] = deployment_cost_basis_lines(p);
  nlohmann::json all = nlohmann::json::array();
  for (const DeploymentCandidate& c : p.candidates) all.push_back(candidate_json(c));
  j["candidates"] = all;
  return j;
}

namespace {
// Marks a caveat whose GEMM or attention rests on datasheet efficiencies (step_time_caveat's words).
constexpr std::string_view kDatasheetClasses = "; datasheet efficiencies for ";
}  // namespace

std::string step_time_caveat(const std::string& kind, const PerfProfile& profile) {
  if (kind != "published" && kind != "transferred") return "";
  // Every transformer step runs these; a band without them would validate a mix of sources.
  std::vector<std::string> timed, datasheet;
  for (OpClass c : {OpClass::kGemm, OpClass::kAttentionPrefill, OpClass::kAttentionDecode}) {
    (profile.at(c).source == "datasheet" ? datasheet : timed).push_back(std::string(op_class_name(c)));
  }
  const ProfileBand& band = profile.band();
  const bool banded = band.tpot_p90_rel_error > 0 || band.ttft_p90_rel_error > 0;
  if (datasheet.empty() && banded) return "";
  std::string out = timed.empty() ? std::string("no GEMM or attention timings")
                                  : fmt::format("{} operator timings for {}",
                                                kind == "published" ? "published" : "transferred (from published)",
                                                fmt::join(timed, ", "));
  if (!datasheet.empty()) out += fmt::format("{}{}", kDatasheetClasses, fmt::join(datasheet, ", "));
  out += banded ? fmt::format("; whole-model band TTFT ±{:.0f}%, TPOT ±{:.0f}%", band.ttft_p90_rel_error * 100,
                              band.tpot_p90_rel_error * 100)
                : std::string("; no whole-model validation band (unvalidated latency)");
  return out;
}

std::vector<std::string> deployment_cost_basis_lines(const DeploymentPlan& p) {
  // Candidates costed by at least one simulation (searched or pruned by a probe) carry their kind.
  std::set<std::string> datasheet, validated, timed;
  std::map<std::string, std::string> caveats;  // GPU -> what its step times rest on (first seen)
  for (const DeploymentCandidate& c : p.candidates) {
    if (c.step_time_kind.empty()) continue;
    if (c.step_time_kind == "datasheet") {
      datasheet.insert(c.gpu);
      continue;
    }
    timed.insert(c.gpu);
    if (c.step_time_caveat.empty()) validated.insert(c.gpu);
    else caveats.emplace(c.gpu, c.step_time_caveat);
  }
  for (const std::string& g : timed) datasheet.erase(g);
  for (const std::string& g : validated) caveats.erase(g);
  std::vector<std::string> out;
  if (!datasheet.empty()) {
    out.push_back(fmt::format("COST BASIS: {} {} costed with datasheet efficiencies only (no measured or published "
                              "operator timings, no validation band: unvalidated); {}",
                              fmt::join(datasheet, ", "), datasheet.size() == 1 ? "is" : "are",
                              timed.empty() ? std::string("no candidate has validated step times")
                                            : fmt::format("{} from published or measured timings (or transferred "
                                                          "from them)",
                                                          fmt::join(timed, ", "))));
  }
  // One line per distinct basis that leaves GEMM or attention on datasheet efficiencies (a GPU whose
  // key classes are all timed but lack a whole-model band is named only in the warning, when it ranks
  // first), naming its GPUs, in the order of their first GPU.
  std::map<std::string, std::set<std::string>> by_caveat;
  for (const auto& [gpu, caveat] : caveats) {
    if (caveat.find(kDatasheetClasses) != std::string::npos) by_caveat[caveat].insert(gpu);
  }
  std::map<std::string, std::string> lines;  // first GPU -> line
  for (const auto& [caveat, gpus] : by_caveat) {
    lines[*gpus.begin()] = fmt::format("COST BASIS: {}: {}", fmt::join(gpus, ", "), caveat);
  }
  for (const auto& [first, line] : lines) out.push_back(line);
  if (!p.cheapest) return out;
  // Tiers of trust: 0 datasheet, 1 operator timings not validated (a caveat), 2 validated.
  auto tier = [](const DeploymentCandidate& c) {
    return c.step_time_kind == "datasheet" ? 0 : c.step_time_caveat.empty() ? 2 : 1;
  };
  const DeploymentCandidate& cheapest = p.candidates[*p.cheapest];
  if (cheapest.step_time_kind.empty() || tier(cheapest) == 2) return out;
  const DeploymentCandidate* next = nullptr;  // the cheapest of the best tier above the cheapest's
  for (const DeploymentCandidate& c : p.candidates) {
    if (c.capacity <= 0 || c.replicas <= 0 || c.step_time_kind.empty() || tier(c) <= tier(cheapest)) continue;
    if (next == nullptr || tier(c) > tier(*next) || (tier(c) == tier(*next) && c.usd_per_hour < next->usd_per_hour)) {
      next = &c;
    }
  }
  const bool better_exists = tier(cheapest) == 0 ? !timed.empty() : !validated.empty();
  if (!better_exists) return out;
  out.push_back(fmt::format(
      "WARNING: the cheapest deployment below ({}) ranks first on unvalidated {}{}", cheapest.gpu,
      tier(cheapest) == 0 ? "datasheet costs" : "step costs (" + cheapest.step_time_caveat + ")",
      next == nullptr ? std::string()
                      : fmt::format("; the cheapest with {} step times is {} replica{} of {} at ${:.2f}/hour",
                                    tier(*next) == 2 ? "validated" : "operator-timed", next->replicas,
                                    next->replicas == 1 ? "" : "s", next->label, next->usd_per_hour)));
  return out;
}

std::vector<std::string> deployment_cheapest_lines(const DeploymentPlan& p) {
  if (!p.cheapest) {
    return {fmt::format("no candidate serves any load under the SLO ({} candidates)", p.candidates.size())};
  }
  const DeploymentCandidate& c = p.candidates[*p.cheapest];
  std::vector<std::string> out;
  out.push_back(fmt::format("cheapest deployment for {}: {} replica{} of {} = {} GPUs, ${:.2f}/hour",
                            load_text(p.target, p.users), c.replicas, c.replicas == 1 ? "" : "s", c.label,
                            c.replicas * c.gpus_per_replica, c.usd_per_hour));
  out.push_back(fmt::format("each replica serves {}{} (p90 TTFT {:.0f} ms, p90 TPOT {:.1f} ms); {} in all; binding "
                            "constraint: {}",
                            load_text(c.capacity, p.users), c.unbounded ? "+" : "", c.p90_ttft_ms, c.p90_tpot_ms,
                            load_text(c.served, p.users), c.binding));
  out.push_back(fmt::format("${:.4f}/hour per {}; ${:.3f} per million output tokens; price: ${:g}/GPU-hour — {}",
                            c.usd_per_hour / c.served, p.users ? "user" : "req/s",
                            c.output_tokens_per_s > 0 ? c.replica_usd_per_hour() / (c.output_tokens_per_s * 3600.0) * 1e6
                                                      : 0.0,
                            c.usd_per_gpu_hour, c.price_source));
  out.push_back(fmt::format("step times: {}", c.step_time_source));
  if (c.step_time_kind == "datasheet") {
    out.push_back("WARNING: these step times are datasheet estimates, not measured or published timings; the latency "
                  "answer is unvalidated for this GPU (docs/benchmarks.md)");
  }
  for (const std::string& w : c.warnings) out.push_back("WARNING: " + w);
  return out;
}

std::string deployment_plan_text(const DeploymentPlan& p, bool explain) {
  std::string out;
  const char* unit = p.users ? "users" : "req/s";
  if (p.partial) out += "PARTIAL: the search was stopped; candidates not reached are listed as such.\n";
  for (const std::string& line : deployment_cost_basis_lines(p)) out += line + "\n";
  const std::vector<std::string> cheapest = deployment_cheapest_lines(p);
  for (size_t k = 0; k < cheapest.size(); ++k) out += (k == 0 ? "" : "  ") + cheapest[k] + "\n";
  size_t searched = 0;
  for (const DeploymentCandidate& c : p.candidates) searched += c.capacity > 0 ? 1 : 0;
  out += fmt::format("\nPareto front, one replica: cost per hour against {} served (each point's binding constraint){}\n",
                     unit, p.exact_front ? "" : fmt::format("; over the {} candidates searched (--exact-front searches "
                                                            "every candidate that could be on it)", searched));
  out += fmt::format("  {:<36} {:>8} {:>9} {:>8} {:>10} {:>8} {:>8}  {:<12} {}\n", "replica", "$/hour", unit,
                     "replicas", "deploy $/h", "p90 TTFT", "p90 TPOT", "binding", "step times");
  for (size_t i : p.front) {
    const DeploymentCandidate& c = p.candidates[i];
    out += fmt::format("  {:<36} {:>8.2f} {:>9} {:>8} {:>10.2f} {:>8.0f} {:>8.1f}  {:<12} {}\n", c.label,
                       c.replica_usd_per_hour(), fmt::format("{:g}{}", c.capacity, c.unbounded ? "+" : ""), c.replicas,
                       c.usd_per_hour, c.p90_ttft_ms, c.p90_tpot_ms, c.binding, c.step_time_kind);
  }
  out += "\nPareto front: output tokens/s per GPU against tokens/s per user (1000 / p90 TPOT), at each answer\n";
  for (size_t i : p.token_front) {
    const DeploymentCandidate& c = p.candidates[i];
    out += fmt::format("  {:<36} {:>8.0f} tok/s/GPU {:>7.1f} tok/s/user  {:<12} {}\n", c.label,
                       c.output_tokens_per_s / static_cast<double>(c.gpus_per_replica), 1000.0 / c.p90_tpot_ms, c.binding,
                       c.step_time_kind);
  }
  std::map<std::string, int> counts;
  for (const DeploymentCandidate& c : p.candidates) ++counts[c.status];
  std::string tally;
  for (const auto& [status, n] : counts) tally += fmt::format("{}{} {}", tally.empty() ? "" : ", ", n, status);
  out += fmt::format("\n{} candidates: {}; {} simulations\n", p.candidates.size(), tally, p.simulations);
  for (const std::string& n : p.notes) out += "note: " + n + "\n";
  if (explain) {
    out += "\nEvery candidate (search order), and why it lost:\n";
    for (const DeploymentCandidate& c : p.candidates) {
      if (c.status == "searched") {
        const bool won = p.cheapest && *p.cheapest == c.index;
        out += fmt::format("  {:<36} {:>10}  {} per replica, {} replica{}, ${:.2f}/hour; binding {}{}\n", c.label,
                           won ? "CHEAPEST" : "searched", load_text(c.capacity, p.users), c.replicas,
                           c.replicas == 1 ? "" : "s", c.usd_per_hour,
                           c.binding,
                           won ? std::string() : lost_by(c, p.candidates[*p.cheapest], p.users));
      } else if (c.status == "no_capacity") {
        out += fmt::format("  {:<36} {:>10}  no load meets the SLO; binding {}: {}\n", c.label, c.status, c.binding,
                           c.binding_why);
      } else {
        out += fmt::format("  {:<36} {:>10}  {}\n", c.label, c.status, c.why);
      }
    }
  } else {
    out += "(--explain lists every candidate and why it lost)\n";
  }
  return out;
}

std::string deployment_candidates_csv(const DeploymentPlan& p) {
  std::string out =
      "index,label,gpu,tensor_parallel_size,pipeline_parallel_size,settings,status,why,gpus_per_replica,usd_per_gpu_hour,"
      "capacity_per_replica,unbounded,replicas,served,usd_per_hour,binding_constraint,p90_ttft_ms,p90_tpot_ms,"
      "output_tokens_per_s_per_replica,probes,cheapest,on_front\n";
  for (const DeploymentCandidate& c : p.candidates) {
    std::string settings;
    for (const auto& [k, v] : c.values) settings += fmt::format("{}{}={}", settings.empty() ? "" : ";", k, v);
    const bool searched = c.status == "searched" || c.status == "no_capacity";
    const bool front = std::find(p.front.begin(), p.front.end(), c.index) != p.front.end();
    out += fmt::format("{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{}\n", c.index, csv_field(c.label),
                       c.gpu, c.tensor_parallel, c.pipeline_parallel, csv_field(settings), c.status, csv_field(c.why),
                       c.gpus_per_replica, c.usd_per_gpu_hour, searched ? fmt::format("{:g}", c.capacity) : "",
                       searched ? (c.unbounded ? "true" : "false") : "", searched ? std::to_string(c.replicas) : "",
                       searched ? fmt::format("{:g}", c.served) : "", searched ? fmt::format("{:.4f}", c.usd_per_hour) : "",
                       c.binding, searched ? fmt::format("{:.3f}", c.p90_ttft_ms) : "",
                       searched ? fmt::format("{:.3f}", c.p90_tpot_ms) : "",
                       searched ? fmt::format("{:.3f}", c.output_tokens_per_s) : "", c.probes,
                       p.cheapest && *p.cheapest == c.index ? "true" : "false", front ? "true" : "false");
  }
  return out;
}

std::string deployment_front_csv(const DeploymentPlan& p) {
  std::string out = "rank,index,label,replica_usd_per_hour,capacity_per_replica,replicas,usd_per_hour,binding_constraint\n";
  for (size_t k = 0; k < p.front.size(); ++k) {
    const DeploymentCandidate& c = p.candidates[p.front[k]];
    out += fmt::format("{},{},{},{:.4f},{:g},{},{:.4f},{}\n", k + 1, c.index, csv_field(c.label), c.replica_usd_per_hour(),
                       c.capacity, c.replicas, c.usd_per_hour, c.binding);
  }
  return out;
}

}  // namespace kvplan::plan
