// What blocking calls keep per communicator (CommState::blocking): the memo of the last
// selection, the last plan and the words it was built for, the agreed plan cache of v- and
// neighbor calls (agreed_cache.hpp), and the trials of blocking auto. Made by the first blocking
// call and used by the pipeline (pipeline.hpp) only, through the functions below.
#pragma once

#include "collective/registry.hpp"
#include "collective/resolve.hpp"
#include "operation/args.hpp"
#include "operation/cache_budget.hpp"
#include "operation/comm_state.hpp"
#include "operation/operation.hpp"
#include "operation/select.hpp"
#include "operation/settings.hpp"

#include <array>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace mpia {

struct AgreedPlan;  // agreed_cache.hpp

struct BlockingCache {
  // The selection resolved for the last default and key (block size, or
  // auto's agreed statistics) is kept, so a repeated call parses nothing and runs no model;
  // and the last call's plan is kept with the raw argument words it was built for, so a
  // repeated call builds nothing. Comparing reuses call_words' capacity: no allocation.
  struct Memo {
    int collective = -1;
    std::string text;
    std::int64_t key = 0;
    Selection selection;
  } memo;
  std::uint64_t memo_serial = 0;  // counts the memo's rewrites (blocking_selection)
  std::unique_ptr<Operation> cached;
  std::vector<std::int64_t> cached_words, call_words;
  // cached's bytes in the process's totals (cache_budget.hpp). A cache of one plan, the one the
  // last call ran: kept whatever its size (it was allocated for the call anyway).
  CacheCharge cached_charge;
  // A blocking alltoall repeated with the same arguments: those of the call that built cached
  // for a settled selection (no trial running), the memo as it was then. While the memo, cached
  // and the arguments are unchanged, a call runs cached at once: its checks passed on these
  // arguments (predefined types only), and the selection, the trial state and whatever else
  // ranks must do alike follow from the memo, which every rank keeps alike.
  struct Repeat {
    bool valid = false;
    std::uint64_t memo_serial = 0;
    AlltoallArgs args;
    const Selection* selection = nullptr;
  } repeat;
  // The agreed plan cache of blocking alltoallv and neighbor calls whose algorithm needs
  // agreement (auto, bruck, locality): plans built collectively like a persistent init, kept
  // per pattern (this rank's counts, displacements, types), used only when every rank hits the
  // same entry (run_agreed, agreed_cache.hpp). Entries and their ids are created, used and evicted
  // in step on every rank: at most kEntries, and at most MPIX_PLAN_CACHE_BYTES by their agreed
  // sizes (the largest over ranks of an entry's bytes), the least recently agreed-on first.
  struct PlanCache {
    static constexpr std::size_t kEntries = 16;
    struct Entry {
      std::int64_t id = -1;
      int collective = -1;  // -1: emptied (its pattern rebuilt here), kept until evicted
      std::vector<std::int64_t> key;
      std::shared_ptr<AgreedPlan> plan;
      std::unique_ptr<Operation> op;  // the plan lowered for these buffers
      const void* sendbuf = nullptr;
      const void* recvbuf = nullptr;
      std::uint64_t used = 0;  // the agreed clock of its last agreed run (the same on every rank)
      std::int64_t agreed_bytes = 0;  // the largest over ranks of its bytes when last measured
      CacheCharge charge;             // this rank's bytes of it
      Entry();
      Entry(Entry&&) noexcept;
      Entry& operator=(Entry&&) noexcept;
      ~Entry();
    };
    std::vector<Entry> entries;
    std::int64_t next_id = 0;
    std::uint64_t clock = 0;  // agreements of the cache (the same on every rank)
    // The entry the last agreed call ran, whose bytes the next agreement measures (-1: none).
    std::int64_t measure_id = -1;
    std::vector<std::int64_t> key;  // this call's (scratch: no allocation)
    // Hashes of the patterns of the last kRecent uncached calls: a pattern found here is
    // "seen before" (a false match only costs an agreed build, never a wrong plan).
    static constexpr std::size_t kRecent = 16;
    std::uint64_t recent[kRecent] = {};
    std::size_t recent_next = 0;
    // Calls of each collective on the agreed path (the same count on every rank), and whether
    // the last agreed plan is a direct exchange: then calls agree only every kReagree-th call.
    static constexpr std::uint64_t kReagree = 64;
    struct Path {
      std::uint64_t calls = 0;
      bool direct = false;
      // Whether the default text `text` takes the agreed path (agreed_blocking): 1, 0, or -1
      // (not decided yet).
      std::string text;
      int agreed = -1;
    };
    std::array<Path, kCollectives> path;
  } plans;
  // Blocking calls under auto that measure: the trial of each memo key (the block size of an
  // alltoall; pipeline.hpp), created, run and dropped in step on every rank (every rank makes the
  // same calls).
  struct BlockingTrial {
    int collective = -1;
    std::int64_t key = -1;
    std::string text;  // the default algorithm text it was made under
    std::shared_ptr<AgreedPlan> plan;
  };
  static constexpr std::size_t kBlockingTrials = 8;
  std::vector<BlockingTrial> trials;
  BlockingCache();
  ~BlockingCache();
};

