#include "operation/attach.hpp"

#include "locality/locality.hpp"
#include "operation/datatypes.hpp"
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
  return MPI_SUCCESS;
}

void ensure_keyvals() {
  std::call_once(g_keyvals_once, [] {
    MPIA_CHECK(MPI_Comm_create_keyval(MPI_COMM_NULL_COPY_FN, delete_state, &g_keyval, nullptr));
    MPIA_CHECK(MPI_Comm_create_keyval(MPI_COMM_NULL_COPY_FN, at_finalize, &g_self_keyval, nullptr));
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

// A state on the private duplicate comm of user, before its settings are agreed.
std::unique_ptr<CommState> new_state(MPI_Comm user, std::shared_ptr<PrivateComm> comm) {
  auto state = std::make_unique<CommState>();
  state->user = user;
  state->comm = std::move(comm);
  MPIA_CHECK(MPI_Comm_rank(user, &state->rank));
  MPIA_CHECK(MPI_Comm_size(user, &state->size));
  int* ub = nullptr;
  int found = 0;
  int range = 32767;  // what the standard guarantees
  MPIA_CHECK(MPI_Comm_get_attr(user, MPI_TAG_UB, &ub, &found));
  if (found && ub) range = *ub;
  // The top tags are the nonblocking calls' (nonblocking.hpp); persistent requests take 1..range.
  range -= NonblockingState::kSlots;
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

struct PendingAttach {
  std::mutex m;
  MPI_Comm user = MPI_COMM_NULL;
  MPI_Comm dup = MPI_COMM_NULL;
  MPI_Request request = MPI_REQUEST_NULL;  // the idup's, then the settings allreduce's
  std::int64_t v[2] = {0, 0};
  std::unique_ptr<CommState> state;  // once duplicated
  CommState* installed = nullptr;    // once attached
  std::uint64_t tickets = 0, serving = 0;
  bool drained = false;  // attached and every deferred call made: off g_pending
};

namespace {
// The attaches in flight or with deferred calls not yet made, by communicator (guarded by
// g_states_mutex); how many (read without it: none, and a call needs no lookup).
std::map<MPI_Comm, std::shared_ptr<PendingAttach>> g_pending;
std::atomic<int> g_pending_count{0};

// With p.m held: p is done with (attached, its deferred calls made): later calls run directly.
void drain(PendingAttach& p) {
  if (p.drained || !p.installed || p.serving != p.tickets) return;
  p.drained = true;
  std::lock_guard<std::mutex> lock(g_states_mutex);
  auto it = g_pending.find(p.user);
  if (it != g_pending.end() && it->second.get() == &p) {
    g_pending.erase(it);
    g_pending_count.fetch_sub(1, std::memory_order_release);
  }
}

// With p.m held: advances p once (block: to its end). Returns the state once installed.
CommState* advance(PendingAttach& p, bool block) {
  if (p.installed) return p.installed;
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
    p.state = new_state(p.user, std::make_shared<PrivateComm>(p.dup, "mpi-advance private"));
    post_settings(*p.state, p.v, &p.request);
  }
  if (!ready("MPI_Iallreduce (settings)")) return nullptr;
  apply_settings(*p.state, p.v);
  p.installed = &install(std::move(p.state));
  drain(p);
  return p.installed;
}

std::shared_ptr<PendingAttach> find_pending(MPI_Comm user) {
  std::lock_guard<std::mutex> lock(g_states_mutex);
  auto it = g_pending.find(user);
  return it == g_pending.end() ? nullptr : it->second;
}
}  // namespace

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
  MPIA_CHECK(MPI_Comm_idup(user, &p->dup, &p->request));
  *ticket = p->tickets++;
  std::lock_guard<std::mutex> lock(g_states_mutex);
  g_pending[user] = p;
  g_pending_count.fetch_add(1, std::memory_order_release);
  return p;
}

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
  auto state = new_state(user, private_duplicate(user));
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

}  // namespace mpia
