/* The selection matrix (issue 50): every call form of the five all-to-alls -- blocking,
 * nonblocking and persistent, int and large-count (_c) -- under whatever algorithms the
 * environment selects. run_matrix.py runs it once per launch with MPIX_ALLTOALL,
 * MPIX_ALLTOALLV and MPIX_NEIGHBOR_ALLTOALLV set to each documented selection in turn, at
 * several rank counts, with and without emulated nodes (MPIX_LOCALITY), and checks what it
 * prints and what the library says on stderr.
 *
 * Built twice from this file:
 *  - with MATRIX_API, through the C API (MPIX_Alltoall, MPIX_Ialltoall, MPIX_Alltoall_init, ...):
 *    it prints "ran <call> <algorithm>" for each call (rank 0), the algorithm read back from the
 *    request (MPIX_Request_get_algorithm) or, for a blocking call, from what the communicator's
 *    last call ran; every rank must have run the same one;
 *  - without, as an unmodified MPI program (MPI_Alltoall, MPI_Ialltoall, MPI-4's
 *    MPI_Alltoall_init or Open MPI 4.1's MPIX_Alltoall_init, ...) for the drop-in library under
 *    LD_PRELOAD with MPIX_REPORT=1: it prints "made <call>" for each call it made (rank 0), and
 *    run_matrix.py finds the report's line of each.
 *
 * Each collective runs on a fresh communicator whose first call is nonblocking, right after
 * which the program starts two nonblocking collectives of the MPI library's own (MPI_Iallreduce,
 * MPI_Ibcast) on the same communicator and completes the three in a different order on odd and
 * even ranks: an attach begun by that first call must not reorder the communicator's
 * collectives (Open MPI's MPI_Comm_idup does: issue 50, failure 2). The fresh communicator is
 * made once by MPI_Comm_dup (or the topology call) and once by MPI_Comm_idup, which the drop-in
 * does not see. Then the persistent form (init, two starts with new data), the blocking form
 * (twice, other sizes the second time) and the nonblocking form again, every form in its int
 * and _c spelling. Every received element is compared with a formula of (source, destination,
 * element, round), and the bytes around and between the blocks must keep their sentinel. Any
 * error aborts (MPI_ERRORS_ARE_FATAL); a wrong element fails every rank ("FAIL" and exit 1),
 * else rank 0 prints "PASS". */
#include <mpi.h>
#if !defined(MATRIX_API) && defined(OPEN_MPI) && OPEN_MPI
#include <mpi-ext.h>
#endif
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#ifdef MATRIX_API
#include "mpi_advance.h"
typedef MPIX_Request Req;
#define REQ_NULL MPIX_REQUEST_NULL
#define CALL(name) MPIX_##name
#define NAME(name) "MPIX_" #name
#define WAIT(r) MPIX_Wait(r, MPI_STATUS_IGNORE)
#define START(r) MPIX_Start(r)
#define FREE(r) MPIX_Request_free(r)
#define HAVE_LARGE 1
#define HAVE_PERSISTENT 1
#define INIT(name) MPIX_##name##_init
#define INIT_NAME(name) "MPIX_" #name "_init"
#include "mpia_private.h"
#else
typedef MPI_Request Req;
#define REQ_NULL MPI_REQUEST_NULL
#define CALL(name) MPI_##name
#define NAME(name) "MPI_" #name
#define WAIT(r) MPI_Wait(r, MPI_STATUS_IGNORE)
#define START(r) MPI_Start(r)
#define FREE(r) MPI_Request_free(r)
#if MPI_VERSION >= 4
#define HAVE_LARGE 1
#define HAVE_PERSISTENT 1
#define INIT(name) MPI_##name##_init
#define INIT_NAME(name) "MPI_" #name "_init"
#elif (defined(OPEN_MPI) && defined(OMPI_MAJOR_VERSION) && OMPI_MAJOR_VERSION >= 5)
/* Open MPI 5: MPI-4's persistent collectives, standard names; no large-count functions. */
#define HAVE_LARGE 0
#define HAVE_PERSISTENT 1
#define INIT(name) MPI_##name##_init
#define INIT_NAME(name) "MPI_" #name "_init"
#elif defined(OMPI_HAVE_MPI_EXT_PCOLLREQ) && OMPI_HAVE_MPI_EXT_PCOLLREQ
#define HAVE_LARGE 0
#define HAVE_PERSISTENT 1
#define INIT(name) MPIX_##name##_init
#define INIT_NAME(name) "MPIX_" #name "_init"
#else
#define HAVE_LARGE 0
#define HAVE_PERSISTENT 0
#endif
#endif