// The communicator's blocking cache, made by its first blocking call.
inline BlockingCache& blocking_cache(CommState& st) {
  if (!st.blocking) st.blocking = std::make_shared<BlockingCache>();
  return *st.blocking;
}

// Blocking calls whose algorithm is auto need the machine (the node map: collective the first
// time), so it is taken before any local argument check can make ranks diverge. Every rank has
// the same default text, so all or none take it.
void blocking_machine(CommState& st, Collective c);

// The blocking selection for collective c: from the memo when the communicator's default text
// and the key are unchanged, else selected and resolved afresh (resolve(auto's selection): what
// it runs; not called for another record).
template <class Resolve>
const Selection& blocking_selection(CommState& st, Collective c, std::int64_t key,
                                    Resolve&& resolve) {
  const std::string& text = st.default_algorithm(c);
  BlockingCache& bc = blocking_cache(st);
  BlockingCache::Memo& m = bc.memo;
  if (m.collective != int(c) || m.key != key || m.text != text) {
    m.collective = -1;  // invalid until the new selection is complete
    ++bc.memo_serial;
    Selection sel = select_algorithm(c, MPI_INFO_NULL, text, extent_of(st));
    if (resolves(sel)) sel = resolve(sel);
    m.selection = sel;
    m.text = text;
    m.key = key;
    m.collective = int(c);
  }
  return m.selection;
}

// What the last plan of blocking calls (BlockingCache::cached) holds: the plan and its words.
std::int64_t cached_plan_bytes(const BlockingCache& bc);

// Runs a blocking call's plan: the cached one when this call's argument words match the words
// it was built for, else a new one from build(), kept if cacheable. Its error (after the whole
// schedule ran) is thrown. Returns whether the cached plan ran.
template <class Build>
bool run_blocking(CommState& st, bool cacheable, Build&& build) {
  BlockingCache& bc = blocking_cache(st);
  if (cacheable && bc.cached && bc.call_words == bc.cached_words) {
    bc.cached->start();
    bc.cached->wait();
    return true;
  }
  bc.cached.reset();
  bc.cached_charge.release();
  bc.repeat.valid = false;
  std::unique_ptr<Operation> op = build();
  op->start();
  if (cacheable) {
    bc.cached = std::move(op);
    bc.cached_words.swap(bc.call_words);
    bc.cached_charge.set(cached_plan_bytes(bc));
    bc.cached->wait();
  } else {
    op->wait();
  }
  return false;
}

// MPIX_REPORT: what the last blocking call of c ran.
inline void note_call(CommState& st, Collective c, const Selection& sel, bool hit) {
  if (!settings().report) return;
  CommState::PerCollective& per = st.per[std::size_t(c)];
  per.last_algorithm = sel.to_string();
  per.last_hit = hit;
}

// What a communicator's plan caches hold (mpia_private_comm_plan_cache): the agreed cache's entries
// and the sum of their agreed sizes, and this rank's bytes of every cache (the agreed one, the last
// plan of blocking calls, the idle plans of nonblocking calls).
struct CommPlanCache {
  std::int64_t entries = 0, agreed_bytes = 0, bytes = 0;
};
CommPlanCache comm_plan_cache(const CommState& st);

}  // namespace mpia
