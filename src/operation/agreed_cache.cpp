#include "operation/agreed_cache.hpp"

#include "operation/blocking_cache.hpp"
#include "operation/cache_budget.hpp"
#include "operation/settings.hpp"
#include "util/error.hpp"
#include "util/hash.hpp"

#include <algorithm>
#include <cstdint>

namespace mpia {

bool agreed_blocking(CommState& st, Collective c) {
  if (settings().debug) return false;
  BlockingCache::PlanCache::Path& path = blocking_cache(st).plans.path[std::size_t(c)];
  const std::string& text = st.default_algorithm(c);
  if (path.agreed < 0 || path.text != text) {
    const Selection sel = select_algorithm(c, MPI_INFO_NULL, text, extent_of(st));
    path.agreed = resolves(sel) || sel.algorithm->needs_peer_sizes;
    path.text = text;
  }
  return path.agreed == 1;
}

namespace {

// A plan of one message per pair (no forwarding, no peers' sizes): interoperates with any other
// direct exchange of the same arguments. A plan in trial is none (its starts run other entries);
// a settled one is what it settled on.
bool direct_plan(const AgreedPlan& p) {
  if (!p.trial.empty()) {
    const int w = p.trial_state->winner;
    return w >= 0 && p.trial[std::size_t(w)].scheduled() &&
           !p.trial[std::size_t(w)].selection.algorithm->needs_peer_sizes;
  }
  return p.schedule && !p.selection.algorithm->needs_peer_sizes;
}

// What an agreed plan holds beside its lowered operation: its schedules (a trial's entries but
// the first, which is the plan's own).
std::int64_t plan_bytes(const AgreedPlan& p) {
  std::int64_t b = std::int64_t(sizeof p + p.algorithm.capacity());
  if (p.schedule) b += p.schedule->memory_bytes();
  for (const TrialEntry& t : p.trial)
    if (t.schedule && t.schedule != p.schedule) b += t.schedule->memory_bytes();
  return b;
}

// What an entry of the agreed cache holds on this rank: its key, plan and lowered operation.
std::int64_t entry_bytes(const BlockingCache::PlanCache::Entry& e) {
  std::int64_t b = std::int64_t(sizeof e + e.key.capacity() * sizeof(std::int64_t));
  if (e.plan) b += plan_bytes(*e.plan);
  if (e.op) b += e.op->memory().bytes;
  return b;
}

BlockingCache::PlanCache::Entry* entry_of(BlockingCache::PlanCache& pc, std::int64_t id) {
  for (auto& e : pc.entries)
    if (e.id == id) return &e;
  return nullptr;
}

void run_entry(CommState& st, Collective c, BlockingCache::PlanCache::Entry& e, const void* sendbuf,
               const void* recvbuf, bool hit,
               const std::function<std::unique_ptr<Operation>(const AgreedPlan&)>& lower) {
  bool changed = false;
  if (!e.op || e.sendbuf != sendbuf || e.recvbuf != recvbuf) {
    e.op.reset();
    e.op = lower(*e.plan);
    e.sendbuf = sendbuf;
    e.recvbuf = recvbuf;
    changed = true;
  }
  if (std::unique_ptr<Operation> settled = e.op->settled_part()) {
    e.op = std::move(settled);
    changed = true;
  }
  if (changed) e.charge.set(entry_bytes(e));  // not on a plain hit: memory() walks the plan
  e.op->start();
  if (settings().report) {
    CommState::PerCollective& per = st.per[std::size_t(c)];
    per.last_algorithm = e.op->algorithm();  // a trial's: this call's entry
    per.last_hit = hit;
  }
  e.op->wait();
}

}  // namespace

bool run_agreed(CommState& st, Collective c, bool local_ok, const void* sendbuf,
                const void* recvbuf, const std::function<std::shared_ptr<AgreedPlan>()>& build,
                const std::function<std::unique_ptr<Operation>(const AgreedPlan&)>& lower) {
  BlockingCache::PlanCache& pc = blocking_cache(st).plans;
  BlockingCache::PlanCache::Path& path = pc.path[std::size_t(c)];
  BlockingCache::PlanCache::Entry* hit = nullptr;
  if (local_ok)
    for (auto& e : pc.entries)
      if (e.collective == int(c) && e.key == pc.key) {
        hit = &e;
        break;
      }
  // Direct mode: the last agreed plan moves one message per pair, like the uncached exchange,
  // on the same tag (0): any mix of ranks running their cached direct plan and ranks running an
  // uncached one exchanges the same messages. So no agreement, except every kReagree-th call
  // (the same calls on every rank), which may find that a pattern now wants another plan.
  const std::uint64_t n = path.calls++;
  if (path.direct && n % BlockingCache::PlanCache::kReagree != 0) {
    if (!hit || !direct_plan(*hit->plan)) return false;
    run_entry(st, c, *hit, sendbuf, recvbuf, true, lower);
    return true;
  }
  std::uint64_t h = 0;
  bool seen = false;
  if (local_ok && !hit) {
    h = kFnvOffset ^ std::uint64_t(int(c) + 1);
    for (std::int64_t w : pc.key) h = (h ^ std::uint64_t(w)) * 1099511628211ULL;
    h |= 1;  // never 0 (an empty slot)
    seen = std::find(std::begin(pc.recent), std::end(pc.recent), h) != std::end(pc.recent);
  }
  // The fifth word: this rank's bytes of the entry the last agreed call ran (its agreed size).
  BlockingCache::PlanCache::Entry* measured = entry_of(pc, pc.measure_id);
  std::int64_t v[5] = {hit ? hit->id : -1, hit ? -hit->id : 1, hit || seen ? 0 : 1,
                       local_ok ? 0 : 1, measured ? measured->charge.bytes() : 0};
  MPI_Request r;
  MPIA_CHECK(MPI_Iallreduce(MPI_IN_PLACE, v, 5, MPI_INT64_T, MPI_MAX, st.comm->get(), &r));
  complete(r, "MPI_Iallreduce (plan cache)");
  // From here on, what changes the cache's ids, sizes and recency follows from v and from what
  // was agreed before: the same on every rank (agreed_cache.hpp).
  const std::uint64_t now = ++pc.clock;
  if (measured) measured->agreed_bytes = v[4];
  pc.measure_id = -1;
  const bool all_hit = v[0] >= 0 && v[0] == -v[1];
  const bool builds = !all_hit && (v[2] == 0 || v[3] != 0);
  // Least recently used out, by agreed sizes, never the entry this call runs; room for the one
  // it builds.
  evict_lru(
      pc.entries,
      CacheBound{BlockingCache::PlanCache::kEntries - (builds ? 1 : 0),
                 settings().plan_cache_bytes},
      [](const auto& x) { return x.agreed_bytes; }, [](const auto& x) { return x.used; },
      [&](const auto& x) { return all_hit && x.id == v[0]; }, [](auto&) {});
  hit = nullptr;  // the entries may have moved
  BlockingCache::PlanCache::Entry* e = nullptr;
  if (all_hit) {
    e = entry_of(pc, v[0]);  // every rank holds entry v[0], and so does this one
    hit = e;
  } else if (builds) {
    std::shared_ptr<AgreedPlan> plan = build();  // collective; throws the agreed error
    // This rank's older entry for the same pattern (its peers' patterns differed then): emptied,
    // its id and agreed size kept until evicted, so that every rank holds the same ids.
    for (auto& x : pc.entries)
      if (x.collective == int(c) && x.key == pc.key) {
        x.collective = -1;
        std::vector<std::int64_t>().swap(x.key);
        x.op.reset();
        x.plan.reset();
        x.charge.set(entry_bytes(x));
      }
    pc.entries.emplace_back();
    e = &pc.entries.back();
    e->id = pc.next_id++;
    e->collective = int(c);
    e->key = pc.key;
    e->plan = std::move(plan);
  } else {
    if (h && !seen) {
      pc.recent[pc.recent_next] = h;
      pc.recent_next = (pc.recent_next + 1) % BlockingCache::PlanCache::kRecent;
    }
    return false;
  }
  e->used = now;
  pc.measure_id = e->id;  // measured at the next agreement
  path.direct = direct_plan(*e->plan);
  run_entry(st, c, *e, sendbuf, recvbuf, e == hit, lower);
  return true;
}

}  // namespace mpia
