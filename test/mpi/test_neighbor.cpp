// Correctness of the neighborhood all-to-all (MPIX_Neighbor_alltoallv[_init],
// MPIX_Neighbor_alltoall[_init], MPIX_Neighbor_alltoallw[_init]) against a reference computed
// here, independently of the system MPI (whose own neighborhood collectives are wrong on
// Cartesian periodic dimensions of size 1 and 2 in some versions; NeighborWMatrix also checks
// MPI_Neighbor_alltoallw itself against the reference where it is right).
//
// The reference (MPI-4.1 section 7.6): every rank knows the neighbor lists of every rank of
// the topology. Cartesian: for each dimension d the -1 neighbor (source of MPI_Cart_shift(d,1))
// then the +1 neighbor, for sending and receiving alike; receive block 2d holds what the -1
// neighbor sent in its block 2d+1, receive block 2d+1 what the +1 neighbor sent in its block
// 2d, whatever the neighbors are (the same rank, or this rank, for periodic sizes 1 and 2);
// blocks of MPI_PROC_NULL neighbors are never touched. Graph and distributed graph: receive
// block i comes from sources[i]; the k-th occurrence of rank s in a receiver's sources pairs
// with the k-th occurrence of the receiver in s's destinations (duplicate edges, self loops).
// Every element is value_hash(sender, sender's block, element, iteration), counts are a
// formula of (sender, sender's block), so the receiver knows what each block must hold.
//
// Topologies: Cartesian 1D/2D/3D, periodic and not, with periodic dimensions of size 1 and 2
// (on MPI_COMM_SELF, on pairs of ranks, {2, P/2}, {1, P}, {2, 2, P/4}, MPI_Dims_create shapes,
// a communicator whose ranks are reversed); MPI_Graph_create multigraphs (duplicate edges,
// self loops, an isolated rank, fewer nodes than ranks); distributed graphs (adjacent and
// general, weighted and MPI_UNWEIGHTED, random sparse with duplicates, self loops and ranks of
// zero in- or out-degree, fan-in/fan-out, empty); the halo exchange of distributed sparse
// matrix-vector products (1D and 2D Laplacians and an unsymmetric random matrix partitioned by
// uneven row blocks). For each: every registered algorithm and the default, persistent (>= 5
// Start/complete cycles, new data each time) and blocking (algorithm chosen with
// MPIX_Comm_set_algorithm), with datatypes with holes, a non-zero lower bound, negative stride
// and different send and receive type maps, non-monotonic displacements with gaps, negative
// displacements (the base pointer at the end or in the middle of the buffer), zero counts and
// large blocks. The environment variable MPIX_NEIGHBOR_ALLTOALLV (read once per process) is
// tested by NeighborSelectionEnv, which test/mpi/environment.cmake runs with it set.
//
// MPIA_NEIGHBOR_ALGORITHMS (comma list; "default" = no info, no MPIX_Comm_set_algorithm)
// restricts the algorithms, for the registrations under emulated nodes (MPIX_LOCALITY=ppn:K).
//
// Built with MPIA_NEIGHBOR_VIA_TOPO (mpia_test_neighbor_topo), the matrix runs the graph
// topologies (every kind but the Cartesian ones, whose MPI_PROC_NULL neighbors and directions a
// graph cannot express) through MPIX_Topo objects made from the same lists over the topology's
// communicator: persistent requests from MPIX_Neighbor_alltoallv_topo_init with the object freed
// right after init (the request keeps what it uses), then the result compared byte for byte with
// MPIX_Neighbor_alltoall(v) on the topology communicator; blocking calls with the algorithm given
// to MPIX_Topo_create's info, or inherited from the communicator's MPIX_Comm_set_algorithm. The
// NeighborTopo tests (that build only) check the object's own rules: errors, lifetime, several
// objects on one communicator.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <map>
#include <memory>
#include <numeric>
#include <ostream>
#include <set>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "test_support.hpp"

using namespace mpia_test;

namespace {

#ifdef MPIA_NEIGHBOR_VIA_TOPO
constexpr bool kViaTopo = true;
#else
constexpr bool kViaTopo = false;
#endif

const char* const kEnvVar = "MPIX_NEIGHBOR_ALLTOALLV";
const char* const kCollective = "neighbor_alltoallv";  // for MPIX_Comm_set_algorithm
constexpr int kElemSalt = 7919;  // sender block b is encoded as value_hash's "dst" b + salt

std::uint64_t mix(long a, long b, long seed) {
  return value_hash(static_cast<int>(a), static_cast<int>(b), -777, static_cast<int>(seed));
}

// ------------------------------------------------------------------------------------------
// Registry.
// ------------------------------------------------------------------------------------------
const std::vector<std::string>& registry_n() {
  static const std::vector<std::string> names = registered_algorithms("neighbor_alltoallv");
  return names;
}

// The algorithms to run: the registry and "" (the default), or MPIA_NEIGHBOR_ALGORITHMS.
const std::vector<std::string>& specs_to_run() {
  static const std::vector<std::string> specs = [] {
    std::vector<std::string> s;
    const char* only = std::getenv("MPIA_NEIGHBOR_ALGORITHMS");
    if (only && *only) {
      std::stringstream ss(only);
      std::string item;
      while (std::getline(ss, item, ',')) s.push_back(item == "default" ? "" : item);
    } else {
      s = registry_n();
      s.emplace_back("");
    }
    return s;
  }();
  return specs;
}

bool all_ok(MPI_Comm comm, bool local) {
  int in = local ? 1 : 0, out = 0;
  MPI_Allreduce(&in, &out, 1, MPI_INT, MPI_MIN, comm);
  return out != 0;
}

// ------------------------------------------------------------------------------------------
// The reference model of one topology.
// ------------------------------------------------------------------------------------------
struct Topo {
  std::string name;
  MPI_Comm comm = MPI_COMM_NULL;  // MPI_COMM_NULL on ranks outside the topology
  std::vector<MPI_Comm> extra;    // helper communicators to free with it
  bool cartesian = false;
  bool degenerate = false;  // a periodic Cartesian dimension of size 1 or 2
  int me = -1, size = 0;
  std::vector<std::vector<int>> src, dst;  // of every rank of comm (MPI_PROC_NULL for Cartesian)
  std::vector<std::pair<int, int>> from;   // this rank's receive blocks: (sender, its block)
  std::vector<int> world_of;               // MPI_COMM_WORLD rank of every rank of comm
  // Units of the block `block` of rank `sender`, when the topology defines them (SpMV).
  std::vector<std::vector<int>> own_units;

  bool member() const { return comm != MPI_COMM_NULL; }
  int indegree() const { return static_cast<int>(src[static_cast<std::size_t>(me)].size()); }
  int outdegree() const { return static_cast<int>(dst[static_cast<std::size_t>(me)].size()); }
  const std::vector<int>& my_dst() const { return dst[static_cast<std::size_t>(me)]; }
  const std::vector<int>& my_src() const { return src[static_cast<std::size_t>(me)]; }

