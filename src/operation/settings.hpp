// The process's settings: every environment variable the library reads, read once per process
// (the first time the library needs one) and never again. Those that change what ranks do
// together are hashed into a fingerprint that every communicator agrees on at its first call
// (comm_state.cpp): a rank whose settings differ from its peers' makes every call on that
// communicator fail with MPI_ERR_ARG on every rank, instead of silently running a different
// schedule.
#pragma once

#include "collective/tuning.hpp"
#include "collective/registry.hpp"

#include <cstdint>
#include <string>
#include <vector>

namespace mpia {

enum class ProgressMode : std::uint8_t { Calls, Thread };

struct Settings {
  // Agreed (part of the fingerprint).
  std::string algorithm[3];  // MPIX_ALLTOALL, MPIX_ALLTOALLV, MPIX_NEIGHBOR_ALLTOALLV ("" unset)
  std::string cost_model;    // MPIX_COST_MODEL
  std::string tuning_path;   // MPIX_TUNING
  std::string tuning_text;   // the file's contents (agreed, not its path)
  Tuning tuning;             // the built-in model, then the file, then MPIX_COST_MODEL
  std::string locality;      // MPIX_LOCALITY
  bool debug = false;        // MPIX_DEBUG: blocking calls agree on every call
  int tag_ub = 0;            // MPIX_TAG_UB: cap on the tags the library uses (0: MPI_TAG_UB)
  // MPIX_AUTO: "measure" (default): persistent auto requests try the model's shortlist and keep
  // the fastest (operation/trial.hpp); "model": the model's pick, never measured.
  bool auto_measure = true;
  // MPIX_TRIAL_SKIP: algorithms (names, comma separated) a measured trial never tries -- the
  // simulated lab's, which SMPI cannot run correctly (scripts/smpi/README.md).
  std::vector<std::string> trial_skip;
  // MPIX_TRIAL_SYNC: "arrival" (default; "none" is its former name): no barrier before a trial
  // start; each start timed from the last rank's start call to the last rank's completion, on
  // clocks whose offsets from rank 0's the first timed start estimates (trial.hpp), so that how
  // an algorithm takes staggered arrivals counts as the application meets it, and the wait for
  // the late ranks, the same for every entry, is not in the samples. Assumes MPI_Wtime runs at
  // one rate on every rank (drift over a trial's length is not corrected). "barrier": every
  // trial start begins with a barrier and is timed from there on each rank.
  bool trial_barrier = false;
  // MPIX_PLAN_CACHE_BYTES=N[K|M|G]: the bytes each plan cache of a communicator holds at most
  // (operation/cache_budget.hpp), besides its entry count. Agreed because the agreed plan cache
  // of blocking v- and neighbor calls evicts by it in step on every rank (agreed_cache.cpp).
  static constexpr std::int64_t kDefaultPlanCacheBytes = std::int64_t(64) << 20;
  std::int64_t plan_cache_bytes = kDefaultPlanCacheBytes;
  std::int64_t fingerprint = 0;
  // Local to the process (not agreed).
  ProgressMode progress = ProgressMode::Calls;  // MPIX_PROGRESS=thread
  bool report = false;     // MPIX_REPORT set (not "0"): blocking calls record what they ran
  std::string tuning_out;  // MPIX_TUNING_OUT: file rank 0 writes the settled trials to
  // MPIX_TRIAL_TIMES (for tests): times that replace what a trial measures (trial.hpp). Local on
  // purpose: ranks that measure differently are what the trial's agreement is for.
  std::string trial_times;
  // MPIX_TRIAL_NOISE="mean[:seed]" (for tests): noise on what a trial measures (trial.cpp).
  std::string trial_noise;
  // MPIX_TRIAL_SKEW="rank=us,..." (for tests): those ranks' clocks, as a trial reads them, run
  // that far ahead (trial.cpp).
  std::string trial_skew;
  std::string text;  // "MPIX_ALLTOALL=...;..." of the agreed ones, for messages
};

const Settings& settings();

// The environment's algorithm text for a collective ("" when unset).
inline const std::string& env_algorithm(Collective c) { return settings().algorithm[int(c)]; }

}  // namespace mpia
