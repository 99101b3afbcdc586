// What a selection runs: the record it names, or, for "auto", the records auto resolves it into
// (its record's resolve hook, collective/all/auto.cpp) -- a tuning file's rule, the cost model's
// pick, or the shortlist a trial measures. Pure: every input is agreed before ranks act on it.
#pragma once

#include "collective/model.hpp"
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

}  // namespace mpia
