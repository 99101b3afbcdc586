// Neighbor alltoallv direct: one message per non-empty edge, all posted at once, matched per
// direction (Cartesian) or per edge order (graphs) (build_neighbor_direct, builders.cpp).
//   time ~ alpha + (off-node edges) o + the node's off-node bytes through its NIC
// The blocking auto call runs it without agreement: it needs no edge list.
// Restrictions: none. No parameters.
#include "collective/neighbor/builders.hpp"
#include "collective/record.hpp"

namespace mpia {

namespace {

using namespace detail;

Schedule direct(const NeighborShape& s, const ParamValues&) {
  return with(build_neighbor_direct(s), kRoundByRound, Lowering::Pack);
}

// Every off-node edge through the NIC, all in flight at once.
Terms cost(const Machine& m, const Stats& st, const ParamValues&) {
  Terms d;
  if (m.nnodes <= 1 || st.remote_edges == 0) return d;
  const double E = double(st.remote_edges), M = double(st.max_block);
  const double Q = double(m.ppn);
  d.cpu[kMsgInter] = d.cpu[kRecvInter] = E;
  d.c[kLatInter] = 1;
  d.wire[kBytesNic] = Q * E * M;
  d.c[kInflight] = inflight_beyond_one(Q, E);
  return d;
}
constexpr const char* kCost =
    "lat_inter + G(Q, E) g_inflight + max(E msg_inter, Q E B/bw_inter); 0 on one node or without "
    "off-node edges (edges within a node are not priced)";

}  // namespace

MPIA_ALGORITHMS(neighbor_direct) {
  return {record("direct", 100,
                 "one message per edge, all posted at once, matched per direction (Cartesian) or "
                 "per edge order (graphs)",
                 {MPIA_SEED_002 ": MPI_NEIGHBOR_ALLTOALLV's definition, a send to each "
                                "out-neighbour and a receive from each in-neighbour, all posted "
                                "at once",
                  kCost},
                 {}, direct, {cost, always, 10}, kBlockingAuto)};
}

}  // namespace mpia
