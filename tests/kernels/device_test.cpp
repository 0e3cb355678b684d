// The GPU tests' skip rule itself: without a device, cuda_device_available says why; with one, the
// device reports a name and SMs.
#include <gtest/gtest.h>

#include "gpu_support.h"

namespace kvplan::kernels {
namespace {

TEST(GpuDevice, ReportsItselfOrWhyNot) {
  std::string why;
  if (!cuda_device_available(&why)) {
    EXPECT_NE(why.find("no CUDA device"), std::string::npos) << why;
    GTEST_SKIP() << why;
  }
  DeviceInfo d = query_device(0);
  EXPECT_FALSE(d.name.empty());
  EXPECT_GT(d.num_sms, 0);
}

}  // namespace
}  // namespace kvplan::kernels
