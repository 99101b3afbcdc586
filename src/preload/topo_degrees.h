/* The degrees of a communicator's process topology, in MPI's neighbor order: *in sources (the
 * receive arrays' length), *out destinations (the send arrays'); -1 both when it has none (or
 * comm is MPI_COMM_NULL). Plain C, header only, PMPI_ calls: for the Fortran module's glue and
 * the preload library (C and C++), which must size the arrays of the neighbor calls they convert
 * or measure. */
#ifndef MPIA_TOPO_DEGREES_H
#define MPIA_TOPO_DEGREES_H

#include <mpi.h>

static inline void mpia_topo_degrees(MPI_Comm comm, int* in, int* out) {
  int topo = MPI_UNDEFINED;
  *in = *out = -1;
  if (comm == MPI_COMM_NULL || PMPI_Topo_test(comm, &topo) != MPI_SUCCESS) return;
  if (topo == MPI_CART) {
    int nd = 0;
    if (PMPI_Cartdim_get(comm, &nd) == MPI_SUCCESS) *in = *out = 2 * nd;
  } else if (topo == MPI_GRAPH) {
    int rank = 0, n = 0;
    if (PMPI_Comm_rank(comm, &rank) == MPI_SUCCESS &&
        PMPI_Graph_neighbors_count(comm, rank, &n) == MPI_SUCCESS)
      *in = *out = n;
  } else if (topo == MPI_DIST_GRAPH) {
    int weighted = 0;
    PMPI_Dist_graph_neighbors_count(comm, in, out, &weighted);
  }
}

#endif
