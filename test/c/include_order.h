/* Interface of the include-order test (only <mpi.h>): each translation unit includes
 * <mpi_advance.h> and Open MPI's <mpi-ext.h> in one of the two orders and runs one persistent
 * all-to-all through the MPIX_ names, which must be mpi-advance's. */
#ifndef MPIA_TEST_INCLUDE_ORDER_H
#define MPIA_TEST_INCLUDE_ORDER_H
#include <mpi.h>

/* Runs MPIX_Alltoall_init (info "bruck") + Start + Wait on comm, checks the data, and copies
 * what MPIX_Request_get_algorithm reports into alg (len bytes). Returns the number of errors. */
int order_mpia_first_run(MPI_Comm comm, char* alg, int len);
int order_ext_first_run(MPI_Comm comm, char* alg, int len);

/* Value rank src sends to rank dst, element j, in the run tagged salt. */
static inline int order_value(int src, int dst, int j, int salt) {
  return ((salt * 97 + src) * 89 + dst) * 4 + j;
}
#endif
