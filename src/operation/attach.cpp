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

CommState& comm_state(MPI_Comm user) {
  ensure_keyvals();
  void* value = nullptr;
  int found = 0;
  const std::uint64_t deleted = g_deleted.load(std::memory_order_acquire);
  MPIA_CHECK(MPI_Comm_get_attr(user, g_keyval, &value, &found));
  if (found) {
    t_last = LastLookup{user, static_cast<CommState*>(value), deleted};
    return *static_cast<CommState*>(value);
  }
  auto state = std::make_unique<CommState>();
  state->user = user;
  state->comm = private_duplicate(user);
  MPIA_CHECK(MPI_Comm_rank(user, &state->rank));
  MPIA_CHECK(MPI_Comm_size(user, &state->size));
  int* ub = nullptr;
  int range = 32767;  // what the standard guarantees
  MPIA_CHECK(MPI_Comm_get_attr(user, MPI_TAG_UB, &ub, &found));
  if (found && ub) range = *ub;
  // The top tags are the nonblocking calls' (nonblocking.hpp); persistent requests take 1..range.
  range -= NonblockingState::kSlots;
  const Settings& set = settings();
  if (set.tag_ub > 0) range = std::min(range, set.tag_ub);
  state->comm->tags.set_range(range);
  // Settings are agreed once per communicator, here: a rank must never act on an environment
  // its peers do not share.
  agree_settings(*state);
  MPIA_CHECK(MPI_Comm_set_attr(user, g_keyval, state.get()));
  {
    std::lock_guard<std::mutex> lock(g_states_mutex);
    g_states.insert(state.get());
  }
  return *state.release();
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
