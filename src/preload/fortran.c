/* The drop-in library's Fortran entry points (see preload.hpp): what an unmodified Fortran
 * program's MPI_Alltoall, MPI_Alltoallv, MPI_Neighbor_alltoall, MPI_Neighbor_alltoallv and
 * MPI_Neighbor_alltoallw calls, in the spellings of the Fortran bindings of the MPI this file is
 * compiled against. Each converts the handles (MPI_Comm_f2c, MPI_Type_f2c: alltoallw's type
 * arrays element by element), the Fortran MPI_IN_PLACE and MPI_BOTTOM (addresses of Fortran
 * variables) to the C ones, and the INTEGER arrays when MPI_Fint is not int (alltoallw's
 * INTEGER(KIND=MPI_ADDRESS_KIND) displacements are MPI_Aint already), then runs the dispatcher
 * of preload.cpp and stores its return code in ierror when there is one.
 *
 * Open MPI 4.1 (ompi/mpi/fortran/mpif-h/alltoall_f.c & co., use-mpi-f08/alltoall_f08.F90):
 *   - mpif.h and `use mpi` (ignore-TKR module) call mpi_alltoall_ (also exported as
 *     mpi_alltoall, mpi_alltoall__, MPI_ALLTOALL), which call PMPI_Alltoall: a C-only
 *     interposer never sees them. Arguments: buffers as addresses, every other argument an
 *     INTEGER by reference, ierr last.
 *   - `use mpi_f08` calls mpi_alltoall_f08_ (the subroutine MPI_Alltoall_f08, not bind(C)),
 *     which calls the mpif.h routine's C body directly. Its buffers are ignore-TKR dummies (this
 *     build: "Fort mpi_f08 subarrays: no"), so they arrive as plain addresses; TYPE(MPI_Comm)
 *     and TYPE(MPI_Datatype) are bind(C) types of one INTEGER (MPI_VAL), so they arrive as an
 *     MPI_Fint*; the OPTIONAL ierror arrives as NULL when absent. The same argument list as the
 *     mpif.h routine, then.
 *   - MPI_IN_PLACE and MPI_BOTTOM: the common blocks mpi_fortran_in_place_ and
 *     mpi_fortran_bottom_ (base/gen-mpi-mangling.pl; OMPI_IS_FORTRAN_IN_PLACE(addr) is
 *     addr == &mpi_fortran_in_place_); the mpi_f08 module's MPI_IN_PLACE is
 *     `integer, bind(C, name="mpi_fortran_in_place_")`, the same symbol.
 *   Not intercepted: the large-count and persistent forms, and MPI_Alltoall_f / _f08 (C-cased
 *   aliases of the same routine that gfortran-compiled code never calls).
 *
 * MPICH 4.0 (maint/local_python/binding_f77.py and binding_f08.py generate its wrappers):
 *   - mpif.h and `use mpi` call mpi_alltoall_ & co. (libmpichfort), which call the C
 *     MPI_Alltoall, so preload.cpp already sees them; they are defined here as well so that the
 *     interception does not depend on that. MPI_IN_PLACE and MPI_BOTTOM: the addresses held by
 *     MPIR_F_MPI_IN_PLACE / MPIR_F_MPI_BOTTOM, set by mpirinitf_() when MPIR_F_NeedInit (as
 *     MPICH's own wrappers do). These live in libmpichfort, absent from C programs: weak
 *     references (a C program never calls these entry points).
 *   - `use mpi_f08` calls mpi_alltoall_f08ts_ (TS 29113, non-bind(C): gfortran's own array
 *     descriptors), which builds a CFI descriptor, maps MPIR_F08_MPI_IN_PLACE / _BOTTOM, makes
 *     a derived datatype for a non-contiguous buffer, and calls the C MPI_Alltoall through the
 *     PLT (MPIR_Alltoall_cdesc): preload.cpp's MPI_Alltoall receives it, already converted.
 *     Not defined here: decoding gfortran's private descriptor layout would only duplicate
 *     that, less robustly.
 *
 * The file is compiled against one MPI (OPEN_MPI or MPICH from mpi.h) and defines only the
 * symbols of that MPI's Fortran bindings; with any other MPI it defines nothing. */
#include "preload/preload.hpp"
#include "util/topo_degrees.h"

#include <mpi.h>
#include <stddef.h>
#include <stdlib.h>

#if defined(OPEN_MPI) || defined(MPICH)

#define MPIA_FORTRAN_EXPORT __attribute__((visibility("default")))

/* --- the Fortran sentinels ---------------------------------------------------------------- */

#if defined(OPEN_MPI)
/* Defined by libmpi (when Open MPI was built with Fortran); weak, so that a build without
 * Fortran still loads. */
