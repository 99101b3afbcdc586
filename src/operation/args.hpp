// The arguments of the collectives as the library carries them inside: every count and every
// displacement 64-bit, whichever entry point they came through (the int forms, MPI-4's
// large-count _c forms, alltoallw's MPI_Aint byte displacements). The caller's arrays are not
// copied: Int64Array reads an int, MPI_Count or MPI_Aint array as 64-bit values, so the int
// forms and the _c forms share one path and one set of algorithms.
#pragma once

#include <mpi.h>

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <type_traits>

namespace mpia {

// A read-only view of a caller's array of 32- or 64-bit signed integers, read as 64-bit.
class Int64Array {
 public:
  Int64Array() = default;
  template <class T>
  Int64Array(const T* p) : p_(p), wide_(sizeof(T) == 8) {  // NOLINT: implicit on purpose
    static_assert(std::is_integral<T>::value && std::is_signed<T>::value &&
                      (sizeof(T) == 4 || sizeof(T) == 8) && sizeof(int) == 4,
                  "an array of 32- or 64-bit signed integers");
  }
  std::int64_t operator[](std::size_t i) const {
    if (!wide_) return static_cast<const std::int32_t*>(p_)[i];
    std::int64_t v;  // MPI_Count and MPI_Aint are distinct 64-bit types: read the bytes
    std::memcpy(&v, static_cast<const char*>(p_) + 8 * i, sizeof v);
    return v;
  }
  bool null() const { return p_ == nullptr; }

 private:
  const void* p_ = nullptr;
  bool wide_ = false;
};

// One side (send or receive) of a v- or w-form call: block i is counts[i] elements of
// type_at(i) at buf + displs[i] extents of `type` (v form) or displs[i] bytes (w form: one
// datatype per block).
struct BlockSide {
  const void* buf = nullptr;
  Int64Array counts, displs;
  MPI_Datatype type = MPI_DATATYPE_NULL;  // v form: every block's
  bool w = false;                         // w form: types[i], displacements in bytes
  const MPI_Datatype* types = nullptr;
  MPI_Datatype type_at(std::size_t i) const { return w ? types[i] : type; }
};

inline BlockSide v_side(const void* buf, Int64Array counts, Int64Array displs, MPI_Datatype type) {
  BlockSide s;
  s.buf = buf, s.counts = counts, s.displs = displs, s.type = type;
  return s;
}
inline BlockSide w_side(const void* buf, Int64Array counts, Int64Array byte_displs,
                        const MPI_Datatype* types) {
  BlockSide s;
  s.buf = buf, s.counts = counts, s.displs = byte_displs, s.w = true, s.types = types;
  return s;
}

struct AlltoallArgs {
  const void* sendbuf = nullptr;
  std::int64_t sendcount = 0;
  MPI_Datatype sendtype = MPI_DATATYPE_NULL;
  void* recvbuf = nullptr;
  std::int64_t recvcount = 0;
  MPI_Datatype recvtype = MPI_DATATYPE_NULL;
  // Called through a large-count (_c) entry point: the System record calls the MPI library's
  // _c function where it has one.
  bool large = false;
  bool in_place() const { return sendbuf == MPI_IN_PLACE; }
};

// MPIX_Alltoallv and the three neighbor calls (their regular form carried as the v form).
struct AlltoallvArgs {
  BlockSide send, recv;
  // MPIX_Neighbor_alltoall: its counts, so that the System record calls MPI_Neighbor_alltoall.
  bool regular = false;
  std::int64_t sendcount = 0, recvcount = 0;
  bool large = false;  // as AlltoallArgs::large
  bool in_place() const { return send.buf == MPI_IN_PLACE; }
};

}  // namespace mpia
