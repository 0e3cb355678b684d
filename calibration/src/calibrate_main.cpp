// kvplan_calibrate_run: the calibration run as a standalone program, for GPU machines where the
// full CLI is not built (scripts/calibrate_device.sh). `kvplan calibrate run` calls the same
// run_calibration().
//
//   kvplan_calibrate_run --quick --out h200.sqlite [--resume] [--reps N] [--only KERNEL] [--list]
#include <cstdlib>
#include <iostream>
#include <string>

#include "kvplan/calibration/run_calibration.h"

int main(int argc, char** argv) {
  kvplan::calibration::CalibrationOptions o;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    auto value = [&](const char* flag) -> std::string {
      if (i + 1 >= argc) {
        std::cerr << "kvplan_calibrate_run: " << flag << " needs a value\n";
        std::exit(2);
      }
      return argv[++i];
    };
    if (a == "--quick") {
      o.grid = kvplan::calibration::GridSize::kQuick;
    } else if (a == "--full") {
      o.grid = kvplan::calibration::GridSize::kFull;
    } else if (a == "--resume") {
      o.resume = true;
    } else if (a == "--list") {
      o.list_only = true;
    } else if (a == "--out") {
      o.out_path = value("--out");
    } else if (a == "--reps") {
      o.reps = std::atoi(value("--reps").c_str());
    } else if (a == "--only") {
      o.only_kernel = value("--only");
    } else if (a == "--device") {
      o.device = std::atoi(value("--device").c_str());
    } else {
      std::cerr << "usage: kvplan_calibrate_run [--quick|--full] [--resume] [--reps N] [--only KERNEL] [--list] "
                   "[--device I] --out FILE.sqlite\n";
      return 2;
    }
  }
  return kvplan::calibration::run_calibration(o);
}
