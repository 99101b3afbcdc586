#include "persistent/comm_state.hpp"

#include "collective/neighbor/neighbor.hpp"
#include "locality/locality.hpp"
#include "persistent/request.hpp"
#include "util/error.hpp"

namespace mpia {

namespace {

int g_keyval = MPI_KEYVAL_INVALID;
int g_self_keyval = MPI_KEYVAL_INVALID;

int delete_state(MPI_Comm, int, void* value, void*) {
  auto* state = static_cast<CommState*>(value);
  state->comm->user_freed = true;
  delete state;
  return MPI_SUCCESS;
}

// MPI_Finalize deletes MPI_COMM_SELF's attributes first, while MPI is still usable: the place to
// free what we cached on MPI_COMM_WORLD, whose attributes MPI never deletes.
int at_finalize(MPI_Comm, int, void*, void*) {
  if (g_keyval != MPI_KEYVAL_INVALID) {
    // Deleting an attribute that is not there is an error (raised on MPI_COMM_WORLD's
    // handler, fatal by default): look first.
    void* value = nullptr;
    int found = 0;
    if (MPI_Comm_get_attr(MPI_COMM_WORLD, g_keyval, &value, &found) == MPI_SUCCESS && found)
      MPI_Comm_delete_attr(MPI_COMM_WORLD, g_keyval);
    MPI_Comm_free_keyval(&g_keyval);
  }
  MPI_Comm_free_keyval(&g_self_keyval);
  return MPI_SUCCESS;
}

void ensure_keyvals() {
  if (g_keyval != MPI_KEYVAL_INVALID) return;
  MPIA_CHECK(MPI_Comm_create_keyval(MPI_COMM_NULL_COPY_FN, delete_state, &g_keyval, nullptr));
  MPIA_CHECK(MPI_Comm_create_keyval(MPI_COMM_NULL_COPY_FN, at_finalize, &g_self_keyval, nullptr));
  MPIA_CHECK(MPI_Comm_set_attr(MPI_COMM_SELF, g_self_keyval, nullptr));
}

}  // namespace

PrivateComm::PrivateComm(MPI_Comm user) {
  MPIA_CHECK(MPI_Comm_dup(user, &comm_));
  // Internal failures come back as codes and are raised on the user's communicator instead.
  MPIA_CHECK(MPI_Comm_set_errhandler(comm_, MPI_ERRORS_RETURN));
  MPIA_CHECK(MPI_Comm_set_name(comm_, "mpi-advance private"));
}

PrivateComm::~PrivateComm() {
  int finalized = 0;
  MPI_Finalized(&finalized);
  if (!finalized && comm_ != MPI_COMM_NULL) MPI_Comm_free(&comm_);
}

int CommState::allocate_tag() {
  const int t = next_tag;
  next_tag = next_tag >= tag_ub ? 1 : next_tag + 1;
  return t;
}

CommState::~CommState() = default;

CommState& comm_state(MPI_Comm user) {
  ensure_keyvals();
  void* value = nullptr;
  int found = 0;
  MPIA_CHECK(MPI_Comm_get_attr(user, g_keyval, &value, &found));
  if (found) return *static_cast<CommState*>(value);
  auto state = std::make_unique<CommState>();
  state->comm = std::make_shared<PrivateComm>(user);
  MPIA_CHECK(MPI_Comm_rank(user, &state->rank));
  MPIA_CHECK(MPI_Comm_size(user, &state->size));
  int* ub = nullptr;
  MPIA_CHECK(MPI_Comm_get_attr(user, MPI_TAG_UB, &ub, &found));
  if (found && ub) state->tag_ub = *ub;
  MPIA_CHECK(MPI_Comm_set_attr(user, g_keyval, state.get()));
  return *state.release();
}

}  // namespace mpia
