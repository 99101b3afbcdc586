// Neighborhood all-to-all schedule builders (no MPI calls; see schedule/schedule.hpp). Send
// block k is this rank's k-th out-edge (to destinations[k]), receive block j its j-th in-edge
// (from sources[j]), exactly MPI's buffer layout.
//
// Matching. Several edges may join the same two ranks (duplicate edges; Cartesian periodic
// dimensions of size 1 or 2, where both neighbors of a dimension are one rank). All messages
// of a plan use one tag, so MPI matches those of one pair in posting order: each side posts
// them sorted by a key that names the edge the same way on both ends. For graphs the key is
// the edge's rank among the edges to/from that peer (the k-th edge to x pairs with the k-th
// edge from me in x's list); for Cartesian topologies it is the direction of travel
// (2d: towards +1 in dimension d, 2d+1: towards -1), so that receive block 2d holds what the
// -1 neighbor sent in its block 2d+1 whatever the counts -- the standard's per-direction tags.
#pragma once

#include "collective/exchange.hpp"
#include "locality/node_map.hpp"
#include "schedule/schedule.hpp"

#include <mpi.h>

#include <cstdint>
#include <utility>
#include <vector>

namespace mpia {

struct NeighborShape {
  int rank = 0;
  std::vector<int> sources, destinations;            // MPI_PROC_NULL allowed (Cartesian borders)
  std::vector<int> recv_key, send_key;               // per block; see above
  std::vector<std::int64_t> recv_bytes, send_bytes;  // packed bytes per block
  // For algorithms that forward (needs_peer_sizes): the edges of the communicator that pass
  // through this rank (all of them will do too), sorted by (source, destination, key), with
  // their packed sizes; and the node map (needs_locality).
  struct Edge {
    int src = 0, dst = 0, key = 0;
    std::int64_t bytes = 0;
    bool operator<(const Edge& o) const {
      return src != o.src ? src < o.src : dst != o.dst ? dst < o.dst : key < o.key;
    }
  };
  std::vector<Edge> edges;
  const NodeMap* nodes = nullptr;
  // For build_neighbor_locality: the (from node, to node) pairs whose edges go straight from
  // source to destination instead of through the gateways, sorted; the same on every rank of
  // both nodes (locality_partial's init agrees on them). Empty: every pair aggregated.
  std::vector<std::pair<int, int>> direct_node_pairs;
  // For build_neighbor_locality: the round of the edges within a node -- 0, beside the hops to
  // the gateways, or 1, beside the messages between nodes (where none of this node's pairs is
  // aggregated, so that its ranks exchange in one round as direct does). The same on every rank
  // of a node.
  int intra_round = 0;
};

// One round: every non-empty edge's message, sends and receives each sorted by key.
Schedule build_neighbor_direct(const NeighborShape& shape);

// Node-aware: an edge within a node goes straight to its destination; an edge between nodes
// A and B goes (round 0) to A's gateway for B, (round 1) in the single message from that
// gateway to B's gateway for A, (round 2) to its destination. Gateways spread the node pairs
// over the ranks of each node (A's gateway for B: local rank B mod |A|). It uses the edges that
// pass through this rank: its own, and as a gateway those between its node and the nodes it
// is the gateway for -- all edges with every rank sharing a (source, destination) pair.
// The edges of a node pair in shape.direct_node_pairs skip the gateways: (round 1, beside the
// bundles) one message from source to destination, its edges to that destination in it. Edges
// within a node go in round shape.intra_round.
Schedule build_neighbor_locality(const NeighborShape& shape);

// Node-aware routing's init-time exchange (collective over the communicator, through channel
// only): sets shape.edges to the edges that pass through this rank -- its own out- and
// in-edges, and as its node's gateway towards node B those between its node and B, which the
// node's other ranks send it. Needs shape.nodes and the rank's own topology and sizes.
void learn_neighbor_node_edges(NeighborShape& shape, SizeChannel& channel);

// The rank of node on_node through which node-aware traffic to node towards_node passes.
int neighbor_gateway(const NodeMap& nodes, int on_node, int towards_node);
// Whether node-aware routing takes an edge from src to dst through rank me (as its source, its
// destination, or a gateway on the way): the edges build_neighbor_locality needs on rank me.
bool neighbor_edge_passes(const NodeMap& nodes, int me, int src, int dst);

}  // namespace mpia
