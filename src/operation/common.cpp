#include "operation/common.hpp"

#include "locality/locality.hpp"
#include "operation/settings.hpp"

#include <atomic>
#include <cstddef>

namespace mpia {

// A blocking call asks this of its types several times (argument checks, plan cache), and
// MPI_Type_get_envelope costs about 90 instructions: a predefined handle stays predefined, so
// the last few seen are remembered. (Only positive answers: a derived type's handle may be
// reused for another type once freed.)
bool predefined(MPI_Datatype t) {
  constexpr std::size_t kSeen = 8;
  static std::atomic<MPI_Datatype> seen[kSeen];  // zero: not a handle MPI hands out
  static std::atomic<std::size_t> next{0};
  if (t != MPI_Datatype())
    for (const auto& s : seen)
      if (s.load(std::memory_order_relaxed) == t) return true;
  int ni, na, nd, combiner;
  MPIA_CHECK(MPI_Type_get_envelope(t, &ni, &na, &nd, &combiner));
  if (combiner != MPI_COMBINER_NAMED) return false;
  seen[next.fetch_add(1, std::memory_order_relaxed) % kSeen].store(t, std::memory_order_relaxed);
  return true;
}

void check_type(MPI_Datatype type, MPI_Comm comm, const char* which) {
  if (type == MPI_DATATYPE_NULL)
    fail(MPI_ERR_TYPE, std::string("mpi-advance: ") + which + " is MPI_DATATYPE_NULL");
  if (predefined(type)) return;
  char in = 0, out = 0;
  int position = 0;
  if (MPI_Pack(&in, 0, type, &out, 0, &position, comm) != MPI_SUCCESS)
    fail(MPI_ERR_TYPE, std::string("mpi-advance: ") + which +
                           " is not a committed datatype (MPI_Type_commit it first)");
}

void check_buffer(const void* buf, std::int64_t bytes, MPI_Datatype type, const char* which) {
  if (buf != nullptr || bytes == 0) return;
  MPI_Aint tlb, textent;
  MPIA_CHECK(MPI_Type_get_true_extent(type, &tlb, &textent));
  if (tlb >= 0 && tlb < 4096)
    fail(MPI_ERR_BUFFER, std::string("mpi-advance: null ") + which + " with a non-zero count");
}

ExtentOf extent_of(CommState& st) {
  return [&st](const AlgorithmSpec& a) {
    if (!a.needs_locality) return Extent(st.size);
    const NodeMap& m = comm_locality(st).map;
    return Extent(st.size, m.nnodes(), m.max_local());
  };
}

void blocking_machine(CommState& st, Collective c) {
  if (cached_locality(st)) return;
  const CommState::Memo& m = st.memo;
  if (m.collective == int(c) && m.text == st.default_algorithm(c)) return;  // decided before
  if (select_algorithm(c, MPI_INFO_NULL, st.default_algorithm(c), extent_of(st)).algorithm->kind ==
      AlgorithmKind::Auto)
    comm_locality(st);
}

bool wants_progress_thread(MPI_Info info) {
  if (info != MPI_INFO_NULL) {
    char value[16] = {};
    int flag = 0;
    MPIA_CHECK(MPI_Info_get(info, "mpix_progress", int(sizeof value) - 1, value, &flag));
    if (flag) {
      const std::string v(value);
      if (v == "thread") return true;
      if (v == "calls") return false;
      fail(MPI_ERR_INFO_VALUE, "mpi-advance: info mpix_progress='" + v +
                                   "' (expected thread or calls)");
    }
  }
  return settings().progress == ProgressMode::Thread;
}

mpia_request* make_request(MPI_Comm user, CommState& st, std::unique_ptr<Operation> op) {
  if (op->threaded) op->threaded = start_progress_thread();
  auto handle = std::make_unique<mpia_request>();
  handle->comm = user;
  handle->library_comm = st.comm;
  handle->op = std::move(op);
  return handle.release();
}

void debug_agree(CommState& st, std::unique_ptr<Error> local, const Selection* sel,
                 std::int64_t same) {
  Proposal p;
  p.error = std::move(local);
  if (sel) p.choice = sel->to_string();
  p.same = same;
  agree(st, p);
}

}  // namespace mpia
