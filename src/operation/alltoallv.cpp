#include "operation/alltoallv.hpp"

#include "collective/alltoall/builders.hpp"
#include "collective/shortlist.hpp"
#include "locality/locality.hpp"
#include "operation/common.hpp"
#include "operation/settings.hpp"
#include "util/error.hpp"

#include <algorithm>
#include <string>
#include <unordered_map>

namespace mpia {

void check_blocks(const void* buf, const int* counts, const int* displs, MPI_Datatype type,
                  int P, const char* side, std::vector<std::int64_t>& bytes, MPI_Comm comm) {
  if (P > 0 && (!counts || !displs))
    fail(MPI_ERR_ARG, std::string("mpi-advance: null ") + side + " count or displacement array");
  check_type(type, comm, (std::string(side) + "type").c_str());
  const std::int64_t size = type_size(type);
  bytes.resize(P);
  for (int i = 0; i < P; ++i) {
    if (counts[i] < 0)
      fail(MPI_ERR_COUNT, std::string("mpi-advance: negative ") + side + " count for rank " +
                              std::to_string(i));
    bytes[i] = counts[i] * size;
    check_buffer(buf, bytes[i], type, (std::string(side) + "buf").c_str());
  }
}

namespace {

AlltoallvSizes check_alltoallv(const AlltoallvArgs& a, int P, MPI_Comm comm) {
  AlltoallvSizes s;
  if (a.recvbuf == MPI_IN_PLACE) fail(MPI_ERR_BUFFER, "mpi-advance: recvbuf is MPI_IN_PLACE");
  check_blocks(a.recvbuf, a.recvcounts, a.rdispls, a.recvtype, P, "recv", s.recv_bytes, comm);
  if (a.in_place())
    s.send_bytes = s.recv_bytes;  // MPI_IN_PLACE: block to j has the layout of block from j
  else
    check_blocks(a.sendbuf, a.sendcounts, a.sdispls, a.sendtype, P, "send", s.send_bytes, comm);
  for (std::int64_t b : s.send_bytes) {
    s.local.max_block = std::max(s.local.max_block, b);
    s.local.rank_bytes += b;
    s.local.rank_messages += b > 0;
  }
  return s;
}

int mod(std::int64_t a, int P) { return int(((a % P) + P) % P); }

// The sizes a forwarding builder asks for, learnt at init: this rank's own blocks (from its
// arguments) and a table of the other pairs it needs. Asking for a pair nobody told it is a
// bug, reported as one.
class PeerSizes {
 public:
  PeerSizes(int me, int P, const AlltoallvSizes& own)
      : me_(me), P_(P), send_(own.send_bytes), recv_(own.recv_bytes) {}
  void add(int src, int dst, std::int64_t bytes) { table_[key(src, dst)] = bytes; }
  std::int64_t operator()(int src, int dst) const {
    if (src == me_) return send_[std::size_t(dst)];
    if (dst == me_) return recv_[std::size_t(src)];
    const auto it = table_.find(key(src, dst));
    if (it == table_.end())
      fail(MPI_ERR_INTERN, "mpi-advance: a builder asked for the size of a block (" +
                               std::to_string(src) + " to " + std::to_string(dst) +
                               ") this rank never learnt");
    return it->second;
  }
  std::size_t entries() const { return table_.size(); }

