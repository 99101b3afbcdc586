// The MPI library's own persistent all-to-all, for perf_persistent.cpp. A translation unit of its
// own: it includes Open MPI's <mpi-ext.h>, whose MPIX_Alltoall_init (MPI_Request) is a different
// function from mpi-advance's (mpi_advance.h maps MPIX_Alltoall_init onto MPIA_Alltoall_init).
#include <mpi.h>

#if defined(OPEN_MPI) && defined(__has_include)
#if __has_include(<mpi-ext.h>)
#include <mpi-ext.h>
#endif
#endif

// Name of what sys_alltoall_init calls, or nullptr when the library has no persistent alltoall.
const char* sys_alltoall_init_name() {
#if MPI_VERSION >= 4
  return "MPI_Alltoall_init";
#elif defined(OMPI_HAVE_MPI_EXT_PCOLLREQ) && OMPI_HAVE_MPI_EXT_PCOLLREQ
  return "MPIX_Alltoall_init";
#else
  return nullptr;
#endif
}

int sys_alltoall_init(const void* s, int n, MPI_Datatype t, void* r, MPI_Comm comm,
                      MPI_Request* q) {
#if MPI_VERSION >= 4
  return MPI_Alltoall_init(s, n, t, r, n, t, comm, MPI_INFO_NULL, q);
#elif defined(OMPI_HAVE_MPI_EXT_PCOLLREQ) && OMPI_HAVE_MPI_EXT_PCOLLREQ
  return MPIX_Alltoall_init(s, n, t, r, n, t, comm, MPI_INFO_NULL, q);
#else
  (void)s;
  (void)n;
  (void)t;
  (void)r;
  (void)comm;
  *q = MPI_REQUEST_NULL;
  return MPI_ERR_OTHER;
#endif
}
