#include "collective/trial_rule.hpp"

#include <algorithm>
#include <cmath>
#include <utility>

namespace mpia {

double median_of(std::vector<double> v) {
  const std::size_t n = v.size(), h = n / 2;
  std::nth_element(v.begin(), v.begin() + std::ptrdiff_t(h), v.end());
  if (n % 2) return v[h];
  const double hi = v[h];
  return (*std::max_element(v.begin(), v.begin() + std::ptrdiff_t(h)) + hi) / 2;
}

TrialRule::TrialRule(std::vector<int> refines, int system, TrialLimits limits)
    : refines_(std::move(refines)), system_(system), lim_(limits) {
  samples_.resize(refines_.size());
  std::vector<int> first;
  for (int i = 0; i < int(refines_.size()); ++i)
    if (refines_[std::size_t(i)] < 0) first.push_back(i);
  begin(std::move(first), system_ >= 0 && !lim_.pick_incumbent ? system_ : 0);
}

int TrialRule::bound() const {
  int first = 0;
  for (int r : refines_) first += r < 0;
  const int second = int(std::min(refines_.size() - std::size_t(first), lim_.refine_entries));
  return lim_.max_samples * (first + (second > 0 ? second + 1 : 0));
}

double TrialRule::median(int i) const {
  const std::vector<double>& s = samples_[std::size_t(i)];
  return s.empty() ? -1 : median_of(s);
}

double TrialRule::error(int i) const {
  // The spread is pooled over the round's entries (relative deviations from each one's median):
  // noise is the machine's, alike for every entry, and a few samples of one entry alone can
  // look spuriously tight.
  std::vector<double> dev;
  for (int j : alive_) {
    const std::vector<double>& s = samples_[std::size_t(j)];
    const double m = median_of(s);
    bool skipped = s.size() % 2 == 0;  // an odd count's median is a sample: its 0 says nothing
    for (double x : s) {
      if (!skipped && x == m) {
        skipped = true;
        continue;
      }
      dev.push_back(m > 0 ? std::fabs(x - m) / m : 0);
    }
  }
  const double m = median(i);
  const double se = 1.858 * median_of(dev) * m / std::sqrt(double(samples_[std::size_t(i)].size()));
  return std::max(se, lim_.floor * m);
}

void TrialRule::begin(std::vector<int> entries, int incumbent) {
  alive_ = std::move(entries);
  for (int i : alive_) samples_[std::size_t(i)].clear();
  incumbent_ = incumbent;
  batch_ = 0;
  at_ = 0;
  order_ = alive_;
  if (alive_.size() < 2) settle_round();
}

void TrialRule::record(double seconds) {
  if (winner_ >= 0) return;
  samples_[std::size_t(order_[std::size_t(at_)])].push_back(seconds);
  total_ += seconds;
  ++starts_;
  if (++at_ == int(order_.size())) batch_done();
}

void TrialRule::batch_done() {
  ++batch_;
  at_ = 0;
  if (batch_ >= lim_.min_samples) {
    int lead = alive_[0];
    for (int i : alive_)
      if (median(i) < median(lead)) lead = i;
    const double ml = median(lead), sl = error(lead);
    const double z_incumbent = batch_ >= lim_.max_samples ? lim_.z_final : lim_.z_incumbent;
    bool all_tied = true;
    std::vector<int> kept;
    for (int i : alive_) {
      const double d = median(i) - ml, noise = lim_.z * std::hypot(error(i), sl);
      // The incumbent leaves only beyond a wider margin: replacing it is the risky step, and
      // the round looks up to max_samples times.
      const bool incumbent = i == incumbent_;
      const bool out = i != lead && d > noise * (incumbent ? z_incumbent / lim_.z : 1) &&
                       (!incumbent || d > lim_.min_gain * ml);
      if (!out) kept.push_back(i);
      if (!out && i != lead && std::fabs(d) + noise >= lim_.min_gain * ml) all_tied = false;
    }
    alive_ = std::move(kept);
    if (alive_.size() == 1 || all_tied || batch_ >= lim_.max_samples) {
      settle_round();
      return;
    }
  }
  // The next batch: the entries still in, rotated by one more than the last.
  order_.clear();
  for (std::size_t k = 0; k < alive_.size(); ++k)
    order_.push_back(alive_[(k + std::size_t(batch_)) % alive_.size()]);
}

void TrialRule::settle_round() {
  auto in = [&](int i) { return std::find(alive_.begin(), alive_.end(), i) != alive_.end(); };
  int w = alive_.empty() ? incumbent_ : alive_[0];
  if (in(incumbent_)) {
    w = incumbent_;
  } else if (in(0)) {
    w = 0;
  } else {
    for (int i : alive_)
      if (median(i) < median(w)) w = i;
  }
  if (round_ == 0 && w != system_) {
    // The refinements of the winner, and of a first-round runner-up that came close.
    int runner = -1;
    for (int i = 0; i < int(refines_.size()); ++i)
      if (refines_[std::size_t(i)] < 0 && i != w && i != system_ && median(i) >= 0 &&
          (runner < 0 || median(i) < median(runner)))
        runner = i;
    const bool close =
        runner >= 0 && median(w) >= 0 && median(runner) <= (1 + lim_.refine_margin) * median(w);
    std::vector<int> second{w};
    for (int of : {w, close ? runner : -1})
      for (int i = 0; i < int(refines_.size()) && of >= 0; ++i)
        if (refines_[std::size_t(i)] == of && second.size() < lim_.refine_entries + 1)
          second.push_back(i);
    if (second.size() > 1) {
      round_ = 1;
      begin(std::move(second), w);
      return;
    }
  }
  winner_ = w;
  const double m = median(w);
  cost_ = m >= 0 ? std::max(0.0, total_ - starts_ * m) : 0;
}

}  // namespace mpia
