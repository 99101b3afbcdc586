/* The body shared by include_order_mpia_first.c and include_order_ext_first.c: included after
 * both headers, it uses the MPIX_ names exactly as a user would. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#ifndef OMPI_HAVE_MPI_EXT_PCOLLREQ
#error "<mpi-ext.h> was not read (Open MPI's pcollreq extension is missing)"
#endif
#ifndef MPI_ADVANCE_H
#error "mpi_advance.h was not read"
#endif

/* Compile time: MPIX_Alltoall_init is mpi-advance's (an MPIX_Request out argument). Built with
 * -Werror=incompatible-pointer-types, Open MPI's (MPI_Request *) would not compile here. */
typedef int (*order_init_fn)(const void*, int, MPI_Datatype, void*, int, MPI_Datatype, MPI_Comm,
                             MPI_Info, MPIX_Request*);
static const order_init_fn order_init_is_ours = MPIX_Alltoall_init;

static int order_run(MPI_Comm comm, char* alg, int len, int salt) {
  enum { N = 3 };
  int me, np, errors = 0;
  MPI_Comm_rank(comm, &me);
  MPI_Comm_size(comm, &np);
  int *s = malloc(sizeof(int) * (size_t)(N * np)), *r = malloc(sizeof(int) * (size_t)(N * np));
  MPI_Info info;
  MPI_Info_create(&info);
  MPI_Info_set(info, MPIX_INFO_KEY_ALGORITHM, "bruck");
  MPIX_Request req = MPIX_REQUEST_NULL;
  if (order_init_is_ours(s, N, MPI_INT, r, N, MPI_INT, comm, info, &req) != MPI_SUCCESS) {
    fprintf(stderr, "[rank %d] MPIX_Alltoall_init failed\n", me);
    ++errors;
  }
  MPI_Info_free(&info);
  for (int d = 0; d < np; ++d)
    for (int j = 0; j < N; ++j) s[d * N + j] = order_value(me, d, j, salt);
  for (int i = 0; i < N * np; ++i) r[i] = -1;
  if (errors == 0) {
    if (MPIX_Start(&req) != MPI_SUCCESS || MPIX_Wait(&req, MPI_STATUS_IGNORE) != MPI_SUCCESS) {
      fprintf(stderr, "[rank %d] MPIX_Start/MPIX_Wait failed\n", me);
      ++errors;
    }
    for (int src = 0; src < np; ++src)
      for (int j = 0; j < N; ++j)
        if (r[src * N + j] != order_value(src, me, j, salt)) {
          if (errors < 4)
            fprintf(stderr, "[rank %d] from %d element %d: got %d expected %d\n", me, src, j,
                    r[src * N + j], order_value(src, me, j, salt));
          ++errors;
        }
    int got = 0;
    alg[0] = '\0';
    char name[MPIX_MAX_ALGORITHM_STRING];
    if (MPIX_Request_get_algorithm(req, name, &got) != MPI_SUCCESS) {
      fprintf(stderr, "[rank %d] MPIX_Request_get_algorithm failed\n", me);
      ++errors;
    } else {
      strncpy(alg, name, (size_t)len - 1);
      alg[len - 1] = '\0';
    }
    MPIX_Request_free(&req);
  }
  free(s);
  free(r);
  return errors;
}
