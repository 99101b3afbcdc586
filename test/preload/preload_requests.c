/* An unmodified MPI program (it knows nothing of mpi-advance) that uses the nonblocking and
 * persistent all-to-alls and every request call they can meet, run under
 * libmpi_advance_preload.so by run_preload.sh (which checks the MPIX_REPORT lines: the calls
 * were the library's) and, with count_shim.c loaded after the preload, proving that none of
 * them reached the MPI library's own collective.
 *
 *  1. MPI_Alltoall once; MPI_Ialltoall completed by polling MPI_Test; MPI_Ialltoallv by MPI_Wait;
 *     MPI_Ialltoallw (the v layout in bytes, every other block of a holed int type) by MPI_Wait,
 *     then MPI_Alltoallw_init (where persistent collectives exist) started 4 times.
 *  2. MPI_Ialltoall in an MPI_Waitany (or a polled MPI_Testany) beside an MPI_Irecv/MPI_Isend
 *     ring (indices checked).
 *  3. The persistent inits (MPI-4's MPI_Alltoall_init, MPI_Alltoallv_init; Open MPI 4.1's
 *     MPIX_ ones from <mpi-ext.h>; skipped without either), started 6 times with new data: by
 *     MPI_Start + MPI_Wait, and in MPI_Startall beside a persistent MPI_Send_init/MPI_Recv_init
 *     pair (the shells first on even rounds, last on odd ones), completed by MPI_Waitall, a
 *     polled MPI_Testall, or MPI_Waitsome/MPI_Testsome.
 *  4. MPI_Ineighbor_alltoallv and the neighbor persistent init on a distributed graph ring.
 *  5. The request rules: an inactive persistent request completes at once with an empty status
 *     (MPI_Wait, MPI_Test, MPI_Request_get_status); a completed nonblocking request is
 *     MPI_REQUEST_NULL; MPI_Request_get_status polls without freeing; MPI_Start of an active
 *     request and MPI_Cancel are MPI_ERR_REQUEST (errors returned); MPI_Request_free of an
 *     active nonblocking request and of an active persistent one (the collective still completes
 *     everywhere: a later call on the same communicator runs right) and of an inactive one.
 *  6. 24 nonblocking calls alive at once on two communicators, completed in a different order on
 *     odd and even ranks (odd: newest first, one at a time); the second communicator, whose first
 *     call of the library is among them, freed before they complete.
 * Every received element is compared with a formula of (source, destination, index, round) on
 * every rank; all ranks fail if one does. */
#include <mpi.h>
#if defined(OPEN_MPI) && OPEN_MPI
#include <mpi-ext.h>
#endif
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Open MPI 5: MPI-4's persistent collectives, standard names, under an MPI-3.1 mpi.h. */
#if MPI_VERSION >= 4 || \
    (defined(OPEN_MPI) && defined(OMPI_MAJOR_VERSION) && OMPI_MAJOR_VERSION >= 5)
#define HAVE_PERSISTENT 1
#define ALLTOALL_INIT MPI_Alltoall_init
#define ALLTOALLV_INIT MPI_Alltoallv_init
#define ALLTOALLW_INIT MPI_Alltoallw_init
#define NEIGHBOR_ALLTOALLV_INIT MPI_Neighbor_alltoallv_init
#elif defined(OMPI_HAVE_MPI_EXT_PCOLLREQ) && OMPI_HAVE_MPI_EXT_PCOLLREQ
#define HAVE_PERSISTENT 1
#define ALLTOALL_INIT MPIX_Alltoall_init
#define ALLTOALLV_INIT MPIX_Alltoallv_init
#define ALLTOALLW_INIT MPIX_Alltoallw_init
#define NEIGHBOR_ALLTOALLV_INIT MPIX_Neighbor_alltoallv_init
#else
#define HAVE_PERSISTENT 0
#endif

static int rank, P, errors;

static int value(int src, int dst, int k, int round) {
  return src * 1000003 + dst * 1009 + k * 7 + round * 31;
}

static void expect(int got, int want, const char* what, int round, int idx) {
  if (got != want) {
    if (errors < 10)
      fprintf(stderr, "rank %d: %s round %d index %d: got %d, want %d\n", rank, what, round, idx,
              got, want);
    ++errors;
  }
}

static void check(int cond, const char* what) {
  if (!cond) {
    if (errors < 10) fprintf(stderr, "rank %d: %s\n", rank, what);
    ++errors;
  }
}

