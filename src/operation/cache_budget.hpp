// What bounds the plan caches (issue 41): every per-communicator cache of plans -- the blocking
// calls' last plan and agreed plan cache (blocking_cache.hpp), the nonblocking calls' idle plans
// (nonblocking.hpp) -- holds at most a number of entries and a number of bytes
// (MPIX_PLAN_CACHE_BYTES, settings.hpp), least recently used out; and the process counts what
// they all hold (mpia_private_plan_cache_bytes, printed by MPIX_REPORT).
#pragma once

#include <cstddef>
#include <cstdint>
#include <utility>
#include <vector>

namespace mpia {

// The process's plan caches, every communicator's: bytes and entries held now, the high-water
// mark of the bytes, and the largest plan ever held.
struct PlanCacheTotals {
  std::int64_t bytes = 0, peak = 0, entries = 0, largest = 0;
};
PlanCacheTotals plan_cache_totals();

// One cache entry's share of the totals: counted from its first set() until it is destroyed or
// released (moves carry it; thread-safe).
class CacheCharge {
 public:
  CacheCharge() = default;
  CacheCharge(CacheCharge&& o) noexcept : bytes_(std::exchange(o.bytes_, -1)) {}
  CacheCharge& operator=(CacheCharge&& o) noexcept {
    if (this != &o) {
      release();
      bytes_ = std::exchange(o.bytes_, -1);
    }
    return *this;
  }
  CacheCharge(const CacheCharge&) = delete;
  CacheCharge& operator=(const CacheCharge&) = delete;
  ~CacheCharge() { release(); }
  // The entry now holds `bytes` (counted as an entry from the first call on).
  void set(std::int64_t bytes);
  void release();
  std::int64_t bytes() const { return bytes_ < 0 ? 0 : bytes_; }

 private:
  std::int64_t bytes_ = -1;  // -1: not counted
};

struct CacheBound {
  std::size_t entries;
  std::int64_t bytes;
};

// Erases entries of v, least recently used first (used(e): larger is more recent), until at most
// bound.entries remain and their size(e) sums to at most bound.bytes; an entry keep(e) holds for
// is never erased (so one kept entry may exceed bound.bytes alone). drop(e) sees each entry just
// before it is erased. Returns how many were erased. Deterministic: given the same sizes and
// uses, every caller erases the same entries (what the agreed cache relies on).
template <class E, class Size, class Used, class Keep, class Drop>
std::size_t evict_lru(std::vector<E>& v, const CacheBound& bound, Size&& size, Used&& used,
                      Keep&& keep, Drop&& drop) {
  std::int64_t total = 0;
  for (const E& e : v) total += size(e);
  std::size_t erased = 0;
  while (v.size() > bound.entries || total > bound.bytes) {
    auto lru = v.end();
    for (auto it = v.begin(); it != v.end(); ++it)
      if (!keep(*it) && (lru == v.end() || used(*it) < used(*lru))) lru = it;
    if (lru == v.end()) break;
    total -= size(*lru);
    drop(*lru);
    v.erase(lru);
    ++erased;
  }
  return erased;
}

}  // namespace mpia
