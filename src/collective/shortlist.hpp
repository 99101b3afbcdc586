// The model's ranking of auto's candidates, and the shortlist a measured trial runs
// (operation/trial.hpp).
//
// The model ranks every candidate; where its prediction is good, the best one wins by a wide
// margin and nothing needs measuring. Where it is not (a machine it was never fitted to: a
// receive overhead, a switch of its own, many messages in flight costing more than it says),
// the fastest candidate is usually still among the best few families. So a persistent request
// tries a shortlist: the model's pick first, then the best-ranked candidate of each other
// family (an algorithm, or algorithms that differ only in their copies: AlgorithmSpec::family)
// predicted within `margin` of the pick, then the next-best of the rest, at most `max` in all:
// the first round. The model also misplaces parameters within a family (issue 18: tra radix 8
// predicted, radix 4 measured 7 % faster on a machine it never saw), so each first-round entry
// comes with its refinements: up to `refine` of its parameter neighbours (one parameter halved
// or doubled, or a copying variant) not already on the list, the model's best-ranked first,
// which a trial runs after the first round for its winner and a close runner-up. The ranking is a
// pure function of agreed values (machine, block size or agreed statistics, agreed settings),
// so every rank builds the same shortlist.
#pragma once

#include "collective/model.hpp"

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace mpia {

struct ShortlistPolicy {
  double margin = 3.0;     // candidates predicted at most margin x the best
  std::size_t max = 4;     // first-round entries, the model's pick included
  std::size_t refine = 4;  // refinements per first-round entry
};

// entries[0] is the model's pick; refines[i] is -1 for a first-round entry, else the index of
// the first-round entry whose family entry i refines. First-round entries come first.
struct Shortlist {
  std::vector<Selection> entries;
  std::vector<int> refines;
  // agreement text: every entry, a refinement marked with its first-round entry's index
  std::string to_string() const;
};
// A shortlist of one entry: no trial.
Shortlist only(const Selection& s);

// Every alltoall candidate with its predicted time, best first (ties: the candidates' order).
std::vector<Ranked> rank_alltoall(const CostModel& model, const Machine& m,
                                  std::int64_t block_bytes);

// The shortlist of a ranking (best first); ranked[0] is always its first entry.
Shortlist shortlist(const std::vector<Ranked>& ranked, const ShortlistPolicy& policy = {});

}  // namespace mpia
