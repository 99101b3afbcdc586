// MPIX_Alltoallv / MPIX_Alltoallv_init: argument checks, agreement and building the operation.
#pragma once

#include "collective/model.hpp"
#include "collective/registry.hpp"
#include "operation/comm_state.hpp"
#include "operation/operation.hpp"

#include <mpi.h>

#include <cstdint>
#include <memory>
#include <vector>

namespace mpia {

struct AlltoallvArgs {
  const void* sendbuf = nullptr;
  const int* sendcounts = nullptr;
  const int* sdispls = nullptr;
  MPI_Datatype sendtype = MPI_DATATYPE_NULL;
  void* recvbuf = nullptr;
  const int* recvcounts = nullptr;
  const int* rdispls = nullptr;
  MPI_Datatype recvtype = MPI_DATATYPE_NULL;
  // MPIX_Neighbor_alltoall (the regular form, carried as the v form): its counts, so that
  // the System record's operation calls MPI_Neighbor_alltoall itself.
  bool regular = false;
  int sendcount = 0, recvcount = 0;
  bool in_place() const { return sendbuf == MPI_IN_PLACE; }
};

// This rank's view: packed bytes to and from every peer, and its share of the statistics.
struct AlltoallvSizes {
  std::vector<std::int64_t> send_bytes, recv_bytes;
  AlltoallvStats local;
};

// Checks one side's n blocks (counts, displacements, type, buffer) and gives their packed
// bytes. The arrays may be NULL when n is 0. Displacements may be negative (a base pointer at
// the end of the buffer is legal MPI). comm: see check_type.
void check_blocks(const void* buf, const int* counts, const int* displs, MPI_Datatype type, int n,
                  const char* side, std::vector<std::int64_t>& bytes, MPI_Comm comm);

std::unique_ptr<Operation> alltoallv_init(CommState& st, const AlltoallvArgs& a, MPI_Info info,
                                          bool request_given);
void alltoallv_blocking(CommState& st, const AlltoallvArgs& a);

// The system's own alltoallv (system.cpp); copies the count and displacement arrays.
std::unique_ptr<Operation> make_system_alltoallv(const AlltoallvArgs& a, int nranks,
                                                 std::shared_ptr<PrivateComm> comm);

}  // namespace mpia
