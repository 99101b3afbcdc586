/*
 * system_coll.cpp -- calls the MPI library's own persistent collectives (see system_coll.h).
 *
 * This file must not include mpi_advance.h: here MPIX_Alltoall_init and friends are Open MPI's
 * extensions from <mpi-ext.h>, not mpi-advance's.
 */
#include "system_coll.h"

#include <mpi.h>

#ifdef MPI_ADVANCE_H
#error "system_coll.cpp must not include mpi_advance.h"
#endif

#if defined(OPEN_MPI) && defined(__has_include)
#if __has_include(<mpi-ext.h>)
#include <mpi-ext.h>
#endif
#endif

#if MPI_VERSION >= 4 || \
    (defined(OPEN_MPI) && defined(OMPI_MAJOR_VERSION) && OMPI_MAJOR_VERSION >= 5)
#define MPIA_BENCH_PCOLL(name) MPI_##name##_init
#define MPIA_BENCH_PCOLL_NAME(name) "MPI_" #name "_init"
#elif defined(OMPI_HAVE_MPI_EXT_PCOLLREQ) && OMPI_HAVE_MPI_EXT_PCOLLREQ
#define MPIA_BENCH_PCOLL(name) MPIX_##name##_init
#define MPIA_BENCH_PCOLL_NAME(name) "MPIX_" #name "_init(ompi-ext)"
#endif

#ifdef MPIA_BENCH_PCOLL
#define MPIA_BENCH_CALL(name, ...) return MPIA_BENCH_PCOLL(name)(__VA_ARGS__)
#define MPIA_BENCH_NAME(name) return MPIA_BENCH_PCOLL_NAME(name)
#else
template <class... T>
static int unsupported(MPI_Request* request, const T&...) {
  *request = MPI_REQUEST_NULL;
  return MPI_ERR_UNSUPPORTED_OPERATION;
}
#define MPIA_BENCH_CALL(name, ...) return unsupported(request, __VA_ARGS__)
#define MPIA_BENCH_NAME(name) return nullptr
#endif

const char* mpia_bench_system_pcoll_name() { MPIA_BENCH_NAME(Alltoall); }
const char* mpia_bench_system_pcoll_v_name() { MPIA_BENCH_NAME(Alltoallv); }
const char* mpia_bench_system_neighbor_name() { MPIA_BENCH_NAME(Neighbor_alltoallv); }

int mpia_bench_system_alltoall_init(const void* sendbuf, int sendcount, MPI_Datatype sendtype,
                                    void* recvbuf, int recvcount, MPI_Datatype recvtype,
                                    MPI_Comm comm, MPI_Info info, MPI_Request* request) {
  MPIA_BENCH_CALL(Alltoall, sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype, comm, info,
                  request);
}

int mpia_bench_system_alltoallv_init(const void* sendbuf, const int sendcounts[],
                                     const int sdispls[], MPI_Datatype sendtype, void* recvbuf,
                                     const int recvcounts[], const int rdispls[],
                                     MPI_Datatype recvtype, MPI_Comm comm, MPI_Info info,
                                     MPI_Request* request) {
  MPIA_BENCH_CALL(Alltoallv, sendbuf, sendcounts, sdispls, sendtype, recvbuf, recvcounts, rdispls,
                  recvtype, comm, info, request);
}

int mpia_bench_system_neighbor_alltoallv_init(const void* sendbuf, const int sendcounts[],
                                              const int sdispls[], MPI_Datatype sendtype,
                                              void* recvbuf, const int recvcounts[],
                                              const int rdispls[], MPI_Datatype recvtype,
                                              MPI_Comm comm, MPI_Info info, MPI_Request* request) {
  MPIA_BENCH_CALL(Neighbor_alltoallv, sendbuf, sendcounts, sdispls, sendtype, recvbuf, recvcounts,
                  rdispls, recvtype, comm, info, request);
}