 private:
  std::int64_t key(int src, int dst) const { return std::int64_t(src) * P_ + dst; }
  int me_, P_;
  std::vector<std::int64_t> send_, recv_;
  std::unordered_map<std::int64_t, std::int64_t> table_;
};

// alltoallv "bruck": the same rounds as the data, run on the blocks' sizes (8 bytes each), so
// that after round (x, z) slot j holds the size of the block the data exchange will then have
// there -- exactly what the builder asks for. K rounds of one message each way; O(P) memory for
// the slots plus O(D) entries (D: blocks this rank forwards, O(P log P)).
void learn_bruck_sizes(PeerSizes& t, int me, int P, int radix,
                       const std::vector<std::int64_t>& send_bytes, MPI_Comm comm, int tag) {
  std::vector<std::int64_t> slot(static_cast<std::size_t>(P)), out, in;
  for (int j = 0; j < P; ++j) slot[std::size_t(j)] = send_bytes[std::size_t(mod(me - j, P))];
  for (const DigitRound& d : radix_rounds(P, radix)) {
    const std::int64_t processed = d.distance / d.z * radix;
    out.clear();
    for (int j : d.blocks) out.push_back(slot[std::size_t(j)]);
    in.assign(out.size(), 0);
    MPI_Request r[2];
    const int n = int(out.size());
    MPIA_CHECK(MPI_Irecv(in.data(), n, MPI_INT64_T, mod(me + d.distance, P), tag, comm, &r[0]));
    MPIA_CHECK(MPI_Isend(out.data(), n, MPI_INT64_T, mod(me - d.distance, P), tag, comm, &r[1]));
    complete(r[0], "the size exchange");
    complete(r[1], "the size exchange");
    for (std::size_t k = 0; k < d.blocks.size(); ++k) {
      const int j = d.blocks[k];
      slot[std::size_t(j)] = in[k];
      const auto [src, dst] = radix_block_after(me, P, j, processed);
      t.add(src, dst, in[k]);
    }
  }
}

// alltoallv "locality": a port needs the sizes of the blocks its node's other ranks give it, to
// the destinations it serves. One message from every rank of the node to every other (its
// sizes for the destinations that rank serves): O(P) memory, Q - 1 messages each way.
void learn_lane_sizes(PeerSizes& t, int me, const NodeMap& nm,
                      const std::vector<std::int64_t>& send_bytes, MPI_Comm comm, int tag) {
  const std::vector<int>& mine = nm.members[std::size_t(nm.node_of[me])];
  const int Q = int(mine.size()), q = nm.local_of[me];
  std::vector<std::vector<std::int64_t>> out(static_cast<std::size_t>(Q)), in(out.size());
  for (int d = 0; d < nm.size(); ++d)
    out[std::size_t(nm.local_of[d] % Q)].push_back(send_bytes[std::size_t(d)]);
  const std::vector<int> served = two_level_served(me, nm);
  std::vector<MPI_Request> reqs;
  for (int a = 0; a < Q; ++a) {
    if (a == q) continue;
    in[std::size_t(a)].assign(served.size(), 0);
    reqs.emplace_back();
    MPIA_CHECK(MPI_Irecv(in[std::size_t(a)].data(), int(served.size()), MPI_INT64_T,
                         mine[std::size_t(a)], tag, comm, &reqs.back()));
  }
  for (int b = 0; b < Q; ++b) {
    if (b == q) continue;
    reqs.emplace_back();
    MPIA_CHECK(MPI_Isend(out[std::size_t(b)].data(), int(out[std::size_t(b)].size()), MPI_INT64_T,
                         mine[std::size_t(b)], tag, comm, &reqs.back()));
  }
  for (MPI_Request& r : reqs) complete(r, "the size exchange");
  for (int a = 0; a < Q; ++a)
    if (a != q)
      for (std::size_t k = 0; k < served.size(); ++k)
        t.add(mine[std::size_t(a)], served[k], in[std::size_t(a)][k]);
}

// The schedule of a scheduled algorithm (learning its peers' sizes when it needs them:
// collective, on tag); null for the system's own collective.
std::shared_ptr<const Schedule> alltoallv_schedule(const Selection& sel, CommState& state,
                                                   int tag, AlltoallvSizes sizes) {
  const int P = state.size;
  if (sel.algorithm->kind == AlgorithmKind::System) return nullptr;
  if (sel.algorithm->kind != AlgorithmKind::Scheduled)
    fail(MPI_ERR_INTERN, "mpi-advance: unresolved algorithm selection");
  AlltoallvShape shape;
  shape.rank = state.rank;
  shape.size = P;
  if (sel.algorithm->needs_locality) shape.nodes = &comm_locality(state).map;
  if (sel.algorithm->needs_peer_sizes) {
    auto t = std::make_shared<PeerSizes>(state.rank, P, sizes);
    if (sel.algorithm->needs_locality)
      learn_lane_sizes(*t, state.rank, *shape.nodes, sizes.send_bytes, state.comm->get(), tag);
    else
      learn_bruck_sizes(*t, state.rank, P, int(sel.value("radix")), sizes.send_bytes,
                        state.comm->get(), tag);
    shape.pair_bytes = [t](int src, int dst) { return (*t)(src, dst); };
  }
  shape.send_bytes = std::move(sizes.send_bytes);
  shape.recv_bytes = std::move(sizes.recv_bytes);
  return std::make_shared<const Schedule>(sel.algorithm->build_alltoallv(shape, sel.values));
}

Traffic alltoallv_traffic(const Schedule* schedule, const CommState& state) {
  if (!schedule) return Traffic{};
  const Locality* loc = cached_locality(state);
  return traffic_of(*schedule, state.rank, loc ? &loc->map : nullptr);
}

// The schedule over a's buffers: local (no communication).
std::unique_ptr<ScheduledOperation> bind_alltoallv(const AlltoallvArgs& a, const std::string& name,
                                                   const Schedule& schedule,
                                                   const Traffic& traffic, CommState& state,
                                                   int tag) {
  const int P = state.size;
  auto op = std::make_unique<ScheduledOperation>(name, state.comm);
  std::vector<MPI_Aint> displs(a.rdispls, a.rdispls + P);
  const BlockBuffer recv = op->bind(a.recvbuf, a.recvcounts, displs.data(), P, a.recvtype);
  BlockBuffer send;
  if (a.in_place()) {
    send = op->shadow_of(recv);
  } else {
    displs.assign(a.sdispls, a.sdispls + P);
    send = op->bind(a.sendbuf, a.sendcounts, displs.data(), P, a.sendtype);
  }
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

// What a persistent init agrees on and builds, before binding buffers: collective.
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
    sel = select_algorithm(Collective::Alltoallv, info,
                           st.default_algorithm(Collective::Alltoallv), extent_of(st));
    // Persistent auto requests measure (trial.hpp); the blocking calls' agreed plans do not.
    measure = threaded && sel.algorithm->kind == AlgorithmKind::Auto && wants_trial(info);
  });
  if (p.error) {
    sizes = AlltoallvSizes{};
    sizes.send_bytes.assign(st.size, 0);
    sizes.recv_bytes.assign(st.size, 0);
  }
  // Every pair must agree on its block's size: what each peer will send me must be what I
  // expect to receive.
  std::vector<std::int64_t> incoming(st.size);
  MPI_Request r;
  MPIA_CHECK(MPI_Ialltoall(sizes.send_bytes.data(), 1, MPI_INT64_T, incoming.data(), 1,
                           MPI_INT64_T, lib, &r));
  complete(r, "MPI_Ialltoall (sizes)");
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
  p.tag = threaded != nullptr;  // a blocking call's plan runs on tag 0, as every blocking call
  const Agreement ag = agree(st, p);
  std::vector<Selection> list{sel};
  const Machine m = machine_of(comm_locality(st).map);
  const AlltoallvStats stats{ag.maxima[0], ag.maxima[1], ag.maxima[2]};
  if (sel.algorithm->kind == AlgorithmKind::Auto)
    list = auto_list(Collective::Alltoallv, m, stats.max_block,
                     measure && m.nranks > 1 && stats.max_block > 0,
                     [&](const CostModel& model) { return rank_alltoallv(model, m, stats); });
  auto plan = std::make_shared<AgreedPlan>();
  if (ag.tag) plan->tag = TagLease(st.comm, ag.tag);
  // Every entry's schedule now (the sizes a forwarding entry learns are exchanged at init, in
  // the shortlist's order on every rank); the request lowers one at a time.
  for (std::size_t i = 0; i < list.size(); ++i) {
    TrialEntry e;
    e.selection = list[i];
    e.schedule = alltoallv_schedule(list[i], st, ag.tag,
                                    i + 1 < list.size() ? sizes : std::move(sizes));
    e.traffic = alltoallv_traffic(e.schedule.get(), st);
    plan->trial.push_back(std::move(e));
  }
  plan->schedule = plan->trial[0].schedule;
  plan->traffic = plan->trial[0].traffic;
  plan->selection = plan->trial[0].selection;
  plan->algorithm = plan->selection.to_string();
  if (plan->trial.size() == 1) plan->trial.clear();
  plan->point = TrialPoint{Collective::Alltoallv, st.size, m.nnodes, stats.max_block};
  return plan;
}

}  // namespace

