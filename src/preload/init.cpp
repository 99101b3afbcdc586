// The drop-in library's persistent inits under Open MPI 4.1, whose mpi.h is MPI-3.1: its
// extension's MPIX_Alltoall_init & co. (<mpi-ext.h>, pcollreq). This translation unit does not
// include mpi_advance.h, whose MPIX_ names are ours (MPIA_ at link level); MPI-4's MPI_*_init are
// defined in preload.cpp. Each runs preload.cpp's dispatcher, as the C entry points there do.
#include <mpi.h>
#if defined(OPEN_MPI) && OPEN_MPI
#include <mpi-ext.h>
#endif

#include "preload/preload.hpp"
#include "util/mpi_features.h"

#if !MPIA_HAVE_PERSISTENT_COLL && defined(OMPI_HAVE_MPI_EXT_PCOLLREQ) && OMPI_HAVE_MPI_EXT_PCOLLREQ

#define MPIA_PRELOAD_EXPORT __attribute__((visibility("default")))

extern "C" {

MPIA_PRELOAD_EXPORT int MPIX_Alltoall_init(const void* sendbuf, int sendcount,
                                           MPI_Datatype sendtype, void* recvbuf, int recvcount,
                                           MPI_Datatype recvtype, MPI_Comm comm, MPI_Info info,
                                           MPI_Request* request) {
  return mpia_preload_alltoall_init(sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype,
                                    comm, info, request);
}

MPIA_PRELOAD_EXPORT int MPIX_Alltoallv_init(const void* sendbuf, const int sendcounts[],
                                            const int sdispls[], MPI_Datatype sendtype,
                                            void* recvbuf, const int recvcounts[],
                                            const int rdispls[], MPI_Datatype recvtype,
                                            MPI_Comm comm, MPI_Info info, MPI_Request* request) {
  return mpia_preload_alltoallv_init(sendbuf, sendcounts, sdispls, sendtype, recvbuf, recvcounts,
                                     rdispls, recvtype, comm, info, request);
}

MPIA_PRELOAD_EXPORT int MPIX_Neighbor_alltoall_init(const void* sendbuf, int sendcount,
                                                    MPI_Datatype sendtype, void* recvbuf,
                                                    int recvcount, MPI_Datatype recvtype,
                                                    MPI_Comm comm, MPI_Info info,
                                                    MPI_Request* request) {
  return mpia_preload_neighbor_alltoall_init(sendbuf, sendcount, sendtype, recvbuf, recvcount,
                                             recvtype, comm, info, request);
}

MPIA_PRELOAD_EXPORT int MPIX_Neighbor_alltoallv_init(const void* sendbuf, const int sendcounts[],
                                                     const int sdispls[], MPI_Datatype sendtype,
                                                     void* recvbuf, const int recvcounts[],
                                                     const int rdispls[], MPI_Datatype recvtype,
                                                     MPI_Comm comm, MPI_Info info,
                                                     MPI_Request* request) {
  return mpia_preload_neighbor_alltoallv_init(sendbuf, sendcounts, sdispls, sendtype, recvbuf,
                                              recvcounts, rdispls, recvtype, comm, info, request);
}

MPIA_PRELOAD_EXPORT int MPIX_Neighbor_alltoallw_init(
    const void* sendbuf, const int sendcounts[], const MPI_Aint sdispls[],
    const MPI_Datatype sendtypes[], void* recvbuf, const int recvcounts[], const MPI_Aint rdispls[],
    const MPI_Datatype recvtypes[], MPI_Comm comm, MPI_Info info, MPI_Request* request) {
  return mpia_preload_neighbor_alltoallw_init(sendbuf, sendcounts, sdispls, sendtypes, recvbuf,
                                              recvcounts, rdispls, recvtypes, comm, info, request);
}

}  // extern "C"

#endif
