/* An unmodified MPI program (it knows nothing of mpi-advance): MPI_Alltoall, MPI_Alltoallv,
 * MPI_Alltoallw, MPI_Neighbor_alltoall(v,w), with MPI-4 MPI_Alltoallv_c and
 * MPI_Neighbor_alltoallw_c, run under libmpi_advance_preload.so by run_preload.sh, which also
 * checks the preload's MPIX_REPORT lines. Every received element and every gap is checked on every
 * rank against a formula; all ranks fail if one does.
 *
 * The alltoallv part is the plan cache's test: 50 identical calls (alternating between two
 * buffer pairs, so a cached plan is re-bound), then from call 50 one rank only (the last)
 * changes its layout (its displacements: legal, its peers' arguments do not change), from call
 * 60 ranks 0 and 1 change the count between them, from call 70 the first pattern again; then a
 * derived type freed and replaced by another (MPI may hand out the same handle), MPI_IN_PLACE,
 * and an intercommunicator (which the preload passes to the MPI library). */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int rank, P, errors;

#define SENTINEL (-7)

static int value(int src, int dst, int k, int iter) {
  return src * 1000003 + dst * 1009 + k * 7 + iter * 31;
}

static void expect(int got, int want, const char* what, int iter, int idx) {
  if (got != want) {
    if (errors < 10)
      fprintf(stderr, "rank %d: %s iter %d index %d: got %d, want %d\n", rank, what, iter, idx, got,
              want);
    ++errors;
  }
}

static void test_alltoall(void) {
  const int n = 3;
  int* s = malloc(sizeof(int) * n * P);
  int* r = malloc(sizeof(int) * n * P);
  for (int iter = 0; iter < 6; ++iter) {
    const int in_place = iter == 5;
    for (int j = 0; j < P; ++j)
      for (int k = 0; k < n; ++k) (in_place ? r : s)[j * n + k] = value(rank, j, k, iter);
    if (!in_place) memset(r, 0xff, sizeof(int) * n * P);
    MPI_Alltoall(in_place ? MPI_IN_PLACE : s, n, MPI_INT, r, n, MPI_INT, MPI_COMM_WORLD);
    for (int i = 0; i < P; ++i)
      for (int k = 0; k < n; ++k)
        expect(r[i * n + k], value(i, rank, k, iter), "alltoall", iter, i * n + k);
  }
  free(s);
  free(r);
}

/* Counts and displacements of one pattern: count(i -> j) elements, blocks in reverse order
 * with a gap of 2 when reversed. */
static int count_of(int src, int dst, int phase) {
  int c = (src + 2 * dst) % 4; /* some zeros */
  if (phase == 2 && ((src == 0 && dst == 1) || (src == 1 && dst == 0))) c += 3;
  return c;
}

static int layout(int* counts, int* displs, int reversed) {
  int at = 0;
  for (int x = 0; x < P; ++x) {
    const int j = reversed ? P - 1 - x : x;
    displs[j] = at;
    at += counts[j] + (reversed ? 2 : 1);
  }
  return at;
}

