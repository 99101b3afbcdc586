/* libmpi_advance's private entry points: for its drop-in library (src/preload/) and the tests,
 * not for applications. Not in mpi_advance.h and not part of the ABI: the symbol map
 * (src/mpi_advance.map) exports them in a version node of their own, MPIA_PRIVATE, apart from
 * the C API's MPIA_1. */
#ifndef MPIA_PRIVATE_H
#define MPIA_PRIVATE_H

#include "mpi_advance.h"

#ifdef __cplusplus
extern "C" {
#endif

/* One progress pass over every running request of the process (what MPIX_Test does before it
 * looks at its request), and whether a request still runs (0: its MPIX_Test would complete it;
 * a null request does not run). Both local, neither raises an error: the drop-in drives its
 * requests with them and completes only the finished ones with MPIX_Test, instead of one
 * MPIX_Test (and pass) per running request. */
int mpia_private_progress(void);
int mpia_private_request_running(MPIX_Request request);

/* What the last blocking call of a collective ("alltoall", "alltoallv", "neighbor_alltoallv")
 * on comm ran (recorded only under MPIX_REPORT; "" before), and whether it reused a cached
 * plan. The string lives until the next call on comm. */
int mpia_private_comm_last_call(MPI_Comm comm, const char* collective, const char** algorithm,
                                int* cache_hit);

/* The process's plan caches, every cache of every communicator (operation/cache_budget.hpp): the
 * high-water mark of their bytes, the bytes and entries they hold now, and the largest plan any
 * of them held (MPIX_REPORT prints them). Any argument may be NULL. */
int mpia_private_plan_cache_bytes(MPI_Count* peak_bytes, MPI_Count* bytes_now,
                                  MPI_Count* entries_now, MPI_Count* largest_plan);

/* comm's agreed plan cache (blocking v- and neighbor calls): its entries and the sum of their
 * agreed sizes (both the same on every rank), and the bytes this rank's plan caches of comm hold
 * (the agreed cache, the last blocking plan, the idle nonblocking plans). Any argument but comm
 * may be NULL. */
int mpia_private_comm_plan_cache(MPI_Comm comm, MPI_Count* entries, MPI_Count* agreed_bytes,
                                 MPI_Count* bytes);

#ifdef __cplusplus
}
#endif

#endif
