/*
 * Pure C99 use of MPIX_Topo (issue 20): a random multigraph (duplicate edges, self loops, ranks
 * without neighbors) known to every rank from a formula, exchanged through a topology object
 * with every neighbor algorithm -- persistent (the object freed while the request is active, new
 * data every cycle) and blocking (the algorithm from MPIX_Topo_create's info) -- each result
 * checked element by element against the formula, gaps between blocks included, and compared
 * byte for byte with the same exchange through MPI_Dist_graph_create_adjacent +
 * MPIX_Neighbor_alltoallv. Exit status 0 on every rank when every rank passed.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mpi_advance.h"

#define GAP (-7777)

static unsigned hash(unsigned a, unsigned b) {
  unsigned h = a * 2654435761u ^ (b + 0x9e3779b9u + (a << 6) + (a >> 2));
  h ^= h >> 15;
  h *= 2246822519u;
  return h ^ (h >> 13);
}

/* Copies of the edge s -> d: 0, 1 or 2 (self loops too); rank 0 sends nothing at P >= 3. */
static int copies(int s, int d, int np) {
  if (np >= 3 && s == 0) return 0;
  const unsigned h = hash((unsigned)s, (unsigned)d);
  return h % 5 == 0 ? 2 : (h % 5 < 3 ? 1 : 0);
}

/* Elements of copy k of the edge s -> d, and element j of it in iteration iter. */
static int count_of(int s, int d, int k) { return (s * 3 + d * 5 + k) % 4; }
static int value(int s, int d, int k, int j, int iter) {
  return (int)(hash((unsigned)(s * 64 + d), (unsigned)(k * 4096 + j * 16 + iter)) & 0x3fffffff);
}

struct Side {
  int n, *peer, *copy, *counts, *displs, len;
};

/* Destinations ascending (duplicates together); sources descending: any order is MPI's. */
static void make_side(int me, int np, int sending, struct Side* x) {
  x->n = 0;
  for (int p = 0; p < np; ++p) x->n += sending ? copies(me, p, np) : copies(p, me, np);
  const size_t n = (size_t)x->n + 1;
  x->peer = malloc(n * sizeof(int));
  x->copy = malloc(n * sizeof(int));
  x->counts = malloc(n * sizeof(int));
  x->displs = malloc(n * sizeof(int));
  int i = 0, off = 0;
  for (int q = 0; q < np; ++q) {
    const int p = sending ? q : np - 1 - q;
    const int m = sending ? copies(me, p, np) : copies(p, me, np);
    for (int k = 0; k < m; ++k, ++i) {
      x->peer[i] = p;
      x->copy[i] = k;
      x->counts[i] = sending ? count_of(me, p, k) : count_of(p, me, k);
      x->displs[i] = off + 1; /* one gap element before every block */
      off += 1 + x->counts[i];
    }
  }
  x->len = off + 1;
}

static void free_side(struct Side* x) {
  free(x->peer);
  free(x->copy);
  free(x->counts);
  free(x->displs);
}

static void fill(const struct Side* s, int* buf, int me, int iter) {
  for (int i = 0; i < s->len; ++i) buf[i] = GAP;
  for (int b = 0; b < s->n; ++b)
    for (int j = 0; j < s->counts[b]; ++j)
      buf[s->displs[b] + j] = value(me, s->peer[b], s->copy[b], j, iter);
}

static int check(const struct Side* r, const int* buf, int me, int iter, const char* what) {
  int errors = 0;
  int* want = malloc(sizeof(int) * (size_t)r->len);
  for (int i = 0; i < r->len; ++i) want[i] = GAP;
  for (int b = 0; b < r->n; ++b)
    for (int j = 0; j < r->counts[b]; ++j)
      want[r->displs[b] + j] = value(r->peer[b], me, r->copy[b], j, iter);
  for (int i = 0; i < r->len; ++i) {
    if (buf[i] != want[i]) {
      if (errors < 4)
        fprintf(stderr, "[rank %d] %s: element %d: got %d, expected %d\n", me, what, i, buf[i],
                want[i]);
      ++errors;
    }
  }
  free(want);
  return errors;
}

static MPI_Info algorithm_info(const char* algorithm) {
  MPI_Info info = MPI_INFO_NULL;
  if (*algorithm) {
    MPI_Info_create(&info);
    MPI_Info_set(info, MPIX_INFO_KEY_ALGORITHM, algorithm);
  }
  return info;
}

/* One algorithm ("" = the default): persistent and blocking through the object, then the
 * communicator's distributed graph. */
