// match_gpu_preset: CUDA device names -> GPU preset ids.
#include "kvplan/calibration/gpu_match.h"

#include <algorithm>
#include <cctype>
#include <vector>

namespace kvplan::calibration {

namespace {

// Lower-case alphanumeric tokens: "NVIDIA A100-SXM4-80GB" -> {nvidia, a100, sxm4, 80gb}.
std::vector<std::string> tokens(std::string_view name) {
  std::vector<std::string> out;
  std::string cur;
  for (char ch : name) {
    unsigned char c = static_cast<unsigned char>(ch);
    if (std::isalnum(c) != 0) {
      cur += static_cast<char>(std::tolower(c));
    } else if (!cur.empty()) {
      out.push_back(cur);
      cur.clear();
    }
  }
  if (!cur.empty()) out.push_back(cur);
  return out;
}

}  // namespace

std::optional<std::string> match_gpu_preset(std::string_view cuda_name, int64_t memory_bytes) {
  const std::vector<std::string> t = tokens(cuda_name);
  auto has = [&](std::string_view w) { return std::find(t.begin(), t.end(), w) != t.end(); };
  constexpr int64_t kGiB = int64_t{1} << 30;
  if (has("h200")) return "h200";
  if (has("h100")) {
    if (has("nvl")) return std::nullopt;  // H100 NVL (94 GB) has no preset
    return has("pcie") ? "h100-pcie" : "h100-sxm";
  }
  if (has("a100")) return memory_bytes > 60 * kGiB || has("80gb") ? "a100-80gb" : "a100-40gb";
  if (has("b200")) return "b200";
  if (has("l40s")) return "l40s";
  if (has("l4")) return "l4";
  if (has("a10g")) return "a10g";
  if (has("a30")) return "a30";
  if (has("t4")) return "t4";
  if (has("mi300x")) return "mi300x";
  if (has("4090")) return "rtx-4090";
  if (has("3090")) return "rtx-3090";
  if (has("a6000")) return "rtx-a6000";
  if (has("6000") && has("ada")) return "rtx-6000-ada";
  return std::nullopt;
}

}  // namespace kvplan::calibration
