// MPIX_Alltoallv / MPIX_Alltoallv_init: argument checks, agreement and building the operation
// (alltoallv.cpp); its entry points are declared with the other collectives'.
#pragma once

#include "collective/model.hpp"
#include "collective/registry.hpp"
#include "operation/args.hpp"
#include "operation/comm_state.hpp"
#include "operation/entry_points.hpp"
#include "operation/operation.hpp"

#include <mpi.h>

#include <cstdint>
#include <memory>
#include <vector>

namespace mpia {

// This rank's view: packed bytes to and from every peer, and its share of the statistics.
struct AlltoallvSizes {
  std::vector<std::int64_t> send_bytes, recv_bytes;
  AlltoallvStats local;
};

// Checks one side's n blocks (counts, displacements, types, buffer) and gives their packed
// bytes. The arrays may be NULL when n is 0. Displacements may be negative (a base pointer at
// the end of the buffer is legal MPI). comm: see check_type.
void check_blocks(const BlockSide& s, int n, const char* side, std::vector<std::int64_t>& bytes,
                  MPI_Comm comm);

// Appends what identifies one side's n blocks in a plan's key: counts, displacements and (w
// form) every block's type (type_word: push_type_identity, or the handle's word).
template <class TypeWord>
void push_side_words(std::vector<std::int64_t>& key, const BlockSide& s, int n,
                     TypeWord&& type_word) {
  for (int i = 0; i < n; ++i) {
    key.push_back(s.counts[i]);
    key.push_back(s.displs[i]);
    if (s.w) type_word(s.types[i]);
  }
}

}  // namespace mpia