  Topo() = default;
  Topo(const Topo&) = delete;
  Topo& operator=(const Topo&) = delete;
  ~Topo() {
    if (comm != MPI_COMM_NULL) MPI_Comm_free(&comm);
    for (MPI_Comm& c : extra)
      if (c != MPI_COMM_NULL) MPI_Comm_free(&c);
  }
};
using TopoPtr = std::unique_ptr<Topo>;

void fill_membership(Topo& t) {
  t.me = comm_rank(t.comm);
  t.size = comm_size(t.comm);
  MPI_Group g, w;
  MPI_Comm_group(t.comm, &g);
  MPI_Comm_group(MPI_COMM_WORLD, &w);
  std::vector<int> ranks(static_cast<std::size_t>(t.size));
  std::iota(ranks.begin(), ranks.end(), 0);
  t.world_of.assign(ranks.size(), -1);
  MPI_Group_translate_ranks(g, t.size, ranks.data(), w, t.world_of.data());
  MPI_Group_free(&g);
  MPI_Group_free(&w);
}

// Graph pairing: receive block i of `me` from s = src[me][i] is the k-th occurrence of s in
// src[me] (k from 0); it holds s's block that is the k-th occurrence of me in dst[s].
void pair_by_occurrence(Topo& t) {
  const std::vector<int>& srcs = t.my_src();
  t.from.clear();
  for (std::size_t i = 0; i < srcs.size(); ++i) {
    const int s = srcs[i];
    const long k = std::count(srcs.begin(), srcs.begin() + static_cast<long>(i), s);
    const std::vector<int>& sd = t.dst[static_cast<std::size_t>(s)];
    long seen = 0;
    int block = -1;
    for (std::size_t j = 0; j < sd.size(); ++j) {
      if (sd[j] == t.me && seen++ == k) {
        block = static_cast<int>(j);
        break;
      }
    }
    if (block < 0) {
      ADD_FAILURE() << t.name << ": test bug or bad neighbor lists: rank " << t.me
                    << " receives from " << s << " more often than " << s << " sends to it";
      block = 0;
    }
    t.from.emplace_back(s, block);
  }
}

// ---- Cartesian ----------------------------------------------------------------------------
TopoPtr make_cart(MPI_Comm base, const std::string& name, std::vector<int> dims,
                  std::vector<int> periods) {
  TopoPtr t(new Topo);
  t->name = name;
  t->cartesian = true;
  const int nd = static_cast<int>(dims.size());
  int n = 1;
  for (int d = 0; d < nd; ++d) {
    n *= dims[static_cast<std::size_t>(d)];
    if (periods[static_cast<std::size_t>(d)] && dims[static_cast<std::size_t>(d)] <= 2)
      t->degenerate = true;
  }
  std::ostringstream os;
  os << name << " dims {";
  for (int d = 0; d < nd; ++d) os << (d ? "," : "") << dims[static_cast<std::size_t>(d)];
  os << "} periods {";
  for (int d = 0; d < nd; ++d) os << (d ? "," : "") << periods[static_cast<std::size_t>(d)];
  os << "}";
  t->name = os.str();
  MPI_Cart_create(base, nd, dims.data(), periods.data(), 0, &t->comm);
  if (!t->member()) return t;
  fill_membership(*t);
  EXPECT_EQ(t->size, n) << t->name;
  // Row-major coordinates (reorder = 0 keeps the ranks of base).
  std::vector<int> stride(static_cast<std::size_t>(nd), 1);
  for (int d = nd - 2; d >= 0; --d)
    stride[static_cast<std::size_t>(d)] =
        stride[static_cast<std::size_t>(d + 1)] * dims[static_cast<std::size_t>(d + 1)];
  auto neighbor = [&](int r, int d, int delta) {
    const std::size_t du = static_cast<std::size_t>(d);
    const int c = (r / stride[du]) % dims[du];
    int cc = c + delta;
    if (cc < 0 || cc >= dims[du]) {
      if (!periods[du]) return static_cast<int>(MPI_PROC_NULL);
      cc = (cc + dims[du]) % dims[du];
    }
    return r + (cc - c) * stride[du];
  };
  t->src.assign(static_cast<std::size_t>(n), {});
  for (int r = 0; r < n; ++r) {
    for (int d = 0; d < nd; ++d) {
      t->src[static_cast<std::size_t>(r)].push_back(neighbor(r, d, -1));
      t->src[static_cast<std::size_t>(r)].push_back(neighbor(r, d, +1));
    }
  }
  t->dst = t->src;
  // MPI's own view must agree with the reference.
  std::vector<int> coords(static_cast<std::size_t>(nd));
  MPI_Cart_coords(t->comm, t->me, nd, coords.data());
  for (int d = 0; d < nd; ++d) {
    EXPECT_EQ(coords[static_cast<std::size_t>(d)],
              (t->me / stride[static_cast<std::size_t>(d)]) % dims[static_cast<std::size_t>(d)])
        << t->name << " coordinate " << d;
    int s = -2, ds = -2;
    MPI_Cart_shift(t->comm, d, 1, &s, &ds);
    EXPECT_EQ(s, t->my_src()[static_cast<std::size_t>(2 * d)]) << t->name << " dim " << d;
    EXPECT_EQ(ds, t->my_src()[static_cast<std::size_t>(2 * d + 1)]) << t->name << " dim " << d;
  }
  for (int d = 0; d < nd; ++d) {
    const int minus = t->my_src()[static_cast<std::size_t>(2 * d)];
    const int plus = t->my_src()[static_cast<std::size_t>(2 * d + 1)];
    t->from.emplace_back(minus, minus == MPI_PROC_NULL ? -1 : 2 * d + 1);
    t->from.emplace_back(plus, plus == MPI_PROC_NULL ? -1 : 2 * d);
  }
  return t;
}

std::vector<int> dims_create(int n, int nd) {
  std::vector<int> dims(static_cast<std::size_t>(nd), 0);
  MPI_Dims_create(n, nd, dims.data());
  return dims;
}

// ---- MPI_Graph_create ---------------------------------------------------------------------
TopoPtr make_graph(MPI_Comm base, const std::string& name,
                   const std::vector<std::vector<int>>& adj) {
  TopoPtr t(new Topo);
  t->name = name;
  const int nnodes = static_cast<int>(adj.size());
  std::vector<int> index, edges;
  for (const auto& a : adj) {
    edges.insert(edges.end(), a.begin(), a.end());
    index.push_back(static_cast<int>(edges.size()));
  }
  int dummy = 0;
  MPI_Graph_create(base, nnodes, index.data(), edges.empty() ? &dummy : edges.data(), 0, &t->comm);
  if (!t->member()) return t;
  fill_membership(*t);
  t->src = adj;
  t->dst = adj;
  int status = MPI_UNDEFINED;
  MPI_Topo_test(t->comm, &status);
  EXPECT_EQ(status, MPI_GRAPH) << name;
  int nn = -1;
  MPI_Graph_neighbors_count(t->comm, t->me, &nn);
  EXPECT_EQ(nn, t->indegree()) << name;
  std::vector<int> got(static_cast<std::size_t>(std::max(nn, 1)), -5);
  MPI_Graph_neighbors(t->comm, t->me, nn, got.data());
  got.resize(static_cast<std::size_t>(std::max(nn, 0)));
  EXPECT_EQ(got, t->my_src()) << name << ": MPI_Graph_neighbors";
  pair_by_occurrence(*t);
  return t;
}

// ---- distributed graphs -------------------------------------------------------------------
using Edges = std::vector<std::pair<int, int>>;  // (source, destination), duplicates allowed

// Per-rank lists in edge order, then shuffled (deterministically) by `seed`.
void lists_from_edges(const Edges& e, int P, long seed, std::vector<std::vector<int>>* src,
                      std::vector<std::vector<int>>* dst) {
  src->assign(static_cast<std::size_t>(P), {});
  dst->assign(static_cast<std::size_t>(P), {});
  for (const auto& ed : e) {
    (*dst)[static_cast<std::size_t>(ed.first)].push_back(ed.second);
    (*src)[static_cast<std::size_t>(ed.second)].push_back(ed.first);
  }
  if (seed < 0) return;
  auto shuffle = [seed](std::vector<int>& v, long salt) {
    std::vector<std::pair<std::uint64_t, int>> keyed;
    for (std::size_t i = 0; i < v.size(); ++i)
      keyed.emplace_back(mix(static_cast<long>(i), salt, seed), v[i]);
    std::stable_sort(keyed.begin(), keyed.end(),
                     [](const auto& a, const auto& b) { return a.first < b.first; });
    for (std::size_t i = 0; i < v.size(); ++i) v[i] = keyed[i].second;
  };
  for (int r = 0; r < P; ++r) {
    shuffle((*src)[static_cast<std::size_t>(r)], r * 2);
    shuffle((*dst)[static_cast<std::size_t>(r)], r * 2 + 1);
  }
}

int weight_of(int a, int b, long salt) { return 1 + static_cast<int>(mix(a, b, salt) % 9); }

// Checks MPI_Dist_graph_neighbors_count/neighbors of this rank; returns its lists.
void query_dist(Topo& t, bool weighted, std::vector<int>* srcs, std::vector<int>* dsts,
                std::vector<int>* sw, std::vector<int>* dw) {
  int status = MPI_UNDEFINED;
  MPI_Topo_test(t.comm, &status);
  EXPECT_EQ(status, MPI_DIST_GRAPH) << t.name;
  int indeg = -1, outdeg = -1, w = -1;
  MPI_Dist_graph_neighbors_count(t.comm, &indeg, &outdeg, &w);
  EXPECT_EQ(w != 0, weighted) << t.name << ": weighted flag";
  srcs->assign(static_cast<std::size_t>(std::max(indeg, 0)), -5);
  dsts->assign(static_cast<std::size_t>(std::max(outdeg, 0)), -5);
  sw->assign(srcs->size(), -5);
  dw->assign(dsts->size(), -5);
  int d1 = 0, d2 = 0, d3 = 0, d4 = 0;
  MPI_Dist_graph_neighbors(t.comm, indeg, srcs->empty() ? &d1 : srcs->data(),
                           weighted ? (sw->empty() ? &d2 : sw->data()) : MPI_UNWEIGHTED, outdeg,
                           dsts->empty() ? &d3 : dsts->data(),
                           weighted ? (dw->empty() ? &d4 : dw->data()) : MPI_UNWEIGHTED);
}

// Every rank's lists, gathered over the topology communicator.
std::vector<std::vector<int>> allgather_lists(MPI_Comm comm, const std::vector<int>& mine) {
  const int P = comm_size(comm);
  int n = static_cast<int>(mine.size());
  std::vector<int> counts(static_cast<std::size_t>(P)), displs(static_cast<std::size_t>(P));
  MPI_Allgather(&n, 1, MPI_INT, counts.data(), 1, MPI_INT, comm);
  int total = 0;
  for (int r = 0; r < P; ++r) {
    displs[static_cast<std::size_t>(r)] = total;
    total += counts[static_cast<std::size_t>(r)];
  }
  std::vector<int> all(static_cast<std::size_t>(std::max(total, 1)));
  int dummy = 0;
  MPI_Allgatherv(mine.empty() ? &dummy : mine.data(), n, MPI_INT, all.data(), counts.data(),
                 displs.data(), MPI_INT, comm);
  std::vector<std::vector<int>> out(static_cast<std::size_t>(P));
  for (int r = 0; r < P; ++r) {
    const auto b = all.begin() + displs[static_cast<std::size_t>(r)];
    out[static_cast<std::size_t>(r)].assign(b, b + counts[static_cast<std::size_t>(r)]);
  }
  return out;
}

// MPI_Dist_graph_create_adjacent with this rank's lists as computed by lists_from_edges.
TopoPtr make_dist_adjacent(MPI_Comm base, const std::string& name, const Edges& edges, long seed,
                           bool weighted) {
  TopoPtr t(new Topo);
  t->name = name;
  const int P = comm_size(base), me = comm_rank(base);
  std::vector<std::vector<int>> src, dst;
  lists_from_edges(edges, P, seed, &src, &dst);
  const std::vector<int>& s = src[static_cast<std::size_t>(me)];
  const std::vector<int>& d = dst[static_cast<std::size_t>(me)];
  std::vector<int> sw, dw;
  for (int x : s) sw.push_back(weight_of(x, me, seed));
  for (int x : d) dw.push_back(weight_of(me, x, seed));
  int d1 = 0, d2 = 0;
  const int *swp = MPI_UNWEIGHTED, *dwp = MPI_UNWEIGHTED;
  if (weighted) {
    swp = sw.empty() ? MPI_WEIGHTS_EMPTY : sw.data();
    dwp = dw.empty() ? MPI_WEIGHTS_EMPTY : dw.data();
  }
  MPI_Dist_graph_create_adjacent(base, static_cast<int>(s.size()), s.empty() ? &d1 : s.data(), swp,
                                 static_cast<int>(d.size()), d.empty() ? &d2 : d.data(), dwp,
                                 MPI_INFO_NULL, 0, &t->comm);
  fill_membership(*t);
  t->src = src;
  t->dst = dst;
  std::vector<int> gs, gd, gsw, gdw;
  query_dist(*t, weighted, &gs, &gd, &gsw, &gdw);
  EXPECT_EQ(gs, s) << name << ": MPI_Dist_graph_neighbors sources (adjacent keeps the order)";
  EXPECT_EQ(gd, d) << name << ": MPI_Dist_graph_neighbors destinations";
  if (weighted) {
    EXPECT_EQ(gsw, sw) << name << ": source weights";
    EXPECT_EQ(gdw, dw) << name << ": destination weights";
  }
  pair_by_occurrence(*t);
  return t;
}

// MPI_Dist_graph_create: edge e is specified by rank (5 e + 3) mod P (mostly not its source),
// grouped by source in order of first appearance. The neighbor order is then MPI's: the lists
// come from MPI_Dist_graph_neighbors (checked as multisets) and are gathered everywhere.
TopoPtr make_dist_general(MPI_Comm base, const std::string& name, const Edges& edges,
                          bool weighted) {
  TopoPtr t(new Topo);
  t->name = name;
  const int P = comm_size(base), me = comm_rank(base);
  std::vector<int> sources, degrees, dests, weights;
  for (std::size_t e = 0; e < edges.size(); ++e) {
    if (static_cast<int>((5 * e + 3) % static_cast<std::size_t>(P)) != me) continue;
    const int s = edges[e].first, d = edges[e].second;
    auto it = std::find(sources.begin(), sources.end(), s);
    // Group by source, except that every third edge gets its own (repeated) source entry.
    if (it == sources.end() || e % 3 == 0) {
      sources.push_back(s);
      degrees.push_back(1);
      dests.push_back(d);
      weights.push_back(weight_of(s, d, 99));
    } else {
      // Insert after the other destinations of that source entry.
      const std::size_t k = static_cast<std::size_t>(it - sources.begin());
      std::size_t pos = 0;
      for (std::size_t q = 0; q <= k; ++q) pos += static_cast<std::size_t>(degrees[q]);
      dests.insert(dests.begin() + static_cast<long>(pos), d);
      weights.insert(weights.begin() + static_cast<long>(pos), weight_of(s, d, 99));
      ++degrees[k];
    }
  }
  int d1 = 0, d2 = 0, d3 = 0;
  const int* wp = MPI_UNWEIGHTED;
  if (weighted) wp = weights.empty() ? MPI_WEIGHTS_EMPTY : weights.data();
  MPI_Dist_graph_create(base, static_cast<int>(sources.size()),
                        sources.empty() ? &d1 : sources.data(),
                        degrees.empty() ? &d2 : degrees.data(), dests.empty() ? &d3 : dests.data(),
                        wp, MPI_INFO_NULL, 0, &t->comm);
  fill_membership(*t);
  std::vector<int> gs, gd, gsw, gdw;
  query_dist(*t, weighted, &gs, &gd, &gsw, &gdw);
  std::vector<std::vector<int>> src, dst;
  lists_from_edges(edges, P, -1, &src, &dst);
  std::vector<int> a = gs, b = src[static_cast<std::size_t>(me)];
  std::sort(a.begin(), a.end());
  std::sort(b.begin(), b.end());
  EXPECT_EQ(a, b) << name << ": sources as a multiset";
  a = gd;
  b = dst[static_cast<std::size_t>(me)];
  std::sort(a.begin(), a.end());
  std::sort(b.begin(), b.end());
  EXPECT_EQ(a, b) << name << ": destinations as a multiset";
  if (weighted) {
    for (std::size_t i = 0; i < gs.size(); ++i)
      EXPECT_EQ(gsw[i], weight_of(gs[i], me, 99)) << name << ": weight of source " << i;
  }
  t->src = allgather_lists(t->comm, gs);
  t->dst = allgather_lists(t->comm, gd);
  pair_by_occurrence(*t);
  return t;
}

// Random sparse directed multigraph: ~25% of the pairs, some twice, some self loops (some
// twice). At P >= 3 rank 0 receives nothing and rank P-1 sends nothing. Shuffled edge order.
Edges random_edges(int P, long seed) {
  Edges e;
  for (int s = 0; s < P; ++s) {
    for (int d = 0; d < P; ++d) {
      const std::uint64_t h = mix(s, d, seed);
      int m;
      if (s == d) {
        m = h % 5 == 0 ? 1 : (h % 5 == 1 ? 2 : 0);
      } else {
        m = h % 8 < 2 ? 1 : (h % 8 == 2 ? 2 : 0);
      }
      if (P == 1) m = 2;
      if (s == 1 % P && d == (P >= 3 ? 2 : 0)) m = std::max(m, 2);  // a sure duplicate
      if (P >= 3 && (d == 0 || s == P - 1)) m = 0;
      for (int k = 0; k < m; ++k) e.emplace_back(s, d);
    }
  }
  std::vector<std::pair<std::uint64_t, std::pair<int, int>>> keyed;
  for (std::size_t i = 0; i < e.size(); ++i)
    keyed.emplace_back(mix(static_cast<long>(i), 3, seed), e[i]);
  std::stable_sort(keyed.begin(), keyed.end(),
                   [](const auto& a, const auto& b) { return a.first < b.first; });
  for (std::size_t i = 0; i < e.size(); ++i) e[i] = keyed[i].second;
  return e;
}

// ---- distributed sparse matrix-vector product ---------------------------------------------
// A matrix partitioned by contiguous, uneven row blocks; x is partitioned like the rows.
// Rank r needs x[c] for every column c of its rows owned by another rank q: those are
// received from q (ascending c), and q sends them (same order).
struct SpMV {
  std::string name;
  int n = 0;
  std::vector<int> lo;                    // rank r owns rows/columns [lo[r], lo[r+1])
  std::vector<std::vector<int>> cols;     // columns of each row
  std::vector<std::vector<double>> vals;  // values of each row
  // needs[r][q]: columns owned by q that r needs, ascending
  std::vector<std::map<int, std::vector<int>>> needs;
  int owner(int c) const {
    return static_cast<int>(std::upper_bound(lo.begin(), lo.end(), c) - lo.begin()) - 1;
  }
};

SpMV make_spmv(const std::string& kind, int P) {
  SpMV m;
  m.name = kind;
  std::vector<int> sizes(static_cast<std::size_t>(P));
  int side = 0;
  if (kind == "laplace1d") {
    for (int r = 0; r < P; ++r) sizes[static_cast<std::size_t>(r)] = 3 + (r * 5) % 7;
  } else if (kind == "laplace2d") {
    side = 4 + P / 2;
    const int total = side * side;
    int wsum = 0;
    for (int r = 0; r < P; ++r) wsum += 1 + r % 3;
    int given = 0;
    for (int r = 0; r < P; ++r) {
      sizes[static_cast<std::size_t>(r)] = total * (1 + r % 3) / wsum;
      given += sizes[static_cast<std::size_t>(r)];
    }
    sizes[static_cast<std::size_t>(P - 1)] += total - given;
  } else {  // unsymmetric random
    for (int r = 0; r < P; ++r) sizes[static_cast<std::size_t>(r)] = 4 + (r * 3) % 5;
  }
  m.lo.assign(1, 0);
  for (int r = 0; r < P; ++r) m.lo.push_back(m.lo.back() + sizes[static_cast<std::size_t>(r)]);
  m.n = m.lo.back();
  m.cols.assign(static_cast<std::size_t>(m.n), {});
  m.vals.assign(static_cast<std::size_t>(m.n), {});
  for (int i = 0; i < m.n; ++i) {
    std::vector<int>& c = m.cols[static_cast<std::size_t>(i)];
    std::vector<double>& v = m.vals[static_cast<std::size_t>(i)];
    auto add = [&](int col, double val) {
      c.push_back(col);
      v.push_back(val);
    };
    if (kind == "laplace1d") {
      add(i, 2.0);
      if (i > 0) add(i - 1, -1.0);
      if (i + 1 < m.n) add(i + 1, -1.0);
    } else if (kind == "laplace2d") {
      const int x = i / side, y = i % side;
      add(i, 4.0);
      if (x > 0) add(i - side, -1.0);
      if (x + 1 < side) add(i + side, -1.0);
      if (y > 0) add(i - 1, -1.0);
      if (y + 1 < side) add(i + 1, -1.0);
    } else {
      add(i, 3.0);
      for (int k = 0; k < 3; ++k) {
        const int col = static_cast<int>(mix(i, k, 4242) % static_cast<std::uint64_t>(m.n));
        if (std::find(c.begin(), c.end(), col) == c.end()) add(col, 1.0 + k);
      }
    }
  }
  m.needs.assign(static_cast<std::size_t>(P), {});
  for (int r = 0; r < P; ++r) {
    std::set<int> need;
    for (int i = m.lo[static_cast<std::size_t>(r)]; i < m.lo[static_cast<std::size_t>(r) + 1]; ++i)
      for (int c : m.cols[static_cast<std::size_t>(i)])
        if (m.owner(c) != r) need.insert(c);
    for (int c : need) m.needs[static_cast<std::size_t>(r)][m.owner(c)].push_back(c);
  }
  return m;
}

// The halo exchange graph: sources ascending, destinations ascending, weights = counts.
TopoPtr make_spmv_topo(MPI_Comm base, const SpMV& m) {
  const int P = comm_size(base);
  Edges edges;
  for (int s = 0; s < P; ++s)
    for (int r = 0; r < P; ++r)
      if (m.needs[static_cast<std::size_t>(r)].count(s)) edges.emplace_back(s, r);
  TopoPtr t = make_dist_adjacent(base, "spmv_" + m.name, edges, -1, false);
  t->own_units.assign(static_cast<std::size_t>(P), {});
  for (int s = 0; s < P; ++s)
    for (int d : t->dst[static_cast<std::size_t>(s)])
      t->own_units[static_cast<std::size_t>(s)].push_back(
          static_cast<int>(m.needs[static_cast<std::size_t>(d)].at(s).size()));
  return t;
}

// ---- the catalogue ------------------------------------------------------------------------
enum class Kind {
  Cart1dPeriodic,
  Cart1dOpen,
  CartSelf,
  CartPairs,
  Cart2dPeriodic,
  Cart2dMixed,
  Cart2xHalf,
  Cart1xP,
  CartPx1,
  Cart2x2xK,
  Cart3dOpen,
  CartReversed,
  GraphMulti,
  GraphSubset,
  DistAdjRandom,
  DistAdjWeighted,
  DistCreateRandom,
  DistCreateWeighted,
  DistFan,
  DistEmpty,
  SpmvLaplace1d,
  SpmvLaplace2d,
  SpmvRandom,
};

const Kind kKinds[] = {
    Kind::Cart1dPeriodic,   Kind::Cart1dOpen,         Kind::CartSelf,      Kind::CartPairs,
    Kind::Cart2dPeriodic,   Kind::Cart2dMixed,        Kind::Cart2xHalf,    Kind::Cart1xP,
    Kind::CartPx1,          Kind::Cart2x2xK,          Kind::Cart3dOpen,    Kind::CartReversed,
    Kind::GraphMulti,       Kind::GraphSubset,        Kind::DistAdjRandom, Kind::DistAdjWeighted,
    Kind::DistCreateRandom, Kind::DistCreateWeighted, Kind::DistFan,       Kind::DistEmpty,
    Kind::SpmvLaplace1d,    Kind::SpmvLaplace2d,      Kind::SpmvRandom};
constexpr int kNumKinds = static_cast<int>(sizeof(kKinds) / sizeof(kKinds[0]));

const char* kind_name(Kind k) {
  switch (k) {
    case Kind::Cart1dPeriodic:
      return "cart1d_periodic";
    case Kind::Cart1dOpen:
      return "cart1d_open";
    case Kind::CartSelf:
      return "cart_self_1x1x1";
    case Kind::CartPairs:
      return "cart_pairs_2";
    case Kind::Cart2dPeriodic:
      return "cart2d_periodic";
    case Kind::Cart2dMixed:
      return "cart2d_mixed";
    case Kind::Cart2xHalf:
      return "cart_2xhalf";
    case Kind::Cart1xP:
      return "cart_1xP";
    case Kind::CartPx1:
      return "cart_Px1";
    case Kind::Cart2x2xK:
      return "cart_2x2xK";
    case Kind::Cart3dOpen:
      return "cart3d_open";
    case Kind::CartReversed:
      return "cart2d_reversed_ranks";
    case Kind::GraphMulti:
      return "graph_multi";
    case Kind::GraphSubset:
      return "graph_subset";
    case Kind::DistAdjRandom:
      return "dist_adjacent_random";
    case Kind::DistAdjWeighted:
      return "dist_adjacent_weighted";
    case Kind::DistCreateRandom:
      return "dist_create_random";
    case Kind::DistCreateWeighted:
      return "dist_create_weighted";
    case Kind::DistFan:
      return "dist_fan";
    case Kind::DistEmpty:
      return "dist_empty";
    case Kind::SpmvLaplace1d:
      return "spmv_laplace1d";
    case Kind::SpmvLaplace2d:
      return "spmv_laplace2d";
    case Kind::SpmvRandom:
      return "spmv_random";
  }
  return "?";
}

// Collective over MPI_COMM_WORLD.
TopoPtr make_topology(Kind k) {
  MPI_Comm world = MPI_COMM_WORLD;
  const int P = comm_size(world), me = comm_rank(world);
  switch (k) {
    case Kind::Cart1dPeriodic:
      return make_cart(world, kind_name(k), {P}, {1});
    case Kind::Cart1dOpen:
      return make_cart(world, kind_name(k), {P}, {0});
    case Kind::CartSelf:
      return make_cart(MPI_COMM_SELF, kind_name(k), {1, 1, 1}, {1, 0, 1});
    case Kind::CartPairs: {
      // Pairs of ranks (the last one alone at odd P), each a periodic ring of 2 (or 1).
      MPI_Comm pair;
      MPI_Comm_split(world, me / 2, me, &pair);
      TopoPtr t = make_cart(pair, kind_name(k), {comm_size(pair)}, {1});
      t->extra.push_back(pair);
      return t;
    }
    case Kind::Cart2dPeriodic:
      return make_cart(world, kind_name(k), dims_create(P, 2), {1, 1});
    case Kind::Cart2dMixed:
      return make_cart(world, kind_name(k), dims_create(P, 2), {1, 0});
    case Kind::Cart2xHalf:
      if (P < 2) return make_cart(world, kind_name(k), {1, 1}, {1, 1});
      return make_cart(world, kind_name(k), {2, P / 2}, {1, 1});
    case Kind::Cart1xP:
      return make_cart(world, kind_name(k), {1, P}, {1, 1});
    case Kind::CartPx1:
      return make_cart(world, kind_name(k), {P, 1}, {0, 1});
    case Kind::Cart2x2xK:
      if (P < 4) return make_cart(world, kind_name(k), dims_create(P, 3), {1, 1, 1});
      return make_cart(world, kind_name(k), {2, 2, P / 4}, {1, 0, 1});
    case Kind::Cart3dOpen:
      return make_cart(world, kind_name(k), dims_create(P, 3), {0, 1, 0});
    case Kind::CartReversed: {
      MPI_Comm rev;
      MPI_Comm_split(world, 0, P - 1 - me, &rev);
      TopoPtr t = make_cart(rev, kind_name(k), dims_create(P, 2), {1, 1});
      t->extra.push_back(rev);
      return t;
    }
    case Kind::GraphMulti: {
      // Symmetric multigraph: a ring, the edge 0-1 three times in all, self loops on rank 2
      // (twice) and rank 0, rank P-1 isolated at P >= 4. Adjacency lists shuffled.
      std::vector<std::vector<int>> adj(static_cast<std::size_t>(P));
      auto undirected = [&](int a, int b) {
        adj[static_cast<std::size_t>(a)].push_back(b);
        if (a != b) adj[static_cast<std::size_t>(b)].push_back(a);
      };
      const int ring = P >= 4 ? P - 1 : P;
      for (int r = 0; r < ring; ++r) {
        if (ring > 2 || r == 0) undirected(r, (r + 1) % ring);
      }
      if (P >= 2) {
        undirected(0, 1);
        undirected(1, 0);
      }
      undirected(2 % ring, 2 % ring);
      undirected(2 % ring, 2 % ring);
      undirected(0, 0);
      for (int r = 0; r < P; ++r) {
        auto& v = adj[static_cast<std::size_t>(r)];
        std::vector<std::pair<std::uint64_t, int>> keyed;
        for (std::size_t i = 0; i < v.size(); ++i)
          keyed.emplace_back(mix(r, static_cast<long>(i), 17), v[i]);
        std::stable_sort(keyed.begin(), keyed.end(),
                         [](const auto& a, const auto& b) { return a.first < b.first; });
        for (std::size_t i = 0; i < v.size(); ++i) v[i] = keyed[i].second;
      }
      return make_graph(world, kind_name(k), adj);
    }
    case Kind::GraphSubset: {
      // A ring over the first max(1, P-1) ranks (the last rank is not in the graph).
      const int n = std::max(1, P - 1);
      std::vector<std::vector<int>> adj(static_cast<std::size_t>(n));
      for (int r = 0; r < n; ++r) {
        adj[static_cast<std::size_t>(r)].push_back((r + n - 1) % n);
        adj[static_cast<std::size_t>(r)].push_back((r + 1) % n);
      }
      return make_graph(world, kind_name(k), adj);
    }
    case Kind::DistAdjRandom:
      return make_dist_adjacent(world, kind_name(k), random_edges(P, 11), 5, false);
    case Kind::DistAdjWeighted:
      return make_dist_adjacent(world, kind_name(k), random_edges(P, 23), 6, true);
    case Kind::DistCreateRandom:
      return make_dist_general(world, kind_name(k), random_edges(P, 37), false);
    case Kind::DistCreateWeighted:
      return make_dist_general(world, kind_name(k), random_edges(P, 41), true);
    case Kind::DistFan: {
      // Rank 0 sends to every rank (itself too), every rank sends to rank P-1.
      Edges e;
      for (int r = 0; r < P; ++r) e.emplace_back(0, r);
      for (int r = P - 1; r >= 0; --r) e.emplace_back(r, P - 1);
      return make_dist_adjacent(world, kind_name(k), e, -1, false);
    }
    case Kind::DistEmpty:
      return make_dist_adjacent(world, kind_name(k), {}, -1, false);
    case Kind::SpmvLaplace1d:
      return make_spmv_topo(world, make_spmv("laplace1d", P));
    case Kind::SpmvLaplace2d:
      return make_spmv_topo(world, make_spmv("laplace2d", P));
    case Kind::SpmvRandom:
      return make_spmv_topo(world, make_spmv("random", P));
  }
  return nullptr;
}

// ------------------------------------------------------------------------------------------
// Counts and displacements.
// ------------------------------------------------------------------------------------------
enum class Pattern {
  Uniform,      // 2 everywhere
  Varied,       // seeded 0..4
  Directional,  // even blocks 1, odd blocks 3 + sender % 3 (the two Cartesian directions differ)
  Zeros,        // nothing at all
  OneBig,       // rank 0's block 0 is large (rendezvous-sized), the others 0..2
  Topology,     // the topology's own (SpMV: the halo sizes), else Varied
};

const char* pattern_name(Pattern p) {
  switch (p) {
    case Pattern::Uniform:
      return "uniform";
    case Pattern::Varied:
      return "varied";
    case Pattern::Directional:
      return "directional";
    case Pattern::Zeros:
      return "zeros";
    case Pattern::OneBig:
      return "one_big";
    case Pattern::Topology:
      return "topology";
  }
  return "?";
}

int units_of(const Topo& t, Pattern p, int sender, int block, int big) {
  switch (p) {
    case Pattern::Uniform:
      return 2;
    case Pattern::Varied:
      return static_cast<int>(mix(sender, block, 61) % 5);
    case Pattern::Directional:
      return block % 2 == 0 ? 1 : 3 + sender % 3;
    case Pattern::Zeros:
      return 0;
    case Pattern::OneBig:
      if (sender == 0 && block == 0) return big;
      return (sender + block) % 3;
    case Pattern::Topology:
      if (!t.own_units.empty())
        return t.own_units[static_cast<std::size_t>(sender)][static_cast<std::size_t>(block)];
      return static_cast<int>(mix(sender, block, 61) % 5);
  }
  return 0;
}

enum class Displ {
  Ascending,
  ReverseGaps,
  ShuffledGaps,
  NegativeEnd,     // reverse order with gaps, every displacement < 0: the base is the buffer's end
  NegativeMiddle,  // shuffled with gaps, the base in the middle: displacements of both signs
};

const char* displ_name(Displ d) {
  switch (d) {
    case Displ::Ascending:
      return "ascending";
    case Displ::ReverseGaps:
      return "reverse_gaps";
    case Displ::ShuffledGaps:
      return "shuffled_gaps";
    case Displ::NegativeEnd:
      return "negative_base_at_end";
    case Displ::NegativeMiddle:
      return "negative_base_in_middle";
  }
  return "?";
}

// The order of n blocks in a buffer under `mode`.
std::vector<int> block_order(int n, Displ mode, long salt) {
  std::vector<int> order(static_cast<std::size_t>(n));
  std::iota(order.begin(), order.end(), 0);
  if (mode == Displ::ReverseGaps || mode == Displ::NegativeEnd) {
    std::reverse(order.begin(), order.end());
  } else if (mode == Displ::ShuffledGaps || mode == Displ::NegativeMiddle) {
    std::stable_sort(order.begin(), order.end(),
                     [salt](int a, int b) { return mix(a, salt, 3) < mix(b, salt, 3); });
  }
  return order;
}

std::vector<int> make_displs(const std::vector<int>& counts, Displ mode, long salt) {
  const int n = static_cast<int>(counts.size());
  const std::vector<int> order = block_order(n, mode, salt);
  std::vector<int> displs(static_cast<std::size_t>(n), 0);
  int pos = mode == Displ::Ascending ? 0 : 3;
  for (int b : order) {
    displs[static_cast<std::size_t>(b)] = pos;
    pos += counts[static_cast<std::size_t>(b)];
    if (mode != Displ::Ascending) pos += 1 + b % 3;
  }
  // pos is now the end of the last block (plus its gap).
  if (mode == Displ::NegativeEnd || mode == Displ::NegativeMiddle) {
    const int base = mode == Displ::NegativeEnd ? pos : pos / 2;
    for (int& d : displs) d -= base;
  }
  return displs;
}

// Byte displacements of blocks of counts[b] x *lays[b] (the w form): the blocks in `mode`'s
// order, each placed right after the previous one's last byte (its type map's, whatever the
// lower bound) plus a gap of 1 + b % 3 bytes (so most displacements are unaligned); with the
// negative modes, relative to the end or the middle.
std::vector<MPI_Aint> make_byte_displs(const std::vector<const Layout*>& lays,
                                       const std::vector<int>& counts, Displ mode, long salt) {
  const int n = static_cast<int>(counts.size());
  std::vector<MPI_Aint> displs(static_cast<std::size_t>(n), 0);
  MPI_Aint pos = mode == Displ::Ascending ? 0 : 5;
  for (int b : block_order(n, mode, salt)) {
    const std::size_t k = static_cast<std::size_t>(b);
    const Layout& lay = *lays[k];
    MPI_Aint lo = 0, hi = 0;
    for (std::size_t i = 0; i < lay.map().size(); ++i) {
      const PrimAt& pa = lay.map()[i];
      const MPI_Aint end = pa.offset + static_cast<MPI_Aint>(prim_size(pa.kind));
      lo = i == 0 ? pa.offset : std::min(lo, pa.offset);
      hi = i == 0 ? end : std::max(hi, end);
    }
    displs[k] = pos - lo;
    if (counts[k] > 0) pos += (counts[k] - 1) * lay.extent() + (hi - lo);
    if (mode != Displ::Ascending) pos += 1 + b % 3;
  }
  if (mode == Displ::NegativeEnd || mode == Displ::NegativeMiddle) {
    const MPI_Aint base = mode == Displ::NegativeEnd ? pos : pos / 2;
    for (MPI_Aint& d : displs) d -= base;
  }
  return displs;
}

// ------------------------------------------------------------------------------------------
// A guarded buffer of blocks with their own counts and displacements. Blocks that are not
// live (receive blocks of MPI_PROC_NULL neighbors) are left out of the type map: their bytes
// keep the sentinel, like every gap and guard.
// ------------------------------------------------------------------------------------------
class NBuffer {
 public:
  // Every block of layout `lay`, displacements in its extents (the v form).
  NBuffer(const Layout& lay, const std::vector<int>& counts, const std::vector<int>& displs,
          const std::vector<char>& live, unsigned char sentinel)
      : counts_(counts), displs_(displs), sentinel_(sentinel) {
    std::vector<const Layout*> lays(counts.size(), &lay);
    std::vector<MPI_Aint> bytes;
    for (int d : displs) bytes.push_back(static_cast<MPI_Aint>(d) * lay.extent());
    build(lays, bytes, live);
  }
  // Block b of layout *lays[b] at byte displacement byte_displs[b] (the w form).
  NBuffer(const std::vector<const Layout*>& lays, const std::vector<int>& counts,
          const std::vector<MPI_Aint>& byte_displs, const std::vector<char>& live,
          unsigned char sentinel)
      : counts_(counts), byte_displs_(byte_displs), sentinel_(sentinel) {
    for (const Layout* l : lays) types_.push_back(l->type());
    build(lays, byte_displs, live);
  }

