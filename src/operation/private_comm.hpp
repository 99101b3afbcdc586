// A private communicator (the library's duplicate of a user's: its traffic can never match the
// user's, not even MPI_ANY_SOURCE/MPI_ANY_TAG receives) and the tags of its live requests: what an
// operation runs on (operation.hpp) and what a communicator's state holds (comm_state.hpp).
#pragma once

#include <mpi.h>

#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <set>

namespace mpia {

struct NonblockingState;

// The tags of one private communicator. Blocking calls and the point-to-point messages of
// persistent init use tag 0 (they never overlap one another: they are collectives on the
// communicator, which every rank calls in the same order); every live persistent request holds
// its own tag in 1..ub, never shared with another live request of the communicator. Which tag
// a new request gets is agreed in its init's allreduce (protocol.cpp) from the tags every rank
// still holds: requests are freed locally, so one rank may still hold a tag its peers have
// released. The window is kWindow tags from a cursor every rank keeps in step.
class TagAllocator {
 public:
  static constexpr int kWords = 4;
  static constexpr int kWindow = 64 * kWords;

  void set_range(int ub);
  int ub() const { return ub_; }
  // This rank's view of the window at the cursor: bit k set = tag window_tag(k) is held here
  // (bits past the range are set too).
  void window(std::uint64_t (&bits)[kWords]) const;
  int window_tag(int k) const { return 1 + int((std::int64_t(cursor_) - 1 + k) % ub_); }
  int window_size() const { return ub_ < kWindow ? ub_ : kWindow; }
  // After agreement: holds tag and moves the cursor past it; or moves the cursor to the next
  // window.
  void hold(int tag);
  void skip_window();
  void release(int tag);

 private:
  mutable std::mutex mutex_;  // release() may run in any thread
  std::set<int> live_;
  int ub_ = 32767;
  int cursor_ = 1;
};

// The private duplicate. Requests hold it by shared_ptr so it outlives the user's
// MPI_Comm_free while a persistent request still uses it.
// Made by private_duplicate (attach.hpp), or over a communicator the library made itself
// (MPI_Dist_graph_create_adjacent for an MPIX_Topo's "system" algorithm).
class PrivateComm {
 public:
  // Takes over comm (freed with this object): its errors return, and it is named `name`.
  PrivateComm(MPI_Comm comm, const char* name);
  // One whose communicator is still being made (a nonblocking attach's MPI_Comm_idup): adopt
  // takes it over once it is.
  PrivateComm() = default;
  // The user's own communicator, borrowed (not freed, its settings untouched): for a call that
  // only hands the MPI library its own collective (borrowed_state, attach.hpp).
  static std::shared_ptr<PrivateComm> borrow(MPI_Comm user);
  void adopt(MPI_Comm comm, const char* name);
  ~PrivateComm();
  PrivateComm(const PrivateComm&) = delete;
  PrivateComm& operator=(const PrivateComm&) = delete;
  MPI_Comm get() const { return comm_; }
  TagAllocator tags;
  // Set when the user frees their communicator: errors of requests that outlive it are then
  // raised on MPI_COMM_SELF. Atomic: the attribute's delete callback sets it in the thread
  // that frees the communicator while another thread may be completing one of its requests.
  std::atomic<bool> user_freed{false};
  // Its nonblocking calls' tags, sequence and idle plans (nonblocking.hpp): made by the first.
  std::shared_ptr<NonblockingState> nonblocking;
  // The trials' clock estimate on this communicator (operation/trial.hpp): this rank's MPI_Wtime
  // less rank 0's, as of the generation-th estimate this rank completed; on rank 0, when it did.
  struct TrialClock {
    std::mutex mutex;
    int generation = 0;
    double offset = 0, when = 0;
  } trial_clock;

 private:
  MPI_Comm comm_ = MPI_COMM_NULL;
  bool owned_ = true;
};

// A tag held by a live request, released when the request is freed.
class TagLease {
 public:
  TagLease() = default;
  TagLease(std::shared_ptr<PrivateComm> comm, int tag) : comm_(std::move(comm)), tag_(tag) {}
  ~TagLease() {
    if (comm_ && tag_ > 0) comm_->tags.release(tag_);
  }
  TagLease(TagLease&& o) noexcept : comm_(std::move(o.comm_)), tag_(o.tag_) { o.tag_ = 0; }
  TagLease& operator=(TagLease&& o) noexcept {
    std::swap(comm_, o.comm_);
    std::swap(tag_, o.tag_);
    return *this;
  }
  int get() const { return tag_; }

 private:
  std::shared_ptr<PrivateComm> comm_;
  int tag_ = 0;
};

}  // namespace mpia
