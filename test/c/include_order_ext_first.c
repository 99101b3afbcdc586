/* Open MPI's <mpi-ext.h> first, then <mpi_advance.h>: must compile, and MPIX_ names must call
 * mpi-advance. */
#include <mpi.h>
#include <mpi-ext.h>

#include "mpi_advance.h"

#include "include_order.h"
#include "include_order_run.h"

int order_ext_first_run(MPI_Comm comm, char* alg, int len) { return order_run(comm, alg, len, 2); }
