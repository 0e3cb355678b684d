#include "kvplan/core/default_profile.h"

#include <cmath>
#include <limits>

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

}  // namespace

NearestPublished nearest_published_gpu(const GpuSpec& gpu) {
  NearestPublished best;
  int best_tier = 4;
  double best_distance = std::numeric_limits<double>::infinity();
  for (const std::string& id : published_profile_gpus()) {
    if (id == gpu.id) return {id, "this GPU", 1.0};
    const GpuSpec& other = resolve_gpu(id);
    const int tier = other.architecture == gpu.architecture ? 1 : other.vendor == gpu.vendor ? 2 : 3;
    const double d = roof_distance(gpu, other);
    if (tier < best_tier || (tier == best_tier && d < best_distance)) {
      best_tier = tier;
      best_distance = d;
      best.gpu_id = id;
    }
  }
  if (best.gpu_id.empty()) return best;
  const GpuSpec& from = resolve_gpu(best.gpu_id);
  switch (best_tier) {
    case 1:
      best.why = fmt::format("same architecture, {}", gpu.architecture);
      best.band_widening = kTransferBandWidening.same_architecture;
      break;
    case 2:
      best.why = fmt::format("no published {} GPU; same vendor, {} -> {}", gpu.architecture, from.architecture,
                             gpu.architecture);
      best.band_widening = kTransferBandWidening.same_vendor;
      break;
    default:
      best.why = fmt::format("no published {} GPU; another vendor's kernels ({} {} -> {} {})", gpu.vendor, from.vendor,
                             from.architecture, gpu.vendor, gpu.architecture);
      best.band_widening = kTransferBandWidening.other_vendor;
      break;
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
    c.summary = fmt::format("published {} profile (data/profiles/{}.json: operator tables fitted by kvplan)", gpu.id,
                            gpu.id);
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
                            "datasheet roofs",
                            near.gpu_id, near.why, gpu.id);
    return c;
  }
  c.profile = PerfProfile::datasheet_default(gpu);
  c.kind = "datasheet";
  c.summary = fmt::format("datasheet defaults for {} (no published profile is shipped)", gpu.id);
  return c;
}

}  // namespace kvplan
