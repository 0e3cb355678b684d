// kvplan/sim/prefix_tree_index.h — the two indexes inside PrefixTree, kept apart so each can be
// tested against a plain std::map / std::set model: the edge table (parent, hash) -> child and the
// LRU queue of evictable leaves.
//
//   EdgeTable edges;  edges.insert(/*parent=*/0, /*hash=*/42, /*node=*/1);  edges.find(0, 42) == 1
//   LruQueue lru;     lru.insert(/*id=*/1, /*last_access=*/7);              lru.top() == 1
//
// Both replace node-based standard containers that cost an allocation per insert and a pointer
// chase per probe; a prefix-cached chat simulation inserts and evicts tens of nodes per request.
// Neither is iterated in an order that reaches simulation output: the table's slot order never
// leaves it, and the queue answers exactly what std::set<(last_access, id)>::begin() would.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

namespace kvplan::sim {

// Open-addressing hash table from an edge (parent node, block hash) to the child node id:
// power-of-two capacity, linear probing, backward-shift deletion (no tombstones, so probe lengths
// do not grow with churn), at most half full. Keys are unique; node ids are >= 0.
class EdgeTable {
 public:
  static constexpr int32_t kAbsent = -1;

  EdgeTable();
  // kAbsent when no edge (parent, hash) exists.
  int32_t find(int32_t parent, uint64_t hash) const;
  // Precondition: (parent, hash) is absent and node >= 0.
  void insert(int32_t parent, uint64_t hash, int32_t node);
  // Precondition: (parent, hash) is present.
  void erase(int32_t parent, uint64_t hash);
  size_t size() const { return size_; }
  // Calls fn(parent, hash, node) for every edge, in slot order (for invariant checks only).
  template <typename Fn>
  void for_each(Fn&& fn) const {
    for (const Slot& s : slots_) {
      if (s.node != kAbsent) fn(s.parent, s.hash, s.node);
    }
  }

 private:
  struct Slot {
    uint64_t hash = 0;
    int32_t parent = 0;
    int32_t node = kAbsent;  // kAbsent marks an empty slot
  };
  size_t home(int32_t parent, uint64_t hash) const;
  void grow();

  std::vector<Slot> slots_;  // [capacity], capacity a power of two
  size_t size_ = 0;
};

// The evictable leaves ordered by (last_access, id) ascending: a binary min-heap with lazy
// deletion. erase() only unlists an id; insert() gives it a new version, so at most one entry per
// id (the one carrying its current version, while listed) is live and top() skips the others.
// Why not std::set: no allocation per entry, and the prefix cache's pattern is nearly free here.
// A fresh leaf carries the newest clock and stays at the heap's bottom without a sift; evicting
// the top leaf lists its parent, whose key (same clock, an untouched chain) is usually the new
// minimum: insert() writes it over the stale root and sifts down, one compare pair in the common
// case. The answer is always the same minimum std::set::begin() would give.
class LruQueue {
 public:
  static constexpr int32_t kNone = -1;

  // Precondition: id >= 0 is not listed.
  void insert(int32_t id, uint64_t last_access);
  // Precondition: id is listed.
  void erase(int32_t id);
  bool listed(int32_t id) const { return static_cast<size_t>(id) < ids_.size() && ids_[static_cast<size_t>(id)].listed; }
  // The listed key of id (precondition: listed).
  uint64_t key(int32_t id) const { return ids_[static_cast<size_t>(id)].last_access; }
  size_t size() const { return listed_; }
  // Live plus stale heap entries (tests bound it).
  size_t heap_entries() const { return heap_.size(); }
  // The listed id with the least (last_access, id), or kNone. Drops stale entries it meets, which
  // changes no answer, hence const.
  int32_t top() const;
  // Throws std::logic_error naming the broken invariant: heap order, exactly one live entry per
  // listed id carrying its key.
  void check_invariants() const;

 private:
  struct Entry {
    uint64_t last_access;
    int32_t id;
    uint32_t version;
  };
  struct IdState {
    uint64_t last_access = 0;
    uint32_t version = 0;  // bumped by every insert; entries of older versions are stale (a wrap
                           // needs 2^32 re-listings of one id while its oldest entry waits)
    bool listed = false;
  };
  // Heap order: the least (last_access, id) at heap_[0].
  static bool before(const Entry& a, const Entry& b) {
    return a.last_access != b.last_access ? a.last_access < b.last_access : a.id < b.id;
  }
  bool live(const Entry& e) const {
    const IdState& s = ids_[static_cast<size_t>(e.id)];
    return s.listed && s.version == e.version;
  }
  void sift_up(size_t i) const;
  void sift_down(size_t i) const;
  void compact();

  mutable std::vector<Entry> heap_;  // binary min-heap under before(); live and stale entries
  std::vector<IdState> ids_;         // [max id + 1]
  size_t listed_ = 0;
};

}  // namespace kvplan::sim
