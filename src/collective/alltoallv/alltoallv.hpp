// MPIX_Alltoallv / MPIX_Alltoallv_init: argument checks and building the operation.
#pragma once

#include "collective/model.hpp"
#include "collective/registry.hpp"
#include "persistent/comm_state.hpp"
#include "persistent/request.hpp"

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
  bool in_place() const { return sendbuf == MPI_IN_PLACE; }
};

// This rank's view: packed bytes to and from every peer, and its share of the statistics.
struct AlltoallvSizes {
  std::vector<std::int64_t> send_bytes, recv_bytes;
  AlltoallvStats local;
};

// Checks one side's n blocks (counts, displacements, type, buffer) and gives their packed
// bytes. The arrays may be NULL when n is 0.
void check_blocks(const void* buf, const int* counts, const int* displs, MPI_Datatype type,
                  int n, const char* side, std::vector<std::int64_t>& bytes);

// Local argument checks (throw mpia::Error).
AlltoallvSizes check_alltoallv(const AlltoallvArgs& a, int nranks);

// The statistics every rank agrees on (one MPI_MAX allreduce on the private communicator).
AlltoallvStats agree_stats(const AlltoallvSizes& sizes, MPI_Comm comm);

// The P x P matrix of packed sizes for forwarding algorithms (one allgather).
std::vector<std::int64_t> gather_matrix(const AlltoallvSizes& sizes, MPI_Comm comm, int nranks);

std::unique_ptr<Operation> make_alltoallv(const AlltoallvArgs& a, const Selection& sel,
                                          CommState& state, int tag, AlltoallvSizes sizes);

// The system's own alltoallv (api/system_backend.cpp); copies the count and displacement arrays.
std::unique_ptr<Operation> make_system_alltoallv(const AlltoallvArgs& a, int nranks,
                                                 std::shared_ptr<PrivateComm> comm);

}  // namespace mpia