static void test_alltoallv(void) {
  int *sc = malloc(sizeof(int) * P), *sd = malloc(sizeof(int) * P);
  int *rc = malloc(sizeof(int) * P), *rd = malloc(sizeof(int) * P);
  const int cap = P * 8 + 8;
  int* bufs[4];
  for (int b = 0; b < 4; ++b) bufs[b] = malloc(sizeof(int) * cap);
  for (int iter = 0; iter < 80; ++iter) {
    const int phase = iter < 50 ? 0 : iter < 60 ? 1 : iter < 70 ? 2 : 0;
    const int reversed = phase == 1 && rank == P - 1;
    for (int j = 0; j < P; ++j) {
      sc[j] = count_of(rank, j, phase);
      rc[j] = count_of(j, rank, phase);
    }
    layout(sc, sd, reversed);
    layout(rc, rd, reversed);
    int* s = bufs[2 * (iter % 2)];
    int* r = bufs[2 * (iter % 2) + 1];
    for (int x = 0; x < cap; ++x) s[x] = r[x] = SENTINEL;
    for (int j = 0; j < P; ++j)
      for (int k = 0; k < sc[j]; ++k) s[sd[j] + k] = value(rank, j, k, iter);
    MPI_Alltoallv(s, sc, sd, MPI_INT, r, rc, rd, MPI_INT, MPI_COMM_WORLD);
    int* want = malloc(sizeof(int) * cap);
    for (int x = 0; x < cap; ++x) want[x] = SENTINEL;
    for (int i = 0; i < P; ++i)
      for (int k = 0; k < rc[i]; ++k) want[rd[i] + k] = value(i, rank, k, iter);
    for (int x = 0; x < cap; ++x) expect(r[x], want[x], "alltoallv", iter, x);
    free(want);
  }
  /* A derived type (pairs of ints, stride 3: extent 4 ints) used, freed, and replaced by another
   * (contiguous pairs) that may get the same handle: a plan cached for the first must not run the
   * second. */
  for (int round = 0; round < 2; ++round) {
    MPI_Datatype t;
    if (round == 0)
      MPI_Type_vector(2, 1, 3, MPI_INT, &t);
    else
      MPI_Type_contiguous(2, MPI_INT, &t);
    MPI_Type_commit(&t);
    MPI_Aint lb, extent;
    MPI_Type_get_extent(t, &lb, &extent);
    const int ext = (int)(extent / (MPI_Aint)sizeof(int));
    int* s = malloc(sizeof(int) * P * ext * 2);
    int* r = malloc(sizeof(int) * P * ext * 2);
    for (int j = 0; j < P; ++j) sc[j] = rc[j] = 1, sd[j] = rd[j] = j;
    for (int iter = 0; iter < 5; ++iter) {
      for (int x = 0; x < P * ext * 2; ++x) s[x] = r[x] = SENTINEL;
      for (int j = 0; j < P; ++j)
        for (int k = 0; k < 2; ++k) s[j * ext + (round == 0 ? 3 * k : k)] = value(rank, j, k, iter);
      MPI_Alltoallv(s, sc, sd, t, r, rc, rd, t, MPI_COMM_WORLD);
      for (int i = 0; i < P; ++i) {
        for (int x = 0; x < ext; ++x) {
          int want = SENTINEL;
          if (round == 0 && (x == 0 || x == 3)) want = value(i, rank, x / 3, iter);
          if (round == 1) want = value(i, rank, x, iter);
          expect(r[i * ext + x], want,
                 round ? "alltoallv contiguous type" : "alltoallv vector type", iter, i * ext + x);
        }
      }
    }
    free(s);
    free(r);
    MPI_Type_free(&t);
  }
  /* MPI_IN_PLACE. */
  for (int iter = 0; iter < 5; ++iter) {
    int* r = bufs[1];
    for (int j = 0; j < P; ++j) rc[j] = (j + rank) % 3; /* symmetric in (i, j) */
    layout(rc, rd, 0);
    for (int x = 0; x < cap; ++x) r[x] = SENTINEL;
    for (int j = 0; j < P; ++j)
      for (int k = 0; k < rc[j]; ++k) r[rd[j] + k] = value(rank, j, k, iter);
    MPI_Alltoallv(MPI_IN_PLACE, NULL, NULL, MPI_DATATYPE_NULL, r, rc, rd, MPI_INT, MPI_COMM_WORLD);
    for (int i = 0; i < P; ++i)
      for (int k = 0; k < rc[i]; ++k)
        expect(r[rd[i] + k], value(i, rank, k, iter), "alltoallv in place", iter, rd[i] + k);
  }
  for (int b = 0; b < 4; ++b) free(bufs[b]);
  free(sc), free(sd), free(rc), free(rd);
}

