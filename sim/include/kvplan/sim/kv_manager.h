// kvplan/sim/kv_manager.h — the interface every KV memory manager implements for the engine.
//
//   std::unique_ptr<KvManager> kv = make_kv_manager(KvManagerConfig{...});
//   AdmitResult a = kv->admit(SeqKvRequest{.seq = 7, .prompt_tokens = 900, .final_tokens = 1200}, 512);
//   if (a.ok) { int64_t room = kv->grow(7, 513); ... }   // room: tokens held before the next call
//   kv->release(7, /*cache_prefix=*/true);
//
// The engine calls a manager once per sequence per block boundary, not per token: `admit` and
// `grow` return `capacity_tokens`, the length up to which the sequence can grow without another
// call. "Does not fit" is a returned value (ok=false / -1) and leaves the manager unchanged.
// Bytes are per GPU (one pipeline stage of one replica), exact, metadata included.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>

namespace kvplan::sim {

using SeqId = int64_t;

// What a manager needs to know to start a sequence.
struct SeqKvRequest {
  SeqId seq = 0;
  int64_t prompt_tokens = 0;  // tokens of the prompt that will be cached
  int64_t final_tokens = 0;   // prompt + output: only the oracle reservation policy may use it
  int32_t hash_block_tokens = 0;           // prefix identity (see request.h); 0: none
  std::span<const uint64_t> prefix_hashes;
  int64_t identity_tokens = 0;  // tokens the hashes describe (0: prompt_tokens); blocks within it
                                // are cached at release, lookups stop at the prompt
};

struct AdmitResult {
  bool ok = false;
  int64_t cached_tokens = 0;    // prompt tokens found in the prefix cache (no prefill needed)
  int64_t capacity_tokens = 0;  // the sequence may grow to this length without another call
};

// A snapshot of where the KV pool's bytes are. token + reserved + internal + cached + free ==
// capacity for paged managers; contiguous managers split free into usable and external.
struct KvUsage {
  int64_t capacity_bytes = 0;
  int64_t token_bytes = 0;        // bytes holding token states of live sequences
  int64_t reserved_bytes = 0;     // held for tokens a live sequence will still generate
  int64_t internal_fragmentation_bytes = 0;  // held by live sequences, never to hold a token
  int64_t cached_bytes = 0;       // prefix-cache blocks held by no live sequence (evictable)
  int64_t free_bytes = 0;
  int64_t external_fragmentation_bytes = 0;  // part of free_bytes in extents too small to use
  int64_t allocated_bytes() const { return token_bytes + reserved_bytes + internal_fragmentation_bytes; }
  int64_t num_seqs = 0;
  int64_t prefix_lookup_tokens = 0;  // cumulative prompt tokens looked up in the prefix cache
  int64_t prefix_hit_tokens = 0;     // cumulative prompt tokens found there
};

class KvManager {
 public:
  virtual ~KvManager() = default;
  virtual std::string_view name() const = 0;

  // Prompt tokens the prefix cache would supply, without changing any state (SGLang orders its
  // waiting queue by this).
  virtual int64_t match_prefix(int32_t hash_block_tokens, std::span<const uint64_t> hashes) const = 0;
  // Starts a sequence and makes room for its first `initial_tokens` tokens (cached prefix included).
  virtual AdmitResult admit(const SeqKvRequest& request, int64_t initial_tokens) = 0;
  // Makes room for `tokens` tokens in total. Returns the new capacity_tokens, or -1 (unchanged)
  // when memory is short.
  virtual int64_t grow(SeqId seq, int64_t tokens) = 0;
  // Shrinks a sequence to `tokens` tokens (speculative-decoding rollback); returns capacity_tokens.
  virtual int64_t truncate(SeqId seq, int64_t tokens) = 0;
  // Ends a sequence. With cache_prefix, its whole prompt blocks stay in the prefix cache.
  virtual void release(SeqId seq, bool cache_prefix) = 0;
  // The sequence's prompt is computed: its whole prompt blocks become shareable now, while it still
  // runs (engines share blocks as soon as their KV exists). A no-op without a prefix cache.
  virtual void publish_prefix(SeqId seq) { (void)seq; }
  // Bytes a sequence holds (what a swap to host memory moves).
  virtual int64_t sequence_bytes(SeqId seq) const = 0;
  // True when a new sequence needing `tokens` tokens could be admitted now (prefix cache ignored).
  virtual bool can_admit(int64_t tokens) const = 0;
  virtual KvUsage usage() const = 0;
  // Aborts (assert-style, with a message) when an invariant is broken; tests call it every step.
  virtual void check_invariants() const = 0;
};

}  // namespace kvplan::sim

namespace kvplan {
class KvLayout;
}

namespace kvplan::sim {

enum class KvPolicy {
  kReserveMaxLength,   // contiguous region of max_model_len tokens per request (HF / Orca style)
  kReservePowerOfTwo,  // region of the final length rounded up to a power of two
  kReserveOracle,      // region of exactly the final length (knows the output length)
  kPaged,              // fixed-size blocks from a pool (vLLM / SGLang style)
};
std::string_view kv_policy_name(KvPolicy policy);
KvPolicy parse_kv_policy(std::string_view text);  // max-length | pow2 | oracle | paged

struct KvManagerConfig {
  KvPolicy policy = KvPolicy::kPaged;
  int64_t capacity_bytes = 0;       // the KV budget of one GPU
  const KvLayout* layout = nullptr; // groups, bytes per token, tokens_per_block, eviction caps
  int64_t max_model_len = 0;        // max-length reservation; longest sequence any policy admits
  double watermark = 0.0;           // paged: fraction of capacity admission leaves free (vLLM V0: 0.01)
  bool prefix_caching = false;      // paged: keep finished prompt blocks in a radix cache (LRU)
};

// Throws ConfigError for a config that cannot work (no capacity, no layout, ...).
std::unique_ptr<KvManager> make_kv_manager(const KvManagerConfig& config);

}  // namespace kvplan::sim
