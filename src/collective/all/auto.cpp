// "auto": resolved before building, by the tuning file's rules, else the cost model's search
// over the other records' costs and candidates (collective/model.hpp), then, for persistent
// requests, a measured trial of its shortlist (collective/shortlist.hpp).
#include "collective/record.hpp"
#include "collective/resolve.hpp"
#include "util/error.hpp"

#include <mpi.h>

#include <algorithm>

namespace mpia {

namespace {

// The candidates a trial may run: the ranking without MPIX_TRIAL_SKIP's algorithms (all of it
// when that leaves none).
std::vector<Ranked> trial_candidates(std::vector<Ranked> ranked,
                                     const std::vector<std::string>* skip) {
  if (!skip || skip->empty()) return ranked;
  std::vector<Ranked> kept;
  for (Ranked& r : ranked)
    if (std::find(skip->begin(), skip->end(), r.selection.algorithm->name) == skip->end())
      kept.push_back(std::move(r));
  return kept.empty() ? ranked : kept;
}

// A tuning rule's selection, else (not agreed) the blocking_auto record, else the model's pick
// or (measure) the shortlist of its ranking, with the MPI library's own call unless the caller
// rules it out.
Shortlist resolve_auto_list(const Selection& chosen, const Resolving& in) {
  const Collective c = chosen.algorithm->collective;
  const Tuning& t = *in.tuning;
  const Machine& m = in.machine;
  if (!in.agreed) {
    return only(resolve_auto(t, c, m, -1, [&] {
      const AlgorithmSpec* a = blocking_auto_algorithm(c);
      if (!a)
        fail(MPI_ERR_INTERN,
             std::string("mpi-advance: no blocking auto algorithm for ") + collective_name(c));
      return parse_selection(c, a->name, m.nranks, true);
    }));
  }
  const bool measure = in.measure && m.nranks > 1 && in.stats.max_block > 0;
  Shortlist list;
  const Selection s = resolve_auto(t, c, m, in.stats.max_block, [&] {
    std::vector<Ranked> ranked = rank(c, t.model, m, in.stats);
    if (!measure) return ranked.front().selection;
    list = shortlist(trial_candidates(std::move(ranked), in.skip));
    if (in.with_library) {
      list.entries.push_back(Selection{find_kind(c, AlgorithmKind::System), {}});
      list.refines.push_back(-1);
    }
    return list.entries.front();
  });
  if (list.entries.empty()) list = only(s);
  return list;
}

// The same for every collective: auto is the search, not one more schedule.
constexpr detail::About kAbout{
    "this library: the cost model (collective/model.hpp, on the K and D of " MPIA_SEED_003
    ") and a measured trial of its shortlist (collective/shortlist.hpp)",
    "not modelled itself: the least predicted time among the candidates the other records "
    "list (their formulas), unless a tuning file's rule decides; then, where a trial runs, "
    "the measured fastest of its shortlist"};

}  // namespace

MPIA_ALGORITHMS(all_auto) {
  using detail::record;
  std::vector<AlgorithmSpec> out = {
      record(Collective::Alltoall, "auto", 1000,
             "the tuning file's rule, else the cost model (collective/model.hpp) over every "
             "algorithm and parameter, tra2 included, from P, the node map and the block size",
             kAbout, AlgorithmKind::Auto),
      record(Collective::Alltoallv, "auto", 1000,
             "cost model on agreed statistics (direct, bruck radix, locality); blocking: the "
             "same, from the agreed plan cache once a pattern repeats, else multipair_waitany",
             kAbout, AlgorithmKind::Auto),
      record(Collective::NeighborAlltoallv, "auto", 1000,
             "persistent: cost model on agreed statistics (off-node edges, nodes they reach, "
             "largest message): locality, locality_partial or direct; blocking: the same, from "
             "the agreed plan cache once a pattern repeats, else direct",
             kAbout, AlgorithmKind::Auto),
  };
  for (AlgorithmSpec& a : out) a.resolve = resolve_auto_list;
  return out;
}

}  // namespace mpia
