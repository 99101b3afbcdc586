// Neighbor alltoallv locality: node-aware routing (build_neighbor_locality, builders.cpp). An
// edge between nodes A and B goes to A's gateway for B, in one message per node pair to B's
// gateway for A, and on to its destination: fewer off-node messages for two intra-node hops.
//   time ~ 2 (min(E, Q - 1) o_intra + alpha_intra + n beta_intra)
//          + (nodes reached) (o + alpha_inter)
//          + the node's off-node bytes through its NIC + 4 E n copied
// At init a rank learns the edges that pass through it (learn_neighbor_node_edges).
// Restrictions: none (any topology, any placement). No parameters.
#include "collective/neighbor/builders.hpp"
#include "collective/neighbor/gateway_cost.hpp"
#include "collective/record.hpp"

namespace mpia {

namespace {

using namespace detail;

Schedule locality(const NeighborShape& s, const ParamValues&) {
  return with(build_neighbor_locality(s), kRoundByRound, Lowering::Pack);
}

// The edges node-aware routing sends through this rank (learn_neighbor_node_edges).
void learn(NeighborShape& shape, const ParamValues&, SizeChannel& channel) {
  learn_neighbor_node_edges(shape, channel);
}

// Gathers a node's off-node edges to one gateway per remote node (one intra-node hop), sends
// one message per node pair, and scatters on arrival (a second hop).
Terms cost(const Machine& m, const Stats& st, const ParamValues&) {
  return gateway_terms(m, st, double(st.remote_edges), double(st.remote_nodes), true);
}
constexpr const char* kCost =
    "2 min(E, Q-1) msg_intra + 2 lat_intra + 2 B/bw_intra + R msg_inter + lat_inter + G(Q, R) "
    "g_inflight + Q E B/bw_inter + 4 E B/bw_copy: a hop to the gateway and one from it within "
    "the nodes, one message per node pair between them, four copies of each edge";

// Only where some edge leaves its node.
std::vector<ParamValues> candidates(const Machine& m, const Stats& st) {
  if (m.nnodes <= 1 || st.remote_edges == 0) return {};
  return {ParamValues{}};
}

}  // namespace

MPIA_ALGORITHMS(neighbor_locality) {
  return {record("locality", 500,
                 "node-aware: edges between two nodes combined into one message between one "
                 "gateway rank on each; routing from the allgathered edge list at init",
                 {MPIA_REF_COLLOM " (its locality-aware aggregation; ideas only)", kCost}, {},
                 locality, learn, {cost, candidates, 20}, kNeedsLocality)};
}

}  // namespace mpia
