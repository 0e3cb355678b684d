// Edge table and LRU queue of the prefix tree (see prefix_tree_index.h).
#include "kvplan/sim/prefix_tree_index.h"

#include <stdexcept>
#include <string>

namespace kvplan::sim {

namespace {

constexpr size_t kInitialSlots = 64;

[[noreturn]] void fail(const std::string& what) { throw std::logic_error("LruQueue invariant broken: " + what); }

}  // namespace

EdgeTable::EdgeTable() : slots_(kInitialSlots) {}

size_t EdgeTable::home(int32_t parent, uint64_t hash) const {
  // Trace hashes can be small consecutive integers: mix all bits (a murmur3-style finalizer) so
  // the low bits that pick the slot depend on both parent and hash.
  uint64_t x = hash ^ (static_cast<uint64_t>(static_cast<uint32_t>(parent)) * 0x9E3779B97F4A7C15ull);
  x ^= x >> 33;
  x *= 0xFF51AFD7ED558CCDull;
  x ^= x >> 33;
  return static_cast<size_t>(x) & (slots_.size() - 1);
}

int32_t EdgeTable::find(int32_t parent, uint64_t hash) const {
  const size_t mask = slots_.size() - 1;
  for (size_t i = home(parent, hash);; i = (i + 1) & mask) {
    const Slot& s = slots_[i];
    if (s.node == kAbsent) return kAbsent;
    if (s.hash == hash && s.parent == parent) return s.node;
  }
}

void EdgeTable::insert(int32_t parent, uint64_t hash, int32_t node) {
  if ((size_ + 1) * 2 > slots_.size()) grow();
  const size_t mask = slots_.size() - 1;
  size_t i = home(parent, hash);
  for (; slots_[i].node != kAbsent; i = (i + 1) & mask) {
    if (slots_[i].hash == hash && slots_[i].parent == parent) throw std::logic_error("EdgeTable: edge inserted twice");
  }
  slots_[i] = Slot{.hash = hash, .parent = parent, .node = node};
  size_ += 1;
}

void EdgeTable::erase(int32_t parent, uint64_t hash) {
  const size_t mask = slots_.size() - 1;
  size_t hole = home(parent, hash);
  for (; slots_[hole].hash != hash || slots_[hole].parent != parent; hole = (hole + 1) & mask) {
    if (slots_[hole].node == kAbsent) throw std::logic_error("EdgeTable: erase of a missing edge");
  }
  if (slots_[hole].node == kAbsent) throw std::logic_error("EdgeTable: erase of a missing edge");
  // Backward shift: move later entries of the probe run into the hole when their home is not
  // inside (hole, j] (cyclically), so every entry stays reachable from its home without gaps.
  for (size_t j = (hole + 1) & mask; slots_[j].node != kAbsent; j = (j + 1) & mask) {
    size_t h = home(slots_[j].parent, slots_[j].hash);
    bool home_in_gap = hole <= j ? (hole < h && h <= j) : (hole < h || h <= j);
    if (!home_in_gap) {
      slots_[hole] = slots_[j];
      hole = j;
    }
  }
  slots_[hole] = Slot{};
  size_ -= 1;
}

void EdgeTable::grow() {
  std::vector<Slot> old(slots_.size() * 2);
  old.swap(slots_);
  const size_t mask = slots_.size() - 1;
  for (const Slot& s : old) {
    if (s.node == kAbsent) continue;
    size_t i = home(s.parent, s.hash);
    while (slots_[i].node != kAbsent) i = (i + 1) & mask;
    slots_[i] = s;
  }
}

void LruQueue::insert(int32_t id, uint64_t last_access) {
  if (static_cast<size_t>(id) >= ids_.size()) ids_.resize(static_cast<size_t>(id) + 1);
  IdState& s = ids_[static_cast<size_t>(id)];
  s.listed = true;
  s.last_access = last_access;
  s.version += 1;
  listed_ += 1;
  const Entry entry{.last_access = last_access, .id = id, .version = s.version};
  if (!heap_.empty() && !live(heap_.front())) {
    // The root is stale (typically the leaf just evicted): reuse its place.
    heap_.front() = entry;
    sift_down(0);
    return;
  }
  // Stale entries (erased or re-keyed ids) wait in the heap until they reach the top; bound them
  // so a long run of touches on a few nodes cannot grow the heap without limit.
  if (heap_.size() >= 2 * listed_ + 1024) compact();
  heap_.push_back(entry);
  sift_up(heap_.size() - 1);
}

void LruQueue::erase(int32_t id) {
  ids_[static_cast<size_t>(id)].listed = false;
  listed_ -= 1;
}

int32_t LruQueue::top() const {
  while (!heap_.empty() && !live(heap_.front())) {
    heap_.front() = heap_.back();
    heap_.pop_back();
    if (!heap_.empty()) sift_down(0);
  }
  return heap_.empty() ? kNone : heap_.front().id;
}

void LruQueue::sift_up(size_t i) const {
  const Entry moving = heap_[i];
  while (i > 0) {
    size_t parent = (i - 1) / 2;
    if (!before(moving, heap_[parent])) break;
    heap_[i] = heap_[parent];
    i = parent;
  }
  heap_[i] = moving;
}

void LruQueue::sift_down(size_t i) const {
  const Entry moving = heap_[i];
  const size_t n = heap_.size();
  for (size_t child = 2 * i + 1; child < n; child = 2 * i + 1) {
    if (child + 1 < n && before(heap_[child + 1], heap_[child])) child += 1;
    if (!before(heap_[child], moving)) break;
    heap_[i] = heap_[child];
    i = child;
  }
  heap_[i] = moving;
}

void LruQueue::compact() {
  std::erase_if(heap_, [&](const Entry& e) { return !live(e); });
  // Floyd's heap construction: sift every inner node down, last first.
  for (size_t i = heap_.size() / 2; i-- > 0;) sift_down(i);
}

void LruQueue::check_invariants() const {
  for (size_t i = 1; i < heap_.size(); ++i) {
    if (before(heap_[i], heap_[(i - 1) / 2])) fail("heap order at entry " + std::to_string(i));
  }
  std::vector<int> live_entries(ids_.size(), 0);
  for (const Entry& e : heap_) {
    if (e.id < 0 || static_cast<size_t>(e.id) >= ids_.size()) fail("entry for unknown id " + std::to_string(e.id));
    if (!live(e)) continue;
    live_entries[static_cast<size_t>(e.id)] += 1;
    if (e.last_access != ids_[static_cast<size_t>(e.id)].last_access) fail("live entry key of id " + std::to_string(e.id));
  }
  size_t listed = 0;
  for (size_t i = 0; i < ids_.size(); ++i) {
    if (live_entries[i] != (ids_[i].listed ? 1 : 0)) fail("live entries of id " + std::to_string(i));
    if (ids_[i].listed) listed += 1;
  }
  if (listed != listed_) fail("listed count");
}

}  // namespace kvplan::sim
