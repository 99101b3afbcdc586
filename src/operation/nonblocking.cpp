#include "operation/nonblocking.hpp"

#include "operation/settings.hpp"

#include <algorithm>
#include <thread>

namespace mpia {

std::unique_ptr<Operation> NonblockingState::take(const std::vector<std::int64_t>& key,
                                                  std::vector<std::int64_t>& kept,
                                                  std::int64_t& bytes) {
  Idle taken;  // its charge released outside the lock
  {
    std::lock_guard<std::mutex> lock(mutex);
    auto it = std::find_if(idle.begin(), idle.end(), [&](const Idle& x) { return x.key == key; });
    if (it == idle.end()) return nullptr;
    taken = std::move(*it);
    idle.erase(it);
  }
  kept = std::move(taken.key);
  bytes = taken.bytes;
  return std::move(taken.plan);
}

void NonblockingState::give(std::vector<std::int64_t> key, std::unique_ptr<Operation> plan,
                            std::int64_t bytes) {
  // Measured once per plan, outside the lock (memory() walks the plan).
  if (bytes < 0) bytes = plan->memory().bytes + std::int64_t(key.capacity() * sizeof(std::int64_t));
  std::vector<std::unique_ptr<Operation>> dropped;  // freed outside the lock
  std::lock_guard<std::mutex> lock(mutex);
  idle.push_back(Idle{std::move(key), std::move(plan), ++clock, bytes, CacheCharge()});
  idle.back().charge.set(bytes);
  const std::uint64_t newest = clock;
  evict_lru(
      idle, CacheBound{kIdle, settings().plan_cache_bytes}, [](const Idle& x) { return x.bytes; },
      [](const Idle& x) { return x.used; }, [&](const Idle& x) { return x.used == newest; },
      [&](Idle& x) { dropped.push_back(std::move(x.plan)); });
}

std::int64_t NonblockingState::bytes() {
  std::lock_guard<std::mutex> lock(mutex);
  std::int64_t b = 0;
  for (const Idle& x : idle) b += x.bytes;
  return b;
}

void NonblockingState::clear() {
  std::vector<Idle> dropped;  // freed outside the lock
  {
    std::lock_guard<std::mutex> lock(mutex);
    dropped.swap(idle);
  }
}

NonblockingOperation::NonblockingOperation(std::shared_ptr<PrivateComm> comm, int slot,
                                           std::unique_ptr<Operation> plan,
                                           std::vector<std::int64_t> key, std::int64_t plan_bytes)
    : comm_(std::move(comm)),
      slot_(slot),
      plan_(std::move(plan)),
      key_(std::move(key)),
      plan_bytes_(plan_bytes) {
  if (slot_ < 0) return;
  NonblockingState& ns = *comm_->nonblocking;
  std::lock_guard<std::mutex> lock(ns.mutex);
  ticket_ = ns.issued[std::size_t(slot_)]++;
}

NonblockingOperation::~NonblockingOperation() {
  if (posted_) release();  // never while running: a request is freed only once complete
}

Memory NonblockingOperation::memory() const {
  Memory m = plan_->memory();
  m.bytes += sizeof(*this) + std::int64_t(key_.capacity() * sizeof(std::int64_t));
  return m;
}

bool NonblockingOperation::claim() {
  if (slot_ < 0) return true;
  NonblockingState& ns = *comm_->nonblocking;
  std::lock_guard<std::mutex> lock(ns.mutex);
  return ns.serving[std::size_t(slot_)] == ticket_;
}

void NonblockingOperation::release() {
  posted_ = false;
  if (slot_ < 0) return;
  NonblockingState& ns = *comm_->nonblocking;
  std::lock_guard<std::mutex> lock(ns.mutex);
  ++ns.serving[std::size_t(slot_)];
}

bool NonblockingOperation::do_start() {
  if (!claim()) return false;  // an earlier call still uses the tag: posted when it completes
  posted_ = true;
  const bool done = start_part(*plan_);
  if (done) release();
  return done;
}

bool NonblockingOperation::do_progress(bool block) {
  while (!posted_) {
    if (claim()) {
      posted_ = true;
      if (start_part(*plan_)) {
        release();
        return true;
      }
      break;
    }
    if (!block) return false;
    // The earlier call is another running operation: drive it (and the others) meanwhile.
    if (!progress_running()) std::this_thread::yield();
  }
  const bool done = progress_part(*plan_, block);
  if (done) release();
  return done;
}

void NonblockingOperation::finish() {
  if (key_.empty() || !plan_ || comm_->user_freed.load(std::memory_order_acquire)) return;
  comm_->nonblocking->give(std::move(key_), std::move(plan_), plan_bytes_);
}

}  // namespace mpia
