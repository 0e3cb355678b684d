// The prefix tree's edge table and LRU queue against std::map / std::set models over long random
// operation sequences (every answer compared, invariants checked as it goes). Keys are drawn from
// small ranges so edges collide, are erased and come back, and LRU keys tie and get re-listed with
// old values, as eviction and unreferencing do. std::mt19937_64's raw output only.
#include <gtest/gtest.h>

#include <cstdint>
#include <map>
#include <random>
#include <set>
#include <utility>

#include "kvplan/sim/prefix_tree_index.h"

namespace kvplan::sim {
namespace {

void check_edges(const EdgeTable& table, const std::map<std::pair<int32_t, uint64_t>, int32_t>& model) {
  ASSERT_EQ(table.size(), model.size());
  for (const auto& [key, node] : model) ASSERT_EQ(table.find(key.first, key.second), node);
  size_t seen = 0;
  table.for_each([&](int32_t parent, uint64_t hash, int32_t node) {
    auto it = model.find({parent, hash});
    ASSERT_NE(it, model.end());
    EXPECT_EQ(it->second, node);
    seen += 1;
  });
  EXPECT_EQ(seen, model.size());
}

TEST(EdgeTable, MatchesMapModelUnderRandomInsertEraseFind) {
  std::mt19937_64 rng(21);
  EdgeTable table;
  std::map<std::pair<int32_t, uint64_t>, int32_t> model;
  int32_t next_node = 0;
  for (int step = 0; step < 200'000; ++step) {
    // The key space breathes between ~50 and ~6,000 live edges, so the table grows past several
    // doublings and erasures shift long probe runs.
    const bool filling = (step / 20'000) % 2 == 0;
    const int32_t parent = static_cast<int32_t>(rng() % 97);
    // Half small hashes (trace-style consecutive integers), half full-width ones.
    const uint64_t hash = rng() % 2 == 0 ? rng() % 64 : rng();
    const uint64_t op = rng() % 10;
    if (op < (filling ? 6u : 3u)) {
      if (model.count({parent, hash}) == 0) {
        table.insert(parent, hash, next_node);
        model[{parent, hash}] = next_node++;
      }
    } else if (op < 8 && !model.empty()) {
      // Erase a random live edge (picked through the model so erasures actually hit).
      auto it = model.lower_bound({parent, 0});
      if (it == model.end()) it = model.begin();
      table.erase(it->first.first, it->first.second);
      model.erase(it);
    }
    ASSERT_EQ(table.find(parent, hash), model.count({parent, hash}) ? model.at({parent, hash}) : EdgeTable::kAbsent)
        << "step " << step;
    if (step % 5'000 == 0) check_edges(table, model);
  }
  check_edges(table, model);
  EXPECT_THROW(table.insert(model.begin()->first.first, model.begin()->first.second, 1), std::logic_error);
  EXPECT_THROW(table.erase(-5, 1), std::logic_error);
}

TEST(EdgeTable, KeysDifferingOnlyInParentOrHashAreDistinct) {
  EdgeTable table;
  table.insert(0, 1, 10);
  table.insert(1, 0, 11);
  table.insert(0, 0, 12);
  EXPECT_EQ(table.find(0, 1), 10);
  EXPECT_EQ(table.find(1, 0), 11);
  EXPECT_EQ(table.find(0, 0), 12);
  EXPECT_EQ(table.find(1, 1), EdgeTable::kAbsent);
  table.erase(0, 0);
  EXPECT_EQ(table.find(0, 0), EdgeTable::kAbsent);
  EXPECT_EQ(table.find(0, 1), 10);
  EXPECT_EQ(table.size(), 2u);
}

TEST(LruQueue, MatchesSetModelUnderRandomOperations) {
  std::mt19937_64 rng(22);
  LruQueue queue;
  std::set<std::pair<uint64_t, int32_t>> model;  // (last_access, id), the order PrefixTree promises
  std::map<int32_t, uint64_t> key_of;
  uint64_t clock = 0;
  constexpr int32_t kIds = 300;
  for (int step = 0; step < 300'000; ++step) {
    const int32_t id = static_cast<int32_t>(rng() % kIds);
    const uint64_t op = rng() % 10;
    if (op < 3) {
      clock += rng() % 3;  // ties at the same clock happen
      if (key_of.count(id) == 0) {
        // A fresh leaf at the current clock, or an old node becoming evictable again with the
        // last_access it already had (unreferenced, or its last child evicted).
        uint64_t key = rng() % 4 == 0 && clock > 0 ? clock - 1 - rng() % clock : clock;
        queue.insert(id, key);
        model.emplace(key, id);
        key_of[id] = key;
      }
    } else if (op < 5) {
      if (key_of.count(id) != 0) {
        queue.erase(id);
        model.erase({key_of[id], id});
        key_of.erase(id);
      }
    } else if (op < 8) {
      // touch(): re-key a listed id at the newest clock.
      if (key_of.count(id) != 0) {
        clock += 1;
        queue.erase(id);
        queue.insert(id, clock);
        model.erase({key_of[id], id});
        model.emplace(clock, id);
        key_of[id] = clock;
      }
    } else if (!model.empty()) {
      // Evict the least recently used, as make_free does.
      int32_t top = queue.top();
      ASSERT_EQ(top, model.begin()->second) << "step " << step;
      queue.erase(top);
      key_of.erase(top);
      model.erase(model.begin());
    }
    ASSERT_EQ(queue.size(), model.size());
    ASSERT_EQ(queue.top(), model.empty() ? LruQueue::kNone : model.begin()->second) << "step " << step;
    ASSERT_EQ(queue.listed(id), key_of.count(id) != 0);
    if (queue.listed(id)) {
      ASSERT_EQ(queue.key(id), key_of[id]);
    }
    if (step % 5'000 == 0) queue.check_invariants();
  }
  queue.check_invariants();
}

TEST(LruQueue, RepeatedTouchesStayBoundedAndExact) {
  // Many re-keyings of a few ids compact the heap instead of growing it; order stays exact.
  LruQueue queue;
  queue.insert(0, 5);
  queue.insert(1, 5);
  for (uint64_t clock = 6; clock < 100'000; ++clock) {
    queue.erase(0);
    queue.insert(0, clock);
    ASSERT_LE(queue.heap_entries(), 2 * queue.size() + 1024);
  }
  queue.check_invariants();
  EXPECT_EQ(queue.top(), 1);  // (5, 1) is older than (99999, 0)
  queue.erase(1);
  EXPECT_EQ(queue.top(), 0);
  queue.insert(1, 99'999);  // a tie on last_access: the lower id first
  EXPECT_EQ(queue.top(), 0);
  queue.erase(0);
  EXPECT_EQ(queue.top(), 1);
  queue.erase(1);
  EXPECT_EQ(queue.top(), LruQueue::kNone);
}

}  // namespace
}  // namespace kvplan::sim
