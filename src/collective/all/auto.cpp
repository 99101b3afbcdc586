// "auto": resolved before building, by the tuning file's rules, else the cost model's search
// over the other records' costs and candidates (collective/model.hpp), then, for persistent
// requests, a measured trial of its shortlist (collective/shortlist.hpp).
#include "collective/record.hpp"

namespace mpia {

MPIA_ALGORITHMS(all_auto) {
  using detail::record;
  return {
      record(Collective::Alltoall, "auto", 1000,
             "the tuning file's rule, else the cost model (collective/model.hpp) over every "
             "algorithm and parameter, tra2 included, from P, the node map and the block size",
             AlgorithmKind::Auto),
      record(Collective::Alltoallv, "auto", 1000,
             "cost model on agreed statistics (direct, bruck radix, locality); blocking: the "
             "same, from the agreed plan cache once a pattern repeats, else multipair_waitany",
             AlgorithmKind::Auto),
      record(Collective::NeighborAlltoallv, "auto", 1000,
             "persistent: cost model on agreed statistics (off-node edges, nodes they reach, "
             "largest message): locality, locality_partial or direct; blocking: the same, from "
             "the agreed plan cache once a pattern repeats, else direct",
             AlgorithmKind::Auto),
  };
}

}  // namespace mpia
