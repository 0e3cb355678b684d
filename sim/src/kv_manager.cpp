// make_kv_manager and the policy names (see kv_manager.h).
#include "kvplan/sim/kv_manager.h"

#include <string>

#include "kvplan/core/error.h"
#include "kvplan/sim/paged_kv_manager.h"
#include "kvplan/sim/reservation_manager.h"

namespace kvplan::sim {

std::string_view kv_policy_name(KvPolicy policy) {
  switch (policy) {
    case KvPolicy::kReserveMaxLength:
      return "max-length";
    case KvPolicy::kReservePowerOfTwo:
      return "pow2";
    case KvPolicy::kReserveOracle:
      return "oracle";
    case KvPolicy::kPaged:
      return "paged";
  }
  return "unknown";
}

KvPolicy parse_kv_policy(std::string_view text) {
  for (KvPolicy p : {KvPolicy::kReserveMaxLength, KvPolicy::kReservePowerOfTwo, KvPolicy::kReserveOracle, KvPolicy::kPaged}) {
    if (text == kv_policy_name(p)) return p;
  }
  throw ConfigError("kv-policy: value '" + std::string(text) + "' must be one of max-length, pow2, oracle, paged");
}

std::unique_ptr<KvManager> make_kv_manager(const KvManagerConfig& config) {
  if (config.policy == KvPolicy::kPaged) return std::make_unique<PagedKvManager>(config);
  return std::make_unique<ReservationKvManager>(config);
}

}  // namespace kvplan::sim
