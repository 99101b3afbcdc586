// What a selection runs: the record it names, or, for "auto", the records auto resolves it into
// (its record's resolve hook, collective/all/auto.cpp) -- a tuning file's rule, the cost model's
// pick, or the shortlist a trial measures. Pure: every input is agreed before ranks act on it.
#pragma once

#include "collective/model.hpp"
#include "collective/selection.hpp"
#include "collective/registry.hpp"
#include "collective/shortlist.hpp"
#include "collective/tuning.hpp"

#include <string>
#include <vector>

namespace mpia {

struct Resolving {
  const Tuning* tuning = nullptr;
  Machine machine;
  Stats stats;
  // Whether stats are the same on every rank. A blocking v- or neighbor call that agreed on
  // nothing knows only its own sizes: auto then runs a tuning rule that does not depend on sizes,
  // else its record's blocking_auto algorithm (a direct exchange, which needs no agreement).
  bool agreed = true;
  bool measure = false;      // a trial may measure a shortlist (MPIX_AUTO, info mpix_auto)
  bool with_library = true;  // the trial may try the MPI library's call
  const std::vector<std::string>* skip = nullptr;  // MPIX_TRIAL_SKIP: never tried
};

// The shortlist of s: s alone, unless its record resolves (auto).
inline Shortlist resolve(const Selection& s, const Resolving& in) {
  return s.algorithm->resolve ? s.algorithm->resolve(s, in) : only(s);
}

// Whether s names auto (its record resolves into others).
inline bool resolves(const Selection& s) { return s.algorithm->resolve != nullptr; }

// What auto runs where only the records `runs` accepts can run (a nonblocking call, which can
// neither learn its peers' sizes nor compute the node map): without agreed statistics the
// collective's blocking_auto record (a direct exchange), else the model's best candidate that
// runs; the MPI library's own call when none does. Never throws for a collective without a
// blocking_auto record (alltoall's statistics are every rank's own).
template <class Runs>
Selection runnable_auto(Collective c, const Resolving& in, Runs&& runs) {
  if (!in.agreed) {
    if (const AlgorithmSpec* a = blocking_auto_algorithm(c)) {
      Selection s = parse_selection(
          c, a->name, Extent(in.machine.nranks, in.machine.nnodes, in.machine.ppn), true);
      if (runs(s)) return s;
    }
  } else {
    for (const Ranked& r : rank(c, in.tuning->model, in.machine, in.stats))
      if (runs(r.selection)) return r.selection;
  }
  return Selection{find_kind(c, AlgorithmKind::System), {}};
}

}  // namespace mpia
