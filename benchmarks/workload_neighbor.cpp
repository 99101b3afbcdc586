/*
 * workload_neighbor.cpp -- mpia_bench --collective neighbor: neighborhood all-to-all-v on
 * process topologies. Patterns (the size n comes from --sizes; all exchanges move doubles):
 *   stencil2d  halo exchange on a 2-D Cartesian communicator (MPI_Dims_create +
 *              MPI_Cart_create): every rank owns an n x n box and exchanges its 4 faces of n
 *              doubles with its face neighbours
 *   stencil3d  the same in 3-D: an n^3 box, 6 faces of n^2 doubles
 *   stencil27  an n^3 box's halo with all 26 neighbours on the same 3-D grid: 6 faces of n^2,
 *              12 edges of n and 8 corners of 1 double; the lists built here (a neighbour
 *              past a non-periodic edge left out, several directions to one rank several edges,
 *              matched in order) and run like random's: ours through MPIX_Topo, the MPI
 *              library's on MPI_Dist_graph_create_adjacent's communicator
 *   lap2d      sparse matrix-vector product halo of the 5-point Laplacian on an n x n grid
 *              (n^2 rows, lexicographic order, Dirichlet boundary)
 *   lap3d      the same for the 7-point Laplacian on an n^3 grid
 *   powerlaw   a random sparse matrix of n^2 rows with power-law row lengths: row i holds the
 *              diagonal and k_i off-diagonal entries, k_i = min(kmax, floor(2 u^(-2/3))) for a
 *              seeded uniform u (a discrete Pareto tail, P(k) ~ k^-2.5; mean about 6, kmax =
 *              min(n^2-1, 1000)); each entry lies at a log-uniform distance d in [1, n^2) left
 *              or right of the diagonal (column (i +- d) mod n^2)
 *   spmv       an SpMV halo of a banded matrix with n^2 rows per rank (P n^2 rows): row i holds
 *              the band |i-j| <= 3 and, when its hash (seed, i) says so (1 row in 8), one more
 *              entry at a uniform random column
 *   mixed      dense and sparse node pairs in one graph (through MPIX_Topo, as random): every
 *              rank sends n bytes (rounded up to whole doubles) to each rank of the next node
 *              (node i to node i+1 mod N; on one node, to the node's other ranks) and 32 KiB to
 *              each of 2 ranks on other nodes (neither its own nor the next; on fewer than 3
 *              nodes none), drawn from (seed, rank): many small edges between some node pairs,
 *              a few large ones between the others -- where aggregating pays for some pairs
 *              and not for others (locality_partial's case). Two draws may hit one rank: two
 *              edges, matched in order
 *   random     a random directed graph through MPIX_Topo: each of the P(P-1) possible edges
 *              q -> d (d != q) with probability min(1, K/(P-1)), K = --degree (default 16),
 *              drawn from (seed, q, d), so every rank knows its sources; blocks of n bytes
 *              (rounded up to whole doubles). mpi-advance's calls run on an MPIX_Topo made from
 *              the lists (one per communicator a variant uses), the MPI library's on
 *              MPI_Dist_graph_create_adjacent's communicator with the same lists
 * The matrices are partitioned by rows into P contiguous blocks; rank p receives from the owner
 * q of every column it needs the distinct needed entries of x owned by q (ascending), on a
 * communicator made by MPI_Dist_graph_create_adjacent (sources: the owners, ascending;
 * destinations: the ranks that need entries of p, ascending).
 *
 * Cartesian periodicity (--periodic): "auto" makes a dimension periodic when it has at least 3
 * ranks, so that every topology is non-degenerate; "all" makes every dimension periodic:
 * dimensions of 1 or 2 ranks then have the same rank as both neighbours, where MPI libraries
 * have differed, and the MPI library's results are only noted when they deviate from the
 * MPI-4.1 definition (receive block 2d holds what the -1 neighbour sent in its block 2d+1);
 * "none": no dimension is periodic. On lists (stencil27, scattered placement) such a rank is
 * several edges, matched in order as MPI defines it for graphs, and every result is checked.
 *
 * Placement (--placement, the stencils): "block" puts grid position i (row-major, the order of
 * MPI_Cart_create without reorder) on rank i; "scattered" deals the positions round robin over
 * the nodes (MPIX_LOCALITY=ppn:Q, else the shared-memory nodes), so that consecutive positions
 * lie on different nodes: rank (i mod N) Q + i / N for N nodes of Q (grid_ranks has the rule for
 * unequal nodes). stencil2d and stencil3d then run on lists like stencil27's.
 *
 * Blocks lie in the buffers in reverse neighbour order with a one-double gap before each; the
 * gaps of a receive buffer must come back untouched.
 */
#include "bench_core.hpp"
#include "system_coll.h"

#include <algorithm>
#include <array>
#include <climits>
#include <cmath>
#include <cstring>