/* An alltoall's blocks of n elements: fill the send side, poison the receive side, check. */
static void fill(int* s, int* r, int n, int round) {
  for (int j = 0; j < P; ++j)
    for (int k = 0; k < n; ++k) s[j * n + k] = value(rank, j, k, round);
  memset(r, 0xff, sizeof(int) * (size_t)(n * P));
}
static void verify(const int* r, int n, int round, const char* what) {
  for (int i = 0; i < P; ++i)
    for (int k = 0; k < n; ++k) expect(r[i * n + k], value(i, rank, k, round), what, round, k);
}

/* Alltoallv: count(i -> j) = (i + 2j) % 3 + 1 elements, blocks packed in reverse order. */
static int vcount(int src, int dst) { return (src + 2 * dst) % 3 + 1; }
static void vlayout(int* sc, int* sd, int* rc, int* rd) {
  int s = 0, r = 0;
  for (int x = P - 1; x >= 0; --x) {
    sc[x] = vcount(rank, x);
    sd[x] = s;
    s += sc[x];
    rc[x] = vcount(x, rank);
    rd[x] = r;
    r += rc[x];
  }
}
static void vfill(int* s, int* r, const int* sc, const int* sd, int cap, int round) {
  for (int j = 0; j < P; ++j)
    for (int k = 0; k < sc[j]; ++k) s[sd[j] + k] = value(rank, j, k, round);
  memset(r, 0xff, sizeof(int) * (size_t)cap);
}
static void vverify(const int* r, const int* rc, const int* rd, int round, const char* what) {
  for (int i = 0; i < P; ++i)
    for (int k = 0; k < rc[i]; ++k) expect(r[rd[i] + k], value(i, rank, k, round), what, round, k);
}

static int is_empty(const MPI_Status* st) {
  return st->MPI_SOURCE == MPI_ANY_SOURCE && st->MPI_TAG == MPI_ANY_TAG;
}

/* MPI_Ialltoallw and MPI_Alltoallw_init: the alltoallv layout in bytes, with block j of MPI_INT
 * or (odd j + rank, send; odd j, receive) of ints each followed by a hole: twice the room. */
static void part1_w(const int* sc, const int* vsd, const int* rc, const int* vrd) {
  MPI_Datatype holed;
  MPI_Type_create_resized(MPI_INT, 0, 2 * (MPI_Aint)sizeof(int), &holed);
  MPI_Type_commit(&holed);
  int *sd = malloc(sizeof(int) * P), *rd = malloc(sizeof(int) * P);
  int *ss = malloc(sizeof(int) * P), *rs = malloc(sizeof(int) * P);
  MPI_Datatype *st = malloc(sizeof(MPI_Datatype) * P), *rt = malloc(sizeof(MPI_Datatype) * P);
  for (int j = 0; j < P; ++j) {
    ss[j] = (j + rank) % 2 ? 2 : 1, rs[j] = j % 2 ? 2 : 1;
    st[j] = ss[j] == 2 ? holed : MPI_INT, rt[j] = rs[j] == 2 ? holed : MPI_INT;
    sd[j] = 2 * vsd[j] * (int)sizeof(int), rd[j] = 2 * vrd[j] * (int)sizeof(int);
  }
  const int cap = 6 * P;
  int *s = malloc(sizeof(int) * cap), *r = malloc(sizeof(int) * cap);
  MPI_Request q = MPI_REQUEST_NULL;
#if HAVE_PERSISTENT
  ALLTOALLW_INIT(s, sc, sd, st, r, rc, rd, rt, MPI_COMM_WORLD, MPI_INFO_NULL, &q);
#endif
  for (int round = 0; round < 8; ++round) {
    const int persistent = round >= 4;
    if (persistent && !HAVE_PERSISTENT) break;
    for (int x = 0; x < cap; ++x) s[x] = r[x] = -7;
    for (int j = 0; j < P; ++j)
      for (int k = 0; k < sc[j]; ++k)
        s[sd[j] / (int)sizeof(int) + k * ss[j]] = value(rank, j, k, round);
    MPI_Request n = MPI_REQUEST_NULL;
    if (persistent) {
      MPI_Start(&q);
      MPI_Wait(&q, MPI_STATUS_IGNORE);
    } else {
      MPI_Ialltoallw(s, sc, sd, st, r, rc, rd, rt, MPI_COMM_WORLD, &n);
      MPI_Wait(&n, MPI_STATUS_IGNORE);
    }
    const char* what = persistent ? "MPI_Alltoallw_init+MPI_Start" : "MPI_Ialltoallw+MPI_Wait";
    for (int i = 0; i < P; ++i)
      for (int k = 0; k < rc[i]; ++k) {
        const int at = rd[i] / (int)sizeof(int) + k * rs[i];
        expect(r[at], value(i, rank, k, round), what, round, at);
        r[at] = -7;
      }
    for (int x = 0; x < cap; ++x) expect(r[x], -7, what, round, x); /* the holes and gaps */
  }
  if (q != MPI_REQUEST_NULL) MPI_Request_free(&q);
  MPI_Type_free(&holed);
  free(sd), free(rd), free(ss), free(rs), free(st), free(rt), free(s), free(r);
}

