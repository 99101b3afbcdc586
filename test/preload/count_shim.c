/* A counting shim, loaded after libmpi_advance_preload.so: it defines the MPI library's
 * nonblocking and persistent all-to-alls under both names, MPI_ and PMPI_, counts every call that
 * reaches it and forwards it to the next definition (the MPI library's). Every route to the MPI
 * library's own collective passes here: the application's call if the preload did not take it,
 * the preload's PMPI_ fallback, mpi-advance's "system" algorithm (which calls PMPI_). At
 * MPI_Finalize every rank prints its counts; run under a fixed algorithm of ours they must be 0,
 * and under MPIX_<CALL>=system they are not (the shim can see them). */
#define _GNU_SOURCE
#include <mpi.h>
#if defined(OPEN_MPI) && OPEN_MPI
#include <mpi-ext.h>
#endif
#include <dlfcn.h>
#include <stdio.h>

static long nonblocking, persistent;

#define STR(x) #x
#define XSTR(x) STR(x)

/* One forwarding definition per name; the arguments as MPI declares them. */
#define SHIM(counter, ret_name, params, args)                          \
  int ret_name params {                                                \
    static int(*next) params;                                          \
    if (!next) next = (int(*) params)dlsym(RTLD_NEXT, XSTR(ret_name)); \
    ++counter;                                                         \
    return next args;                                                  \
  }

#define A_PARAMS                                                                              \
  (const void* sb, int sc, MPI_Datatype st, void* rb, int rc, MPI_Datatype rt, MPI_Comm comm, \
   MPI_Request* q)
#define A_ARGS (sb, sc, st, rb, rc, rt, comm, q)
#define V_PARAMS                                                                              \
  (const void* sb, const int sc[], const int sd[], MPI_Datatype st, void* rb, const int rc[], \
   const int rd[], MPI_Datatype rt, MPI_Comm comm, MPI_Request* q)
#define V_ARGS (sb, sc, sd, st, rb, rc, rd, rt, comm, q)
#define W_PARAMS                                                                           \
  (const void* sb, const int sc[], const MPI_Aint sd[], const MPI_Datatype st[], void* rb, \
   const int rc[], const MPI_Aint rd[], const MPI_Datatype rt[], MPI_Comm comm, MPI_Request* q)
#define W_ARGS (sb, sc, sd, st, rb, rc, rd, rt, comm, q)
#define IW_PARAMS                                                                     \
  (const void* sb, const int sc[], const int sd[], const MPI_Datatype st[], void* rb, \
   const int rc[], const int rd[], const MPI_Datatype rt[], MPI_Comm comm, MPI_Request* q)
#define IWI_PARAMS                                                                        \
  (const void* sb, const int sc[], const int sd[], const MPI_Datatype st[], void* rb,     \
   const int rc[], const int rd[], const MPI_Datatype rt[], MPI_Comm comm, MPI_Info info, \
   MPI_Request* q)
#define AI_PARAMS                                                                             \
  (const void* sb, int sc, MPI_Datatype st, void* rb, int rc, MPI_Datatype rt, MPI_Comm comm, \
   MPI_Info info, MPI_Request* q)
#define AI_ARGS (sb, sc, st, rb, rc, rt, comm, info, q)
#define VI_PARAMS                                                                             \
  (const void* sb, const int sc[], const int sd[], MPI_Datatype st, void* rb, const int rc[], \
   const int rd[], MPI_Datatype rt, MPI_Comm comm, MPI_Info info, MPI_Request* q)
#define VI_ARGS (sb, sc, sd, st, rb, rc, rd, rt, comm, info, q)
#define WI_PARAMS                                                                              \
  (const void* sb, const int sc[], const MPI_Aint sd[], const MPI_Datatype st[], void* rb,     \
   const int rc[], const MPI_Aint rd[], const MPI_Datatype rt[], MPI_Comm comm, MPI_Info info, \
   MPI_Request* q)
#define WI_ARGS (sb, sc, sd, st, rb, rc, rd, rt, comm, info, q)

