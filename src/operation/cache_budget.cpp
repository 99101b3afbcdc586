#include "operation/cache_budget.hpp"

#include <atomic>

namespace mpia {

namespace {

std::atomic<std::int64_t> g_bytes{0}, g_peak{0}, g_entries{0}, g_largest{0};

void raise_to(std::atomic<std::int64_t>& a, std::int64_t v) {
  std::int64_t seen = a.load(std::memory_order_relaxed);
  while (v > seen && !a.compare_exchange_weak(seen, v, std::memory_order_relaxed)) {
  }
}

}  // namespace

PlanCacheTotals plan_cache_totals() {
  PlanCacheTotals t;
  t.bytes = g_bytes.load(std::memory_order_relaxed);
  t.peak = g_peak.load(std::memory_order_relaxed);
  t.entries = g_entries.load(std::memory_order_relaxed);
  t.largest = g_largest.load(std::memory_order_relaxed);
  return t;
}

void CacheCharge::set(std::int64_t bytes) {
  if (bytes_ < 0) {
    g_entries.fetch_add(1, std::memory_order_relaxed);
    bytes_ = 0;
  }
  const std::int64_t now =
      g_bytes.fetch_add(bytes - bytes_, std::memory_order_relaxed) + (bytes - bytes_);
  bytes_ = bytes;
  raise_to(g_peak, now);
  raise_to(g_largest, bytes);
}

void CacheCharge::release() {
  if (bytes_ < 0) return;
  g_bytes.fetch_sub(bytes_, std::memory_order_relaxed);
  g_entries.fetch_sub(1, std::memory_order_relaxed);
  bytes_ = -1;
}

}  // namespace mpia