/* A periodic ring: neighbors left (P-1 mod), right. */
/* MPI_Alltoallw: a datatype per block (ints, or ints each followed by a hole: a resized int of
 * extent 2), byte displacements in reverse rank order, zero counts, and MPI_IN_PLACE (send
 * arguments ignored: NULL). Every int of the receive buffer is checked, holes included. */
static void test_alltoallw(void) {
  MPI_Datatype holed;
  MPI_Type_create_resized(MPI_INT, 0, 2 * (MPI_Aint)sizeof(int), &holed);
  MPI_Type_commit(&holed);
  int *sc = malloc(sizeof(int) * P), *sd = malloc(sizeof(int) * P);
  int *rc = malloc(sizeof(int) * P), *rd = malloc(sizeof(int) * P);
  MPI_Datatype* st = malloc(sizeof(MPI_Datatype) * P);
  MPI_Datatype* rt = malloc(sizeof(MPI_Datatype) * P);
  const int cap = P * 10 + 4;
  int* s = malloc(sizeof(int) * cap);
  int* r = malloc(sizeof(int) * cap);
  int* want = malloc(sizeof(int) * cap);
  for (int iter = 0; iter < 6; ++iter) {
    const int in_place = iter >= 4;
    int sat = 0, rat = 0;
    for (int x = 0; x < P; ++x) {
      const int j = P - 1 - x;
      sc[j] = in_place ? (rank + j + iter) % 4 : (rank + 2 * j + iter) % 4;
      rc[j] = in_place ? (j + rank + iter) % 4 : (j + 2 * rank + iter) % 4;
      st[j] = (rank + j + iter) % 2 ? holed : MPI_INT;
      rt[j] = (j + iter) % 2 ? MPI_INT : holed;
      sd[j] = sat * (int)sizeof(int);
      rd[j] = rat * (int)sizeof(int);
      sat += sc[j] * (st[j] == holed ? 2 : 1) + 1;
      rat += rc[j] * (rt[j] == holed ? 2 : 1) + 1;
    }
    for (int x = 0; x < cap; ++x) s[x] = r[x] = want[x] = SENTINEL;
    for (int j = 0; j < P; ++j) {
      const int rstride = rt[j] == holed ? 2 : 1, sstride = st[j] == holed ? 2 : 1;
      for (int k = 0; k < rc[j]; ++k)
        want[rd[j] / (int)sizeof(int) + k * rstride] = value(j, rank, k, iter);
      for (int k = 0; k < sc[j] && !in_place; ++k)
        s[sd[j] / (int)sizeof(int) + k * sstride] = value(rank, j, k, iter);
      for (int k = 0; k < rc[j] && in_place; ++k)
        r[rd[j] / (int)sizeof(int) + k * rstride] = value(rank, j, k, iter);
    }
    if (in_place)
      MPI_Alltoallw(MPI_IN_PLACE, NULL, NULL, NULL, r, rc, rd, rt, MPI_COMM_WORLD);
    else
      MPI_Alltoallw(s, sc, sd, st, r, rc, rd, rt, MPI_COMM_WORLD);
    for (int x = 0; x < cap; ++x)
      expect(r[x], want[x], in_place ? "alltoallw in place" : "alltoallw", iter, x);
  }
  free(s), free(r), free(want), free(st), free(rt);
  free(sc), free(sd), free(rc), free(rd);
  MPI_Type_free(&holed);
}

