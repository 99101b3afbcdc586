// Nonblocking collectives (MPIX_Ialltoall and the others): a one-shot start of a plan.
//
// A nonblocking call must not wait for other ranks, so it agrees on nothing: what it runs
// follows from what every rank already shares (the communicator's choice and the environment,
// agreed when the communicator was first used; the block size of an alltoall, which MPI makes
// equal on every rank), and its tag from the number of nonblocking calls made on the
// communicator before it, which MPI makes equal too (collective calls are made in the same order
// everywhere). Calls use kSlots tags above the persistent requests' range in turn. A plan whose
// slot's tag is still in use on this rank by an earlier call waits, posting nothing, until that
// call completes here: then every message of the earlier call to or from this rank has been
// matched, so the later one's, sent after them on the same tag, cannot be taken for them (MPI's
// messages between two ranks on one tag match in order). The MPI library's own nonblocking call
// needs no tag and never waits: it is made at once, in call order.
//
// A plan is taken from a per-communicator cache of idle plans when the same arguments (the same
// buffers, predefined datatypes) and the same slot come again, so a repeated pattern costs what a
// persistent start costs after kSlots calls; a completed call gives its plan back. The cache
// holds at most kIdle plans and MPIX_PLAN_CACHE_BYTES (the plan just given back is kept even
// alone above it), least recently given back out: local, as its hits are (a cached plan and a
// new one send the same messages).
#pragma once

#include "collective/registry.hpp"
#include "operation/cache_budget.hpp"
#include "operation/operation.hpp"

#include <array>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

namespace mpia {

// What a private communicator keeps for its nonblocking calls.
struct NonblockingState {
  static constexpr int kSlots = 8;
  static constexpr std::size_t kIdle = 16;  // idle plans kept, least recently used dropped
  int base_tag = 1;                         // tags base_tag .. base_tag + kSlots - 1
  std::uint64_t sequence = 0;               // nonblocking calls made (equal on every rank)
  // The last selection per collective, for the same choice text, memo key (an alltoall's block)
  // and whether the node map was known: a repeated call resolves nothing (the calls of one
  // communicator are made by one thread at a time, as MPI requires of collectives).
  struct Memo {
    bool valid = false;
    std::string text;
    std::int64_t key = 0;
    bool located = false;
    Selection selection;
  };
  std::array<Memo, kCollectives> memo;

  std::mutex mutex;  // what follows: completions may run in any thread
  // Per slot, in the order of the calls (every rank's order): tickets handed out, and the ticket
  // of the call that may post now -- the one before it has completed here. Calls of one tag
  // post strictly in call order, whichever is driven first.
  std::array<std::uint64_t, kSlots> issued{}, serving{};
  struct Idle {
    std::vector<std::int64_t> key;
    std::unique_ptr<Operation> plan;
    std::uint64_t used = 0;
    std::int64_t bytes = 0;  // the plan's and the key's
    CacheCharge charge;
  };
  std::vector<Idle> idle;
  std::uint64_t clock = 0;

  // The idle plan of key, taken out of the cache with its own copy of the key (into `kept`) and
  // its bytes (into `bytes`); null when there is none.
  std::unique_ptr<Operation> take(const std::vector<std::int64_t>& key,
                                  std::vector<std::int64_t>& kept, std::int64_t& bytes);
  // A call's key is built here (the calls of a communicator are made one at a time): a hit
  // allocates nothing.
  std::vector<std::int64_t> scratch;
  // Keeps plan for key (bytes: its size, or -1 when not known yet), dropping the least recently
  // used beyond kIdle and MPIX_PLAN_CACHE_BYTES.
  void give(std::vector<std::int64_t> key, std::unique_ptr<Operation> plan, std::int64_t bytes);
  // What the idle plans hold now.
  std::int64_t bytes();
  // Drops every idle plan (the communicator's state is going).
  void clear();
};

// A nonblocking call's operation: its plan, started once its slot's tag is free (slot < 0: the
// MPI library's call, at once). When it completes, finish() gives the plan back to the cache
// (keyed by key; an empty key: not cacheable).
class NonblockingOperation : public Operation {
 public:
  // slot >= 0 takes the slot's next ticket (calls are made in order on every rank).
  NonblockingOperation(std::shared_ptr<PrivateComm> comm, int slot, std::unique_ptr<Operation> plan,
                       std::vector<std::int64_t> key, std::int64_t plan_bytes = -1);
  ~NonblockingOperation() override;

  std::string algorithm() const override { return plan_->algorithm(); }
  Traffic traffic() const override { return plan_->traffic(); }
  Memory memory() const override;
  // After completion: the plan back to the communicator's cache (if it can be reused).
  void finish();

 protected:
  bool do_start() override;
  bool do_progress(bool block) override;

 private:
  bool claim();    // whether this call's ticket is served (the earlier ones completed here)
  void release();  // serves the next ticket
  std::shared_ptr<PrivateComm> comm_;
  int slot_;
  std::unique_ptr<Operation> plan_;
  std::vector<std::int64_t> key_;
  std::int64_t plan_bytes_;  // what the cache counted for plan_ (-1: not measured yet)
  std::uint64_t ticket_ = 0;
  bool posted_ = false;  // the plan is started (the slot is this call's)
};

}  // namespace mpia
