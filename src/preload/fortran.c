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
 *   - The nonblocking calls (mpi_ialltoall_ & co., mpi_ialltoall_f08_ & co.) and the pcollreq
 *     extension's persistent inits (mpix_alltoall_init_ & co. from `use mpi_ext`, and
 *     mpix_alltoall_init_f08_ & co. from `use mpi_f08_ext`; the same arguments plus info and
 *     request) call PMPI_Ialltoall / PMPIX_Alltoall_init likewise; so do the request calls
 *     (mpi_wait_, mpi_waitall_, ..., mpi_cancel_, and their _f08_ forms): a Fortran MPI_WAIT
 *     never reaches a C MPI_Wait. All are defined here, each calling the C function of its
 *     name (MPI_Ialltoall, MPIX_Alltoall_init, MPI_Wait, ...), so that a Fortran program's
 *     nonblocking and persistent all-to-alls and the calls that complete them get what C gets.
 *   Not intercepted: the large-count forms, and MPI_Alltoall_f / _f08 (C-cased aliases of the
 *   same routine that gfortran-compiled code never calls).
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
 *     that, less robustly. The same holds for mpi_ialltoall_f08ts_ & co. and the MPI-4
 *     persistent mpi_alltoall_init_f08ts_ & co. Not for the request calls: mpi_wait_f08_ &
 *     co. (plain Fortran, the mpif.h routine's arguments) call PMPI_Wait & co., so they are
 *     defined here (see fortran_requests.inc).
 *   - mpif.h and `use mpi` call mpi_ialltoall_, mpi_alltoall_init_ (MPI-4's persistent
 *     collectives) and mpi_wait_ & co., which call the C functions too; defined here for the
 *     same reason as the blocking ones.
 *
 * Request calls: the requests (arrays element by element, through a C array and back: a
 * completed request comes back as the Fortran MPI_REQUEST_NULL), statuses (MPI_Status_f2c /
 * c2f layout; MPI_F_STATUS(ES)_IGNORE), 1-based indices (MPI_UNDEFINED stays) and LOGICAL flags
 * (F_TRUE below) are converted.
 *
 * The file is compiled against one MPI (OPEN_MPI or MPICH from mpi.h) and defines only the
 * symbols of that MPI's Fortran bindings; with any other MPI it defines nothing. */
#include "preload/preload.hpp"
#include "preload/topo_degrees.h"

#include <mpi.h>
#include <pthread.h>
#include <stddef.h>
#include <stdlib.h>

#if defined(OPEN_MPI) && defined(__has_include)
#if __has_include(<mpi-ext.h>)
#include <mpi-ext.h>
#endif
#endif

#if defined(OPEN_MPI) || defined(MPICH)

/* The persistent collectives: Open MPI 4.1's pcollreq extension (MPIX_, <mpi-ext.h>), MPI-4's
 * own (MPICH 4). */
#if defined(OPEN_MPI) && defined(OMPI_HAVE_MPI_EXT_PCOLLREQ) && OMPI_HAVE_MPI_EXT_PCOLLREQ
#define MPIA_FORTRAN_PERSISTENT 1
#define MPIA_FORTRAN_PERSISTENT_MPIX 1
#elif (defined(MPICH) && MPI_VERSION >= 4) || \
    (defined(OPEN_MPI) && defined(OMPI_MAJOR_VERSION) && OMPI_MAJOR_VERSION >= 5)
/* Open MPI 5: MPI-4's names (its mpi.h says MPI 3.1; the extension is gone). */
#define MPIA_FORTRAN_PERSISTENT 1
#define MPIA_FORTRAN_PERSISTENT_MPIX 0
#else
#define MPIA_FORTRAN_PERSISTENT 0
#define MPIA_FORTRAN_PERSISTENT_MPIX 0
#endif

/* MPICH 4's mpi_f08 request calls (mpi_wait_f08_ & co.) call PMPI_Wait & co.: defined here. */
#if defined(MPICH) && MPI_VERSION >= 4
#define MPIA_MPICH_F08_REQUESTS 1
#else
#define MPIA_MPICH_F08_REQUESTS 0
#endif

/* Fortran LOGICAL values, as the MPI's own Fortran bindings write them. Open MPI 4.1:
 * OMPI_INT_2_LOGICAL(a) is 0 or OMPI_FORTRAN_VALUE_TRUE, which configure takes from the Fortran
 * compiler: 1 with gfortran (`ompi_info --all`: "Fort logical value true: 1"). MPICH 4.0:
 * MPII_TO_FLOG(a) is MPII_F_TRUE or MPII_F_FALSE, the configure-time literals F77_TRUE_VALUE /
 * F77_FALSE_VALUE (mpi_fortlogical.h; no longer the run-time MPIR_F_TRUE variables of older
 * MPICH): 1 and 0 with gfortran. Both checked by calling each MPI's mpi_test_ on a completed
 * request: it wrote 1. */
#define F_TRUE 1
#define F_FALSE 0

/* INTEGERs per Fortran status (MPI_STATUS_SIZE): MPICH's mpi.h says; Open MPI 4.1's
 * MPI_STATUS_SIZE is sizeof(MPI_Status) / sizeof(int) (6), which its own bindings use. */
#if defined(MPI_F_STATUS_SIZE)
#define F_STATUS_SIZE MPI_F_STATUS_SIZE
#else
#define F_STATUS_SIZE (sizeof(MPI_Status) / sizeof(int))
#endif

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

/* --- requests kept alive ------------------------------------------------------------------
 * What a nonblocking or persistent call's C arguments point to must outlive the call: the
 * converted datatype arrays of alltoallw (MPI_Datatype is a pointer in Open MPI) and the int
 * copies of INTEGER arrays (only where MPI_Fint is not int). Open MPI's own Fortran binding
 * (ineighbor_alltoallw_f.c) hangs them on its request; here they are kept in a list under the C
 * request and freed when a Fortran request call of this file returns that request as
 * MPI_REQUEST_NULL (completed, or freed by MPI_Request_free), or when its handle is reused (the
 * request was completed some other way, from C). */
typedef struct Kept {
  MPI_Request request;
  void* memory[6];
  struct Kept* next;
} Kept;
static Kept* kept;
static pthread_mutex_t kept_lock = PTHREAD_MUTEX_INITIALIZER;

static void free_kept(Kept* k) {
  for (int i = 0; i < 6; ++i) free(k->memory[i]);
  free(k);
}

/* Unlinks and frees what is kept under request (none: nothing). Called with kept_lock held. */
static void release_locked(MPI_Request request) {
  for (Kept** p = &kept; *p;) {
    if ((*p)->request == request) {
      Kept* k = *p;
      *p = k->next;
      free_kept(k);
    } else {
      p = &(*p)->next;
    }
  }
}

/* Keeps the n (<= 6, some NULL) allocations until request is done with; frees them now when
 * the call failed (request is MPI_REQUEST_NULL) or there is nothing to keep. */
static void keep(MPI_Request request, void* const* memory, int n) {
  int any = 0;
  for (int i = 0; i < n; ++i) any |= memory[i] != NULL;
  if (!any) return;
  Kept* k = request == MPI_REQUEST_NULL ? NULL : calloc(1, sizeof(Kept));
  if (k == NULL) { /* freed now: the MPI library has read them (or the call failed) */
    for (int i = 0; i < n; ++i) free(memory[i]);
    return;
  }
  k->request = request;
  for (int i = 0; i < n; ++i) k->memory[i] = memory[i];
  pthread_mutex_lock(&kept_lock);
  release_locked(request);
  k->next = kept;
  kept = k;
  pthread_mutex_unlock(&kept_lock);
}

/* After a request call: before[i] (the C handles passed) that came back as MPI_REQUEST_NULL in
 * after[i] are done with. */
static void release_done(const MPI_Request* before, const MPI_Request* after, int n) {
  if (__atomic_load_n(&kept, __ATOMIC_RELAXED) == NULL) return;
  pthread_mutex_lock(&kept_lock);
  for (int i = 0; i < n; ++i)
    if (before[i] != MPI_REQUEST_NULL && after[i] == MPI_REQUEST_NULL) release_locked(before[i]);
  pthread_mutex_unlock(&kept_lock);
}

static void set_request(MPI_Fint* request, MPI_Request r) { *request = MPI_Request_c2f(r); }

/* --- the collectives' arguments ------------------------------------------------------------
 * Every entry point of a collective (fortran_forms.inc, generated from src/bindings/calls.txt:
 * the int forms, blocking, nonblocking and persistent) converts its arguments into an FCall,
 * runs preload.cpp's dispatcher of its form, and stores the code in ierror; a nonblocking or
 * persistent one keeps what its C arguments point to with its request (keep, above). */
typedef struct {
  MPI_Comm comm;
  const void* sendbuf;
  void* recvbuf;
  MPI_Datatype sendtype, recvtype;                        /* regular and v */
  const int *sendcounts, *sdispls, *recvcounts, *rdispls; /* v and w (int displacements) */
  MPI_Datatype *sendtypes, *recvtypes;                    /* w: converted, owned */
  Arrays arrays;                                          /* int copies, owned */
  int code;
} FCall;

static void f_regular(FCall* a, void* sendbuf, MPI_Fint* sendtype, void* recvbuf,
                      MPI_Fint* recvtype, MPI_Fint* comm) {
  const FCall none = {0};
  *a = none;
  a->comm = MPI_Comm_f2c(*comm);
  a->sendbuf = send_buffer(sendbuf);
  a->recvbuf = recv_buffer(recvbuf);
  a->sendtype = MPI_Type_f2c(*sendtype);
  a->recvtype = MPI_Type_f2c(*recvtype);
}

/* n Fortran datatype handles as C ones (n < 0: none, the library reports the communicator). */
static MPI_Datatype* c_types(const MPI_Fint* f, int n, int* code) {
  MPI_Datatype* t = malloc(sizeof(MPI_Datatype) * (size_t)(n > 0 ? n : 1));
  if (t == NULL) {
    *code = MPI_ERR_NO_MEM;
    return NULL;
  }
  for (int i = 0; i < n; ++i) t[i] = MPI_Type_f2c(f[i]);
  return t;
}

/* A v or w call. Its arrays have one entry per rank of the (remote) group, or, for a neighbor
 * call, per out-edge (send) and in-edge (receive) of its topology. Passed as they are where
 * MPI_Fint is int, else copied into ints; sdispls / rdispls NULL: MPI_Aint displacements, which
 * the entry point passes itself. A w call's datatypes are converted. Under MPI_IN_PLACE the send
 * arrays and types of a (non-neighbor) call are ignored, as MPI says. */
static void f_blocks(FCall* a, int neighbor, int w, void* sendbuf, MPI_Fint* sendcounts,
                     MPI_Fint* sdispls, MPI_Fint* sendtype, void* recvbuf, MPI_Fint* recvcounts,
                     MPI_Fint* rdispls, MPI_Fint* recvtype, MPI_Fint* comm) {
  const FCall none = {0};
  *a = none;
  a->comm = MPI_Comm_f2c(*comm);
  a->sendbuf = send_buffer(sendbuf);
  a->recvbuf = recv_buffer(recvbuf);
  int nsend = 0, nrecv = 0;
  if (w || sizeof(MPI_Fint) != sizeof(int)) {
    if (neighbor)
      mpia_topo_degrees(a->comm, &nrecv, &nsend);
    else
      nsend = nrecv = group_size(a->comm);
  }
  const int in_place = !neighbor && a->sendbuf == MPI_IN_PLACE;
  a->sendcounts = in_place ? (const int*)sendcounts : c_ints(&a->arrays, sendcounts, nsend);
  if (sdispls) a->sdispls = in_place ? (const int*)sdispls : c_ints(&a->arrays, sdispls, nsend);
  a->recvcounts = c_ints(&a->arrays, recvcounts, nrecv);
  if (rdispls) a->rdispls = c_ints(&a->arrays, rdispls, nrecv);
  if (!w) {
    a->sendtype = MPI_Type_f2c(*sendtype);
    a->recvtype = MPI_Type_f2c(*recvtype);
    return;
  }
  if (!in_place) a->sendtypes = c_types(sendtype, nsend, &a->code);
  a->recvtypes = c_types(recvtype, nrecv, &a->code);
}

/* A blocking call's end: ierror, and what the conversions owned freed. */
static void f_end(FCall* a, MPI_Fint* ierr) {
  set_ierr(ierr, a->code);
  free(a->sendtypes);
  free(a->recvtypes);
  free_arrays(&a->arrays);
}

/* A nonblocking or persistent call's end: the request as a Fortran handle (MPI_REQUEST_NULL when
 * the call failed), ierror, and what the conversions owned kept with the request. */
static void f_end_request(FCall* a, MPI_Request r, MPI_Fint* request, MPI_Fint* ierr) {
  void* memory[6] = {a->sendtypes, a->recvtypes, NULL, NULL, NULL, NULL};
  for (int i = 0; i < a->arrays.n; ++i) memory[2 + i] = a->arrays.owned[i];
  keep(r, memory, 6);
  set_request(request, r);
  set_ierr(ierr, a->code);
}

/* --- the request calls ----------------------------------------------------------------------
 * Statuses: the Fortran MPI_STATUS_IGNORE / MPI_STATUSES_IGNORE (MPI_F_STATUS_IGNORE /
 * MPI_F_STATUSES_IGNORE, or NULL) become the C ones; any other status is written with
 * MPI_Status_c2f, where the call sets it (a test that returns flag = .false. leaves it as it
 * is). An array of statuses is MPI_STATUS_SIZE INTEGERs per element (f_status_size). Request
 * arrays are converted into a C array and back, element by element, so a request the call
 * completes comes back as the Fortran MPI_REQUEST_NULL. Indices are 1-based in Fortran
 * (MPI_UNDEFINED stays MPI_UNDEFINED), flags are Fortran LOGICALs (F_TRUE / F_FALSE). */

static int status_ignored(const MPI_Fint* f) {
#if defined(MPICH)
  fortran_init(); /* MPI_F_STATUS_IGNORE is set by mpirinitf_ */
#if MPIA_MPICH_F08_REQUESTS
  /* MPI-4's C names of the mpi_f08 MPI_STATUS_IGNORE (MPICH's MPIR_F08_MPI_STATUS_IGNORE_OBJ,
   * which MPICH 4.3's mpi.h no longer declares). */
  if (f == (const MPI_Fint*)MPI_F08_STATUS_IGNORE) return 1;
#endif
#endif
  return f == NULL || f == MPI_F_STATUS_IGNORE;
}
static int statuses_ignored(const MPI_Fint* f) {
#if defined(MPICH)
  fortran_init();
#if MPIA_MPICH_F08_REQUESTS
  if (f == (const MPI_Fint*)MPI_F08_STATUSES_IGNORE || f == (const MPI_Fint*)MPI_F08_STATUS_IGNORE)
    return 1;
#endif
#endif
  return f == NULL || f == MPI_F_STATUSES_IGNORE || f == MPI_F_STATUS_IGNORE;
}
static MPI_Status* c_status(const MPI_Fint* f, MPI_Status* s) {
  return status_ignored(f) ? MPI_STATUS_IGNORE : s;
}
static void f_status(const MPI_Status* s, MPI_Fint* f) {
  if (s != MPI_STATUS_IGNORE) MPI_Status_c2f(s, f);
}
static void set_flag(MPI_Fint* flag, int c_flag) { *flag = c_flag ? F_TRUE : F_FALSE; }
static void set_index(MPI_Fint* index, int c_index) {
  *index = (MPI_Fint)(c_index == MPI_UNDEFINED || c_index < 0 ? c_index : c_index + 1);
}

/* Scratch for n requests: the C handles passed (before), the ones the call works on (after),
 * n statuses unless ignored, n int indices when asked. */
typedef struct {
  MPI_Request* before;
  MPI_Request* after;
  MPI_Status* statuses; /* MPI_STATUSES_IGNORE when ignored */
  int* indices;
  void* memory;
} Requests;

static int requests_in(Requests* q, int n, const MPI_Fint* f, const MPI_Fint* f_statuses,
                       int want_indices) {
  const size_t m = (size_t)(n > 0 ? n : 1);
  const int statuses = !statuses_ignored(f_statuses);
  q->memory = malloc(m * (2 * sizeof(MPI_Request) + (statuses ? sizeof(MPI_Status) : 0) +
                          (want_indices ? sizeof(int) : 0)));
  if (q->memory == NULL) return MPI_ERR_NO_MEM;
  q->statuses = statuses ? (MPI_Status*)q->memory : MPI_STATUSES_IGNORE;
  q->before = (MPI_Request*)((char*)q->memory + (statuses ? m * sizeof(MPI_Status) : 0));
  q->after = q->before + m;
  q->indices = want_indices ? (int*)(q->after + m) : NULL;
  for (int i = 0; i < n; ++i) q->before[i] = q->after[i] = MPI_Request_f2c(f[i]);
  return MPI_SUCCESS;
}

/* The requests back into the Fortran array, and what was kept for completed ones freed. */
static void requests_out(Requests* q, int n, MPI_Fint* f) {
  for (int i = 0; i < n; ++i) f[i] = MPI_Request_c2f(q->after[i]);
  release_done(q->before, q->after, n);
}

/* Status i of a Fortran array of statuses. */
static MPI_Fint* f_status_at(MPI_Fint* f_statuses, int i) {
  return f_statuses + (size_t)i * F_STATUS_SIZE;
}

static void f_wait(MPI_Fint* request, MPI_Fint* status, MPI_Fint* ierr) {
  MPI_Request before = MPI_Request_f2c(*request), r = before;
  MPI_Status s, *cs = c_status(status, &s);
  const int rc = MPI_Wait(&r, cs);
  *request = MPI_Request_c2f(r);
  release_done(&before, &r, 1);
  if (rc == MPI_SUCCESS) f_status(cs, status);
  set_ierr(ierr, rc);
}

static void f_test(MPI_Fint* request, MPI_Fint* flag, MPI_Fint* status, MPI_Fint* ierr) {
  MPI_Request before = MPI_Request_f2c(*request), r = before;
  MPI_Status s, *cs = c_status(status, &s);
  int c_flag = 0;
  const int rc = MPI_Test(&r, &c_flag, cs);
  *request = MPI_Request_c2f(r);
  release_done(&before, &r, 1);
  if (rc == MPI_SUCCESS) {
    set_flag(flag, c_flag);
    if (c_flag) f_status(cs, status);
  }
  set_ierr(ierr, rc);
}

static void f_request_get_status(MPI_Fint* request, MPI_Fint* flag, MPI_Fint* status,
                                 MPI_Fint* ierr) {
  MPI_Status s, *cs = c_status(status, &s);
  int c_flag = 0;
  const int rc = MPI_Request_get_status(MPI_Request_f2c(*request), &c_flag, cs);
  if (rc == MPI_SUCCESS) {
    set_flag(flag, c_flag);
    if (c_flag) f_status(cs, status);
  }
  set_ierr(ierr, rc);
}

/* MPI_ERR_IN_STATUS: the statuses carry the errors, the requests may have changed. */
static int statuses_set(int rc) { return rc == MPI_SUCCESS || rc == MPI_ERR_IN_STATUS; }

/* Waitall (flag NULL) and Testall: every status once all completed. */
static void f_all(MPI_Fint* count, MPI_Fint* requests, MPI_Fint* flag, MPI_Fint* statuses,
                  MPI_Fint* ierr) {
  const int n = (int)*count;
  Requests q;
  int c_flag = 1;
  int rc = requests_in(&q, n, requests, statuses, 0);
  if (rc == MPI_SUCCESS) {
    rc = flag ? MPI_Testall(n, q.after, &c_flag, q.statuses) : MPI_Waitall(n, q.after, q.statuses);
    requests_out(&q, n, requests);
    if (statuses_set(rc) && flag) set_flag(flag, c_flag);
    if (statuses_set(rc) && c_flag && q.statuses != MPI_STATUSES_IGNORE)
      for (int i = 0; i < n; ++i) MPI_Status_c2f(&q.statuses[i], f_status_at(statuses, i));
    free(q.memory);
  }
  set_ierr(ierr, rc);
}
static void f_waitall(MPI_Fint* count, MPI_Fint* requests, MPI_Fint* statuses, MPI_Fint* ierr) {
  f_all(count, requests, NULL, statuses, ierr);
}
static void f_testall(MPI_Fint* count, MPI_Fint* requests, MPI_Fint* flag, MPI_Fint* statuses,
                      MPI_Fint* ierr) {
  f_all(count, requests, flag, statuses, ierr);
}

static void f_waitany(MPI_Fint* count, MPI_Fint* requests, MPI_Fint* index, MPI_Fint* status,
                      MPI_Fint* ierr) {
  const int n = (int)*count;
  Requests q;
  int rc = requests_in(&q, n, requests, NULL, 0);
  if (rc == MPI_SUCCESS) {
    MPI_Status s, *cs = c_status(status, &s);
    int c_index = MPI_UNDEFINED;
    rc = MPI_Waitany(n, q.after, &c_index, cs);
    requests_out(&q, n, requests);
    if (rc == MPI_SUCCESS) {
      set_index(index, c_index);
      f_status(cs, status);
    }
    free(q.memory);
  }
  set_ierr(ierr, rc);
}

static void f_testany(MPI_Fint* count, MPI_Fint* requests, MPI_Fint* index, MPI_Fint* flag,
                      MPI_Fint* status, MPI_Fint* ierr) {
  const int n = (int)*count;
  Requests q;
  int rc = requests_in(&q, n, requests, NULL, 0);
  if (rc == MPI_SUCCESS) {
    MPI_Status s, *cs = c_status(status, &s);
    int c_index = MPI_UNDEFINED, c_flag = 0;
    rc = MPI_Testany(n, q.after, &c_index, &c_flag, cs);
    requests_out(&q, n, requests);
    if (rc == MPI_SUCCESS) {
      set_index(index, c_index);
      set_flag(flag, c_flag);
      if (c_flag) f_status(cs, status);
    }
    free(q.memory);
  }
  set_ierr(ierr, rc);
}

/* Waitsome and Testsome: outcount (MPI_UNDEFINED stays), the first outcount indices (1-based)
 * and statuses. */
static void f_some(int test, MPI_Fint* incount, MPI_Fint* requests, MPI_Fint* outcount,
                   MPI_Fint* indices, MPI_Fint* statuses, MPI_Fint* ierr) {
  const int n = (int)*incount;
  Requests q;
  int rc = requests_in(&q, n, requests, statuses, 1);
  if (rc == MPI_SUCCESS) {
    int out = MPI_UNDEFINED;
    rc = test ? MPI_Testsome(n, q.after, &out, q.indices, q.statuses)
              : MPI_Waitsome(n, q.after, &out, q.indices, q.statuses);
    requests_out(&q, n, requests);
    if (statuses_set(rc)) {
      *outcount = (MPI_Fint)out;
      for (int i = 0; i < out; ++i) {
        indices[i] = (MPI_Fint)(q.indices[i] + 1);
        if (q.statuses != MPI_STATUSES_IGNORE)
          MPI_Status_c2f(&q.statuses[i], f_status_at(statuses, i));
      }
    }
    free(q.memory);
  }
  set_ierr(ierr, rc);
}
static void f_waitsome(MPI_Fint* incount, MPI_Fint* requests, MPI_Fint* outcount, MPI_Fint* indices,
                       MPI_Fint* statuses, MPI_Fint* ierr) {
  f_some(0, incount, requests, outcount, indices, statuses, ierr);
}
static void f_testsome(MPI_Fint* incount, MPI_Fint* requests, MPI_Fint* outcount, MPI_Fint* indices,
                       MPI_Fint* statuses, MPI_Fint* ierr) {
  f_some(1, incount, requests, outcount, indices, statuses, ierr);
}

static void f_start(MPI_Fint* request, MPI_Fint* ierr) {
  MPI_Request r = MPI_Request_f2c(*request);
  const int rc = MPI_Start(&r);
  *request = MPI_Request_c2f(r);
  set_ierr(ierr, rc);
}

static void f_startall(MPI_Fint* count, MPI_Fint* requests, MPI_Fint* ierr) {
  const int n = (int)*count;
  Requests q;
  int rc = requests_in(&q, n, requests, NULL, 0);
  if (rc == MPI_SUCCESS) {
    rc = MPI_Startall(n, q.after);
    requests_out(&q, n, requests);
    free(q.memory);
  }
  set_ierr(ierr, rc);
}

static void f_request_free(MPI_Fint* request, MPI_Fint* ierr) {
  MPI_Request before = MPI_Request_f2c(*request), r = before;
  const int rc = MPI_Request_free(&r);
  *request = MPI_Request_c2f(r);
  /* MPI forbids freeing an active collective request (nonblocking or persistent): a request of
   * ours freed here is done with. */
  if (rc == MPI_SUCCESS) release_done(&before, &r, 1);
  set_ierr(ierr, rc);
}

static void f_cancel(MPI_Fint* request, MPI_Fint* ierr) {
  set_ierr(ierr, MPI_Cancel(&(MPI_Request){MPI_Request_f2c(*request)}));
}

/* --- the exported spellings ----------------------------------------------------------------
 * Plain (not weak) definitions with default visibility: loaded first, they are what the
 * program's calls bind to. Both MPIs export these four manglings of the mpif.h / `use mpi`
 * routine (gfortran uses the single underscore). */
/* params and args come parenthesized. */
#define MPIA_FORTRAN_ENTRY(name, impl, params, args) \
  MPIA_FORTRAN_EXPORT void name params;              \
  MPIA_FORTRAN_EXPORT void name params { impl args; }

#define MPIA_FORTRAN_MANGLINGS(lower, upper, impl, params, args) \
  MPIA_FORTRAN_ENTRY(lower, impl, params, args)                  \
  MPIA_FORTRAN_ENTRY(lower##_, impl, params, args)               \
  MPIA_FORTRAN_ENTRY(lower##__, impl, params, args)              \
  MPIA_FORTRAN_ENTRY(upper, impl, params, args)

/* `use mpi_f08` (Open MPI): mpi_alltoall_f08_ & co., the mpif.h routine's arguments (see the top
 * of the file), ierror may be NULL. MPICH's f08 routines reach the C interposers themselves. */
#if defined(OPEN_MPI)
#define MPIA_F08_ENTRY(name, impl, params, args) MPIA_FORTRAN_ENTRY(name, impl, params, args)
#else
#define MPIA_F08_ENTRY(name, impl, params, args)
#endif

#include "fortran_forms.inc"

/* The request calls (fortran_requests.inc, generated): their mpif.h / `use mpi` manglings, and
 * their `use mpi_f08` entries where the MPI's own do not reach the C interposers.
 *
 * `use mpi_f08`'s request calls: Open MPI's (see the top of the file) and MPICH 4's, plain
 * Fortran subroutines (not bind(C)) with the mpif.h routine's arguments in both: TYPE(MPI_Request)
 * is one INTEGER, arrays are explicit-shape or assumed-size (addresses), flags default LOGICAL,
 * the OPTIONAL ierror NULL when absent. TYPE(MPI_Status) has the layout of C's MPI_Status and of
 * the mpif.h INTEGER status in both (Open MPI: MPI_SOURCE, MPI_TAG, MPI_ERROR, c_cancelled,
 * c_count, 6 INTEGERs, which its own mpi_f08 wrappers pass to the mpif.h bodies as they are;
 * MPICH: MPI_F08_status, count_lo, count_hi_and_cancelled, MPI_SOURCE, MPI_TAG, MPI_ERROR, which
 * its wrappers pass to C as an MPI_Status*), so MPI_Status_c2f writes it. MPI_STATUS(ES)_IGNORE:
 * Open MPI's are bind(C) to mpif.h's common blocks (MPI_F_STATUS(ES)_IGNORE); MPICH's are
 * MPIR_F08_MPI_STATUS(ES)_IGNORE_OBJ, MPI_F08_STATUS(ES)_IGNORE in C (status_ignored() knows
 * both).
 * MPICH: checked with a PMPI shim under `use mpi_f08` programs on MPICH 4.0.2:
 * mpi_ialltoall_f08ts_, mpi_ialltoallv_f08ts_, mpi_ineighbor_alltoallv_f08ts_ and
 * mpi_alltoall_init_f08ts_ reached the shim's C functions, mpi_wait_f08_, mpi_waitall_f08_,
 * mpi_waitany_f08_, mpi_test_f08_, mpi_testall_f08_, mpi_testsome_f08_,
 * mpi_request_get_status_f08_, mpi_startall_f08_ and mpi_request_free_f08_ did not (they call
 * PMPI_Wait & co.; their MPI_Waitany also returned 0-based indices). */
#if defined(OPEN_MPI) || MPIA_MPICH_F08_REQUESTS
#define MPIA_FORTRAN_F08_REQUESTS 1
#else
#define MPIA_FORTRAN_F08_REQUESTS 0
#endif
#include "fortran_requests.inc"

#if defined(OPEN_MPI)
/* MPI_INIT and MPI_INIT_THREAD (mpif.h, `use mpi`, `use mpi_f08`): Open MPI's call PMPI_Init
 * and PMPI_Init_thread, so a C-only MPI_Init never sees them; each runs the MPI library's own
 * Fortran routine of its name (its profiling entry: pmpi_init_ & co.), then
 * mpia_preload_initialized (preload.cpp), as C's MPI_Init does. */
extern void pmpi_init_(MPI_Fint* ierr) __attribute__((weak));
extern void pmpi_init_thread_(MPI_Fint* required, MPI_Fint* provided, MPI_Fint* ierr)
    __attribute__((weak));
extern void pmpi_init_f08_(MPI_Fint* ierr) __attribute__((weak));
extern void pmpi_init_thread_f08_(MPI_Fint* required, MPI_Fint* provided, MPI_Fint* ierr)
    __attribute__((weak));
static void after_init(MPI_Fint* ierr) {
  MPI_Fint rc = MPI_SUCCESS;
  if (!ierr) ierr = &rc;
  *ierr = (MPI_Fint)mpia_preload_initialized((int)*ierr);
}
static void f_init(MPI_Fint* ierr) {
  pmpi_init_(ierr);
  after_init(ierr);
}
static void f_init_thread(MPI_Fint* required, MPI_Fint* provided, MPI_Fint* ierr) {
  pmpi_init_thread_(required, provided, ierr);
  after_init(ierr);
}
static void f_init_f08(MPI_Fint* ierr) {
  MPI_Fint rc = MPI_SUCCESS;
  pmpi_init_f08_(ierr ? ierr : &rc);
  if (ierr)
    after_init(ierr);
  else
    mpia_preload_initialized((int)rc);
}
static void f_init_thread_f08(MPI_Fint* required, MPI_Fint* provided, MPI_Fint* ierr) {
  MPI_Fint rc = MPI_SUCCESS;
  pmpi_init_thread_f08_(required, provided, ierr ? ierr : &rc);
  if (ierr)
    after_init(ierr);
  else
    mpia_preload_initialized((int)rc);
}
#define MPIA_INIT_PARAMS (MPI_Fint * ierr)
#define MPIA_INIT_ARGS (ierr)
#define MPIA_INIT_THREAD_PARAMS (MPI_Fint * required, MPI_Fint * provided, MPI_Fint * ierr)
#define MPIA_INIT_THREAD_ARGS (required, provided, ierr)
MPIA_FORTRAN_MANGLINGS(mpi_init, MPI_INIT, f_init, MPIA_INIT_PARAMS, MPIA_INIT_ARGS)
MPIA_FORTRAN_MANGLINGS(mpi_init_thread, MPI_INIT_THREAD, f_init_thread, MPIA_INIT_THREAD_PARAMS,
                       MPIA_INIT_THREAD_ARGS)
MPIA_FORTRAN_ENTRY(mpi_init_f08_, f_init_f08, MPIA_INIT_PARAMS, MPIA_INIT_ARGS)
MPIA_FORTRAN_ENTRY(mpi_init_thread_f08_, f_init_thread_f08, MPIA_INIT_THREAD_PARAMS,
                   MPIA_INIT_THREAD_ARGS)

/* The blocking collectives that make an intracommunicator (preload.cpp: attached at once), in
 * the same way: the MPI library's own routine (pmpi_comm_dup_ & co.; under `use mpi_f08`
 * pmpi_comm_dup_f08_ & co., with an ierror of our own when the caller's is absent), then
 * mpia_preload_created on the new communicator. Every argument is forwarded as it came. */
static void after_created(const MPI_Fint* made, MPI_Fint* ierr) {
  const MPI_Comm c = MPI_Comm_f2c(*made);
  *ierr = (MPI_Fint)mpia_preload_created((int)*ierr, &c);
}
#define MPIA_CREATES(lower, upper, params, args, made)          \
  extern void p##lower##_ params __attribute__((weak));         \
  extern void p##lower##_f08_ params __attribute__((weak));     \
  static void f_##lower params {                                \
    p##lower##_ args;                                           \
    after_created(made, ierr);                                  \
  }                                                             \
  static void f08_##lower params {                              \
    MPI_Fint own = MPI_SUCCESS;                                 \
    if (!ierr) ierr = &own;                                     \
    p##lower##_f08_ args;                                       \
    after_created(made, ierr);                                  \
  }                                                             \
  MPIA_FORTRAN_MANGLINGS(lower, upper, f_##lower, params, args) \
  MPIA_FORTRAN_ENTRY(lower##_f08_, f08_##lower, params, args)
#include "fortran_creators.inc"

#endif

#endif /* OPEN_MPI || MPICH */