static void test_neighbor(void) {
  MPI_Comm ring;
  int dims[1] = {P}, periods[1] = {1};
  MPI_Cart_create(MPI_COMM_WORLD, 1, dims, periods, 0, &ring);
  int me, left, right;
  MPI_Comm_rank(ring, &me);
  MPI_Cart_shift(ring, 0, 1, &left, &right);
  const int nb[2] = {left, right};
  MPI_Datatype vec;
  MPI_Type_vector(2, 1, 2, MPI_INT, &vec);
  MPI_Type_commit(&vec);
  for (int iter = 0; iter < 6; ++iter) {
    int s[8], r[8];
    for (int d = 0; d < 2; ++d)
      for (int k = 0; k < 2; ++k) s[d * 2 + k] = value(me, d, k, iter);
    for (int x = 0; x < 8; ++x) r[x] = SENTINEL;
    MPI_Neighbor_alltoall(s, 2, MPI_INT, r, 2, MPI_INT, ring);
    /* From left: what left sent in direction 1 (right); from right: direction 0. */
    for (int d = 0; d < 2; ++d)
      for (int k = 0; k < 2; ++k)
        expect(r[d * 2 + k], value(nb[d], 1 - d, k, iter), "neighbor_alltoall", iter, d * 2 + k);
    /* v form: one element to the left, two to the right, gap between. */
    const int sc[2] = {1, 2}, sd[2] = {0, 2}, rc[2] = {2, 1}, rd[2] = {4, 0};
    for (int x = 0; x < 8; ++x) r[x] = SENTINEL;
    s[0] = value(me, 0, 0, iter);
    s[2] = value(me, 1, 0, iter), s[3] = value(me, 1, 1, iter);
    MPI_Neighbor_alltoallv(s, sc, sd, MPI_INT, r, rc, rd, MPI_INT, ring);
    expect(r[4], value(left, 1, 0, iter), "neighbor_alltoallv", iter, 4);
    expect(r[5], value(left, 1, 1, iter), "neighbor_alltoallv", iter, 5);
    expect(r[0], value(right, 0, 0, iter), "neighbor_alltoallv", iter, 0);
    expect(r[1], SENTINEL, "neighbor_alltoallv gap", iter, 1);
    /* w form: to the left two ints with a hole between them (a vector type), to the right one
     * int; byte displacements; received as ints. */
    const int wsc[2] = {1, 1}, wrc[2] = {1, 2};
    const MPI_Aint wsd[2] = {0, 4 * (MPI_Aint)sizeof(int)};
    const MPI_Aint wrd[2] = {6 * (MPI_Aint)sizeof(int), 1 * (MPI_Aint)sizeof(int)};
    const MPI_Datatype wst[2] = {vec, MPI_INT}, wrt[2] = {MPI_INT, MPI_INT};
    for (int x = 0; x < 8; ++x) r[x] = SENTINEL;
    s[0] = value(me, 0, 0, iter), s[1] = SENTINEL, s[2] = value(me, 0, 1, iter);
    s[4] = value(me, 1, 0, iter);
    MPI_Neighbor_alltoallw(s, wsc, wsd, wst, r, wrc, wrd, wrt, ring);
    for (int x = 0; x < 8; ++x) {
      const int want = x == 6   ? value(left, 1, 0, iter)
                       : x == 1 ? value(right, 0, 0, iter)
                       : x == 2 ? value(right, 0, 1, iter)
                                : SENTINEL;
      expect(r[x], want, "neighbor_alltoallw", iter, x);
    }
  }
  MPI_Type_free(&vec);
  MPI_Comm_free(&ring);
}

#if MPI_VERSION >= 4
/* The large-count forms (MPI-4), with small counts: MPI_Alltoallv_c (blocks in reverse order)
 * and MPI_Neighbor_alltoallw_c on a periodic ring (to the left one int, to the right two). */
