// Calibrating auto's cost model (model.hpp) to measured alltoall times: what mpia_tune runs
// after measuring, and what scripts/calibrate.py does for the lab's CSVs. Pure: no MPI call.
//
// A prediction is linear in the model's ten constants (effective_terms: the coefficients that
// hold under given constants), so the constants are the non-negative least-squares solution of
// the relative errors -- every measurement weighs the same whatever its size. Where two costs
// overlap (c + max(cpu, wire)) the branch depends on the constants: fit, recompute the terms
// under the fit, and fit again.
#pragma once

#include "collective/cost.hpp"
#include "collective/model.hpp"
#include "collective/tuning.hpp"

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace mpia {

// One measured time: a selection (one the model prices) at a block size on a machine.
struct MeasuredPoint {
  Machine machine;
  std::int64_t bytes = 0;
  Selection selection;
  double seconds = 0;
};

struct ModelFit {
  CostModel model;
  // The constants no point says anything about (their coefficient is 0 at every point: the
  // inter-node ones on one node): kept at the prior's values, not fitted.
  std::vector<int> unmeasured;
  std::vector<double> predicted;  // seconds, per point in the order given (0: not priced)
  int fitted = 0;                 // the points the model prices (not system's, not 1 rank's)
  double median_error = 0, p90_error = 0, max_error = 0;  // |predicted / measured - 1|
};

// Fits the constants not in `held` (index: cost_model_key order) to the points, starting from
// `prior`; the held ones keep their values, and so do those the points cannot tell. Throws
// mpia::Error(MPI_ERR_ARG) without a point the model prices.
ModelFit fit_cost_model(const std::vector<MeasuredPoint>& points,
                        const std::vector<std::optional<double>>& held = {},
                        const CostModel& prior = CostModel{});

// min |A x - b| over x >= 0 (Lawson and Hanson's active-set method); A is rows x cols, row-major.
std::vector<double> nonnegative_least_squares(const std::vector<double>& A, int rows, int cols,
                                              const std::vector<double>& b);

// One tuning rule per (machine, size) where the model's pick was not measured or is more than
// `slack` slower than the best measured selection (`system`, the MPI library's call, among them):
// it pins the best. Each rule's text is a
// tuning file's line (with a comment naming the model's pick).
std::vector<std::string> calibration_rules(const CostModel& model,
                                           const std::vector<MeasuredPoint>& points,
                                           double slack = 0.10);

}  // namespace mpia
