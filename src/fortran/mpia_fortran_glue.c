/* The C side of the Fortran module mpi_advance (mpi_advance.F90): bind(C) entry points that take
 * the Fortran handles (MPI_Fint: the MPI_VAL of mpi_f08's handle types) and choice buffers as C
 * descriptors (type(*), dimension(..): ISO_Fortran_binding.h), convert them (MPI_Comm_f2c,
 * MPI_Type_f2c, MPI_Info_f2c; the Fortran MPI_IN_PLACE by its address, registered by the module)
 * and call the C API. Every function returns the MPI error code (the communicator's error
 * handler has run, as in C). A non-contiguous buffer is MPI_ERR_BUFFER: a persistent request
 * keeps the address, which a compiler's contiguous temporary would not outlive. */
#include <ISO_Fortran_binding.h>
#include <mpi.h>
#include <stdlib.h>
#include <string.h>

#include "mpi_advance.h"
#include "preload/topo_degrees.h"

static const void* fortran_in_place;

void mpia_f_register_in_place(CFI_cdesc_t* in_place) { fortran_in_place = in_place->base_addr; }

/* The address of any Fortran argument (the module compares statuses with MPI_STATUS_IGNORE). */
void* mpia_f_address(CFI_cdesc_t* x) { return x->base_addr; }

/* The C address of a Fortran choice buffer: MPI_IN_PLACE, or the base of a contiguous array. */
static int address(const CFI_cdesc_t* d, MPI_Comm comm, void** out) {
  if (fortran_in_place && d->base_addr == fortran_in_place) {
    *out = MPI_IN_PLACE;
    return MPI_SUCCESS;
  }
  if (d->rank > 0 && !CFI_is_contiguous(d)) {
    MPI_Comm_call_errhandler(comm == MPI_COMM_NULL ? MPI_COMM_SELF : comm, MPI_ERR_BUFFER);
    return MPI_ERR_BUFFER;
  }
  *out = d->base_addr;
  return MPI_SUCCESS;
}

#define BUFFERS(sb, rb, comm)                           \
  void *s_, *r_;                                        \
  int rc_ = address(sb, comm, &s_);                     \
  if (rc_ == MPI_SUCCESS) rc_ = address(rb, comm, &r_); \
  if (rc_ != MPI_SUCCESS) return rc_;

/* n Fortran datatype handles as C ones (the caller frees the array); NULL when out of memory. */
static MPI_Datatype* c_types(const MPI_Fint* f, int n) {
  MPI_Datatype* t = malloc(sizeof(MPI_Datatype) * (size_t)(n > 0 ? n : 1));
  for (int i = 0; t && i < n; ++i) t[i] = MPI_Type_f2c(f[i]);
  return t;
}

/* Converts both type arrays (one type per rank of comm, or, neighbor: per edge of its topology;
 * without one, none: the call reports MPI_ERR_TOPOLOGY), runs call (an expression using st and
 * rt), frees them. */
#define WITH_TYPES(comm, neighbor, sts, rts, call)                                          \
  int in_ = 0, out_ = 0;                                                                    \
  if (neighbor)                                                                             \
    mpia_topo_degrees(comm, &in_, &out_);                                                   \
  else if (comm != MPI_COMM_NULL && MPI_Comm_size(comm, &in_) == MPI_SUCCESS)               \
    out_ = in_;                                                                             \
  MPI_Datatype *st = c_types(sts, out_), *rt = c_types(rts, in_);                           \
  int code_;                                                                                \
  if (!st || !rt) {                                                                         \
    MPI_Comm_call_errhandler(comm == MPI_COMM_NULL ? MPI_COMM_SELF : comm, MPI_ERR_NO_MEM); \
    code_ = MPI_ERR_NO_MEM;                                                                 \
  } else {                                                                                  \
    code_ = call;                                                                           \
  }                                                                                         \
  free(st);                                                                                 \
  free(rt);                                                                                 \
  return code_;

/* The module's procedures of the collectives' forms (int counts), generated from
 * src/bindings/calls.txt: each converts its handles and buffers and calls the C API. */
#include "glue_forms.inc"

int mpia_f_start(MPIX_Request* r) { return MPIX_Start(r); }
int mpia_f_startall(int n, MPIX_Request* rs) { return MPIX_Startall(n, rs); }

/* Statuses go back as (MPI_SOURCE, MPI_TAG, MPI_ERROR) triples, which the module copies into
 * type(MPI_Status) (mpi_f08's public components; MPI_Status_f2f08 is not in Open MPI 4.1) and
 * completes with MPI_Status_set_elements(0) / MPI_Status_set_cancelled(.false.): a request's
 * status is empty (MPI_ANY_SOURCE, MPI_ANY_TAG, its error code). NULL: ignored. */
static void triple(const MPI_Status* s, int* out) {
  out[0] = s->MPI_SOURCE;
  out[1] = s->MPI_TAG;
  out[2] = s->MPI_ERROR;
}

int mpia_f_wait(MPIX_Request* r, int* status) {
  MPI_Status s;
  const int rc = MPIX_Wait(r, status ? &s : MPI_STATUS_IGNORE);
  if (status) triple(&s, status);
  return rc;
}

