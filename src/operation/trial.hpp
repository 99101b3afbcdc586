// auto that measures: a persistent request whose model shortlist (collective/shortlist.hpp) has
// several entries tries them during its first starts, and then keeps the fastest for good.
// Anchors: STAR-MPI (Faraj, Yuan, Lowenthal, ICS'06: collectives tuned during the application's
// own calls) and ADCL (Gabriel et al.: runtime selection among implementations of a persistent
// operation).
//
// The trial is a fixed sequence, the same on every rank, in two rounds. First round: starts
// 0..R-1 run the model's pick, R..2R-1 the second first-round entry, and so on (R =
// kTrialStarts; at most 4 such entries). Every start is a complete, correct execution of the
// collective: only the schedule differs. Each rank keeps, per entry, its fastest start (start to
// observed completion: noise only ever adds). When the round's last start's data exchange is
// complete, the request agrees on the result before it completes: a max-reduction of those
// times over the ranks (the slowest rank sets the pace), log2(P) rounds of one message each way
// on the request's own tag (its messages cannot meet another request's, and come after all of
// this start's data on every pair: no reordering with the data of the next start). Every rank
// then holds the same vector and takes the same round winner: the fastest, unless it is less
// than kKeepMargin faster than the model's pick (noise must not flip a good pick). Second round,
// when there is something to refine: the winner's refinements (its parameter neighbours,
// shortlist.hpp), then the runner-up's when the runner-up was within kRefineMargin of the winner
// (a family that came close may hide a better parameter: issue 18's tra radix 4, behind tra2
// where tra radix 8 came second), at most kRefineEntries, kRefineStarts starts each; another
// agreement, and the fastest of the winner and the refinements (the model's pick, when it won
// the first round, again kept unless beaten by kKeepMargin; a measured winner has no such
// claim). At most 4 x 2 + 6 x 2 = 20 starts. From the next start on, only the settled entry runs.
//
// Bounded: one lowered plan at a time (the entries share the request's bound buffers and are
// lowered in turn, at the first start of each; schedules are built at init, where the entries'
// sizes are learnt, except the second round's of a collective whose schedules are local to build:
// those at the start that lowers them); no trial for a shortlist of one, a tuning-file rule, an
// explicit algorithm, MPIX_AUTO=model or info mpix_auto=model.
#pragma once

#include "collective/registry.hpp"
#include "operation/operation.hpp"

#include <mpi.h>

#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

namespace mpia {

constexpr int kTrialStarts = 2;         // starts per first-round entry
constexpr int kRefineStarts = 2;        // starts per second-round entry
constexpr int kRefineEntries = 6;       // second-round entries at most
constexpr double kRefineMargin = 0.15;  // a runner-up this close is refined too
constexpr double kKeepMargin = 0.05;    // the model's pick stays unless beaten by more

struct TrialEntry {
  Selection selection;
  int refines = -1;  // -1: a first-round entry; else the first-round entry it refines
  std::shared_ptr<const Schedule> schedule;
  Traffic traffic;
  // Set instead of schedule for an entry whose schedule is local to build (an alltoall's) and
  // that may never run (the second round's): built when it is lowered and dropped after, so a
  // trial holds the first round's schedules and one more, not up to 20 (P = 4096: 0.4-2.3 MB
  // each); it fills traffic.
  std::function<std::shared_ptr<const Schedule>(Traffic& traffic)> build;
  bool scheduled() const { return schedule || build; }  // not the system's own collective
};

// Where a settled trial is recorded (MPIX_TUNING_OUT): the point a tuning rule would match.
struct TrialPoint {
  Collective collective = Collective::Alltoall;
  int nranks = 1, nnodes = 1;
  std::int64_t bytes = 0;  // as tuning rules count them (find_rule)
};

// What a trial has learnt so far. Shared by the operations that run one trial over different
// buffers: the blocking calls' plan cache lowers an entry anew when a call's buffers moved, and
// the trial goes on where it was (every rank runs the same entry on the same call: its hits are
// agreed).
struct TrialState {
  int starts = 0;               // completed starts
  int winner = -1;              // settled entry, -1 while trying
  int refining = -1;            // the first round's winner, once the second round begins
  std::vector<int> second;      // the second round's entries
  std::vector<double> fastest;  // this rank's fastest start per entry (s)
  std::string shown;            // what MPIX_Request_get_trial says (guarded by the op's mutex)
};

class TrialOperation : public Operation {
 public:
  // exec: bound to the request's buffers, lowered with entries[0]'s schedule on tag. state:
  // the trial so far (a new one when null).
  TrialOperation(std::unique_ptr<ScheduledOperation> exec, std::vector<TrialEntry> entries,
                 std::shared_ptr<PrivateComm> comm, int tag, const TrialPoint& point,
                 std::shared_ptr<TrialState> state = nullptr);
  ~TrialOperation() override;

  std::string algorithm() const override;
  Traffic traffic() const override;
  std::string trial() const override;
  // Once settled: the lowered winner itself (the request then runs it with no trial layer in
  // between, so a settled request costs what its entry costs).
  std::unique_ptr<Operation> settled_part() override;

 protected:
  bool do_start() override;
  bool do_progress(bool block) override;

 private:
  // The data exchange of this start completed: records its time; true when the start is
  // complete, false when the agreement has begun.
  bool data_done();
  void post_round();
  bool reduce(bool block);
  void settle();
  // The entry start number n of the trial runs; the entries of the round under way.
  int entry_for(int n) const;
  int first_round() const;  // the first round's entries (entries_[0, first_round()))
  std::vector<int> round() const;
  void use(int entry);
  double measured(int entry, double seconds) const;

  std::unique_ptr<ScheduledOperation> exec_;
  std::vector<TrialEntry> entries_;
  std::shared_ptr<PrivateComm> comm_;
  int tag_, rank_ = 0, size_ = 1;
  TrialPoint point_;
  int current_ = 0;  // the entry lowered in exec_
  std::shared_ptr<TrialState> state_;
  double t0_ = 0;
  bool timing_ = false;  // this start is a trial start (timed)
  bool reducing_ = false;
  int distance_ = 1;
  std::vector<double> agreed_, incoming_;
  MPI_Request reqs_[2] = {MPI_REQUEST_NULL, MPI_REQUEST_NULL};
  mutable std::mutex shown_mutex_;  // the names shown to other threads (and state_->shown)
  std::string shown_algorithm_;
  Traffic shown_traffic_;
};

// Writes the settled trials to MPIX_TUNING_OUT (rank 0 of MPI_COMM_WORLD, at finalize).
void write_tuning_out();

}  // namespace mpia
