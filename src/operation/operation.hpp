// Operations (what a request runs), their ownership and their progress.
//
// A persistent request owns an Operation built once at init. Start resets the operation's
// cursor and posts its first round; from then on the operation is "running" and sits in the
// process-wide list of running operations (progress.cpp), which every wait inside the library
// drives: MPIX_Wait/Test on any request, the library's own collectives (init, agreement,
// locality), blocking calls, and the optional progress thread. So requests complete whatever
// order ranks wait on them in, and legal MPI orderings cannot deadlock.
//
// Ownership. An operation's execution is driven by one thread at a time: whoever holds its
// owner lock (taken with try_lock; a thread that cannot take it goes on to other work). Its
// errors are sticky and its own: recorded while running, whoever drives it, and reported only
// by its own Wait/Test, with their real class. A failed execution still runs to its end, so
// after Wait/Test the request is clean: nothing posted, restartable, freeable.
#pragma once

#include "locality/node_map.hpp"
#include "operation/args.hpp"
#include "operation/private_comm.hpp"
#include "schedule/engine.hpp"
#include "util/error.hpp"

#include <mpi.h>

#include <atomic>
#include <memory>
#include <string>
#include <thread>
#include <vector>

namespace mpia {

// The owner locks and the running list's lock: held for a few pointer updates, or by the one
// thread that drives an operation, and almost never contended -- but taken several times by
// every Start + Wait, so they must be cheap there: one atomic exchange to take (none when
// try_lock sees it held), a plain release store to give back. std::mutex costs a call into
// libpthread and an atomic read-modify-write each way (about 60 instructions a pair). A waiter
// spins briefly, then yields its core (the machines this runs on are often oversubscribed).
class SpinLock {
 public:
  bool try_lock() noexcept {
    return !held_.load(std::memory_order_relaxed) &&
           !held_.exchange(true, std::memory_order_acquire);
  }
  void lock() noexcept {
    for (int spins = 0; !try_lock();)
      if (++spins > 64) std::this_thread::yield();
  }
  void unlock() noexcept { held_.store(false, std::memory_order_release); }

 private:
  std::atomic<bool> held_{false};
};

// What one start of an operation makes this rank send; -1 where unknown (the system's own
// collectives; the node counts when the communicator's locality was not computed).
struct Traffic {
  std::int64_t messages = -1, bytes = -1, internode_messages = -1, internode_bytes = -1;
};
// From a schedule built for rank me; node counts from nodes when given.
Traffic traffic_of(const Schedule& schedule, int me, const NodeMap* nodes);

class Operation {
 public:
  Operation() = default;
  virtual ~Operation();
  Operation(const Operation&) = delete;
  Operation& operator=(const Operation&) = delete;

  // What one start makes this rank send, and the algorithm with its resolved parameters in
  // selection syntax: the plan the next start runs (a trial's may change while it runs, so
  // both are copies).
  virtual Traffic traffic() const { return traffic_; }
  void set_traffic(const Traffic& t) { traffic_ = t; }
  virtual std::string algorithm() const { return algorithm_; }
  // What a measured trial tried and chose ("" for an operation that runs no trial; an operation
  // a trial settled on keeps the trial's account).
  virtual std::string trial() const { return trial_; }
  void set_trial(std::string text) { trial_ = std::move(text); }
  // An operation that has become another for good (a settled trial): that one, with this one's
  // tag and progress mode, to run in its place from the next start on; else null. Inactive only.
  virtual std::unique_ptr<Operation> settled_part() { return nullptr; }
  // What it holds: bytes the library allocated (schedule, scratch, staging, the lowered
  // requests' bookkeeping, the copied arrays), persistent MPI requests and derived datatypes.
  virtual Memory memory() const;
  // Active: started and not yet completed by Wait or Test (the MPI request state).
  bool active() const { return active_.load(std::memory_order_acquire); }
  // Still running: a Test now would find it incomplete (a snapshot; read without the owner lock).
  bool running() const { return running_.load(std::memory_order_acquire); }

  // MPI_ERR_REQUEST if active. Allocates nothing.
  void start();
  // Drives running operations until this one is complete; then it is inactive, and its
  // execution's error, if any, is thrown. No-op when inactive.
  void wait();
  // Drives running operations once; true (and inactive, error thrown) when complete.
  bool test();
  // Start and wait for a blocking call's plan, which no other thread and no other wait can
  // see: never put on the running list (while it runs, this thread drives the running ones
  // between its own steps, and lets MPI block when there are none). Its error is thrown.
  void run();

  // The tag this request's messages use; released to the communicator when it is destroyed.
  TagLease tag;
  // Driven by the progress thread too (MPIX_PROGRESS=thread, or info "mpix_progress"="thread"
  // at init). Set before the first start.
  bool threaded = false;