  void* ptr() { return storage_.data() + origin_; }
  const int* counts() const { return counts_.empty() ? &zero_ : counts_.data(); }
  const int* displs() const { return displs_.empty() ? &zero_ : displs_.data(); }
  const MPI_Aint* byte_displs() const {
    return byte_displs_.empty() ? &azero_ : byte_displs_.data();
  }
  const MPI_Datatype* types() const { return types_.empty() ? &int_type_ : types_.data(); }

 private:
  void build(const std::vector<const Layout*>& lays, const std::vector<MPI_Aint>& at,
             const std::vector<char>& live) {
    MPI_Aint lo = 0, hi = 0;
    struct Raw {
      MPI_Aint off;
      Prim kind;
      int block;
      long elem;
    };
    std::vector<Raw> raw;
    for (std::size_t b = 0; b < counts_.size(); ++b) {
      const Layout& lay = *lays[b];
      const long per = static_cast<long>(lay.map().size());
      for (int e = 0; e < counts_[b]; ++e) {
        for (std::size_t k = 0; k < lay.map().size(); ++k) {
          const PrimAt& pa = lay.map()[k];
          const MPI_Aint off = at[b] + static_cast<MPI_Aint>(e) * lay.extent() + pa.offset;
          lo = std::min(lo, off);
          hi = std::max(hi, off + static_cast<MPI_Aint>(prim_size(pa.kind)));
          if (live[b])
            raw.push_back({off, pa.kind, static_cast<int>(b), e * per + static_cast<long>(k)});
        }
      }
    }
    const std::size_t guard = 48;
    origin_ = guard + static_cast<std::size_t>(-lo);
    storage_.assign(static_cast<std::size_t>(hi - lo) + 2 * guard, sentinel_);
    covered_.assign(storage_.size(), 0);
    slots_.reserve(raw.size());
    for (const Raw& r : raw) {
      const std::size_t pos = origin_ + static_cast<std::size_t>(r.off);
      slots_.push_back({pos, r.kind, r.block, r.elem});
      for (std::size_t i = 0; i < prim_size(r.kind); ++i) {
        if (covered_[pos + i]) {
          std::fprintf(stderr, "test bug: overlapping blocks in an NBuffer\n");
          std::abort();
        }
        covered_[pos + i] = 1;
      }
    }
  }

 public:
  // As a send buffer: block b of rank me.
  void fill(int me, int iter) {
    for (const Slot& s : slots_)
      encode_value(s.kind, value_hash(me, s.block + kElemSalt, s.elem, iter), &storage_[s.pos]);
  }
  void poison(unsigned char p) {
    for (std::size_t i = 0; i < storage_.size(); ++i)
      if (covered_[i]) storage_[i] = p;
  }
  // As a receive buffer: block b holds block from[b].second of rank from[b].first.
  long check(int me, const std::vector<std::pair<int, int>>& from, int iter,
             const std::string& what) const {
    long bad = 0;
    int reported = 0;
    const int max_reports = 4;
    unsigned char want[8];
    for (const Slot& s : slots_) {
      const auto& f = from[static_cast<std::size_t>(s.block)];
      encode_value(s.kind, value_hash(f.first, f.second + kElemSalt, s.elem, iter), want);
      if (std::memcmp(want, &storage_[s.pos], prim_size(s.kind)) != 0) {
        ++bad;
        if (reported++ < max_reports) {
          ADD_FAILURE() << what << ": rank " << me << ", receive block " << s.block
                        << " (from rank " << f.first << ", its block " << f.second << "), element "
                        << s.elem << " (" << prim_name(s.kind) << "): expected "
                        << format_value(s.kind, want) << ", got "
                        << format_value(s.kind, &storage_[s.pos]) << describe_origin(s, from, iter);
        }
      }
    }
    for (std::size_t i = 0; i < storage_.size(); ++i) {
      if (!covered_[i] && storage_[i] != sentinel_) {
        ++bad;
        if (reported++ < max_reports) {
          ADD_FAILURE() << what << ": rank " << me << ": byte at offset "
                        << static_cast<long>(i) - static_cast<long>(origin_)
                        << " (a gap, a guard or the block of an MPI_PROC_NULL neighbor) was "
                           "overwritten";
        }
      }
    }
    if (bad > max_reports) ADD_FAILURE() << what << ": rank " << me << ": " << bad << " wrong";
    return bad;
  }
  std::vector<unsigned char> snapshot() const { return storage_; }
  bool same_as(const std::vector<unsigned char>& snap) const { return snap == storage_; }

