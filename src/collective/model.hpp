// The cost model behind "auto": alpha-beta-gamma terms per candidate, using the round count K
// and block count D of the radix-r exchange (seed 003) and the direct exchanges' P-1 messages.
// Every input is a value all ranks agree on (P and the block's packed size), so every rank
// makes the same choice without communicating.
#pragma once

#include "collective/registry.hpp"

#include <cstdint>
#include <string_view>

namespace mpia {

struct CostModel {
  double alpha = 2.0e-6;         // seconds per dependent message round (latency)
  double alpha_overlap = 0.5e-6; // seconds per message when many are in flight at once
  double beta = 1.0e-10;         // seconds per byte on the wire
  double gamma = 5.0e-11;        // seconds per byte of local packing / copying
};

// The defaults, overridden by text of the form "alpha=..,alpha_overlap=..,beta=..,gamma=.." (the
// value of MPIX_COST_MODEL; unknown keys and bad values are reported on stderr and ignored).
CostModel parse_cost_model(std::string_view text);

double predicted_seconds(const CostModel& m, const Selection& s, int nranks,
                         std::int64_t block_bytes);

Selection choose_alltoall(const CostModel& m, int nranks, std::int64_t block_bytes);

// Alltoallv statistics, each the maximum over ranks (the slowest rank sets the pace).
struct AlltoallvStats {
  std::int64_t max_block = 0;     // largest block any rank sends
  std::int64_t rank_bytes = 0;    // most bytes one rank sends
  std::int64_t rank_messages = 0; // most non-empty blocks one rank sends
};
Selection choose_alltoallv(const CostModel& m, int nranks, const AlltoallvStats& stats);

}  // namespace mpia
