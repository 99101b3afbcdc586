#include "collective/shortlist.hpp"

#include <algorithm>
#include <array>
#include <cstring>

namespace mpia {

std::vector<Ranked> rank_alltoall(const CostModel& model, const Machine& m,
                                  std::int64_t block_bytes) {
  Stats st;
  st.max_block = block_bytes;
  return rank(Collective::Alltoall, model, m, st);
}

std::string Shortlist::to_string() const {
  std::string out;
  for (std::size_t i = 0; i < entries.size(); ++i)
    out += (refines[i] < 0 ? "" : std::to_string(refines[i]) + "~") + entries[i].to_string() + ";";
  return out;
}

Shortlist only(const Selection& s) { return Shortlist{{s}, {-1}}; }

namespace {

// The candidates one step from ranked[e], in the ranking's order: a copying variant (its
// family, another algorithm, the same values), or the same algorithm with one parameter moved
// (the others equal) a factor of two down and up: to the nearest value at most half of its own
// and at least twice it that the ranking holds, or where there is none, to the nearest below and
// above. (Radices are candidates at every value, and one apart they cost about the same: the
// step must be wide enough to find what the model misplaced -- issue 18: radix 4 for its 8.)
std::vector<std::size_t> neighbours(const std::vector<Ranked>& ranked, std::size_t e) {
  const Selection& at = ranked[e].selection;
  const std::size_t none = std::size_t(-1);
  const std::size_t n = at.values.size();
  // Per parameter: [0] the largest value <= v/2, [1] the largest < v, [2] the smallest >= 2v,
  // [3] the smallest > v (indices into ranked).
  std::vector<std::array<std::size_t, 4>> slot(n, {none, none, none, none});
  std::vector<std::size_t> out;
  auto value = [&](std::size_t i, std::size_t k) { return ranked[i].selection.values[k]; };
  for (std::size_t i = 0; i < ranked.size(); ++i) {
    const Selection& s = ranked[i].selection;
    if (i == e || std::strcmp(s.algorithm->family_name(), at.algorithm->family_name()) != 0)
      continue;
    if (s.algorithm != at.algorithm) {
      if (s.values == at.values) out.push_back(i);
      continue;
    }
    if (s.values.size() != n) continue;
    std::size_t differ = 0, k = 0;
    for (std::size_t j = 0; j < n; ++j)
      if (s.values[j] != at.values[j]) ++differ, k = j;
    if (differ != 1) continue;
    const std::int64_t v = s.values[k], own = at.values[k];
    auto keep = [&](int which, bool fits, bool larger) {
      std::size_t& x = slot[k][std::size_t(which)];
      if (fits && (x == none || (larger ? v > value(x, k) : v < value(x, k)))) x = i;
    };
    keep(0, 2 * v <= own, true);
    keep(1, v < own, true);
    keep(2, v >= 2 * own, false);
    keep(3, v > own, false);
  }
  for (std::size_t k = 0; k < n; ++k) {
    const std::size_t down = slot[k][0] != none ? slot[k][0] : slot[k][1];
    const std::size_t up = slot[k][2] != none ? slot[k][2] : slot[k][3];
    for (std::size_t i : {down, up})
      if (i != none) out.push_back(i);
  }
  std::sort(out.begin(), out.end());
  return out;
}

}  // namespace

Shortlist shortlist(const std::vector<Ranked>& ranked, const ShortlistPolicy& policy) {
  Shortlist out;
  if (ranked.empty()) return out;
  const double limit = ranked[0].seconds * policy.margin;
  std::vector<bool> taken(ranked.size(), false);
  std::vector<std::size_t> from;  // the ranking's index of each entry
  auto take = [&](std::size_t i, int refines) {
    out.entries.push_back(ranked[i].selection);
    out.refines.push_back(refines);
    from.push_back(i);
    taken[i] = true;
  };
  auto family = [&](std::size_t i) { return ranked[i].selection.algorithm->family_name(); };
  take(0, -1);
  // One per family first: the model's large errors are between algorithms, not between
  // radices or copying variants.
  for (std::size_t i = 1; i < ranked.size() && out.entries.size() < policy.max; ++i) {
    if (ranked[i].seconds > limit) break;
    const bool seen = std::any_of(from.begin(), from.end(), [&](std::size_t j) {
      return std::strcmp(family(j), family(i)) == 0;
    });
    if (!seen) take(i, -1);
  }
  for (std::size_t i = 1; i < ranked.size() && out.entries.size() < policy.max; ++i) {
    if (ranked[i].seconds > limit) break;
    if (!taken[i]) take(i, -1);
  }
  // Then each first-round entry's refinements: its neighbours (one step away in one parameter,
  // or a copying variant of it) within the margin, the model's best-ranked first.
  const std::size_t first = out.entries.size();
  for (std::size_t e = 0; e < first; ++e) {
    std::size_t n = 0;
    for (std::size_t i : neighbours(ranked, from[e])) {
      if (n == policy.refine) break;
      if (!taken[i] && ranked[i].seconds <= limit) take(i, int(e)), ++n;
    }
  }
  return out;
}

}  // namespace mpia