enum { SENTINEL = -7777777, GUARD = 4 };
static int rank, P, errors;

static int value(int src, int dst, int k, int round) {
  return (int)(((uint32_t)src * 1000003u + (uint32_t)dst * 1009u + (uint32_t)k * 17u +
                (uint32_t)round * 7919u) &
               0x7fffffffu);
}

static void expect(int got, int want, const char* call, int round, int idx) {
  if (got == want) return;
  if (++errors <= 10)
    fprintf(stderr, "rank %d: %s round %d element %d: got %d, want %d\n", rank, call, round, idx,
            got, want);
}

/* What ran, or was made: one line per call name and algorithm, on rank 0; every rank must have
 * run the same algorithm (compared by a hash of its name). */
static void say(const char* call, const char* algorithm) {
  unsigned long h = 5381;
  for (const char* c = algorithm; c && *c; ++c) h = h * 33 + (unsigned char)*c;
  long mine[2] = {(long)(h & 0x3fffffff), -(long)(h & 0x3fffffff)}, all[2];
  MPI_Allreduce(mine, all, 2, MPI_LONG, MPI_MAX, MPI_COMM_WORLD);
  if (all[0] != -all[1] && ++errors <= 10)
    fprintf(stderr, "rank %d: %s: the ranks ran different algorithms (this one: %s)\n", rank, call,
            algorithm);
  if (rank == 0) {
    if (algorithm)
      printf("ran %s %s\n", call, algorithm);
    else
      printf("made %s\n", call);
  }
}

#ifdef MATRIX_API
/* A request's algorithm (local); a call deferred on its communicator's attach knows it once the
 * attach is done (every rank waits here alike). */
static void request_algorithm(MPIX_Request r, char* name) {
  int len = 0;
  for (;;) {
    MPIX_Request_get_algorithm(r, name, &len);
    if (name[0] != '(') break;
    mpia_private_progress();
  }
}
static void say_blocking(const char* call, MPI_Comm comm, const char* collective) {
  const char* name = "?";
  int hit = 0;
  mpia_private_comm_last_call(comm, collective, &name, &hit);
  say(call, name);
}
#define REQUEST_ALGORITHM(r, name) request_algorithm(r, name)
#define SAID(name) (name)
#define SAY_BLOCKING(call, comm, collective) say_blocking(call, comm, collective)
#else
#define REQUEST_ALGORITHM(r, name) (void)(name)
#define SAID(name) ((const char*)NULL)
#define SAY_BLOCKING(call, comm, collective) say(call, NULL)
#endif
enum { NAME_MAX_CHARS = 512 };

/* --- buffers: blocks at element offsets, sentinels everywhere else ------------------------- */

typedef struct {
  int nblocks;
  int count[64], displ[64]; /* elements (at most 64 blocks: P <= 64, or the 2 edges) */
  int total;                /* elements of the buffer, guards included */
  int* buf;
} Layout;

/* counts[i] elements per block, each block after a one-element hole (the v forms), or packed
 * (regular). */
