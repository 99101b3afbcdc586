/* A second PMPI tool, loaded after libmpi_advance_preload.so: it counts the point-to-point
 * starts it sees (mpi-advance's engine posts its messages with MPI_Start/MPI_Startall/MPI_Isend,
 * which reach this tool) and the MPI_Alltoallv calls that reach it (none should: the preload,
 * first in line, runs them), and says so at MPI_Finalize on rank 0. */
#include <mpi.h>
#include <stdio.h>

static long starts, alltoallv;

int MPI_Start(MPI_Request* r) {
  ++starts;
  return PMPI_Start(r);
}
int MPI_Startall(int n, MPI_Request r[]) {
  starts += n;
  return PMPI_Startall(n, r);
}
int MPI_Isend(const void* b, int c, MPI_Datatype t, int d, int tag, MPI_Comm comm, MPI_Request* r) {
  ++starts;
  return PMPI_Isend(b, c, t, d, tag, comm, r);
}
int MPI_Alltoallv(const void* sb, const int sc[], const int sd[], MPI_Datatype st, void* rb,
                  const int rc[], const int rd[], MPI_Datatype rt, MPI_Comm comm) {
  ++alltoallv;
  return PMPI_Alltoallv(sb, sc, sd, st, rb, rc, rd, rt, comm);
}
int MPI_Finalize(void) {
  int rank = 0;
  PMPI_Comm_rank(MPI_COMM_WORLD, &rank);
  if (rank == 0)
    printf("pmpi_tool: rank 0 saw %ld point-to-point starts, %ld MPI_Alltoallv\n", starts,
           alltoallv);
  fflush(stdout);
  return PMPI_Finalize();
}
