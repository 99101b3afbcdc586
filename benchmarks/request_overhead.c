/* What a request that is not mpi-advance's pays for the drop-in library's request calls
 * (src/preload/requests.cpp): an unmodified program timing MPI_Test on a pending point-to-point
 * receive, and a self exchange (MPI_Irecv + MPI_Isend + MPI_Waitall), run with and without
 * libmpi_advance_preload.so (scripts/request_overhead.sh runs both and prints the ratios).
 *
 *   request_overhead [--calls N] [--reps R]
 *
 * Three states of the process, each timed R times (the median is printed), on rank 0:
 *   none     no collective request exists: the preload's calls go straight to MPI
 *   idle     an inactive persistent MPI_Alltoall_init request exists (MPI-4, or Open MPI's
 *            MPIX_ extension; skipped without either): the preload looks the requests up
 *   running  (2 ranks or more) an MPI_Ialltoall is in flight (rank 1 joins it only at the end):
 *            each call also drives it, as MPI's progress rule asks
 */
#include <mpi.h>
#if defined(OPEN_MPI) && OPEN_MPI
#include <mpi-ext.h>
#endif
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#if MPI_VERSION >= 4 || \
    (defined(OPEN_MPI) && defined(OMPI_MAJOR_VERSION) && OMPI_MAJOR_VERSION >= 5)
#define ALLTOALL_INIT MPI_Alltoall_init
#elif defined(OMPI_HAVE_MPI_EXT_PCOLLREQ) && OMPI_HAVE_MPI_EXT_PCOLLREQ
#define ALLTOALL_INIT MPIX_Alltoall_init
#endif

static int cmp(const void* a, const void* b) {
  const double x = *(const double*)a, y = *(const double*)b;
  return x < y ? -1 : x > y;
}

/* ns per MPI_Test on a pending receive, and per self exchange. */
static void measure(int calls, int reps, double* test_ns, double* cycle_ns) {
  double* t = malloc(sizeof(double) * (size_t)reps);
  double* c = malloc(sizeof(double) * (size_t)reps);
  int in = 0, out = 1;
  for (int r = 0; r < reps; ++r) {
    MPI_Request q;
    int flag = 0;
    MPI_Irecv(&in, 1, MPI_INT, 0, 4242, MPI_COMM_SELF, &q);
    double t0 = MPI_Wtime();
    for (int i = 0; i < calls; ++i) MPI_Test(&q, &flag, MPI_STATUS_IGNORE);
    t[r] = (MPI_Wtime() - t0) / calls * 1e9;
    MPI_Send(&out, 1, MPI_INT, 0, 4242, MPI_COMM_SELF);
    MPI_Wait(&q, MPI_STATUS_IGNORE);
    t0 = MPI_Wtime();
    for (int i = 0; i < calls / 10; ++i) {
      MPI_Request qq[2];
      MPI_Irecv(&in, 1, MPI_INT, 0, 7, MPI_COMM_SELF, &qq[0]);
      MPI_Isend(&out, 1, MPI_INT, 0, 7, MPI_COMM_SELF, &qq[1]);
      MPI_Status st[2];
      MPI_Waitall(2, qq, st);
    }
    c[r] = (MPI_Wtime() - t0) / (calls / 10) * 1e9;
  }
  qsort(t, (size_t)reps, sizeof(double), cmp);
  qsort(c, (size_t)reps, sizeof(double), cmp);
  *test_ns = t[reps / 2];
  *cycle_ns = c[reps / 2];
  free(t);
  free(c);
}

int main(int argc, char** argv) {
  int calls = 200000, reps = 7;
  for (int i = 1; i + 1 < argc; i += 2) {
    if (!strcmp(argv[i], "--calls")) calls = atoi(argv[i + 1]);
    if (!strcmp(argv[i], "--reps")) reps = atoi(argv[i + 1]);
  }
  if (calls < 10) calls = 10;
  if (reps < 1) reps = 1;
  MPI_Init(&argc, &argv);
  int rank = 0, P = 1;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &P);
  double test_ns, cycle_ns;
  if (rank == 0) {
    measure(calls, reps, &test_ns, &cycle_ns);
    printf("request_overhead: state=none test_ns=%.1f exchange_ns=%.1f\n", test_ns, cycle_ns);
  }
  int sb[2] = {1, 2}, rb[2];
#ifdef ALLTOALL_INIT
  {
    MPI_Request a;
    ALLTOALL_INIT(sb, 1, MPI_INT, rb, 1, MPI_INT, MPI_COMM_SELF, MPI_INFO_NULL, &a);
    if (rank == 0) {
      measure(calls, reps, &test_ns, &cycle_ns);
      printf("request_overhead: state=idle test_ns=%.1f exchange_ns=%.1f\n", test_ns, cycle_ns);
    }
    MPI_Request_free(&a);
  }
#endif
  if (P >= 2) {
    /* Ranks 0 and 1: rank 0's MPI_Ialltoall stays in flight until rank 1 joins it. */
    MPI_Comm pair;
    MPI_Comm_split(MPI_COMM_WORLD, rank < 2 ? 0 : MPI_UNDEFINED, rank, &pair);
    if (rank < 2) {
      MPI_Request q;
      if (rank == 0) {
        MPI_Ialltoall(sb, 1, MPI_INT, rb, 1, MPI_INT, pair, &q);
        measure(calls, reps, &test_ns, &cycle_ns);
        printf("request_overhead: state=running test_ns=%.1f exchange_ns=%.1f\n", test_ns,
               cycle_ns);
        MPI_Send(&calls, 1, MPI_INT, 1, 1, MPI_COMM_WORLD);
      } else {
        int dummy;
        MPI_Recv(&dummy, 1, MPI_INT, 0, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        MPI_Ialltoall(sb, 1, MPI_INT, rb, 1, MPI_INT, pair, &q);
      }
      MPI_Wait(&q, MPI_STATUS_IGNORE);
      MPI_Comm_free(&pair);
    }
  }
  MPI_Finalize();
  return 0;
}