static void layout(Layout* l, int nblocks, const int* counts, int holes) {
  l->nblocks = nblocks;
  int at = GUARD;
  for (int i = 0; i < nblocks; ++i) {
    at += holes;
    l->count[i] = counts[i];
    l->displ[i] = at - GUARD;
    at += counts[i];
  }
  l->total = at + GUARD;
  l->buf = malloc(sizeof(int) * (size_t)l->total);
}
static int* base(const Layout* l) { return l->buf + GUARD; }
static void fill_send(Layout* l, int round, const int* peers) {
  for (int i = 0; i < l->total; ++i) l->buf[i] = SENTINEL;
  for (int j = 0; j < l->nblocks; ++j)
    for (int k = 0; k < l->count[j]; ++k)
      base(l)[l->displ[j] + k] = value(rank, peers[j], k, round);
}
static void clear_recv(Layout* l) {
  for (int i = 0; i < l->total; ++i) l->buf[i] = SENTINEL;
}
/* Block i came from srcs[i], which addressed it to tags[i] (the receiver's rank, or an edge's
 * index). */
static void check_recv(const Layout* l, const int* srcs, const int* tags, int round,
                       const char* call) {
  char* mine = calloc((size_t)l->total, 1);
  for (int i = 0; i < l->nblocks; ++i)
    for (int k = 0; k < l->count[i]; ++k) {
      const int at = GUARD + l->displ[i] + k;
      mine[at] = 1;
      expect(l->buf[at], value(srcs[i], tags[i], k, round), call, round, at);
    }
  for (int at = 0; at < l->total; ++at)
    if (!mine[at]) expect(l->buf[at], SENTINEL, call, round, at);
  free(mine);
}

/* A fresh intracommunicator over MPI_COMM_WORLD: by MPI_Comm_dup, or by MPI_Comm_idup (which the
 * drop-in library does not intercept). */
static MPI_Comm fresh(int by_idup) {
  MPI_Comm c;
  if (by_idup) {
    MPI_Request r;
    MPI_Comm_idup(MPI_COMM_WORLD, &c, &r);
    MPI_Wait(&r, MPI_STATUS_IGNORE);
  } else {
    MPI_Comm_dup(MPI_COMM_WORLD, &c);
  }
  return c;
}

/* The first call's companions: the MPI library's own nonblocking collectives on comm, started
 * after ranks went different ways, completed with the first call in an order of the rank's
 * parity. The first call's algorithm is read (into name) once they are started, so that an
 * attach the call began is still in flight then. */
static void with_companions(MPI_Comm comm, Req* first, const char* call, char* name) {
  int x = rank + 1, sum = 0, b = rank == 0 ? 4242 : 0, flag = 0;
  MPI_Request u[2];
  if (rank % 2) {
    usleep(2000);
  } else {
    MPI_Iprobe(MPI_ANY_SOURCE, MPI_ANY_TAG, MPI_COMM_SELF, &flag, MPI_STATUS_IGNORE);
    usleep(500);
    MPI_Iprobe(MPI_ANY_SOURCE, MPI_ANY_TAG, MPI_COMM_SELF, &flag, MPI_STATUS_IGNORE);
  }
  MPI_Iallreduce(&x, &sum, 1, MPI_INT, MPI_SUM, comm, &u[0]);
  MPI_Ibcast(&b, 1, MPI_INT, 0, comm, &u[1]);
  REQUEST_ALGORITHM(*first, name);
  if (rank % 2) {
    MPI_Status st[2];
    MPI_Waitall(2, u, st);
    WAIT(first);
  } else {
    WAIT(first);
    MPI_Wait(&u[1], MPI_STATUS_IGNORE);
    MPI_Wait(&u[0], MPI_STATUS_IGNORE);
  }
  expect(sum, P * (P + 1) / 2, call, -1, -1);
  expect(b, 4242, call, -1, -2);
}

/* --- the five collectives, one form at a time ---------------------------------------------- */

enum Form { NONBLOCKING, NONBLOCKING_FIRST, PERSISTENT, BLOCKING };
enum Coll { ALLTOALL, ALLTOALLV, NEIGHBOR, NEIGHBOR_V, NEIGHBOR_W };
static const char* const kColl[] = {"alltoall", "alltoallv", "neighbor_alltoall",
                                    "neighbor_alltoallv", "neighbor_alltoallw"};

