// The fixture library of the neighborhood all-to-all tests: see neighbor_fixtures.hpp.
#include "neighbor_fixtures.hpp"

#include <algorithm>
#include <cstdint>
#include <cstdio>
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

namespace mpia_test {
namespace neighbor {

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
// A guarded buffer of blocks (NBuffer).
// ------------------------------------------------------------------------------------------
// Every block of layout `lay`, displacements in its extents (the v form).
NBuffer::NBuffer(const Layout& lay, const std::vector<int>& counts, const std::vector<int>& displs,
                 const std::vector<char>& live, unsigned char sentinel)
    : counts_(counts), displs_(displs), sentinel_(sentinel) {
  std::vector<const Layout*> lays(counts.size(), &lay);
  std::vector<MPI_Aint> bytes;
  for (int d : displs) bytes.push_back(static_cast<MPI_Aint>(d) * lay.extent());
  build(lays, bytes, live);
}

// Block b of layout *lays[b] at byte displacement byte_displs[b] (the w form).
NBuffer::NBuffer(const std::vector<const Layout*>& lays, const std::vector<int>& counts,
                 const std::vector<MPI_Aint>& byte_displs, const std::vector<char>& live,
                 unsigned char sentinel)
    : counts_(counts), byte_displs_(byte_displs), sentinel_(sentinel) {
  for (const Layout* l : lays) types_.push_back(l->type());
  build(lays, byte_displs, live);
}

void NBuffer::build(const std::vector<const Layout*>& lays, const std::vector<MPI_Aint>& at,
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

void NBuffer::fill(int me, int iter) {
  for (const Slot& s : slots_)
    encode_value(s.kind, value_hash(me, s.block + kElemSalt, s.elem, iter), &storage_[s.pos]);
}

void NBuffer::poison(unsigned char p) {
  for (std::size_t i = 0; i < storage_.size(); ++i)
    if (covered_[i]) storage_[i] = p;
}

long NBuffer::check(int me, const std::vector<std::pair<int, int>>& from, int iter,
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
        ADD_FAILURE() << what << ": rank " << me << ", receive block " << s.block << " (from rank "
                      << f.first << ", its block " << f.second << "), element " << s.elem << " ("
                      << prim_name(s.kind) << "): expected " << format_value(s.kind, want)
                      << ", got " << format_value(s.kind, &storage_[s.pos])
                      << describe_origin(s, from, iter);
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

std::string NBuffer::describe_origin(const Slot& s, const std::vector<std::pair<int, int>>& from,
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

// ------------------------------------------------------------------------------------------
// Configurations and runners.
// ------------------------------------------------------------------------------------------
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
              MPIX_Topo x) {
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

int blocking_call(Buffers& b, const Config& c, const Topo& t, MPIX_Topo x) {
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
void run_persistent_via(bool via_topo, const Topo& t, const std::string& spec, const Config& c,
                        int key, int cycles) {
  if (!t.member()) return;
  SCOPED_TRACE(describe("persistent", spec, t, c));
  Buffers b;
  make_buffers(t, c, &b);
  MPIX_Topo x = via_topo ? make_xtopo(t, "") : MPIX_TOPO_NULL;
  MPI_Info info = algorithm_info(spec);
  MPIX_Request req = MPIX_REQUEST_NULL;
  int rc = init_call(b, c, t, info, &req, x);
  if (info != MPI_INFO_NULL) MPI_Info_free(&info);
  EXPECT_EQ(rc, MPI_SUCCESS) << "init: " << error_string(rc);
  if (via_topo) {
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
  if (via_topo) {
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

void run_blocking_via(bool via_topo, const Topo& t, const std::string& spec, const Config& c,
                      int key, int calls) {
  if (!t.member()) return;
  SCOPED_TRACE(describe("blocking", spec, t, c));
  Buffers b;
  make_buffers(t, c, &b);
  // Through MPIX_Topo: the object's algorithm from its info or inherited from the
  // communicator's setting at creation (alternating).
  const bool inherit = (key / 2) % 2 == 0;
  ScopedCommAlgorithm sel(t.comm, kCollective, via_topo && !inherit ? "" : spec);
  MPIX_Topo x = via_topo ? make_xtopo(t, inherit ? "" : spec) : MPIX_TOPO_NULL;
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
  if (via_topo) {
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
                   bool (*can)(const Topo&, const std::string&)) {
  const long n = static_cast<long>(specs.size());
  for (long k = 0; k < n; ++k) {
    const long i = (a + k) % n;
    if (can(t, specs[static_cast<std::size_t>(i)])) return i;
  }
  return -1;
}

}  // namespace neighbor
}  // namespace mpia_test