static void test_large_count_forms(void) {
  MPI_Count* sc = malloc(sizeof(MPI_Count) * P);
  MPI_Count* rc = malloc(sizeof(MPI_Count) * P);
  MPI_Aint* sd = malloc(sizeof(MPI_Aint) * P);
  MPI_Aint* rd = malloc(sizeof(MPI_Aint) * P);
  int* s = malloc(sizeof(int) * 2 * P);
  int* r = malloc(sizeof(int) * 2 * P);
  for (int i = 0; i < P; ++i) sc[i] = rc[i] = 2, sd[i] = 2 * (P - 1 - i), rd[i] = 2 * i;
  MPI_Comm ring;
  int dims[1] = {P}, periods[1] = {1}, left, right;
  MPI_Cart_create(MPI_COMM_WORLD, 1, dims, periods, 0, &ring);
  MPI_Cart_shift(ring, 0, 1, &left, &right);
  for (int iter = 0; iter < 3; ++iter) {
    for (int i = 0; i < P; ++i)
      for (int k = 0; k < 2; ++k) s[sd[i] + k] = value(rank, i, k, iter), r[2 * i + k] = SENTINEL;
    MPI_Alltoallv_c(s, sc, sd, MPI_INT, r, rc, rd, MPI_INT, MPI_COMM_WORLD);
    for (int i = 0; i < P; ++i)
      for (int k = 0; k < 2; ++k)
        expect(r[2 * i + k], value(i, rank, k, iter), "alltoallv_c", iter, 2 * i + k);
    const MPI_Count wsc[2] = {1, 2}, wrc[2] = {2, 1};
    const MPI_Aint wsd[2] = {0, sizeof(int)}, wrd[2] = {sizeof(int), 4 * sizeof(int)};
    const MPI_Datatype t[2] = {MPI_INT, MPI_INT};
    int ws[3] = {value(rank, 0, 0, iter), value(rank, 1, 0, iter), value(rank, 1, 1, iter)};
    int wr[5] = {SENTINEL, SENTINEL, SENTINEL, SENTINEL, SENTINEL};
    MPI_Neighbor_alltoallw_c(ws, wsc, wsd, t, wr, wrc, wrd, t, ring);
    /* From the left: its two ints sent right; from the right: its one int sent left. */
    const int want[5] = {SENTINEL, value(left, 1, 0, iter), value(left, 1, 1, iter), SENTINEL,
                         value(right, 0, 0, iter)};
    for (int x = 0; x < 5; ++x) expect(wr[x], want[x], "neighbor_alltoallw_c", iter, x);
  }
  MPI_Comm_free(&ring);
  free(sc), free(rc), free(sd), free(rd), free(s), free(r);
}
#endif

/* An intercommunicator: the preload hands it to the MPI library. */
static void test_intercomm(void) {
  if (P < 2) return;
  MPI_Comm half, inter;
  const int color = rank % 2;
  MPI_Comm_split(MPI_COMM_WORLD, color, rank, &half);
  MPI_Intercomm_create(half, 0, MPI_COMM_WORLD, 1 - color, 99, &inter);
  int remote;
  MPI_Comm_remote_size(inter, &remote);
  int* s = malloc(sizeof(int) * remote);
  int* r = malloc(sizeof(int) * remote);
  for (int j = 0; j < remote; ++j) s[j] = value(rank, j, 0, 0);
  MPI_Alltoall(s, 1, MPI_INT, r, 1, MPI_INT, inter);
  int lrank;
  MPI_Comm_rank(half, &lrank);
  for (int i = 0; i < remote; ++i) {
    const int world = 2 * i + (1 - color); /* rank i of the other group */
    expect(r[i], value(world, lrank, 0, 0), "intercomm alltoall", 0, i);
  }
  free(s), free(r);
  MPI_Comm_free(&inter);
  MPI_Comm_free(&half);
}

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &P);
  test_alltoall();
  test_alltoallv();
  test_alltoallw();
  test_neighbor();
#if MPI_VERSION >= 4
  test_large_count_forms();
#endif
  test_intercomm();
  int total = 0;
  MPI_Allreduce(&errors, &total, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
  if (rank == 0) printf(total ? "FAIL: %d wrong values\n" : "PASS\n", total);
  MPI_Finalize();
  return total ? 1 : 0;
}