/* The graph of the neighbor calls: in-edges from left and right, out-edges to right and left,
 * so in-edge i carries what its source sends on its out-edge i; one edge each way on 1 or 2
 * ranks, where left and right are one rank (two edges between the same pair of ranks, which the
 * MPI libraries' own neighbor calls pair wrongly -- test_neighbor.cpp's runnable() -- are for
 * test_neighbor.cpp, not for this matrix of selections). */
static int srcs[2], dsts[2], degree;

/* A call's arguments in both spellings: ints, and MPI_Count / MPI_Aint. */
typedef struct {
  Layout s, r;
  int speers[64], rsrcs[64], rtags[64];
  MPI_Count sc[64], rc[64];
  MPI_Aint sd[64], rd[64], sdb[64], rdb[64]; /* elements; bytes (the w forms) */
  int sci[64], rci[64], sdi[64], rdi[64];
  MPI_Aint sdbi[64], rdbi[64];
  MPI_Datatype types[64];
  int n; /* the regular forms' block */
} Args;

static void args_for(Args* a, enum Coll c, int n) {
  int sc[64] = {0}, rc[64] = {0};
  int nb = c >= NEIGHBOR ? degree : P;
  a->n = n;
  for (int j = 0; j < nb; ++j) {
    if (c == ALLTOALL || c == NEIGHBOR) {
      sc[j] = rc[j] = n;
    } else if (c == ALLTOALLV) {
      sc[j] = ((rank + 2 * j) % 3) * n; /* to j: zero for a third of the pairs */
      rc[j] = ((j + 2 * rank) % 3) * n; /* from j */
    } else {
      sc[j] = rc[j] = (j + 1) * n; /* the v and w neighbor forms: edge j carries (j+1) n */
    }
    a->speers[j] = j; /* block j goes to rank j, or on out-edge j */
    a->rsrcs[j] = c >= NEIGHBOR ? srcs[j] : j;
    a->rtags[j] = c >= NEIGHBOR ? j : rank;
    a->types[j] = MPI_INT;
  }
  const int holes = !(c == ALLTOALL || c == NEIGHBOR);
  layout(&a->s, nb, sc, holes);
  layout(&a->r, nb, rc, holes);
  for (int j = 0; j < nb; ++j) {
    a->sci[j] = sc[j], a->rci[j] = rc[j], a->sc[j] = sc[j], a->rc[j] = rc[j];
    a->sdi[j] = a->s.displ[j], a->rdi[j] = a->r.displ[j];
    a->sd[j] = a->s.displ[j], a->rd[j] = a->r.displ[j];
    a->sdbi[j] = a->sdb[j] = (MPI_Aint)sizeof(int) * a->s.displ[j];
    a->rdbi[j] = a->rdb[j] = (MPI_Aint)sizeof(int) * a->r.displ[j];
  }
}
static void args_free(Args* a) { free(a->s.buf), free(a->r.buf); }

/* Starts (nonblocking), initializes (persistent) or makes (blocking) collective c in spelling
 * large; returns the call's name. */
#if HAVE_PERSISTENT
#define PERSISTENT_CALL(x) x
#else
#define PERSISTENT_CALL(x) (void)0
#define INIT(name) MPI_##name /* never compiled: PERSISTENT_CALL drops it */
#define INIT_NAME(name) "none"
#endif
/* The three forms of one call, its blocking arguments given: CALL(B)(args), CALL(I)(args, q),
 * Persistent(args, MPI_INFO_NULL, q), named NAME(B), NAME(I), pname; name gets the one made. */
#define FORMS(B, I, Persistent, pname, ...)                       \
  do {                                                            \
    if (f == BLOCKING) {                                          \
      CALL(B)(__VA_ARGS__);                                       \
      name = NAME(B);                                             \
    } else if (f == PERSISTENT) {                                 \
      PERSISTENT_CALL(Persistent(__VA_ARGS__, MPI_INFO_NULL, q)); \
      name = pname;                                               \
    } else {                                                      \
      CALL(I)(__VA_ARGS__, q);                                    \
      name = NAME(I);                                             \
    }                                                             \
  } while (0)
