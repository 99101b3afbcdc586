#include "collective/shortlist.hpp"

#include <algorithm>
#include <cstring>

namespace mpia {

std::vector<Ranked> rank_alltoall(const CostModel& model, const Machine& m,
                                  std::int64_t block_bytes) {
  Stats st;
  st.max_block = block_bytes;
  return rank(Collective::Alltoall, model, m, st);
}

std::vector<Selection> shortlist(const std::vector<Ranked>& ranked, const ShortlistPolicy& policy) {
  std::vector<Selection> out;
  if (ranked.empty()) return out;
  const double limit = ranked[0].seconds * policy.margin;
  std::vector<bool> taken(ranked.size(), false);
  auto take = [&](std::size_t i) {
    out.push_back(ranked[i].selection);
    taken[i] = true;
  };
  take(0);
  // One per family first: the model's large errors are between algorithms, not between
  // radices or copying variants.
  for (std::size_t i = 1; i < ranked.size() && out.size() < policy.max; ++i) {
    if (ranked[i].seconds > limit) break;
    const bool seen = std::any_of(out.begin(), out.end(), [&](const Selection& s) {
      return std::strcmp(s.algorithm->family_name(),
                         ranked[i].selection.algorithm->family_name()) == 0;
    });
    if (!seen) take(i);
  }
  for (std::size_t i = 1; i < ranked.size() && out.size() < policy.max; ++i) {
    if (ranked[i].seconds > limit) break;
    if (!taken[i]) take(i);
  }
  return out;
}

}  // namespace mpia
