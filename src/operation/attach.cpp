#include "operation/attach.hpp"

#include "locality/locality.hpp"
#include "operation/datatypes.hpp"
#include "operation/neighbor_topology.hpp"
#include "operation/nonblocking.hpp"
#include "operation/operation.hpp"
#include "operation/protocol.hpp"
#include "operation/settings.hpp"
#include "operation/trial.hpp"
#include "util/error.hpp"

#include <algorithm>
#include <atomic>
#include <map>
#include <mutex>
#include <set>
#include <vector>

namespace mpia {

namespace {

std::once_flag g_keyvals_once;
int g_keyval = MPI_KEYVAL_INVALID;
int g_self_keyval = MPI_KEYVAL_INVALID;
int g_pending_keyval = MPI_KEYVAL_INVALID;  // a communicator's attach in flight (PendingAttach)
// Every state alive, so that MPI_Finalize frees those of communicators the user never freed.
std::mutex g_states_mutex;
std::set<CommState*> g_states;
// Bumped before any state is deleted: a thread's last lookup is valid while it is unchanged (a
// freed communicator's handle may come back for a new one).
std::atomic<std::uint64_t> g_deleted{0};
struct LastLookup {
  MPI_Comm user = MPI_COMM_NULL;
  CommState* state = nullptr;
  std::uint64_t deleted = ~std::uint64_t(0);
};
thread_local LastLookup t_last;

int delete_pending(MPI_Comm user, int, void* value, void*);

int delete_state(MPI_Comm, int, void* value, void*) {
  auto* state = static_cast<CommState*>(value);
  {
    std::lock_guard<std::mutex> lock(g_states_mutex);
    g_states.erase(state);
  }
  state->comm->user_freed.store(true, std::memory_order_release);
  g_deleted.fetch_add(1, std::memory_order_acq_rel);
  delete state;
  return MPI_SUCCESS;
}

// MPI_Finalize deletes MPI_COMM_SELF's attributes first, while MPI is still usable: the place to
// stop the progress thread and free what we keep on every communicator still alive (MPI never
// deletes MPI_COMM_WORLD's attributes, and a user may finalize without freeing theirs). Some
// MPIs (SimGrid's SMPI) run these callbacks after marking MPI finalized: then nothing can be
// freed and nothing is tried.
int at_finalize(MPI_Comm, int, void*, void*) {
  int finalized = 0;
  MPI_Finalized(&finalized);
  if (finalized) return MPI_SUCCESS;
  stop_progress_thread();
  write_tuning_out();  // what persistent auto requests settled (MPIX_TUNING_OUT)
  std::vector<MPI_Comm> alive;
  {
    std::lock_guard<std::mutex> lock(g_states_mutex);
    // MPI_COMM_SELF's own state goes with MPI_COMM_SELF's attributes, which MPI is deleting
    // now (newest first: it was set after this callback's).
    for (CommState* s : g_states)
      if (s->user != MPI_COMM_SELF) alive.push_back(s->user);
  }
  for (MPI_Comm c : alive) MPI_Comm_delete_attr(c, g_keyval);
  free_protocol();
  free_type_identity();
  MPI_Comm_free_keyval(&g_keyval);
  MPI_Comm_free_keyval(&g_self_keyval);
  MPI_Comm_free_keyval(&g_pending_keyval);
  return MPI_SUCCESS;
}

void ensure_keyvals() {
  std::call_once(g_keyvals_once, [] {
    MPIA_CHECK(MPI_Comm_create_keyval(MPI_COMM_NULL_COPY_FN, delete_state, &g_keyval, nullptr));
    MPIA_CHECK(MPI_Comm_create_keyval(MPI_COMM_NULL_COPY_FN, at_finalize, &g_self_keyval, nullptr));
    MPIA_CHECK(
        MPI_Comm_create_keyval(MPI_COMM_NULL_COPY_FN, delete_pending, &g_pending_keyval, nullptr));
    MPIA_CHECK(MPI_Comm_set_attr(MPI_COMM_SELF, g_self_keyval, nullptr));
  });
}

}  // namespace

std::shared_ptr<PrivateComm> private_duplicate(MPI_Comm comm) {
  MPI_Comm dup = MPI_COMM_NULL;
  MPI_Request r;
  MPIA_CHECK(MPI_Comm_idup(comm, &dup, &r));
  complete(r, "MPI_Comm_idup");
  return std::make_shared<PrivateComm>(dup, "mpi-advance private");
}

CommState* last_comm_state(MPI_Comm user) {
  const LastLookup& l = t_last;
  if (l.user == user && l.state && l.deleted == g_deleted.load(std::memory_order_acquire))
    return l.state;
  return nullptr;
}

CommState* find_comm_state(MPI_Comm user) {
  ensure_keyvals();
  void* value = nullptr;
  int found = 0;
  MPIA_CHECK(MPI_Comm_get_attr(user, g_keyval, &value, &found));
  return found ? static_cast<CommState*>(value) : nullptr;
}

namespace {

// What a state needs of its user's communicator (asked while the user still has it; topology:
// only for an attach, whose user may free the communicator before the neighbor calls are made).
struct Shape {
  int rank = 0, size = 0;
  int tag_ub = 32767;  // what the standard guarantees
  std::shared_ptr<const NeighborTopology> topology;
};
Shape shape_of(MPI_Comm user, bool topology = false) {
  Shape s;
  MPIA_CHECK(MPI_Comm_rank(user, &s.rank));
  MPIA_CHECK(MPI_Comm_size(user, &s.size));
  int* ub = nullptr;
  int found = 0;
  MPIA_CHECK(MPI_Comm_get_attr(user, MPI_TAG_UB, &ub, &found));
  if (found && ub) s.tag_ub = *ub;
  int kind = MPI_UNDEFINED;
  if (topology && MPI_Topo_test(user, &kind) == MPI_SUCCESS && kind != MPI_UNDEFINED)
    s.topology = std::make_shared<const NeighborTopology>(neighbor_topology(user));
  return s;
}

// A state on the private duplicate comm of user, before its settings are agreed.
std::unique_ptr<CommState> new_state(MPI_Comm user, std::shared_ptr<PrivateComm> comm,
                                     const Shape& shape) {
  auto state = std::make_unique<CommState>();
  state->user = user;
  state->comm = std::move(comm);
  state->rank = shape.rank;
  state->size = shape.size;
  state->topology = shape.topology;
  // The top tags are the nonblocking calls' (nonblocking.hpp); persistent requests take 1..range.
  int range = shape.tag_ub - NonblockingState::kSlots;
  const Settings& set = settings();
  if (set.tag_ub > 0) range = std::min(range, set.tag_ub);
  state->comm->tags.set_range(range);
  return state;
}

// The state, its settings agreed, becomes user's.
CommState& install(std::unique_ptr<CommState> state) {
  MPIA_CHECK(MPI_Comm_set_attr(state->user, g_keyval, state.get()));
  {
    std::lock_guard<std::mutex> lock(g_states_mutex);
    g_states.insert(state.get());
  }
  return *state.release();
}

}  // namespace

// The user may free the communicator while its attach is in flight (MPI lets a program free a
// communicator right after starting nonblocking collectives on it: they complete normally). So
// an attach asks nothing of the user's communicator after the call that began it, and keeps the
// state it makes until every deferred call was made: then the state becomes the communicator's
// attribute, as comm_state's would -- or, the user having freed it meanwhile, it stays the
// attach's, goes with it once the deferred calls are done, and its requests raise their errors
// as those of any freed communicator's (PrivateComm::user_freed). An attribute of its own on the
// user's communicator (PendingFreed) tells it of the free, and takes the attach off g_pending
// there and then: a new communicator may get the freed one's handle. (A free in one thread while
// another -- the progress thread -- completes the attach is not guarded against.)
struct PendingFreed {
  std::shared_ptr<PrivateComm> comm;
  PendingAttach* attach;
  bool detaching = false;  // the attach removes it (drained): not a free
};

struct PendingAttach {
  std::mutex m;
  MPI_Comm user = MPI_COMM_NULL;
  MPI_Comm dup = MPI_COMM_NULL;
  MPI_Request request = MPI_REQUEST_NULL;  // the idup's, then the settings allreduce's
  std::int64_t v[2] = {0, 0};
  Shape shape;
  std::shared_ptr<PrivateComm> comm = std::make_shared<PrivateComm>();  // dup, once made
  PendingFreed* freed = nullptr;     // the attribute's value (deleted with the attribute)
  std::unique_ptr<CommState> state;  // once duplicated; until drained (or for good: user freed)
  CommState* installed = nullptr;    // once its settings are agreed
  std::uint64_t tickets = 0, serving = 0;
  bool drained = false;  // attached and every deferred call made: off g_pending
};

namespace {
// The attaches in flight or with deferred calls not yet made, by communicator (guarded by
// g_states_mutex); how many (read without it: none, and a call needs no lookup).
std::map<MPI_Comm, std::shared_ptr<PendingAttach>> g_pending;
std::atomic<int> g_pending_count{0};

// With g_states_mutex held: p is off g_pending.
void unlist(MPI_Comm user, const PendingAttach* p) {
  auto it = g_pending.find(user);
  if (it != g_pending.end() && it->second.get() == p) {
    g_pending.erase(it);
    g_pending_count.fetch_sub(1, std::memory_order_release);
  }
}

// With p.m held: p is done with (attached, its deferred calls made): later calls run directly,
// on the state, now the communicator's attribute -- unless the user freed it.
void drain(PendingAttach& p) {
  if (p.drained || !p.installed || p.serving != p.tickets) return;
  p.drained = true;
  if (p.comm->user_freed.load(std::memory_order_acquire)) {
    p.state->user = p.comm->get();  // what is left of it (neighbor_topology.cpp asks its topology)
    return;
  }
  p.freed->detaching = true;
  MPIA_CHECK(MPI_Comm_delete_attr(p.user, g_pending_keyval));
  p.freed = nullptr;
  install(std::move(p.state));
  std::lock_guard<std::mutex> lock(g_states_mutex);
  unlist(p.user, &p);
}

// Set while this thread advances an attach (p.m held): MPICH deletes a freed communicator's
// attributes only once its last operation -- the idup -- completes, inside the test in advance.
thread_local bool t_advancing = false;

// The user frees the communicator of an attach in flight. Its MPI_Comm_idup is completed first,
// while the communicator is still there (Open MPI 4.1 runs this in MPI_Comm_free, and crashes in
// the progress of an idup whose communicator was freed): MPI_Comm_free is collective, and the
// MPI library progresses the idup on every rank in any call, so this waits for no call of ours
// elsewhere. Not when the idup is completing here (MPICH: t_advancing) or another thread is
// advancing it. The settings' allreduce, on the duplicate, goes on as before.
int delete_pending(MPI_Comm user, int, void* value, void*) {
  auto* f = static_cast<PendingFreed*>(value);
  if (!f->detaching) {
    f->comm->user_freed.store(true, std::memory_order_release);
    std::shared_ptr<PendingAttach> p;
    {
      std::lock_guard<std::mutex> lock(g_states_mutex);
      auto it = g_pending.find(user);
      if (it != g_pending.end() && it->second.get() == f->attach) p = it->second;
      unlist(user, f->attach);
    }
    if (p && !t_advancing) {
      std::unique_lock<std::mutex> lock(p->m, std::try_to_lock);
      // (An error leaves no duplicate: the deferred calls fail with it in advance.)
      if (lock.owns_lock() && !p->state) PMPI_Wait(&p->request, MPI_STATUS_IGNORE);
    }
  }
  delete f;
  return MPI_SUCCESS;
}

// With p.m held: advances p once (block: to its end). Returns the state once installed.
CommState* advance(PendingAttach& p, bool block) {
  if (p.installed) return p.installed;
  struct Advancing {
    bool was = t_advancing;
    Advancing() { t_advancing = true; }
    ~Advancing() { t_advancing = was; }
  } advancing;
  auto ready = [&](const char* what) {
    if (block) {
      complete(p.request, what);
      return true;
    }
    int flag = 0;
    MPIA_CHECK(PMPI_Test(&p.request, &flag, MPI_STATUS_IGNORE));
    return flag != 0;
  };
  if (!p.state) {
    if (!ready("MPI_Comm_idup")) return nullptr;
    p.comm->adopt(p.dup, "mpi-advance private");
    p.state = new_state(p.user, p.comm, p.shape);
    post_settings(*p.state, p.v, &p.request);
  }
  if (!ready("MPI_Iallreduce (settings)")) return nullptr;
  apply_settings(*p.state, p.v);
  p.installed = p.state.get();
  drain(p);
  return p.installed;
}

std::shared_ptr<PendingAttach> find_pending(MPI_Comm user) {
  std::lock_guard<std::mutex> lock(g_states_mutex);
  auto it = g_pending.find(user);
  return it == g_pending.end() ? nullptr : it->second;
}
}  // namespace

bool nonblocking_may_attach(MPI_Comm user) {
#if defined(OPEN_MPI) && OPEN_MPI
  int size = 1;
  MPIA_CHECK(MPI_Comm_size(user, &size));
  return size == 1;
#else
  (void)user;
  return true;
#endif
}

std::unique_ptr<CommState> borrowed_state(MPI_Comm user) {
  std::unique_ptr<CommState> state =
      new_state(user, PrivateComm::borrow(user), shape_of(user, true));
  state->borrowed = true;
  return state;
}

std::shared_ptr<PendingAttach> defer_on(MPI_Comm user, bool attached, std::uint64_t* ticket) {
  if (attached && g_pending_count.load(std::memory_order_acquire) == 0) return nullptr;
  if (auto p = find_pending(user)) {
    std::lock_guard<std::mutex> lock(p->m);
    if (!p->drained) {
      *ticket = p->tickets++;
      return p;
    }
  }
  // Attached meanwhile (by another thread driving the attach): the call runs directly.
  if (attached || find_comm_state(user)) return nullptr;
  auto p = std::make_shared<PendingAttach>();
  p->user = user;
  p->shape = shape_of(user, true);
  MPIA_CHECK(MPI_Comm_idup(user, &p->dup, &p->request));
  p->freed = new PendingFreed{p->comm, p.get()};
  MPIA_CHECK(MPI_Comm_set_attr(user, g_pending_keyval, p->freed));
  *ticket = p->tickets++;
  std::lock_guard<std::mutex> lock(g_states_mutex);
  g_pending[user] = p;
  g_pending_count.fetch_add(1, std::memory_order_release);
  return p;
}

std::shared_ptr<PrivateComm> attach_comm(const PendingAttach& p) { return p.comm; }

CommState* attach_progress(PendingAttach& p) {
  std::unique_lock<std::mutex> lock(p.m, std::try_to_lock);
  if (!lock.owns_lock()) return nullptr;
  return advance(p, false);
}

bool take_turn(PendingAttach& p, std::uint64_t ticket) {
  std::unique_lock<std::mutex> lock(p.m, std::try_to_lock);
  if (!lock.owns_lock() || !p.installed || p.serving != ticket) return false;
  ++p.serving;
  drain(p);
  return true;
}

CommState& comm_state(MPI_Comm user) {
  const std::uint64_t deleted = g_deleted.load(std::memory_order_acquire);
  if (CommState* found = find_comm_state(user)) {
    t_last = LastLookup{user, found, deleted};
    return *found;
  }
  // A nonblocking call began the attach: finished here (the caller waits anyway).
  if (auto p = find_pending(user)) {
    std::lock_guard<std::mutex> lock(p->m);
    return *advance(*p, true);
  }
  auto state = new_state(user, private_duplicate(user), shape_of(user));
  // Settings are agreed once per communicator, here: a rank must never act on an environment
  // its peers do not share.
  agree_settings(*state);
  return install(std::move(state));
}

std::unique_ptr<CommState> derived_comm_state(const CommState& parent) {
  auto state = std::make_unique<CommState>();
  state->user = parent.user;
  // A duplicate of the parent's private communicator: the user's is not touched.
  state->comm = private_duplicate(parent.comm->get());
  state->rank = parent.rank;
  state->size = parent.size;
  state->comm->tags.set_range(parent.comm->tags.ub());
  state->settings_error = parent.settings_error;
  state->settings_error_what = parent.settings_error_what;
  for (std::size_t c = 0; c < state->per.size(); ++c)
    state->per[c].algorithm = parent.per[c].algorithm;
  if (parent.locality) state->locality = std::make_unique<Locality>(*parent.locality);
  return state;
}

const Locality& comm_locality(CommState& st) {
  if (!st.locality)
    st.locality = std::make_unique<Locality>(
        compute_locality(st.comm->get(), st.rank, st.size, settings().locality, complete));
  return *st.locality;
}

void comm_locality_split(CommState& st, MPI_Comm comm, bool by_node, MPI_Comm* newcomm) {
  const NodeMap& m = comm_locality(st).map;
  const int color = by_node ? m.node_of[st.rank] : m.local_of[st.rank];
  MPIA_CHECK(MPI_Comm_split(comm, color, st.rank, newcomm));
}

}  // namespace mpia
