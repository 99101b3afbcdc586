#include "collective/shortlist.hpp"

#include <algorithm>
#include <cstring>

namespace mpia {

std::vector<Ranked> rank_alltoall(const CostModel& model, const Machine& m,
                                  std::int64_t block_bytes) {
  std::vector<Ranked> out;
  for (Selection& s : alltoall_candidates(m)) {
    const double t = predicted_seconds(model, s, m, block_bytes);
    out.push_back({std::move(s), t});
  }
  // The first is choose_alltoall's pick (near-ties go to the earlier candidate), the rest by
  // predicted time.
  std::size_t best = 0;
  for (std::size_t i = 1; i < out.size(); ++i)
    if (out[i].seconds < out[best].seconds * (1 - 1e-9)) best = i;
  if (!out.empty()) std::rotate(out.begin(), out.begin() + best, out.begin() + best + 1);
  std::stable_sort(out.begin() + (out.empty() ? 0 : 1), out.end(),
                   [](const Ranked& a, const Ranked& b) { return a.seconds < b.seconds; });
  return out;
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