static void part1(void) {
  const int n = 3;
  int* s = malloc(sizeof(int) * n * P);
  int* r = malloc(sizeof(int) * n * P);
  fill(s, r, n, 0);
  MPI_Alltoall(s, n, MPI_INT, r, n, MPI_INT, MPI_COMM_WORLD);
  verify(r, n, 0, "MPI_Alltoall");
  for (int round = 1; round <= 4; ++round) {
    MPI_Request q;
    fill(s, r, n, round);
    MPI_Ialltoall(s, n, MPI_INT, r, n, MPI_INT, MPI_COMM_WORLD, &q);
    int flag = 0, polls = 0;
    while (!flag) {
      MPI_Test(&q, &flag, MPI_STATUS_IGNORE);
      ++polls;
    }
    check(q == MPI_REQUEST_NULL, "MPI_Test left a completed nonblocking request non-null");
    verify(r, n, round, "MPI_Ialltoall+MPI_Test");
  }
  int *sc = malloc(sizeof(int) * P), *sd = malloc(sizeof(int) * P);
  int *rc = malloc(sizeof(int) * P), *rd = malloc(sizeof(int) * P);
  vlayout(sc, sd, rc, rd);
  const int cap = 3 * P;
  int *vs = malloc(sizeof(int) * cap), *vr = malloc(sizeof(int) * cap);
  for (int round = 0; round < 4; ++round) {
    MPI_Request q;
    MPI_Status st;
    vfill(vs, vr, sc, sd, cap, round);
    MPI_Ialltoallv(vs, sc, sd, MPI_INT, vr, rc, rd, MPI_INT, MPI_COMM_WORLD, &q);
    MPI_Wait(&q, &st);
    check(q == MPI_REQUEST_NULL, "MPI_Wait left a completed nonblocking request non-null");
    vverify(vr, rc, rd, round, "MPI_Ialltoallv+MPI_Wait");
  }
  part1_w(sc, sd, rc, rd);
  free(s), free(r), free(sc), free(sd), free(rc), free(rd), free(vs), free(vr);
}

static void part2(void) {
  const int n = 2;
  int* s = malloc(sizeof(int) * n * P);
  int* r = malloc(sizeof(int) * n * P);
  const int right = (rank + 1) % P, left = (rank + P - 1) % P;
  for (int round = 0; round < 3; ++round) {
    int out = value(rank, right, 99, round), in = -1;
    MPI_Request q[3];
    fill(s, r, n, round);
    MPI_Irecv(&in, 1, MPI_INT, left, 5, MPI_COMM_WORLD, &q[0]);
    MPI_Ialltoall(s, n, MPI_INT, r, n, MPI_INT, MPI_COMM_WORLD, &q[1]);
    MPI_Isend(&out, 1, MPI_INT, right, 5, MPI_COMM_WORLD, &q[2]);
    int seen[3] = {0, 0, 0};
    for (int k = 0; k < 3; ++k) {
      int index = -1;
      MPI_Status st;
      if (round % 2 == 0) {
        MPI_Waitany(3, q, &index, &st);
      } else { /* polled MPI_Testany */
        int flag = 0;
        while (!flag) MPI_Testany(3, q, &index, &flag, &st);
      }
      check(index >= 0 && index < 3 && !seen[index], "MPI_Waitany/Testany: bad or repeated index");
      if (index < 0 || index >= 3) break;
      seen[index] = 1;
      check(q[index] == MPI_REQUEST_NULL, "MPI_Waitany left its request non-null");
      if (index == 0) check(st.MPI_SOURCE == left && st.MPI_TAG == 5, "MPI_Waitany: p2p status");
    }
    int index = 0;
    MPI_Waitany(3, q, &index, MPI_STATUS_IGNORE);
    check(index == MPI_UNDEFINED, "MPI_Waitany on null requests: index not MPI_UNDEFINED");
    expect(in, value(left, rank, 99, round), "ring beside MPI_Ialltoall", round, 0);
    verify(r, n, round, "MPI_Ialltoall in MPI_Waitany");
  }
  free(s), free(r);
}

