/*
 * Installed-package consumer test, C. Built against an *installed* mpi-advance (CMake package
 * or pkg-config) and run at 2 ranks. Exits non-zero on any wrong result.
 */
#ifdef MPIA_CONSUMER_WITH_MPI_EXT
/* Open MPI: its <mpi-ext.h> (which needs <mpi.h> first) declares its own MPIX_Alltoall_init.
 * Including it before mpi_advance.h must not clash with ours: the header maps our MPIX_ names
 * onto MPIA_ symbols, so the calls below are ours. */
#include <mpi.h>
#include <mpi-ext.h>
#endif
#include <mpi_advance.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define COUNT 3

static int errors = 0;

static void fill(int* buf, int rank, int size) {
  for (int dst = 0; dst < size; ++dst)
    for (int k = 0; k < COUNT; ++k) buf[dst * COUNT + k] = rank * 10000 + dst * 100 + k;
}

static void check(const int* buf, int rank, int size, const char* what) {
  for (int src = 0; src < size; ++src)
    for (int k = 0; k < COUNT; ++k) {
      int want = src * 10000 + rank * 100 + k;
      int got = buf[src * COUNT + k];
      if (got != want) {
        if (errors < 10)
          fprintf(stderr, "rank %d: %s: block %d elem %d = %d, want %d\n", rank, what, src, k, got,
                  want);
        ++errors;
      }
    }
}

#define CHECK_RC(call)                                                            \
  do {                                                                            \
    int rc_ = (call);                                                             \
    if (rc_ != MPI_SUCCESS) {                                                     \
      fprintf(stderr, "%s:%d: %s returned %d\n", __FILE__, __LINE__, #call, rc_); \
      ++errors;                                                                   \
    }                                                                             \
  } while (0)

int main(int argc, char** argv) {
  int rank, size;
  MPI_Init(&argc, &argv);
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);

  int* sendbuf = malloc(sizeof(int) * COUNT * size);
  int* recvbuf = malloc(sizeof(int) * COUNT * size);

  /* Blocking, algorithm from the environment (or auto). */
  fill(sendbuf, rank, size);
  memset(recvbuf, 0xff, sizeof(int) * COUNT * size);
  CHECK_RC(MPIX_Alltoall(sendbuf, COUNT, MPI_INT, recvbuf, COUNT, MPI_INT, MPI_COMM_WORLD));
  check(recvbuf, rank, size, "MPIX_Alltoall");

  /* Persistent, one request per algorithm named in the selection syntax. */
  const char* algorithms[] = {"auto", "pairwise", "bruck", "tra:radix=2", "system"};
  for (size_t a = 0; a < sizeof algorithms / sizeof algorithms[0]; ++a) {
    MPI_Info info;
    MPIX_Request req = MPIX_REQUEST_NULL;
    MPI_Info_create(&info);
    MPI_Info_set(info, MPIX_INFO_KEY_ALGORITHM, algorithms[a]);
    CHECK_RC(MPIX_Alltoall_init(sendbuf, COUNT, MPI_INT, recvbuf, COUNT, MPI_INT, MPI_COMM_WORLD,
                                info, &req));
    MPI_Info_free(&info);
    for (int iter = 0; iter < 2 && req != MPIX_REQUEST_NULL; ++iter) {
      memset(recvbuf, 0xff, sizeof(int) * COUNT * size);
      CHECK_RC(MPIX_Start(&req));
      CHECK_RC(MPIX_Wait(&req, MPI_STATUS_IGNORE));
      check(recvbuf, rank, size, algorithms[a]);
    }
    char resolved[MPIX_MAX_ALGORITHM_STRING];
    int len = 0;
    CHECK_RC(MPIX_Request_get_algorithm(req, resolved, &len));
    if (rank == 0) printf("C consumer: %-12s -> %s\n", algorithms[a], resolved);
    CHECK_RC(MPIX_Request_free(&req));
    if (req != MPIX_REQUEST_NULL) {
      fprintf(stderr, "rank %d: request not nulled by free\n", rank);
      ++errors;
    }
  }

  /* The registry is reachable and lists at least the documented names. */
  int n = 0;
  const char *name, *desc;
  while (MPIX_Algorithm_get("alltoall", n, &name, &desc) == MPI_SUCCESS) ++n;
  if (n < 8) {
    fprintf(stderr, "rank %d: registry lists %d alltoall algorithms, want >= 8\n", rank, n);
    ++errors;
  }

  char version[MPI_MAX_LIBRARY_VERSION_STRING];
  int vlen;
  MPI_Get_library_version(version, &vlen);
  int total = 0;
  MPI_Allreduce(&errors, &total, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
  if (rank == 0) {
    char* nl = strchr(version, '\n');
    if (nl) *nl = '\0';
    printf("C consumer: %d ranks, %d algorithms, MPI: %s\n", size, n, version);
    printf("C consumer: %s\n", total == 0 ? "PASS" : "FAIL");
  }
  free(sendbuf);
  free(recvbuf);
  MPI_Finalize();
  return total == 0 ? 0 : 1;
}