 private:
  struct Slot {
    std::size_t pos;
    Prim kind;
    int block;
    long elem;
  };
  // For a wrong value: which (sender, block) would have produced it (a swapped block?).
  std::string describe_origin(const Slot& s, const std::vector<std::pair<int, int>>& from,
                              int iter) const {
    unsigned char want[8];
    for (const auto& f : from) {
      for (int b = 0; b < 64; ++b) {
        encode_value(s.kind, value_hash(f.first, b + kElemSalt, s.elem, iter), want);
        if (f.first >= 0 && std::memcmp(want, &storage_[s.pos], prim_size(s.kind)) == 0) {
          return " = what rank " + std::to_string(f.first) + " sent in its block " +
                 std::to_string(b);
        }
      }
    }
    return "";
  }
  std::vector<int> counts_, displs_;
  std::vector<MPI_Aint> byte_displs_;
  std::vector<MPI_Datatype> types_;
  std::vector<unsigned char> storage_;
  std::vector<unsigned char> covered_;
  std::vector<Slot> slots_;
  std::size_t origin_ = 0;
  unsigned char sentinel_;
  int zero_ = 0;
  MPI_Aint azero_ = 0;
  MPI_Datatype int_type_ = MPI_INT;
};

// ------------------------------------------------------------------------------------------
// Configurations and runners.
// ------------------------------------------------------------------------------------------
const TypeCase kTypes[] = {
    {"int", layout_int, 1, layout_int, 1},
    {"vector_gaps_to_int", layout_vector_gaps, 1, layout_int, 6},
    {"resized_lb_to_contig2", layout_resized_lb, 1, layout_contig2_int, 1},
    {"struct_to_packed", layout_struct_char_double, 1, layout_packed_char_double, 1},
    {"negative_stride", layout_negative_stride, 1, layout_negative_stride, 1},
    {"resized_lb", layout_resized_lb, 1, layout_resized_lb, 1},
    {"double", layout_double, 1, layout_double, 1},
};
enum { kInt, kVecToInt, kLbToContig2, kStructToPacked, kNegStride, kResizedLb, kDouble };

constexpr int kNumTypes = static_cast<int>(sizeof(kTypes) / sizeof(kTypes[0]));

struct Config {
  const TypeCase* tc;  // nullptr for the w form
  Pattern pattern;
  Displ sdispl, rdispl;
  bool uniform_call = false;  // MPIX_Neighbor_alltoall (one count for every block)
  bool w = false;             // MPIX_Neighbor_alltoallw: a type pair per block (w_type_of)
  int salt = 0;               // the w form: which pair each block gets
};

// The w form: the index in kTypes of the type pair of block `block` of rank `sender` (the
// receiver computes it from the pair it receives).
int w_type_of(int sender, int block, int salt) {
  return static_cast<int>((mix(sender, block, 97) + static_cast<std::uint64_t>(salt)) %
                          static_cast<std::uint64_t>(kNumTypes));
}

std::string describe(const char* mode, const std::string& spec, const Topo& t, const Config& c) {
  std::ostringstream os;
  os << mode
     << (c.w              ? " neighbor_alltoallw"
         : c.uniform_call ? " neighbor_alltoall"
                          : " neighbor_alltoallv")
     << " on " << t.name << ", algorithm '" << (spec.empty() ? "<none>" : spec) << "', "
     << (c.w ? "types per block, salt " + std::to_string(c.salt) : std::string(c.tc->name))
     << ", counts " << pattern_name(c.pattern);
  if (!c.uniform_call)
    os << ", displacements " << displ_name(c.sdispl) << "/" << displ_name(c.rdispl);
  return os.str();
}

struct Buffers {
  Layout slay, rlay;
  std::vector<Layout> wsend, wrecv;  // the w form: kTypes[i].send(), .recv()
  std::unique_ptr<NBuffer> sbuf, rbuf;
  int scount = 0, rcount = 0;  // uniform call
};

// The w form: block j to destination j is w_type_of(me, j) with units of the pattern; receive
// block i is the pair of what its sender sends in it (any pair for MPI_PROC_NULL neighbors).
void make_w_buffers(const Topo& t, const Config& c, Buffers* b) {
  for (const TypeCase& tc : kTypes) {
    b->wsend.push_back(tc.send());
    b->wrecv.push_back(tc.recv());
  }
  // The pattern's large block, per pair: about 24000 primitives.
  auto big = [&](int k) {
    const int prims =
        static_cast<int>(b->wsend[static_cast<std::size_t>(k)].map().size()) * kTypes[k].send_mult;
    return std::max(1, 24000 / prims);
  };
  std::vector<const Layout*> sl, rl;
  std::vector<int> sc, rc;
  std::vector<char> slive, rlive;
  for (int j = 0; j < t.outdegree(); ++j) {
    const int k = w_type_of(t.me, j, c.salt);
    sl.push_back(&b->wsend[static_cast<std::size_t>(k)]);
    sc.push_back(units_of(t, c.pattern, t.me, j, big(k)) * kTypes[k].send_mult);
    slive.push_back(1);
  }
  for (int i = 0; i < t.indegree(); ++i) {
    const auto& f = t.from[static_cast<std::size_t>(i)];
    if (f.first == MPI_PROC_NULL) {
      const int k = i % kNumTypes;
      rl.push_back(&b->wrecv[static_cast<std::size_t>(k)]);
      rc.push_back((i % 3) * kTypes[k].recv_mult);  // any count: nothing may be written there
      rlive.push_back(0);
    } else {
      const int k = w_type_of(f.first, f.second, c.salt);
      rl.push_back(&b->wrecv[static_cast<std::size_t>(k)]);
      rc.push_back(units_of(t, c.pattern, f.first, f.second, big(k)) * kTypes[k].recv_mult);
      rlive.push_back(1);
    }
  }
  b->sbuf.reset(new NBuffer(sl, sc, make_byte_displs(sl, sc, c.sdispl, t.me), slive, 0xC3));
  b->rbuf.reset(new NBuffer(rl, rc, make_byte_displs(rl, rc, c.rdispl, t.me + 101), rlive, 0xA5));
}

void make_buffers(const Topo& t, const Config& c, Buffers* b) {
  if (c.w) return make_w_buffers(t, c, b);
  const TypeCase& tc = *c.tc;
  b->slay = tc.send();
  b->rlay = tc.recv();
  const int prims = static_cast<int>(b->slay.map().size()) * tc.send_mult;
  const int big = std::max(1, 24000 / prims);
  std::vector<int> sc, rc, sd, rd;
  std::vector<char> slive, rlive;
  if (c.uniform_call) {
    const int u = c.pattern == Pattern::Zeros ? 0 : 3;
    b->scount = u * tc.send_mult;
    b->rcount = u * tc.recv_mult;
    for (int j = 0; j < t.outdegree(); ++j) {
      sc.push_back(b->scount);
      sd.push_back(j * b->scount);
      slive.push_back(1);
    }
    for (int i = 0; i < t.indegree(); ++i) {
      rc.push_back(b->rcount);
      rd.push_back(i * b->rcount);
      rlive.push_back(t.from[static_cast<std::size_t>(i)].first != MPI_PROC_NULL);
    }
  } else {
    for (int j = 0; j < t.outdegree(); ++j) {
      sc.push_back(units_of(t, c.pattern, t.me, j, big) * tc.send_mult);
      slive.push_back(1);
    }
    for (int i = 0; i < t.indegree(); ++i) {
      const auto& f = t.from[static_cast<std::size_t>(i)];
      if (f.first == MPI_PROC_NULL) {
        rc.push_back((i % 3) * tc.recv_mult);  // any count: nothing may be written there
        rlive.push_back(0);
      } else {
        rc.push_back(units_of(t, c.pattern, f.first, f.second, big) * tc.recv_mult);
        rlive.push_back(1);
      }
    }
    sd = make_displs(sc, c.sdispl, t.me);
    rd = make_displs(rc, c.rdispl, t.me + 101);
  }
  b->sbuf.reset(new NBuffer(b->slay, sc, sd, slive, 0xC3));
  b->rbuf.reset(new NBuffer(b->rlay, rc, rd, rlive, 0xA5));
}

void expect_reported(MPIX_Request req, const std::string& spec) {
  char name[MPIX_MAX_ALGORITHM_STRING];
  int len = -1;
  const int rc = MPIX_Request_get_algorithm(req, name, &len);
  ASSERT_EQ(rc, MPI_SUCCESS) << "MPIX_Request_get_algorithm: " << error_string(rc);
  EXPECT_EQ(len, static_cast<int>(std::strlen(name)));
  Spec got, want;
  ASSERT_TRUE(parse_spec(name, &got)) << "reported '" << name << "'";
  if (spec.empty() || spec == "auto") {
    EXPECT_NE(got.name, "auto") << "auto must report what it chose";
    EXPECT_NE(std::find(registry_n().begin(), registry_n().end(), got.name), registry_n().end())
        << "reported '" << name << "' is not in the registry";
  } else {
    ASSERT_TRUE(parse_spec(spec, &want));
    EXPECT_EQ(got.name, want.name) << "reported '" << name << "'";
  }
}

MPI_Info algorithm_info(const std::string& spec) {
  MPI_Info info = MPI_INFO_NULL;
  if (!spec.empty()) {
    MPI_Info_create(&info);
    MPI_Info_set(info, MPIX_INFO_KEY_ALGORITHM, spec.c_str());
  }
  return info;
}

void complete(MPIX_Request* req, int how, const std::string& label) {
  int rc;
  switch (how % 3) {
    case 0:
      rc = MPIX_Start(req);
      EXPECT_EQ(rc, MPI_SUCCESS) << label << " MPIX_Start: " << error_string(rc);
      rc = MPIX_Wait(req, MPI_STATUS_IGNORE);
      EXPECT_EQ(rc, MPI_SUCCESS) << label << " MPIX_Wait: " << error_string(rc);
      break;
    case 1:
      rc = MPIX_Startall(1, req);
      EXPECT_EQ(rc, MPI_SUCCESS) << label << " MPIX_Startall: " << error_string(rc);
      rc = MPIX_Waitall(1, req, MPI_STATUSES_IGNORE);
      EXPECT_EQ(rc, MPI_SUCCESS) << label << " MPIX_Waitall: " << error_string(rc);
      break;
    default: {
      rc = MPIX_Start(req);
      EXPECT_EQ(rc, MPI_SUCCESS) << label << " MPIX_Start: " << error_string(rc);
      int flag = 0;
      while (rc == MPI_SUCCESS && !flag) rc = MPIX_Test(req, &flag, MPI_STATUS_IGNORE);
      EXPECT_EQ(rc, MPI_SUCCESS) << label << " MPIX_Test: " << error_string(rc);
      break;
    }
  }
}

// An MPIX_Topo with t's lists of this rank, over t.comm; info "mpix_algorithm" = spec unless
// spec is empty. Collective over t.comm.
MPIX_Topo make_xtopo(const Topo& t, const std::string& spec) {
  MPI_Info info = algorithm_info(spec);
  MPIX_Topo x = MPIX_TOPO_NULL;
  // Empty lists are passed as they come (possibly NULL: allowed for a degree of 0).
  const int rc = MPIX_Topo_create(t.comm, t.indegree(), t.my_src().data(), t.outdegree(),
                                  t.my_dst().data(), info, &x);
  if (info != MPI_INFO_NULL) MPI_Info_free(&info);
  EXPECT_EQ(rc, MPI_SUCCESS) << "MPIX_Topo_create: " << error_string(rc);
  EXPECT_EQ(rc == MPI_SUCCESS, x != MPIX_TOPO_NULL);
  return x;
}

int init_call(Buffers& b, const Config& c, const Topo& t, MPI_Info info, MPIX_Request* req,
              MPIX_Topo x = MPIX_TOPO_NULL) {
  if (x != MPIX_TOPO_NULL && !c.w) {
    // The uniform configurations as the v form (an MPIX_Topo has no regular call).
    return MPIX_Neighbor_alltoallv_topo_init(b.sbuf->ptr(), b.sbuf->counts(), b.sbuf->displs(),
                                             b.slay.type(), b.rbuf->ptr(), b.rbuf->counts(),
                                             b.rbuf->displs(), b.rlay.type(), x, info, req);
  }
  if (c.w) {
    // The arrays are copies, destroyed right after init.
    const std::size_t in = static_cast<std::size_t>(t.indegree()) + 1;
    const std::size_t out = static_cast<std::size_t>(t.outdegree()) + 1;
    std::vector<int> sc(b.sbuf->counts(), b.sbuf->counts() + out - 1);
    std::vector<MPI_Aint> sd(b.sbuf->byte_displs(), b.sbuf->byte_displs() + out - 1);
    std::vector<MPI_Datatype> st(b.sbuf->types(), b.sbuf->types() + out - 1);
    std::vector<int> rc(b.rbuf->counts(), b.rbuf->counts() + in - 1);
    std::vector<MPI_Aint> rd(b.rbuf->byte_displs(), b.rbuf->byte_displs() + in - 1);
    std::vector<MPI_Datatype> rt(b.rbuf->types(), b.rbuf->types() + in - 1);
    sc.push_back(0), sd.push_back(0), st.push_back(MPI_INT);
    rc.push_back(0), rd.push_back(0), rt.push_back(MPI_INT);
    return MPIX_Neighbor_alltoallw_init(b.sbuf->ptr(), sc.data(), sd.data(), st.data(),
                                        b.rbuf->ptr(), rc.data(), rd.data(), rt.data(), t.comm,
                                        info, req);
  }
  if (c.uniform_call) {
    return MPIX_Neighbor_alltoall_init(b.sbuf->ptr(), b.scount, b.slay.type(), b.rbuf->ptr(),
                                       b.rcount, b.rlay.type(), t.comm, info, req);
  }
  // The arrays are copies, destroyed right after init.
  std::vector<int> sc(b.sbuf->counts(), b.sbuf->counts() + t.outdegree());
  std::vector<int> sd(b.sbuf->displs(), b.sbuf->displs() + t.outdegree());
  std::vector<int> rc(b.rbuf->counts(), b.rbuf->counts() + t.indegree());
  std::vector<int> rd(b.rbuf->displs(), b.rbuf->displs() + t.indegree());
  sc.push_back(0);
  sd.push_back(0);
  rc.push_back(0);
  rd.push_back(0);
  return MPIX_Neighbor_alltoallv_init(b.sbuf->ptr(), sc.data(), sd.data(), b.slay.type(),
                                      b.rbuf->ptr(), rc.data(), rd.data(), b.rlay.type(), t.comm,
                                      info, req);
}

int blocking_call(Buffers& b, const Config& c, const Topo& t, MPIX_Topo x = MPIX_TOPO_NULL) {
  if (x != MPIX_TOPO_NULL && !c.w) {
    return MPIX_Neighbor_alltoallv_topo(b.sbuf->ptr(), b.sbuf->counts(), b.sbuf->displs(),
                                        b.slay.type(), b.rbuf->ptr(), b.rbuf->counts(),
                                        b.rbuf->displs(), b.rlay.type(), x);
  }
  if (c.w) {
    return MPIX_Neighbor_alltoallw(b.sbuf->ptr(), b.sbuf->counts(), b.sbuf->byte_displs(),
                                   b.sbuf->types(), b.rbuf->ptr(), b.rbuf->counts(),
                                   b.rbuf->byte_displs(), b.rbuf->types(), t.comm);
  }
  if (c.uniform_call) {
    return MPIX_Neighbor_alltoall(b.sbuf->ptr(), b.scount, b.slay.type(), b.rbuf->ptr(), b.rcount,
                                  b.rlay.type(), t.comm);
  }
  return MPIX_Neighbor_alltoallv(b.sbuf->ptr(), b.sbuf->counts(), b.sbuf->displs(), b.slay.type(),
                                 b.rbuf->ptr(), b.rbuf->counts(), b.rbuf->displs(), b.rlay.type(),
                                 t.comm);
}

// `key` makes the data of every run different (identical on every rank).
void run_persistent(const Topo& t, const std::string& spec, const Config& c, int key,
                    int cycles = 5) {
  if (!t.member()) return;
  SCOPED_TRACE(describe("persistent", spec, t, c));
  Buffers b;
  make_buffers(t, c, &b);
  MPIX_Topo x = kViaTopo ? make_xtopo(t, "") : MPIX_TOPO_NULL;
  MPI_Info info = algorithm_info(spec);
  MPIX_Request req = MPIX_REQUEST_NULL;
  int rc = init_call(b, c, t, info, &req, x);
  if (info != MPI_INFO_NULL) MPI_Info_free(&info);
  EXPECT_EQ(rc, MPI_SUCCESS) << "init: " << error_string(rc);
  if (kViaTopo) {
    // Freed at once: the request must keep what it runs on.
    EXPECT_EQ(MPIX_Topo_free(&x), MPI_SUCCESS);
    EXPECT_EQ(x, MPIX_TOPO_NULL);
  }
  const bool ok = rc == MPI_SUCCESS && req != MPIX_REQUEST_NULL;
  if (!all_ok(t.comm, ok)) {
    if (ok) MPIX_Request_free(&req);
    ADD_FAILURE() << "init failed on some rank; cycles skipped";
    return;
  }
  expect_reported(req, spec);
  for (int i = 0; i < cycles; ++i) {
    const int iter = key * 64 + i;
    const std::string label = "cycle " + std::to_string(i);
    b.sbuf->fill(t.me, iter);
    b.rbuf->poison(static_cast<unsigned char>(0x30 + i));
    const std::vector<unsigned char> snap = b.sbuf->snapshot();
    complete(&req, i, label);
    b.rbuf->check(t.me, t.from, iter, label + " receive buffer");
    EXPECT_TRUE(b.sbuf->same_as(snap)) << label << ": send buffer modified";
  }
  if (kViaTopo) {
    // The same exchange on the topology communicator: the same bytes, gaps and guards included.
    b.sbuf->fill(t.me, key * 64 + 63);
    b.rbuf->poison(0x5A);
    complete(&req, 0, "through MPIX_Topo");
    const std::vector<unsigned char> via_topo = b.rbuf->snapshot();
    b.rbuf->poison(0x5A);
    rc = blocking_call(b, c, t);
    EXPECT_EQ(rc, MPI_SUCCESS) << "on the topology communicator: " << error_string(rc);
    EXPECT_TRUE(b.rbuf->same_as(via_topo))
        << "MPIX_Topo and the topology communicator deliver different bytes";
  }
  rc = MPIX_Request_free(&req);
  EXPECT_EQ(rc, MPI_SUCCESS) << "MPIX_Request_free: " << error_string(rc);
  EXPECT_EQ(req, MPIX_REQUEST_NULL);
}

void run_blocking(const Topo& t, const std::string& spec, const Config& c, int key, int calls = 2) {
  if (!t.member()) return;
  SCOPED_TRACE(describe("blocking", spec, t, c));
  Buffers b;
  make_buffers(t, c, &b);
  // Through MPIX_Topo: the object's algorithm from its info or inherited from the
  // communicator's setting at creation (alternating).
  const bool inherit = (key / 2) % 2 == 0;
  ScopedCommAlgorithm sel(t.comm, kCollective, kViaTopo && !inherit ? "" : spec);
  MPIX_Topo x = kViaTopo ? make_xtopo(t, inherit ? "" : spec) : MPIX_TOPO_NULL;
  for (int i = 0; i < calls; ++i) {
    const int iter = key * 64 + 32 + i;
    b.sbuf->fill(t.me, iter);
    b.rbuf->poison(static_cast<unsigned char>(0x40 + i));
    const std::vector<unsigned char> snap = b.sbuf->snapshot();
    const int rc = blocking_call(b, c, t, x);
    EXPECT_EQ(rc, MPI_SUCCESS) << "call " << i << ": " << error_string(rc);
    b.rbuf->check(t.me, t.from, iter, "call " + std::to_string(i) + " receive buffer");
    EXPECT_TRUE(b.sbuf->same_as(snap)) << "call " << i << ": send buffer modified";
  }
  if (kViaTopo) {
    EXPECT_EQ(MPIX_Topo_free(&x), MPI_SUCCESS);
  }
}

// Whether some rank has two edges to the same destination (every rank computes the same).
bool duplicate_edges(const Topo& t) {
  for (const std::vector<int>& d : t.dst) {
    std::vector<int> v;
    for (int x : d)
      if (x != MPI_PROC_NULL) v.push_back(x);
    std::sort(v.begin(), v.end());
    if (std::adjacent_find(v.begin(), v.end()) != v.end()) return true;
  }
  return false;
}

// "system" is the MPI library's MPI_Neighbor_alltoall[v], which gets periodic Cartesian
// dimensions of size 1 and 2 wrong in some versions (the standard is explicit; see the top),
// and, in MPICH 4.0.2's MPI_Neighbor_alltoall (and MPI_Ineighbor_alltoall) and in MPICH 4.3.2's
// alltoallv forms too, pairs duplicate graph edges between the same two ranks in reverse order (a
// distributed graph of four self loops delivers block 3 into block 0; MPI-4.1 section 8.6 pairs
// the k-th with the k-th): "system" calls the matching MPI function and inherits what it does
// there.
bool runnable(const Topo& t, const std::string& spec) {
  return !(spec == "system" && (t.degenerate || duplicate_edges(t)));
}

bool mpich() {
  static const bool is = [] {
    char v[MPI_MAX_LIBRARY_VERSION_STRING];
    int n = 0;
    MPI_Get_library_version(v, &n);
    return std::strncmp(v, "MPICH Version:", 14) == 0;
  }();
  return is;
}

// The same for the w form, where MPICH (4.0.2) has one bug more: its MPI_Neighbor_alltoallw
// (and the persistent form) loses receive blocks on a distributed graph where a rank's in- and
// out-degree differ (rank 0 of 5 receiving one int from each of the 4 others and sending to 2:
// its receive block 2 never arrives; MPI_Neighbor_alltoallv gets the same graph right, and so
// does Open MPI's alltoallw).
bool runnable_w(const Topo& t, const std::string& spec) {
  if (!runnable(t, spec)) return false;
  if (spec != "system" || !mpich()) return true;
  for (std::size_t r = 0; r < t.src.size(); ++r)
    if (t.src[r].size() != t.dst[r].size()) return false;
  return true;
}

// The algorithms an edge case runs: all of them, or, when the MPI is slow (the case's
// `runs_each` runs per algorithm do not fit `budget` seconds), `keep` of them, rotating from
// `start` so that the edge cases together still cover every algorithm.
std::vector<std::string> edge_specs(long runs_each, double budget, long start, int keep) {
  const std::vector<std::string>& all = specs_to_run();
  const int stride = sample_stride(runs_each * static_cast<long>(all.size()), budget);
  if (stride == 1 || all.size() <= static_cast<std::size_t>(keep)) return all;
  std::vector<std::string> some;
  for (int k = 0; k < keep; ++k)
    some.push_back(all[static_cast<std::size_t>((start + k) % static_cast<long>(all.size()))]);
  return some;
}

// ------------------------------------------------------------------------------------------
// The matrix: topology x algorithm x configuration x {persistent, blocking}.
// ------------------------------------------------------------------------------------------
const Config kConfigs[] = {
    {&kTypes[kInt], Pattern::Topology, Displ::ReverseGaps, Displ::ShuffledGaps, false},
    {&kTypes[kVecToInt], Pattern::Directional, Displ::ShuffledGaps, Displ::ReverseGaps, false},
    {&kTypes[kLbToContig2], Pattern::Uniform, Displ::Ascending, Displ::ShuffledGaps, false},
    {&kTypes[kStructToPacked], Pattern::OneBig, Displ::ShuffledGaps, Displ::Ascending, false},
    {&kTypes[kNegStride], Pattern::Zeros, Displ::ReverseGaps, Displ::ReverseGaps, false},
    {&kTypes[kResizedLb], Pattern::Uniform, Displ::Ascending, Displ::Ascending, true},
    {&kTypes[kVecToInt], Pattern::Uniform, Displ::Ascending, Displ::Ascending, true},
};
constexpr int kNumConfigs = static_cast<int>(sizeof(kConfigs) / sizeof(kConfigs[0]));

class NeighborMatrix : public ::testing::TestWithParam<Kind> {};

std::string kind_param_name(const ::testing::TestParamInfo<Kind>& info) {
  return kind_name(info.param);
}

void PrintTo(Kind k, std::ostream* os) { *os << kind_name(k); }

int matrix_stride() {
  static const int stride = sample_stride(
      static_cast<long>(kNumKinds) * static_cast<long>(specs_to_run().size()) * kNumConfigs * 2,
      8.0);
  return stride;
}

// The first runnable algorithm from index a on (wrapping), or -1.
long runnable_from(const Topo& t, const std::vector<std::string>& specs, long a,
                   bool (*can)(const Topo&, const std::string&) = runnable) {
  const long n = static_cast<long>(specs.size());
  for (long k = 0; k < n; ++k) {
    const long i = (a + k) % n;
    if (can(t, specs[static_cast<std::size_t>(i)])) return i;
  }
  return -1;
}

TEST_P(NeighborMatrix, EveryAlgorithm) {
  const Kind kind = GetParam();
  const int kindex = static_cast<int>(kind);
  const std::vector<std::string>& specs = specs_to_run();
  ASSERT_FALSE(specs.empty());
  const int stride = matrix_stride();  // collective on MPI_COMM_WORLD the first time
  // A very slow MPI (oversubscribed MPICH) runs each topology at every other rank count.
  if (stride >= 20 && (kindex + comm_size(MPI_COMM_WORLD)) % 2 == 1) {
    GTEST_SKIP()
        << "slow MPI: this topology runs at every other rank count (MPIA_TEST_FULL=1 runs it)";
  }
  TopoPtr t = make_topology(kind);
  ASSERT_TRUE(t);
  if (kViaTopo && t->cartesian)
    GTEST_SKIP() << "MPIX_Topo is a graph: Cartesian directions and MPI_PROC_NULL are not";
  const long nspecs = static_cast<long>(specs.size());
  // When sampling (a slow MPI), every topology still runs one algorithm and configuration,
  // persistent for even topologies and blocking for odd ones, rotating over the algorithms
  // and configurations, plus a 1-in-stride sample of the rest.
  const long keep_a = runnable_from(*t, specs, (kindex / 2) % nspecs);
  const long keep_pa = kindex % 2 == 0 ? keep_a : -1;
  const long keep_ba = kindex % 2 == 1 ? keep_a : -1;
  const int keep_pc = (kindex / 2) % kNumConfigs, keep_bc = (kindex / 2 + 3) % kNumConfigs;
  for (long a = 0; a < nspecs; ++a) {
    const std::string& spec = specs[static_cast<std::size_t>(a)];
    if (!runnable(*t, spec)) continue;
    for (int c = 0; c < kNumConfigs; ++c) {
      const long combo = ((static_cast<long>(kindex) * nspecs + a) * kNumConfigs + c) * 2;
      const int key = static_cast<int>(combo % 100000);
      if (stride == 1 || (a == keep_pa && c == keep_pc) || sampled(combo, stride)) {
        run_persistent(*t, spec, kConfigs[c], key);
      }
      if (stride == 1 || (a == keep_ba && c == keep_bc) || sampled(combo + 1, stride)) {
        run_blocking(*t, spec, kConfigs[c], key + 1);
      }
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Topologies, NeighborMatrix, ::testing::ValuesIn(kKinds), kind_param_name);

// ------------------------------------------------------------------------------------------
// MPIX_Neighbor_alltoallw: a datatype pair per block (kTypes, drawn per sender and block: holes,
// a lower bound that is not 0, a negative stride, different send and receive type maps), byte
// displacements (mostly unaligned; blocks in ascending, reverse and shuffled order, the base at
// the end or in the middle), every topology x algorithm, persistent and blocking. On topologies
// where the MPI library's own MPI_Neighbor_alltoallw is right (see runnable), it is checked
// against the same reference with the same buffers.
// ------------------------------------------------------------------------------------------
const Config kWConfigs[] = {
    {nullptr, Pattern::Topology, Displ::ShuffledGaps, Displ::ReverseGaps, false, true, 0},
    {nullptr, Pattern::Varied, Displ::NegativeEnd, Displ::NegativeMiddle, false, true, 3},
    {nullptr, Pattern::OneBig, Displ::Ascending, Displ::ShuffledGaps, false, true, 5},
    {nullptr, Pattern::Zeros, Displ::ReverseGaps, Displ::Ascending, false, true, 1},
};
constexpr int kNumWConfigs = static_cast<int>(sizeof(kWConfigs) / sizeof(kWConfigs[0]));

// The MPI library's MPI_Neighbor_alltoallw on the same buffers, against the reference.
void run_mpi_w(const Topo& t, const Config& c, int key) {
  if (!t.member()) return;
  SCOPED_TRACE(describe("MPI_Neighbor_alltoallw (the MPI library's)", "", t, c));
  Buffers b;
  make_buffers(t, c, &b);
  b.sbuf->fill(t.me, key);
  b.rbuf->poison(0x5A);
  const int rc = MPI_Neighbor_alltoallw(b.sbuf->ptr(), b.sbuf->counts(), b.sbuf->byte_displs(),
                                        b.sbuf->types(), b.rbuf->ptr(), b.rbuf->counts(),
                                        b.rbuf->byte_displs(), b.rbuf->types(), t.comm);
  EXPECT_EQ(rc, MPI_SUCCESS) << error_string(rc);
  b.rbuf->check(t.me, t.from, key, "receive buffer");
}

class NeighborWMatrix : public ::testing::TestWithParam<Kind> {};

TEST_P(NeighborWMatrix, EveryAlgorithm) {
  const Kind kind = GetParam();
  const int kindex = static_cast<int>(kind);
  const std::vector<std::string>& specs = specs_to_run();
  const long nspecs = static_cast<long>(specs.size());
  static const int stride = sample_stride(kNumKinds * nspecs * kNumWConfigs * 2, 2.0);
  if (stride >= 20 && (kindex + comm_size(MPI_COMM_WORLD)) % 2 == 1) {
    GTEST_SKIP()
        << "slow MPI: this topology runs at every other rank count (MPIA_TEST_FULL=1 runs it)";
  }
  TopoPtr t = make_topology(kind);
  ASSERT_TRUE(t);
  // When sampling, every topology still runs one algorithm persistent and another blocking.
  const long keep_pa = runnable_from(*t, specs, kindex % nspecs, runnable_w);
  const long keep_ba = runnable_from(*t, specs, (kindex + 1) % nspecs, runnable_w);
  for (long a = 0; a < nspecs; ++a) {
    const std::string& spec = specs[static_cast<std::size_t>(a)];
    if (!runnable_w(*t, spec)) continue;
    for (int c = 0; c < kNumWConfigs; ++c) {
      const long combo = ((static_cast<long>(kindex) * nspecs + a) * kNumWConfigs + c) * 2 + 500000;
      const int key = static_cast<int>(combo % 100000);
      if (stride == 1 || (a == keep_pa && c == kindex % kNumWConfigs) || sampled(combo, stride))
        run_persistent(*t, spec, kWConfigs[c], key);
      if (stride == 1 || (a == keep_ba && c == (kindex + 1) % kNumWConfigs) ||
          sampled(combo + 1, stride))
        run_blocking(*t, spec, kWConfigs[c], key + 1);
    }
  }
  if (runnable_w(*t, "system")) run_mpi_w(*t, kWConfigs[kindex % kNumWConfigs], 77000 + kindex);
}

INSTANTIATE_TEST_SUITE_P(Topologies, NeighborWMatrix, ::testing::ValuesIn(kKinds), kind_param_name);

// ------------------------------------------------------------------------------------------
// The registry and the selection.
// ------------------------------------------------------------------------------------------
TEST(NeighborRegistry, HasTheDocumentedAlgorithms) {
  const std::vector<std::string>& names = registry_n();
  for (const char* want : {"direct", "locality", "system", "auto"}) {
    EXPECT_NE(std::find(names.begin(), names.end(), want), names.end())
        << "neighbor_alltoallv registry lacks " << want;
  }
  std::vector<std::string> sorted = names;
  std::sort(sorted.begin(), sorted.end());
  EXPECT_EQ(std::adjacent_find(sorted.begin(), sorted.end()), sorted.end()) << "duplicates";
  ScopedErrhandler eh(MPI_COMM_SELF, MPI_ERRORS_RETURN);
  const char *name = nullptr, *desc = nullptr;
  EXPECT_NE(MPIX_Algorithm_get("neighbor_alltoallv", static_cast<int>(names.size()), &name, &desc),
            MPI_SUCCESS)
      << "index past the end";
}

// One persistent init on t (neighbor_alltoall_init when `uniform`) with info `info_spec` ("":
// none), which must report algorithm `want`, and one checked cycle.
void expect_init_runs(const Topo& t, bool uniform, const std::string& info_spec,
                      const std::string& want) {
  Config c{&kTypes[kInt], Pattern::Uniform, Displ::Ascending, Displ::Ascending, uniform};
  SCOPED_TRACE("info '" + info_spec + "'" + (uniform ? " (neighbor_alltoall_init)" : ""));
  Buffers b;
  make_buffers(t, c, &b);
  MPI_Info info = algorithm_info(info_spec);
  MPIX_Request req = MPIX_REQUEST_NULL;
  const int rc = init_call(b, c, t, info, &req);
  if (info != MPI_INFO_NULL) MPI_Info_free(&info);
  EXPECT_EQ(rc, MPI_SUCCESS) << error_string(rc);
  if (rc != MPI_SUCCESS) return;  // failed on every rank: init agrees
  char name[MPIX_MAX_ALGORITHM_STRING];
  int len = 0;
  EXPECT_EQ(MPIX_Request_get_algorithm(req, name, &len), MPI_SUCCESS);
  Spec got;
  EXPECT_TRUE(parse_spec(name, &got));
  EXPECT_EQ(got.name, want) << "reported '" << name << "'";
  b.sbuf->fill(t.me, 5);
  complete(&req, 0, "cycle");
  b.rbuf->check(t.me, t.from, 5, "receive buffer");
  EXPECT_EQ(MPIX_Request_free(&req), MPI_SUCCESS);
}

// Info wins over the communicator's choice (MPIX_Comm_set_algorithm); that choice selects when
// there is no info; both init calls report what they run.
TEST(NeighborSelection, InfoAndCommAlgorithm) {
  const bool slow = sample_stride(12, 2.0) > 1;
  TopoPtr t = make_topology(Kind::Cart1dPeriodic);
  if (!t->member()) return;
  // (communicator's choice, info, neighbor_alltoall_init instead of the v variant)
  struct Case {
    const char *chosen, *info;
    bool uniform;
  };
  const Case cases[] = {{"locality", "", false},      {"direct", "locality", false},
                        {"locality", "direct", true}, {"direct", "", true},
                        {"direct", "direct", false},  {"locality", "locality", true}};
  for (const Case& k : cases) {
    if (slow && &k - cases >= 3) break;
    SCOPED_TRACE(std::string("MPIX_Comm_set_algorithm '") + k.chosen + "'");
    ScopedCommAlgorithm sel(t->comm, kCollective, k.chosen);
    expect_init_runs(*t, k.uniform, k.info, *k.info ? k.info : k.chosen);
  }
}

// The environment selects when there is neither info nor a communicator's choice, on every
// communicator; info and MPIX_Comm_set_algorithm win over it; the blocking call runs and
// delivers. test/mpi/environment.cmake runs this with MPIX_NEIGHBOR_ALLTOALLV set (to a valid
// algorithm) before the process starts; without it the test skips, on every rank alike.
TEST(NeighborSelectionEnv, InfoAndEnvironment) {
  const char* env = std::getenv(kEnvVar);
  if (env == nullptr) GTEST_SKIP() << kEnvVar << " is not set (see environment.cmake)";
  SCOPED_TRACE(std::string(kEnvVar) + "='" + env + "'");
  Spec want;
  ASSERT_TRUE(parse_spec(env, &want));
  const std::string other = want.name == "direct" ? "locality" : "direct";
  for (Kind kind : {Kind::Cart1dPeriodic, Kind::DistAdjRandom}) {
    TopoPtr t = make_topology(kind);
    if (!t->member()) continue;
    SCOPED_TRACE(t->name);
    for (bool uniform : {false, true}) {
      expect_init_runs(*t, uniform, "", want.name);
      expect_init_runs(*t, uniform, other, other);
    }
    {
      ScopedCommAlgorithm sel(t->comm, kCollective, other);
      expect_init_runs(*t, false, "", other);
      expect_init_runs(*t, true, want.name, want.name);
    }
    expect_init_runs(*t, false, "", want.name);  // the reset returns to the environment's
    run_blocking(*t, "", kConfigs[0], 4100 + static_cast<int>(kind));
    run_blocking(*t, "", kConfigs[6], 4200 + static_cast<int>(kind));
  }
}

// ------------------------------------------------------------------------------------------
// Edge cases.
// ------------------------------------------------------------------------------------------
// Many cycles, alternating completion calls.
TEST(NeighborEdge, ManyCycles) {
  const std::vector<std::string> specs = edge_specs(2, 2.0, 0, 1);
  const bool slow = specs.size() < specs_to_run().size();
  TopoPtr t = make_topology(Kind::DistCreateWeighted);
  const Config c{&kTypes[kStructToPacked], Pattern::Varied, Displ::ShuffledGaps, Displ::ReverseGaps,
                 false};
  for (std::size_t a = 0; a < specs.size(); ++a) {
    // "system" is not checked where a rank has two edges to the same peer (runnable): at 1-3
    // ranks this random graph has some, and MPICH 4.3.2 pairs them in reverse.
    if (!runnable(*t, specs[a])) continue;
    run_persistent(*t, specs[a], c, 900 + static_cast<int>(a), slow ? 6 : 12);
  }
}

// Several requests on the same and on different topology communicators, all active at once,
// completed in reverse order.
TEST(NeighborEdge, ConcurrentRequests) {
  TopoPtr t1 = make_topology(Kind::Cart2dPeriodic);
  TopoPtr t2 = make_topology(Kind::DistAdjRandom);
  const std::vector<std::string> specs = edge_specs(6, 3.0, 1, 2);
  const Config c1{&kTypes[kInt], Pattern::Directional, Displ::ReverseGaps, Displ::ShuffledGaps,
                  false};
  const Config c2{&kTypes[kDouble], Pattern::Varied, Displ::ShuffledGaps, Displ::Ascending, false};
  const Config c3{
      nullptr, Pattern::Directional, Displ::ReverseGaps, Displ::ShuffledGaps, false, true, 4};
  struct Live {
    const Topo* t;
    const Config* c;
    Buffers b;
    MPIX_Request req = MPIX_REQUEST_NULL;
  };
  std::vector<std::unique_ptr<Live>> live;
  for (std::size_t a = 0; a < specs.size(); ++a) {
    for (int which = 0; which < 4; ++which) {
      const Topo* t = which >= 2 ? t2.get() : t1.get();
      if (!t->member() || !(which == 3 ? runnable_w : runnable)(*t, specs[a])) continue;
      std::unique_ptr<Live> l(new Live);
      l->t = t;
      l->c = which == 1 ? &c2 : which == 3 ? &c3 : &c1;
      make_buffers(*t, *l->c, &l->b);
      MPI_Info info = algorithm_info(specs[a]);
      const int rc = init_call(l->b, *l->c, *t, info, &l->req);
      if (info != MPI_INFO_NULL) MPI_Info_free(&info);
      ASSERT_EQ(rc, MPI_SUCCESS) << "init of request " << live.size() << ": " << error_string(rc);
      live.push_back(std::move(l));
    }
  }
  const int rounds = specs.size() < specs_to_run().size() ? 2 : 3;
  for (int round = 0; round < rounds; ++round) {
    for (std::size_t i = 0; i < live.size(); ++i) {
      live[i]->b.sbuf->fill(live[i]->t->me, 7000 + round * 100 + static_cast<int>(i));
      live[i]->b.rbuf->poison(0x11);
      EXPECT_EQ(MPIX_Start(&live[i]->req), MPI_SUCCESS);
    }
    for (std::size_t i = live.size(); i-- > 0;) {
      EXPECT_EQ(MPIX_Wait(&live[i]->req, MPI_STATUS_IGNORE), MPI_SUCCESS);
      live[i]->b.rbuf->check(live[i]->t->me, live[i]->t->from,
                             7000 + round * 100 + static_cast<int>(i),
                             "round " + std::to_string(round) + " request " + std::to_string(i) +
                                 " on " + live[i]->t->name);
    }
  }
  for (auto& l : live) EXPECT_EQ(MPIX_Request_free(&l->req), MPI_SUCCESS);
}

// The blocking call repeated on the same buffers with changing counts (a cached plan must not
// be reused for different arguments), and with different algorithms on the same arguments.
TEST(NeighborEdge, BlockingCountsChange) {
  TopoPtr t = make_topology(Kind::CartPairs);
  TopoPtr g = make_topology(Kind::DistAdjWeighted);
  const Pattern pats[] = {Pattern::Uniform, Pattern::Directional, Pattern::Varied, Pattern::Zeros,
                          Pattern::Directional};
  const std::vector<std::string> specs = edge_specs(6, 3.0, 2, 2);
  for (const Topo* tp : {t.get(), g.get()}) {
    if (!tp->member()) continue;
    const int cap = 64 * (tp->indegree() + tp->outdegree()) + 64;
    std::vector<int> sbuf(static_cast<std::size_t>(cap)), rbuf(static_cast<std::size_t>(cap));
    for (const std::string& spec : specs) {
      if (!runnable(*tp, spec)) continue;
      SCOPED_TRACE(tp->name + ", algorithm '" + spec + "'");
      ScopedCommAlgorithm sel(tp->comm, kCollective, spec);
      for (int i = 0; i < 5; ++i) {
        const Pattern p = pats[i];
        std::vector<int> sc, rc;
        for (int j = 0; j < tp->outdegree(); ++j) sc.push_back(units_of(*tp, p, tp->me, j, 1));
        for (int k = 0; k < tp->indegree(); ++k) {
          const auto& f = tp->from[static_cast<std::size_t>(k)];
          rc.push_back(f.first == MPI_PROC_NULL ? 1 : units_of(*tp, p, f.first, f.second, 1));
        }
        std::vector<int> sd = make_displs(sc, Displ::ShuffledGaps, i);
        std::vector<int> rd = make_displs(rc, Displ::ReverseGaps, i);
        sc.push_back(0);
        sd.push_back(0);
        rc.push_back(0);
        rd.push_back(0);
        const int iter = 5000 + i;
        std::fill(sbuf.begin(), sbuf.end(), -1);
        std::fill(rbuf.begin(), rbuf.end(), -7);
        for (int j = 0; j < tp->outdegree(); ++j)
          for (int e = 0; e < sc[static_cast<std::size_t>(j)]; ++e)
            encode_value(Prim::Int, value_hash(tp->me, j + kElemSalt, e, iter),
                         reinterpret_cast<unsigned char*>(
                             &sbuf[static_cast<std::size_t>(sd[static_cast<std::size_t>(j)] + e)]));
        const int code =
            MPIX_Neighbor_alltoallv(sbuf.data(), sc.data(), sd.data(), MPI_INT, rbuf.data(),
                                    rc.data(), rd.data(), MPI_INT, tp->comm);
        EXPECT_EQ(code, MPI_SUCCESS) << "call " << i << ": " << error_string(code);
        std::vector<int> want(rbuf.size(), -7);
        for (int k = 0; k < tp->indegree(); ++k) {
          const auto& f = tp->from[static_cast<std::size_t>(k)];
          if (f.first == MPI_PROC_NULL) continue;
          for (int e = 0; e < rc[static_cast<std::size_t>(k)]; ++e)
            encode_value(Prim::Int, value_hash(f.first, f.second + kElemSalt, e, iter),
                         reinterpret_cast<unsigned char*>(
                             &want[static_cast<std::size_t>(rd[static_cast<std::size_t>(k)] + e)]));
        }
        long bad = 0;
        for (std::size_t x = 0; x < want.size(); ++x) bad += want[x] != rbuf[x];
        EXPECT_EQ(bad, 0) << "call " << i << " (" << pattern_name(p) << "): " << bad
                          << " wrong ints on rank " << tp->me;
      }
    }
  }
}

// Negative displacements are legal MPI: the base pointer may be the end of the buffer (every
// block before it) or its middle. Every algorithm and the default, persistent and blocking,
// on an open Cartesian grid (MPI_PROC_NULL blocks, never to be written), a periodic 2D grid
// and a multigraph (duplicate edges, self loops), against the reference, with every byte
// around the blocks checked untouched.
TEST(NeighborEdge, NegativeDisplacements) {
  const std::vector<std::string>& specs = specs_to_run();
  const Kind kinds[] = {Kind::Cart1dOpen, Kind::Cart2dPeriodic, Kind::GraphMulti};
  const Config configs[] = {
      {&kTypes[kInt], Pattern::Directional, Displ::NegativeEnd, Displ::NegativeMiddle, false},
      {&kTypes[kStructToPacked], Pattern::Varied, Displ::NegativeMiddle, Displ::NegativeEnd, false},
      {&kTypes[kNegStride], Pattern::Topology, Displ::NegativeEnd, Displ::NegativeEnd, false},
  };
  const long nspecs = static_cast<long>(specs.size());
  const int stride = sample_stride(3L * nspecs * 3 * 2, 4.0);
  for (int k = 0; k < 3; ++k) {
    TopoPtr t = make_topology(kinds[k]);
    for (long a = 0; a < nspecs; ++a) {
      const std::string& spec = specs[static_cast<std::size_t>(a)];
      if (!runnable(*t, spec)) continue;
      for (int c = 0; c < 3; ++c) {
        const long combo = ((k * nspecs + a) * 3 + c) * 2 + 800000;
        const int key = static_cast<int>(combo % 100000);
        // When sampling, every algorithm still runs persistent on one configuration and
        // blocking on another, rotating over the topologies.
        if ((k == a % 3 && c == (a + 1) % 3) || sampled(combo, stride)) {
          run_persistent(*t, spec, configs[c], key, 3);
        }
        if ((k == (a + 1) % 3 && c == a % 3) || sampled(combo + 1, stride)) {
          run_blocking(*t, spec, configs[c], key + 1);
        }
      }
    }
  }
}

// Zero counts everywhere with a null send or receive buffer: legal, moves nothing.
TEST(NeighborEdge, ZeroCountsNullBuffers) {
  const std::vector<std::string> specs = edge_specs(4, 2.0, 3, 1);
  TopoPtr t = make_topology(Kind::GraphMulti);
  if (!t->member()) return;
  const int deg = std::max(t->indegree(), t->outdegree()) + 1;
  std::vector<int> zeros(static_cast<std::size_t>(deg), 0);
  int dummy = 42;
  for (const std::string& spec : specs) {
    SCOPED_TRACE("algorithm '" + spec + "'");
    MPI_Info info = algorithm_info(spec);
    MPIX_Request req = MPIX_REQUEST_NULL;
    int rc = MPIX_Neighbor_alltoallv_init(nullptr, zeros.data(), zeros.data(), MPI_INT, &dummy,
                                          zeros.data(), zeros.data(), MPI_INT, t->comm, info, &req);
    EXPECT_EQ(rc, MPI_SUCCESS) << error_string(rc);
    if (rc == MPI_SUCCESS) {
      for (int i = 0; i < 2; ++i) complete(&req, i, "cycle " + std::to_string(i));
      EXPECT_EQ(MPIX_Request_free(&req), MPI_SUCCESS);
    }
    rc = MPIX_Neighbor_alltoall_init(&dummy, 0, MPI_INT, nullptr, 0, MPI_INT, t->comm, info, &req);
    EXPECT_EQ(rc, MPI_SUCCESS) << error_string(rc);
    if (rc == MPI_SUCCESS) {
      complete(&req, 0, "cycle");
      EXPECT_EQ(MPIX_Request_free(&req), MPI_SUCCESS);
    }
    if (info != MPI_INFO_NULL) MPI_Info_free(&info);
    ScopedCommAlgorithm sel(t->comm, kCollective, spec);
    rc = MPIX_Neighbor_alltoallv(&dummy, zeros.data(), zeros.data(), MPI_INT, nullptr, zeros.data(),
                                 zeros.data(), MPI_INT, t->comm);
    EXPECT_EQ(rc, MPI_SUCCESS) << error_string(rc);
    rc = MPIX_Neighbor_alltoall(nullptr, 0, MPI_INT, &dummy, 0, MPI_INT, t->comm);
    EXPECT_EQ(rc, MPI_SUCCESS) << error_string(rc);
    EXPECT_EQ(dummy, 42);
  }
}

// The user's datatypes may be freed right after init (the request keeps what it needs).
TEST(NeighborEdge, TypesFreedAfterInit) {
  const std::vector<std::string> specs = edge_specs(2, 2.0, 4, 1);
  TopoPtr t = make_topology(Kind::Cart2x2xK);
  if (!t->member()) return;
  for (const std::string& spec : specs) {
    if (!runnable(*t, spec)) continue;
    SCOPED_TRACE("algorithm '" + spec + "'");
    const Config c{&kTypes[kVecToInt], Pattern::Directional, Displ::ReverseGaps,
                   Displ::ShuffledGaps, false};
    Buffers b;
    make_buffers(*t, c, &b);
    MPI_Datatype st, rt;
    MPI_Type_dup(b.slay.type(), &st);
    MPI_Type_dup(b.rlay.type(), &rt);
    MPI_Info info = algorithm_info(spec);
    MPIX_Request req = MPIX_REQUEST_NULL;
    const int rc = MPIX_Neighbor_alltoallv_init(b.sbuf->ptr(), b.sbuf->counts(), b.sbuf->displs(),
                                                st, b.rbuf->ptr(), b.rbuf->counts(),
                                                b.rbuf->displs(), rt, t->comm, info, &req);
    if (info != MPI_INFO_NULL) MPI_Info_free(&info);
    MPI_Type_free(&st);
    MPI_Type_free(&rt);
    ASSERT_EQ(rc, MPI_SUCCESS) << error_string(rc);
    for (int i = 0; i < 5; ++i) {
      b.sbuf->fill(t->me, 300 + i);
      b.rbuf->poison(0x77);
      complete(&req, i, "cycle " + std::to_string(i));
      b.rbuf->check(t->me, t->from, 300 + i, "cycle " + std::to_string(i));
    }
    EXPECT_EQ(MPIX_Request_free(&req), MPI_SUCCESS);
  }
}

// The same for the w form, on an irregular graph: every block's datatype a duplicate, freed
// right after init (and the type arrays with them).
TEST(NeighborEdge, TypesFreedAfterInitW) {
  const std::vector<std::string> specs = edge_specs(2, 2.0, 5, 1);
  TopoPtr t = make_topology(Kind::SpmvRandom);
  if (!t->member()) return;
  const Config c{nullptr, Pattern::Varied, Displ::ShuffledGaps, Displ::ReverseGaps, false, true, 2};
  for (const std::string& spec : specs) {
    if (!runnable_w(*t, spec)) continue;
    SCOPED_TRACE("algorithm '" + spec + "'");
    Buffers b;
    make_buffers(*t, c, &b);
    std::vector<MPI_Datatype> st(static_cast<std::size_t>(t->outdegree()) + 1, MPI_INT);
    std::vector<MPI_Datatype> rt(static_cast<std::size_t>(t->indegree()) + 1, MPI_INT);
    for (int j = 0; j < t->outdegree(); ++j)
      MPI_Type_dup(b.sbuf->types()[j], &st[static_cast<std::size_t>(j)]);
    for (int i = 0; i < t->indegree(); ++i)
      MPI_Type_dup(b.rbuf->types()[i], &rt[static_cast<std::size_t>(i)]);
    MPI_Info info = algorithm_info(spec);
    MPIX_Request req = MPIX_REQUEST_NULL;
    const int rc = MPIX_Neighbor_alltoallw_init(
        b.sbuf->ptr(), b.sbuf->counts(), b.sbuf->byte_displs(), st.data(), b.rbuf->ptr(),
        b.rbuf->counts(), b.rbuf->byte_displs(), rt.data(), t->comm, info, &req);
    if (info != MPI_INFO_NULL) MPI_Info_free(&info);
    for (int j = 0; j < t->outdegree(); ++j) MPI_Type_free(&st[static_cast<std::size_t>(j)]);
    for (int i = 0; i < t->indegree(); ++i) MPI_Type_free(&rt[static_cast<std::size_t>(i)]);
    ASSERT_EQ(rc, MPI_SUCCESS) << error_string(rc);
    for (int i = 0; i < 3; ++i) {
      b.sbuf->fill(t->me, 400 + i);
      b.rbuf->poison(0x78);
      complete(&req, i, "cycle " + std::to_string(i));
      b.rbuf->check(t->me, t->from, 400 + i, "cycle " + std::to_string(i));
    }
    EXPECT_EQ(MPIX_Request_free(&req), MPI_SUCCESS);
  }
}

// ------------------------------------------------------------------------------------------
// A real halo exchange: y = A x for distributed sparse matrices, x changing between starts,
// checked against y computed here from the whole matrix.
// ------------------------------------------------------------------------------------------
TEST(NeighborSpMV, HaloExchangeProducts) {
  const int P = comm_size(MPI_COMM_WORLD), me = comm_rank(MPI_COMM_WORLD);
  long rotate = 0;
  const bool slow = sample_stride(45, 3.0) > 1;
  for (const char* kind : {"laplace2d", "random", "laplace1d"}) {
    if (slow && std::strcmp(kind, "laplace1d") == 0) break;
    const std::vector<std::string> specs = edge_specs(3, 2.0, rotate++, 1);
    const SpMV m = make_spmv(kind, P);
    TopoPtr t = make_spmv_topo(MPI_COMM_WORLD, m);
    const int lo = m.lo[static_cast<std::size_t>(me)], hi = m.lo[static_cast<std::size_t>(me) + 1];
    // Send block j: x at the columns dst j needs from me; receive block i: what I need from src i.
    std::vector<int> sc, sd, rc, rd;
    std::vector<int> send_cols, recv_cols;
    for (int d : t->my_dst()) {
      const auto& cols = m.needs[static_cast<std::size_t>(d)].at(me);
      sd.push_back(static_cast<int>(send_cols.size()));
      sc.push_back(static_cast<int>(cols.size()));
      send_cols.insert(send_cols.end(), cols.begin(), cols.end());
    }
    for (int s : t->my_src()) {
      const auto& cols = m.needs[static_cast<std::size_t>(me)].at(s);
      rd.push_back(static_cast<int>(recv_cols.size()));
      rc.push_back(static_cast<int>(cols.size()));
      recv_cols.insert(recv_cols.end(), cols.begin(), cols.end());
    }
    sc.push_back(0);
    sd.push_back(0);
    rc.push_back(0);
    rd.push_back(0);
    std::vector<double> sendv(send_cols.size() + 1), halo(recv_cols.size() + 1);
    std::map<int, std::size_t> halo_at;
    for (std::size_t i = 0; i < recv_cols.size(); ++i) halo_at[recv_cols[i]] = i;
    auto xval = [](int c, int it) { return static_cast<double>((c * 37 + it * 11) % 101) - 50.0; };
    for (const std::string& spec : specs) {
      SCOPED_TRACE(std::string("spmv ") + kind + ", algorithm '" + spec + "'");
      MPI_Info info = algorithm_info(spec);
      MPIX_Request req = MPIX_REQUEST_NULL;
      const int rcode =
          MPIX_Neighbor_alltoallv_init(sendv.data(), sc.data(), sd.data(), MPI_DOUBLE, halo.data(),
                                       rc.data(), rd.data(), MPI_DOUBLE, t->comm, info, &req);
      if (info != MPI_INFO_NULL) MPI_Info_free(&info);
      ASSERT_EQ(rcode, MPI_SUCCESS) << error_string(rcode);
      for (int it = 0; it < 5; ++it) {
        for (std::size_t i = 0; i < send_cols.size(); ++i) sendv[i] = xval(send_cols[i], it);
        std::fill(halo.begin(), halo.end(), 1e300);
        complete(&req, it, "product " + std::to_string(it));
        long bad = 0;
        for (int row = lo; row < hi; ++row) {
          double y = 0.0, want = 0.0;
          const auto& cols = m.cols[static_cast<std::size_t>(row)];
          const auto& vals = m.vals[static_cast<std::size_t>(row)];
          for (std::size_t k = 0; k < cols.size(); ++k) {
            const int c = cols[k];
            const double x = (c >= lo && c < hi) ? xval(c, it) : halo[halo_at.at(c)];
            y += vals[k] * x;
            want += vals[k] * xval(c, it);
          }
          if (y != want) {
            if (bad++ < 3)
              ADD_FAILURE() << "product " << it << " row " << row << ": " << y << " != " << want;
          }
        }
        EXPECT_EQ(bad, 0) << "rank " << me << " product " << it;
      }
      EXPECT_EQ(MPIX_Request_free(&req), MPI_SUCCESS);
    }
  }
}

// ------------------------------------------------------------------------------------------
// Traffic: MPIX_Request_get_traffic per algorithm; node-aware combining never sends more
// inter-node messages than direct, and strictly fewer for a 2D stencil at 16 ranks with 4
// ranks per node (several edges cross each node pair).
// ------------------------------------------------------------------------------------------
int env_ppn() {
  const char* loc = std::getenv("MPIX_LOCALITY");
  if (!loc || std::strncmp(loc, "ppn:", 4) != 0) return 0;
  if (std::strchr(loc, ',')) return 0;  // roundrobin
  return std::atoi(loc + 4);
}

struct Traffic {
  MPI_Count messages = -2, bytes = -2, inter_messages = -2, inter_bytes = -2;
};

Traffic traffic_of(const Topo& t, const std::string& spec, const Config& c, bool* ok) {
  Traffic tr;
  Buffers b;
  make_buffers(t, c, &b);
  MPI_Info info = algorithm_info(spec);
  MPIX_Request req = MPIX_REQUEST_NULL;
  int rc = init_call(b, c, t, info, &req);
  if (info != MPI_INFO_NULL) MPI_Info_free(&info);
  EXPECT_EQ(rc, MPI_SUCCESS) << spec << " init: " << error_string(rc);
  *ok = rc == MPI_SUCCESS;
  if (rc != MPI_SUCCESS) return tr;
  rc = MPIX_Request_get_traffic(req, &tr.messages, &tr.bytes, &tr.inter_messages, &tr.inter_bytes);
  EXPECT_EQ(rc, MPI_SUCCESS) << spec << " MPIX_Request_get_traffic: " << error_string(rc);
  b.sbuf->fill(t.me, 77);
  complete(&req, 0, spec + " cycle");
  b.rbuf->check(t.me, t.from, 77, spec + " receive buffer");
  EXPECT_EQ(MPIX_Request_free(&req), MPI_SUCCESS);
  return tr;
}

long long sum_over(MPI_Comm comm, MPI_Count v) {
  long long in = static_cast<long long>(v), out = 0;
  MPI_Allreduce(&in, &out, 1, MPI_LONG_LONG, MPI_SUM, comm);
  return out;
}

TEST(NeighborTraffic, LocalityCombinesInterNodeMessages) {
  const int P = comm_size(MPI_COMM_WORLD);
  const int ppn = env_ppn();
  const Config c{&kTypes[kInt], Pattern::Uniform, Displ::Ascending, Displ::Ascending, false};
  const bool slow = sample_stride(12, 3.0) > 1;
  for (Kind kind : {Kind::Cart1dPeriodic, Kind::Cart2dPeriodic, Kind::SpmvLaplace2d}) {
    if (slow && kind != Kind::Cart2dPeriodic && ppn == 0) continue;
    // Without MPIX_Comm_locality before init the node counts may be unknown (-1): the
    // library computes the locality in every persistent init, so in fact they are known.
    {
      TopoPtr fresh = make_topology(kind);
      bool ok = false;
      const Traffic d = traffic_of(*fresh, "direct", c, &ok);
      if (ok) {
        EXPECT_GE(d.inter_messages, -1) << fresh->name;
        EXPECT_EQ(d.inter_messages == -1, d.inter_bytes == -1) << fresh->name;
        EXPECT_GE(d.messages, 0) << fresh->name;
        EXPECT_GE(d.bytes, 0) << fresh->name;
      }
      if (std::find(registry_n().begin(), registry_n().end(), "system") != registry_n().end() &&
          !fresh->degenerate) {
        const Traffic s = traffic_of(*fresh, "system", c, &ok);
        if (ok) {
          EXPECT_EQ(s.messages, -1) << "system does not know its traffic";
          EXPECT_EQ(s.bytes, -1);
          EXPECT_EQ(s.inter_messages, -1);
          EXPECT_EQ(s.inter_bytes, -1);
        }
      }
    }
    TopoPtr t = make_topology(kind);
    SCOPED_TRACE(t->name + (ppn ? ", MPIX_LOCALITY=ppn:" + std::to_string(ppn) : std::string()));
    int node = -1, nnodes = -1, lrank = -1, lsize = -1;
    int rc = MPIX_Comm_locality(t->comm, &node, &nnodes, &lrank, &lsize);
    ASSERT_EQ(rc, MPI_SUCCESS) << "MPIX_Comm_locality: " << error_string(rc);
    // The node of every rank (from the emulation when there is one, else from the library).
    std::vector<int> node_of(static_cast<std::size_t>(t->size));
    for (int r = 0; r < t->size; ++r) {
      int nd = -1, lr = -1;
      rc = MPIX_Comm_rank_locality(t->comm, r, &nd, &lr, nullptr, nullptr);
      EXPECT_EQ(rc, MPI_SUCCESS);
      node_of[static_cast<std::size_t>(r)] = nd;
      if (ppn > 0) {
        // Nodes are numbered by their lowest rank in comm.
        std::map<int, int> number;
        for (int q = 0; q < t->size; ++q) {
          const int wn = t->world_of[static_cast<std::size_t>(q)] / ppn;
          if (!number.count(wn)) number[wn] = static_cast<int>(number.size());
        }
        EXPECT_EQ(nd, number[t->world_of[static_cast<std::size_t>(r)] / ppn])
            << "node of rank " << r;
      }
    }
    // Direct: one message per edge with data; its inter-node part is exactly the edges to
    // ranks on other nodes.
    long long edge_msgs = 0, edge_bytes = 0, self_msgs = 0, self_bytes = 0, all_msgs = 0,
              all_bytes = 0;
    for (int j = 0; j < t->outdegree(); ++j) {
      const int d = t->my_dst()[static_cast<std::size_t>(j)];
      if (d == MPI_PROC_NULL) continue;
      const long long bytes = 2LL * static_cast<long long>(sizeof(int));
      ++all_msgs;
      all_bytes += bytes;
      if (d == t->me) {
        ++self_msgs;
        self_bytes += bytes;
      }
      if (node_of[static_cast<std::size_t>(d)] != node) {
        ++edge_msgs;
        edge_bytes += bytes;
      }
    }
    bool ok_d = false, ok_l = false;
    const Traffic d = traffic_of(*t, "direct", c, &ok_d);
    const Traffic l = traffic_of(*t, "locality", c, &ok_l);
    ASSERT_TRUE(ok_d && ok_l);
    EXPECT_EQ(d.inter_messages, edge_msgs) << "direct: inter-node messages of rank " << t->me;
    EXPECT_EQ(d.inter_bytes, edge_bytes) << "direct: inter-node bytes of rank " << t->me;
    EXPECT_GE(d.messages, all_msgs - self_msgs) << "direct: messages";
    EXPECT_LE(d.messages, all_msgs) << "direct: messages";
    EXPECT_GE(d.bytes, all_bytes - self_bytes) << "direct: bytes";
    EXPECT_LE(d.bytes, all_bytes) << "direct: bytes";
    EXPECT_GE(l.inter_messages, 0) << "locality must know its inter-node traffic";
    EXPECT_LE(l.inter_messages, l.messages);
    EXPECT_LE(l.inter_bytes, l.bytes);
    const long long dsum = sum_over(t->comm, d.inter_messages);
    const long long lsum = sum_over(t->comm, l.inter_messages);
    const long long dbytes = sum_over(t->comm, d.inter_bytes);
    const long long lbytes = sum_over(t->comm, l.inter_bytes);
    EXPECT_LE(lsum, dsum) << "inter-node messages summed over ranks: locality " << lsum
                          << ", direct " << dsum;
    // Every byte that crosses nodes with direct crosses them once with locality too.
    EXPECT_GE(lbytes, dbytes) << "locality must still carry every inter-node byte";
    if (kind == Kind::Cart2dPeriodic && P == 16 && ppn == 4) {
      EXPECT_LT(lsum, dsum) << "4x4 periodic stencil on 4 nodes of 4: 8 edges per node pair";
    }
    // locality_partial lies between them: at min_edges 1 and rank_edges 0 it is locality on
    // every rank, at threshold 0 every off-node edge goes straight (one message per off-node
    // destination, duplicate edges sharing it), at its defaults some node pairs each way.
    std::set<int> off_node;
    for (int d : t->my_dst())
      if (d != MPI_PROC_NULL && node_of[static_cast<std::size_t>(d)] != node) off_node.insert(d);
    for (const char* spec : {"locality_partial", "locality_partial:min_edges=1,rank_edges=0",
                             "locality_partial:threshold=0"}) {
      bool ok_p = false;
      const Traffic p = traffic_of(*t, spec, c, &ok_p);
      ASSERT_TRUE(ok_p) << spec;
      const long long psum = sum_over(t->comm, p.inter_messages);
      EXPECT_LE(lsum, psum) << spec;
      EXPECT_LE(psum, dsum) << spec;
      EXPECT_GE(sum_over(t->comm, p.inter_bytes), dbytes) << spec;
      if (std::string(spec) == "locality_partial:min_edges=1,rank_edges=0") {
        EXPECT_EQ(p.inter_messages, l.inter_messages) << spec << " on rank " << t->me;
        EXPECT_EQ(p.messages, l.messages) << spec << " on rank " << t->me;
      }
      if (std::string(spec) == "locality_partial:threshold=0") {
        EXPECT_EQ(p.inter_messages, static_cast<MPI_Count>(off_node.size()))
            << spec << " on rank " << t->me;
      }
    }
    if (comm_rank(t->comm) == 0) {
      std::printf(
          "[   MPI    ] %s: inter-node messages direct %lld, locality %lld; bytes %lld, %lld\n",
          t->name.c_str(), dsum, lsum, dbytes, lbytes);
    }
  }
}

#ifdef MPIA_NEIGHBOR_VIA_TOPO
// ------------------------------------------------------------------------------------------
// MPIX_Topo's own rules.
// ------------------------------------------------------------------------------------------
// code's class is want on this rank, and the same on every rank of comm.
void expect_class_everywhere(MPI_Comm comm, int code, int want, const std::string& what) {
  const int cls = error_class(code);
  EXPECT_EQ(cls, want) << what << ": " << error_string(code);
  int lo = 0, hi = 0;
  MPI_Allreduce(&cls, &lo, 1, MPI_INT, MPI_MIN, comm);
  MPI_Allreduce(&cls, &hi, 1, MPI_INT, MPI_MAX, comm);
  EXPECT_EQ(lo, hi) << what << ": the ranks fail with different classes";
}

// A ring: this rank receives from me-1 and sends to me+1 (step -1: the other way round).
struct Ring {
  std::vector<int> src, dst;
  Ring(int me, int P, int step) : src{(me - step + 2 * P) % P}, dst{(me + step + 2 * P) % P} {}
};

TEST(NeighborTopo, CreateErrorsOnEveryRank) {
  MPI_Comm world = MPI_COMM_WORLD;
  const int P = comm_size(world), me = comm_rank(world);
  ScopedErrhandler eh(world, MPI_ERRORS_RETURN);
  struct Case {
    const char* what;
    int want;
    std::function<void(std::vector<int>& src, std::vector<int>& dst, int& indeg, bool& null_src,
                       std::string& info, bool& null_topo)>
        edit;
  };
  const int last = P - 1;
  const std::vector<Case> cases = {
      {"negative indegree on rank 0", MPI_ERR_ARG,
       [&](auto&, auto&, int& indeg, bool&, auto&, bool&) {
         if (me == 0) indeg = -1;
       }},
      {"a destination out of range on the last rank", MPI_ERR_ARG,
       [&](auto&, auto& dst, int&, bool&, auto&, bool&) {
         if (me == last) dst[0] = P;
       }},
      {"MPI_PROC_NULL as a source on the last rank", MPI_ERR_ARG,
       [&](auto& src, auto&, int&, bool&, auto&, bool&) {
         if (me == last) src[0] = MPI_PROC_NULL;
       }},
      {"NULL sources with indegree 1 on rank 0", MPI_ERR_ARG,
       [&](auto&, auto&, int&, bool& null_src, auto&, bool&) { null_src = me == 0; }},
      {"an edge its destination does not list (rank 0 to itself)", MPI_ERR_ARG,
       [&](auto&, auto& dst, int&, bool&, auto&, bool&) {
         if (me == 0) dst.push_back(0);
       }},
      {"a source that does not send (the last rank from itself)", MPI_ERR_ARG,
       [&](auto& src, auto&, int&, bool&, auto&, bool&) {
         if (me == last) src.push_back(last);
       }},
      {"an unknown algorithm in info", MPI_ERR_INFO_VALUE,
       [&](auto&, auto&, int&, bool&, std::string& info, bool&) { info = "no_such_algorithm"; }},
      {"different algorithms in info", MPI_ERR_ARG,
       [&](auto&, auto&, int&, bool&, std::string& info, bool&) {
         info = me == 0 ? "direct" : "locality";
       }},
      {"topo pointer NULL on the last rank", MPI_ERR_ARG,
       [&](auto&, auto&, int&, bool&, auto&, bool& null_topo) { null_topo = me == last; }},
  };
  for (const Case& c : cases) {
    if (P == 1 && std::string(c.what) == "different algorithms in info") continue;
    Ring r(me, P, 1);
    int indeg = 1;
    bool null_src = false, null_topo = false;
    std::string text;
    c.edit(r.src, r.dst, indeg, null_src, text, null_topo);
    if (indeg >= 0 && indeg != static_cast<int>(r.src.size()))
      indeg = static_cast<int>(r.src.size());
    MPI_Info info = algorithm_info(text);
    MPIX_Topo x = MPIX_TOPO_NULL;
    const int code = MPIX_Topo_create(world, indeg, null_src ? nullptr : r.src.data(),
                                      static_cast<int>(r.dst.size()), r.dst.data(), info,
                                      null_topo ? nullptr : &x);
    if (info != MPI_INFO_NULL) MPI_Info_free(&info);
    expect_class_everywhere(world, code, c.want, c.what);
    EXPECT_EQ(x, MPIX_TOPO_NULL) << c.what;
    if (x != MPIX_TOPO_NULL) MPIX_Topo_free(&x);
  }
  // The handle's own errors are raised on MPI_COMM_SELF.
  ScopedErrhandler self(MPI_COMM_SELF, MPI_ERRORS_RETURN);
  EXPECT_EQ(error_class(MPIX_Topo_free(nullptr)), MPI_ERR_ARG);
  MPIX_Topo none = MPIX_TOPO_NULL;
  EXPECT_EQ(MPIX_Topo_free(&none), MPI_SUCCESS) << "freeing MPIX_TOPO_NULL is a no-op";
  int sbuf = 0, rbuf = 0, one = 1, zero = 0;
  EXPECT_EQ(error_class(MPIX_Neighbor_alltoallv_topo(&sbuf, &one, &zero, MPI_INT, &rbuf, &one,
                                                     &zero, MPI_INT, MPIX_TOPO_NULL)),
            MPI_ERR_TOPOLOGY);
  MPIX_Request req = MPIX_REQUEST_NULL;
  EXPECT_EQ(
      error_class(MPIX_Neighbor_alltoallv_topo_init(&sbuf, &one, &zero, MPI_INT, &rbuf, &one, &zero,
                                                    MPI_INT, MPIX_TOPO_NULL, MPI_INFO_NULL, &req)),
      MPI_ERR_TOPOLOGY);
  EXPECT_EQ(req, MPIX_REQUEST_NULL);
}

// Argument errors of the calls on a valid object: agreed like the communicator's.
TEST(NeighborTopo, CallErrorsOnEveryRank) {
  MPI_Comm world = MPI_COMM_WORLD;
  const int P = comm_size(world), me = comm_rank(world);
  ScopedErrhandler eh(world, MPI_ERRORS_RETURN);
  const Ring r(me, P, 1);
  MPIX_Topo x = MPIX_TOPO_NULL;
  ASSERT_EQ(MPIX_Topo_create(world, 1, r.src.data(), 1, r.dst.data(), MPI_INFO_NULL, &x),
            MPI_SUCCESS);
  int sbuf[4] = {1, 2, 3, 4}, rbuf[4] = {0, 0, 0, 0}, zero = 0;
  const int two = 2;
  // The receiver of rank 0's edge expects 1 int where rank 0 sends 2.
  const int recvs = me == (1 % P) ? 1 : 2;
  MPIX_Request req = MPIX_REQUEST_NULL;
  int code = MPIX_Neighbor_alltoallv_topo_init(sbuf, &two, &zero, MPI_INT, rbuf, &recvs, &zero,
                                               MPI_INT, x, MPI_INFO_NULL, &req);
  expect_class_everywhere(world, code, MPI_ERR_TRUNCATE, "an edge's sizes differ");
  EXPECT_EQ(req, MPIX_REQUEST_NULL);
  code = MPIX_Neighbor_alltoallv_topo_init(sbuf, &two, &zero, me == 0 ? MPI_DATATYPE_NULL : MPI_INT,
                                           rbuf, &two, &zero, MPI_INT, x, MPI_INFO_NULL, &req);
  expect_class_everywhere(world, code, MPI_ERR_TYPE, "MPI_DATATYPE_NULL on rank 0");
  EXPECT_EQ(req, MPIX_REQUEST_NULL);
  MPI_Info info = algorithm_info("no_such_algorithm");
  code = MPIX_Neighbor_alltoallv_topo_init(sbuf, &two, &zero, MPI_INT, rbuf, &two, &zero, MPI_INT,
                                           x, info, &req);
  MPI_Info_free(&info);
  expect_class_everywhere(world, code, MPI_ERR_INFO_VALUE, "an unknown algorithm");
  code = MPIX_Neighbor_alltoallv_topo(MPI_IN_PLACE, &two, &zero, MPI_INT, rbuf, &two, &zero,
                                      MPI_INT, x);
  expect_class_everywhere(world, code, MPI_ERR_BUFFER, "MPI_IN_PLACE");
  // The object still works after the errors.
  code = MPIX_Neighbor_alltoallv_topo(sbuf, &two, &zero, MPI_INT, rbuf, &two, &zero, MPI_INT, x);
  EXPECT_EQ(code, MPI_SUCCESS) << error_string(code);
  EXPECT_EQ(rbuf[0], 1);
  EXPECT_EQ(rbuf[1], 2);
  EXPECT_EQ(MPIX_Topo_free(&x), MPI_SUCCESS);
}

// Requests keep what they run on: the object is freed while they are active, and again while
// they are inactive (other requests), and they run on, every start checked.
TEST(NeighborTopo, FreedWhileRequestsRun) {
  TopoPtr t = make_topology(Kind::DistAdjRandom);
  const Config c{&kTypes[kVecToInt], Pattern::Varied, Displ::ShuffledGaps, Displ::ReverseGaps,
                 false};
  std::vector<std::string> specs;
  for (const std::string& spec : specs_to_run())
    if (runnable(*t, spec)) specs.push_back(spec);
  MPIX_Topo x = make_xtopo(*t, "");
  std::vector<std::unique_ptr<Buffers>> bufs;
  std::vector<MPIX_Request> reqs;
  for (const std::string& spec : specs) {
    bufs.emplace_back(new Buffers);
    make_buffers(*t, c, bufs.back().get());
    MPI_Info info = algorithm_info(spec);
    reqs.push_back(MPIX_REQUEST_NULL);
    EXPECT_EQ(init_call(*bufs.back(), c, *t, info, &reqs.back(), x), MPI_SUCCESS) << spec;
    if (info != MPI_INFO_NULL) MPI_Info_free(&info);
  }
  for (int cycle = 0; cycle < 3; ++cycle) {
    for (std::size_t i = 0; i < reqs.size(); ++i) {
      bufs[i]->sbuf->fill(t->me, 300 + cycle * 10 + static_cast<int>(i));
      bufs[i]->rbuf->poison(0x22);
      EXPECT_EQ(MPIX_Start(&reqs[i]), MPI_SUCCESS);
    }
    if (cycle == 0) {
      EXPECT_EQ(MPIX_Topo_free(&x), MPI_SUCCESS) << "freed while its requests are active";
      EXPECT_EQ(x, MPIX_TOPO_NULL);
    }
    for (std::size_t i = reqs.size(); i-- > 0;) {
      EXPECT_EQ(MPIX_Wait(&reqs[i], MPI_STATUS_IGNORE), MPI_SUCCESS);
      bufs[i]->rbuf->check(t->me, t->from, 300 + cycle * 10 + static_cast<int>(i),
                           "cycle " + std::to_string(cycle) + ", algorithm '" + specs[i] + "'");
    }
  }
  for (std::size_t i = 0; i < reqs.size(); ++i) {
    char name[MPIX_MAX_ALGORITHM_STRING];
    int len = 0;
    EXPECT_EQ(MPIX_Request_get_algorithm(reqs[i], name, &len), MPI_SUCCESS);
    EXPECT_EQ(MPIX_Request_free(&reqs[i]), MPI_SUCCESS);
  }
}

int g_self_errors = 0, g_self_class = MPI_SUCCESS;
void count_self_errors(MPI_Comm*, int* code, ...) {
  ++g_self_errors;
  g_self_class = error_class(*code);
}

// The object keeps a duplicate of its communicator: the user may free that first. Errors are
// raised on the communicator while it lives, then on MPI_COMM_SELF.
TEST(NeighborTopo, OutlivesItsCommunicator) {
  const int P = comm_size(MPI_COMM_WORLD), me = comm_rank(MPI_COMM_WORLD);
  MPI_Comm d;
  MPI_Comm_dup(MPI_COMM_WORLD, &d);
  MPI_Comm_set_errhandler(d, MPI_ERRORS_RETURN);
  const Ring r(me, P, 1);
  MPIX_Topo x = MPIX_TOPO_NULL;
  ASSERT_EQ(MPIX_Topo_create(d, 1, r.src.data(), 1, r.dst.data(), MPI_INFO_NULL, &x), MPI_SUCCESS);
  int sbuf[3], rbuf[3];
  const int three = 3, zero = 0;
  MPIX_Request req = MPIX_REQUEST_NULL;
  ASSERT_EQ(MPIX_Neighbor_alltoallv_topo_init(sbuf, &three, &zero, MPI_INT, rbuf, &three, &zero,
                                              MPI_INT, x, MPI_INFO_NULL, &req),
            MPI_SUCCESS);
  MPI_Comm_free(&d);
  MPI_Errhandler counting;
  MPI_Comm_create_errhandler(count_self_errors, &counting);
  ScopedErrhandler self(MPI_COMM_SELF, counting);
  for (int i = 0; i < 3; ++i) {
    for (int k = 0; k < 3; ++k) sbuf[k] = me * 100 + i * 10 + k;
    std::fill(rbuf, rbuf + 3, -1);
    if (i == 1) {
      EXPECT_EQ(MPIX_Start(&req), MPI_SUCCESS);
      EXPECT_EQ(MPIX_Wait(&req, MPI_STATUS_IGNORE), MPI_SUCCESS);
    } else {
      EXPECT_EQ(MPIX_Neighbor_alltoallv_topo(sbuf, &three, &zero, MPI_INT, rbuf, &three, &zero,
                                             MPI_INT, x),
                MPI_SUCCESS);
    }
    for (int k = 0; k < 3; ++k) EXPECT_EQ(rbuf[k], r.src[0] * 100 + i * 10 + k) << "call " << i;
  }
  EXPECT_EQ(g_self_errors, 0);
  // A blocking call's local argument error: raised on MPI_COMM_SELF now.
  const int code = MPIX_Neighbor_alltoallv_topo(sbuf, &three, &zero, MPI_DATATYPE_NULL, rbuf,
                                                &three, &zero, MPI_INT, x);
  EXPECT_EQ(error_class(code), MPI_ERR_TYPE);
  EXPECT_EQ(g_self_errors, 1) << "the error must be raised on MPI_COMM_SELF";
  EXPECT_EQ(g_self_class, MPI_ERR_TYPE);
  EXPECT_EQ(MPIX_Request_free(&req), MPI_SUCCESS);
  EXPECT_EQ(MPIX_Topo_free(&x), MPI_SUCCESS);
  MPI_Errhandler_free(&counting);
}

// Two objects on one communicator, called in turn with the very same arguments: each has its
// own plans (a plan of one must never run for the other).
TEST(NeighborTopo, SeveralObjectsOnOneCommunicator) {
  MPI_Comm world = MPI_COMM_WORLD;
  const int P = comm_size(world), me = comm_rank(world);
  const Ring fwd(me, P, 1), bwd(me, P, -1);
  for (const std::string& spec : specs_to_run()) {
    SCOPED_TRACE("algorithm '" + spec + "'");
    MPI_Info info = algorithm_info(spec);
    MPIX_Topo a = MPIX_TOPO_NULL, b = MPIX_TOPO_NULL;
    ASSERT_EQ(MPIX_Topo_create(world, 1, fwd.src.data(), 1, fwd.dst.data(), info, &a), MPI_SUCCESS);
    ASSERT_EQ(MPIX_Topo_create(world, 1, bwd.src.data(), 1, bwd.dst.data(), info, &b), MPI_SUCCESS);
    if (info != MPI_INFO_NULL) MPI_Info_free(&info);
    int sbuf[2], rbuf[2];
    const int two = 2, zero = 0;
    for (int i = 0; i < 6; ++i) {
      const bool first = i % 2 == 0;
      sbuf[0] = me * 1000 + i;
      sbuf[1] = -sbuf[0];
      rbuf[0] = rbuf[1] = 7;
      const int code = MPIX_Neighbor_alltoallv_topo(sbuf, &two, &zero, MPI_INT, rbuf, &two, &zero,
                                                    MPI_INT, first ? a : b);
      EXPECT_EQ(code, MPI_SUCCESS) << error_string(code);
      const int from = (first ? fwd : bwd).src[0];
      EXPECT_EQ(rbuf[0], from * 1000 + i) << "call " << i;
      EXPECT_EQ(rbuf[1], -(from * 1000 + i)) << "call " << i;
    }
    EXPECT_EQ(MPIX_Topo_free(&a), MPI_SUCCESS);
    EXPECT_EQ(MPIX_Topo_free(&b), MPI_SUCCESS);
  }
}

// What an object's inits run without the info key: its creation info, else the communicator's
// MPIX_Comm_set_algorithm choice at creation (kept when the communicator's changes later).
TEST(NeighborTopo, ReportsAndInheritsTheAlgorithm) {
  MPI_Comm world = MPI_COMM_WORLD;
  const int P = comm_size(world), me = comm_rank(world);
  const Ring r(me, P, 1);
  int sbuf = me, rbuf = -1;
  const int one = 1, zero = 0;
  auto reported = [&](MPIX_Topo x, const std::string& info_spec) {
    MPI_Info info = algorithm_info(info_spec);
    MPIX_Request req = MPIX_REQUEST_NULL;
    const int code = MPIX_Neighbor_alltoallv_topo_init(&sbuf, &one, &zero, MPI_INT, &rbuf, &one,
                                                       &zero, MPI_INT, x, info, &req);
    if (info != MPI_INFO_NULL) MPI_Info_free(&info);
    EXPECT_EQ(code, MPI_SUCCESS) << error_string(code);
    char name[MPIX_MAX_ALGORITHM_STRING] = "";
    int len = 0;
    MPIX_Request_get_algorithm(req, name, &len);
    rbuf = -1;
    MPIX_Start(&req);
    MPIX_Wait(&req, MPI_STATUS_IGNORE);
    EXPECT_EQ(rbuf, r.src[0]);
    MPIX_Request_free(&req);
    Spec sp;
    parse_spec(name, &sp);
    return sp.name;
  };
  MPI_Info info = algorithm_info("locality");
  MPIX_Topo x = MPIX_TOPO_NULL;
  ASSERT_EQ(MPIX_Topo_create(world, 1, r.src.data(), 1, r.dst.data(), info, &x), MPI_SUCCESS);
  MPI_Info_free(&info);
  EXPECT_EQ(reported(x, ""), "locality") << "the object's info";
  EXPECT_EQ(reported(x, "direct"), "direct") << "the init's info wins";
  EXPECT_EQ(MPIX_Topo_free(&x), MPI_SUCCESS);
  {
    ScopedCommAlgorithm sel(world, kCollective, "direct");
    ASSERT_EQ(MPIX_Topo_create(world, 1, r.src.data(), 1, r.dst.data(), MPI_INFO_NULL, &x),
              MPI_SUCCESS);
  }
  EXPECT_EQ(reported(x, ""), "direct") << "the communicator's choice at creation";
  EXPECT_EQ(MPIX_Topo_free(&x), MPI_SUCCESS);
  ASSERT_EQ(MPIX_Topo_create(world, 1, r.src.data(), 1, r.dst.data(), MPI_INFO_NULL, &x),
            MPI_SUCCESS);
  const std::string a = reported(x, "");
  EXPECT_NE(std::find(registry_n().begin(), registry_n().end(), a), registry_n().end()) << a;
  EXPECT_NE(a, "auto") << "auto reports what it chose";
  EXPECT_EQ(MPIX_Topo_free(&x), MPI_SUCCESS);
}
#endif  // MPIA_NEIGHBOR_VIA_TOPO

}  // namespace