extern int mpi_fortran_in_place_ __attribute__((weak));
extern int mpi_fortran_bottom_ __attribute__((weak));

static int is_fortran_in_place(const void* buf) {
  return &mpi_fortran_in_place_ != NULL && buf == (const void*)&mpi_fortran_in_place_;
}
static int is_fortran_bottom(const void* buf) {
  return &mpi_fortran_bottom_ != NULL && buf == (const void*)&mpi_fortran_bottom_;
}
#else /* MPICH */
extern void* MPIR_F_MPI_IN_PLACE __attribute__((weak));
extern void* MPIR_F_MPI_BOTTOM __attribute__((weak));
extern int MPIR_F_NeedInit __attribute__((weak));
extern void mpirinitf_(void) __attribute__((weak));

/* As every MPICH Fortran wrapper starts: learn the addresses of the Fortran constants. */
static void fortran_init(void) {
  if (&MPIR_F_NeedInit != NULL && MPIR_F_NeedInit && mpirinitf_ != NULL) {
    mpirinitf_();
    MPIR_F_NeedInit = 0;
  }
}
static int is_fortran_in_place(const void* buf) {
  fortran_init();
  return &MPIR_F_MPI_IN_PLACE != NULL && MPIR_F_MPI_IN_PLACE != NULL && buf == MPIR_F_MPI_IN_PLACE;
}
static int is_fortran_bottom(const void* buf) {
  fortran_init();
  return &MPIR_F_MPI_BOTTOM != NULL && MPIR_F_MPI_BOTTOM != NULL && buf == MPIR_F_MPI_BOTTOM;
}
#endif

/* A send buffer (MPI_IN_PLACE or MPI_BOTTOM), a receive buffer (MPI_BOTTOM). */
static const void* send_buffer(const void* buf) {
  if (is_fortran_in_place(buf)) return MPI_IN_PLACE;
  if (is_fortran_bottom(buf)) return MPI_BOTTOM;
  return buf;
}
static void* recv_buffer(void* buf) { return is_fortran_bottom(buf) ? MPI_BOTTOM : buf; }

static void set_ierr(MPI_Fint* ierr, int rc) {
  if (ierr) *ierr = (MPI_Fint)rc;
}

/* --- INTEGER arrays ------------------------------------------------------------------------
 * Where MPI_Fint is int (every MPI built with the default INTEGER), the Fortran array is passed
 * as it is. Otherwise it is copied into ints, n of them (n < 0: unknown, left as it is, so that
 * the MPI library reports the bad communicator). */
typedef struct {
  int* owned[4];
  int n;
} Arrays;

static const int* c_ints(Arrays* a, const MPI_Fint* f, int n) {
  if (sizeof(MPI_Fint) == sizeof(int) || f == NULL || n < 0) return (const int*)f;
  int* c = (int*)malloc(sizeof(int) * (size_t)(n > 0 ? n : 1));
  if (c == NULL) return (const int*)f;
  for (int i = 0; i < n; ++i) c[i] = (int)f[i];
  a->owned[a->n++] = c;
  return c;
}
static void free_arrays(Arrays* a) {
  for (int i = 0; i < a->n; ++i) free(a->owned[i]);
}

/* Length of an alltoallv array: the (remote) group size. */
static int group_size(MPI_Comm comm) {
  int inter = 0, n = -1;
  if (comm == MPI_COMM_NULL || PMPI_Comm_test_inter(comm, &inter) != MPI_SUCCESS) return -1;
  if ((inter ? PMPI_Comm_remote_size(comm, &n) : PMPI_Comm_size(comm, &n)) != MPI_SUCCESS)
    return -1;
  return n;
}

/* --- the collectives ------------------------------------------------------------------ */

static void f_alltoall(void* sendbuf, MPI_Fint* sendcount, MPI_Fint* sendtype, void* recvbuf,
                       MPI_Fint* recvcount, MPI_Fint* recvtype, MPI_Fint* comm, MPI_Fint* ierr) {
  set_ierr(ierr,
           mpia_preload_alltoall(send_buffer(sendbuf), (int)*sendcount, MPI_Type_f2c(*sendtype),
                                 recv_buffer(recvbuf), (int)*recvcount, MPI_Type_f2c(*recvtype),
                                 MPI_Comm_f2c(*comm)));
}

