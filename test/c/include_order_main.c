/*
 * Include order of <mpi_advance.h> and Open MPI's <mpi-ext.h> (issue 9, item 9): both orders
 * compile (include_order_mpia_first.c, include_order_ext_first.c) and call mpi-advance's
 * MPIX_Alltoall_init (checked at compile time by its signature and at run time by what
 * MPIX_Request_get_algorithm reports and by the data), while a translation unit that includes
 * only <mpi-ext.h> (coexist_ompi.c) still gets Open MPI's, in the same program.
 */
#include <stdio.h>
#include <string.h>

#include <mpi.h>

#include "coexist.h"
#include "include_order.h"

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  int me, np, errors = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &me);
  MPI_Comm_size(MPI_COMM_WORLD, &np);
  char alg[64];
  errors += order_mpia_first_run(MPI_COMM_WORLD, alg, (int)sizeof alg);
  if (strncmp(alg, "bruck", 5) != 0) {
    fprintf(stderr, "[rank %d] mpi_advance.h first: the request runs '%s', expected bruck\n", me,
            alg);
    ++errors;
  }
  errors += order_ext_first_run(MPI_COMM_WORLD, alg, (int)sizeof alg);
  if (strncmp(alg, "bruck", 5) != 0) {
    fprintf(stderr, "[rank %d] mpi-ext.h first: the request runs '%s', expected bruck\n", me, alg);
    ++errors;
  }
  /* Open MPI's own, from the translation unit that sees only <mpi-ext.h>. */
  int s[64], r[64];
  for (int i = 0; i < 2 * np && i < 64; ++i) s[i] = i, r[i] = -1;
  MPI_Request req = MPI_REQUEST_NULL;
  if (np <= 32) {
    if (coexist_ompi_init(s, r, 2, MPI_COMM_WORLD, &req) != MPI_SUCCESS) {
      fprintf(stderr, "[rank %d] Open MPI's MPIX_Alltoall_init failed\n", me);
      ++errors;
    } else {
      MPI_Start(&req);
      MPI_Wait(&req, MPI_STATUS_IGNORE);
      for (int src = 0; src < np; ++src)
        for (int j = 0; j < 2; ++j)
          if (r[src * 2 + j] != me * 2 + j) ++errors;
      MPI_Request_free(&req);
    }
  }
  int any = 0, local = errors != 0;
  MPI_Allreduce(&local, &any, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
  if (me == 0) printf("%s: %s on %d ranks\n", argv[0], any ? "FAILED" : "passed", np);
  MPI_Finalize();
  return any;
}
