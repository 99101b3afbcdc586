// The plan caches' bound (src/operation/cache_budget.hpp): least recently used out until both the
// entry count and the bytes fit, the kept entry never, the same choice for the same sizes and
// uses (the agreed plan cache relies on it); and the process totals an entry's charge keeps.
#include "operation/cache_budget.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <vector>

namespace {

using mpia::CacheBound;
using mpia::CacheCharge;
using mpia::evict_lru;

struct E {
  int id;
  std::int64_t bytes;
  std::uint64_t used;
};

std::vector<int> ids_after(std::vector<E> v, CacheBound b, int keep = -1,
                           std::vector<int>* dropped = nullptr) {
  evict_lru(
      v, b, [](const E& e) { return e.bytes; }, [](const E& e) { return e.used; },
      [&](const E& e) { return e.id == keep; },
      [&](E& e) {
        if (dropped) dropped->push_back(e.id);
      });
  std::vector<int> ids;
  for (const E& e : v) ids.push_back(e.id);
  return ids;
}

TEST(CacheBudget, EvictsLeastRecentlyUsedUntilBytesFit) {
  const std::vector<E> v = {{0, 100, 5}, {1, 100, 2}, {2, 100, 9}, {3, 100, 1}};
  std::vector<int> dropped;
  EXPECT_EQ(ids_after(v, {16, 250}, -1, &dropped), (std::vector<int>{0, 2}));
  EXPECT_EQ(dropped, (std::vector<int>{3, 1}));                        // oldest first
  EXPECT_EQ(ids_after(v, {16, 400}), (std::vector<int>{0, 1, 2, 3}));  // fits: nothing out
  EXPECT_EQ(ids_after(v, {16, 0}), (std::vector<int>{}));
}

TEST(CacheBudget, EntryBoundAsWell) {
  const std::vector<E> v = {{0, 1, 5}, {1, 1, 2}, {2, 1, 9}, {3, 1, 1}};
  EXPECT_EQ(ids_after(v, {2, 1000}), (std::vector<int>{0, 2}));
  EXPECT_EQ(ids_after(v, {3, 1000}), (std::vector<int>{0, 1, 2}));
}

TEST(CacheBudget, KeptEntryStaysEvenAloneAboveTheBound) {
  const std::vector<E> v = {{0, 50, 5}, {1, 500, 2}, {2, 50, 9}};
  // Entry 1, the oldest and larger than the bound, is the one in use: the others go.
  EXPECT_EQ(ids_after(v, {16, 100}, 1), (std::vector<int>{1}));
  // Not kept: it goes first, and the rest fit.
  EXPECT_EQ(ids_after(v, {16, 100}), (std::vector<int>{0, 2}));
}

TEST(CacheBudget, SameSizesAndUsesSameChoice) {
  // What every rank of the agreed cache computes from the agreed sizes and clock: the result
  // depends on nothing else (say, the order the entries sit in).
  const std::vector<E> a = {{0, 70, 3}, {1, 30, 7}, {2, 90, 1}, {3, 40, 8}, {4, 60, 5}};
  std::vector<E> b(a.rbegin(), a.rend());
  std::vector<int> x = ids_after(a, {4, 150}), y = ids_after(b, {4, 150});
  std::sort(x.begin(), x.end());
  std::sort(y.begin(), y.end());
  EXPECT_EQ(x, y);
  EXPECT_EQ(x, (std::vector<int>{1, 3, 4}));
}

TEST(CacheBudget, ChargesCountInTheTotals) {
  const mpia::PlanCacheTotals before = mpia::plan_cache_totals();
  {
    CacheCharge a, b;
    a.set(1000);
    b.set(3000);
    EXPECT_EQ(mpia::plan_cache_totals().bytes, before.bytes + 4000);
    EXPECT_EQ(mpia::plan_cache_totals().entries, before.entries + 2);
    b.set(500);  // re-measured: the same entry, fewer bytes
    EXPECT_EQ(mpia::plan_cache_totals().bytes, before.bytes + 1500);
    EXPECT_EQ(mpia::plan_cache_totals().entries, before.entries + 2);
    EXPECT_GE(mpia::plan_cache_totals().peak, before.bytes + 4000);
    EXPECT_GE(mpia::plan_cache_totals().largest, 3000);
    CacheCharge c(std::move(a));  // moves carry the charge
    EXPECT_EQ(c.bytes(), 1000);
    EXPECT_EQ(a.bytes(), 0);
    std::vector<CacheCharge> v;
    v.push_back(std::move(c));
    v.emplace_back();
    v.back().set(7);
    v.erase(v.begin());  // the erased one's charge goes, the moved one's stays
    EXPECT_EQ(mpia::plan_cache_totals().bytes, before.bytes + 507);
    EXPECT_EQ(mpia::plan_cache_totals().entries, before.entries + 2);
  }
  EXPECT_EQ(mpia::plan_cache_totals().bytes, before.bytes);
  EXPECT_EQ(mpia::plan_cache_totals().entries, before.entries);
  EXPECT_GE(mpia::plan_cache_totals().peak, before.bytes + 4000);  // a high-water mark
}

}  // namespace
