// auto that measures: a persistent request whose shortlist (collective/shortlist.hpp) has
// several entries tries them during its first starts, and then keeps the fastest for good.
// Anchors: STAR-MPI (Faraj, Yuan, Lowenthal, ICS'06: collectives tuned during the application's
// own calls) and ADCL (Gabriel et al.: runtime selection among implementations of a persistent
// operation).
//
// The shortlist always holds the MPI library's own call (`system`: its persistent form where it
// has one), and the trial keeps one of ours only where it is faster beyond the noise measured
// (collective/trial_rule.hpp decides: interleaved batches, the median of the slowest rank's
// time, eliminations beyond the spread measured, at most TrialRule::bound() starts).
//
// Trial starts are timed from the last rank's arrival (MPIX_TRIAL_SYNC=arrival, the default):
// every start records when this rank called it and when it saw it complete, on a clock common
// to the ranks, and the start's sample is the latest completion less the latest call -- how long
// the exchange ran after its last rank came. The common clock: the first timed start begins with
// an estimate of every rank's MPI_Wtime offset from rank 0's (a binomial tree, log2(P) steps:
// each parent exchanges kSyncPings ping-pongs with its child, keeps the offset of the one with
// the shortest round trip, as NTP does, and sends the child its offset from rank 0). The
// estimate is the communicator's: a later trial on it within kClockReuse seconds of the last one
// (rank 0 decides; its first ping down the tree says so, with the estimate's generation) uses
// every rank's last offset instead, one message per tree edge instead of 2 kSyncPings + 1 (a
// rank that has not completed that estimate yet waits for it). On oversubscribed MPICH at 8
// ranks, where a round trip takes 16 ms, the estimate was 0.4 s of every persistent init. A
// barrier's exit is no common origin: measured at P = 2 on a two-core machine, the two ranks left
// one 65-90 us apart (each sees it when it next polls), 200 times a 1-byte exchange -- every sample
// was then one rank's own time, wait for the other included. What an application's imbalance (a
// late rank) costs every entry alike is not in the sample; how an entry takes staggered arrivals is
// (a direct exchange is mostly through when the last rank comes; a multi-round one runs whole after
// it). With MPIX_TRIAL_SYNC=barrier every start begins with a barrier and its sample is the slowest
// rank's time from there. The MPI library's call, an MPI collective that must be made in the same
// order on every rank, is made on a communicator of the request's own (persistent requests: a
// PrivateComm of its own, made at init), or inside the blocking call that every rank is making (a
// blocking collective's plan). The rule decides nothing inside a batch (one start of each entry
// still in, in an order fixed when the batch began), so the times are agreed once per batch: its
// last start ends with a dissemination max-reduction of the batch's times over the ranks (log2(P)
// rounds on the same tag, a vector of two values per start), before that start completes; every
// rank then holds the same samples and its rule takes the same decisions, naming the same entries
// for the next batch, or the same winner. (Once per start, the reduction cost oversubscribed MPICH
// at 8 ranks, where a message round takes milliseconds, 4x the starts' own time: MPICH's
// p_alltoallv test took 154 s under auto against 35 s without the trial.) The clock estimate's, the
// barrier's and the reduction's messages and the data keep their order on every pair (one tag,
// posted in the same order on every rank; the estimate's receives name their source, and a pair's
// estimate is done before either sends it data): none matches another's receive. Every start is a
// complete, correct execution of the collective: only the schedule differs. The start that learns
// the winner completes with it; from the next on, the request is the winner itself
// (settled_part).
//
// Bounded: one lowered plan at a time (the scheduled entries share the request's bound buffers
// and are lowered in turn; the MPI library's call is made once, at construction, and dropped
// with its communicator once another entry wins); no trial for a tuning-file rule, an explicit
// algorithm, MPIX_AUTO=model or info mpix_auto=model.
#pragma once

