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
// A nonblocking call (MPIX_Ialltoall): its plan, started (pipeline.hpp, nonblocking.hpp).
std::unique_ptr<Operation> alltoall_nonblocking(CommState& st, const AlltoallArgs& a);

}  // namespace mpia
