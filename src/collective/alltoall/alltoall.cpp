#include "collective/alltoall/alltoall.hpp"

#include "locality/locality.hpp"
#include "util/error.hpp"

#include <vector>

namespace mpia {

namespace {

// A null base whose first byte would fall in page zero cannot be valid memory. (A null base
// with a datatype of absolute addresses -- MPI_BOTTOM -- is legal MPI and passes.)
void check_buffer(const void* buf, int count, MPI_Datatype type, const char* which) {
  int size;
  MPIA_CHECK(MPI_Type_size(type, &size));
  if (buf != nullptr || count == 0 || size == 0) return;
  MPI_Aint tlb, textent;
  MPIA_CHECK(MPI_Type_get_true_extent(type, &tlb, &textent));
  if (tlb >= 0 && tlb < 4096)
    fail(MPI_ERR_BUFFER, std::string("mpi-advance: null ") + which + " with a non-zero count");
}

}  // namespace

std::int64_t check_alltoall(const AlltoallArgs& a, int nranks) {
  if (a.recvbuf == MPI_IN_PLACE) fail(MPI_ERR_BUFFER, "mpi-advance: recvbuf is MPI_IN_PLACE");
  if (a.recvcount < 0) fail(MPI_ERR_COUNT, "mpi-advance: negative recvcount");
  if (a.recvtype == MPI_DATATYPE_NULL) fail(MPI_ERR_TYPE, "mpi-advance: recvtype is MPI_DATATYPE_NULL");
  check_buffer(a.recvbuf, a.recvcount, a.recvtype, "recvbuf");
  int rsize;
  MPIA_CHECK(MPI_Type_size(a.recvtype, &rsize));
  const std::int64_t rbytes = std::int64_t(a.recvcount) * rsize;
  if (a.in_place()) return rbytes;
  if (a.sendcount < 0) fail(MPI_ERR_COUNT, "mpi-advance: negative sendcount");
  if (a.sendtype == MPI_DATATYPE_NULL) fail(MPI_ERR_TYPE, "mpi-advance: sendtype is MPI_DATATYPE_NULL");
  check_buffer(a.sendbuf, a.sendcount, a.sendtype, "sendbuf");
  int ssize;
  MPIA_CHECK(MPI_Type_size(a.sendtype, &ssize));
  const std::int64_t sbytes = std::int64_t(a.sendcount) * ssize;
  if (sbytes != rbytes)
    fail(MPI_ERR_TRUNCATE, "mpi-advance: send block (" + std::to_string(sbytes) +
                               " bytes) and receive block (" + std::to_string(rbytes) +
                               " bytes) differ: type signatures must match");
  (void)nranks;
  return rbytes;
}

std::unique_ptr<Operation> make_alltoall(const AlltoallArgs& a, const Selection& sel,
                                         CommState& state, int tag) {
  if (sel.algorithm->kind == AlgorithmKind::System) return make_system_alltoall(a, state.comm);
  if (sel.algorithm->kind != AlgorithmKind::Scheduled)
    fail(MPI_ERR_INTERN, "mpi-advance: unresolved algorithm selection");
  const int P = state.size;
  int rsize;
  MPIA_CHECK(MPI_Type_size(a.recvtype, &rsize));
  AlltoallShape shape{state.rank, P, std::int64_t(a.recvcount) * rsize};
  if (sel.algorithm->needs_locality) shape.nodes = &comm_locality(state).map;
  const Schedule schedule = sel.algorithm->build_alltoall(shape, sel.values);

  auto op = std::make_unique<ScheduledOperation>(sel.to_string(), state.comm);
  std::vector<int> counts(P, a.recvcount);
  std::vector<MPI_Aint> displs(P);
  for (int i = 0; i < P; ++i) displs[i] = MPI_Aint(i) * a.recvcount;
  const BlockBuffer recv = op->bind(a.recvbuf, counts.data(), displs.data(), P, a.recvtype);
  BlockBuffer send;
  if (a.in_place()) {
    send = op->shadow_of(recv);
  } else {
    counts.assign(P, a.sendcount);
    for (int i = 0; i < P; ++i) displs[i] = MPI_Aint(i) * a.sendcount;
    send = op->bind(a.sendbuf, counts.data(), displs.data(), P, a.sendtype);
  }
  op->lower(schedule, send, recv, tag);
  const Locality* loc = cached_locality(state);
  op->set_traffic(traffic_of(schedule, state.rank, loc ? &loc->map : nullptr));
  return op;
}

}  // namespace mpia
