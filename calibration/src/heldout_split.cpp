// Deterministic held-out split of calibration rows by shape (heldout_split.h).
#include "kvplan/calibration/heldout_split.h"

#include <nlohmann/json.hpp>

namespace kvplan::calibration {

std::string split_key(const Measurement& m) {
  nlohmann::json j = nlohmann::json::parse(m.params_json, nullptr, /*allow_exceptions=*/false);
  if (!j.is_object()) return m.kernel + "|" + m.params_json;
  nlohmann::json shape = nlohmann::json::object();
  for (auto it = j.begin(); it != j.end(); ++it) {
    if (it.key().rfind("src_", 0) != 0) shape[it.key()] = it.value();
  }
  return m.kernel + "|" + shape.dump();  // sorted keys, no spaces
}

uint64_t split_hash(std::string_view key) {
  uint64_t h = 0xcbf29ce484222325ull;  // FNV-1a 64
  for (char c : key) {
    h ^= static_cast<unsigned char>(c);
    h *= 0x100000001b3ull;
  }
  return h;
}

int split_bucket(uint64_t hash, uint64_t salt) {
  // splitmix64 finaliser: FNV's low bits alone are poorly mixed for keys that differ in one digit.
  uint64_t z = hash + 0x9E3779B97F4A7C15ull * (salt + 1);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  z ^= z >> 31;
  return static_cast<int>(z % 100);
}

bool is_heldout(const Measurement& m, int heldout_percent) {
  return split_bucket(split_hash(split_key(m)), kHeldoutSplitSalt) < heldout_percent;
}

}  // namespace kvplan::calibration
