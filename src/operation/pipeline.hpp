// The one pipeline every collective form runs: alltoall, alltoallv, the neighbor calls (regular,
// v and w), their _c forms and MPIX_Topo's. A collective is an adapter (alltoall.cpp,
// alltoallv.cpp, neighbor.cpp) that says what is its own:
//
//   kCollective, kAgreedCache  which records it runs; whether its blocking auto needs the agreed
//                              plan cache (its sizes differ across ranks: v and neighbor)
//   st, a                      the communicator's state and the call's arguments
//   prepare()                  what must be read before any check (the neighbor topology)
//   check(), clear()           local argument checks, filling this rank's sizes; zero sizes
//                              after a check failed (the collective steps below still run)
//   compare(p)                 collective: this rank's sizes against its peers' (a mismatch is
//                              a derived error), and the statistics to agree on, into p
//   stats(ag), with_library(ag) the agreed statistics auto resolves from; whether a trial may
//                              try the MPI library's call
//   blocking_stats(s)          statistics of a blocking call every rank has without agreeing
//                              (false: none; auto then runs its blocking_auto record)
//   memo_key(), same()         the word a blocking selection is memoised under; the value
//                              MPIX_DEBUG agrees on
//   schedule(sel, tag, last)   the record's builder on the shape it takes (collective for a
//                              record that learns its peers' sizes; last: sizes may be consumed)
//   later(list)                for a trial, what builds a second-round entry when it runs
//                              (nullptr: every entry's schedule now)
//   bind(op)                   the call's send and receive buffers bound to op (duplicated
//                              datatypes: local), over which the engine lowers a schedule
//   library(blocking)          the call as the MPI library's own collective takes it (for a
//                              nonblocking call the pipeline sets `once`)
//   predefined_types(), words(key, buffers), buffers()
//                              what a cache key holds of the call
//   repeat(), remember(sel)    a fast path for a call that repeats the last one exactly
//
// CallBase holds the state and the defaults: no preparation, sizes that differ across ranks (no
// statistics without agreeing, memo key -1), the library's call always tried, every entry's
// schedule built at once, no fast path.
//
// The stages -- select, agree, resolve, build every entry, operation (an entry's, or a trial's)
// -- are written once, below; so are the blocking path, the nonblocking path and the cache keys.
#pragma once

