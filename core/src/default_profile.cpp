#include "kvplan/core/default_profile.h"

#include <cctype>
#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "kvplan/core/presets.h"
#include "kvplan/core/published_profiles.h"

namespace kvplan {

namespace {

double log_distance(double a, double b) {
  if (a <= 0 || b <= 0) return 10.0;  // a missing datasheet figure: far, but comparable
  return std::abs(std::log(a / b));
}

// Distance between two GPUs' roofs: bandwidth and dense bf16 peak.
double roof_distance(const GpuSpec& a, const GpuSpec& b) {
  return log_distance(a.memory_bandwidth_bytes_per_s, b.memory_bandwidth_bytes_per_s) +
         log_distance(a.peak_flops_bf16, b.peak_flops_bf16);
}

// Transferred: the source's band widened; an unvalidated source stays unvalidated.
ProfileBand widened(const ProfileBand& band, double factor, const std::string& from, const std::string& why) {
  ProfileBand out;
  if (band.tpot_p90_rel_error <= 0 && band.ttft_p90_rel_error <= 0) return out;
  out.tpot_p90_rel_error = band.tpot_p90_rel_error * factor;
  out.ttft_p90_rel_error = band.ttft_p90_rel_error * factor;
  out.how = fmt::format("{}'s band x{:g} for a transfer ({}; the widening is an assumption): {}", from, factor, why,
                        band.how);
  return out;
}

// "hbm", "gddr" or "" (unknown) from a memory type such as "HBM3e" or "GDDR6X".
std::string memory_family(const std::string& memory_type) {
  std::string t;
  for (char ch : memory_type) t += static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
  if (t.rfind("hbm", 0) == 0) return "hbm";
  if (t.rfind("gddr", 0) == 0) return "gddr";
  return "";
}

// "; attention_prefill and attention_decode on datasheet efficiencies" when classes every transformer
// step runs were not in the published tables (the MI300X profile has no attention table); "" else.
std::string datasheet_key_classes(const PerfProfile& p) {
  std::vector<std::string> names;
  for (OpClass c : {OpClass::kGemm, OpClass::kAttentionPrefill, OpClass::kAttentionDecode}) {
    if (p.at(c).source == "datasheet") names.emplace_back(op_class_name(c));
  }
  if (names.empty()) return "";
  std::string list;
  for (size_t i = 0; i < names.size(); ++i) {
    list += (i == 0 ? "" : i + 1 == names.size() ? " and " : ", ") + names[i];
  }
  return fmt::format("; {} on datasheet efficiencies (no published table)", list);
}

}  // namespace

NearestPublished nearest_published_gpu(const GpuSpec& gpu) {
  NearestPublished best;
  int best_tier = 3;
  double best_distance = std::numeric_limits<double>::infinity();
  const std::string family = memory_family(gpu.memory_type);
  for (const std::string& id : published_profile_gpus()) {
    if (id == gpu.id) return {id, "this GPU", 1.0};
    const GpuSpec& other = resolve_gpu(id);
    // Only within one vendor and one memory family (see the header for the evidence).
    if (other.vendor != gpu.vendor || family.empty() || memory_family(other.memory_type) != family) continue;
    const int tier = other.architecture == gpu.architecture ? 1 : 2;
    const double d = roof_distance(gpu, other);
    if (tier < best_tier || (tier == best_tier && d < best_distance)) {
      best_tier = tier;
      best_distance = d;
      best.gpu_id = id;
    }
  }
  if (best.gpu_id.empty()) return best;
  const GpuSpec& from = resolve_gpu(best.gpu_id);
  if (best_tier == 1) {
    best.why = fmt::format("same architecture, {}", gpu.architecture);
    best.band_widening = kTransferBandWidening.same_architecture;
  } else {
    best.why = fmt::format("no published {} GPU; same vendor and memory family ({}), {} -> {}", gpu.architecture,
                           family, from.architecture, gpu.architecture);
    best.band_widening = kTransferBandWidening.same_memory_family;
  }
  best.why += ", nearest by bandwidth and bf16 peak";
  return best;
}

ProfileChoice default_profile(const GpuSpec& gpu) {
  ProfileChoice c;
  if (const PerfProfile* p = published_profile(gpu.id)) {
    c.profile = *p;
    c.kind = "published";
    c.from_gpu = gpu.id;
    c.summary = fmt::format("published {} profile (data/profiles/{}.json: operator tables fitted by kvplan){}", gpu.id,
                            gpu.id, datasheet_key_classes(c.profile));
    return c;
  }
  const NearestPublished near = nearest_published_gpu(gpu);
  if (!near.gpu_id.empty()) {
    const PerfProfile* p = published_profile(near.gpu_id);
    c.profile = p->transferred_to(gpu);
    c.profile.set_band(widened(p->band(), near.band_widening, near.gpu_id, near.why));
    c.kind = "transferred";
    c.from_gpu = near.gpu_id;
    c.summary = fmt::format("transferred from the published {} profile ({}), efficiencies applied to {}'s "
                            "datasheet roofs{}",
                            near.gpu_id, near.why, gpu.id, datasheet_key_classes(c.profile));
    return c;
  }
  c.profile = PerfProfile::datasheet_default(gpu);
  c.kind = "datasheet";
  const std::string family = memory_family(gpu.memory_type);
  c.summary = fmt::format("datasheet defaults for {} (no published profile is shipped for vendor {} with {} memory; "
                          "transfers across vendors or memory families measured worse than the datasheet)",
                          gpu.id, gpu.vendor.empty() ? "(unknown)" : gpu.vendor,
                          family.empty() ? "unknown" : family);
  return c;
}

}  // namespace kvplan
