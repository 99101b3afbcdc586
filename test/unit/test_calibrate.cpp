// The calibration's fit (collective/calibrate.hpp): the non-negative least squares it rests on,
// and that times the model itself predicts under known constants come back from the fit, at
// machines and sizes it was not given (out of sample), with held constants kept; the rules pin
// the best measured selection where the model's pick loses.
#include "collective/calibrate.hpp"
#include "collective/model.hpp"
#include "collective/selection.hpp"
#include "collective/tuning.hpp"
#include "util/error.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

namespace mpia {
namespace {

Selection sel(const std::string& text, const Machine& m) {
  return parse_selection(Collective::Alltoall, text, Extent(m.nranks, m.nnodes, m.ppn), true);
}

// A machine unlike the built-in defaults in every constant but one.
CostModel truth() {
  CostModel t;
  t.o_intra = 3e-7;
  t.o_inter = 9e-7;
  t.lat_intra = 4e-7;
  t.lat_inter = 2.5e-6;
  t.bw_intra = 8e9;
  t.bw_inter = 6e9;
  t.bw_copy = 5e9;
  t.o_recv_intra = 1e-7;
  t.o_recv_inter = 2e-7;
  t.g_inflight = 0;
  return t;
}

std::vector<MeasuredPoint> points_of(const CostModel& model, const std::vector<Machine>& machines,
                                     const std::vector<std::int64_t>& sizes) {
  std::vector<MeasuredPoint> out;
  for (const Machine& m : machines)
    for (std::int64_t B : sizes)
      for (const Selection& s : alltoall_candidates(m)) {
        MeasuredPoint p{m, B, s, 0};
        p.seconds = predicted_seconds(model, s, m, B);
        out.push_back(p);
      }
  return out;
}

TEST(Calibrate, NonnegativeLeastSquares) {
  // Unconstrained, x = (2, -1): the constraint makes the second 0 and the first the best fit
  // alone (b's projection on the first column: (2*1 + 1*0 + 3*1) / 2 = 2.5).
  const std::vector<double> A = {1, 1, 0, 1, 1, 2};  // 3 x 2: rows (1,1), (0,1), (1,2)
  const std::vector<double> b = {1, -1, 0};
  std::vector<double> x = nonnegative_least_squares(A, 3, 2, b);
  ASSERT_EQ(x.size(), 2u);
  EXPECT_NEAR(x[0], 0.5, 1e-12);  // (1*1 + 0*(-1) + 1*0) / (1 + 0 + 1)
  EXPECT_EQ(x[1], 0.0);
  // An exact non-negative solution is found as it is.
  const std::vector<double> b2 = {3, 2, 5};  // x = (1, 2)
  x = nonnegative_least_squares(A, 3, 2, b2);
  EXPECT_NEAR(x[0], 1, 1e-12);
  EXPECT_NEAR(x[1], 2, 1e-12);
  // Two identical columns: the solution uses one, and fits.
  const std::vector<double> A3 = {1, 1, 2, 2, 3, 3};
  const std::vector<double> b3 = {2, 4, 6};
  x = nonnegative_least_squares(A3, 3, 2, b3);
  EXPECT_NEAR(x[0] + x[1], 2, 1e-12);
  EXPECT_GE(std::min(x[0], x[1]), 0);
}

TEST(Calibrate, RecoversTheModelsOwnTimesOutOfSample) {
  const CostModel t = truth();
  const std::vector<Machine> fitted = {Machine{16, 2, 8, true}, Machine{64, 4, 16, true},
                                       Machine{48, 1, 48, true}};
  const ModelFit fit = fit_cost_model(points_of(t, fitted, {8, 512, 4096}));
  EXPECT_LT(fit.max_error, 1e-6);
  // Machines and sizes the fit never saw: the fitted constants predict as the true ones.
  const std::vector<MeasuredPoint> held_out =
      points_of(t, {Machine{128, 8, 16, true}, Machine{36, 3, 12, true}}, {64, 2048, 65536});
  ASSERT_FALSE(held_out.empty());
  for (const MeasuredPoint& p : held_out) {
    const double got = predicted_seconds(fit.model, p.selection, p.machine, p.bytes);
    EXPECT_NEAR(got / p.seconds, 1.0, 1e-6)
        << p.selection.to_string() << " P=" << p.machine.nranks << " B=" << p.bytes;
  }
}

TEST(Calibrate, HeldConstantsStayAndTheRestFit) {
  CostModel t = truth();
  t.bw_copy = 0;  // free copies, held at that
  std::vector<std::optional<double>> held(kModelTerms);
  held[6] = 0.0;  // bw_copy
  held[0] = t.o_intra;
  const ModelFit fit = fit_cost_model(
      points_of(t, {Machine{16, 2, 8, true}, Machine{64, 4, 16, true}}, {8, 4096}), held);
  EXPECT_EQ(fit.model.bw_copy, 0.0);
  EXPECT_EQ(fit.model.o_intra, t.o_intra);
  EXPECT_LT(fit.max_error, 1e-6);
}

TEST(Calibrate, KeepsWhatOneNodeCannotTell) {
  // On one node nothing crosses a NIC: the inter-node constants keep the prior's values (a
  // model fitted there and run on many nodes must not think the network free).
  CostModel prior;
  prior.lat_inter = 7e-6;
  prior.bw_inter = 3e9;
  const ModelFit fit =
      fit_cost_model(points_of(truth(), {Machine{16, 1, 16, true}}, {8, 4096}), {}, prior);
  EXPECT_LT(fit.max_error, 1e-6);
  EXPECT_EQ(fit.model.lat_inter, 7e-6);
  EXPECT_EQ(fit.model.bw_inter, 3e9);
  EXPECT_EQ(fit.model.o_inter, prior.o_inter);
  std::vector<std::string> names;
  for (int i : fit.unmeasured) names.push_back(cost_model_key(i));
  EXPECT_NE(std::find(names.begin(), names.end(), "lat_inter"), names.end());
  EXPECT_EQ(std::find(names.begin(), names.end(), "lat_intra"), names.end());
}

TEST(Calibrate, NoticesAModelThatCannotFit) {
  // Times the model cannot express (every selection equally fast): a large error is reported,
  // not hidden.
  const Machine m{16, 2, 8, true};
  std::vector<MeasuredPoint> pts = points_of(truth(), {m}, {8, 4096});
  for (MeasuredPoint& p : pts) p.seconds = 1e-5;
  const ModelFit fit = fit_cost_model(pts);
  EXPECT_GT(fit.max_error, 0.2);
  EXPECT_THROW(fit_cost_model({}), Error);
}

TEST(Calibrate, RulesPinTheBestMeasuredWhereThePickLoses) {
  const Machine m{16, 2, 8, true};
  const CostModel model = truth();
  const Selection pick = choose_alltoall(model, m, 512);
  const Selection other =
      sel(pick.algorithm->name == std::string("linear") ? "pairwise" : "linear", m);
  // The pick measured 2x slower than `other`: one rule, for that size, pinning `other`.
  std::vector<MeasuredPoint> pts = {{m, 512, pick, 2e-5}, {m, 512, other, 1e-5}};
  std::vector<std::string> rules = calibration_rules(model, pts);
  ASSERT_EQ(rules.size(), 1u);
  EXPECT_NE(rules[0].find("bytes=512 " + other.to_string() + " "), std::string::npos) << rules[0];
  // The rule parses, and auto then takes `other` there.
  Tuning tuning;
  tuning.model = model;
  std::string warnings;
  parse_tuning(rules[0] + "\n", tuning, warnings);
  EXPECT_EQ(warnings, "");
  const Selection now = resolve_auto(tuning, Collective::Alltoall, m, 512,
                                     [&] { return choose_alltoall(model, m, 512); });
  EXPECT_TRUE(now == other) << now.to_string();
  // Within 10 %: no rule.
  pts[0].seconds = 1.05e-5;
  EXPECT_TRUE(calibration_rules(model, pts).empty());
  // The MPI library's call (system, not priced by the model) measured fastest: pinned.
  pts.push_back({m, 512, sel("system", m), 0.5e-5});
  rules = calibration_rules(model, pts);
  ASSERT_EQ(rules.size(), 1u);
  EXPECT_NE(rules[0].find("bytes=512 system "), std::string::npos) << rules[0];
  // And the fit leaves it out.
  const ModelFit fit = fit_cost_model(pts);
  EXPECT_EQ(fit.fitted, 2);
  EXPECT_EQ(fit.predicted[2], 0.0);
}

}  // namespace
}  // namespace mpia
