// The System records: the MPI library's own collectives (system.cpp), the "system" algorithm of
// every collective, and the way the library hands a blocking call to the MPI library.
#pragma once

#include "collective/registry.hpp"
#include "operation/args.hpp"
#include "operation/operation.hpp"
#include "operation/private_comm.hpp"
#include "util/error.hpp"

#include <mpi.h>

#include <memory>

namespace mpia {

// A call as the MPI library's own collective takes it: what the "system" record's builder
// (library_operation, system.cpp) makes an operation of. Alltoall: regular; alltoallv and the
// neighbor calls: blocks, nsend and nrecv of them (P, or the out- and in-degree).
// blocking: each start makes the library's blocking call after a nonblocking barrier (the plans
// of blocking calls, which every rank runs in the same call); else its persistent form, or the
// nonblocking call at each start -- made at construction, so collective.
struct LibraryCall {
  Collective collective = Collective::Alltoall;
  const AlltoallArgs* regular = nullptr;
  const AlltoallvArgs* blocks = nullptr;
  int nsend = 0, nrecv = 0;
  std::shared_ptr<PrivateComm> comm;
  bool blocking = false;
  // A nonblocking call's: the library's nonblocking call at its one start, never its persistent
  // form (whose init is collective and may wait for the other ranks).
  bool once = false;
};
// The "system" record's builder (system.cpp).
std::unique_ptr<Operation> library_operation(const LibraryCall& call);

// A blocking call handed to the MPI library: a nonblocking barrier, completed while driving
// what runs, then the library's blocking collective. Once every rank has entered the barrier,
// the collective cannot wait on anything this rank still owes a peer. Both steps on every rank,
// always: a blocking collective does not match a nonblocking one, so nothing here may depend on
// what runs locally. (The blocking form, not MPI_Ialltoall & co.: its errors and results are the
// MPI library's own -- Open MPI 4.1's nonblocking neighbor collectives swap the directions of
// periodic dimensions of size 1 and 2, MPICH 4.0.2's MPI_Ialltoall(v) lose a truncation, and
// Open MPI raises libnbc's errors on MPI_COMM_WORLD.)
template <class Blocking>
void run_system(MPI_Comm comm, Blocking&& blocking) {
  MPI_Request r;
  MPIA_CHECK(MPI_Ibarrier(comm, &r));
  complete(r, "MPI_Ibarrier");
  MPIA_CHECK(blocking());
}

}  // namespace mpia
