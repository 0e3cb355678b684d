// bench/serving_errors.cpp — see serving_errors.h.
#include "serving_errors.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <limits>
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

Stats stats(const std::vector<double>& errors, size_t refused) {
  Stats s;
  s.n = errors.size();
  s.refused = refused;
  std::vector<double> abs;
  for (double e : errors) abs.push_back(std::fabs(e));
  abs.insert(abs.end(), refused, std::numeric_limits<double>::infinity());
  std::sort(abs.begin(), abs.end());
  if (!abs.empty()) {
    // The median of two middle values one of which is a miss is a miss.
    const size_t n = abs.size();
    s.med_abs = n % 2 ? abs[n / 2] : (std::isinf(abs[n / 2]) ? abs[n / 2] : (abs[n / 2 - 1] + abs[n / 2]) / 2);
    s.p90_abs = sim::percentile(abs, 90);  // nearest rank: a miss when it lands on one
  }
  s.bias = median(errors);
  return s;
}

std::string pc(double x) { return fmt::format("{:+.0f}%", x * 100); }
std::string upc(double x) { return std::isinf(x) ? std::string("miss") : fmt::format("{:.0f}%", x * 100); }

std::string reason_group(const std::string& why) {
  size_t end = why.size();
  for (size_t i = 40; i < why.size(); ++i) {
    // A number that starts a word ("tp 2", "=192", "(128"), not one inside a name ("DeepSeek-V3").
    if (std::isdigit(static_cast<unsigned char>(why[i])) && (why[i - 1] == ' ' || why[i - 1] == '=' || why[i - 1] == '(')) {
      end = i;
      break;
    }
  }
  std::string out = why.substr(0, std::min<size_t>(end, 120));
  while (!out.empty() && (out.back() == ' ' || out.back() == '(' || out.back() == '=')) out.pop_back();
  return out;
}

void print_table(const std::string& title, const std::vector<Result>& results,
                 const std::function<std::string(const ServingCase&)>& key) {
  struct Group {
    std::vector<double> ttft, tpot;
    size_t refused = 0;
  };
  std::map<std::string, Group> groups;
  std::map<std::string, size_t> reasons;
  for (const Result& r : results) {
    Group& g = groups[key(*r.c)];
    if (!r.pred.ok) {
      ++g.refused;
      ++reasons[reason_group(r.pred.error)];
      continue;
    }
    g.ttft.push_back(rel(r.pred.ttft_ms, r.c->measured_ttft_ms));
    g.tpot.push_back(rel(r.pred.tpot_ms, r.c->measured_tpot_ms));
  }
  fmt::print("\n{}\n", title);
  fmt::print("| {:<26} | {:>5} | {:>7} | {:>10} | {:>8} | {:>9} | {:>10} | {:>8} | {:>9} |\n", "group", "rows", "refused",
             "TTFT med|e|", "p90|e|", "bias", "TPOT med|e|", "p90|e|", "bias");
  fmt::print("|{:-<28}|{:->7}|{:->9}|{:->12}|{:->10}|{:->11}|{:->12}|{:->10}|{:->11}|\n", ":", ":", ":", ":", ":", ":", ":",
             ":", ":");
  Group all;
  auto line = [](const std::string& name, const Group& g) {
    const Stats a = stats(g.ttft, g.refused), b = stats(g.tpot, g.refused);
    fmt::print("| {:<26} | {:>5} | {:>7} | {:>11} | {:>8} | {:>9} | {:>11} | {:>8} | {:>9} |\n", name, a.n + a.refused,
               a.refused, upc(a.med_abs), upc(a.p90_abs), a.n ? pc(a.bias) : "-", upc(b.med_abs), upc(b.p90_abs),
               b.n ? pc(b.bias) : "-");
  };
  for (const auto& [name, g] : groups) {
    line(name, g);
    all.ttft.insert(all.ttft.end(), g.ttft.begin(), g.ttft.end());
    all.tpot.insert(all.tpot.end(), g.tpot.begin(), g.tpot.end());
    all.refused += g.refused;
  }
  if (groups.size() > 1) line("all", all);
  if (!reasons.empty()) {
    fmt::print("refused ({} rows, each a miss above):", all.refused);
    for (const auto& [why, n] : reasons) fmt::print(" {} x {};", n, why);
    fmt::print("\n");
  }
}

}  // namespace kvplan::bench