static const char* issue(enum Coll c, enum Form f, int large, Args* a, MPI_Comm comm, Req* q) {
  void* sb = base(&a->s);
  void* rb = base(&a->r);
  const int n = a->n;
  const char* name = "?";
  (void)large;
#if HAVE_LARGE
  if (large) {
    switch (c) {
      case ALLTOALL:
        FORMS(Alltoall_c, Ialltoall_c, CALL(Alltoall_init_c), NAME(Alltoall_init_c), sb, n, MPI_INT,
              rb, n, MPI_INT, comm);
        break;
      case ALLTOALLV:
        FORMS(Alltoallv_c, Ialltoallv_c, CALL(Alltoallv_init_c), NAME(Alltoallv_init_c), sb, a->sc,
              a->sd, MPI_INT, rb, a->rc, a->rd, MPI_INT, comm);
        break;
      case NEIGHBOR:
        FORMS(Neighbor_alltoall_c, Ineighbor_alltoall_c, CALL(Neighbor_alltoall_init_c),
              NAME(Neighbor_alltoall_init_c), sb, n, MPI_INT, rb, n, MPI_INT, comm);
        break;
      case NEIGHBOR_V:
        FORMS(Neighbor_alltoallv_c, Ineighbor_alltoallv_c, CALL(Neighbor_alltoallv_init_c),
              NAME(Neighbor_alltoallv_init_c), sb, a->sc, a->sd, MPI_INT, rb, a->rc, a->rd, MPI_INT,
              comm);
        break;
      case NEIGHBOR_W:
        FORMS(Neighbor_alltoallw_c, Ineighbor_alltoallw_c, CALL(Neighbor_alltoallw_init_c),
              NAME(Neighbor_alltoallw_init_c), sb, a->sc, a->sdb, a->types, rb, a->rc, a->rdb,
              a->types, comm);
        break;
    }
    return name;
  }
#endif
  switch (c) {
    case ALLTOALL:
      FORMS(Alltoall, Ialltoall, INIT(Alltoall), INIT_NAME(Alltoall), sb, n, MPI_INT, rb, n,
            MPI_INT, comm);
      break;
    case ALLTOALLV:
      FORMS(Alltoallv, Ialltoallv, INIT(Alltoallv), INIT_NAME(Alltoallv), sb, a->sci, a->sdi,
            MPI_INT, rb, a->rci, a->rdi, MPI_INT, comm);
      break;
    case NEIGHBOR:
      FORMS(Neighbor_alltoall, Ineighbor_alltoall, INIT(Neighbor_alltoall),
            INIT_NAME(Neighbor_alltoall), sb, n, MPI_INT, rb, n, MPI_INT, comm);
      break;
    case NEIGHBOR_V:
      FORMS(Neighbor_alltoallv, Ineighbor_alltoallv, INIT(Neighbor_alltoallv),
            INIT_NAME(Neighbor_alltoallv), sb, a->sci, a->sdi, MPI_INT, rb, a->rci, a->rdi, MPI_INT,
            comm);
      break;
    case NEIGHBOR_W:
      FORMS(Neighbor_alltoallw, Ineighbor_alltoallw, INIT(Neighbor_alltoallw),
            INIT_NAME(Neighbor_alltoallw), sb, a->sci, a->sdbi, a->types, rb, a->rci, a->rdbi,
            a->types, comm);
      break;
  }
  return name;
}

