// MPIX_Alltoall / MPIX_Alltoall_init: argument checks and building the operation a request runs.
#pragma once

#include "collective/registry.hpp"
#include "persistent/comm_state.hpp"
#include "persistent/request.hpp"

#include <mpi.h>

#include <cstdint>
#include <memory>

namespace mpia {

struct AlltoallArgs {
  const void* sendbuf = nullptr;
  int sendcount = 0;
  MPI_Datatype sendtype = MPI_DATATYPE_NULL;
  void* recvbuf = nullptr;
  int recvcount = 0;
  MPI_Datatype recvtype = MPI_DATATYPE_NULL;
  bool in_place() const { return sendbuf == MPI_IN_PLACE; }
};

// Local argument checks (throw mpia::Error); returns the packed bytes of one block.
std::int64_t check_alltoall(const AlltoallArgs& a, int nranks);

// Builds the operation for a resolved (not auto) selection.
std::unique_ptr<Operation> make_alltoall(const AlltoallArgs& a, const Selection& sel,
                                         CommState& state, int tag);

// The system's own alltoall on the private communicator: MPI-4 MPI_Alltoall_init, Open MPI's
// MPIX_Alltoall_init extension, or MPI_Ialltoall at each start (api/system_backend.cpp).
std::unique_ptr<Operation> make_system_alltoall(const AlltoallArgs& a,
                                                std::shared_ptr<PrivateComm> comm);

}  // namespace mpia