namespace mpia_bench {
namespace {

constexpr double kGapValue = -12345.5;        // what the receive buffers' gaps hold and keep
constexpr long long kSpmvBand = 3;            // spmv: the band's half width, |i - j| <= 3
constexpr int kMixedFar = 2;                  // mixed: large edges per rank to other nodes
constexpr long long kMixedFarDoubles = 4096;  // mixed: their blocks (32 KiB)

// A double in [0, 1) from a key, exactly representable: the data every rank can predict.
double value_of(std::uint64_t key) {
  return static_cast<double>(mix64(key) >> 11) * (1.0 / 9007199254740992.0);
}

class NeighborCase : public Case {
 public:
  std::vector<int> sources, dests;                      // neighbour ranks in MPI order
  std::vector<int> scounts, sdispls, rcounts, rdispls;  // in doubles
  std::vector<double> dsend, dexpected, dpoison;        // built here, then copied into the bytes
  bool via_topo = false;                                // ours through MPIX_Topo ("random")
  std::map<MPI_Comm, MPIX_Topo> topos;                  // one per communicator, made on first use
  NeighborCase() { elem = sizeof(double); }
  ~NeighborCase() override {
    for (auto& t : topos) MPIX_Topo_free(&t.second);
  }
  void release(MPI_Comm cm) override {
    auto it = topos.find(cm);
    if (it == topos.end()) return;
    MPIX_Topo_free(&it->second);
    topos.erase(it);
  }
  // The object over cm (collective the first time: every rank asks at the same call). It takes
  // cm's MPIX_Comm_set_algorithm choice, as the blk:<name> variants need.
  int topo_for(MPI_Comm cm, MPIX_Topo* x) {
    auto it = topos.find(cm);
    if (it != topos.end()) {
      *x = it->second;
      return MPI_SUCCESS;
    }
    const int rc = MPIX_Topo_create(cm, static_cast<int>(sources.size()), sources.data(),
                                    static_cast<int>(dests.size()), dests.data(), MPI_INFO_NULL, x);
    if (rc == MPI_SUCCESS) topos[cm] = *x;
    return rc;
  }

  int sys_blocking(void* recv, MPI_Comm cm) override {
    return MPI_Neighbor_alltoallv(send.data(), scounts.data(), sdispls.data(), MPI_DOUBLE, recv,
                                  rcounts.data(), rdispls.data(), MPI_DOUBLE, cm);
  }
  int sys_init(void* recv, MPI_Comm cm, MPI_Request* req) override {
    return mpia_bench_system_neighbor_alltoallv_init(
        send.data(), scounts.data(), sdispls.data(), MPI_DOUBLE, recv, rcounts.data(),
        rdispls.data(), MPI_DOUBLE, cm, MPI_INFO_NULL, req);
  }
  int ours_blocking(void* recv, MPI_Comm cm) override {
    if (via_topo) {
      MPIX_Topo x = MPIX_TOPO_NULL;
      const int rc = topo_for(cm, &x);
      if (rc != MPI_SUCCESS) return rc;
      return MPIX_Neighbor_alltoallv_topo(send.data(), scounts.data(), sdispls.data(), MPI_DOUBLE,
                                          recv, rcounts.data(), rdispls.data(), MPI_DOUBLE, x);
    }
    return MPIX_Neighbor_alltoallv(send.data(), scounts.data(), sdispls.data(), MPI_DOUBLE, recv,
                                   rcounts.data(), rdispls.data(), MPI_DOUBLE, cm);
  }
  int ours_init(void* recv, MPI_Comm cm, MPI_Info info, MPIX_Request* req) override {
    if (via_topo) {
      MPIX_Topo x = MPIX_TOPO_NULL;
      const int rc = topo_for(cm, &x);
      if (rc != MPI_SUCCESS) return rc;
      return MPIX_Neighbor_alltoallv_topo_init(send.data(), scounts.data(), sdispls.data(),
                                               MPI_DOUBLE, recv, rcounts.data(), rdispls.data(),
                                               MPI_DOUBLE, x, info, req);
    }
    return MPIX_Neighbor_alltoallv_init(send.data(), scounts.data(), sdispls.data(), MPI_DOUBLE,
                                        recv, rcounts.data(), rdispls.data(), MPI_DOUBLE, cm, info,
                                        req);
  }
  std::string locate(std::size_t i) const override {
    const int k = block_at(rcounts, rdispls, i);
    if (k < 0)
      return "a gap between blocks (offset " + std::to_string(i) + ", must stay untouched)";
    return "receive block " + std::to_string(k) + " (from " +
           (sources[k] == MPI_PROC_NULL ? std::string("MPI_PROC_NULL: must stay untouched")
                                        : "rank " + std::to_string(sources[k])) +
           "), element " + std::to_string(i - rdispls[k]) + " of " + std::to_string(rcounts[k]);
  }
  std::string show(const unsigned char* p) const override {
    double d;
    std::memcpy(&d, p, sizeof d);
    return fmt("%.17g", d);
  }

