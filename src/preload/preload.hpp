// libmpi_advance_preload.so: the drop-in library. Loaded with LD_PRELOAD (or linked before
// libmpi), it defines MPI_Alltoall, MPI_Alltoallv, MPI_Alltoallw, MPI_Neighbor_alltoall,
// MPI_Neighbor_alltoallv and MPI_Neighbor_alltoallw (preload.cpp; with an MPI-4 mpi.h also their
// large-count _c forms), their nonblocking forms (MPI_Ialltoall & co.) and persistent inits
// (MPI-4's MPI_Alltoall_init & co. in preload.cpp, Open MPI 4.1's MPIX_Alltoall_init & co. in
// init.cpp), the request calls that complete them (requests.cpp) and their Fortran spellings
// (fortran.c), so an unmodified application runs them on mpi-advance through the MPI profiling
// interface. A nonblocking or persistent call's MPI_Request is a "shell" (requests.cpp).
//
// Every entry point, C or Fortran, ends in one of the dispatchers below (C handles, the C
// MPI_IN_PLACE and MPI_BOTTOM). A dispatcher calls PMPI_ (the MPI library's own collective)
// when the library must not or cannot run the call: MPI not initialized, a call made from
// inside mpi-advance itself (its "system" algorithm calls MPI_Alltoall & co.: no re-entry), an
// intercommunicator, a neighbor call on a communicator without a topology, MPI_COMM_NULL, or
// the environment's selection for the collective is "system". Otherwise it runs MPIX_ (the
// algorithm MPIX_ALLTOALL / MPIX_ALLTOALLV / MPIX_NEIGHBOR_ALLTOALLV choose, default auto; the
// last for all three neighbor calls).
// Errors are the MPI library's or mpi-advance's: the communicator's error handler has been
// invoked, the return value is the error code.
//
// MPIX_REPORT=1: at MPI_Finalize, MPI_COMM_WORLD's rank 0 prints what it ran (per collective,
// communicator size and algorithm: calls, bytes, time, plan-cache hits); MPIX_REPORT=all: every
// rank prints its own.
#ifndef MPIA_PRELOAD_HPP
#define MPIA_PRELOAD_HPP

#include <mpi.h>

#ifdef __cplusplus
extern "C" {
#endif

#define MPIA_PRELOAD_HIDDEN __attribute__((visibility("hidden")))

/* The dispatchers of the forms of src/bindings/calls.txt: mpia_preload_<form> (e.g.
 * mpia_preload_alltoallv_init_c), with the MPI form's arguments. preload.cpp defines them (and
 * MPI_<form>, each calling its own); fortran.c and init.cpp call them too. */
#include "preload_forms.h"

/* After the MPI library's MPI_Init or MPI_Init_thread (rc), or a call that made the
 * intracommunicator *made (MPI_Comm_dup & co.; made may be NULL): on Open MPI, attaches
 * MPI_COMM_WORLD or the new communicator at once (preload.cpp; an error of the attach is left to
 * the communicator's first all-to-all). Return rc.
 */
MPIA_PRELOAD_HIDDEN int mpia_preload_initialized(int rc);
MPIA_PRELOAD_HIDDEN int mpia_preload_created(int rc, const MPI_Comm* made);

#ifdef __cplusplus
}

struct mpia_request;

namespace mpia_preload {

/* Calls made while this thread is inside mpi-advance (or inside the preload's own handling of a
 * request) go to the MPI library. */
inline thread_local int depth = 0;
struct Inside {
  Inside() { ++depth; }
  ~Inside() { --depth; }
  Inside(const Inside&) = delete;
  Inside& operator=(const Inside&) = delete;
};

/* requests.cpp: hands the application a real MPI request (a "shell") for the library request op
 * (a nonblocking call's, running; or a persistent one's, inactive) and keeps the pair until the
 * application completes or frees it. coll: preload.cpp's index of the call (for MPIX_REPORT). */
MPIA_PRELOAD_HIDDEN int make_shell(mpia_request* op, bool persistent, MPI_Comm comm, int coll,
                                   double bytes, bool report_later, MPI_Request* request);
/* preload.cpp: a nonblocking call of collective coll (MPIX_REPORT); false, and nothing
 * recorded, while op does not know its algorithm yet (its communicator's attach is pending):
 * requests.cpp reports it once op has run. */
MPIA_PRELOAD_HIDDEN bool report_call(int coll, int ranks, mpia_request* op, double bytes,
                                     double seconds);
/* preload.cpp: a persistent request of collective coll, bytes per start, was started
 * (MPIX_REPORT). ranks: its communicator's size (asked at the call: the user may have freed it
 * since). */
MPIA_PRELOAD_HIDDEN void report_start(int coll, int ranks, mpia_request* op, double bytes);
/* requests.cpp, under MPIX_REPORT: the MPI library's own persistent request (a persistent call
 * the preload handed to it) is reported at each MPI_Start or MPI_Startall as preload.cpp's call
 * coll, until MPI_Request_free. */
MPIA_PRELOAD_HIDDEN void report_library_request(MPI_Request request, int coll, int ranks,
                                                double bytes);
/* preload.cpp: whether MPIX_REPORT is on. */
MPIA_PRELOAD_HIDDEN bool reporting();

}  // namespace mpia_preload
#endif

#endif
