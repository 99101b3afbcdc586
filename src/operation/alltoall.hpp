// MPIX_Alltoall / MPIX_Alltoall_init: argument checks, agreement and building the operation a
// request runs.
#pragma once

#include "collective/registry.hpp"
#include "operation/args.hpp"
#include "operation/comm_state.hpp"
#include "operation/operation.hpp"

#include <mpi.h>

#include <cstdint>
#include <memory>

namespace mpia {

// Persistent init (collective): the operation, agreed on by every rank, holding its tag.
// request_given: whether the caller gave somewhere to put the request (an argument error to
// agree on, like the others).
std::unique_ptr<Operation> alltoall_init(CommState& st, const AlltoallArgs& a, MPI_Info info,
                                         bool request_given);

// The blocking call.
void alltoall_blocking(CommState& st, const AlltoallArgs& a);

// The system's own alltoall on the private communicator: MPI-4 MPI_Alltoall_init(_c), Open MPI's
// MPIX_Alltoall_init extension, or MPI_Ialltoall(_c) at each start (system.cpp).
// blocking: each start makes the blocking call instead (system.cpp's SystemOperation says where).
std::unique_ptr<Operation> make_system_alltoall(const AlltoallArgs& a,
                                                std::shared_ptr<PrivateComm> comm,
                                                bool blocking = false);
// The blocking call handed to the MPI library (system.cpp), on comm.
int system_alltoall(const AlltoallArgs& a, MPI_Comm comm);

}  // namespace mpia