std::unique_ptr<Operation> alltoallv_init(CommState& st, const AlltoallvArgs& a, MPI_Info info,
                                          bool request_given) {
  bool threaded = false;
  const std::shared_ptr<AgreedPlan> plan = alltoallv_plan(st, a, info, request_given, &threaded);
  std::unique_ptr<Operation> op;
  if (!plan->trial.empty())
    op = std::make_unique<TrialOperation>(
        bind_alltoallv(a, plan->algorithm, *plan->schedule, plan->traffic, st, plan->tag.get()),
        std::move(plan->trial), st.comm, plan->tag.get(), plan->point);
  else
    op = lower_alltoallv(a, plan->algorithm, plan->schedule.get(), plan->traffic, st,
                         plan->tag.get());
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
      key.push_back(a.in_place());
      push_type_identity(key, a.recvtype);
      if (!a.in_place()) push_type_identity(key, a.sendtype);
      for (int i = 0; i < st.size; ++i) {
        key.push_back(a.recvcounts[i]);
        key.push_back(a.rdispls[i]);
        if (!a.in_place()) {
          key.push_back(a.sendcounts[i]);
          key.push_back(a.sdispls[i]);
        }
      }
    }
    const bool ran = run_agreed(
        st, Collective::Alltoallv, !local, a.sendbuf, a.recvbuf,
        [&] { return alltoallv_plan(st, a, MPI_INFO_NULL, true, nullptr); },
        [&](const AgreedPlan& p) {
          return lower_alltoallv(a, p.algorithm, p.schedule.get(), p.traffic, st, p.tag.get());
        });
    if (ran) return;
    // Not every rank has seen its pattern before, or direct mode: the uncached exchange below.
    // (A local argument error takes the agreed build, which raises it on every rank, except in
    // direct mode, where it is this rank's alone, as in MPI.)
    if (local) throw *local;
  }
  // The blocking auto takes the windowed direct exchange without communicating: every direct
  // variant (pairwise, linear, multipair with any window) moves one message per pair on the
  // same tag, so they interoperate across ranks and need no agreement. Only bruck does (it
  // forwards blocks), and persistent init, which agrees on statistics, may choose it.
  const Selection* sel = nullptr;
  if (!local)
    sel = &blocking_selection(st, Collective::Alltoallv, {-1}, [&] {
      // A tuning rule applies when it does not depend on sizes (those are not agreed here).
      const Machine m = machine_of(comm_locality(st).map);
      return resolve_auto(settings().tuning, Collective::Alltoallv, m, -1, [&] {
        return parse_selection(Collective::Alltoallv, "multipair_waitany", st.size, true);
      });
    });
  if (debug) debug_agree(st, std::move(local), sel, 0);
  if (sel->algorithm->kind == AlgorithmKind::System) {
    const MPI_Comm c = st.comm->get();
    run_system(c, [&] {
      return MPI_Alltoallv(a.sendbuf, a.sendcounts, a.sdispls, a.sendtype, a.recvbuf,
                           a.recvcounts, a.rdispls, a.recvtype, c);
    });
    note_call(st, Collective::Alltoallv, *sel, false);
    return;
  }
  // A plan is reused while this rank's own arguments repeat; algorithms that depend on other
  // ranks' sizes (needs_peer_sizes) are rebuilt every call.
  const bool cacheable = !sel->algorithm->needs_peer_sizes && predefined(a.recvtype) &&
                         (a.in_place() || predefined(a.sendtype));
  st.call_words.clear();
  if (cacheable) {
    for (std::int64_t w : {std::int64_t(-2), word(sel->algorithm), word(a.sendbuf),
                           word(a.sendtype), word(a.recvbuf), word(a.recvtype)})
      st.call_words.push_back(w);
    for (std::int64_t v : sel->values) st.call_words.push_back(v);
    for (int i = 0; i < st.size; ++i) {
      st.call_words.push_back(a.recvcounts[i]);
      st.call_words.push_back(a.rdispls[i]);
      if (!a.in_place()) {
        st.call_words.push_back(a.sendcounts[i]);
        st.call_words.push_back(a.sdispls[i]);
      }
    }
  }
  const bool hit = run_blocking(
      st, cacheable, [&] { return make_alltoallv(a, *sel, st, 0, std::move(sizes)); });
  note_call(st, Collective::Alltoallv, *sel, hit);
}

}  // namespace mpia