#include "collective/registry.hpp"
#include "collective/trial_rule.hpp"
#include "operation/operation.hpp"

#include <mpi.h>

#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

namespace mpia {

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
  std::unique_ptr<TrialRule> rule;  // made by the first operation of the trial
  int winner = -1;                  // settled entry, -1 while trying
  std::string shown;                // what MPIX_Request_get_trial says (guarded by the op's mutex)
  // MPIX_TRIAL_SYNC=arrival: this rank's MPI_Wtime less rank 0's, estimated by the first timed
  // start (clocked from then on).
  double offset = 0;
  bool clocked = false;
  // The rule's current batch so far: this rank's times of its starts (arrival: completion and
  // call, on rank 0's clock; barrier: the elapsed time), agreed all at once by its last start.
  std::vector<double> batch;
  int batch_at = 0;  // starts of the batch made
};

// Makes the operation of the MPI library's own call over the request's buffers.
using SystemMaker = std::function<std::unique_ptr<Operation>()>;

class TrialOperation : public Operation {
 public:
  // exec: bound to the request's buffers, lowered with entries[0]'s schedule on tag. state:
  // the trial so far (a new one when null). system: makes the MPI library's call over the same
  // buffers, for the entry that is not scheduled (called once, here).
  TrialOperation(std::unique_ptr<ScheduledOperation> exec, std::vector<TrialEntry> entries,
                 std::shared_ptr<PrivateComm> comm, int tag, const TrialPoint& point,
                 std::shared_ptr<TrialState> state, const SystemMaker& system);
  ~TrialOperation() override;

  std::string algorithm() const override;
  Traffic traffic() const override;
  std::string trial() const override;
  // Once settled: the winner itself (the request then runs it with no trial layer in between,
  // so a settled request costs what its entry costs).
  std::unique_ptr<Operation> settled_part() override;
  // Its binding and the MPI library's operation, and every entry's schedule.
  Memory memory() const override;

 protected:
  bool do_start() override;
  bool do_progress(bool block) override;

 private:
  bool begin_data();
  double clock() const;  // MPI_Wtime (skewed under MPIX_TRIAL_SKEW, for tests)
  void begin_sync();
  bool sync(bool block);
  bool clock_from_communicator();
  void post_barrier();
  bool barrier(bool block);
  bool rounds_done(bool block);  // the two requests of a barrier or reduction round
  bool data_done();
  void agreed();
  void post_round();
  bool reduce(bool block);
  void settle();
  void show_round();
  void use(int entry);
  Operation& part();
  double measured(int entry, double seconds);
  std::string name(int entry) const { return entries_[std::size_t(entry)].selection.to_string(); }

  std::unique_ptr<ScheduledOperation> exec_;
  std::unique_ptr<Operation> system_;
  std::vector<TrialEntry> entries_;
  std::shared_ptr<PrivateComm> comm_;
  int tag_, rank_ = 0, size_ = 1;
  TrialPoint point_;
  int current_ = 0;  // the entry this start runs
  int lowered_ = 0;  // the entry lowered in exec_
  int system_entry_ = -1;
  std::shared_ptr<TrialState> state_;
  double t0_ = 0;
  bool timing_ = false;  // this start is a trial start (timed)
  bool barrier_ = false, reducing_ = false, syncing_ = false;
  // The clock estimate (begin_sync): this rank's steps, as (peer, whether it is this rank's
  // parent), the step and ping-pong under way, and what the best round trip so far gave.
  std::vector<std::pair<int, bool>> sync_steps_;
  std::size_t sync_step_ = 0;
  int sync_ping_ = 0, sync_phase_ = 0;
  double sync_sent_ = 0, sync_rtt_ = 0, sync_est_ = 0;
  double sync_out_ = 0, sync_in_ = 0;
  int sync_reuse_ = 0;      // > 0: the communicator's estimate of that generation serves (reuse)
  bool part_done_ = false;  // this start's part (the entry's operation) is complete
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
