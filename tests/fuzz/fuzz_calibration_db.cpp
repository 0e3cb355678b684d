// Fuzz target: a calibration database (kvplan calibrate inspect / fit, --profile FILE.sqlite):
// opened, listed and fitted.
#include <cstdint>

#include "fuzz_support.h"
#include "kvplan/calibration/fit_run.h"
#include "kvplan/calibration/store.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string path = kvplan::fuzz::write_input(data, size, "_cal.sqlite");
  kvplan::fuzz::expect_only_config_errors([&] {
    auto db = kvplan::calibration::CalibrationStore::open(path, kvplan::calibration::OpenMode::kExisting);
    (void)db.runs();
    (void)kvplan::calibration::fit_run(db, std::nullopt);
  });
  return 0;
}
