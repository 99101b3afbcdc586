#include "collective/calibrate.hpp"

#include "collective/selection.hpp"
#include "util/error.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>
#include <tuple>

namespace mpia {

namespace {

// Least squares over the columns `use` of A (rows x cols): x[use] minimising |A x - b|, the
// other entries 0. Gram-Schmidt, twice per column; a column (numerically) in the span of the
// earlier ones gets 0, as a minimum-norm solution would give it nothing it needs.
std::vector<double> least_squares(const std::vector<double>& A, int rows, int cols,
                                  const std::vector<bool>& use, const std::vector<double>& b) {
  std::vector<std::vector<double>> q;  // orthonormal columns
  std::vector<int> kept;
  std::vector<std::vector<double>> r;  // r[k][i]: coefficient of q[i] in column kept[k]
  for (int j = 0; j < cols; ++j) {
    if (!use[j]) continue;
    std::vector<double> v(rows);
    double norm0 = 0;
    for (int i = 0; i < rows; ++i) v[i] = A[std::size_t(i) * cols + j], norm0 += v[i] * v[i];
    norm0 = std::sqrt(norm0);
    std::vector<double> coef(q.size(), 0.0);
    for (int pass = 0; pass < 2; ++pass)
      for (std::size_t k = 0; k < q.size(); ++k) {
        double d = 0;
        for (int i = 0; i < rows; ++i) d += q[k][i] * v[i];
        for (int i = 0; i < rows; ++i) v[i] -= d * q[k][i];
        coef[k] += d;
      }
    double norm = 0;
    for (double x : v) norm += x * x;
    norm = std::sqrt(norm);
    if (norm0 == 0 || norm <= 1e-10 * norm0) continue;
    for (double& x : v) x /= norm;
    coef.push_back(norm);
    q.push_back(std::move(v));
    r.push_back(std::move(coef));
    kept.push_back(j);
  }
  // R z = Q^T b, R upper triangular (r[k] holds column k's entries in rows 0..k).
  const std::size_t n = q.size();
  std::vector<double> qb(n, 0.0), z(n, 0.0);
  for (std::size_t k = 0; k < n; ++k)
    for (int i = 0; i < rows; ++i) qb[k] += q[k][i] * b[i];
  for (std::size_t k = n; k-- > 0;) {
    double s = qb[k];
    for (std::size_t m = k + 1; m < n; ++m) s -= r[m][k] * z[m];
    z[k] = s / r[k][k];
  }
  std::vector<double> x(cols, 0.0);
  for (std::size_t k = 0; k < n; ++k) x[kept[k]] = z[k];
  return x;
}

double median_of(std::vector<double> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  const std::size_t n = v.size();
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

// The p-th percentile, linear between order statistics (numpy's default).
double percentile(std::vector<double> v, double p) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  const double at = p / 100.0 * double(v.size() - 1);
  const std::size_t lo = std::size_t(at);
  const std::size_t hi = std::min(lo + 1, v.size() - 1);
  return v[lo] + (at - double(lo)) * (v[hi] - v[lo]);
}

bool is_bandwidth(int i) { return std::string(cost_model_key(i)).compare(0, 3, "bw_") == 0; }

// What multiplies constant i's coefficient: a bandwidth's inverse (0 bytes/s: free).
double coefficient(const CostModel& m, int i) {
  const double v = cost_model_value(m, i);
  if (is_bandwidth(i)) return v > 0 ? 1.0 / v : 0.0;
  return v;
}

void set_coefficient(CostModel& m, int i, double x) {
  if (is_bandwidth(i))
    cost_model_value(m, i) = x > 0 ? 1.0 / x : 0.0;
  else
    cost_model_value(m, i) = x;
}

}  // namespace

std::vector<double> nonnegative_least_squares(const std::vector<double>& A, int rows, int cols,
                                              const std::vector<double>& b) {
  std::vector<double> x(cols, 0.0);
  std::vector<bool> passive(cols, false);
  auto gradient = [&] {
    std::vector<double> res(b);
    for (int i = 0; i < rows; ++i)
      for (int j = 0; j < cols; ++j) res[i] -= A[std::size_t(i) * cols + j] * x[j];
    std::vector<double> w(cols, 0.0);
    for (int j = 0; j < cols; ++j)
      for (int i = 0; i < rows; ++i) w[j] += A[std::size_t(i) * cols + j] * res[i];
    return w;
  };
  for (int outer = 0; outer < 3 * cols + 10; ++outer) {
    const std::vector<double> w = gradient();
    double wmax = 1;
    for (double v : w) wmax = std::max(wmax, std::abs(v));
    int j = -1;
    for (int k = 0; k < cols; ++k)
      if (!passive[k] && w[k] > 1e-12 * wmax && (j < 0 || w[k] > w[j])) j = k;
    if (j < 0) break;
    passive[j] = true;
    for (int inner = 0; inner < cols + 1; ++inner) {
      const std::vector<double> z = least_squares(A, rows, cols, passive, b);
      bool positive = true;
      for (int k = 0; k < cols; ++k)
        if (passive[k] && z[k] <= 0) positive = false;
      if (positive) {
        x = z;
        break;
      }
      // Step from x towards z as far as every passive entry stays >= 0; those reaching 0 leave.
      double alpha = 1;
      for (int k = 0; k < cols; ++k)
        if (passive[k] && z[k] <= 0 && x[k] - z[k] > 0)
          alpha = std::min(alpha, x[k] / (x[k] - z[k]));
      for (int k = 0; k < cols; ++k) {
        x[k] += alpha * (z[k] - x[k]);
        if (passive[k] && x[k] <= 1e-30) passive[k] = false, x[k] = 0;
      }
      if (std::none_of(passive.begin(), passive.end(), [](bool p) { return p; })) break;
    }
  }
  return x;
}

ModelFit fit_cost_model(const std::vector<MeasuredPoint>& points,
                        const std::vector<std::optional<double>>& held, const CostModel& prior) {
  ModelFit fit;
  fit.model = prior;
  std::vector<bool> fixed(kModelTerms, false);
  for (int i = 0; i < kModelTerms; ++i)
    if (std::size_t(i) < held.size() && held[i].has_value())
      cost_model_value(fit.model, i) = *held[i], fixed[i] = true;
  std::vector<const MeasuredPoint*> used;
  for (const MeasuredPoint& p : points)
    if (p.seconds > 0 && p.selection.algorithm && p.selection.algorithm->cost &&
        p.machine.nranks > 1)
      used.push_back(&p);
  if (used.empty()) throw Error(MPI_ERR_ARG, "no measured point of a selection the model prices");
  const int rows = int(used.size());
  fit.fitted = rows;
  // Which branch of c + max(cpu, wire) holds depends on the constants: four rounds settle it.
  for (int round = 0; round < 4; ++round) {
    std::vector<TermArray> terms(rows);
    TermArray norms{};
    for (int r = 0; r < rows; ++r) {
      const MeasuredPoint& p = *used[r];
      terms[r] = effective_terms(fit.model, predicted_terms(p.selection, p.machine, p.bytes));
      // Relative errors: every row divided by its measured time.
      for (int i = 0; i < kModelTerms; ++i) {
        terms[r][i] /= p.seconds;
        norms[i] += terms[r][i] * terms[r][i];
      }
    }
    std::vector<int> free_cols;
    fit.unmeasured.clear();
    for (int i = 0; i < kModelTerms; ++i)
      if (fixed[i])
        continue;
      else if (norms[i] > 0)
        free_cols.push_back(i);
      else
        fit.unmeasured.push_back(i);
    const int cols = int(free_cols.size());
    std::vector<double> A(std::size_t(rows) * cols), b(rows, 1.0);
    for (int r = 0; r < rows; ++r) {
      for (int i = 0; i < kModelTerms; ++i)  // what the constants not fitted account for
        if (std::find(free_cols.begin(), free_cols.end(), i) == free_cols.end())
          b[r] -= terms[r][i] * coefficient(fit.model, i);
      // Columns scaled to unit norm, so that seconds per message and per byte fit alike.
      for (int c = 0; c < cols; ++c)
        A[std::size_t(r) * cols + c] = terms[r][free_cols[c]] / std::sqrt(norms[free_cols[c]]);
    }
    const std::vector<double> x = nonnegative_least_squares(A, rows, cols, b);
    for (int c = 0; c < cols; ++c)
      set_coefficient(fit.model, free_cols[c], x[c] / std::sqrt(norms[free_cols[c]]));
  }
  std::vector<double> errors;
  fit.predicted.assign(points.size(), 0.0);
  for (std::size_t k = 0; k < points.size(); ++k) {
    const MeasuredPoint& p = points[k];
    if (!p.selection.algorithm || !p.selection.algorithm->cost || p.machine.nranks <= 1) continue;
    fit.predicted[k] =
        predicted_seconds(fit.model, predicted_terms(p.selection, p.machine, p.bytes));
    if (p.seconds > 0) errors.push_back(std::abs(fit.predicted[k] / p.seconds - 1));
  }
  fit.median_error = median_of(errors);
  fit.p90_error = percentile(errors, 90);
  fit.max_error = errors.empty() ? 0 : *std::max_element(errors.begin(), errors.end());
  return fit;
}

std::vector<std::string> calibration_rules(const CostModel& model,
                                           const std::vector<MeasuredPoint>& points, double slack) {
  // Per (P, nodes, ppn, placement, bytes): every measured selection's time.
  using Key = std::tuple<int, int, int, bool, std::int64_t>;
  std::map<Key, std::vector<const MeasuredPoint*>> by;
  for (const MeasuredPoint& p : points)
    if (p.selection.algorithm && p.seconds > 0)
      by[Key(p.machine.nranks, p.machine.nnodes, p.machine.ppn, p.machine.blocked, p.bytes)]
          .push_back(&p);
  std::vector<std::string> rules;
  for (const auto& [key, ps] : by) {
    const MeasuredPoint* best = ps.front();
    for (const MeasuredPoint* p : ps)
      if (p->seconds < best->seconds) best = p;
    const Machine& m = best->machine;
    const Selection pick = choose_alltoall(model, m, best->bytes);
    const MeasuredPoint* got = nullptr;
    for (const MeasuredPoint* p : ps)
      if (p->selection == pick) got = p;
    if (got && got->seconds <= (1 + slack) * best->seconds) continue;
    char line[512];
    std::snprintf(line, sizeof line, "alltoall nranks=%d nodes=%d bytes=%lld %s   # model: %s",
                  m.nranks, m.nnodes, (long long)best->bytes, best->selection.to_string().c_str(),
                  pick.algorithm ? pick.to_string().c_str() : "-");
    rules.emplace_back(line);
  }
  return rules;
}

}  // namespace mpia