#if HAVE_PERSISTENT
static void part3(void) {
  const int n = 4;
  int* s = malloc(sizeof(int) * n * P);
  int* r = malloc(sizeof(int) * n * P);
  int *sc = malloc(sizeof(int) * P), *sd = malloc(sizeof(int) * P);
  int *rc = malloc(sizeof(int) * P), *rd = malloc(sizeof(int) * P);
  vlayout(sc, sd, rc, rd);
  const int cap = 3 * P;
  int *vs = malloc(sizeof(int) * cap), *vr = malloc(sizeof(int) * cap);
  MPI_Request a, v;
  ALLTOALL_INIT(s, n, MPI_INT, r, n, MPI_INT, MPI_COMM_WORLD, MPI_INFO_NULL, &a);
  ALLTOALLV_INIT(vs, sc, sd, MPI_INT, vr, rc, rd, MPI_INT, MPI_COMM_WORLD, MPI_INFO_NULL, &v);
  /* Some of the rules below are ours; the MPI libraries' own persistent collectives do not all
   * keep them (Open MPI 4.1: MPI_Start of an active one succeeds, freeing one is an error;
   * MPICH 4.0: MPI_Wait on an inactive one does not return, MPI_Testall beside
   * point-to-point requests fails), so the run that hands every call to
   * the MPI library (PRELOAD_REQUESTS_MPI_OWN=1) skips them. */
  const char* env_own = getenv("PRELOAD_REQUESTS_MPI_OWN");
  const int own = env_own && *env_own == '1';
  if (!own) {
    /* Inactive: completes at once with an empty status. */
    MPI_Status st;
    int flag = 0;
    MPI_Wait(&a, &st);
    check(a != MPI_REQUEST_NULL && is_empty(&st), "MPI_Wait on an inactive persistent request");
    MPI_Test(&v, &flag, &st);
    check(flag && v != MPI_REQUEST_NULL && is_empty(&st), "MPI_Test on an inactive request");
    flag = 0;
    MPI_Request_get_status(a, &flag, &st);
    check(flag && is_empty(&st), "MPI_Request_get_status on an inactive request");
  }
  /* Alone: MPI_Start + MPI_Wait. */
  for (int round = 0; round < 6; ++round) {
    fill(s, r, n, round);
    MPI_Start(&a);
    MPI_Wait(&a, MPI_STATUS_IGNORE);
    check(a != MPI_REQUEST_NULL, "a persistent request became null");
    verify(r, n, round, "MPI_Alltoall_init+MPI_Start");
  }
  if (own) { /* (MPICH 4.0's own fail MPI_Testall beside point-to-point requests, too) */
    MPI_Request_free(&a);
    MPI_Request_free(&v);
    free(s), free(r), free(sc), free(sd), free(rc), free(rd), free(vs), free(vr);
    return;
  }
  /* In MPI_Startall beside a persistent point-to-point pair, started in either order. */
  const int right = (rank + 1) % P, left = (rank + P - 1) % P;
  int out = 0, in = -1;
  MPI_Request p2p[2];
  MPI_Recv_init(&in, 1, MPI_INT, left, 6, MPI_COMM_WORLD, &p2p[0]);
  MPI_Send_init(&out, 1, MPI_INT, right, 6, MPI_COMM_WORLD, &p2p[1]);
  for (int round = 0; round < 6; ++round) {
    MPI_Request all[4];
    if (round % 2 == 0) {
      all[0] = a, all[1] = v, all[2] = p2p[0], all[3] = p2p[1];
    } else {
      all[0] = p2p[0], all[1] = p2p[1], all[2] = v, all[3] = a;
    }
    fill(s, r, n, 10 + round);
    vfill(vs, vr, sc, sd, cap, 10 + round);
    out = value(rank, right, 77, round);
    in = -1;
    MPI_Startall(4, all);
    if (round % 3 == 0) {
      MPI_Status st[4];
      MPI_Waitall(4, all, st);
      for (int k = 0; k < 4; ++k)
        if (all[k] == p2p[0]) check(st[k].MPI_SOURCE == left, "MPI_Waitall: p2p status");
    } else if (round % 3 == 1) {
      int flag = 0;
      while (!flag) MPI_Testall(4, all, &flag, MPI_STATUSES_IGNORE);
    } else {
      int left_to_do = 4, polls = 0;
      while (left_to_do > 0) {
        int count = 0, indices[4];
        MPI_Status st[4];
        if (++polls % 2)
          MPI_Waitsome(4, all, &count, indices, st);
        else
          MPI_Testsome(4, all, &count, indices, st);
        check(count != MPI_UNDEFINED, "Waitsome/Testsome: MPI_UNDEFINED with active requests");
        if (count == MPI_UNDEFINED) break;
        left_to_do -= count;
      }
      check(left_to_do == 0, "Waitsome/Testsome completed more than were started");
    }
    for (int k = 0; k < 4; ++k)
      check(all[k] != MPI_REQUEST_NULL, "a persistent request became null");
    verify(r, n, 10 + round, "MPI_Alltoall_init in MPI_Startall");
    vverify(vr, rc, rd, 10 + round, "MPI_Alltoallv_init in MPI_Startall");
    expect(in, value(left, rank, 77, round), "persistent ring in MPI_Startall", round, 0);
  }
  MPI_Request_free(&p2p[0]);
  MPI_Request_free(&p2p[1]);

  /* The errors: start an active request, cancel one (errors returned, not fatal). */
  MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
  fill(s, r, n, 20);
  MPI_Start(&a);
  int rc_start = MPI_Start(&a), rc_cancel = MPI_Cancel(&a), cls = MPI_SUCCESS;
  MPI_Error_class(rc_start, &cls);
  check(cls == MPI_ERR_REQUEST, "MPI_Start of an active request: not MPI_ERR_REQUEST");
  MPI_Error_class(rc_cancel, &cls);
  check(cls == MPI_ERR_REQUEST, "MPI_Cancel of a collective: not MPI_ERR_REQUEST");
  {
    int flag = 0;
    MPI_Status st;
    while (!flag) MPI_Request_get_status(a, &flag, &st);
    check(a != MPI_REQUEST_NULL, "MPI_Request_get_status freed the request");
    MPI_Wait(&a, MPI_STATUS_IGNORE);
    verify(r, n, 20, "after MPI_Request_get_status");
  }
  MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_ARE_FATAL);

  /* Freed while active: the collective still completes on every rank. */
  fill(s, r, n, 21);
  MPI_Start(&a);
  MPI_Request_free(&a);
  check(a == MPI_REQUEST_NULL, "MPI_Request_free did not null the request");
  MPI_Request_free(&v); /* inactive */
  check(v == MPI_REQUEST_NULL, "MPI_Request_free did not null the request");
  free(s), free(sc), free(sd), free(rc), free(rd), free(vs), free(vr);
  /* r is still the freed request's receive buffer until a later completion shows the
   * collective done: a blocking call on the same communicator after it (collectives complete
   * in order on a communicator for the ranks' later matching calls to succeed). */
  int* s2 = malloc(sizeof(int) * n * P);
  int* r2 = malloc(sizeof(int) * n * P);
  fill(s2, r2, n, 22);
  /* Many freed while active (their collectives may finish before or after the free, and
   * before or after a later call drives them): nonblocking and persistent, buffers of their
   * own, kept to the end. */
  enum { kFreed = 8 };
  int* fs = malloc(sizeof(int) * n * P * kFreed);
  int* fr = malloc(sizeof(int) * n * P * kFreed);
  for (int k = 0; k < kFreed; ++k) {
    MPI_Request f;
    fill(fs + k * n * P, fr + k * n * P, n, 30 + k);
    if (k % 2 == 0) {
      MPI_Ialltoall(fs + k * n * P, n, MPI_INT, fr + k * n * P, n, MPI_INT, MPI_COMM_WORLD, &f);
    } else {
      ALLTOALL_INIT(fs + k * n * P, n, MPI_INT, fr + k * n * P, n, MPI_INT, MPI_COMM_WORLD,
                    MPI_INFO_NULL, &f);
      MPI_Start(&f);
    }
    MPI_Request_free(&f);
    check(f == MPI_REQUEST_NULL, "MPI_Request_free did not null the request");
  }
  MPI_Request q;
  MPI_Ialltoall(s2, n, MPI_INT, r2, n, MPI_INT, MPI_COMM_WORLD, &q);
  MPI_Wait(&q, MPI_STATUS_IGNORE);
  verify(r2, n, 22, "after a freed active request");
  MPI_Barrier(MPI_COMM_WORLD);
  free(s2), free(r2);
  (void)r, (void)fs, (void)fr; /* not freed: freed requests may write them until MPI_Finalize */
}
#endif

