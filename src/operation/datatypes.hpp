// What cache keys need of datatypes: whether a handle is predefined, a stable identity for a
// derived one, and the word of any value.
#pragma once

#include <mpi.h>

#include <cstdint>
#include <cstring>
#include <vector>

namespace mpia {

// Whether t is a predefined datatype (its handle can never name another type).
bool predefined(MPI_Datatype t);

// A stable identity for a datatype in a cache key: a predefined handle stands for itself; a
// derived type gets a serial number in an attribute (never copied to duplicates), so a handle
// reused by MPI after MPI_Type_free is a different identity. Appends two words to key.
void push_type_identity(std::vector<std::int64_t>& key, MPI_Datatype type);
// Frees push_type_identity's keyval (at MPI_Finalize, attach.cpp).
void free_type_identity();

template <class T>
std::int64_t word(T v) {
  std::int64_t w = 0;
  static_assert(sizeof(T) <= sizeof w, "argument word too wide");
  std::memcpy(&w, &v, sizeof v);
  return w;
}

}  // namespace mpia
