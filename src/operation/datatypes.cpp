#include "operation/datatypes.hpp"

#include "util/error.hpp"

#include <atomic>
#include <cstddef>
#include <mutex>

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

namespace {

// push_type_identity's keyval: created by its first use, freed at MPI_Finalize
// (free_type_identity). Never created again after that: MPI cannot be initialised twice.
std::once_flag g_type_keyval_once;
int g_type_keyval = MPI_KEYVAL_INVALID;

}  // namespace

void free_type_identity() {
  // Attributes still on the user's types keep the keyval alive inside MPI until they go.
  if (g_type_keyval != MPI_KEYVAL_INVALID) MPI_Type_free_keyval(&g_type_keyval);
}

void push_type_identity(std::vector<std::int64_t>& key, MPI_Datatype type) {
  if (predefined(type)) {
    key.push_back(0);
    key.push_back(word(type));
    return;
  }
  // Duplicates do not inherit the serial (MPI_TYPE_NULL_COPY_FN).
  std::call_once(g_type_keyval_once, [] {
    MPIA_CHECK(MPI_Type_create_keyval(MPI_TYPE_NULL_COPY_FN, MPI_TYPE_NULL_DELETE_FN,
                                      &g_type_keyval, nullptr));
  });
  static std::atomic<std::int64_t> serial{0};
  void* value = nullptr;
  int flag = 0;
  MPIA_CHECK(MPI_Type_get_attr(type, g_type_keyval, &value, &flag));
  if (!flag) {
    value = reinterpret_cast<void*>(static_cast<std::intptr_t>(++serial));
    MPIA_CHECK(MPI_Type_set_attr(type, g_type_keyval, value));
  }
  key.push_back(1);
  key.push_back(static_cast<std::int64_t>(reinterpret_cast<std::intptr_t>(value)));
}

}  // namespace mpia
