/*
 * Pure C99 use of the mpi-advance C ABI: one persistent all-to-all with each of three
 * algorithms (three cycles each, new data every cycle), the blocking call with the algorithm
 * chosen for the communicator (MPIX_Comm_set_algorithm), the environment's choice
 * (MPIX_ALLTOALL, which the c.api_env registration sets before the program starts: the library
 * reads it once), the registry, and MPIX_Neighbor_alltoallw(_init) with a datatype with a hole.
 * Exit status 0 on every rank when every rank passed.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mpi_advance.h"

#define N 3 /* ints per block */

static int value(int src, int dst, int j, int iter) {
  return ((iter * 97 + src) * 131 + dst) * 7 + j;
}

static int run(MPI_Comm comm, const char* algorithm, int iter0) {
  int me, np, errors = 0;
  MPI_Comm_rank(comm, &me);
  MPI_Comm_size(comm, &np);
  int* sbuf = malloc(sizeof(int) * (size_t)(N * np));
  int* rbuf = malloc(sizeof(int) * (size_t)(N * np));
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
    fprintf(stderr, "[rank %d] %s: request reports '%s'\n", me, algorithm,
            rc == MPI_SUCCESS ? name : "?");
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

/* One blocking MPIX_Alltoall of one int per rank, checked. */
static int blocking(MPI_Comm comm, int iter, const char* what) {
  int me, np, errors = 0;
  MPI_Comm_rank(comm, &me);
  MPI_Comm_size(comm, &np);
  int *s = malloc(sizeof(int) * (size_t)np), *r = malloc(sizeof(int) * (size_t)np);
  for (int d = 0; d < np; ++d) {
    s[d] = value(me, d, 0, iter);
    r[d] = -1;
  }
  int rc = MPIX_Alltoall(s, 1, MPI_INT, r, 1, MPI_INT, comm);
  if (rc != MPI_SUCCESS) {
    fprintf(stderr, "[rank %d] %s: MPIX_Alltoall failed (%d)\n", me, what, rc);
    ++errors;
  }
  for (int d = 0; d < np; ++d) {
    if (r[d] != value(d, me, 0, iter)) {
      fprintf(stderr, "[rank %d] %s: from %d got %d\n", me, what, d, r[d]);
      ++errors;
    }
  }
  free(s);
  free(r);
  return errors;
}

/* What an init without info reports (the communicator's choice, else the environment's, else
 * what auto chose) into name; non-zero on failure. */
static int reported_without_info(MPI_Comm comm, char name[MPIX_MAX_ALGORITHM_STRING]) {
  int np, len = 0;
  MPI_Comm_size(comm, &np);
  name[0] = '\0';
  int *s = malloc(sizeof(int) * (size_t)np), *r = malloc(sizeof(int) * (size_t)np);
  MPIX_Request req = MPIX_REQUEST_NULL;
  int rc = MPIX_Alltoall_init(s, 1, MPI_INT, r, 1, MPI_INT, comm, MPI_INFO_NULL, &req);
  if (rc == MPI_SUCCESS) rc = MPIX_Request_get_algorithm(req, name, &len);
  if (req != MPIX_REQUEST_NULL) MPIX_Request_free(&req);
  free(s);
  free(r);
  return rc != MPI_SUCCESS;
}

/* MPIX_Neighbor_alltoallw(_init) on a periodic ring: to the left two ints with a hole between
 * them (a vector type), to the right one int; byte displacements; checked against the values
 * the neighbors sent and, from 3 ranks (where a ring's two neighbors differ), against
 * MPI_Neighbor_alltoallw. */
static int neighbor_w(void) {
  int np, me, left, right, errors = 0;
  MPI_Comm_size(MPI_COMM_WORLD, &np);
  int dims[1] = {np}, periods[1] = {1};
  MPI_Comm ring;
  MPI_Cart_create(MPI_COMM_WORLD, 1, dims, periods, 0, &ring);
  MPI_Comm_rank(ring, &me);
  MPI_Cart_shift(ring, 0, 1, &left, &right);
  MPI_Datatype vec;
  MPI_Type_vector(2, 1, 2, MPI_INT, &vec);
  MPI_Type_commit(&vec);
  const int sc[2] = {1, 1}, rc[2] = {1, 2};
  const MPI_Aint sd[2] = {0, 4 * (MPI_Aint)sizeof(int)};
  const MPI_Aint rd[2] = {5 * (MPI_Aint)sizeof(int), 1 * (MPI_Aint)sizeof(int)};
  const MPI_Datatype st[2] = {vec, MPI_INT}, rt[2] = {MPI_INT, MPI_INT};
  int s[6], r[6];
  MPIX_Request req = MPIX_REQUEST_NULL;
  int rcode = MPIX_Neighbor_alltoallw_init(s, sc, sd, st, r, rc, rd, rt, ring, MPI_INFO_NULL, &req);
  if (rcode != MPI_SUCCESS) {
    fprintf(stderr, "[rank %d] MPIX_Neighbor_alltoallw_init failed (%d)\n", me, rcode);
    ++errors;
  }
  for (int iter = 0; iter < 3 * (rcode == MPI_SUCCESS); ++iter) {
    for (int x = 0; x < 6; ++x) s[x] = value(me, x, 0, iter);
    /* From the left: its block 1 (s[4]); from the right: its block 0 (s[0], s[2]). */
    const int want[6] = {-1, value(right, 0, 0, iter), value(right, 2, 0, iter), -1,
                         -1, value(left, 4, 0, iter)};
    for (int how = 0; how < 3; ++how) {
      if (how == 2 && np < 3) break;
      for (int x = 0; x < 6; ++x) r[x] = -1;
      if (how == 0) {
        rcode = MPIX_Start(&req);
        if (rcode == MPI_SUCCESS) rcode = MPIX_Wait(&req, MPI_STATUS_IGNORE);
      } else if (how == 1) {
        rcode = MPIX_Neighbor_alltoallw(s, sc, sd, st, r, rc, rd, rt, ring);
      } else {
        rcode = MPI_Neighbor_alltoallw(s, sc, sd, st, r, rc, rd, rt, ring);
      }
      for (int x = 0; x < 6; ++x) {
        if (rcode != MPI_SUCCESS || r[x] != want[x]) {
          if (errors < 5)
            fprintf(stderr, "[rank %d] %s alltoallw cycle %d: rbuf[%d] = %d, expected %d (rc %d)\n",
                    me,
                    how == 0   ? "persistent"
                    : how == 1 ? "blocking"
                               : "MPI's",
                    iter, x, r[x], want[x], rcode);
          ++errors;
        }
      }
    }
  }
  if (req != MPIX_REQUEST_NULL) MPIX_Request_free(&req);
  MPI_Type_free(&vec);
  MPI_Comm_free(&ring);
  return errors;
}

static int error_class_of(int code) {
  int cls = -1;
  MPI_Error_class(code, &cls);
  return cls;
}

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  int me, np, errors = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &me);
  MPI_Comm_size(MPI_COMM_WORLD, &np);

  errors += run(MPI_COMM_WORLD, "pairwise", 0);
  errors += run(MPI_COMM_WORLD, "tra", 10);
  errors += run(MPI_COMM_WORLD, "bruck", 20);
  errors += neighbor_w();

  /* Blocking, with the algorithm chosen for the communicator. */
  {
    char name[MPIX_MAX_ALGORITHM_STRING];
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    int rc = MPIX_Comm_set_algorithm(MPI_COMM_WORLD, "alltoall", "modified_bruck");
    if (rc != MPI_SUCCESS) {
      fprintf(stderr, "[rank %d] MPIX_Comm_set_algorithm(modified_bruck) failed (%d)\n", me, rc);
      ++errors;
    }
    errors += blocking(MPI_COMM_WORLD, 99, "blocking, modified_bruck");
    if (reported_without_info(MPI_COMM_WORLD, name) || strcmp(name, "modified_bruck") != 0) {
      fprintf(stderr, "[rank %d] init without info after choosing modified_bruck: '%s'\n", me,
              name);
      ++errors;
    }
    /* A bad selection is an error and the choice stays. */
    rc = MPIX_Comm_set_algorithm(MPI_COMM_WORLD, "alltoall", "no_such_algorithm");
    if (error_class_of(rc) != MPI_ERR_INFO_VALUE) {
      fprintf(stderr, "[rank %d] MPIX_Comm_set_algorithm(no_such_algorithm) returned %d\n", me, rc);
      ++errors;
    }
    if (reported_without_info(MPI_COMM_WORLD, name) || strcmp(name, "modified_bruck") != 0) {
      fprintf(stderr, "[rank %d] after a bad selection: '%s'\n", me, name);
      ++errors;
    }
    /* NULL: back to the environment's choice. */
    rc = MPIX_Comm_set_algorithm(MPI_COMM_WORLD, "alltoall", NULL);
    if (rc != MPI_SUCCESS) {
      fprintf(stderr, "[rank %d] MPIX_Comm_set_algorithm(NULL) failed (%d)\n", me, rc);
      ++errors;
    }
    errors += blocking(MPI_COMM_WORLD, 98, "blocking, the default");
    /* The environment's choice (c.api_env sets MPIX_ALLTOALL to a canonical selection). */
    const char* env = getenv("MPIX_ALLTOALL");
    if (reported_without_info(MPI_COMM_WORLD, name)) {
      fprintf(stderr, "[rank %d] init without info failed\n", me);
      ++errors;
    } else if (env ? strcmp(name, env) != 0 : strcmp(name, "auto") == 0 || name[0] == '\0') {
      fprintf(stderr, "[rank %d] init without info reports '%s' (MPIX_ALLTOALL %s)\n", me, name,
              env ? env : "unset");
      ++errors;
    }
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_ARE_FATAL);
  }

  /* The library's version at run time is the header's (one build here). */
  {
    int major = -1, minor = -1, patch = -1;
    if (MPIX_Get_version(&major, &minor, &patch) != MPI_SUCCESS || major != MPIA_VERSION_MAJOR ||
        minor != MPIA_VERSION_MINOR || patch != MPIA_VERSION_PATCH ||
        MPIX_Get_version(NULL, NULL, NULL) != MPI_SUCCESS) {
      fprintf(stderr, "[rank %d] MPIX_Get_version: %d.%d.%d\n", me, major, minor, patch);
      ++errors;
    }
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
