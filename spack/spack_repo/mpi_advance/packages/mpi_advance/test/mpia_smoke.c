/* Smoke test of an installed mpi-advance (run by `spack test run mpi-advance`): one blocking
 * and one persistent all-to-all on MPI_COMM_WORLD, every received value checked.
 * Prints "mpi-advance smoke: OK" on rank 0 and exits 0 when every rank got what it expected. */
#include <mpi_advance.h>
#include <stdio.h>
#include <stdlib.h>

int main(int argc, char** argv) {
  int rank, size, bad = 0, all_bad = 0;
  MPI_Init(&argc, &argv);
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);

  int* send = malloc(sizeof(int) * (size_t)size);
  int* recv = malloc(sizeof(int) * (size_t)size);
  for (int i = 0; i < size; ++i) send[i] = 1000 * rank + i; /* block i goes to rank i */

  /* Blocking. */
  if (MPIX_Alltoall(send, 1, MPI_INT, recv, 1, MPI_INT, MPI_COMM_WORLD) != MPI_SUCCESS) ++bad;
  for (int i = 0; i < size; ++i) bad += recv[i] != 1000 * i + rank;

  /* Persistent, twice. */
  MPIX_Request req;
  if (MPIX_Alltoall_init(send, 1, MPI_INT, recv, 1, MPI_INT, MPI_COMM_WORLD, MPI_INFO_NULL, &req) !=
      MPI_SUCCESS) {
    ++bad;
  } else {
    for (int it = 0; it < 2; ++it) {
      for (int i = 0; i < size; ++i) recv[i] = -1;
      MPIX_Start(&req);
      MPIX_Wait(&req, MPI_STATUS_IGNORE);
      for (int i = 0; i < size; ++i) bad += recv[i] != 1000 * i + rank;
    }
    MPIX_Request_free(&req);
  }

  MPI_Allreduce(&bad, &all_bad, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
  if (rank == 0) {
    if (all_bad == 0)
      printf("mpi-advance smoke: OK on %d ranks\n", size);
    else
      printf("mpi-advance smoke: FAILED (%d wrong values)\n", all_bad);
  }
  free(send);
  free(recv);
  MPI_Finalize();
  return all_bad == 0 ? 0 : 1;
}
