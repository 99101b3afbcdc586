// What the files that define algorithm records (collective/<collective>/<algorithm>.cpp) share:
// the record type and its hooks (registry.hpp), the cost terms (cost.hpp), parameter ranges
// common to several algorithms, and the policy/lowering a builder's schedule runs under.
#pragma once

#include "collective/cost.hpp"
#include "collective/exchange.hpp"
#include "collective/registry.hpp"

#include <cmath>
#include <cstdint>
#include <vector>

namespace mpia::detail {

inline std::int64_t isqrt_ceil(std::int64_t n) {
  std::int64_t r = std::int64_t(std::sqrt(double(n)));
  while (r * r < n) ++r;
  while (r > 1 && (r - 1) * (r - 1) >= n) --r;
  return r;
}

inline Schedule with(Schedule s, Policy policy, Lowering lowering) {
  s.policy = policy;
  s.lowering = lowering;
  return s;
}

constexpr Policy kRoundByRound{0, Completion::Waitall};

// A record's candidates where auto weighs it everywhere, at its default (no parameters).
inline std::vector<ParamValues> always(const Machine&, const Stats&) { return {ParamValues{}}; }

// A record with its identity filled in; the file sets the rest.
inline AlgorithmSpec record(Collective c, const char* name, int listing, const char* description,
                            AlgorithmKind kind = AlgorithmKind::Scheduled) {
  AlgorithmSpec a;
  a.collective = c;
  a.name = name;
  a.listing = listing;
  a.description = description;
  a.kind = kind;
  return a;
}

}  // namespace mpia::detail
