// MPIX_Request: the C handle of a persistent or nonblocking request, and how one is made.
#pragma once

#include "operation/comm_state.hpp"
#include "operation/operation.hpp"

#include <mpi.h>

#include <atomic>
#include <memory>

// The C handle behind MPIX_Request.
struct mpia_request {
  std::unique_ptr<mpia::Operation> op;
  MPI_Comm comm = MPI_COMM_NULL;  // the user's communicator: errors are raised on it
  std::shared_ptr<mpia::PrivateComm> library_comm;  // tells whether comm was freed since
  // Held by the MPIX_Start or MPIX_Startall that is starting the request: taken with an atomic
  // exchange, so two threads that start arrays sharing a request cannot both own it, and the
  // same request twice in one array is seen without writing any other shared state.
  std::atomic<bool> starting{false};
  // A nonblocking call's (MPIX_Ialltoall...): freed by the Wait or Test that completes it.
  bool one_shot = false;
};

namespace mpia {

// The request handle for a new operation; a threaded one starts the progress thread.
mpia_request* make_request(MPI_Comm user, CommState& st, std::unique_ptr<Operation> op);

}  // namespace mpia
