// Which node every rank of a communicator is on. Pure data: no MPI call, so the two-level
// builders and their simulator tests use it directly.
#pragma once

#include <cstdint>
#include <string_view>
#include <vector>

namespace mpia {

struct NodeMap {
  std::vector<int> node_of;   // per rank: node index, nodes numbered by their lowest rank
  std::vector<int> local_of;  // per rank: index among the ranks of its node, in rank order
  std::vector<std::vector<int>> members;  // per node: its ranks, ascending

  int size() const { return int(node_of.size()); }
  int nnodes() const { return int(members.size()); }
  int max_local() const;  // the most ranks on one node (0 for an empty map)
  bool uniform() const;   // every node holds the same number of ranks
};

// What a rank's non-empty sends reach off its node (the cost model's statistics): sends of
// bytes[i] bytes to rank dest[i] (negative: no rank, as MPI_PROC_NULL), or with dest null to
// rank i.
struct OffNode {
  std::int64_t sends = 0;  // non-empty sends to a rank on another node
  std::int64_t nodes = 0;  // the distinct other nodes they reach
};
OffNode off_node(const NodeMap& map, int rank, const std::vector<int>* dest,
                 const std::vector<std::int64_t>& bytes);

// From any per-rank node labels (equal label = same node): nodes renumbered 0.. in the order
// of their lowest rank.
NodeMap make_node_map(const std::vector<int>& labels);

// One node per rank / all ranks on one node: the maps of a communicator without locality.
NodeMap single_node_map(int nranks);

// The value of MPIX_LOCALITY for a world of world_size ranks, as a node label per world rank:
//   ppn:K            world ranks 0..K-1 on node 0, K..2K-1 on node 1, ...
//   ppn:K,roundrobin world rank r on node r mod ceil(world_size / K)
//   nodes:a,b,c,...  an explicit label per world rank (exactly world_size of them, >= 0)
// Anything else throws mpia::Error(MPI_ERR_ARG) saying what is wrong.
std::vector<int> parse_locality_spec(std::string_view text, int world_size);

}  // namespace mpia