static void f_alltoallv(void* sendbuf, MPI_Fint* sendcounts, MPI_Fint* sdispls, MPI_Fint* sendtype,
                        void* recvbuf, MPI_Fint* recvcounts, MPI_Fint* rdispls, MPI_Fint* recvtype,
                        MPI_Fint* comm, MPI_Fint* ierr) {
  const MPI_Comm c_comm = MPI_Comm_f2c(*comm);
  const void* c_sendbuf = send_buffer(sendbuf);
  Arrays a = {{NULL}, 0};
  const int n = sizeof(MPI_Fint) == sizeof(int) ? 0 : group_size(c_comm);
  const int in_place = c_sendbuf == MPI_IN_PLACE; /* the send arrays are ignored */
  const int* sc = in_place ? (const int*)sendcounts : c_ints(&a, sendcounts, n);
  const int* sd = in_place ? (const int*)sdispls : c_ints(&a, sdispls, n);
  const int* rc = c_ints(&a, recvcounts, n);
  const int* rd = c_ints(&a, rdispls, n);
  set_ierr(ierr,
           mpia_preload_alltoallv(c_sendbuf, sc, sd, MPI_Type_f2c(*sendtype), recv_buffer(recvbuf),
                                  rc, rd, MPI_Type_f2c(*recvtype), c_comm));
  free_arrays(&a);
}

static void f_neighbor_alltoall(void* sendbuf, MPI_Fint* sendcount, MPI_Fint* sendtype,
                                void* recvbuf, MPI_Fint* recvcount, MPI_Fint* recvtype,
                                MPI_Fint* comm, MPI_Fint* ierr) {
  set_ierr(ierr, mpia_preload_neighbor_alltoall(send_buffer(sendbuf), (int)*sendcount,
                                                MPI_Type_f2c(*sendtype), recv_buffer(recvbuf),
                                                (int)*recvcount, MPI_Type_f2c(*recvtype),
                                                MPI_Comm_f2c(*comm)));
}

static void f_neighbor_alltoallv(void* sendbuf, MPI_Fint* sendcounts, MPI_Fint* sdispls,
                                 MPI_Fint* sendtype, void* recvbuf, MPI_Fint* recvcounts,
                                 MPI_Fint* rdispls, MPI_Fint* recvtype, MPI_Fint* comm,
                                 MPI_Fint* ierr) {
  const MPI_Comm c_comm = MPI_Comm_f2c(*comm);
  Arrays a = {{NULL}, 0};
  int in = 0, out = 0;
  if (sizeof(MPI_Fint) != sizeof(int)) mpia_topo_degrees(c_comm, &in, &out);
  const int* sc = c_ints(&a, sendcounts, out);
  const int* sd = c_ints(&a, sdispls, out);
  const int* rc = c_ints(&a, recvcounts, in);
  const int* rd = c_ints(&a, rdispls, in);
  set_ierr(ierr, mpia_preload_neighbor_alltoallv(send_buffer(sendbuf), sc, sd,
                                                 MPI_Type_f2c(*sendtype), recv_buffer(recvbuf), rc,
                                                 rd, MPI_Type_f2c(*recvtype), c_comm));
  free_arrays(&a);
}

static void f_neighbor_alltoallw(void* sendbuf, MPI_Fint* sendcounts, MPI_Aint* sdispls,
                                 MPI_Fint* sendtypes, void* recvbuf, MPI_Fint* recvcounts,
                                 MPI_Aint* rdispls, MPI_Fint* recvtypes, MPI_Fint* comm,
                                 MPI_Fint* ierr) {
  const MPI_Comm c_comm = MPI_Comm_f2c(*comm);
  Arrays a = {{NULL}, 0};
  int in = 0, out = 0;
  mpia_topo_degrees(c_comm, &in, &out);
  const int* sc = c_ints(&a, sendcounts, out);
  const int* rc = c_ints(&a, recvcounts, in);
  /* The datatype handles, always converted (n < 0: no topology, the library reports it). */
  MPI_Datatype* st = malloc(sizeof(MPI_Datatype) * (size_t)(out > 0 ? out : 1));
  MPI_Datatype* rt = malloc(sizeof(MPI_Datatype) * (size_t)(in > 0 ? in : 1));
  int rc_ = MPI_ERR_NO_MEM;
  if (st && rt) {
    for (int i = 0; i < out; ++i) st[i] = MPI_Type_f2c(sendtypes[i]);
    for (int i = 0; i < in; ++i) rt[i] = MPI_Type_f2c(recvtypes[i]);
    rc_ = mpia_preload_neighbor_alltoallw(send_buffer(sendbuf), sc, sdispls, st,
                                          recv_buffer(recvbuf), rc, rdispls, rt, c_comm);
  }
  set_ierr(ierr, rc_);
  free(st);
  free(rt);
  free_arrays(&a);
}

