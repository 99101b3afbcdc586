// The decisions of auto's measured trial (operation/trial.hpp), apart from any MPI: which entry
// the next trial start runs, and when the trial has seen enough. Every input is an agreed time
// (the slowest rank's time of one start), so every rank's rule takes the same decisions.
//
// A round tries a set of entries in batches: one start of each entry still in the round, the
// order rotated by one from batch to batch (drift, and what one start leaves behind for the
// next, hit every entry alike). After each batch from the min_samples-th on, with m the median
// of an entry's samples and s its standard error (1.858 x MAD / sqrt(n): the median's, for
// normal noise; at least floor x m, so that equal samples still leave a resolution):
//   - the leader L has the smallest median;
//   - an entry is out when m - m_L > z x sqrt(s^2 + s_L^2) (slower beyond the noise measured);
//     the incumbent (below) needs z_incumbent instead of z, and m - m_L > min_gain x m_L: it
//     stays unless clearly beaten;
//   - the round ends when one entry is left, when every entry left is within min_gain of L
//     beyond the noise (|m - m_L| + z x sqrt(s^2 + s_L^2) < min_gain x m_L: nothing to gain by
//     telling them apart), or after max_samples batches. It keeps the incumbent if it is still
//     in, else the model's pick if still in, else L. At the last look (max_samples) the
//     incumbent's margin is z_final: the earlier looks' wide margin pays for looking up to
//     max_samples times (each look could be the one where noise favours ours); the last look is
//     one test, so a narrower margin keeps the chance of a wrong switch about as small, and a
//     lead the noise hid until then is still taken (a group-sequential test's boundary).
// The first round's incumbent is the MPI library's own call (`system`) when the list has it,
// else the model's pick: ours replaces the MPI library's only where it is faster beyond the
// noise (on two ranks the model's pick is the incumbent: TrialLimits::pick_incumbent).
// When the first round keeps one of ours that has refinements (its parameter
// neighbours, collective/shortlist.hpp), or a runner-up within refine_margin of it has, a
// second round tries them against it, the first round's winner the incumbent. The trial's cost
// is what its starts took beyond the settled entry's median.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

namespace mpia {

struct TrialLimits {
  int min_samples = 3;             // batches before anything is decided
  int max_samples = 20;            // batches at most per round (test_trial_rule.cpp: why 20)
  double z = 3.0;                  // separation, in standard errors
  double z_incumbent = 4.0;        // the same, for leaving the incumbent behind
  double z_final = 2.5;            // the incumbent's, at a round's last look (max_samples)
  double min_gain = 0.02;          // what replacing the incumbent must gain; closer is a tie
  double floor = 0.002;            // the least standard error, relative to the median
  double refine_margin = 0.15;     // a first-round runner-up this close has its refinements tried
  std::size_t refine_entries = 6;  // second-round entries at most, besides the incumbent
  // Where every entry is the same one exchange (two ranks), times cannot tell the entries
  // apart, only what each costs around it: the first round's incumbent is then the model's
  // pick (its direct exchange), not the MPI library's call, which behind this library's request
  // layer costs more (scripts/perf_persistent.sh); the call still wins where it is faster
  // beyond the incumbent's margin.
  bool pick_incumbent = false;
};

class TrialRule {
 public:
  // refines[i]: -1 for a first-round entry, else the first-round entry that entry i refines.
  // Entry 0 is the model's pick; system: the MPI library's own call's entry, or -1.
  TrialRule(std::vector<int> refines, int system, TrialLimits limits = {});

  // The entry the next trial start runs; -1 once settled.
  int next() const { return winner_ >= 0 ? -1 : order_[std::size_t(at_)]; }
  // The agreed time of the start that ran next().
  void record(double seconds);
  // The current batch (nothing is decided inside one): its starts, and the entry of its k-th
  // (0 <= k < batch_size()), for a caller that records a whole batch at once.
  int batch_size() const { return winner_ >= 0 ? 0 : int(order_.size()); }
  int batch_entry(int k) const { return order_[std::size_t(k)]; }

  int winner() const { return winner_; }
  int round() const { return round_; }                        // 0, or 1 for the refinements
  const std::vector<int>& entries() const { return alive_; }  // the round's entries still in
  int starts() const { return starts_; }                      // recorded starts
  int bound() const;  // the trial's starts at most (both rounds, at the limits)
  // The median of entry i's samples in the last round it ran in (< 0: none).
  double median(int i) const;
  int samples(int i) const { return int(samples_[std::size_t(i)].size()); }
  int system() const { return system_; }
  // Once settled: what the trial's starts took beyond the winner's median, in total.
  double cost() const { return cost_; }

 private:
  void begin(std::vector<int> entries, int incumbent);
  void batch_done();
  void settle_round();
  double error(int i) const;

  std::vector<int> refines_;
  int system_;
  TrialLimits lim_;
  std::vector<std::vector<double>> samples_;  // this round's, per entry (earlier rounds kept)
  std::vector<int> alive_, order_;
  int at_ = 0, batch_ = 0, round_ = 0, incumbent_ = 0, winner_ = -1, starts_ = 0;
  double total_ = 0, cost_ = 0;
};

// The median of v (v is reordered); v not empty.
double median_of(std::vector<double> v);

}  // namespace mpia