static void part4(void) {
  const int right = (rank + 1) % P, left = (rank + P - 1) % P;
  const int srcs[2] = {left, right}, dsts[2] = {right, left}, weights[2] = {1, 1};
  MPI_Comm g;
  MPI_Dist_graph_create_adjacent(MPI_COMM_WORLD, 2, srcs, weights, 2, dsts, weights, MPI_INFO_NULL,
                                 0, &g);
  /* Block j (to dsts[j]) has j + 1 elements; block i received from srcs[i] too. */
  int sc[2] = {1, 2}, sd[2] = {2, 0}, rc[2] = {1, 2}, rd[2] = {0, 1};
  int s[3], r[3];
  /* What srcs[i] sent to this rank: srcs[0] = left sends its block 0 (to its right = me). */
  for (int round = 0; round < 4; ++round) {
    MPI_Request q;
    for (int j = 0; j < 2; ++j)
      for (int k = 0; k < sc[j]; ++k) s[sd[j] + k] = value(rank, j, k, round);
    memset(r, 0xff, sizeof r);
    MPI_Ineighbor_alltoallv(s, sc, sd, MPI_INT, r, rc, rd, MPI_INT, g, &q);
    MPI_Wait(&q, MPI_STATUS_IGNORE);
    for (int i = 0; i < 2; ++i)
      for (int k = 0; k < rc[i]; ++k)
        expect(r[rd[i] + k], value(srcs[i], i, k, round), "MPI_Ineighbor_alltoallv", round, k);
  }
#if HAVE_PERSISTENT
  MPI_Request q;
  NEIGHBOR_ALLTOALLV_INIT(s, sc, sd, MPI_INT, r, rc, rd, MPI_INT, g, MPI_INFO_NULL, &q);
  for (int round = 0; round < 6; ++round) {
    for (int j = 0; j < 2; ++j)
      for (int k = 0; k < sc[j]; ++k) s[sd[j] + k] = value(rank, j, k, 40 + round);
    memset(r, 0xff, sizeof r);
    MPI_Start(&q);
    int flag = 0;
    while (!flag) MPI_Test(&q, &flag, MPI_STATUS_IGNORE);
    for (int i = 0; i < 2; ++i)
      for (int k = 0; k < rc[i]; ++k)
        expect(r[rd[i] + k], value(srcs[i], i, k, 40 + round), "MPI_Neighbor_alltoallv_init", round,
               k);
  }
  MPI_Request_free(&q);
#endif
  MPI_Comm_free(&g);
}

