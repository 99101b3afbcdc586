/* <mpi_advance.h> first, then Open MPI's <mpi-ext.h> (which declares its own
 * MPIX_Alltoall_init): must compile, and MPIX_ names must call mpi-advance. */
#include <mpi.h>

#include "mpi_advance.h"
#include <mpi-ext.h>

#include "include_order.h"
#include "include_order_run.h"

int order_mpia_first_run(MPI_Comm comm, char* alg, int len) { return order_run(comm, alg, len, 1); }
