// `kvplan simulate --explain-step B,C[,P]`: the cost of one engine step, operator by operator
// (plan::explain_step): B decode sequences of C tokens of context each, plus (P > 0) one prefill
// chunk of P new tokens.
#include <iostream>
#include <vector>

#include <fmt/format.h>

#include "commands.h"
#include "kvplan/core/error.h"
#include "kvplan/core/json_input.h"
#include "kvplan/core/number_text.h"
#include "kvplan/plan/simulate.h"

namespace kvplan::cli {

namespace {

plan::StepShape parse_explain(const std::string& text) {
  std::vector<int64_t> parts;
  size_t start = 0;
  while (start <= text.size()) {
    const size_t comma = text.find(',', start);
    const std::string part = text.substr(start, comma == std::string::npos ? std::string::npos : comma - start);
    const std::optional<int64_t> v = parse_int64_text(part);
    if (!v) throw ConfigError(fmt::format("--explain-step={} must be integers: {} is not one", text, part));
    parts.push_back(*v);
    if (comma == std::string::npos) break;
    start = comma + 1;
  }
  if (parts.size() < 2 || parts.size() > 3 || parts[0] < 0 || parts[1] < 0 || (parts.size() == 3 && parts[2] < 0) ||
      parts[0] > 1'000'000 || parts[1] > 100'000'000 || (parts.size() == 3 && parts[2] > 10'000'000)) {
    throw ConfigError(fmt::format(
        "--explain-step={} must be BATCH,CONTEXT or BATCH,CONTEXT,PREFILL_TOKENS (non-negative; batch at most "
        "1,000,000, context at most 100,000,000 tokens)",
        text));
  }
  return {.batch = parts[0], .context = parts[1], .prefill = parts.size() == 3 ? parts[2] : 0};
}

}  // namespace

int run_explain_step(const SimRequest& request) {
  const plan::StepExplanation e = plan::explain_step(request.scenario, parse_explain(request.explain_step));
  std::cout << (request.json ? json_text(plan::step_json(e), 2) + "\n" : plan::step_text(e));
  return 0;
}

}  // namespace kvplan::cli
