// Which step-time source each GPU gets by default (core/default_profile.h).
#include "kvplan/core/default_profile.h"

#include <gtest/gtest.h>

#include "kvplan/core/presets.h"
#include "kvplan/core/published_profiles.h"

namespace kvplan {
namespace {

TEST(DefaultProfile, PublishedGpusGetTheirOwnProfile) {
  for (const char* id : {"h100-sxm", "h200", "b200", "a100-80gb", "l40s"}) {
    ASSERT_NE(published_profile(id), nullptr) << id;
    ProfileChoice c = default_profile(resolve_gpu(id));
    EXPECT_EQ(c.kind, "published") << id;
    EXPECT_EQ(c.from_gpu, id);
    EXPECT_EQ(c.profile.gpu_id(), id);
    EXPECT_EQ(c.profile.at(OpClass::kGemm).source.rfind("published (", 0), 0u) << c.profile.at(OpClass::kGemm).source;
    EXPECT_NE(c.summary.find("published " + std::string(id) + " profile"), std::string::npos) << c.summary;
  }
}

TEST(DefaultProfile, OtherGpusGetTheNearestPublishedOneTransferred) {
  // H100 PCIe: Hopper, 2.0 TB/s and 756 TFLOP/s: the H100 SXM is nearer than the H200.
  ProfileChoice pcie = default_profile(resolve_gpu("h100-pcie"));
  EXPECT_EQ(pcie.kind, "transferred");
  EXPECT_EQ(pcie.from_gpu, "h100-sxm");
  EXPECT_EQ(pcie.profile.gpu_id(), "h100-pcie");
  EXPECT_EQ(pcie.profile.at(OpClass::kGemm).source, "transferred (from h100-sxm)");
  EXPECT_NE(pcie.summary.find("same architecture, hopper"), std::string::npos) << pcie.summary;
  // Ampere A100 40GB: the A100 80GB.
  EXPECT_EQ(default_profile(resolve_gpu("a100-40gb")).from_gpu, "a100-80gb");
  // Ada L4: the L40S.
  EXPECT_EQ(default_profile(resolve_gpu("l4")).from_gpu, "l40s");
  // Blackwell: B200 is published, the B300 and GB200 carry its efficiencies (same architecture).
  for (const char* id : {"b300", "gb200"}) {
    ProfileChoice b = default_profile(resolve_gpu(id));
    EXPECT_EQ(b.kind, "transferred") << id;
    EXPECT_EQ(b.from_gpu, "b200") << id;
    EXPECT_EQ(b.profile.at(OpClass::kGemm).source, "transferred (from b200)") << id;
    EXPECT_EQ(b.profile.at(OpClass::kMoeGemm).source, "transferred (from b200)") << id;
    EXPECT_NE(b.summary.find("same architecture, blackwell"), std::string::npos) << b.summary;
  }
  // Hopper H20 and H800 from the nearest published Hopper by roofs.
  EXPECT_EQ(default_profile(resolve_gpu("h800")).from_gpu, "h100-sxm");
  EXPECT_EQ(default_profile(resolve_gpu("h20")).profile.at(OpClass::kMoeGemm).source.rfind("transferred (from h", 0), 0u);
  // GDDR stays with GDDR: the RTX 4090 (Ada, GDDR6X) and the RTX 5090 (Blackwell, GDDR7) from the L40S.
  EXPECT_EQ(default_profile(resolve_gpu("rtx-4090")).from_gpu, "l40s");
  EXPECT_EQ(default_profile(resolve_gpu("rtx-5090")).from_gpu, "l40s");
}

TEST(DefaultProfile, AnotherVendorOrMemoryFamilyGetsTheDatasheet) {
  // An AMD card with GDDR memory: no AMD GDDR profile is published, and neither the MI300X (HBM) nor
  // an NVIDIA one measured on other kernels is carried over.
  GpuSpec amd_gddr = resolve_gpu("mi300x");
  amd_gddr.id = "amd-gddr";
  amd_gddr.memory_type = "GDDR6";
  ProfileChoice mi = default_profile(amd_gddr);
  EXPECT_EQ(mi.kind, "datasheet");
  EXPECT_EQ(mi.profile.at(OpClass::kGemm).source, "datasheet");
  EXPECT_NE(mi.summary.find("no published profile is shipped for vendor amd with gddr memory"), std::string::npos) << mi.summary;
  // Another vendor: nothing of NVIDIA's or AMD's is carried over.
  GpuSpec other = resolve_gpu("h100-sxm");
  other.id = "other-vendor";
  other.vendor = "intel";
  EXPECT_EQ(default_profile(other).kind, "datasheet");
  // A GPU file without a memory type: nothing to match the family on.
  GpuSpec custom = resolve_gpu("h100-sxm");
  custom.id = "my-gpu";
  custom.memory_type = "";
  EXPECT_EQ(default_profile(custom).kind, "datasheet");
}

TEST(DefaultProfile, TransferWidensTheBandMoreTheFurtherItGoes) {
  EXPECT_EQ(nearest_published_gpu(resolve_gpu("h200")).band_widening, 1.0);
  const double same_arch = nearest_published_gpu(resolve_gpu("h20")).band_widening;
  const double other_arch = nearest_published_gpu(resolve_gpu("rtx-5090")).band_widening;  // Blackwell from Ada
  EXPECT_GT(same_arch, 1.0);
  EXPECT_GT(other_arch, same_arch);
  // AMD: MI325X within CDNA 3 from the MI300X, MI355X across (CDNA 4); never from an NVIDIA profile.
  EXPECT_EQ(nearest_published_gpu(resolve_gpu("mi300x")).gpu_id, "mi300x");
  EXPECT_EQ(nearest_published_gpu(resolve_gpu("mi325x")).gpu_id, "mi300x");
  EXPECT_EQ(nearest_published_gpu(resolve_gpu("mi325x")).band_widening, same_arch);
  EXPECT_EQ(nearest_published_gpu(resolve_gpu("mi355x")).gpu_id, "mi300x");
  EXPECT_EQ(nearest_published_gpu(resolve_gpu("mi355x")).band_widening, other_arch);
}

// MI300X's published profile has no attention table (issue 26): every answer's step-time line says
// which of the classes every step runs stay on datasheet efficiencies, on MI300X and on the GPUs
// that take its profile by transfer. The NVIDIA profiles have all three published: nothing added.
TEST(DefaultProfile, DatasheetClassesOfAPublishedProfileAreNamed) {
  const ProfileChoice mi = default_profile(resolve_gpu("mi300x"));
  EXPECT_EQ(mi.kind, "published");
  EXPECT_EQ(mi.summary,
            "published mi300x profile (data/profiles/mi300x.json: operator tables fitted by kvplan); attention_prefill "
            "and attention_decode on datasheet efficiencies (no published table)");
  const ProfileChoice mi355 = default_profile(resolve_gpu("mi355x"));
  EXPECT_NE(mi355.summary.find("; attention_prefill and attention_decode on datasheet efficiencies"), std::string::npos)
      << mi355.summary;
  EXPECT_EQ(default_profile(resolve_gpu("h100-sxm")).summary.find("datasheet efficiencies"), std::string::npos);
}

}  // namespace
}  // namespace kvplan
