/*
 * One program using both Open MPI's MPIX_Alltoall_init (from coexist_ompi.c, which includes
 * <mpi-ext.h>) and mpi-advance's (this file, which includes mpi_advance.h), on the same
 * communicator, at the same time. Both must link, resolve to the right implementation and
 * give correct results.
 */
#include <stdio.h>
#include <stdlib.h>

#include "mpi_advance.h"
#include "coexist.h"

#define N 2

static int check(const int* rbuf, int me, int np, int salt, const char* who) {
  int errors = 0;
  for (int s = 0; s < np; ++s)
    for (int j = 0; j < N; ++j)
      if (rbuf[s * N + j] != coexist_value(s, me, j, salt)) {
        if (errors < 5)
          fprintf(stderr, "[rank %d] %s: from %d element %d: got %d expected %d\n", me, who, s, j,
                  rbuf[s * N + j], coexist_value(s, me, j, salt));
        ++errors;
      }
  return errors;
}

static void fill(int* sbuf, int* rbuf, int me, int np, int salt) {
  for (int d = 0; d < np; ++d)
    for (int j = 0; j < N; ++j) sbuf[d * N + j] = coexist_value(me, d, j, salt);
  for (int i = 0; i < N * np; ++i) rbuf[i] = -1;
}

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  int me, np, errors = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &me);
  MPI_Comm_size(MPI_COMM_WORLD, &np);
  size_t bytes = sizeof(int) * (size_t)(N * np);
  int *s1 = malloc(bytes), *r1 = malloc(bytes), *s2 = malloc(bytes), *r2 = malloc(bytes);

  MPI_Request ompi_req = MPI_REQUEST_NULL;
  if (coexist_ompi_init(s1, r1, N, MPI_COMM_WORLD, &ompi_req) != MPI_SUCCESS) {
    fprintf(stderr, "[rank %d] Open MPI's MPIX_Alltoall_init failed\n", me);
    ++errors;
  }
  MPI_Info info;
  MPI_Info_create(&info);
  MPI_Info_set(info, MPIX_INFO_KEY_ALGORITHM, "bruck");
  MPIX_Request mpia_req = MPIX_REQUEST_NULL;
  if (MPIX_Alltoall_init(s2, N, MPI_INT, r2, N, MPI_INT, MPI_COMM_WORLD, info, &mpia_req) !=
      MPI_SUCCESS) {
    fprintf(stderr, "[rank %d] mpi-advance's MPIX_Alltoall_init failed\n", me);
    ++errors;
  }
  MPI_Info_free(&info);

  for (int cycle = 0; cycle < 3 && errors == 0; ++cycle) {
    fill(s1, r1, me, np, 10 + cycle);
    fill(s2, r2, me, np, 20 + cycle);
    /* Both in flight together: Open MPI's first, ours second; completed in reverse. */
    MPI_Start(&ompi_req);
    MPIX_Start(&mpia_req);
    if (MPIX_Wait(&mpia_req, MPI_STATUS_IGNORE) != MPI_SUCCESS) ++errors;
    if (MPI_Wait(&ompi_req, MPI_STATUS_IGNORE) != MPI_SUCCESS) ++errors;
    errors += check(r1, me, np, 10 + cycle, "Open MPI's MPIX_Alltoall_init");
    errors += check(r2, me, np, 20 + cycle, "mpi-advance's MPIX_Alltoall_init");
  }
  if (ompi_req != MPI_REQUEST_NULL) MPI_Request_free(&ompi_req);
  if (mpia_req != MPIX_REQUEST_NULL) MPIX_Request_free(&mpia_req);
  free(s1);
  free(r1);
  free(s2);
  free(r2);

  int any = 0, local = errors != 0;
  MPI_Allreduce(&local, &any, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
  if (me == 0) printf("%s: %s on %d ranks\n", argv[0], any ? "FAILED" : "passed", np);
  MPI_Finalize();
  return any;
}