/* --- the exported spellings ----------------------------------------------------------------
 * Plain (not weak) definitions with default visibility: loaded first, they are what the
 * program's calls bind to. Both MPIs export these four manglings of the mpif.h / `use mpi`
 * routine (gfortran uses the single underscore). */
#define MPIA_A2A_PARAMS                                                                        \
  (void* sendbuf, MPI_Fint* sendcount, MPI_Fint* sendtype, void* recvbuf, MPI_Fint* recvcount, \
   MPI_Fint* recvtype, MPI_Fint* comm, MPI_Fint* ierr)
#define MPIA_A2A_ARGS (sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype, comm, ierr)
#define MPIA_A2AV_PARAMS                                                                      \
  (void* sendbuf, MPI_Fint* sendcounts, MPI_Fint* sdispls, MPI_Fint* sendtype, void* recvbuf, \
   MPI_Fint* recvcounts, MPI_Fint* rdispls, MPI_Fint* recvtype, MPI_Fint* comm, MPI_Fint* ierr)
#define MPIA_A2AV_ARGS \
  (sendbuf, sendcounts, sdispls, sendtype, recvbuf, recvcounts, rdispls, recvtype, comm, ierr)
#define MPIA_A2AW_PARAMS                                                                       \
  (void* sendbuf, MPI_Fint* sendcounts, MPI_Aint* sdispls, MPI_Fint* sendtypes, void* recvbuf, \
   MPI_Fint* recvcounts, MPI_Aint* rdispls, MPI_Fint* recvtypes, MPI_Fint* comm, MPI_Fint* ierr)
#define MPIA_A2AW_ARGS \
  (sendbuf, sendcounts, sdispls, sendtypes, recvbuf, recvcounts, rdispls, recvtypes, comm, ierr)

/* params and args come parenthesized. */
#define MPIA_FORTRAN_ENTRY(name, impl, params, args) \
  MPIA_FORTRAN_EXPORT void name params;              \
  MPIA_FORTRAN_EXPORT void name params { impl args; }

#define MPIA_FORTRAN_MANGLINGS(lower, upper, impl, params, args) \
  MPIA_FORTRAN_ENTRY(lower, impl, params, args)                  \
  MPIA_FORTRAN_ENTRY(lower##_, impl, params, args)               \
  MPIA_FORTRAN_ENTRY(lower##__, impl, params, args)              \
  MPIA_FORTRAN_ENTRY(upper, impl, params, args)

MPIA_FORTRAN_MANGLINGS(mpi_alltoall, MPI_ALLTOALL, f_alltoall, MPIA_A2A_PARAMS, MPIA_A2A_ARGS)
MPIA_FORTRAN_MANGLINGS(mpi_alltoallv, MPI_ALLTOALLV, f_alltoallv, MPIA_A2AV_PARAMS, MPIA_A2AV_ARGS)
MPIA_FORTRAN_MANGLINGS(mpi_neighbor_alltoall, MPI_NEIGHBOR_ALLTOALL, f_neighbor_alltoall,
                       MPIA_A2A_PARAMS, MPIA_A2A_ARGS)
MPIA_FORTRAN_MANGLINGS(mpi_neighbor_alltoallv, MPI_NEIGHBOR_ALLTOALLV, f_neighbor_alltoallv,
                       MPIA_A2AV_PARAMS, MPIA_A2AV_ARGS)
MPIA_FORTRAN_MANGLINGS(mpi_neighbor_alltoallw, MPI_NEIGHBOR_ALLTOALLW, f_neighbor_alltoallw,
                       MPIA_A2AW_PARAMS, MPIA_A2AW_ARGS)

#if defined(OPEN_MPI)
/* `use mpi_f08`: the same arguments (see the top of the file); ierror may be NULL. */
MPIA_FORTRAN_ENTRY(mpi_alltoall_f08_, f_alltoall, MPIA_A2A_PARAMS, MPIA_A2A_ARGS)
MPIA_FORTRAN_ENTRY(mpi_alltoallv_f08_, f_alltoallv, MPIA_A2AV_PARAMS, MPIA_A2AV_ARGS)
MPIA_FORTRAN_ENTRY(mpi_neighbor_alltoall_f08_, f_neighbor_alltoall, MPIA_A2A_PARAMS, MPIA_A2A_ARGS)
MPIA_FORTRAN_ENTRY(mpi_neighbor_alltoallv_f08_, f_neighbor_alltoallv, MPIA_A2AV_PARAMS,
                   MPIA_A2AV_ARGS)
MPIA_FORTRAN_ENTRY(mpi_neighbor_alltoallw_f08_, f_neighbor_alltoallw, MPIA_A2AW_PARAMS,
                   MPIA_A2AW_ARGS)
#endif

#endif /* OPEN_MPI || MPICH */