  // The communicator of the calls: MPI_Dist_graph_create_adjacent's with sources and dests
  // (unweighted, no reorder). topo: ours run through an MPIX_Topo of the same lists, and this
  // communicator serves the MPI library's calls (the baseline).
  void graph(const Ctx& c, bool topo) {
    check_rc(
        c,
        MPI_Dist_graph_create_adjacent(c.comm, static_cast<int>(sources.size()), sources.data(),
                                       MPI_UNWEIGHTED, static_cast<int>(dests.size()), dests.data(),
                                       MPI_UNWEIGHTED, MPI_INFO_NULL, 0, &comm),
        "MPI_Dist_graph_create_adjacent", pattern);
    owns_comm = true;
    MPI_Comm_set_errhandler(comm, MPI_ERRORS_RETURN);
    via_topo = topo;
  }

  void layout(const Ctx& c, const std::vector<int>& counts, std::vector<int>& displs,
              std::size_t& total) {
    displs.assign(counts.size(), 0);
    std::size_t off = 0;
    for (std::size_t j = counts.size(); j-- > 0;) {
      off += 1;
      if (off > static_cast<std::size_t>(INT_MAX)) break;
      displs[j] = static_cast<int>(off);
      off += static_cast<std::size_t>(counts[j]);
    }
    total = off + 1;
    if (total > static_cast<std::size_t>(INT_MAX))
      die(c, pattern + " n=" + std::to_string(size) + ": buffers above INT_MAX doubles");
  }
  void alloc(const Ctx& c) {
    std::size_t slen = 0, rlen = 0;
    layout(c, scounts, sdispls, slen);
    layout(c, rcounts, rdispls, rlen);
    dsend.assign(slen, kGapValue);
    dexpected.assign(rlen, kGapValue);
    dpoison.assign(rlen, kGapValue);
  }
  // After alloc: element i of send block j is sent(j, i), of receive block k received(k, i)
  // (the poison its negation minus one, so a block left unwritten shows).
  template <class Sent, class Received>
  void fill(Sent sent, Received received) {
    for (std::size_t j = 0; j < dests.size(); ++j)
      for (long long i = 0; i < scounts[j]; ++i) dsend[sdispls[j] + i] = sent(j, i);
    for (std::size_t k = 0; k < sources.size(); ++k)
      for (long long i = 0; i < rcounts[k]; ++i) {
        const double e = received(k, i);
        dexpected[rdispls[k] + i] = e;
        dpoison[rdispls[k] + i] = -1.0 - e;
      }
  }
  void finish() {
    auto bytes = [](const std::vector<double>& d, std::vector<unsigned char>& b) {
      b.resize(d.size() * sizeof(double));
      if (!d.empty()) std::memcpy(b.data(), d.data(), b.size());
    };
    bytes(dsend, send);
    bytes(dexpected, expected);
    bytes(dpoison, poison);
    dsend.clear();
    dexpected.clear();
    dpoison.clear();
  }
};

// The value of element i of the block a stencil's rank src sends in direction (block) b.
double halo_value(unsigned long long seed, int src, int block, long long i) {
  return value_of(mix64(seed ^ 0x5EED0F57E9C11ull) ^
                  mix64((static_cast<std::uint64_t>(src) << 40) ^
                        (static_cast<std::uint64_t>(block) << 32) ^ static_cast<std::uint64_t>(i)));
}

// A stencil's process grid: MPI_Dims_create's shape and --periodic's periods; returns the
// header's "AxB periods p,q". degenerate: a periodic dimension of 1 or 2 ranks.
std::string grid_shape(const Options& o, int nprocs, int ndims, int* dims, int* periods,
                       bool& degenerate) {
  MPI_Dims_create(nprocs, ndims, dims);
  std::string dstr, pstr;
  degenerate = false;
  for (int d = 0; d < ndims; ++d) {
    periods[d] = o.periodic == "all" ? 1 : o.periodic == "none" ? 0 : dims[d] >= 3;
    if (periods[d] && dims[d] <= 2) degenerate = true;
    dstr += (d ? "x" : "") + std::to_string(dims[d]);
    pstr += (d ? "," : "") + std::to_string(periods[d]);
  }
  return dstr + " periods " + pstr;
}

// Halo exchange of an n^ndims box on a Cartesian communicator.
void make_stencil(const Ctx& c, const Options& o, NeighborCase& t, int ndims) {
  const long long n = t.size;
  long long face = 1;
  for (int d = 0; d < ndims - 1; ++d) face *= n;
  if (face > INT_MAX / 8) die(c, t.pattern + " n=" + std::to_string(n) + ": faces too large");
  int dims[3] = {0, 0, 0}, periods[3] = {0, 0, 0};
  t.header = "cart " + grid_shape(o, c.nprocs, ndims, dims, periods, t.degenerate);
  check_rc(c, MPI_Cart_create(c.comm, ndims, dims, periods, 0, &t.comm), "MPI_Cart_create",
           t.pattern);
  t.owns_comm = true;
  MPI_Comm_set_errhandler(t.comm, MPI_ERRORS_RETURN);
  const int k = 2 * ndims;
  t.sources.resize(k);
  t.dests.resize(k);
  for (int d = 0; d < ndims; ++d) {
    int lo = MPI_PROC_NULL, hi = MPI_PROC_NULL;
    check_rc(c, MPI_Cart_shift(t.comm, d, 1, &lo, &hi), "MPI_Cart_shift", t.pattern);
    t.sources[2 * d] = t.dests[2 * d] = lo;
    t.sources[2 * d + 1] = t.dests[2 * d + 1] = hi;
  }
  t.scounts.assign(k, static_cast<int>(face));
  t.rcounts.assign(k, static_cast<int>(face));
  t.alloc(c);
  for (int b = 0; b < k; ++b)
    for (long long i = 0; i < face; ++i)
      t.dsend[t.sdispls[b] + i] = halo_value(o.seed, c.rank, b, i);
  // MPI-4.1 7.6: receive block 2d comes from the -1 neighbour, which sent it as its block
  // 2d+1; block 2d+1 from the +1 neighbour's block 2d. A MPI_PROC_NULL block stays untouched.
  for (int b = 0; b < k; ++b) {
    const int src = t.sources[b];
    for (long long i = 0; i < face; ++i) {
      const std::size_t at = static_cast<std::size_t>(t.rdispls[b] + i);
      const double e = src == MPI_PROC_NULL ? -2.0 : halo_value(o.seed, src, b ^ 1, i);
      t.dexpected[at] = e;
      t.dpoison[at] = src == MPI_PROC_NULL ? -2.0 : -1.0 - e;
    }
  }
}

// The node of every rank of the world communicator (mpi-advance's locality: MPIX_LOCALITY,
// else the shared-memory nodes).
std::vector<int> node_ids(const Ctx& c, const std::string& pat) {
  std::vector<int> node(static_cast<std::size_t>(c.nprocs));
  for (int r = 0; r < c.nprocs; ++r) {
    int lr = 0;
    check_rc(c, MPIX_Comm_rank_locality(c.comm, r, &node[r], &lr, nullptr, nullptr),
             "MPIX_Comm_rank_locality", pat);
  }
  return node;
}

// Grid position -> rank under --placement. block: the identity (MPI_Cart_create's order
// without reorder). scattered: the positions dealt round robin over the nodes (mpi-advance's
// locality of MPI_COMM_WORLD: MPIX_LOCALITY, else the shared-memory nodes), each node's ranks
// in rank order; a node that runs out of ranks drops out of the deal. So position i is the i-th
// rank by (its place among its node's ranks, its node): rank (i mod N) Q + i / N for N nodes of
// Q ranks each, ranks 0-3, 4-7, ....
std::vector<int> grid_ranks(const Ctx& c, const Options& o, const std::string& pat) {
  std::vector<int> at(c.nprocs);
  for (int r = 0; r < c.nprocs; ++r) at[r] = r;
  if (o.placement != "scattered") return at;
  const std::vector<int> node = node_ids(c, pat);
  std::map<int, int> used;                           // node -> its ranks seen so far
  std::vector<std::pair<int, int>> place(c.nprocs);  // rank -> (place in node, node)
  for (int r = 0; r < c.nprocs; ++r) place[r] = {used[node[r]]++, node[r]};
  std::sort(at.begin(), at.end(), [&](int a, int b) { return place[a] < place[b]; });
  return at;
}

// A halo exchange on the grid of grid_shape through explicit neighbour lists, whatever the
// placement: mpi-advance's calls through MPIX_Topo, the MPI library's on
// MPI_Dist_graph_create_adjacent's communicator, as "random". The directions: the 26 offsets
// in {-1,0,1}^3 but 0 in lexicographic order (all26), else the faces -e_d, +e_d for d = 0, 1,
// .. (Cartesian order); a block holds n^(number of zero components of its offset) doubles. A
// neighbour past a non-periodic edge is left out; one rank in several directions (periodic
// dimensions of 1 or 2 ranks) is several edges, matched in order as MPI-4.1 7.5.4 says: the
// j-th block p receives from q is the j-th block q sends to p.
void make_grid(const Ctx& c, const Options& o, NeighborCase& t, int ndims, bool all26) {
  const long long n = t.size;
  const int P = c.nprocs;
  int dims[3] = {0, 0, 0}, periods[3] = {0, 0, 0};
  // A rank in several directions is several edges to it, which MPI libraries have paired
  // differently (MPICH 4.3.2: in reverse): the MPI library's results there are only noted.
  const std::string shape = grid_shape(o, P, ndims, dims, periods, t.degenerate);
  std::vector<std::array<int, 3>> off;
  if (all26) {
    for (int a = -1; a <= 1; ++a)
      for (int b = -1; b <= 1; ++b)
        for (int e = -1; e <= 1; ++e)
          if (a || b || e) off.push_back({a, b, e});
  } else {
    for (int d = 0; d < ndims; ++d)
      for (int s : {-1, 1}) {
        std::array<int, 3> v{0, 0, 0};
        v[d] = s;
        off.push_back(v);
      }
  }
  std::vector<int> count(off.size());
  for (std::size_t b = 0; b < off.size(); ++b) {
    long long k = 1;
    for (int d = 0; d < ndims; ++d) k *= off[b][d] == 0 ? n : 1;
    if (k > INT_MAX / 32) die(c, t.pattern + " n=" + std::to_string(n) + ": faces too large");
    count[b] = static_cast<int>(k);
  }
  const std::vector<int> rank_at = grid_ranks(c, o, t.pattern);
  std::vector<int> pos_of(P);
  for (int p = 0; p < P; ++p) pos_of[rank_at[p]] = p;
  // The neighbours of grid position p: (direction, rank), directions in order.
  auto neighbours = [&](int p) {
    int x[3] = {0, 0, 0};
    for (int d = ndims; d-- > 0; p /= dims[d]) x[d] = p % dims[d];
    std::vector<std::pair<int, int>> v;
    for (std::size_t b = 0; b < off.size(); ++b) {
      int q = 0;
      bool inside = true;
      for (int d = 0; d < ndims && inside; ++d) {
        int y = x[d] + off[b][d];
        if (y < 0 || y >= dims[d]) {
          inside = periods[d] != 0;
          y = (y + dims[d]) % dims[d];
        }
        q = q * dims[d] + y;
      }
      if (inside) v.emplace_back(static_cast<int>(b), rank_at[q]);
    }
    return v;
  };
  std::vector<int> dir;  // the direction of each edge
  for (const auto& e : neighbours(pos_of[c.rank])) {
    dir.push_back(e.first);
    t.dests.push_back(e.second);
    t.scounts.push_back(count[e.first]);
  }
  t.sources = t.dests;
  t.rcounts = t.scounts;
  t.graph(c, true);
  t.header = "grid " + shape + ", " + std::to_string(off.size()) + " directions, " + o.placement +
             " placement" +
             (o.placement == "scattered" ? " over " + std::to_string(c.nnodes) + " nodes" : "") +
             ", lists through MPIX_Topo";
  t.alloc(c);
  for (std::size_t j = 0; j < t.dests.size(); ++j)
    for (long long i = 0; i < t.scounts[j]; ++i)
      t.dsend[t.sdispls[j] + i] = halo_value(o.seed, c.rank, dir[j], i);
  for (std::size_t k = 0; k < t.sources.size(); ++k) {
    const int q = t.sources[k];
    long long j = std::count(t.sources.begin(), t.sources.begin() + k, q);
    int sent = -1;  // the direction q sent the block in
    for (const auto& e : neighbours(pos_of[q]))
      if (e.second == c.rank && j-- == 0) {
        sent = e.first;
        break;
      }
    if (sent < 0 || count[sent] != t.rcounts[k])
      die(c, t.pattern + ": the grid's edges are not symmetric (a bug of the benchmark)");
    for (long long i = 0; i < t.rcounts[k]; ++i) {
      const double e = halo_value(o.seed, q, sent, i);
      t.dexpected[t.rdispls[k] + i] = e;
      t.dpoison[t.rdispls[k] + i] = -1.0 - e;
    }
  }
}

// The column indices of row i of a generated matrix (N rows; duplicates allowed).
void row_columns(const std::string& pat, long long n, long long N, long long i,
                 unsigned long long seed, std::vector<long long>& cols) {
  cols.clear();
  cols.push_back(i);
  if (pat == "lap2d") {
    const long long x = i % n, y = i / n;
    if (x > 0) cols.push_back(i - 1);
    if (x + 1 < n) cols.push_back(i + 1);
    if (y > 0) cols.push_back(i - n);
    if (y + 1 < n) cols.push_back(i + n);
  } else if (pat == "lap3d") {
    const long long x = i % n, y = (i / n) % n, z = i / (n * n);
    if (x > 0) cols.push_back(i - 1);
    if (x + 1 < n) cols.push_back(i + 1);
    if (y > 0) cols.push_back(i - n);
    if (y + 1 < n) cols.push_back(i + n);
    if (z > 0) cols.push_back(i - n * n);
    if (z + 1 < n) cols.push_back(i + n * n);
  } else if (pat == "spmv") {
    for (long long d = -kSpmvBand; d <= kSpmvBand; ++d)
      if (d != 0 && i + d >= 0 && i + d < N) cols.push_back(i + d);
    const std::uint64_t h =
        mix64(mix64(seed ^ 0x6A09E667F3BCC909ull) ^ static_cast<std::uint64_t>(i));
    if ((h & 7) == 0)  // one row in 8: a column anywhere, uniform
      cols.push_back(std::min(N - 1, static_cast<long long>(value_of(h) * static_cast<double>(N))));
  } else {  // powerlaw
    if (N < 2) return;
    const std::uint64_t h =
        mix64(mix64(seed ^ 0x9E3779B97F4A7C15ull) ^ static_cast<std::uint64_t>(i));
    const double u = 1.0 - static_cast<double>(h >> 11) * (1.0 / 9007199254740992.0);  // (0,1]
    const long long kmax = std::min<long long>(N - 1, 1000);
    const double kd = std::floor(2.0 * std::pow(u, -1.0 / 1.5));
    const long long k = kd >= static_cast<double>(kmax) ? kmax : static_cast<long long>(kd);
    const double logN = std::log(static_cast<double>(N));
    for (long long j = 0; j < k; ++j) {
      const std::uint64_t g = mix64(h ^ mix64(static_cast<std::uint64_t>(j) + 1));
      const double v = static_cast<double>(g >> 11) * (1.0 / 9007199254740992.0);
      long long d = static_cast<long long>(std::floor(std::exp(v * logN)));
      d = std::max(1LL, std::min(d, N - 1));
      long long col = (g & 1) ? i + d : i - d;
      col %= N;
      if (col < 0) col += N;
      cols.push_back(col);
    }
  }
}

// Sparse matrix-vector halo on a distributed graph.
void make_sparse(const Ctx& c, const Options& o, NeighborCase& t) {
  const long long n = t.size;
  const std::string& pat = t.pattern;
  const long long N = pat == "lap3d" ? n * n * n : pat == "spmv" ? n * n * c.nprocs : n * n;
  if (N > INT_MAX) die(c, pat + " n=" + std::to_string(n) + ": more than INT_MAX rows");
  const int P = c.nprocs;
  auto start = [&](int p) { return static_cast<long long>(p) * N / P; };
  auto owner = [&](long long col) {
    int lo = 0, hi = P - 1;  // the last p with start(p) <= col
    while (lo < hi) {
      int mid = (lo + hi + 1) / 2;
      if (start(mid) <= col)
        lo = mid;
      else
        hi = mid - 1;
    }
    return lo;
  };
  const long long r0 = start(c.rank), r1 = start(c.rank + 1);
  std::vector<long long> need, cols;
  for (long long i = r0; i < r1; ++i) {
    row_columns(pat, n, N, i, o.seed, cols);
    for (long long col : cols)
      if (col < r0 || col >= r1) need.push_back(col);
  }
  std::sort(need.begin(), need.end());
  need.erase(std::unique(need.begin(), need.end()), need.end());
  if (need.size() > static_cast<std::size_t>(INT_MAX / 2))
    die(c, pat + " n=" + std::to_string(n) + ": too many needed entries");

  // Who needs what from whom: counts, then the index lists themselves.
  std::vector<int> needcnt(P, 0), theycnt(P, 0), ndis(P, 0), tdis(P, 0);
  for (long long col : need) needcnt[owner(col)]++;
  check_rc(c, MPI_Alltoall(needcnt.data(), 1, MPI_INT, theycnt.data(), 1, MPI_INT, c.comm),
           "MPI_Alltoall", pat + " setup");
  long long tot = 0;
  for (int q = 0; q < P; ++q) {
    tdis[q] = static_cast<int>(tot);
    tot += theycnt[q];
    if (tot > INT_MAX / 2) die(c, pat + " n=" + std::to_string(n) + ": too many requests");
  }
  for (int q = 1; q < P; ++q) ndis[q] = ndis[q - 1] + needcnt[q - 1];
  std::vector<long long> requested(static_cast<std::size_t>(tot));
  check_rc(c,
           MPI_Alltoallv(need.data(), needcnt.data(), ndis.data(), MPI_LONG_LONG, requested.data(),
                         theycnt.data(), tdis.data(), MPI_LONG_LONG, c.comm),
           "MPI_Alltoallv", pat + " setup");

  for (int q = 0; q < P; ++q) {
    if (needcnt[q] > 0) {
      t.sources.push_back(q);
      t.rcounts.push_back(needcnt[q]);
    }
    if (theycnt[q] > 0) {
      t.dests.push_back(q);
      t.scounts.push_back(theycnt[q]);
    }
  }
  t.graph(c, false);
  t.header = "dist graph, " + std::to_string(N) + " rows";
  t.alloc(c);
  const std::uint64_t vseed = mix64(o.seed ^ 0xA24BAED4963EE407ull);
  auto val = [&](long long g) { return value_of(vseed ^ static_cast<std::uint64_t>(g)); };
  for (std::size_t j = 0; j < t.dests.size(); ++j) {
    const int q = t.dests[j];
    for (int i = 0; i < theycnt[q]; ++i) t.dsend[t.sdispls[j] + i] = val(requested[tdis[q] + i]);
  }
  for (std::size_t k = 0; k < t.sources.size(); ++k) {
    const int q = t.sources[k];
    for (int i = 0; i < needcnt[q]; ++i) {
      const double e = val(need[ndis[q] + i]);
      t.dexpected[t.rdispls[k] + i] = e;
      t.dpoison[t.rdispls[k] + i] = -1.0 - e;
    }
  }
}

// Element i of a block that rank a sends, b naming the block (its destination, or its place in
// a's list), for the graphs through MPIX_Topo.
double edge_value(std::uint64_t seed, int a, int b, long long i) {
  return value_of(seed ^
                  mix64((static_cast<std::uint64_t>(a) << 40) ^
                        (static_cast<std::uint64_t>(b) << 20) ^ static_cast<std::uint64_t>(i)));
}

// A random directed graph (see the top) through MPIX_Topo; n bytes per block.
void make_random(const Ctx& c, const Options& o, NeighborCase& t) {
  const int P = c.nprocs, me = c.rank;
  const long long per = (t.size + 7) / 8;  // doubles per block
  if (per * std::max(o.degree, 1) > INT_MAX / 16)
    die(c, "random n=" + std::to_string(t.size) + ": blocks too large");
  // Edge q -> d when the top 53 bits of its hash fall below K/(P-1) (all of them for K >= P-1).
  const double prob = P > 1 ? std::min(1.0, static_cast<double>(o.degree) / (P - 1)) : 0.0;
  const std::uint64_t gseed = mix64(o.seed ^ 0x7A3D1C9B5E2F4681ull);
  auto edge = [&](int q, int d) {
    if (q == d) return false;
    const std::uint64_t h =
        mix64(gseed ^ mix64((static_cast<std::uint64_t>(q) << 32) | static_cast<std::uint32_t>(d)));
    return static_cast<double>(h >> 11) * (1.0 / 9007199254740992.0) < prob;
  };
  for (int q = 0; q < P; ++q) {
    if (edge(q, me)) t.sources.push_back(q);
    if (edge(me, q)) t.dests.push_back(q);
  }
  t.scounts.assign(t.dests.size(), static_cast<int>(per));
  t.rcounts.assign(t.sources.size(), static_cast<int>(per));
  t.graph(c, true);
  t.header = "random graph through MPIX_Topo, degree " + std::to_string(o.degree) + ", " +
             std::to_string(per * 8) + " B blocks";
  t.alloc(c);
  const std::uint64_t vseed = mix64(o.seed ^ 0x3C6EF372FE94F82Bull);
  t.fill([&](std::size_t j, long long i) { return edge_value(vseed, me, t.dests[j], i); },
         [&](std::size_t k, long long i) { return edge_value(vseed, t.sources[k], me, i); });
}

// Dense and sparse node pairs in one graph (see the top) through MPIX_Topo. Every rank works
// out every rank's destinations (O(P) each), so it knows its sources and which of each
// sender's blocks it receives: the values are keyed by (sender, the block's place in the
// sender's list).
void make_mixed(const Ctx& c, const Options& o, NeighborCase& t) {
  const int P = c.nprocs, me = c.rank;
  const long long per = (t.size + 7) / 8;  // doubles per small block
  if (per > INT_MAX) die(c, "mixed n=" + std::to_string(t.size) + ": blocks too large");
  const std::vector<int> node_id = node_ids(c, t.pattern);
  std::map<int, std::vector<int>> by_id;  // node id -> its ranks, ascending
  for (int r = 0; r < P; ++r) by_id[node_id[r]].push_back(r);
  std::vector<std::vector<int>> nodes;  // by ascending node id
  std::map<int, int> index;             // node id -> its place in nodes
  for (auto& n : by_id) {
    index[n.first] = static_cast<int>(nodes.size());
    nodes.push_back(n.second);
  }
  const int N = static_cast<int>(nodes.size());
  const std::uint64_t gseed = mix64(o.seed ^ 0x1F83D9ABFB41BD6Bull);
  // Rank q's destinations and their block sizes (doubles), in its order.
  auto dests_of = [&](int q, std::vector<int>& d, std::vector<int>& n) {
    d.clear();
    n.clear();
    const int i = index[node_id[q]];
    for (int r : nodes[static_cast<std::size_t>((i + 1) % N)])
      if (r != q) d.push_back(r), n.push_back(static_cast<int>(per));
    if (N < 3) return;
    for (int j = 0; j < kMixedFar; ++j) {
      const std::uint64_t h =
          mix64(gseed ^ mix64((static_cast<std::uint64_t>(q) << 8) | unsigned(j)));
      const int k = (i + 2 + static_cast<int>(h % static_cast<std::uint64_t>(N - 2))) % N;
      const std::vector<int>& at = nodes[static_cast<std::size_t>(k)];
      d.push_back(at[static_cast<std::size_t>((h >> 32) % at.size())]);
      n.push_back(static_cast<int>(kMixedFarDoubles));
    }
  };
  std::vector<int> d, n;
  std::vector<std::pair<int, int>> from;  // (sender, the block's place in its list)
  for (int q = 0; q < P; ++q) {
    dests_of(q, d, n);
    for (std::size_t j = 0; j < d.size(); ++j)
      if (d[j] == me) {
        t.sources.push_back(q);
        t.rcounts.push_back(n[j]);
        from.emplace_back(q, static_cast<int>(j));
      }
  }
  dests_of(me, t.dests, t.scounts);
  t.graph(c, true);
  t.header = "mixed graph through MPIX_Topo: " + std::to_string(per * 8) +
             " B blocks to the next node's ranks, " + std::to_string(kMixedFar) + " of " +
             std::to_string(kMixedFarDoubles * 8) + " B to other nodes";
  t.alloc(c);
  const std::uint64_t vseed = mix64(o.seed ^ 0x5BE0CD19137E2179ull);
  t.fill([&](std::size_t j, long long i) { return edge_value(vseed, me, int(j), i); },
         [&](std::size_t k, long long i) {
           return edge_value(vseed, from[k].first, from[k].second, i);
         });
}

// Facts about a topology for its header line: degrees, edges, bytes, the inter-node part.
std::string topo_stats(const Ctx& c, const NeighborCase& t) {
  long long deg = 0, send = 0, iedges = 0, ibytes = 0;
  int my_node = 0, lr = 0;
  check_rc(c, MPIX_Comm_rank_locality(t.comm, c.rank, &my_node, &lr, nullptr, nullptr),
           "MPIX_Comm_rank_locality", t.pattern);
  for (std::size_t j = 0; j < t.dests.size(); ++j) {
    if (t.dests[j] == MPI_PROC_NULL) continue;
    ++deg;
    const long long b = static_cast<long long>(t.scounts[j]) * sizeof(double);
    send += b;
    int node = 0;
    check_rc(c, MPIX_Comm_rank_locality(t.comm, t.dests[j], &node, &lr, nullptr, nullptr),
             "MPIX_Comm_rank_locality", t.pattern);
    if (node != my_node && b > 0) {
      ++iedges;
      ibytes += b;
    }
  }
  long long in[4] = {deg, send, iedges, ibytes}, sums[4], mins[1], maxs[2];
  MPI_Allreduce(in, sums, 4, MPI_LONG_LONG, MPI_SUM, c.comm);
  MPI_Allreduce(in, mins, 1, MPI_LONG_LONG, MPI_MIN, c.comm);
  MPI_Allreduce(in, maxs, 2, MPI_LONG_LONG, MPI_MAX, c.comm);
  return "neighbours/rank " + std::to_string(mins[0]) + ".." + std::to_string(maxs[0]) + ", " +
         std::to_string(sums[0]) + " edges (" + std::to_string(sums[2]) + " inter-node, " +
         std::to_string(sums[3]) + " B); send/rank max " + std::to_string(maxs[1]) + " B, all " +
         std::to_string(sums[1]) + " B";
}

std::unique_ptr<Case> make(const Ctx& c, const Options& o, const std::string& pat, long long n) {
  auto t = std::make_unique<NeighborCase>();
  t->pattern = pat;
  t->size = n;
  const bool stencil = pat.compare(0, 7, "stencil") == 0;
  if (pat == "stencil27") {
    make_grid(c, o, *t, 3, true);
  } else if (stencil) {
    const int ndims = pat == "stencil2d" ? 2 : 3;
    if (o.placement == "block")
      make_stencil(c, o, *t, ndims);
    else
      make_grid(c, o, *t, ndims, false);
  } else if (pat == "random") {
    make_random(c, o, *t);
  } else if (pat == "mixed") {
    make_mixed(c, o, *t);
  } else {
    if (pat == "lap3d" && n > 1290) die(c, "lap3d n=" + std::to_string(n) + ": n^3 above INT_MAX");
    if (pat != "lap3d" && n > 46340)
      die(c, pat + " n=" + std::to_string(n) + ": n^2 above INT_MAX");
    make_sparse(c, o, *t);
  }
  const std::string stats = topo_stats(c, *t);
  long long mine = static_cast<long long>(t->dsend.size() * sizeof(double)), messages = 0;
  MPI_Allreduce(&mine, &t->load_bytes, 1, MPI_LONG_LONG, MPI_MAX, c.comm);
  for (std::size_t j = 0; j < t->dests.size(); ++j)
    messages += t->dests[j] != MPI_PROC_NULL && t->scounts[j] > 0;
  long long mean_message = messages > 0 ? mine / messages : 0;
  MPI_Allreduce(&mean_message, &t->msg_bytes, 1, MPI_LONG_LONG, MPI_MAX, c.comm);
  t->finish();
  if (t->degenerate) t->reference = "the MPI-4.1 definition";
  t->header = pat + " n=" + std::to_string(n) + ": " + t->header + "; " + stats +
              "; checked against " + t->reference;
  t->reproduce = "--patterns " + pat + " --sizes " + std::to_string(n) + " --periodic " +
                 o.periodic + " --seed " + std::to_string(o.seed) +
                 (pat == "random" ? " --degree " + std::to_string(o.degree) : "") +
                 (stencil ? " --placement " + o.placement : "");
  return t;
}

std::map<std::string, std::vector<long long>> sweeps(int) { return {}; }

}  // namespace

const Workload& neighbor_workload() {
  static const Workload w{"neighbor",
                          "neighbor_alltoallv",
                          "Neighbor_alltoallv",
                          "nbr",
                          "MPIX_NEIGHBOR_ALLTOALLV",
                          mpia_bench_system_neighbor_name,
                          {8, 32, 128},
                          {5, 12},
                          1000000,
                          {"stencil2d", "stencil3d", "stencil27", "lap2d", "lap3d", "powerlaw",
                           "spmv", "random", "mixed"},
                          {"stencil2d", "stencil3d", "lap2d", "lap3d", "powerlaw"},
                          true,
                          sweeps,
                          make};
  return w;
}

}  // namespace mpia_bench
