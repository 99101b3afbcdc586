/* Interface between the two translation units of the coexistence test. Only <mpi.h>. */
#ifndef MPIA_TEST_COEXIST_H
#define MPIA_TEST_COEXIST_H
#include <mpi.h>

/* Value rank src sends to rank dst, element j, in the run tagged `salt`. */
static inline int coexist_value(int src, int dst, int j, int salt) {
  return ((salt * 101 + src) * 113 + dst) * 4 + j;
}

/* coexist_ompi.c: Open MPI's own MPIX_Alltoall_init (MPI_Request). */
int coexist_ompi_init(const int* sbuf, int* rbuf, int n, MPI_Comm comm, MPI_Request* req);

#endif
