/* The drop-in library's requests under MPI_THREAD_MULTIPLE: an unmodified program whose 4
 * threads each run, on a communicator of their own, 20 rounds of MPI_Ialltoall completed by
 * MPI_Wait (even threads) or polled MPI_Test (odd threads), each followed by point-to-point
 * exchanges (their data, statuses and null handles checked), and a persistent alltoall (where the
 * MPI has one) started and completed by MPI_Waitall beside a point-to-point pair, while the
 * other threads drive the same library (one driver at a time, the others' requests completed by
 * whoever drives). Every received element is checked; all ranks fail if one does. Without
 * MPI_THREAD_MULTIPLE it says so and passes (nothing to test). */
#include <mpi.h>
#if defined(OPEN_MPI) && OPEN_MPI
#include <mpi-ext.h>
#endif
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Open MPI 5: MPI-4's persistent collectives, standard names, under an MPI-3.1 mpi.h. */
#if MPI_VERSION >= 4 || \
    (defined(OPEN_MPI) && defined(OMPI_MAJOR_VERSION) && OMPI_MAJOR_VERSION >= 5)
#define ALLTOALL_INIT MPI_Alltoall_init
#elif defined(OMPI_HAVE_MPI_EXT_PCOLLREQ) && OMPI_HAVE_MPI_EXT_PCOLLREQ
#define ALLTOALL_INIT MPIX_Alltoall_init
#endif

enum { kThreads = 4, kRounds = 20, kN = 3 };
static int rank, P;
static MPI_Comm comms[kThreads];
static long errors[kThreads];

static int value(int src, int dst, int k, int round, int t) {
  return src * 1000003 + dst * 1009 + k * 7 + round * 31 + t * 100000;
}

static void* run(void* arg) {
  const int t = (int)(long)arg;
  MPI_Comm comm = comms[t];
  int* s = malloc(sizeof(int) * kN * P);
  int* r = malloc(sizeof(int) * kN * P);
  const int right = (rank + 1) % P, left = (rank + P - 1) % P;
  for (int round = 0; round < kRounds; ++round) {
    for (int j = 0; j < P; ++j)
      for (int k = 0; k < kN; ++k) s[j * kN + k] = value(rank, j, k, round, t);
    memset(r, 0xff, sizeof(int) * kN * P);
    MPI_Request q;
    MPI_Ialltoall(s, kN, MPI_INT, r, kN, MPI_INT, comm, &q);
    if (t % 2 == 0) {
      MPI_Wait(&q, MPI_STATUS_IGNORE);
    } else {
      int flag = 0;
      while (!flag) MPI_Test(&q, &flag, MPI_STATUS_IGNORE);
    }
    for (int i = 0; i < P; ++i)
      for (int k = 0; k < kN; ++k) errors[t] += r[i * kN + k] != value(i, rank, k, round, t);
    /* Point-to-point requests made while other threads' collectives complete (the MPI library
     * may give them the handles it just took back): theirs, statuses and all. */
    for (int m = 0; m < 4; ++m) {
      int out = value(rank, right, m, round, t), in = -1;
      MPI_Request pp[2];
      MPI_Status st[2];
      MPI_Irecv(&in, 1, MPI_INT, left, 7 + m, comm, &pp[0]);
      MPI_Isend(&out, 1, MPI_INT, right, 7 + m, comm, &pp[1]);
      MPI_Waitall(2, pp, st);
      errors[t] += in != value(left, rank, m, round, t);
      errors[t] += st[0].MPI_SOURCE != left || st[0].MPI_TAG != 7 + m;
      errors[t] += pp[0] != MPI_REQUEST_NULL || pp[1] != MPI_REQUEST_NULL;
    }
  }
#ifdef ALLTOALL_INIT
  MPI_Request a[3];
  int out = 0, in = -1;
  ALLTOALL_INIT(s, kN, MPI_INT, r, kN, MPI_INT, comm, MPI_INFO_NULL, &a[0]);
  MPI_Recv_init(&in, 1, MPI_INT, left, 3, comm, &a[1]);
  MPI_Send_init(&out, 1, MPI_INT, right, 3, comm, &a[2]);
  for (int round = 0; round < kRounds; ++round) {
    for (int j = 0; j < P; ++j)
      for (int k = 0; k < kN; ++k) s[j * kN + k] = value(rank, j, k, 50 + round, t);
    memset(r, 0xff, sizeof(int) * kN * P);
    out = value(rank, right, 9, round, t);
    MPI_Startall(3, a);
    MPI_Status st[3];
    MPI_Waitall(3, a, st);
    for (int i = 0; i < P; ++i)
      for (int k = 0; k < kN; ++k) errors[t] += r[i * kN + k] != value(i, rank, k, 50 + round, t);
    errors[t] += in != value(left, rank, 9, round, t);
  }
  for (int k = 0; k < 3; ++k) MPI_Request_free(&a[k]);
#endif
  free(s);
  free(r);
  return NULL;
}

int main(int argc, char** argv) {
  int provided = MPI_THREAD_SINGLE;
  MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided);
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &P);
  if (provided < MPI_THREAD_MULTIPLE) {
    if (rank == 0) printf("preload_threads: no MPI_THREAD_MULTIPLE here\nPASS\n");
    MPI_Finalize();
    return 0;
  }
  for (int t = 0; t < kThreads; ++t) MPI_Comm_dup(MPI_COMM_WORLD, &comms[t]);
  pthread_t threads[kThreads];
  for (int t = 0; t < kThreads; ++t) pthread_create(&threads[t], NULL, run, (void*)(long)t);
  for (int t = 0; t < kThreads; ++t) pthread_join(threads[t], NULL);
  long mine = 0, total = 0;
  for (int t = 0; t < kThreads; ++t) mine += errors[t];
  if (mine) fprintf(stderr, "rank %d: %ld wrong\n", rank, mine);
  MPI_Allreduce(&mine, &total, 1, MPI_LONG, MPI_SUM, MPI_COMM_WORLD);
  for (int t = 0; t < kThreads; ++t) MPI_Comm_free(&comms[t]);
  if (rank == 0) printf(total ? "FAIL: %ld wrong\n" : "PASS\n", total);
  MPI_Finalize();
  return total != 0;
}
