#include "setting_label.h"

#include <array>
#include <cctype>
#include <string_view>
#include <utility>
#include <vector>

namespace kvplan::gui {

namespace {

// Words of flags that are written differently in prose.
constexpr std::array<std::pair<std::string_view, std::string_view>, 14> kSpellings = {{
    {"gpu", "GPU"}, {"gpus", "GPUs"}, {"kv", "KV"}, {"slo", "SLO"}, {"ttft", "TTFT"}, {"tpot", "TPOT"},
    {"e2e", "E2E"}, {"h2o", "H2O"}, {"vllm", "vLLM"}, {"cuda", "CUDA"}, {"cv", "CV"}, {"ssm", "SSM"},
    {"gib", "GiB"}, {"gbps", "GB/s"},
}};

std::vector<std::string> words_of(std::string_view flag) {
  std::vector<std::string> out;
  size_t start = 0;
  while (start <= flag.size()) {
    const size_t dash = flag.find('-', start);
    const size_t end = dash == std::string_view::npos ? flag.size() : dash;
    if (end > start) out.emplace_back(flag.substr(start, end - start));
    if (dash == std::string_view::npos) break;
    start = dash + 1;
  }
  return out;
}

std::string lower(std::string_view s) {
  std::string out(s);
  for (char& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

}  // namespace

std::string setting_label(const plan::Setting& setting) {
  std::vector<std::string> words = words_of(setting.flag);
  const bool numeric = setting.type == plan::ValueType::kInteger || setting.type == plan::ValueType::kNumber;
  const std::string unit = lower(setting.unit);
  // "slo-ttft-ms" with unit "ms": the parentheses say "ms" already.
  const bool unit_word = words.size() > 1 && (words.back() == "ms" || words.back() == "gib" || words.back() == "gbps");
  if (numeric && unit_word) words.pop_back();
  std::string label;
  for (const std::string& w : words) {
    std::string word = w;
    for (const auto& [from, to] : kSpellings) {
      if (w == from) word = std::string(to);
    }
    label += (label.empty() ? "" : " ") + word;
  }
  if (!label.empty() && std::islower(static_cast<unsigned char>(label[0])) && label.rfind("vLLM", 0) != 0) {
    label[0] = static_cast<char>(std::toupper(static_cast<unsigned char>(label[0])));
  }
  // A unit that only repeats the name ("Users (users)") or says nothing ("integer") is left out.
  const bool says_something = unit != "integer" && unit != lower(words.empty() ? "" : words.back());
  if (numeric && says_something) label += " (" + setting.unit + ")";
  return label;
}

}  // namespace kvplan::gui