 protected:
  // Posts the first round; returns whether the execution is already complete. Communication
  // errors go to errors_, never thrown.
  virtual bool do_start() = 0;
  // Advances the execution; with block, returns only once it is complete. Returns whether it
  // is complete. Communication errors go to errors_.
  virtual bool do_progress(bool block) = 0;
  // A whole execution for run() when nothing else is running, if the operation has a faster
  // way than do_start + do_progress (LoweredSchedule::run_blocking); false: it did nothing.
  virtual bool do_run() { return false; }
  // For an operation whose executions are another's (trial.cpp), driven under this one's owner
  // lock and never on the running list by itself: the part's do_start / do_progress, its
  // errors recorded as this execution's.
  bool start_part(Operation& part);
  bool progress_part(Operation& part, bool block);
  StickyError errors_;
  std::string algorithm_, trial_;
  Traffic traffic_;

 private:
  friend struct ProgressList;
  // With the owner lock held: advances the execution once (or to its end with block) and, when
  // complete, takes it off the running list. Returns whether it is complete.
  bool drive(bool block);

  SpinLock owner_;
  std::atomic<bool> active_{false};
  std::atomic<bool> running_{false};  // written with owner_ held
  // The running list is intrusive (guarded by its own lock), so Start and Wait allocate
  // nothing.
  Operation* prev_ = nullptr;
  Operation* next_ = nullptr;
  bool linked_ = false;
};

// --- Progress (progress.cpp) -------------------------------------------------------------

// Drives every running operation once (those another thread is driving are skipped). Returns
// whether any was driven.
bool progress_running();
// Whether any operation is running in this process.
bool any_running();
// Completes an MPI request of the library's own (a nonblocking collective, a point-to-point
// message) while driving the running operations: the way the library waits inside its own
// blocking calls. Throws the request's error.
void complete(MPI_Request& request, const char* what);
// The optional progress thread (needs MPI_THREAD_MULTIPLE): it drives the running operations
// that are threaded while the user computes or sits in another MPI call. Started by the first
// threaded request's init (every request is threaded under MPIX_PROGRESS=thread), stopped at
// MPI_Finalize. start_progress_thread returns whether it runs (below MPI_THREAD_MULTIPLE it
// cannot: a warning, once).
bool progress_thread_running();
bool start_progress_thread();
void stop_progress_thread();

// A datatype duplicated at init, so the user may free theirs while the request lives.
class TypeHandle {
 public:
  TypeHandle() = default;
  explicit TypeHandle(MPI_Datatype user);
  ~TypeHandle();
  TypeHandle(const TypeHandle&) = delete;
  TypeHandle& operator=(const TypeHandle&) = delete;
  MPI_Datatype get() const { return type_; }

 private:
  MPI_Datatype type_ = MPI_DATATYPE_NULL;
};

// A schedule lowered by the engine, plus everything it refers to: the private communicator,
// the duplicated datatypes, and for MPI_IN_PLACE a shadow of the receive buffer that Start
// refreshes (the schedule then reads "send" blocks from the shadow).
class ScheduledOperation : public Operation {
 public:
  ScheduledOperation(std::string algorithm, std::shared_ptr<PrivateComm> comm);
  ~ScheduledOperation() override;

  // Builds a block buffer over the n blocks of side, duplicating each distinct datatype (and
  // making one for a block of more elements than an int counts: count_type).
  BlockBuffer bind(const BlockSide& side, int n);
  // For MPI_IN_PLACE: a send buffer that mirrors recv, read from a copy made at each Start.
  BlockBuffer shadow_of(const BlockBuffer& recv);
  void lower(const Schedule& schedule, const BlockBuffer& send, const BlockBuffer& recv, int tag);
  // Lowers another schedule over the buffers of the last lower(), dropping the lowered one
  // (inactive only): the algorithms a trial runs share one binding.
  void relower(const Schedule& schedule, std::string algorithm, const Traffic& traffic);
  Memory memory() const override;

 protected:
  bool do_start() override;
  bool do_progress(bool block) override;
  bool do_run() override;

 private:
  std::shared_ptr<PrivateComm> comm_;
  std::vector<std::unique_ptr<TypeHandle>> types_;
  std::vector<MPI_Datatype> made_;  // count_type's, over the duplicates
  std::unique_ptr<char[]> shadow_;
  const char* shadow_source_ = nullptr;
  std::size_t shadow_bytes_ = 0;
  std::unique_ptr<LoweredSchedule> lowered_;
  BlockBuffer send_, recv_;
  int tag_ = 0;
};

}  // namespace mpia
