#include "operation/alltoallv.hpp"

#include "locality/locality.hpp"
#include "operation/common.hpp"
#include "operation/settings.hpp"
#include "util/error.hpp"

#include <algorithm>
#include <string>

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

// The P x P matrix of packed sizes for forwarding algorithms (one allgather).
std::vector<std::int64_t> gather_matrix(const AlltoallvSizes& sizes, MPI_Comm comm, int P) {
  std::vector<std::int64_t> m(std::size_t(P) * P);
  MPI_Request r;
  MPIA_CHECK(MPI_Iallgather(sizes.send_bytes.data(), P, MPI_INT64_T, m.data(), P, MPI_INT64_T,
                            comm, &r));
  complete(r, "MPI_Iallgather");
  return m;
}

std::unique_ptr<Operation> make_alltoallv(const AlltoallvArgs& a, const Selection& sel,
                                          CommState& state, int tag, AlltoallvSizes sizes) {
  const int P = state.size;
  if (sel.algorithm->kind == AlgorithmKind::System)
    return make_system_alltoallv(a, P, state.comm);
  if (sel.algorithm->kind != AlgorithmKind::Scheduled)
    fail(MPI_ERR_INTERN, "mpi-advance: unresolved algorithm selection");
  AlltoallvShape shape;
  shape.rank = state.rank;
  shape.size = P;
  if (sel.algorithm->needs_locality) shape.nodes = &comm_locality(state).map;
  if (sel.algorithm->needs_matrix) shape.matrix = gather_matrix(sizes, state.comm->get(), P);
  shape.send_bytes = std::move(sizes.send_bytes);
  shape.recv_bytes = std::move(sizes.recv_bytes);
  const Schedule schedule = sel.algorithm->build_alltoallv(shape, sel.values);

  auto op = std::make_unique<ScheduledOperation>(sel.to_string(), state.comm);
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
  const Locality* loc = cached_locality(state);
  op->set_traffic(traffic_of(schedule, state.rank, loc ? &loc->map : nullptr));
  return op;
}

}  // namespace

std::unique_ptr<Operation> alltoallv_init(CommState& st, const AlltoallvArgs& a, MPI_Info info,
                                          bool request_given) {
  st.check_settings();
  comm_locality(st);  // see alltoall_init
  const MPI_Comm lib = st.comm->get();
  Proposal p;
  bool threaded = false;
  AlltoallvSizes sizes;
  Selection sel;
  checked(p, [&] {
    if (!request_given) fail(MPI_ERR_ARG, "mpi-advance: request is NULL");
    threaded = wants_progress_thread(info);
    sizes = check_alltoallv(a, st.size, lib);
    sel = select_algorithm(Collective::Alltoallv, info,
                           st.default_algorithm(Collective::Alltoallv), extent_of(st));
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
  if (!p.error) p.choice = sel.to_string();
  p.maxima[0] = sizes.local.max_block;
  p.maxima[1] = sizes.local.rank_bytes;
  p.maxima[2] = sizes.local.rank_messages;
  p.tag = true;
  const Agreement ag = agree(st, p);
  if (sel.algorithm->kind == AlgorithmKind::Auto)
    sel = choose_alltoallv(settings().model, st.size,
                           AlltoallvStats{ag.maxima[0], ag.maxima[1], ag.maxima[2]});
  TagLease lease(st.comm, ag.tag);
  std::unique_ptr<Operation> op = make_alltoallv(a, sel, st, ag.tag, std::move(sizes));
  op->tag = std::move(lease);
  op->threaded = threaded;
  return op;
}

void alltoallv_blocking(CommState& st, const AlltoallvArgs& a) {
  st.check_settings();
  const bool debug = settings().debug;
  std::unique_ptr<Error> local;
  AlltoallvSizes sizes;
  try {
    sizes = check_alltoallv(a, st.size, st.comm->get());
  } catch (const Error& e) {
    if (!debug) throw;
    local = std::make_unique<Error>(e);
  }
  // The blocking auto takes the windowed direct exchange without communicating: every direct
  // variant (pairwise, linear, multipair with any window) moves one message per pair on the
  // same tag, so they interoperate across ranks and need no agreement. Only bruck does (it
  // forwards blocks), and persistent init, which agrees on statistics, may choose it.
  const Selection* sel = nullptr;
  if (!local)
    sel = &blocking_selection(st, Collective::Alltoallv, {-1}, [&] {
      return parse_selection(Collective::Alltoallv, "multipair_waitany", st.size, true);
    });
  if (debug) debug_agree(st, std::move(local), sel, 0);
  if (sel->algorithm->kind == AlgorithmKind::System) {
    const MPI_Comm c = st.comm->get();
    run_system(
        [&](MPI_Request* r) {
          return MPI_Ialltoallv(a.sendbuf, a.sendcounts, a.sdispls, a.sendtype, a.recvbuf,
                                a.recvcounts, a.rdispls, a.recvtype, c, r);
        },
        [&] {
          return MPI_Alltoallv(a.sendbuf, a.sendcounts, a.sdispls, a.sendtype, a.recvbuf,
                               a.recvcounts, a.rdispls, a.recvtype, c);
        });
    return;
  }
  // A plan is reused while this rank's own arguments repeat; algorithms that depend on other
  // ranks' sizes (needs_matrix) are rebuilt every call.
  const bool cacheable = !sel->algorithm->needs_matrix && predefined(a.recvtype) &&
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
  run_blocking(st, cacheable,
               [&] { return make_alltoallv(a, *sel, st, 0, std::move(sizes)); });
}

}  // namespace mpia
