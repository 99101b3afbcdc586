// The agreed plan cache of blocking v-collectives (alltoallv and the neighbor calls).
//
// An application that calls MPI_Alltoallv thousands of times with one pattern should get
// persistent performance, and auto should be free to choose what needs agreement (bruck,
// locality) -- but a rank cannot know alone that its peers' arguments repeat too. So every such
// call runs one small allreduce (5 words, MPI_MAX) of: the id of the cache entry this rank's
// own pattern (call_words-like key, buffers excluded) matches, its negation, whether the
// pattern was seen before (an entry, or one of the last kRecent uncached patterns), whether
// its arguments failed a local check, and this rank's bytes of the entry the last agreed call
// ran (the bound in bytes, below).
//   - every rank hit the same entry: run it (re-lowered locally when the buffers moved);
//   - every rank has seen its pattern before, or one has an argument error: build a plan the
//     way a persistent init does (agreed errors, sizes, auto on agreed statistics; its own
//     tag), insert it with the next id (LRU eviction: kEntries and MPIX_PLAN_CACHE_BYTES per
//     communicator) and run it;
//   - else (a pattern seen for the first time somewhere): return false, the caller runs its
//     uncached direct exchange, which needs no agreement.
// Direct mode: when the last agreed plan is a direct exchange (one message per pair, like the
// uncached one, on tag 0 like every blocking call), ranks need not agree at all -- a rank
// running its cached direct plan and one running an uncached exchange send the same messages --
// so calls skip the allreduce except every kReagree-th (the same calls on every rank), and
// a local argument error is then this rank's alone (thrown by the caller), as in MPI.
// An entry's id names one agreed build, for which every rank keyed the plan with its own pattern
// of the time: a hit needs every rank to find the same id, so a rank whose counts changed can
// never run a stale plan while its peers reuse theirs. (Ranks' caches may hold different
// entries -- a rank drops its own older entry of a pattern rebuilt -- which costs at most a
// build, never a wrong plan.) Datatypes enter the key by type_identity (a freed handle that MPI
// hands out again is a new identity); the plan holds its own duplicates of them.
//
// Bounded in bytes as well as entries (MPIX_PLAN_CACHE_BYTES, agreed like every setting that
// changes what ranks do together). The decision what to run needs no agreement on the cache's
// contents -- a hit needs every rank to find the same id, so a rank that dropped an entry its
// peers kept only makes every rank build again -- but a cache whose ranks evict different
// entries loses the hits it is for: one rank's eviction is a miss for all. So every rank holds
// the same ids and evicts the same ones at the same call, by quantities every rank has alike:
//   - an entry's size is agreed: the allreduce of every agreed call carries a fifth word, this
//     rank's bytes of the entry the previous agreed call ran (measure_id; MPI_MAX), which
//     becomes that entry's agreed size (the largest over ranks, >= this rank's bytes);
//   - recency is the agreed clock (one tick per agreement): an entry's `used` is set only when
//     an agreed call runs it (a direct-mode call, which agrees on nothing, leaves it);
//   - right after the allreduce, every rank evicts least recently used entries (never the one
//     this call runs) until kEntries (one fewer when this call builds) and the bound hold on
//     the agreed sizes (evict_lru, cache_budget.hpp: deterministic);
//   - a rank's older entry of a rebuilt pattern is emptied (plan freed, key cleared) but keeps
//     its id and agreed size until evicted, so that the ids stay the same everywhere.
// A new entry counts 0 until the next agreement measures it: a cache holds at most the bound by
// agreed sizes -- or one entry alone, the one a call runs -- plus its newest entry, so this
// rank's bytes stay within the bound plus one plan. (A direct-mode call that re-lowers an entry
// for moved buffers changes its bytes without an agreement; the same schedule over other
// buffers, its size is what was measured, up to the buffers' datatypes.)
#pragma once

#include "collective/registry.hpp"
#include "collective/shortlist.hpp"
#include "operation/comm_state.hpp"
#include "operation/operation.hpp"
#include "operation/private_comm.hpp"
#include "operation/trial.hpp"
#include "schedule/schedule.hpp"

#include <functional>
#include <memory>
#include <string>
#include <vector>

namespace mpia {

struct AgreedPlan {
  Selection selection;
  std::string algorithm;                     // selection.to_string()
  std::shared_ptr<const Schedule> schedule;  // null for the system's own collective
  Traffic traffic;
  TagLease tag;
  // auto's shortlist (trial.hpp), the entry above first; empty when it runs no trial. The
  // state is the trial's so far, shared by every lowering of the plan.
  std::vector<TrialEntry> trial;
  TrialPoint point;
  std::shared_ptr<TrialState> trial_state;
};

// Fills plan's entries from list, in its order on every rank: schedule(selection, last) builds
// one (collective for an entry that learns its peers' sizes at init; last: the arguments may be
// consumed), traffic(schedule) counts it. The first entry is the plan's selection; a list of one
// runs no trial. later(selection), when given, returns what builds a second-round entry when it
// runs (TrialEntry::build: it must own what it needs), or nothing to build it now.
using LaterBuild = std::function<std::shared_ptr<const Schedule>(Traffic&)>;
template <class BuildSchedule, class TrafficOf>
void set_entries(AgreedPlan& plan, const Shortlist& list, BuildSchedule&& schedule,
                 TrafficOf&& traffic,
                 const std::function<LaterBuild(const Selection&)>& later = nullptr) {
  const std::vector<Selection>& sel = list.entries;
  for (std::size_t i = 0; i < sel.size(); ++i) {
    TrialEntry e;
    e.selection = sel[i];
    e.refines = list.refines[i];
    if (later && e.refines >= 0 && sel.size() > 1) e.build = later(sel[i]);
    if (!e.build) {
      e.schedule = schedule(sel[i], i + 1 == sel.size());
      e.traffic = traffic(e.schedule.get());
    }
    plan.trial.push_back(std::move(e));
  }
  plan.schedule = plan.trial[0].schedule;
  plan.traffic = plan.trial[0].traffic;
  plan.selection = plan.trial[0].selection;
  plan.algorithm = plan.selection.to_string();
  if (plan.trial.size() == 1)
    plan.trial.clear();
  else
    plan.trial_state = std::make_shared<TrialState>();
}

bool run_agreed(CommState& st, Collective c, bool local_ok, const void* sendbuf,
                const void* recvbuf, const std::function<std::shared_ptr<AgreedPlan>()>& build,
                const std::function<std::unique_ptr<Operation>(const AgreedPlan&)>& lower);

// Whether blocking calls of c take the agreed cache: the communicator's default is auto, or an
// algorithm that needs its peers' sizes (not with MPIX_DEBUG, which agrees on every call).
bool agreed_blocking(CommState& st, Collective c);

}  // namespace mpia
