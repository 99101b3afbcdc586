// auto that measures: a persistent request whose model shortlist (collective/shortlist.hpp) has
// several entries tries them during its first starts, and then keeps the fastest for good.
// Anchors: STAR-MPI (Faraj, Yuan, Lowenthal, ICS'06: collectives tuned during the application's
// own calls) and ADCL (Gabriel et al.: runtime selection among implementations of a persistent
// operation).
//
// The trial is a fixed sequence, the same on every rank: starts 0..R-1 run the model's pick,
// R..2R-1 the second entry, and so on (R = kTrialStarts; at most 4 entries, so it ends within 16
// starts). Every start is a complete, correct execution of the collective: only the schedule
// differs. Each rank keeps, per entry, its fastest start (start to observed completion: noise
// only ever adds). When the last trial start's data exchange is complete, the request agrees
// on the result before it completes: a max-reduction of those times over the ranks (the slowest
// rank sets the pace), log2(P) rounds of one message each way on the request's own tag (its
// messages cannot meet another request's, and come after all of this start's data on every
// pair: no reordering with the data of the next start). Every rank then holds the same vector
// and settles on the same entry: the fastest, unless it is less than kKeepMargin faster than
// the model's pick (noise must not flip a good pick). From the next start on, only that entry
// runs.
//
// Bounded: one lowered plan at a time (the entries share the request's bound buffers and are
// lowered in turn, at the first start of each; schedules are built at init, where the entries'
// sizes are learnt); no trial for a shortlist of one, a tuning-file rule, an explicit
// algorithm, MPIX_AUTO=model or info mpix_auto=model.
#pragma once

#include "collective/registry.hpp"
#include "operation/operation.hpp"

#include <mpi.h>

#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

namespace mpia {

constexpr int kTrialStarts = 4;       // starts per shortlist entry
constexpr double kKeepMargin = 0.05;  // the model's pick stays unless beaten by more

struct TrialEntry {
  Selection selection;
  std::shared_ptr<const Schedule> schedule;
  Traffic traffic;
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
