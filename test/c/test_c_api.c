/*
 * Pure C99 use of the mpi-advance C ABI: one persistent all-to-all with each of two
 * algorithms (three cycles each, new data every cycle), the blocking call, and the registry.
 * Exit status 0 on every rank when every rank passed.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mpi_advance.h"

#define N 3 /* ints per block */

static int value(int src, int dst, int j, int iter) { return ((iter * 97 + src) * 131 + dst) * 7 + j; }

static int run(MPI_Comm comm, const char *algorithm, int iter0) {
  int me, np, errors = 0;
  MPI_Comm_rank(comm, &me);
  MPI_Comm_size(comm, &np);
  int *sbuf = malloc(sizeof(int) * (size_t)(N * np));
  int *rbuf = malloc(sizeof(int) * (size_t)(N * np));
  MPI_Info info;
  MPI_Info_create(&info);
  MPI_Info_set(info, MPIX_INFO_KEY_ALGORITHM, algorithm);
  MPIX_Request req = MPIX_REQUEST_NULL;
  int rc = MPIX_Alltoall_init(sbuf, N, MPI_INT, rbuf, N, MPI_INT, comm, info, &req);
  MPI_Info_free(&info);
  if (rc != MPI_SUCCESS || req == MPIX_REQUEST_NULL) {
    fprintf(stderr, "[rank %d] %s: MPIX_Alltoall_init failed (%d)\n", me, algorithm, rc);
    free(sbuf);
    free(rbuf);
    return 1;
  }
  char name[MPIX_MAX_ALGORITHM_STRING];
  int len = 0;
  rc = MPIX_Request_get_algorithm(req, name, &len);
  if (rc != MPI_SUCCESS || strncmp(name, algorithm, strlen(algorithm)) != 0 ||
      len != (int)strlen(name)) {
    fprintf(stderr, "[rank %d] %s: request reports '%s'\n", me, algorithm, rc == MPI_SUCCESS ? name : "?");
    ++errors;
  }
  for (int iter = iter0; iter < iter0 + 3; ++iter) {
    for (int d = 0; d < np; ++d)
      for (int j = 0; j < N; ++j) sbuf[d * N + j] = value(me, d, j, iter);
    for (int i = 0; i < N * np; ++i) rbuf[i] = -1;
    if (MPIX_Start(&req) != MPI_SUCCESS || MPIX_Wait(&req, MPI_STATUS_IGNORE) != MPI_SUCCESS) {
      fprintf(stderr, "[rank %d] %s: start/wait failed\n", me, algorithm);
      ++errors;
    }
    for (int s = 0; s < np; ++s) {
      for (int j = 0; j < N; ++j) {
        if (rbuf[s * N + j] != value(s, me, j, iter)) {
          if (errors < 5)
            fprintf(stderr, "[rank %d] %s cycle %d: from %d element %d: got %d expected %d\n", me,
                    algorithm, iter - iter0, s, j, rbuf[s * N + j], value(s, me, j, iter));
          ++errors;
        }
      }
    }
  }
  if (MPIX_Request_free(&req) != MPI_SUCCESS || req != MPIX_REQUEST_NULL) {
    fprintf(stderr, "[rank %d] %s: MPIX_Request_free failed\n", me, algorithm);
    ++errors;
  }
  free(sbuf);
  free(rbuf);
  return errors;
}

int main(int argc, char **argv) {
  MPI_Init(&argc, &argv);
  int me, np, errors = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &me);
  MPI_Comm_size(MPI_COMM_WORLD, &np);

  errors += run(MPI_COMM_WORLD, "pairwise", 0);
  errors += run(MPI_COMM_WORLD, "tra", 10);
  errors += run(MPI_COMM_WORLD, "bruck", 20);

  /* Blocking, selected through the environment. */
  {
    int *s = malloc(sizeof(int) * (size_t)np), *r = malloc(sizeof(int) * (size_t)np);
    for (int d = 0; d < np; ++d) s[d] = value(me, d, 0, 99);
    setenv("MPIX_ALLTOALL", "modified_bruck", 1);
    if (MPIX_Alltoall(s, 1, MPI_INT, r, 1, MPI_INT, MPI_COMM_WORLD) != MPI_SUCCESS) ++errors;
    unsetenv("MPIX_ALLTOALL");
    for (int d = 0; d < np; ++d) {
      if (r[d] != value(d, me, 0, 99)) {
        fprintf(stderr, "[rank %d] blocking: from %d got %d\n", me, d, r[d]);
        ++errors;
      }
    }
    free(s);
    free(r);
  }

  /* The registry from C. */
  {
    int n = 0;
    const char *name, *desc;
    MPI_Comm_set_errhandler(MPI_COMM_SELF, MPI_ERRORS_RETURN);
    while (n < 1000 && MPIX_Algorithm_get("alltoall", n, &name, &desc) == MPI_SUCCESS) ++n;
    if (n < 2) {
      fprintf(stderr, "[rank %d] registry lists %d alltoall algorithms\n", me, n);
      ++errors;
    }
  }

  int any = 0, local = errors != 0;
  MPI_Allreduce(&local, &any, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
  if (me == 0) printf("%s: %s on %d ranks\n", argv[0], any ? "FAILED" : "passed", np);
  MPI_Finalize();
  return any;
}
