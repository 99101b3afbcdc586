#include "collective/alltoallv/alltoallv.hpp"

#include "locality/locality.hpp"
#include "util/error.hpp"

#include <algorithm>
#include <string>

namespace mpia {

void check_blocks(const void* buf, const int* counts, const int* displs, MPI_Datatype type,
                  int P, const char* side, std::vector<std::int64_t>& bytes) {
  if (P > 0 && (!counts || !displs))
    fail(MPI_ERR_ARG, std::string("mpi-advance: null ") + side + " count or displacement array");
  if (type == MPI_DATATYPE_NULL)
    fail(MPI_ERR_TYPE, std::string("mpi-advance: ") + side + "type is MPI_DATATYPE_NULL");
  int size;
  MPI_Aint tlb, textent;
  MPIA_CHECK(MPI_Type_size(type, &size));
  MPIA_CHECK(MPI_Type_get_true_extent(type, &tlb, &textent));
  bytes.resize(P);
  for (int i = 0; i < P; ++i) {
    if (counts[i] < 0)
      fail(MPI_ERR_COUNT, std::string("mpi-advance: negative ") + side + " count for rank " +
                              std::to_string(i));
    if (displs[i] < 0)
      fail(MPI_ERR_ARG, std::string("mpi-advance: negative ") + side +
                            " displacement for rank " + std::to_string(i));
    bytes[i] = std::int64_t(counts[i]) * size;
    // A null base whose data would start in page zero cannot be valid (MPI_BOTTOM with a type
    // of absolute addresses can).
    if (!buf && bytes[i] > 0 && tlb >= 0 && tlb < 4096)
      fail(MPI_ERR_BUFFER, std::string("mpi-advance: null ") + side + "buf with a non-zero count");
  }
}

AlltoallvSizes check_alltoallv(const AlltoallvArgs& a, int P) {
  AlltoallvSizes s;
  if (a.recvbuf == MPI_IN_PLACE) fail(MPI_ERR_BUFFER, "mpi-advance: recvbuf is MPI_IN_PLACE");
  check_blocks(a.recvbuf, a.recvcounts, a.rdispls, a.recvtype, P, "recv", s.recv_bytes);
  if (a.in_place())
    s.send_bytes = s.recv_bytes;  // MPI_IN_PLACE: block to j has the layout of block from j
  else
    check_blocks(a.sendbuf, a.sendcounts, a.sdispls, a.sendtype, P, "send", s.send_bytes);
  for (std::int64_t b : s.send_bytes) {
    s.local.max_block = std::max(s.local.max_block, b);
    s.local.rank_bytes += b;
    s.local.rank_messages += b > 0;
  }
  return s;
}

AlltoallvStats agree_stats(const AlltoallvSizes& sizes, MPI_Comm comm) {
  std::int64_t v[3] = {sizes.local.max_block, sizes.local.rank_bytes, sizes.local.rank_messages};
  MPIA_CHECK(MPI_Allreduce(MPI_IN_PLACE, v, 3, MPI_INT64_T, MPI_MAX, comm));
  return AlltoallvStats{v[0], v[1], v[2]};
}

std::vector<std::int64_t> gather_matrix(const AlltoallvSizes& sizes, MPI_Comm comm, int P) {
  std::vector<std::int64_t> m(std::size_t(P) * P);
  MPIA_CHECK(MPI_Allgather(sizes.send_bytes.data(), P, MPI_INT64_T, m.data(), P, MPI_INT64_T, comm));
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

}  // namespace mpia