int mpia_f_test(MPIX_Request* r, int* flag, int* status) {
  MPI_Status s;
  const int rc = MPIX_Test(r, flag, status ? &s : MPI_STATUS_IGNORE);
  if (status && *flag) triple(&s, status);
  return rc;
}

int mpia_f_waitall(int n, MPIX_Request* rs, int* statuses) {
  MPI_Status* s = NULL;
  if (statuses && n > 0) {
    s = (MPI_Status*)malloc(sizeof(MPI_Status) * (size_t)n);
    if (!s) {
      MPI_Comm_call_errhandler(MPI_COMM_SELF, MPI_ERR_NO_MEM);
      return MPI_ERR_NO_MEM;
    }
  }
  /* MPICH's MPI_STATUSES_IGNORE is (MPI_Status*)1, which GCC reads as a zero-size array. */
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wstringop-overflow"
#endif
  const int rc = MPIX_Waitall(n, rs, s ? s : MPI_STATUSES_IGNORE);
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic pop
#endif
  if (s)
    for (int i = 0; i < n; ++i) triple(&s[i], statuses + 3 * (size_t)i);
  free(s);
  return rc;
}

/* Character results: copied into the Fortran buffer (len bytes), blank-padded. */
static void to_fortran(const char* from, char* to, int len) {
  int n = from ? (int)strlen(from) : 0;
  if (n > len) n = len;
  if (n > 0) memcpy(to, from, (size_t)n);
  if (len > n) memset(to + n, ' ', (size_t)(len - n));
}

/* A request's text (trial: MPIX_Request_get_trial's, else MPIX_Request_get_algorithm's). */
int mpia_f_request_text(MPIX_Request r, int trial, char* text, int len, int* resultlen) {
  char buf[MPIX_MAX_TRIAL_STRING]; /* the longer of the two */
  const int rc = trial ? MPIX_Request_get_trial(r, buf, resultlen)
                       : MPIX_Request_get_algorithm(r, buf, resultlen);
  if (rc == MPI_SUCCESS) to_fortran(buf, text, len);
  return rc;
}

int mpia_f_algorithm_get(const char* collective, int index, char* name, int name_len,
                         char* description, int description_len) {
  const char *n = NULL, *d = NULL;
  const int rc = MPIX_Algorithm_get(collective, index, &n, &d);
  if (rc == MPI_SUCCESS) {
    to_fortran(n, name, name_len);
    to_fortran(d, description, description_len);
  }
  return rc;
}

int mpia_f_comm_locality(MPI_Fint comm, int* node, int* nnodes, int* local_rank, int* local_size) {
  return MPIX_Comm_locality(MPI_Comm_f2c(comm), node, nnodes, local_rank, local_size);
}

int mpia_f_comm_rank_locality(MPI_Fint comm, int rank, int* node, int* local_rank, int* package,
                              int* numa) {
  return MPIX_Comm_rank_locality(MPI_Comm_f2c(comm), rank, node, local_rank, package, numa);
}

int mpia_f_comm_locality_split(MPI_Fint comm, int kind, MPI_Fint* newcomm) {
  MPI_Comm c = MPI_COMM_NULL;
  const int rc = MPIX_Comm_locality_split(MPI_Comm_f2c(comm), kind, &c);
  *newcomm = MPI_Comm_c2f(c);
  return rc;
}

int mpia_f_comm_set_algorithm(MPI_Fint comm, const char* collective, const char* selection) {
  return MPIX_Comm_set_algorithm(MPI_Comm_f2c(comm), collective, selection);
}

/* Topology objects. A non-contiguous buffer is raised on MPI_COMM_SELF (the object's
 * communicator is not known here). */
int mpia_f_topo_create(MPI_Fint comm, int indegree, const int* sources, int outdegree,
                       const int* destinations, MPI_Fint info, MPIX_Topo* topo) {
  return MPIX_Topo_create(MPI_Comm_f2c(comm), indegree, sources, outdegree, destinations,
                          MPI_Info_f2c(info), topo);
}

int mpia_f_neighbor_alltoallv_topo_init(CFI_cdesc_t* sb, const int* scs, const int* sds,
                                        MPI_Fint st, CFI_cdesc_t* rb, const int* rcs,
                                        const int* rds, MPI_Fint rt, MPIX_Topo topo, MPI_Fint info,
                                        MPIX_Request* req) {
  BUFFERS(sb, rb, MPI_COMM_NULL)
  return MPIX_Neighbor_alltoallv_topo_init(s_, scs, sds, MPI_Type_f2c(st), r_, rcs, rds,
                                           MPI_Type_f2c(rt), topo, MPI_Info_f2c(info), req);
}

int mpia_f_neighbor_alltoallv_topo(CFI_cdesc_t* sb, const int* scs, const int* sds, MPI_Fint st,
                                   CFI_cdesc_t* rb, const int* rcs, const int* rds, MPI_Fint rt,
                                   MPIX_Topo topo) {
  BUFFERS(sb, rb, MPI_COMM_NULL)
  return MPIX_Neighbor_alltoallv_topo(s_, scs, sds, MPI_Type_f2c(st), r_, rcs, rds,
                                      MPI_Type_f2c(rt), topo);
}
