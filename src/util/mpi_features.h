/* What the MPI library has of MPI-4, where MPI_VERSION does not say it. Plain C, header only:
 * for the library (C++), the drop-in library (C and C++) and its Fortran glue (C).
 *
 *   MPIA_HAVE_PERSISTENT_COLL  MPI-4's persistent collectives under their standard names
 *                              (MPI_Alltoall_init, PMPI_Neighbor_alltoallv_init, ...)
 *   MPIA_HAVE_LARGE_COUNT      MPI-4's large-count functions (MPI_Alltoall_c, ...)
 *
 * Open MPI 5.0's mpi.h says MPI 3.1 (MPI_VERSION 3) but declares the persistent collectives under
 * their standard names (4.1 had them as MPIX_ functions of its pcollreq extension, <mpi-ext.h>,
 * which 5.0 no longer has); it has no large-count functions. MPICH 4 has both. */
#ifndef MPIA_MPI_FEATURES_H
#define MPIA_MPI_FEATURES_H

#include <mpi.h>

#if MPI_VERSION >= 4 || \
    (defined(OPEN_MPI) && OPEN_MPI && defined(OMPI_MAJOR_VERSION) && OMPI_MAJOR_VERSION >= 5)
#define MPIA_HAVE_PERSISTENT_COLL 1
#else
#define MPIA_HAVE_PERSISTENT_COLL 0
#endif

#if MPI_VERSION >= 4
#define MPIA_HAVE_LARGE_COUNT 1
#else
#define MPIA_HAVE_LARGE_COUNT 0
#endif

#endif
