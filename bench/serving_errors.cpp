// bench/serving_errors.cpp — see serving_errors.h.
#include "serving_errors.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <utility>

#include <fmt/format.h>

#include "kvplan/sim/metrics.h"

namespace kvplan::bench {

double rel(double pred, double meas) { return (pred - meas) / meas; }

double median(std::vector<double> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  const size_t n = v.size();
  return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

Stats stats(const std::vector<double>& errors) {
  Stats s;
  s.n = errors.size();
  std::vector<double> abs;
  for (double e : errors) abs.push_back(std::fabs(e));
  s.med_abs = median(abs);
  s.p90_abs = sim::percentile(abs, 90);
  s.bias = median(errors);
  return s;
}

std::string pc(double x) { return fmt::format("{:+.0f}%", x * 100); }
std::string upc(double x) { return fmt::format("{:.0f}%", x * 100); }

void print_table(const std::string& title, const std::vector<Result>& results,
                 const std::function<std::string(const ServingCase&)>& key) {
  std::map<std::string, std::pair<std::vector<double>, std::vector<double>>> groups;
  for (const Result& r : results) {
    if (!r.pred.ok) continue;
    auto& g = groups[key(*r.c)];
    g.first.push_back(rel(r.pred.ttft_ms, r.c->measured_ttft_ms));
    g.second.push_back(rel(r.pred.tpot_ms, r.c->measured_tpot_ms));
  }
  fmt::print("\n{}\n", title);
  fmt::print("| {:<22} | {:>5} | {:>10} | {:>8} | {:>9} | {:>10} | {:>8} | {:>9} |\n", "group", "rows",
             "TTFT med|e|", "p90|e|", "bias", "TPOT med|e|", "p90|e|", "bias");
  fmt::print("|{:-<24}|{:->7}|{:->12}|{:->10}|{:->11}|{:->12}|{:->10}|{:->11}|\n", ":", ":", ":", ":", ":", ":", ":", ":");
  std::vector<double> all_t, all_p;
  auto line = [](const std::string& name, const std::vector<double>& t, const std::vector<double>& p) {
    const Stats a = stats(t), b = stats(p);
    fmt::print("| {:<22} | {:>5} | {:>11} | {:>8} | {:>9} | {:>11} | {:>8} | {:>9} |\n", name, a.n, upc(a.med_abs),
               upc(a.p90_abs), pc(a.bias), upc(b.med_abs), upc(b.p90_abs), pc(b.bias));
  };
  for (const auto& [name, g] : groups) {
    line(name, g.first, g.second);
    all_t.insert(all_t.end(), g.first.begin(), g.first.end());
    all_p.insert(all_p.end(), g.second.begin(), g.second.end());
  }
  if (groups.size() > 1) line("all", all_t, all_p);
}

}  // namespace kvplan::bench
