// Randomized operation sequences for every manager kind, with check_invariants() after every
// operation and a shadow model of each sequence's length (DESIGN: allocators and caches get
// randomized tests). std::mt19937_64's raw output only, so the sequences are the same everywhere.
#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <random>
#include <string>
#include <vector>

#include "kvplan/core/kv_layout.h"
#include "kvplan/core/presets.h"
#include "kvplan/sim/kv_manager.h"
#include "kvplan/sim/paged_kv_manager.h"

namespace kvplan::sim {
namespace {

constexpr int kTokensPerBlock = 4;
constexpr int64_t kMaxLen = 64;

KvLayout tiny_layout(bool hybrid, Eviction eviction) {
  KvScheme scheme;
  scheme.tokens_per_block = kTokensPerBlock;
  scheme.eviction = eviction;
  scheme.h2o_budget_tokens = 13;
  std::vector<KvLayerGroup> groups;
  groups.push_back(KvLayerGroup{.name = "full", .kind = LayerKind::kFullAttention, .num_layers = 2, .bytes_per_token = 8});
  if (hybrid) {
    groups.push_back(KvLayerGroup{.name = "sliding(10)", .kind = LayerKind::kSlidingAttention, .num_layers = 3,
                                  .window_tokens = 10, .bytes_per_token = 4});
    groups.push_back(KvLayerGroup{.name = "mamba", .kind = LayerKind::kMamba1, .num_layers = 1,
                                  .state_bytes_per_request = 100});
  }
  return KvLayout(scheme, std::move(groups));
}

struct Kind {
  std::string name;
  KvPolicy policy = KvPolicy::kPaged;
  bool hybrid = false;
  Eviction eviction = Eviction::kNone;
  bool prefix = false;
  bool fork = false;
  bool truncate = true;
  bool publish = false;  // publish_prefix on live sequences (the simulator does at prefill end)
};

// Token bytes a sequence of `t` tokens writes when nothing is shared (the paged manager counts
// every written slot of a held block; a sliding group's oldest block may hold stale slots).
int64_t expected_paged_token_bytes(const KvLayout& layout, int64_t t) {
  int64_t bytes = 0;
  for (const KvLayerGroup& g : layout.groups()) {
    if (!holds_kv_per_token(g.kind)) {
      bytes += g.num_layers * g.state_bytes_per_request;
      continue;
    }
    int64_t slots = layout.held_tokens(g, t);
    if (g.kind == LayerKind::kSlidingAttention && layout.scheme().eviction == Eviction::kNone) {
      int64_t lo = t > g.window_tokens ? (t - g.window_tokens) / kTokensPerBlock : 0;
      slots = t - lo * kTokensPerBlock;
    }
    bytes += g.num_layers * static_cast<int64_t>(g.bytes_per_token) * slots;
  }
  return bytes;
}

bool same_bytes(const KvUsage& a, const KvUsage& b) {
  return a.token_bytes == b.token_bytes && a.reserved_bytes == b.reserved_bytes &&
         a.internal_fragmentation_bytes == b.internal_fragmentation_bytes && a.cached_bytes == b.cached_bytes &&
         a.free_bytes == b.free_bytes && a.num_seqs == b.num_seqs;
}

void run_random(const Kind& kind, uint64_t seed, int operations) {
  SCOPED_TRACE(kind.name);
  KvLayout layout = tiny_layout(kind.hybrid, kind.eviction);
  const bool paged = kind.policy == KvPolicy::kPaged;
  // Paged: 100 blocks of the full group's 64 B (60 under H2O, whose 4-block cap would never fill
  // 100 with 24 sequences). Reservation: five 64-token regions plus an odd tail.
  const int64_t capacity = paged ? (kind.eviction == Eviction::kNone ? 100 : 60) * 64 + 300 : 5 * layout.request_bytes(kMaxLen) + 123;
  KvManagerConfig config{.policy = kind.policy, .capacity_bytes = capacity, .layout = &layout,
                         .max_model_len = kMaxLen, .watermark = paged ? 0.02 : 0.0, .prefix_caching = kind.prefix};
  std::unique_ptr<KvManager> kv = make_kv_manager(config);
  auto* pkv = dynamic_cast<PagedKvManager*>(kv.get());
  if (kind.prefix) {
    ASSERT_TRUE(pkv != nullptr && pkv->prefix_caching_enabled());
  }

  std::mt19937_64 rng(seed);
  auto pick = [&](uint64_t n) { return static_cast<int64_t>(rng() % n); };
  std::map<SeqId, int64_t> tokens;  // the shadow: live sequence -> length
  std::vector<SeqId> live;
  SeqId next_id = 1;
  int64_t admitted = 0;
  int64_t refused = 0;
  int64_t hits = 0;
  std::vector<uint64_t> hashes;
  auto remove_live = [&](size_t index) {
    tokens.erase(live[index]);
    live[index] = live.back();
    live.pop_back();
  };

  for (int op = 0; op < operations; ++op) {
    const KvUsage before = kv->usage();
    int64_t r = pick(100);
    if (r < 25 || live.empty()) {
      if (live.size() >= 24) {
        size_t i = static_cast<size_t>(pick(live.size()));
        kv->release(live[i], true);
        remove_live(i);
      } else {
        int64_t prompt = 1 + pick(40);
        int64_t final_tokens = std::min<int64_t>(kMaxLen, prompt + pick(30));
        // Conversations: one of four bases, sometimes diverging at a random hash block.
        hashes.clear();
        uint64_t base = static_cast<uint64_t>(pick(4)) * 1000;
        int64_t diverge = pick(3) == 0 ? pick(12) : 1000;
        for (int64_t i = 0; i < prompt / kTokensPerBlock; ++i) {
          hashes.push_back(i >= diverge ? rng() : base + static_cast<uint64_t>(i));
        }
        SeqKvRequest req{.seq = next_id, .prompt_tokens = prompt, .final_tokens = final_tokens,
                         .hash_block_tokens = kTokensPerBlock, .prefix_hashes = hashes};
        int64_t match = kv->match_prefix(kTokensPerBlock, hashes);
        AdmitResult a = kv->admit(req, prompt);
        if (a.ok) {
          ASSERT_GE(a.capacity_tokens, prompt);
          ASSERT_LE(a.cached_tokens, std::max<int64_t>(0, prompt - 1));
          ASSERT_LE(a.cached_tokens, match);
          ASSERT_EQ(a.cached_tokens % kTokensPerBlock, 0);
          if (!kind.prefix) {
            ASSERT_EQ(a.cached_tokens, 0);
          }
          hits += a.cached_tokens > 0 ? 1 : 0;
          tokens[next_id] = prompt;
          live.push_back(next_id);
          ++admitted;
        } else {
          ASSERT_TRUE(same_bytes(before, kv->usage())) << "refused admit changed the pool";
          ++refused;
        }
        ++next_id;
      }
    } else if (r < 55) {
      size_t i = static_cast<size_t>(pick(live.size()));
      SeqId s = live[i];
      int64_t target = tokens[s] + 1 + pick(20);
      int64_t cap = kv->grow(s, target);
      if (cap < 0) {
        ASSERT_TRUE(same_bytes(before, kv->usage())) << "failed grow changed the pool";
      } else {
        ASSERT_GE(cap, target);
        tokens[s] = target;
      }
    } else if (r < 65 && kind.truncate) {
      size_t i = static_cast<size_t>(pick(live.size()));
      SeqId s = live[i];
      int64_t target = pick(static_cast<uint64_t>(tokens[s] + 1));
      int64_t cap = kv->truncate(s, target);
      if (cap < 0) {
        ASSERT_TRUE(same_bytes(before, kv->usage())) << "failed truncate changed the pool";
      } else {
        ASSERT_GE(cap, target);
        tokens[s] = target;
      }
    } else if (r < 80) {
      size_t i = static_cast<size_t>(pick(live.size()));
      kv->release(live[i], pick(2) == 0);
      remove_live(i);
    } else if (r < 88 && kind.fork && live.size() < 24) {
      SeqId parent = live[static_cast<size_t>(pick(live.size()))];
      if (pkv->fork(parent, next_id)) {
        tokens[next_id] = tokens[parent];
        live.push_back(next_id);
      } else {
        ASSERT_TRUE(same_bytes(before, kv->usage()));
      }
      ++next_id;
    } else if (kind.publish && r < 94) {
      pkv->publish_prefix(live[static_cast<size_t>(pick(live.size()))]);
    } else {
      hashes.clear();
      for (int64_t i = 0; i < pick(8); ++i) hashes.push_back(static_cast<uint64_t>(pick(2)) * 1000 + static_cast<uint64_t>(i));
      (void)kv->match_prefix(kTokensPerBlock, hashes);
      (void)kv->can_admit(1 + pick(64));
      ASSERT_TRUE(same_bytes(before, kv->usage())) << "a const query changed the pool";
    }

    ASSERT_NO_THROW(kv->check_invariants()) << "after operation " << op;
    KvUsage u = kv->usage();
    ASSERT_EQ(u.num_seqs, static_cast<int64_t>(tokens.size()));
    ASSERT_EQ(u.token_bytes + u.reserved_bytes + u.internal_fragmentation_bytes + u.cached_bytes + u.free_bytes,
              capacity);
    ASSERT_GE(u.internal_fragmentation_bytes, 0);
    ASSERT_GE(u.reserved_bytes, 0);
    ASSERT_GE(u.external_fragmentation_bytes, 0);
    ASSERT_LE(u.external_fragmentation_bytes, u.free_bytes);
    ASSERT_LE(u.prefix_hit_tokens, u.prefix_lookup_tokens);
    int64_t expected = 0;
    for (const auto& [s, t] : tokens) {
      expected += paged ? expected_paged_token_bytes(layout, t) : layout.request_bytes(t);
    }
    if (kind.fork || kind.prefix) {
      ASSERT_LE(u.token_bytes, expected);  // shared blocks hold their tokens once
    } else {
      ASSERT_EQ(u.token_bytes, expected) << "after operation " << op;
    }
  }
  for (SeqId s : live) kv->release(s, true);
  kv->check_invariants();
  EXPECT_EQ(kv->usage().num_seqs, 0);
  EXPECT_EQ(kv->usage().token_bytes, 0);
  EXPECT_GT(admitted, 1000);
  EXPECT_GT(refused, 0) << "the pool never filled: the test does not reach the hard cases";
  if (kind.prefix) {
    EXPECT_GT(hits, 100);
  }
}

constexpr int kOperations = 100'000;

TEST(KvRandomized, MaxLength) { run_random(Kind{.name = "max-length", .policy = KvPolicy::kReserveMaxLength}, 1, kOperations); }
TEST(KvRandomized, PowerOfTwo) { run_random(Kind{.name = "pow2", .policy = KvPolicy::kReservePowerOfTwo}, 2, kOperations); }
TEST(KvRandomized, Oracle) { run_random(Kind{.name = "oracle", .policy = KvPolicy::kReserveOracle}, 3, kOperations); }
TEST(KvRandomized, Paged) { run_random(Kind{.name = "paged"}, 4, kOperations); }
TEST(KvRandomized, PagedForkCopyOnWrite) { run_random(Kind{.name = "paged+fork", .fork = true}, 5, kOperations); }
TEST(KvRandomized, PagedPrefix) {
  run_random(Kind{.name = "paged+prefix", .prefix = true, .fork = true}, 6, kOperations);
}
// Published prefixes of live sequences, among hits, forks and truncations.
TEST(KvRandomized, PagedPrefixPublish) {
  run_random(Kind{.name = "paged+prefix+publish", .prefix = true, .fork = true, .publish = true}, 10, kOperations);
}
TEST(KvRandomized, HybridSliding) {
  // No truncation: a rolled-back window cannot regain the blocks it freed, which the shadow's
  // exact token count does not model (the invariants still cover it in HybridSlidingTruncate).
  run_random(Kind{.name = "hybrid sliding", .hybrid = true, .truncate = false}, 7, kOperations);
}
TEST(KvRandomized, HybridSlidingTruncateFork) {
  run_random(Kind{.name = "hybrid sliding+truncate", .hybrid = true, .fork = true}, 8, kOperations / 2);
}
TEST(KvRandomized, H2OCapped) { run_random(Kind{.name = "h2o", .eviction = Eviction::kH2O}, 9, kOperations); }

// A 20,000-request run at realistic sizes: admit, grow at every capacity boundary, release with
// prefix caching. Not timed here (bench/ measures); the test pins that it completes and balances.
TEST(KvRandomized, TwentyThousandRequestTrace) {
  KvLayout layout = build_kv_layout(resolve_model("llama-3.1-8b"), KvScheme{}, Parallelism{});
  PagedKvManager kv(KvManagerConfig{.capacity_bytes = int64_t{40} << 30, .layout = &layout, .max_model_len = 32768,
                                    .watermark = 0.01, .prefix_caching = true});
  std::mt19937_64 rng(11);
  struct Live {
    SeqId id;
    int64_t tokens;
    int64_t final_tokens;
    int64_t capacity;
  };
  std::vector<Live> running;
  std::vector<uint64_t> hashes;
  int64_t calls = 0;
  SeqId next = 0;
  while (next < 20'000 || !running.empty()) {
    if (next < 20'000 && running.size() < 128) {
      int64_t prompt = 200 + static_cast<int64_t>(rng() % 1800);
      hashes.clear();
      uint64_t system = rng() % 8;
      for (int64_t i = 0; i < prompt / 16; ++i) hashes.push_back(i < 20 ? system * 100 + static_cast<uint64_t>(i) : rng());
      SeqKvRequest req{.seq = next, .prompt_tokens = prompt, .final_tokens = prompt + 200,
                       .hash_block_tokens = 16, .prefix_hashes = hashes};
      AdmitResult a = kv.admit(req, prompt);
      ++calls;
      if (a.ok) {
        running.push_back(Live{next, prompt, prompt + 1 + static_cast<int64_t>(rng() % 400), a.capacity_tokens});
        ++next;
        continue;
      }
    }
    // One decode step for everyone: a call only where a block boundary is crossed.
    for (size_t i = 0; i < running.size();) {
      Live& s = running[i];
      s.tokens += 1;
      if (s.tokens > s.capacity) {
        s.capacity = kv.grow(s.id, s.tokens);
        ++calls;
        ASSERT_GE(s.capacity, 0);
      }
      if (s.tokens >= s.final_tokens) {
        kv.release(s.id, true);
        ++calls;
        running[i] = running.back();
        running.pop_back();
      } else {
        ++i;
      }
    }
  }
  kv.check_invariants();
  KvUsage u = kv.usage();
  EXPECT_EQ(u.num_seqs, 0);
  EXPECT_GT(u.prefix_hit_tokens, 0);
  EXPECT_GT(calls, 20'000);
}

}  // namespace
}  // namespace kvplan::sim
