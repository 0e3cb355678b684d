// kvplan-calibrate-run: the calibration run (run_calibration). `kvplan calibrate run` hands its
// flags to this executable, installed next to kvplan (cli/sibling_exec.h), and it also runs alone
// on GPU machines where the full CLI is not built (scripts/calibrate_device.sh).
//
//   kvplan-calibrate-run --quick --out h200.sqlite [--resume] [--reps N] [--warmup N] [--only KERNEL]
//                        [--device I] [--list]
#include <iostream>
#include <optional>
#include <string>

#include "kvplan/calibration/run_calibration.h"
#include "kvplan/core/number_text.h"

namespace {

constexpr const char* kUsage =
    "usage: kvplan-calibrate-run [--quick|--full] [--resume] [--reps N] [--warmup N] [--only KERNEL] [--list] "
    "[--device I] --out FILE.sqlite\n";

// A count flag: a whole number in [lo, hi], else nullopt (the caller prints the rule).
std::optional<int> count_value(const std::string& text, int lo, int hi) {
  std::optional<int64_t> v = kvplan::parse_int64_text(text);
  if (!v || *v < lo || *v > hi) return std::nullopt;
  return static_cast<int>(*v);
}

}  // namespace

int main(int argc, char** argv) {
  kvplan::calibration::CalibrationOptions o;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    auto value = [&](const char* flag) -> std::optional<std::string> {
      if (i + 1 >= argc) {
        std::cerr << "kvplan: " << flag << " needs a value\n" << kUsage;
        return std::nullopt;
      }
      return std::string(argv[++i]);
    };
    auto count = [&](const char* flag, int lo, int hi, int& into) -> bool {
      std::optional<std::string> text = value(flag);
      if (!text) return false;
      std::optional<int> v = count_value(*text, lo, hi);
      if (!v) {
        std::cerr << "kvplan: " << flag << "=" << *text << ": must be a whole number from " << lo << " to " << hi
                  << "\n";
        return false;
      }
      into = *v;
      return true;
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
      std::optional<std::string> v = value("--out");
      if (!v) return 2;
      o.out_path = *v;
    } else if (a == "--only") {
      std::optional<std::string> v = value("--only");
      if (!v) return 2;
      o.only_kernel = *v;
    } else if (a == "--reps") {
      if (!count("--reps", 1, 100000, o.reps)) return 2;
    } else if (a == "--warmup") {
      if (!count("--warmup", 0, 100000, o.warmup)) return 2;
    } else if (a == "--device") {
      if (!count("--device", 0, 1023, o.device)) return 2;
    } else {
      std::cerr << "kvplan: unknown argument '" << a << "'\n" << kUsage;
      return 2;
    }
  }
  return kvplan::calibration::run_calibration(o);
}