#include "collective/resolve.hpp"
#include "locality/locality.hpp"
#include "operation/agreed_cache.hpp"
#include "operation/attach.hpp"
#include "operation/blocking_cache.hpp"
#include "operation/checks.hpp"
#include "operation/comm_state.hpp"
#include "operation/datatypes.hpp"
#include "operation/entry_points.hpp"
#include "operation/info.hpp"
#include "operation/nonblocking.hpp"
#include "operation/protocol.hpp"
#include "operation/select.hpp"
#include "operation/settings.hpp"
#include "operation/size_channel.hpp"
#include "operation/system.hpp"
#include "operation/trial.hpp"
#include "util/error.hpp"

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace mpia {

struct CallBase {
  CommState& st;
  explicit CallBase(CommState& state) : st(state) {}
  void prepare() {}
  bool with_library(const Agreement&) const { return true; }
  // Sizes that differ across ranks: nothing every rank has without agreeing.
  bool blocking_stats(Stats&) const { return false; }
  std::int64_t memo_key() const { return -1; }
  std::int64_t same() const { return 0; }
  std::function<LaterBuild(const Selection&)> later(const Shortlist&) const { return nullptr; }
  bool repeat() { return false; }
  void remember(const Selection*) {}
};

// A record's schedule for shape: its init-time exchange first when it has one (learn: collective
// over the communicator, on tag; what: its name in errors), then its builder.
template <class Shape, class Learn, class Build>
std::shared_ptr<const Schedule> learnt_schedule(const CommState& st, int tag, const char* what,
                                                Shape& shape, Learn learn, Build build,
                                                const ParamValues& values) {
  if (learn) {
    MpiSizeChannel channel(st.comm->get(), tag, what);
    learn(shape, values, channel);
  }
  return std::make_shared<const Schedule>(build(shape, values));
}

// A schedule lowered over the call's buffers.
template <class Call>
std::unique_ptr<ScheduledOperation> lowered(const Call& call, const std::string& name,
                                            const Schedule& schedule, const Traffic& traffic,
                                            int tag) {
  auto op = std::make_unique<ScheduledOperation>(name, call.st.comm);
  const auto [send, recv] = call.bind(*op);
  op->lower(schedule, send, recv, tag);
  op->set_traffic(traffic);
  return op;
}

// What a start of schedule s makes this rank send, node counts as far as locality is known.
inline Traffic schedule_traffic(const Schedule* s, const CommState& st) {
  if (!s) return Traffic{};
  const Locality* loc = cached_locality(st);
  return traffic_of(*s, st.rank, loc ? &loc->map : nullptr);
}

// The schedule of one entry: none for a record that builds its own operation (the MPI library's
// call).
template <class Call>
std::shared_ptr<const Schedule> entry_schedule(Call& call, const Selection& sel, int tag,
                                               bool last) {
  if (sel.algorithm->build_operation) return nullptr;
  return call.schedule(sel, tag, last);
}

// The operation of one entry over the call's buffers: its schedule lowered, or its record's own
// operation.
template <class Call>
std::unique_ptr<Operation> entry_operation(Call& call, const Selection& sel, const Schedule* s,
                                           const Traffic& traffic, int tag, bool blocking) {
  if (s) return lowered(call, sel.to_string(), *s, traffic, tag);
  if (!sel.algorithm->build_operation)
    fail(MPI_ERR_INTERN, "mpi-advance: unresolved algorithm selection");
  return sel.algorithm->build_operation(call.library(blocking));
}

// The operation of an agreed plan over the call's buffers: its trial when it has one, else its
// one entry's. blocking: a blocking call's plan, lowered by this rank alone (the MPI library's
// blocking call; a persistent request would be collective).
template <class Call>
std::unique_ptr<Operation> plan_operation(Call& call, const AgreedPlan& p, bool blocking) {
  const int tag = p.tag.get();
  if (p.trial.empty())
    return entry_operation(call, p.selection, p.schedule.get(), p.traffic, tag, blocking);
  return std::make_unique<TrialOperation>(lowered(call, p.algorithm, *p.schedule, p.traffic, tag),
                                          p.trial, call.st.comm, tag, p.point, p.trial_state, [&] {
                                            // A persistent request's trial makes the library's call
                                            // on a communicator of its own.
                                            LibraryCall lc = call.library(blocking);
                                            if (!blocking)
                                              lc.comm = private_duplicate(lc.comm->get());
                                            return library_operation(lc);
                                          });
}

// What a persistent init (and a blocking call's agreed plan) agrees on and builds before binding
// buffers: collective. threaded: where a persistent init puts its progress mode (nullptr: a
// blocking call's plan, which runs on tag 0 as every blocking call).
template <class Call>
std::shared_ptr<AgreedPlan> agreed_plan(Call& call, MPI_Info info, bool request_given,
                                        bool* threaded) {
  CommState& st = call.st;
  constexpr Collective c = Call::kCollective;
  st.check_settings();
  call.prepare();
  // Locality first, on every rank, before anything can fail locally: node counts for
  // MPIX_Request_get_traffic, and no collective inside selection below.
  comm_locality(st);
  Proposal p;
  Selection sel;
  bool measure = false;
  checked(p, [&] {
    if (!request_given) fail(MPI_ERR_ARG, "mpi-advance: request is NULL");
    if (threaded) *threaded = wants_progress_thread(info);
    call.check();
    sel = select_algorithm(c, info, st.default_algorithm(c), extent_of(st));
    // auto measures (trial.hpp): a persistent request over its first starts, a blocking call's
    // agreed plan over the first calls that hit it.
    measure = resolves(sel) && wants_trial(info);
  });
  if (p.error) call.clear();
  call.compare(p);
  // The unresolved choice is agreed on; auto then resolves it from agreed statistics (and
  // agreed settings), identically on every rank.
  if (!p.error) p.choice = sel.to_string() + (measure ? "+measure" : "");
  p.tag = threaded != nullptr;
  const Agreement ag = agree(st, p);
  Resolving in;
  in.tuning = &settings().tuning;
  in.machine = machine_of(comm_locality(st).map);
  in.stats = call.stats(ag);
  in.measure = measure;
  in.with_library = call.with_library(ag);
  in.skip = &settings().trial_skip;
  auto plan = std::make_shared<AgreedPlan>();
  if (ag.tag) plan->tag = TagLease(st.comm, ag.tag);
  // Every entry's schedule now (the sizes a forwarding entry learns are exchanged at init, in
  // the shortlist's order on every rank) but those later() builds when they run.
  const Shortlist list = resolve(sel, in);
  set_entries(
      *plan, list,
      [&](const Selection& s, bool last) { return entry_schedule(call, s, ag.tag, last); },
      [&](const Schedule* s) { return schedule_traffic(s, st); }, call.later(list));
  plan->point = TrialPoint{c, st.size, in.machine.nnodes, in.stats.max_block};
  return plan;
}

// Persistent init (collective): the operation, agreed on by every rank, holding its tag.
template <class Call>
std::unique_ptr<Operation> init(Call&& call, MPI_Info info, bool request_given) {
  bool threaded = false;
  const std::shared_ptr<AgreedPlan> plan = agreed_plan(call, info, request_given, &threaded);
  std::unique_ptr<Operation> op = plan_operation(call, *plan, false);
  op->tag = std::move(plan->tag);
  op->threaded = threaded;
  return op;
}

// The words of a cache key, built here only: the collective, what runs (a record or a trial:
// plan), its parameter values, then the call's own words with its buffers' addresses. A pattern
// (the agreed plan cache's key: plan 0, buffers excluded) ends with the choice in force
// (MPIX_Comm_set_algorithm, the environment): a plan built under another choice is not this
// call's, even for the same arguments.
template <class Call>
void cache_key(std::vector<std::int64_t>& key, const Call& call, std::int64_t plan,
               const ParamValues& values, bool buffers) {
  key.push_back(std::int64_t(Call::kCollective));
  key.push_back(plan);
  key.insert(key.end(), values.begin(), values.end());
  call.words(key, buffers);
  if (!buffers)
    for (char ch : call.st.default_algorithm(Call::kCollective)) key.push_back(ch);
}

// Blocking calls under auto that measure: the trial of a memo key, if one was made.
inline BlockingCache::BlockingTrial* find_trial(CommState& st, Collective c, std::int64_t key) {
  const std::string& text = st.default_algorithm(c);
  for (BlockingCache::BlockingTrial& t : blocking_cache(st).trials)
    if (t.collective == int(c) && t.key == key && t.text == text) return &t;
  return nullptr;
}

// blocking_selection's resolution of auto. With statistics every rank has (an alltoall's block
// size), auto measures here too, per memo key: its shortlist is tried over the calls with that
// key (two rounds, at most 240 calls: trial.hpp), then the winner runs. Nothing needs agreeing to
// begin: the shortlist's inputs are the same on every rank, and every rank makes the same calls
// in the same order, so call n of a key runs the same entry everywhere whatever each rank's plan
// cache did -- the trial's state belongs to the key, not to a plan, so a plan lowered anew for
// moved buffers goes on where the trial was; its last start agrees on the times like a
// persistent request's. Trials are made and dropped, oldest first, in step on every rank.
template <class Call>
Selection blocking_resolve(Call& call, const Selection& sel) {
  CommState& st = call.st;
  constexpr Collective c = Call::kCollective;
  Resolving in;
  in.tuning = &settings().tuning;
  in.machine = machine_of(comm_locality(st).map);
  in.agreed = call.blocking_stats(in.stats);
  in.measure = !settings().debug && wants_trial(MPI_INFO_NULL);
  in.skip = &settings().trial_skip;
  const Shortlist list = resolve(sel, in);
  const std::int64_t key = call.memo_key();
  if (list.entries.size() > 1 && !find_trial(st, c, key)) {
    auto plan = std::make_shared<AgreedPlan>();
    set_entries(
        *plan, list,
        [&](const Selection& s, bool last) { return entry_schedule(call, s, 0, last); },
        [&](const Schedule* s) { return schedule_traffic(s, st); }, call.later(list));
    plan->point = TrialPoint{c, st.size, in.machine.nnodes, in.stats.max_block};
    std::vector<BlockingCache::BlockingTrial>& trials = blocking_cache(st).trials;
    if (trials.size() == BlockingCache::kBlockingTrials) trials.erase(trials.begin());
    trials.push_back({int(c), key, st.default_algorithm(c), std::move(plan)});
  }
  return list.entries.front();
}

// The blocking call.
template <class Call>
void blocking(Call&& call) {
  CommState& st = call.st;
  constexpr Collective c = Call::kCollective;
  st.check_settings();
  if (call.repeat()) return;
  blocking_machine(st, c);
  call.prepare();
  const bool debug = settings().debug;
  const bool agreed = Call::kAgreedCache && agreed_blocking(st, c);
  std::unique_ptr<Error> local;
  try {
    call.check();
  } catch (const Error& e) {
    if (!debug && !agreed) throw;
    local = std::make_unique<Error>(e);
  }
  if (agreed) {
    // The agreed plan cache (agreed_cache.hpp): the key is this rank's pattern, buffers excluded.
    std::vector<std::int64_t>& key = blocking_cache(st).plans.key;
    key.clear();
    if (!local) cache_key(key, call, 0, {}, false);
    const auto [sendbuf, recvbuf] = call.buffers();
    const bool ran = run_agreed(
        st, c, !local, sendbuf, recvbuf,
        [&] { return agreed_plan(call, MPI_INFO_NULL, true, nullptr); },
        [&](const AgreedPlan& p) { return plan_operation(call, p, true); });
    if (ran) return;
    // Not every rank has seen its pattern before, or direct mode: the uncached exchange below.
    // (A local argument error takes the agreed build, which raises it on every rank, except in
    // direct mode, where it is this rank's alone, as in MPI.)
    if (local) throw *local;
  }
  const Selection* sel = nullptr;
  if (!local)
    sel = &blocking_selection(st, c, call.memo_key(),
                              [&](const Selection& s) { return blocking_resolve(call, s); });
  if (debug) debug_agree(st, std::move(local), sel, call.same());
  const AgreedPlan* trial = nullptr;
  BlockingCache& bc = blocking_cache(st);
  if (BlockingCache::BlockingTrial* t =
          bc.trials.empty() ? nullptr : find_trial(st, c, call.memo_key())) {
    trial = t->plan.get();
    if (trial->trial_state->winner >= 0) {  // settled: the winner from now on
      sel = &trial->trial[std::size_t(trial->trial_state->winner)].selection;
      trial = nullptr;
    }
  }
  // A plan is reused while this rank's own arguments repeat, when every datatype is predefined
  // (a derived type's handle may name another type once freed); records that depend on other
  // ranks' sizes (needs_peer_sizes) are rebuilt every call.
  const bool cacheable = !sel->algorithm->needs_peer_sizes && call.predefined_types();
  bc.call_words.clear();
  if (cacheable)
    cache_key(bc.call_words, call, trial ? word(trial) : word(sel->algorithm), sel->values, true);
  // Blocking calls never overlap one another on a communicator: they all use tag 0 (so does a
  // trial's agreement: a blocking trial's plan has no tag of its own).
  const bool hit = run_blocking(st, cacheable, [&]() -> std::unique_ptr<Operation> {
    if (trial) return plan_operation(call, *trial, true);
    const std::shared_ptr<const Schedule> s = entry_schedule(call, *sel, 0, true);
    return entry_operation(call, *sel, s.get(), schedule_traffic(s.get(), st), 0, true);
  });
  if (cacheable && !trial && !debug && bc.cached) call.remember(sel);
  note_call(st, c, *sel, hit);
}

// What a nonblocking call runs (nonblocking.hpp): decided from what every rank shares without
// agreeing -- the communicator's choice or the environment, resolved by auto from statistics
// every rank has (an alltoall's block; a v or neighbor call has none: auto's direct exchange),
// on the node map only when an earlier call computed it (computing it is collective). A record
// that learns its peers' sizes (collective) or needs a node map nothing computed yet cannot run
// here: what auto would run among the records that can runs instead (collective/resolve.hpp),
// and a selection that named the record says so on stderr, once.
template <class Call>
Selection nonblocking_selection(Call& call) {
  CommState& st = call.st;
  constexpr Collective c = Call::kCollective;
  const Locality* loc = cached_locality(st);
  const Machine machine = loc ? machine_of(loc->map) : Machine::flat(st.size);
  const ExtentOf extent = [machine](const AlgorithmSpec&) {
    return Extent(machine.nranks, machine.nnodes, machine.ppn);
  };
  Resolving in;
  in.tuning = &settings().tuning;
  in.machine = machine;
  in.agreed = call.blocking_stats(in.stats);
  in.measure = false;  // a trial agrees on its times: not in a call that agrees on nothing
  in.skip = &settings().trial_skip;
  const Selection chosen = select_algorithm(c, MPI_INFO_NULL, st.default_algorithm(c), extent);
  if (st.borrowed) {  // a communicator the call may not attach (attach.hpp)
    const Selection system{find_kind(c, AlgorithmKind::System), {}};
    if (!(chosen == system))
      warn_once("mpi-advance: a nonblocking " + std::string(collective_name(c)) +
                " on a communicator no blocking or persistent call of this library has used yet "
                "runs the MPI library's own call: attaching would take an MPI_Comm_idup, which "
                "Open MPI cannot overlap with other nonblocking collectives on the communicator");
    return system;
  }
  auto runs_here = [&](const Selection& s) {
    return !s.algorithm->needs_peer_sizes && (!s.algorithm->needs_locality || loc);
  };
  const Selection sel = resolves(chosen) ? resolve(chosen, in).entries.front() : chosen;
  if (runs_here(sel)) return sel;
  const Selection instead = runnable_auto(c, in, runs_here);
  if (!resolves(chosen))
    warn_once("mpi-advance: a nonblocking " + std::string(collective_name(c)) + " cannot run '" +
              chosen.to_string() + "': it " +
              (sel.algorithm->needs_peer_sizes
                   ? "learns its peers' sizes (collective)"
                   : "needs the node map, which no blocking or persistent call on the "
                     "communicator has computed yet") +
              "; running '" + instead.to_string() + "' instead");
  return instead;
}

// A nonblocking call: its plan (an idle one from the communicator's cache, or a new one),
// started. Local: nothing here waits for another rank (but the communicator's first call, which
// duplicates it).
template <class Call>
std::unique_ptr<Operation> nonblocking(Call&& call) {
  CommState& st = call.st;
  st.check_settings();
  PrivateComm& pc = *st.comm;
  if (!pc.nonblocking) {
    pc.nonblocking = std::make_shared<NonblockingState>();
    pc.nonblocking->base_tag = pc.tags.ub() + 1;
  }
  NonblockingState& ns = *pc.nonblocking;
  // Counted before anything can fail, so that a rank whose arguments are wrong stays in step.
  const std::uint64_t seq = ns.sequence++;
  call.prepare();
  call.check();
  NonblockingState::Memo& memo = ns.memo[std::size_t(Call::kCollective)];
  const std::string& text = st.default_algorithm(Call::kCollective);
  const bool located = cached_locality(st) != nullptr;
  if (!memo.valid || memo.key != call.memo_key() || memo.located != located || memo.text != text) {
    memo.valid = false;
    memo.selection = nonblocking_selection(call);
    memo.text = text, memo.key = call.memo_key(), memo.located = located, memo.valid = true;
  }
  const Selection& sel = memo.selection;
  const bool library = sel.algorithm->build_operation != nullptr;
  const int slot = library ? -1 : int(seq % NonblockingState::kSlots);
  const int tag = library ? 0 : ns.base_tag + slot;
  std::vector<std::int64_t>& words = ns.scratch;
  words.clear();
  // (A borrowed state lives for this call only: nothing to keep its plan for.)
  if (!sel.algorithm->needs_peer_sizes && call.predefined_types() && !st.borrowed) {
    cache_key(words, call, word(sel.algorithm), sel.values, true);
    words.push_back(slot);
  }
  std::vector<std::int64_t> key;  // the plan's, given back with it
  std::int64_t plan_bytes = -1;   // as the cache counted it
  std::unique_ptr<Operation> plan = words.empty() ? nullptr : ns.take(words, key, plan_bytes);
  if (!plan) {
    key = words;
    if (library) {
      LibraryCall lc = call.library(false);
      lc.once = true;
      plan = sel.algorithm->build_operation(lc);
    } else {
      const std::shared_ptr<const Schedule> s = call.schedule(sel, tag, true);
      plan = lowered(call, sel.to_string(), *s, schedule_traffic(s.get(), st), tag);
    }
  }
  auto op = std::make_unique<NonblockingOperation>(st.comm, slot, std::move(plan), std::move(key),
                                                   plan_bytes);
  op->threaded = wants_progress_thread(MPI_INFO_NULL);
  op->start();
  return op;
}

// A collective's adapter: its .cpp specialises CallOf<C> as CallIs<its Call> and instantiates
// EntryPoints<C>, whose members below are then that Call's init, blocking and nonblocking.
template <Collective C>
struct CallOf;
template <class Call>
struct CallIs {
  using type = Call;
};

template <Collective C>
std::unique_ptr<Operation> EntryPoints<C>::init(CommState& st, const Args& a, MPI_Info info,
                                                bool request_given) {
  return mpia::init(typename CallOf<C>::type{st, a}, info, request_given);
}

template <Collective C>
void EntryPoints<C>::blocking(CommState& st, const Args& a) {
  mpia::blocking(typename CallOf<C>::type{st, a});
}

template <Collective C>
std::unique_ptr<Operation> EntryPoints<C>::nonblocking(CommState& st, const Args& a) {
  return mpia::nonblocking(typename CallOf<C>::type{st, a});
}

}  // namespace mpia
