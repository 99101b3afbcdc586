#include "operation/alltoallv.hpp"

#include "collective/shortlist.hpp"
#include "locality/locality.hpp"
#include "operation/common.hpp"
#include "operation/settings.hpp"
#include "util/error.hpp"

#include <algorithm>
#include <climits>
#include <cstdint>
#include <string>

namespace mpia {

void check_blocks(const BlockSide& s, int P, const char* side, std::vector<std::int64_t>& bytes,
                  MPI_Comm comm) {
  if (P > 0 && (s.counts.null() || s.displs.null() || (s.w && !s.types)))
    fail(MPI_ERR_ARG,
         std::string("mpi-advance: null ") + side + " count, displacement or type array");
  const std::string type_name = std::string(side) + "type", buf_name = std::string(side) + "buf";
  if (!s.w) check_type(s.type, comm, type_name.c_str());
  bytes.resize(P);
  MPI_Datatype last = MPI_DATATYPE_NULL;  // the last type checked (w form)
  std::int64_t size = s.w ? 0 : type_size(s.type);
  for (int i = 0; i < P; ++i) {
    const MPI_Datatype t = s.type_at(std::size_t(i));
    if (s.w && (i == 0 || t != last)) {
      check_type(t, comm, (std::string(side) + "types[" + std::to_string(i) + "]").c_str());
      size = type_size(t);
      last = t;
    }
    const std::int64_t count = s.counts[std::size_t(i)];
    if (count < 0)
      fail(MPI_ERR_COUNT,
           std::string("mpi-advance: negative ") + side + " count for block " + std::to_string(i));
    if (size > 0 && count > INT64_MAX / size)
      fail(MPI_ERR_COUNT, std::string("mpi-advance: ") + side + " block " + std::to_string(i) +
                              " has more than 2^63 bytes");
    bytes[i] = count * size;
    check_buffer(s.buf, bytes[i], t, buf_name.c_str());
  }
}

namespace {

AlltoallvSizes check_alltoallv(const AlltoallvArgs& a, int P, MPI_Comm comm) {
  AlltoallvSizes s;
  if (a.recv.buf == MPI_IN_PLACE) fail(MPI_ERR_BUFFER, "mpi-advance: recvbuf is MPI_IN_PLACE");
  check_blocks(a.recv, P, "recv", s.recv_bytes, comm);
  if (a.in_place())
    s.send_bytes = s.recv_bytes;  // MPI_IN_PLACE: block to j has the layout of block from j
  else
    check_blocks(a.send, P, "send", s.send_bytes, comm);
  for (std::int64_t b : s.send_bytes) {
    s.local.max_block = std::max(s.local.max_block, b);
    s.local.rank_bytes += b;
    s.local.rank_messages += b > 0;
  }
  return s;
}

// The schedule of a scheduled algorithm (learning its peers' sizes when it needs them:
// collective, on tag); null for the system's own collective.
std::shared_ptr<const Schedule> alltoallv_schedule(const Selection& sel, CommState& state, int tag,
                                                   AlltoallvSizes sizes) {
  const int P = state.size;
  if (sel.algorithm->kind == AlgorithmKind::System) return nullptr;
  if (sel.algorithm->kind != AlgorithmKind::Scheduled)
    fail(MPI_ERR_INTERN, "mpi-advance: unresolved algorithm selection");
  AlltoallvShape shape;
  shape.rank = state.rank;
  shape.size = P;
  if (sel.algorithm->needs_locality) shape.nodes = &comm_locality(state).map;
  shape.send_bytes = std::move(sizes.send_bytes);
  shape.recv_bytes = std::move(sizes.recv_bytes);
  if (sel.algorithm->learn_alltoallv) {
    MpiSizeChannel channel(state.comm->get(), tag, "the size exchange");
    sel.algorithm->learn_alltoallv(shape, sel.values, channel);
  }
  return std::make_shared<const Schedule>(sel.algorithm->build_alltoallv(shape, sel.values));
}

Traffic alltoallv_traffic(const Schedule* schedule, const CommState& state) {
  if (!schedule) return Traffic{};
  const Locality* loc = cached_locality(state);
  return traffic_of(*schedule, state.rank, loc ? &loc->map : nullptr);
}

// The schedule over a's buffers: local (no communication).
std::unique_ptr<ScheduledOperation> bind_alltoallv(const AlltoallvArgs& a, const std::string& name,
                                                   const Schedule& schedule, const Traffic& traffic,
                                                   CommState& state, int tag) {
  const int P = state.size;
  auto op = std::make_unique<ScheduledOperation>(name, state.comm);
  const BlockBuffer recv = op->bind(a.recv, P);
  const BlockBuffer send = a.in_place() ? op->shadow_of(recv) : op->bind(a.send, P);
  op->lower(schedule, send, recv, tag);
  op->set_traffic(traffic);
  return op;
}

// The operation over a's buffers: local (no communication).
std::unique_ptr<Operation> lower_alltoallv(const AlltoallvArgs& a, const std::string& name,
                                           const Schedule* schedule, const Traffic& traffic,
                                           CommState& state, int tag) {
  if (!schedule) return make_system_alltoallv(a, state.size, state.comm);
  return bind_alltoallv(a, name, *schedule, traffic, state, tag);
}

std::unique_ptr<Operation> make_alltoallv(const AlltoallvArgs& a, const Selection& sel,
                                          CommState& state, int tag, AlltoallvSizes sizes) {
  const std::shared_ptr<const Schedule> s = alltoallv_schedule(sel, state, tag, std::move(sizes));
  return lower_alltoallv(a, sel.to_string(), s.get(), alltoallv_traffic(s.get(), state), state,
                         tag);
}

// An agreed plan over a's buffers: local.
// blocking: a blocking call's plan, lowered by this rank alone (its `system` entry makes the
// blocking call; a persistent one would be collective).
std::unique_ptr<Operation> planned_alltoallv(const AlltoallvArgs& a, const AgreedPlan& p,
                                             CommState& st, bool blocking) {
  return plan_operation(
      p, st.comm,
      [&] { return bind_alltoallv(a, p.algorithm, *p.schedule, p.traffic, st, p.tag.get()); },
      [&] { return lower_alltoallv(a, p.algorithm, p.schedule.get(), p.traffic, st, p.tag.get()); },
      [&] {
        if (blocking) return make_system_alltoallv(a, st.size, st.comm, true);
        return make_system_alltoallv(a, st.size, std::make_shared<PrivateComm>(st.comm->get()));
      });
}

// What a persistent init (and a blocking call's agreed plan) agrees on and builds, before
// binding buffers: collective.
std::shared_ptr<AgreedPlan> alltoallv_plan(CommState& st, const AlltoallvArgs& a, MPI_Info info,
                                           bool request_given, bool* threaded) {
  st.check_settings();
  comm_locality(st);  // see alltoall_init
  const MPI_Comm lib = st.comm->get();
  Proposal p;
  AlltoallvSizes sizes;
  Selection sel;
  bool measure = false;
  checked(p, [&] {
    if (!request_given) fail(MPI_ERR_ARG, "mpi-advance: request is NULL");
    if (threaded) *threaded = wants_progress_thread(info);
    sizes = check_alltoallv(a, st.size, lib);
    sel = select_algorithm(Collective::Alltoallv, info, st.default_algorithm(Collective::Alltoallv),
                           extent_of(st));
    // auto measures (trial.hpp): a persistent request over its first starts, a blocking call's
    // agreed plan over the first calls that hit it.
    measure = sel.algorithm->kind == AlgorithmKind::Auto && wants_trial(info);
  });
  if (p.error) {
    sizes = AlltoallvSizes{};
    sizes.send_bytes.assign(st.size, 0);
    sizes.recv_bytes.assign(st.size, 0);
  }
  // Every pair must agree on its block's size: what each peer will send me must be what I
  // expect to receive.
  // The library's blocking alltoall after a barrier that drives progress (run_system): MPIs
  // run their blocking form in log rounds at these sizes, where some nonblocking forms post
  // P - 1 messages each way (SMPI's: at P = 1024 a simulation of 21 inits spent its time here).
  std::vector<std::int64_t> incoming(st.size);
  run_system(lib, [&] {
    return MPI_Alltoall(sizes.send_bytes.data(), 1, MPI_INT64_T, incoming.data(), 1, MPI_INT64_T,
                        lib);
  });
  if (!p.error)
    for (int i = 0; i < st.size; ++i)
      if (incoming[i] != sizes.recv_bytes[i]) {
        p.derived = true;
        p.error = std::make_unique<Error>(
            MPI_ERR_TRUNCATE, "mpi-advance: rank " + std::to_string(i) + " sends " +
                                  std::to_string(incoming[i]) + " bytes, this rank expects " +
                                  std::to_string(sizes.recv_bytes[i]));
        break;
      }
  // The unresolved choice is agreed on; auto then resolves it from agreed statistics (and
  // agreed settings), identically on every rank.
  if (!p.error) p.choice = sel.to_string() + (measure ? "+measure" : "");
  p.maxima[0] = sizes.local.max_block;
  p.maxima[1] = sizes.local.rank_bytes;
  p.maxima[2] = sizes.local.rank_messages;
  // The other nodes this rank's non-empty blocks reach (what node-aware exchanges send).
  p.maxima[3] = off_node(comm_locality(st).map, st.rank, nullptr, sizes.send_bytes).nodes;
  p.tag = threaded != nullptr;  // a blocking call's plan runs on tag 0, as every blocking call
  const Agreement ag = agree(st, p);
  Shortlist list = only(sel);
  const Machine m = machine_of(comm_locality(st).map);
  const AlltoallvStats stats{ag.maxima[0], ag.maxima[1], ag.maxima[2], ag.maxima[3]};
  if (sel.algorithm->kind == AlgorithmKind::Auto)
    list = auto_list(Collective::Alltoallv, m, stats.max_block,
                     measure && m.nranks > 1 && stats.max_block > 0,
                     [&](const CostModel& model) { return rank_alltoallv(model, m, stats); });
  auto plan = std::make_shared<AgreedPlan>();
  if (ag.tag) plan->tag = TagLease(st.comm, ag.tag);
  // Every entry's schedule now (the sizes a forwarding entry learns are exchanged at init, in
  // the shortlist's order on every rank); the request lowers one at a time.
  set_entries(
      *plan, list,
      [&](const Selection& s, bool last) {
        return alltoallv_schedule(s, st, ag.tag, last ? std::move(sizes) : sizes);
      },
      [&](const Schedule* s) { return alltoallv_traffic(s, st); });
  plan->point = TrialPoint{Collective::Alltoallv, st.size, m.nnodes, stats.max_block};
  return plan;
}

}  // namespace

std::unique_ptr<Operation> alltoallv_init(CommState& st, const AlltoallvArgs& a, MPI_Info info,
                                          bool request_given) {
  bool threaded = false;
  const std::shared_ptr<AgreedPlan> plan = alltoallv_plan(st, a, info, request_given, &threaded);
  std::unique_ptr<Operation> op = planned_alltoallv(a, *plan, st, false);
  op->tag = std::move(plan->tag);
  op->threaded = threaded;
  return op;
}

void alltoallv_blocking(CommState& st, const AlltoallvArgs& a) {
  st.check_settings();
  blocking_machine(st, Collective::Alltoallv);
  const bool debug = settings().debug;
  const bool agreed = agreed_blocking(st, Collective::Alltoallv);
  std::unique_ptr<Error> local;
  AlltoallvSizes sizes;
  try {
    sizes = check_alltoallv(a, st.size, st.comm->get());
  } catch (const Error& e) {
    if (!debug && !agreed) throw;
    local = std::make_unique<Error>(e);
  }
  if (agreed) {
    // The agreed plan cache (common.hpp): the key is this rank's pattern, buffers excluded.
    std::vector<std::int64_t>& key = st.plans.key;
    key.clear();
    if (!local) {
      key.push_back(-2);
      key.push_back(a.in_place() + 2 * a.large);
      push_type_identity(key, a.recv.type);
      if (!a.in_place()) push_type_identity(key, a.send.type);
      auto none = [](MPI_Datatype) {};
      push_side_words(key, a.recv, st.size, none);
      if (!a.in_place()) push_side_words(key, a.send, st.size, none);
    }
    const bool ran = run_agreed(
        st, Collective::Alltoallv, !local, a.send.buf, a.recv.buf,
        [&] { return alltoallv_plan(st, a, MPI_INFO_NULL, true, nullptr); },
        [&](const AgreedPlan& p) { return planned_alltoallv(a, p, st, true); });
    if (ran) return;
    // Not every rank has seen its pattern before, or direct mode: the uncached exchange below.
    // (A local argument error takes the agreed build, which raises it on every rank, except in
    // direct mode, where it is this rank's alone, as in MPI.)
    if (local) throw *local;
  }
  // The blocking auto takes its record's blocking_auto algorithm (a direct exchange) without
  // communicating: every direct variant moves one message per pair on the same tag, so they
  // interoperate across ranks and need no agreement. Only the forwarding algorithms do, and
  // persistent init, which agrees on statistics, may choose them.
  const Selection* sel = nullptr;
  if (!local)
    sel = &blocking_selection(st, Collective::Alltoallv, {-1}, [&] {
      // A tuning rule applies when it does not depend on sizes (those are not agreed here).
      const Machine m = machine_of(comm_locality(st).map);
      return resolve_auto(settings().tuning, Collective::Alltoallv, m, -1,
                          [&] { return blocking_auto_selection(Collective::Alltoallv, st.size); });
    });
  if (debug) debug_agree(st, std::move(local), sel, 0);
  if (sel->algorithm->kind == AlgorithmKind::System) {
    const MPI_Comm c = st.comm->get();
    run_system(c, [&] { return system_alltoallv(a, st.size, c); });
    note_call(st, Collective::Alltoallv, *sel, false);
    return;
  }
  // A plan is reused while this rank's own arguments repeat; algorithms that depend on other
  // ranks' sizes (needs_peer_sizes) are rebuilt every call.
  const bool cacheable = !sel->algorithm->needs_peer_sizes && predefined(a.recv.type) &&
                         (a.in_place() || predefined(a.send.type));
  st.call_words.clear();
  if (cacheable) {
    for (std::int64_t w : {std::int64_t(-2), word(sel->algorithm), word(a.send.buf),
                           word(a.send.type), word(a.recv.buf), word(a.recv.type)})
      st.call_words.push_back(w);
    for (std::int64_t v : sel->values) st.call_words.push_back(v);
    auto none = [](MPI_Datatype) {};
    push_side_words(st.call_words, a.recv, st.size, none);
    if (!a.in_place()) push_side_words(st.call_words, a.send, st.size, none);
  }
  const bool hit =
      run_blocking(st, cacheable, [&] { return make_alltoallv(a, *sel, st, 0, std::move(sizes)); });
  note_call(st, Collective::Alltoallv, *sel, hit);
}

}  // namespace mpia