SHIM(nonblocking, MPI_Ialltoall, A_PARAMS, A_ARGS)
SHIM(nonblocking, PMPI_Ialltoall, A_PARAMS, A_ARGS)
SHIM(nonblocking, MPI_Ialltoallv, V_PARAMS, V_ARGS)
SHIM(nonblocking, PMPI_Ialltoallv, V_PARAMS, V_ARGS)
SHIM(nonblocking, MPI_Ialltoallw, IW_PARAMS, W_ARGS)
SHIM(nonblocking, PMPI_Ialltoallw, IW_PARAMS, W_ARGS)
SHIM(nonblocking, MPI_Ineighbor_alltoall, A_PARAMS, A_ARGS)
SHIM(nonblocking, PMPI_Ineighbor_alltoall, A_PARAMS, A_ARGS)
SHIM(nonblocking, MPI_Ineighbor_alltoallv, V_PARAMS, V_ARGS)
SHIM(nonblocking, PMPI_Ineighbor_alltoallv, V_PARAMS, V_ARGS)
SHIM(nonblocking, MPI_Ineighbor_alltoallw, W_PARAMS, W_ARGS)
SHIM(nonblocking, PMPI_Ineighbor_alltoallw, W_PARAMS, W_ARGS)
/* Open MPI 5: MPI-4's persistent collectives, standard names, under an MPI-3.1 mpi.h. */
#if MPI_VERSION >= 4 || \
    (defined(OPEN_MPI) && defined(OMPI_MAJOR_VERSION) && OMPI_MAJOR_VERSION >= 5)
#define INIT(name) MPI_##name
#define PINIT(name) PMPI_##name
#else
#define INIT(name) MPIX_##name
#define PINIT(name) PMPIX_##name
#endif
#if MPI_VERSION >= 4 ||                                                              \
    (defined(OPEN_MPI) && defined(OMPI_MAJOR_VERSION) && OMPI_MAJOR_VERSION >= 5) || \
    (defined(OMPI_HAVE_MPI_EXT_PCOLLREQ) && OMPI_HAVE_MPI_EXT_PCOLLREQ)
SHIM(persistent, INIT(Alltoall_init), AI_PARAMS, AI_ARGS)
SHIM(persistent, PINIT(Alltoall_init), AI_PARAMS, AI_ARGS)
SHIM(persistent, INIT(Alltoallv_init), VI_PARAMS, VI_ARGS)
SHIM(persistent, PINIT(Alltoallv_init), VI_PARAMS, VI_ARGS)
SHIM(persistent, INIT(Alltoallw_init), IWI_PARAMS, WI_ARGS)
SHIM(persistent, PINIT(Alltoallw_init), IWI_PARAMS, WI_ARGS)
SHIM(persistent, INIT(Neighbor_alltoall_init), AI_PARAMS, AI_ARGS)
SHIM(persistent, PINIT(Neighbor_alltoall_init), AI_PARAMS, AI_ARGS)
SHIM(persistent, INIT(Neighbor_alltoallv_init), VI_PARAMS, VI_ARGS)
SHIM(persistent, PINIT(Neighbor_alltoallv_init), VI_PARAMS, VI_ARGS)
SHIM(persistent, INIT(Neighbor_alltoallw_init), WI_PARAMS, WI_ARGS)
SHIM(persistent, PINIT(Neighbor_alltoallw_init), WI_PARAMS, WI_ARGS)
#endif

/* Printed once, by MPI_Finalize (C) or PMPI_Finalize (what Open MPI's Fortran MPI_FINALIZE calls).
 */
static int finalize(void) {
  static int (*next)(void);
  if (!next) next = (int (*)(void))dlsym(RTLD_NEXT, "PMPI_Finalize");
  int rank = 0;
  PMPI_Comm_rank(MPI_COMM_WORLD, &rank);
  printf(
      "count_shim: rank %d: %ld nonblocking, %ld persistent all-to-alls reached the MPI library\n",
      rank, nonblocking, persistent);
  fflush(stdout);
  return next();
}
int MPI_Finalize(void) { return finalize(); }
int PMPI_Finalize(void) { return finalize(); }
