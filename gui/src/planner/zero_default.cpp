#include "zero_default.h"

#include <fmt/format.h>

#include <optional>
#include <string_view>

#include "kvplan/core/engine_memory.h"
#include "kvplan/core/error.h"
#include "kvplan/plan/memory.h"
#include "kvplan/plan/text.h"

namespace kvplan::gui {

namespace {

constexpr std::string_view kZeroMeans = "0 means ";

// The note without its "0 means ": "the engine's default", "no H2O eviction".
std::string note_meaning(const plan::Setting& s) { return s.default_note.substr(kZeroMeans.size()); }

// Whose default it is. Only vLLM's batch limits are the engine's own (vllm_profile.cpp, by version
// and GPU); for the others plan_memory assumes 256 sequences and 8,192 tokens, and says so here.
std::string batch_default_owner(const plan::MemoryAnswer& a) {
  if (a.plan.engine == Engine::kVllm) return fmt::format("the default of {} on this GPU", a.plan.engine_label);
  return fmt::format("what kvplan assumes for {} (no engine default modelled)", engine_name(a.plan.engine));
}

}  // namespace

bool zero_means_something(const plan::Setting& s) {
  return s.default_text == "0" && s.default_note.rfind(kZeroMeans, 0) == 0;
}

std::string zero_default_text(const plan::Setting& s, const plan::Scenario& scenario) {
  if (!zero_means_something(s)) return {};
  const std::string& f = s.flag;
  const bool computed = f == "max-model-len" || f == "max-num-seqs" || f == "max-num-batched-tokens" ||
                        f == "mem-fraction-static" || f == "gpu-price";
  if (!computed) return note_meaning(s);
  std::optional<plan::MemoryAnswer> answer;
  try {
    answer = plan::answer_memory(scenario);
  } catch (const ConfigError&) {
    return note_meaning(s);
  }
  const plan::MemoryAnswer& a = *answer;
  if (f == "max-model-len") {
    return fmt::format("{}, the engine's default for this model (from max_position_embeddings)",
                       plan::with_commas(a.plan.max_model_len));
  }
  if (f == "max-num-seqs") return fmt::format("{}, {}", plan::with_commas(a.plan.max_num_seqs), batch_default_owner(a));
  if (f == "max-num-batched-tokens") {
    return fmt::format("{}, {}", plan::with_commas(a.plan.max_num_batched_tokens), batch_default_owner(a));
  }
  if (f == "mem-fraction-static") {
    const int tp = a.scenario.parallel.tensor_parallel;
    return fmt::format("{:.2f}, SGLang's default at TP {}", sglang_default_mem_fraction_static(tp), tp);
  }
  // gpu-price
  if (a.scenario.gpu.price_usd_per_gpu_hour <= 0) return fmt::format("no price in the {} preset", a.scenario.gpu.id);
  return fmt::format("{:.2f}, the {} preset's price", a.scenario.gpu.price_usd_per_gpu_hour, a.scenario.gpu.id);
}

}  // namespace kvplan::gui
