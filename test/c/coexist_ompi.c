/*
 * This translation unit sees only Open MPI's headers: MPIX_Alltoall_init here is Open MPI's
 * persistent collective extension (returning an MPI_Request), not mpi-advance's.
 */
#include <mpi.h>
#include <mpi-ext.h>

#include "coexist.h"

#ifndef OMPI_HAVE_MPI_EXT_PCOLLREQ
#error "this test needs Open MPI's pcollreq extension"
#endif
#ifdef MPI_ADVANCE_H
#error "mpi_advance.h must not be visible here"
#endif

int coexist_ompi_init(const int* sbuf, int* rbuf, int n, MPI_Comm comm, MPI_Request* req) {
  return MPIX_Alltoall_init(sbuf, n, MPI_INT, rbuf, n, MPI_INT, comm, MPI_INFO_NULL, req);
}
