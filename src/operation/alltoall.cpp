#include "operation/alltoall.hpp"

#include "collective/shortlist.hpp"
#include "collective/tuning.hpp"
#include "locality/locality.hpp"
#include "operation/common.hpp"
#include "operation/settings.hpp"
#include "operation/trial.hpp"
#include "util/error.hpp"

#include <algorithm>
#include <cstdint>
#include <string>
#include <vector>

namespace mpia {

namespace {

// Local argument checks (throw mpia::Error); returns the packed bytes of one block.
std::int64_t check_alltoall(const AlltoallArgs& a, int P, MPI_Comm comm) {
  if (a.recvbuf == MPI_IN_PLACE) fail(MPI_ERR_BUFFER, "mpi-advance: recvbuf is MPI_IN_PLACE");
  // The bytes of count x type, all P blocks of them addressable. The names are literals: no
  // string is built on a call that passes (a blocking call checks on every call).
  auto block_bytes = [&](std::int64_t count, MPI_Datatype type, const char* count_name,
                         const char* type_name) {
    if (count < 0) fail(MPI_ERR_COUNT, std::string("mpi-advance: negative ") + count_name);
    check_type(type, comm, type_name);
    const std::int64_t size = type_size(type);
    if (size > 0 && count > INT64_MAX / size / std::max(P, 1))
      fail(MPI_ERR_COUNT, std::string("mpi-advance: ") + count_name +
                              " x the number of ranks is more than 2^63 bytes");
    return count * size;
  };
  const std::int64_t rbytes = block_bytes(a.recvcount, a.recvtype, "recvcount", "recvtype");
  check_buffer(a.recvbuf, rbytes, a.recvtype, "recvbuf");
  if (a.in_place()) return rbytes;
  const std::int64_t sbytes = block_bytes(a.sendcount, a.sendtype, "sendcount", "sendtype");
  check_buffer(a.sendbuf, sbytes, a.sendtype, "sendbuf");
  if (sbytes != rbytes)
    fail(MPI_ERR_TRUNCATE, "mpi-advance: send block (" + std::to_string(sbytes) +
                               " bytes) and receive block (" + std::to_string(rbytes) +
                               " bytes) differ: type signatures must match");
  return rbytes;
}

// auto: the tuning file's rule, else the cost model, on the agreed node map and block size.
Selection choose(CommState& st, std::int64_t block_bytes) {
  const Machine m = machine_of(comm_locality(st).map);
  const Tuning& t = settings().tuning;
  return resolve_auto(t, Collective::Alltoall, m, block_bytes,
                      [&] { return choose_alltoall(t.model, m, block_bytes); });
}

// The shortlist a persistent auto request measures (trial.hpp), or the one selection it runs:
// a tuning rule's, or the model's pick when it does not measure (or nothing is worth measuring:
// one rank, empty blocks).
Shortlist choose_list(CommState& st, std::int64_t block_bytes, bool measure) {
  const Machine m = machine_of(comm_locality(st).map);
  return auto_list(Collective::Alltoall, m, block_bytes, measure && m.nranks > 1 && block_bytes > 0,
                   [&](const CostModel& model) { return rank_alltoall(model, m, block_bytes); });
}

// The schedule of a scheduled (not auto, not system) selection for blocks of `bytes`: local.
std::shared_ptr<const Schedule> build_schedule(const Selection& sel, int rank, int size,
                                               std::int64_t bytes, const NodeMap* nodes) {
  if (sel.algorithm->kind != AlgorithmKind::Scheduled)
    fail(MPI_ERR_INTERN, "mpi-advance: unresolved algorithm selection");
  AlltoallShape shape{rank, size, bytes};
  if (sel.algorithm->needs_locality) shape.nodes = nodes;
  return std::make_shared<const Schedule>(sel.algorithm->build_alltoall(shape, sel.values));
}

std::shared_ptr<const Schedule> alltoall_schedule(const AlltoallArgs& a, const Selection& sel,
                                                  CommState& state) {
  return build_schedule(sel, state.rank, state.size, a.recvcount * type_size(a.recvtype),
                        sel.algorithm->needs_locality ? &comm_locality(state).map : nullptr);
}

Traffic alltoall_traffic(const Schedule& schedule, const CommState& state) {
  const Locality* loc = cached_locality(state);
  return traffic_of(schedule, state.rank, loc ? &loc->map : nullptr);
}

// For a trial of several entries: what builds a second-round entry when it runs, with its own
// copy of what alltoall_schedule reads (the request may outlive the communicator's state).
std::function<LaterBuild(const Selection&)> alltoall_later(const Shortlist& list,
                                                           const AlltoallArgs& a,
                                                           CommState& state) {
  if (list.entries.size() < 2) return nullptr;
  const int rank = state.rank, size = state.size;
  const std::int64_t bytes = a.recvcount * type_size(a.recvtype);
  auto nodes = std::make_shared<const NodeMap>(comm_locality(state).map);
  return [=](const Selection& sel) -> LaterBuild {
    if (sel.algorithm->kind != AlgorithmKind::Scheduled) return nullptr;
    return [=](Traffic& traffic) {
      auto s = build_schedule(sel, rank, size, bytes, nodes.get());
      traffic = traffic_of(*s, rank, nodes.get());
      return s;
    };
  };
}

// The schedule lowered over a's buffers: local.
std::unique_ptr<ScheduledOperation> lower_alltoall(const AlltoallArgs& a, const std::string& name,
                                                   const Schedule& schedule, const Traffic& traffic,
                                                   CommState& state, int tag) {
  const int P = state.size;
  auto op = std::make_unique<ScheduledOperation>(name, state.comm);
  // Block i at i x count elements.
  std::vector<std::int64_t> counts, displs;
  auto side = [&](const void* buf, std::int64_t count, MPI_Datatype type) {
    counts.assign(std::size_t(P), count);
    displs.resize(std::size_t(P));
    for (int i = 0; i < P; ++i) displs[std::size_t(i)] = i * count;
    BlockSide s;
    s.buf = buf;
    s.counts = counts.data();
    s.displs = displs.data();
    s.type = type;
    return s;
  };
  const BlockBuffer recv = op->bind(side(a.recvbuf, a.recvcount, a.recvtype), P);
  const BlockBuffer send =
      a.in_place() ? op->shadow_of(recv) : op->bind(side(a.sendbuf, a.sendcount, a.sendtype), P);
  op->lower(schedule, send, recv, tag);
  op->set_traffic(traffic);
  return op;
}

// Builds the operation for a resolved (not auto) selection.
std::unique_ptr<Operation> make_alltoall(const AlltoallArgs& a, const Selection& sel,
                                         CommState& state, int tag) {
  if (sel.algorithm->kind == AlgorithmKind::System) return make_system_alltoall(a, state.comm);
  const std::shared_ptr<const Schedule> schedule = alltoall_schedule(a, sel, state);
  return lower_alltoall(a, sel.to_string(), *schedule, alltoall_traffic(*schedule, state), state,
                        tag);
}

}  // namespace

std::unique_ptr<Operation> alltoall_init(CommState& st, const AlltoallArgs& a, MPI_Info info,
                                         bool request_given) {
  st.check_settings();
  // Locality first, on every rank, before anything can fail locally: node counts for
  // MPIX_Request_get_traffic, and no collective inside selection below.
  comm_locality(st);
  Proposal p;
  bool threaded = false;
  Shortlist list;
  checked(p, [&] {
    if (!request_given) fail(MPI_ERR_ARG, "mpi-advance: request is NULL");
    threaded = wants_progress_thread(info);
    p.same = check_alltoall(a, st.size, st.comm->get());
    const Selection sel = select_algorithm(
        Collective::Alltoall, info, st.default_algorithm(Collective::Alltoall), extent_of(st));
    list = sel.algorithm->kind == AlgorithmKind::Auto ? choose_list(st, p.same, wants_trial(info))
                                                      : only(sel);
    // Whether a trial runs, and over what, is agreed with the choice.
    p.choice = list.to_string();
  });
  p.tag = true;
  const Agreement ag = agree(st, p);
  // The entries' schedules (local for alltoall), then the operation: the trial's or the one
  // selection's, as for the other collectives' plans.
  AgreedPlan plan;
  plan.tag = TagLease(st.comm, ag.tag);
  set_entries(
      plan, list,
      [&](const Selection& s, bool) -> std::shared_ptr<const Schedule> {
        if (s.algorithm->kind == AlgorithmKind::System) return nullptr;
        return alltoall_schedule(a, s, st);
      },
      [&](const Schedule* s) { return s ? alltoall_traffic(*s, st) : Traffic{}; },
      alltoall_later(list, a, st));
  plan.point = TrialPoint{Collective::Alltoall, st.size, comm_locality(st).map.nnodes(), p.same};
  std::unique_ptr<Operation> op = plan_operation(
      plan, st.comm,
      [&] { return lower_alltoall(a, plan.algorithm, *plan.schedule, plan.traffic, st, ag.tag); },
      [&]() -> std::unique_ptr<Operation> {
        if (!plan.schedule) return make_system_alltoall(a, st.comm);
        return lower_alltoall(a, plan.algorithm, *plan.schedule, plan.traffic, st, ag.tag);
      },
      [&] { return make_system_alltoall(a, std::make_shared<PrivateComm>(st.comm->get())); });
  op->tag = std::move(plan.tag);
  op->threaded = threaded;
  return op;
}

// Blocking alltoall under auto measures too, per block size: the model's shortlist for the size
// is tried over the calls of that size (two rounds, at most 20 calls: trial.hpp), then the winner
// runs. Nothing needs agreeing to begin: the shortlist's inputs (P, node map, block size, settings)
// are the same on every rank, and every rank makes the same calls in the same order, so call n
// of a size runs the same entry everywhere whatever each rank's plan cache did -- the trial's
// state belongs to the size, not to a plan, so a plan lowered anew for moved buffers goes on
// where the trial was; its last start agrees on the times like a persistent request's. The
// trials are made (in choose's place) and dropped, oldest first, in step on every rank.
CommState::BlockingTrial* find_trial(CommState& st, std::int64_t bytes) {
  if (st.trials.empty()) return nullptr;
  const std::string& text = st.default_algorithm(Collective::Alltoall);
  for (CommState::BlockingTrial& t : st.trials)
    if (t.bytes == bytes && t.text == text) return &t;
  return nullptr;
}

// blocking_selection's resolve under auto: the tuning rule or the model's pick, and, when the
// shortlist has several entries, the size's trial.
Selection choose_blocking(CommState& st, const AlltoallArgs& a, std::int64_t bytes) {
  if (settings().debug || !wants_trial(MPI_INFO_NULL)) return choose(st, bytes);
  const Shortlist list = choose_list(st, bytes, true);
  if (list.entries.size() > 1 && !find_trial(st, bytes)) {
    auto plan = std::make_shared<AgreedPlan>();
    set_entries(
        *plan, list,
        [&](const Selection& s, bool) -> std::shared_ptr<const Schedule> {
          if (s.algorithm->kind == AlgorithmKind::System) return nullptr;
          return alltoall_schedule(a, s, st);
        },
        [&](const Schedule* s) { return s ? alltoall_traffic(*s, st) : Traffic{}; },
        alltoall_later(list, a, st));
    plan->point = TrialPoint{Collective::Alltoall, st.size, comm_locality(st).map.nnodes(), bytes};
    if (st.trials.size() == CommState::kBlockingTrials) st.trials.erase(st.trials.begin());
    st.trials.push_back({bytes, st.default_algorithm(Collective::Alltoall), std::move(plan)});
  }
  return list.entries.front();
}

namespace {

bool same_args(const AlltoallArgs& r, const AlltoallArgs& a) {
  return r.sendbuf == a.sendbuf && r.recvbuf == a.recvbuf && r.sendcount == a.sendcount &&
         r.recvcount == a.recvcount && r.sendtype == a.sendtype && r.recvtype == a.recvtype &&
         r.large == a.large;
}

}  // namespace

void alltoall_blocking(CommState& st, const AlltoallArgs& a) {
  st.check_settings();
  CommState::Repeat& repeat = st.repeat;
  if (repeat.valid && repeat.memo_serial == st.memo_serial &&
      st.memo.collective == int(Collective::Alltoall) && same_args(repeat.args, a)) {
    st.cached->run();
    note_call(st, Collective::Alltoall, *repeat.selection, true);
    return;
  }
  blocking_machine(st, Collective::Alltoall);
  const bool debug = settings().debug;
  std::unique_ptr<Error> local;
  std::int64_t bytes = 0;
  try {
    bytes = check_alltoall(a, st.size, st.comm->get());
  } catch (const Error& e) {
    if (!debug) throw;
    local = std::make_unique<Error>(e);
  }
  const Selection* sel = nullptr;
  if (!local)
    sel = &blocking_selection(st, Collective::Alltoall, {bytes},
                              [&] { return choose_blocking(st, a, bytes); });
  if (debug) debug_agree(st, std::move(local), sel, bytes);
  AgreedPlan* trial = nullptr;
  if (CommState::BlockingTrial* t = find_trial(st, bytes)) {
    trial = t->plan.get();
    if (trial->trial_state->winner >= 0) {  // settled: the winner from now on
      sel = &trial->trial[std::size_t(trial->trial_state->winner)].selection;
      trial = nullptr;
    }
  }
  if (sel->algorithm->kind == AlgorithmKind::System) {
    const MPI_Comm c = st.comm->get();
    run_system(c, [&] { return system_alltoall(a, c); });
    note_call(st, Collective::Alltoall, *sel, false);
    return;
  }
  const bool cacheable = predefined(a.recvtype) && (a.in_place() || predefined(a.sendtype));
  st.call_words.clear();
  if (cacheable) {
    for (std::int64_t w : {std::int64_t(-1), trial ? word(trial) : word(sel->algorithm),
                           word(a.sendbuf), std::int64_t(a.sendcount), word(a.sendtype),
                           word(a.recvbuf), std::int64_t(a.recvcount), word(a.recvtype)})
      st.call_words.push_back(w);
    for (std::int64_t v : sel->values) st.call_words.push_back(v);
  }
  // Blocking calls never overlap one another on a communicator: they all use tag 0 (so does a
  // trial's agreement: a blocking trial's plan has no tag of its own).
  const bool hit = run_blocking(st, cacheable, [&]() -> std::unique_ptr<Operation> {
    if (!trial) return make_alltoall(a, *sel, st, 0);
    return plan_operation(
        *trial, st.comm,
        [&] {
          return lower_alltoall(a, trial->algorithm, *trial->schedule, trial->traffic, st, 0);
        },
        []() -> std::unique_ptr<Operation> { return nullptr; },
        [&] {
          // The blocking form, as this call would make it: made at a lowering that is this
          // rank's alone (no persistent request: that would be collective).
          return make_system_alltoall(a, st.comm, true);
        });
  });
  if (cacheable && !trial && !debug && st.cached) {
    repeat = CommState::Repeat{true, st.memo_serial, a, sel};
  }
  note_call(st, Collective::Alltoall, *sel, hit);
}

}  // namespace mpia