/* One form of collective c on comm, checked: round numbers keep every call's data apart. */
static void run(enum Coll c, enum Form f, int large, MPI_Comm comm, int n, int round) {
  Args a;
  args_for(&a, c, n);
  Req q = REQ_NULL;
  /* the library's collective that runs it */
  const char* library = c >= NEIGHBOR ? "neighbor_alltoallv" : c == 0 ? "alltoall" : "alltoallv";
  (void)library;
  if (f == PERSISTENT) {
#if HAVE_PERSISTENT
    fill_send(&a.s, round, a.speers);
    const char* name = issue(c, f, large, &a, comm, &q);
    char algorithm[NAME_MAX_CHARS] = "";
    for (int start = 0; start < 2; ++start) {
      fill_send(&a.s, round + start, a.speers);
      clear_recv(&a.r);
      START(&q);
      WAIT(&q);
      check_recv(&a.r, a.rsrcs, a.rtags, round + start, name);
    }
    REQUEST_ALGORITHM(q, algorithm);
    say(name, SAID(algorithm));
    FREE(&q);
#endif
  } else {
    fill_send(&a.s, round, a.speers);
    clear_recv(&a.r);
    const char* name = issue(c, f, large, &a, comm, &q);
    char algorithm[NAME_MAX_CHARS] = "";
    if (f == BLOCKING) {
      SAY_BLOCKING(name, comm, library);
    } else {
      if (f == NONBLOCKING_FIRST) {
        with_companions(comm, &q, name, algorithm);
      } else {
        REQUEST_ALGORITHM(q, algorithm);
        WAIT(&q);
      }
      say(name, SAID(algorithm));
    }
    check_recv(&a.r, a.rsrcs, a.rtags, round, name);
  }
  args_free(&a);
}

/* A fresh communicator for collective c: world's duplicate, or the ring graph over it. */
static MPI_Comm fresh_for(enum Coll c, int by_idup) {
  if (c < NEIGHBOR) return fresh(by_idup);
  const int w[2] = {1, 1};
  MPI_Comm g, dup;
  MPI_Dist_graph_create_adjacent(MPI_COMM_WORLD, degree, srcs, w, degree, dsts, w, MPI_INFO_NULL, 0,
                                 &g);
  if (!by_idup) return g;
  MPI_Request r; /* the duplicate has the graph too */
  MPI_Comm_idup(g, &dup, &r);
  MPI_Wait(&r, MPI_STATUS_IGNORE);
  MPI_Comm_free(&g);
  return dup;
}

int main(int argc, char** argv) {
  (void)argc, (void)argv;
  MPI_Init(&argc, &argv);
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &P);
  if (P > 64) {
    if (rank == 0) fprintf(stderr, "matrix: at most 64 ranks\n");
    MPI_Abort(MPI_COMM_WORLD, 2);
  }
  srcs[0] = (rank + P - 1) % P, srcs[1] = (rank + 1) % P;
  dsts[0] = (rank + 1) % P, dsts[1] = (rank + P - 1) % P;
  degree = P >= 3 ? 2 : 1;
  int round = 0;
  for (int c = ALLTOALL; c <= NEIGHBOR_W; ++c) {
    for (int by_idup = 0; by_idup < 2; ++by_idup) {
      MPI_Comm comm = fresh_for((enum Coll)c, by_idup);
      /* The first call on the communicator, then every other form in both spellings. The
       * drop-in library is not told of MPI_Comm_idup's communicator: the second pass tries the
       * nonblocking first call there; the first, the other forms too. */
      for (int large = 0; large <= HAVE_LARGE; ++large) {
        run((enum Coll)c, large ? NONBLOCKING : NONBLOCKING_FIRST, large, comm, 3, round += 10);
        if (by_idup) continue;
        run((enum Coll)c, PERSISTENT, large, comm, 2, round += 10);
        run((enum Coll)c, BLOCKING, large, comm, 3, round += 10);
        run((enum Coll)c, BLOCKING, large, comm, 1, round += 10);
        run((enum Coll)c, NONBLOCKING, large, comm, 2, round += 10);
      }
      MPI_Comm_free(&comm);
    }
    if (rank == 0) printf("done %s\n", kColl[c]);
  }
  int total = 0;
  MPI_Allreduce(&errors, &total, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
  if (rank == 0) printf(total ? "FAIL: %d wrong elements\n" : "PASS\n", total);
  MPI_Finalize();
  return total ? 1 : 0;
}
