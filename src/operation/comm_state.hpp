// What the library keeps per user communicator, as an MPI attribute: a private duplicate (its
// traffic can never match the user's, not even MPI_ANY_SOURCE/MPI_ANY_TAG receives), the tags
// of its live requests, whether its ranks' settings agree, per-communicator algorithm choices,
// the plan cache of blocking calls, locality and topology. Freed by the attribute's delete
// callback: MPI_Comm_free, or MPI_Finalize for every communicator still alive then.
#pragma once

#include "collective/registry.hpp"
#include "operation/args.hpp"

#include <mpi.h>

#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <vector>

namespace mpia {

class Operation;
struct AgreedPlan;
struct Locality;
struct NeighborTopology;

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
class PrivateComm {
 public:
  explicit PrivateComm(MPI_Comm user);
  // Takes over comm, a communicator the library made itself (MPI_Dist_graph_create_adjacent for
  // an MPIX_Topo's "system" algorithm): freed with this object.
  struct Adopt {};
  PrivateComm(MPI_Comm comm, Adopt);
  ~PrivateComm();
  PrivateComm(const PrivateComm&) = delete;
  PrivateComm& operator=(const PrivateComm&) = delete;
  MPI_Comm get() const { return comm_; }
  TagAllocator tags;
  // Set when the user frees their communicator: errors of requests that outlive it are then
  // raised on MPI_COMM_SELF. Atomic: the attribute's delete callback sets it in the thread
  // that frees the communicator while another thread may be completing one of its requests.
  std::atomic<bool> user_freed{false};

 private:
  MPI_Comm comm_ = MPI_COMM_NULL;
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

struct CommState {
  MPI_Comm user = MPI_COMM_NULL;
  std::shared_ptr<PrivateComm> comm;
  int rank = 0;
  int size = 1;
  // Agreed at the first call: MPI_ERR_ARG (and why) when the ranks' settings differ. Every call
  // on the communicator then fails with it, on every rank.
  int settings_error = MPI_SUCCESS;
  std::string settings_error_what;
  // MPIX_Comm_set_algorithm's choice per collective ("" = the environment's), agreed.
  std::string algorithm[3];
  // Blocking calls. The selection resolved for the last default and key (block size, or
  // auto's agreed statistics) is kept, so a repeated call parses nothing and runs no model;
  // and the last call's plan is kept with the raw argument words it was built for, so a
  // repeated call builds nothing. Comparing reuses call_words' capacity: no allocation.
  struct Memo {
    int collective = -1;
    std::string text;
    std::int64_t key = 0;
    Selection selection;
  } memo;
  std::uint64_t memo_serial = 0;  // counts the memo's rewrites (blocking_selection)
  std::unique_ptr<Operation> cached;
  std::vector<std::int64_t> cached_words, call_words;
  // A blocking alltoall repeated with the same arguments: those of the call that built cached
  // for a settled selection (no trial running), the memo as it was then. While the memo, cached
  // and the arguments are unchanged, a call runs cached at once: its checks passed on these
  // arguments (predefined types only), and the selection, the trial state and whatever else
  // ranks must do alike follow from the memo, which every rank keeps alike.
  struct Repeat {
    bool valid = false;
    std::uint64_t memo_serial = 0;
    AlltoallArgs args;
    const Selection* selection = nullptr;
  } repeat;
  // The agreed plan cache of blocking alltoallv and neighbor calls whose algorithm needs
  // agreement (auto, bruck, locality): plans built collectively like a persistent init, kept
  // per pattern (this rank's counts, displacements, types), used only when every rank hits the
  // same entry (run_agreed in common.hpp). Entries and their ids are created, used and evicted
  // in step on every rank.
  struct PlanCache {
    static constexpr std::size_t kEntries = 16;
    struct Entry {
      std::int64_t id = -1;
      int collective = -1;
      std::vector<std::int64_t> key;
      std::shared_ptr<AgreedPlan> plan;
      std::unique_ptr<Operation> op;  // the plan lowered for these buffers
      const void* sendbuf = nullptr;
      const void* recvbuf = nullptr;
      std::uint64_t used = 0;
      Entry();
      Entry(Entry&&) noexcept;
      Entry& operator=(Entry&&) noexcept;
      ~Entry();
    };
    std::vector<Entry> entries;
    std::int64_t next_id = 0;
    std::uint64_t clock = 0;
    std::vector<std::int64_t> key;  // this call's (scratch: no allocation)
    // Hashes of the patterns of the last kRecent uncached calls: a pattern found here is
    // "seen before" (a false match only costs an agreed build, never a wrong plan).
    static constexpr std::size_t kRecent = 16;
    std::uint64_t recent[kRecent] = {};
    std::size_t recent_next = 0;
    // Calls of each collective on the agreed path (the same count on every rank), and whether
    // the last agreed plan is a direct exchange: then calls agree only every kReagree-th call.
    static constexpr std::uint64_t kReagree = 64;
    std::uint64_t calls[3] = {0, 0, 0};
    bool direct[3] = {false, false, false};
    // Whether the default text path_text[c] takes the agreed path (agreed_blocking).
    std::string path_text[3];
    int path[3] = {-1, -1, -1};
  } plans;
  // Blocking calls under auto that measure: the trial of each memo key (the block size of an
  // alltoall; pipeline.hpp), created, run and dropped in step on every rank (every rank makes the
  // same calls).
  struct BlockingTrial {
    int collective = -1;
    std::int64_t key = -1;
    std::string text;  // the default algorithm text it was made under
    std::shared_ptr<AgreedPlan> plan;
  };
  static constexpr std::size_t kBlockingTrials = 8;
  std::vector<BlockingTrial> trials;
  // What the last blocking call of each collective ran (MPIX_REPORT only): MPIA_Comm_last_call.
  struct LastCall {
    std::string algorithm;
    bool hit = false;
  } last[3];
  // Node map, package and NUMA of every rank: computed by the first call that needs it.
  std::unique_ptr<Locality> locality;
  // The process topology's neighbors, read at the first neighbor call (a topology never
  // changes); an MPIX_Topo's state has its own from the start.
  std::unique_ptr<NeighborTopology> topology;
  // A communicator with MPI's own process topology for the "system" neighbor algorithm of an
  // MPIX_Topo (whose private communicator has none): created collectively by the first call
  // that runs "system" (neighbor.cpp).
  std::shared_ptr<PrivateComm> graph;
  ~CommState();

  // Throws the settings disagreement, if any.
  void check_settings() const;
  // The communicator's default algorithm text for c: MPIX_Comm_set_algorithm's, else the
  // environment's ("" = auto).
  const std::string& default_algorithm(Collective c) const;
};

// Collective on the first call for a communicator: duplicates it and agrees on the settings,
// driving running operations while it waits.
CommState& comm_state(MPI_Comm user);
// The state comm_state returned last on this thread for user, while no state has been deleted
// since; else nullptr. A hit costs no MPI call: blocking calls look their state up on every call.
CommState* last_comm_state(MPI_Comm user);

// A state of its own over the ranks of parent, attached to no communicator (an MPIX_Topo's; its
// owner deletes it): a new private duplicate of parent's, parent's agreed settings, algorithm
// choices and locality (when computed). Collective over parent.
std::unique_ptr<CommState> derived_comm_state(const CommState& parent);

// The communicator's locality, computed the first time (collective; see locality/), else
// cached.
const Locality& comm_locality(CommState& state);
// The cached locality, or nullptr if nothing has needed it yet (local).
const Locality* cached_locality(const CommState& state);

}  // namespace mpia
