// Alltoall schedule builders. They make no MPI call (see schedule/schedule.hpp).
#pragma once

#include "schedule/schedule.hpp"

#include <cstdint>
#include <vector>

namespace mpia {

struct AlltoallShape {
  int rank = 0;
  int size = 1;
  std::int64_t block_bytes = 0;  // packed bytes from one rank to one rank
};

// The three data placements of the radix-r Bruck exchange (bruck_family.cpp).
enum class BruckVariant : std::uint8_t {
  Basic,     // Bruck et al. / TRA as published: rotate into R, receive into T, unpack, rotate out
  Modified,  // Traff et al.'s modified Bruck: reversed direction, R is the receive buffer
  ZeroCopy,  // modified direction, blocks alternate between receive buffer and scratch and are
             // sent straight from the send buffer on their first hop: no rotation, no unpacking
};

Schedule build_radix_bruck(const AlltoallShape& shape, int radix, BruckVariant variant);

// The zero-copy radix-r exchange for blocks of different sizes (alltoallv "bruck"): matrix
// holds the packed bytes of every pair, row-major (matrix[src * P + dst]). Blocks in transit
// alternate between two scratch areas; zero-byte blocks and empty messages are left out.
Schedule build_radix_bruck_v(int rank, int nranks, int radix,
                             const std::vector<std::int64_t>& matrix);

// The direct exchange for per-peer sizes: one round, exchange i (i = 1..P-1) sends to rank+i
// and receives from rank-i, leaving out zero-byte transfers and exchanges with nothing to move
// (so a window counts only real exchanges).
Schedule build_direct_v(int rank, const std::vector<std::int64_t>& send_bytes,
                        const std::vector<std::int64_t>& recv_bytes);

// One round of P-1 exchanges with peers rank+i / rank-i (direct.cpp); the completion policy
// turns it into pairwise (window 1) or linear (all at once).
Schedule build_direct(const AlltoallShape& shape);

// The rounds of the radix-r exchange: the block indices j in [1, P) whose x-th base-r digit is
// z, for x = 0.. and z = 1..r-1, empty sets skipped, j ascending. Shared by the builders, the
// cost model and the tests.
struct DigitRound {
  int x = 0;
  int z = 0;
  std::int64_t distance = 0;  // z * r^x
  std::vector<int> blocks;
};
std::vector<DigitRound> radix_rounds(int nranks, int radix);

// The paper's closed forms (seed 003, Propositions 1-4): rounds K and blocks sent D.
std::int64_t tra_rounds_K(std::int64_t nranks, std::int64_t radix);
std::int64_t tra_blocks_D(std::int64_t nranks, std::int64_t radix);

}  // namespace mpia
