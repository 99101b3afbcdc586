// What the files that define algorithm records (collective/<collective>/<algorithm>.cpp) share:
// the record type and its hooks (registry.hpp), the cost terms (cost.hpp), parameter ranges
// common to several algorithms, the policy/lowering a builder's schedule runs under, and
// record(), which says what a scheduled algorithm is in one call.
#pragma once

#include "collective/cost.hpp"
#include "collective/exchange.hpp"
#include "collective/references.hpp"
#include "collective/registry.hpp"

#include <cmath>
#include <cstdint>
#include <utility>
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

// What the listings say of a record beside its description, {reference, cost formula}: where it
// comes from (references.hpp has the papers several records cite) and the formula its cost
// function computes, in kCostNotation's symbols (cost.hpp), kept beside that function; "not
// modelled: ..." for a record without one.
struct About {
  const char* reference;
  const char* cost_formula;
};

// A record with its identity filled in: all a system or auto record says (collective/all/).
inline AlgorithmSpec record(Collective c, const char* name, int listing, const char* description,
                            const About& about, AlgorithmKind kind = AlgorithmKind::Scheduled) {
  AlgorithmSpec a;
  a.collective = c;
  a.name = name;
  a.listing = listing;
  a.description = description;
  a.reference = about.reference;
  a.cost_formula = about.cost_formula;
  a.kind = kind;
  return a;
}

// A scheduled algorithm's builder, of whichever collective its type says. (Implicit on purpose,
// as Learn's: a record names the function itself.)
struct Builder {
  Collective collective;
  AlltoallBuilder alltoall = nullptr;
  AlltoallvBuilder alltoallv = nullptr;
  NeighborBuilder neighbor = nullptr;
  Builder(AlltoallBuilder b) : collective(Collective::Alltoall), alltoall(b) {}           // NOLINT
  Builder(AlltoallvBuilder b) : collective(Collective::Alltoallv), alltoallv(b) {}        // NOLINT
  Builder(NeighborBuilder b) : collective(Collective::NeighborAlltoallv), neighbor(b) {}  // NOLINT
};

// The init-time hook of an algorithm that forwards blocks (registry.hpp), of either collective.
struct Learn {
  AlltoallvLearn alltoallv = nullptr;
  NeighborLearn neighbor = nullptr;
  Learn(AlltoallvLearn l) : alltoallv(l) {}  // NOLINT
  Learn(NeighborLearn l) : neighbor(l) {}    // NOLINT
};

// The cost model's view of an algorithm, {cost, candidates, search} (registry.hpp): its cost,
// the parameter values auto weighs (none: never a candidate) and its place in the collective's
// search. {cost} alone: a prediction for the tools that auto never weighs.
struct Model {
  CostFunction cost = nullptr;
  CandidatesFunction candidates = nullptr;
  int search = 0;
};

// What else a record may say, or-ed: it builds on the node map (needs_locality); a blocking auto
// call runs it when its ranks have not agreed (blocking_auto).
using Traits = unsigned;
constexpr Traits kNeedsLocality = 1, kBlockingAuto = 2;

// A scheduled algorithm, whole: record(name, listing, description, about, params, builder,
// [learn,] model, [traits]). The builder says the collective; a learn hook makes it
// needs_peer_sizes.
inline AlgorithmSpec record(const char* name, int listing, const char* description,
                            const About& about, std::vector<ParamSpec> params, Builder build,
                            const Model& model, Traits traits = 0) {
  AlgorithmSpec a = record(build.collective, name, listing, description, about);
  a.params = std::move(params);
  a.build_alltoall = build.alltoall;
  a.build_alltoallv = build.alltoallv;
  a.build_neighbor = build.neighbor;
  a.needs_locality = (traits & kNeedsLocality) != 0;
  a.cost = model.cost;
  a.candidates = model.candidates;
  a.search = model.search;
  a.blocking_auto = (traits & kBlockingAuto) != 0;
  return a;
}
inline AlgorithmSpec record(const char* name, int listing, const char* description,
                            const About& about, std::vector<ParamSpec> params, Builder build,
                            Learn learn, const Model& model, Traits traits = 0) {
  AlgorithmSpec a =
      record(name, listing, description, about, std::move(params), build, model, traits);
  a.needs_peer_sizes = true;
  a.learn_alltoallv = learn.alltoallv;
  a.learn_neighbor = learn.neighbor;
  return a;
}

}  // namespace mpia::detail
