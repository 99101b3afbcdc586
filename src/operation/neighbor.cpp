#include "operation/neighbor.hpp"

#include "locality/locality.hpp"
#include "operation/common.hpp"
#include "operation/settings.hpp"
#include "util/error.hpp"

#include <algorithm>
#include <map>
#include <string>
#include <utility>

namespace mpia {

namespace {

// Graph keys: the rank of each edge among this rank's edges to (from) the same peer.
std::vector<int> occurrence_keys(const std::vector<int>& peers) {
  std::map<int, int> seen;
  std::vector<int> key(peers.size());
  for (std::size_t k = 0; k < peers.size(); ++k) key[k] = seen[peers[k]]++;
  return key;
}

}  // namespace

NeighborTopology neighbor_topology(MPI_Comm comm) {
  NeighborTopology t;
  MPIA_CHECK(MPI_Topo_test(comm, &t.kind));
  if (t.kind == MPI_CART) {
    int ndims = 0;
    MPIA_CHECK(MPI_Cartdim_get(comm, &ndims));
    for (int d = 0; d < ndims; ++d) {
      int minus = MPI_PROC_NULL, plus = MPI_PROC_NULL;
      MPIA_CHECK(MPI_Cart_shift(comm, d, 1, &minus, &plus));
      // Blocks 2d (the -1 neighbor) and 2d+1 (the +1 neighbor), sent and received alike.
      t.sources.push_back(minus), t.sources.push_back(plus);
      t.destinations.push_back(minus), t.destinations.push_back(plus);
      // Direction of travel: receive block 2d comes travelling +1 (key 2d), block 2d+1
      // travelling -1 (key 2d+1); send block 2d travels -1, block 2d+1 travels +1.
      t.recv_key.push_back(2 * d), t.recv_key.push_back(2 * d + 1);
      t.send_key.push_back(2 * d + 1), t.send_key.push_back(2 * d);
    }
    return t;
  }
  if (t.kind == MPI_GRAPH) {
    int rank = 0, n = 0;
    MPIA_CHECK(MPI_Comm_rank(comm, &rank));
    MPIA_CHECK(MPI_Graph_neighbors_count(comm, rank, &n));
    t.sources.resize(n);
    if (n > 0) MPIA_CHECK(MPI_Graph_neighbors(comm, rank, n, t.sources.data()));
    t.destinations = t.sources;
  } else if (t.kind == MPI_DIST_GRAPH) {
    int indeg = 0, outdeg = 0, weighted = 0;
    MPIA_CHECK(MPI_Dist_graph_neighbors_count(comm, &indeg, &outdeg, &weighted));
    t.sources.resize(indeg);
    t.destinations.resize(outdeg);
    // Weights are not needed, but MPI requires arrays for them when the graph is weighted.
    std::vector<int> sw(std::max(indeg, 1)), dw(std::max(outdeg, 1));
    MPIA_CHECK(MPI_Dist_graph_neighbors(
        comm, indeg, t.sources.data(), weighted ? sw.data() : MPI_UNWEIGHTED, outdeg,
        t.destinations.data(), weighted ? dw.data() : MPI_UNWEIGHTED));
  } else {
    fail(MPI_ERR_TOPOLOGY,
         "mpi-advance: neighbor all-to-all on a communicator without a "
         "process topology (Cartesian, graph or distributed graph)");
  }
  t.recv_key = occurrence_keys(t.sources);
  t.send_key = occurrence_keys(t.destinations);
  return t;
}

const NeighborTopology& comm_topology(CommState& st) {
  if (!st.topology) st.topology = std::make_unique<NeighborTopology>(neighbor_topology(st.user));
  return *st.topology;
}

NeighborTopology graph_topology(std::vector<int> sources, std::vector<int> destinations) {
  NeighborTopology t;
  t.kind = MPI_DIST_GRAPH;
  t.library = true;
  t.sources = std::move(sources);
  t.destinations = std::move(destinations);
  t.recv_key = occurrence_keys(t.sources);
  t.send_key = occurrence_keys(t.destinations);
  return t;
}

std::shared_ptr<PrivateComm> neighbor_system_comm(CommState& st) {
  const NeighborTopology& t = comm_topology(st);
  if (!t.library) return st.comm;
  if (!st.graph) {
    // MPI wants arrays even for a zero degree.
    const int none = 0;
    MPI_Comm g = MPI_COMM_NULL;
    run_system(st.comm->get(), [&] {
      return MPI_Dist_graph_create_adjacent(st.comm->get(), int(t.sources.size()),
                                            t.sources.empty() ? &none : t.sources.data(),
                                            MPI_UNWEIGHTED, int(t.destinations.size()),
                                            t.destinations.empty() ? &none : t.destinations.data(),
                                            MPI_UNWEIGHTED, MPI_INFO_NULL, 0, &g);
    });
    st.graph = std::make_shared<PrivateComm>(g, PrivateComm::Adopt{});
  }
  return st.graph;
}

namespace {

// Local argument checks; fills the packed bytes per block.
void check_neighbor(const AlltoallvArgs& a, const NeighborTopology& t,
                    std::vector<std::int64_t>& send_bytes, std::vector<std::int64_t>& recv_bytes,
                    MPI_Comm comm) {
  if (a.send.buf == MPI_IN_PLACE || a.recv.buf == MPI_IN_PLACE)
    fail(MPI_ERR_BUFFER, "mpi-advance: MPI_IN_PLACE is not allowed in neighborhood collectives");
  check_blocks(a.recv, int(t.sources.size()), "recv", recv_bytes, comm);
  check_blocks(a.send, int(t.destinations.size()), "send", send_bytes, comm);
}

// Sends every out-edge's byte count along the edge (point-to-point on comm, posted in key
// order like the data, so degenerate Cartesian dimensions pair up correctly) and compares
// what arrives with this rank's receive sizes. Returns the first mismatch as an error message
// (empty when all agree). Collective over the topology's edges; waits while driving running
// operations.
std::string check_edge_sizes(const NeighborTopology& t, const std::vector<std::int64_t>& send_bytes,
                             const std::vector<std::int64_t>& recv_bytes, MPI_Comm comm, int tag) {
  NeighborShape s;
  s.sources = t.sources, s.destinations = t.destinations;
  s.recv_key = t.recv_key, s.send_key = t.send_key;
  // Every edge carries one value, whatever its size.
  s.send_bytes.assign(t.destinations.size(), 1);
  s.recv_bytes.assign(t.sources.size(), 1);
  const Schedule sch = build_neighbor_direct(s);
  std::vector<std::int64_t> got(t.sources.size(), -1);
  std::vector<MPI_Request> reqs;
  for (const Exchange& x : sch.rounds[0].exchanges) {
    if (x.recv.active()) {
      reqs.emplace_back();
      MPIA_CHECK(MPI_Irecv(&got[x.recv.pieces[0].block], 1, MPI_INT64_T, x.recv.peer, tag, comm,
                           &reqs.back()));
    }
  }
  for (const Exchange& x : sch.rounds[0].exchanges) {
    if (x.send.active()) {
      reqs.emplace_back();
      MPIA_CHECK(MPI_Isend(&send_bytes[x.send.pieces[0].block], 1, MPI_INT64_T, x.send.peer, tag,
                           comm, &reqs.back()));
    }
  }
  for (MPI_Request& r : reqs) complete(r, "the edge size exchange");
  for (std::size_t j = 0; j < t.sources.size(); ++j)
    if (t.sources[j] != MPI_PROC_NULL && got[j] != recv_bytes[j])
      return "mpi-advance: rank " + std::to_string(t.sources[j]) + " sends " +
             std::to_string(got[j]) + " bytes on the edge of receive block " + std::to_string(j) +
             ", this rank expects " + std::to_string(recv_bytes[j]);
  return {};
}

std::shared_ptr<const Schedule> neighbor_schedule(const Selection& sel, CommState& state,
                                                  const NeighborTopology& t, int tag,
                                                  std::vector<std::int64_t> send_bytes,
                                                  std::vector<std::int64_t> recv_bytes) {
  if (sel.algorithm->kind == AlgorithmKind::System) return nullptr;
  if (sel.algorithm->kind != AlgorithmKind::Scheduled)
    fail(MPI_ERR_INTERN, "mpi-advance: unresolved algorithm selection");
  NeighborShape shape;
  shape.rank = state.rank;
  shape.sources = t.sources, shape.destinations = t.destinations;
  shape.recv_key = t.recv_key, shape.send_key = t.send_key;
  if (sel.algorithm->needs_locality) shape.nodes = &comm_locality(state).map;
  shape.send_bytes = std::move(send_bytes);
  shape.recv_bytes = std::move(recv_bytes);
  if (sel.algorithm->learn_neighbor) {
    MpiSizeChannel channel(state.comm->get(), tag, "the edge exchange");
    sel.algorithm->learn_neighbor(shape, sel.values, channel);
  }
  return std::make_shared<const Schedule>(sel.algorithm->build_neighbor(shape, sel.values));
}

Traffic neighbor_traffic(const Schedule* schedule, const CommState& state) {
  if (!schedule) return Traffic{};
  const Locality* loc = cached_locality(state);
  return traffic_of(*schedule, state.rank, loc ? &loc->map : nullptr);
}

std::unique_ptr<ScheduledOperation> bind_neighbor(const AlltoallvArgs& a, const std::string& name,
                                                  const Schedule& schedule, const Traffic& traffic,
                                                  CommState& state, const NeighborTopology& t,
                                                  int tag) {
  const int indeg = int(t.sources.size()), outdeg = int(t.destinations.size());
  auto op = std::make_unique<ScheduledOperation>(name, state.comm);
  const BlockBuffer recv = op->bind(a.recv, indeg);
  const BlockBuffer send = op->bind(a.send, outdeg);
  op->lower(schedule, send, recv, tag);
  op->set_traffic(traffic);
  return op;
}

std::unique_ptr<Operation> lower_neighbor(const AlltoallvArgs& a, const std::string& name,
                                          const Schedule* schedule, const Traffic& traffic,
                                          CommState& state, const NeighborTopology& t, int tag) {
  if (!schedule)
    return make_system_neighbor(a, int(t.sources.size()), int(t.destinations.size()),
                                neighbor_system_comm(state));
  return bind_neighbor(a, name, *schedule, traffic, state, t, tag);
}

std::unique_ptr<Operation> make_neighbor(const AlltoallvArgs& a, const Selection& sel,
                                         CommState& state, const NeighborTopology& t, int tag,
                                         std::vector<std::int64_t> send_bytes,
                                         std::vector<std::int64_t> recv_bytes) {
  const std::shared_ptr<const Schedule> s =
      neighbor_schedule(sel, state, t, tag, std::move(send_bytes), std::move(recv_bytes));
  return lower_neighbor(a, sel.to_string(), s.get(), neighbor_traffic(s.get(), state), state, t,
                        tag);
}

}  // namespace

namespace {

// An agreed plan over a's buffers: local.
// blocking: see planned_alltoallv.
std::unique_ptr<Operation> planned_neighbor(const AlltoallvArgs& a, const AgreedPlan& p,
                                            CommState& st, const NeighborTopology& t,
                                            bool blocking) {
  return plan_operation(
      p, st.comm,
      [&] { return bind_neighbor(a, p.algorithm, *p.schedule, p.traffic, st, t, p.tag.get()); },
      [&] {
        return lower_neighbor(a, p.algorithm, p.schedule.get(), p.traffic, st, t, p.tag.get());
      },
      [&] {
        const std::shared_ptr<PrivateComm> c = neighbor_system_comm(st);
        return make_system_neighbor(a, int(t.sources.size()), int(t.destinations.size()),
                                    blocking ? c : std::make_shared<PrivateComm>(c->get()),
                                    blocking);
      });
}

std::shared_ptr<AgreedPlan> neighbor_plan(CommState& st, const AlltoallvArgs& a, MPI_Info info,
                                          bool request_given, bool* threaded_out) {
  st.check_settings();
  const NeighborTopology& topo = comm_topology(st);  // no topology: the same on every rank
  comm_locality(st);                                 // see alltoall_init
  Proposal p;
  bool threaded = false;
  std::vector<std::int64_t> sb, rb;
  Selection sel;
  bool measure = false;
  checked(p, [&] {
    if (!request_given) fail(MPI_ERR_ARG, "mpi-advance: request is NULL");
    threaded = wants_progress_thread(info);
    check_neighbor(a, topo, sb, rb, st.comm->get());
    sel = select_algorithm(Collective::NeighborAlltoallv, info,
                           st.default_algorithm(Collective::NeighborAlltoallv), extent_of(st));
    // auto measures (trial.hpp): a persistent request over its first starts, a blocking call's
    // agreed plan over the first calls that hit it.
    measure = sel.algorithm->kind == AlgorithmKind::Auto && wants_trial(info);
  });
  if (p.error) {
    sb.assign(topo.destinations.size(), 0);
    rb.assign(topo.sources.size(), 0);
  }
  // Every edge must agree on its size (tag 0: no blocking call is in flight during init).
  const std::string mismatch = check_edge_sizes(topo, sb, rb, st.comm->get(), 0);
  if (!p.error && !mismatch.empty()) {
    p.derived = true;
    p.error = std::make_unique<Error>(MPI_ERR_TRUNCATE, mismatch);
  }
  if (!p.error) p.choice = sel.to_string() + (measure ? "+measure" : "");
  for (std::int64_t b : sb) p.maxima[0] = std::max(p.maxima[0], b);
  // Off-node edges and the distinct nodes they reach, for the model.
  const OffNode off = off_node(comm_locality(st).map, st.rank, &topo.destinations, sb);
  p.maxima[1] = off.sends;
  p.maxima[2] = off.nodes;
  // Where the MPI library's neighbor collective is known to give wrong answers, auto does not
  // try it: a neighbour twice in a list (a periodic dimension of 1 or 2 ranks: the libraries
  // differ from MPI's rule and from one another, system.cpp), and MPICH's w form on a rank whose
  // in- and out-degree differ (MPICH 4.0.2 loses receive blocks there: test_neighbor.cpp's
  // runnable_w). Agreed: the maximum over the ranks.
  auto twice = [](std::vector<int> v) {
    v.erase(std::remove(v.begin(), v.end(), MPI_PROC_NULL), v.end());
    std::sort(v.begin(), v.end());
    return std::adjacent_find(v.begin(), v.end()) != v.end();
  };
#if defined(MPICH)
  constexpr bool kMpich = true;
#else
  constexpr bool kMpich = false;
#endif
  const bool uneven_w =
      kMpich && (a.send.w || a.recv.w) && topo.sources.size() != topo.destinations.size();
  p.maxima[3] = twice(topo.sources) || twice(topo.destinations) || uneven_w;
  p.tag = threaded_out != nullptr;  // a blocking call's plan runs on tag 0
  const Agreement ag = agree(st, p);
  Shortlist list = only(sel);
  const Machine m = machine_of(comm_locality(st).map);
  const NeighborStats stats{ag.maxima[0], ag.maxima[1], ag.maxima[2]};
  if (sel.algorithm->kind == AlgorithmKind::Auto)
    list = auto_list(
        Collective::NeighborAlltoallv, m, stats.max_message,
        measure && m.nranks > 1 && stats.max_message > 0,
        [&](const CostModel& model) { return rank_neighbor(model, m, stats); }, ag.maxima[3] == 0);
  if (threaded_out) *threaded_out = threaded;
  auto plan = std::make_shared<AgreedPlan>();
  if (ag.tag) plan->tag = TagLease(st.comm, ag.tag);
  // Every entry's schedule now, in the shortlist's order on every rank (see alltoallv_plan).
  set_entries(
      *plan, list,
      [&](const Selection& s, bool last) {
        return neighbor_schedule(s, st, topo, ag.tag, last ? std::move(sb) : sb,
                                 last ? std::move(rb) : rb);
      },
      [&](const Schedule* s) { return neighbor_traffic(s, st); });
  plan->point = TrialPoint{Collective::NeighborAlltoallv, st.size, m.nnodes, stats.max_message};
  return plan;
}

}  // namespace

std::unique_ptr<Operation> neighbor_init(CommState& st, const AlltoallvArgs& a, MPI_Info info,
                                         bool request_given) {
  bool threaded = false;
  const std::shared_ptr<AgreedPlan> plan = neighbor_plan(st, a, info, request_given, &threaded);
  std::unique_ptr<Operation> op = planned_neighbor(a, *plan, st, comm_topology(st), false);
  op->tag = std::move(plan->tag);
  op->threaded = threaded;
  return op;
}

void neighbor_blocking(CommState& st, const AlltoallvArgs& a) {
  st.check_settings();
  blocking_machine(st, Collective::NeighborAlltoallv);
  const NeighborTopology& topo = comm_topology(st);
  const bool debug = settings().debug;
  const bool agreed = agreed_blocking(st, Collective::NeighborAlltoallv);
  std::unique_ptr<Error> local;
  std::vector<std::int64_t> sb, rb;
  try {
    check_neighbor(a, topo, sb, rb, st.comm->get());
  } catch (const Error& e) {
    if (!debug && !agreed) throw;
    local = std::make_unique<Error>(e);
  }
  const int indeg = int(topo.sources.size()), outdeg = int(topo.destinations.size());
  if (agreed) {
    // The agreed plan cache (common.hpp), as alltoallv_blocking.
    std::vector<std::int64_t>& key = st.plans.key;
    key.clear();
    if (!local) {
      key.push_back(-3);
      key.push_back(a.recv.w + 2 * a.large + 4 * a.regular);
      auto identity = [&key](MPI_Datatype t) { push_type_identity(key, t); };
      if (!a.recv.w) identity(a.recv.type), identity(a.send.type);
      push_side_words(key, a.recv, indeg, identity);
      push_side_words(key, a.send, outdeg, identity);
    }
    const bool ran = run_agreed(
        st, Collective::NeighborAlltoallv, !local, a.send.buf, a.recv.buf,
        [&] { return neighbor_plan(st, a, MPI_INFO_NULL, true, nullptr); },
        [&](const AgreedPlan& p) { return planned_neighbor(a, p, st, topo, true); });
    if (ran) return;
    if (local) throw *local;  // direct mode (see alltoallv_blocking)
  }
  // The blocking auto takes its record's blocking_auto algorithm (direct): it needs no
  // agreement and no edge list.
  const Selection* sel = nullptr;
  if (!local)
    sel = &blocking_selection(st, Collective::NeighborAlltoallv, {-3}, [&] {
      const Machine m = machine_of(comm_locality(st).map);
      return resolve_auto(settings().tuning, Collective::NeighborAlltoallv, m, -1, [&] {
        return blocking_auto_selection(Collective::NeighborAlltoallv, st.size);
      });
    });
  if (debug) debug_agree(st, std::move(local), sel, 0);
  if (sel->algorithm->kind == AlgorithmKind::System) {
    note_call(st, Collective::NeighborAlltoallv, *sel, false);
    const MPI_Comm c = neighbor_system_comm(st)->get();
    run_system(c, [&] { return system_neighbor(a, indeg, outdeg, c); });
    return;
  }
  // Reused while this rank's own arguments repeat, when every datatype is predefined (a
  // derived type's handle may name another type once freed).
  bool cacheable = !sel->algorithm->needs_peer_sizes;
  for (const auto& [side, n] : {std::make_pair(&a.recv, indeg), std::make_pair(&a.send, outdeg)}) {
    if (!side->w) cacheable = cacheable && predefined(side->type);
    for (int i = 0; i < n && cacheable && side->w; ++i) cacheable = predefined(side->types[i]);
  }
  st.call_words.clear();
  if (cacheable) {
    for (std::int64_t w :
         {std::int64_t(-3), word(sel->algorithm), word(a.send.buf), word(a.send.type),
          word(a.recv.buf), word(a.recv.type), std::int64_t(a.recv.w)})
      st.call_words.push_back(w);
    auto handle = [&](MPI_Datatype t) { st.call_words.push_back(word(t)); };
    push_side_words(st.call_words, a.recv, indeg, handle);
    push_side_words(st.call_words, a.send, outdeg, handle);
  }
  const bool hit = run_blocking(st, cacheable, [&] {
    return make_neighbor(a, *sel, st, topo, 0, std::move(sb), std::move(rb));
  });
  note_call(st, Collective::NeighborAlltoallv, *sel, hit);
}

}  // namespace mpia