static int run(const char* algorithm, int iter0, MPI_Comm graph) {
  int me, np, errors = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &me);
  MPI_Comm_size(MPI_COMM_WORLD, &np);
  struct Side s, r;
  make_side(me, np, 1, &s);
  make_side(me, np, 0, &r);
  int *sbuf = malloc(sizeof(int) * (size_t)s.len), *rbuf = malloc(sizeof(int) * (size_t)r.len);
  int* via_topo = malloc(sizeof(int) * (size_t)r.len);
  MPI_Info info = algorithm_info(algorithm);

  MPIX_Topo topo = MPIX_TOPO_NULL;
  int rc = MPIX_Topo_create(MPI_COMM_WORLD, r.n, r.peer, s.n, s.peer, MPI_INFO_NULL, &topo);
  MPIX_Request req = MPIX_REQUEST_NULL;
  if (rc == MPI_SUCCESS)
    rc = MPIX_Neighbor_alltoallv_topo_init(sbuf, s.counts, s.displs, MPI_INT, rbuf, r.counts,
                                           r.displs, MPI_INT, topo, info, &req);
  if (rc != MPI_SUCCESS) {
    fprintf(stderr, "[rank %d] '%s': MPIX_Topo_create or init failed (%d)\n", me, algorithm, rc);
    ++errors;
  } else {
    char name[MPIX_MAX_ALGORITHM_STRING];
    int len = 0;
    if (MPIX_Request_get_algorithm(req, name, &len) != MPI_SUCCESS ||
        (*algorithm && strcmp(algorithm, "auto") != 0 &&
         strncmp(name, algorithm, strlen(algorithm)) != 0) ||
        strcmp(name, "auto") == 0) {
      fprintf(stderr, "[rank %d] '%s': the request reports '%s'\n", me, algorithm, name);
      ++errors;
    }
    for (int iter = iter0; iter < iter0 + 3; ++iter) {
      fill(&s, sbuf, me, iter);
      for (int i = 0; i < r.len; ++i) rbuf[i] = GAP;
      for (int b = 0; b < r.n; ++b)
        for (int j = 0; j < r.counts[b]; ++j) rbuf[r.displs[b] + j] = -1;
      rc = MPIX_Start(&req);
      /* The request keeps what it uses: the object may go while it is active. */
      if (iter == iter0 && MPIX_Topo_free(&topo) != MPI_SUCCESS) ++errors;
      if (rc != MPI_SUCCESS || MPIX_Wait(&req, MPI_STATUS_IGNORE) != MPI_SUCCESS) {
        fprintf(stderr, "[rank %d] '%s': start/wait failed\n", me, algorithm);
        ++errors;
      }
      errors += check(&r, rbuf, me, iter, "persistent through MPIX_Topo");
    }
    if (MPIX_Request_free(&req) != MPI_SUCCESS || req != MPIX_REQUEST_NULL) ++errors;
    if (topo != MPIX_TOPO_NULL) ++errors;
  }

  /* Blocking: the object's algorithm from its info. */
  rc = MPIX_Topo_create(MPI_COMM_WORLD, r.n, r.peer, s.n, s.peer, info, &topo);
  const int iter = iter0 + 5;
  fill(&s, sbuf, me, iter);
  fill(&r, rbuf, -1, -1); /* gaps GAP, blocks garbage */
  if (rc == MPI_SUCCESS)
    rc = MPIX_Neighbor_alltoallv_topo(sbuf, s.counts, s.displs, MPI_INT, rbuf, r.counts, r.displs,
                                      MPI_INT, topo);
  if (rc != MPI_SUCCESS) {
    fprintf(stderr, "[rank %d] '%s': blocking through MPIX_Topo failed (%d)\n", me, algorithm, rc);
    ++errors;
  }
  errors += check(&r, rbuf, me, iter, "blocking through MPIX_Topo");
  memcpy(via_topo, rbuf, sizeof(int) * (size_t)r.len);
  if (MPIX_Topo_free(&topo) != MPI_SUCCESS) ++errors;

  /* The same exchange on the distributed graph communicator: the same bytes. */
  fill(&r, rbuf, -1, -1);
  rc = MPIX_Neighbor_alltoallv(sbuf, s.counts, s.displs, MPI_INT, rbuf, r.counts, r.displs, MPI_INT,
                               graph);
  if (rc != MPI_SUCCESS || memcmp(rbuf, via_topo, sizeof(int) * (size_t)r.len) != 0) {
    fprintf(stderr, "[rank %d] '%s': MPIX_Topo and the distributed graph differ (rc %d)\n", me,
            algorithm, rc);
    ++errors;
  }
  if (info != MPI_INFO_NULL) MPI_Info_free(&info);
  free(sbuf);
  free(rbuf);
  free(via_topo);
  free_side(&s);
  free_side(&r);
  return errors;
}

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  int me, np, errors = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &me);
  MPI_Comm_size(MPI_COMM_WORLD, &np);
  MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);

  struct Side s, r;
  make_side(me, np, 1, &s);
  make_side(me, np, 0, &r);
  MPI_Comm graph;
  /* Through a variable: GCC takes Open MPI's MPI_UNWEIGHTED for an array it would overread. */
  int* volatile unweighted = MPI_UNWEIGHTED;
  MPI_Dist_graph_create_adjacent(MPI_COMM_WORLD, r.n, r.peer, unweighted, s.n, s.peer, unweighted,
                                 MPI_INFO_NULL, 0, &graph);
  free_side(&s);
  free_side(&r);

  const char* algorithms[] = {"direct", "locality", "system", "auto", ""};
  for (int a = 0; a < 5; ++a) errors += run(algorithms[a], 10 * a, graph);

  /* An out-of-range rank on one rank: MPI_ERR_ARG on every rank, no object. */
  {
    const int src = (me + np - 1) % np, dst = me == np - 1 ? np : (me + 1) % np;
    MPIX_Topo topo = MPIX_TOPO_NULL;
    int cls = -1;
    MPI_Error_class(MPIX_Topo_create(MPI_COMM_WORLD, 1, &src, 1, &dst, MPI_INFO_NULL, &topo), &cls);
    if (cls != MPI_ERR_ARG || topo != MPIX_TOPO_NULL) {
      fprintf(stderr, "[rank %d] a rank out of range: class %d\n", me, cls);
      ++errors;
    }
  }

  MPI_Comm_free(&graph);
  int any = 0, local = errors != 0;
  MPI_Allreduce(&local, &any, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
  if (me == 0) printf("%s: %s on %d ranks\n", argv[0], any ? "FAILED" : "passed", np);
  MPI_Finalize();
  return any;
}