static void part6(void) {
  enum { N = 24, n = 2 };
  MPI_Comm dup;
  MPI_Comm_dup(MPI_COMM_WORLD, &dup);
  int* s = malloc(sizeof(int) * N * n * P);
  int* r = malloc(sizeof(int) * N * n * P);
  MPI_Request q[N];
  for (int c = 0; c < N; ++c) {
    fill(s + c * n * P, r + c * n * P, n, 100 + c);
    MPI_Ialltoall(s + c * n * P, n, MPI_INT, r + c * n * P, n, MPI_INT,
                  c % 2 ? dup : MPI_COMM_WORLD, &q[c]);
  }
  MPI_Comm_free(&dup); /* allowed: its calls complete normally */
  if (rank % 2) {
    for (int c = N - 1; c >= 0; --c) MPI_Wait(&q[c], MPI_STATUS_IGNORE);
  } else {
    MPI_Waitall(N, q, MPI_STATUSES_IGNORE);
  }
  for (int c = 0; c < N; ++c) {
    check(q[c] == MPI_REQUEST_NULL, "a completed nonblocking request is not null");
    verify(r + c * n * P, n, 100 + c, "24 MPI_Ialltoall alive at once");
  }
  free(s), free(r);
}

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &P);
  part1();
  part2();
#if HAVE_PERSISTENT
  part3();
#else
  if (rank == 0)
    printf("preload_requests: no persistent collectives in this MPI: part 3 skipped\n");
#endif
  part4();
  part6();
  int total = 0;
  MPI_Allreduce(&errors, &total, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
  if (rank == 0) printf(total ? "FAIL: %d wrong\n" : "PASS\n", total);
  MPI_Finalize();
  return total != 0;
}
