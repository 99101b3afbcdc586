// Alltoall schedule builders. They make no MPI call (see schedule/schedule.hpp).
#pragma once

#include "locality/node_map.hpp"
#include "schedule/schedule.hpp"

#include <cstdint>
#include <functional>
#include <utility>
#include <vector>

namespace mpia {

struct AlltoallShape {
  int rank = 0;
  int size = 1;
  std::int64_t block_bytes = 0;    // packed bytes from one rank to one rank
  const NodeMap* nodes = nullptr;  // set for algorithms that need_locality
};

// The three data placements of the radix-r Bruck exchange (bruck_family.cpp).
enum class BruckVariant : std::uint8_t {
  Basic,     // Bruck et al. / TRA as published: rotate into R, receive into T, unpack, rotate out
  Modified,  // Traff et al.'s modified Bruck: reversed direction, R is the receive buffer
  ZeroCopy,  // modified direction, blocks alternate between receive buffer and scratch and are
             // sent straight from the send buffer on their first hop: no rotation, no unpacking
};

Schedule build_radix_bruck(const AlltoallShape& shape, int radix, BruckVariant variant);

// The packed bytes of the block from src to dst. Builders ask only for the pairs they need;
// each says which.
using PairBytes = std::function<std::int64_t(int src, int dst)>;

// The zero-copy radix-r exchange for blocks of different sizes (alltoallv "bruck"). Blocks in
// transit alternate between two scratch areas; zero-byte blocks and empty messages are left
// out. It asks bytes() for this rank's own blocks (src = rank) and, after every round, for the
// blocks it then holds: radix_block_after(rank, P, j, r^(x+1)) for the slots j the round moved
// (those of radix_rounds). Running the same rounds on the sizes themselves tells a rank exactly
// these (operation/alltoallv.cpp), with no P x P matrix anywhere.
Schedule build_radix_bruck_v(int rank, int nranks, int radix, const PairBytes& bytes);

// The radix-r exchange for the small blocks, the large ones sent directly (alltoallv "hybrid",
// collective/alltoallv/hybrid.cpp): the zero-copy radix-r exchange of build_radix_bruck_v on
// the sizes with every block above `threshold` bytes counted as empty (the block to self is
// never sent: it is copied whatever its size), plus one direct transfer for each block above
// it: the one to rank + i and the one from rank - i are one exchange, placed in round i mod K
// of the K radix rounds, so the large transfers are spread over the rounds and overlap them.
// It asks bytes() for what build_radix_bruck_v asks, and takes every answer above the
// threshold as a large block (the size exchange at init carries them as 0).
Schedule build_hybrid_v(int rank, int nranks, int radix, std::int64_t threshold,
                        const PairBytes& bytes);

// The block that sits in slot j of rank p once the digits below r^(x+1) = processed are done
// (zero-copy placement): the one from source p + (j mod processed) to destination
// p - (j - j mod processed), modulo P.
std::pair<int, int> radix_block_after(int p, int nranks, int j, std::int64_t processed);

// The direct exchange for per-peer sizes: one round, exchange i (i = 1..P-1) sends to rank+i
// and receives from rank-i, leaving out zero-byte transfers and exchanges with nothing to move
// (so a window counts only real exchanges).
Schedule build_direct_v(int rank, const std::vector<std::int64_t>& send_bytes,
                        const std::vector<std::int64_t>& recv_bytes);

// One round of P-1 exchanges with peers rank+i / rank-i (direct.cpp); the completion policy
// turns it into pairwise (window 1) or linear (all at once).
Schedule build_direct(const AlltoallShape& shape);

// The two-level exchange (TRA2, seed 003 section IV), generalised to any placement and to
// nodes of different sizes (two_level.cpp). Phase 1, within each node: a radix-r1 exchange in
// which every rank hands each block to its node's "port" for the destination's lane (lane =
// the destination's local rank; port = the local rank lane mod ranks-on-this-node). Phase 2,
// across nodes: one radix-r2 exchange per lane among the lane's ports (one per node), each
// message carrying, for one destination, the blocks of every rank of the sending node; the
// port on the destination node is the destination itself. bytes(src, dst) gives every pair's
// packed size (a constant for alltoall). With merge_digits, the rounds of one base-r digit run
// as one round (they move disjoint blocks): radix >= size then means one direct round.
// With both radices at least their phase's size (alltoallv "locality": both phases direct) it
// asks bytes() only for this rank's own blocks (as source or destination) and for those from
// the other ranks of its node to the destinations it is the port for (two_level_lane_pairs).
// With lane_bytes (alltoallv "locality_radix": a radix-r exchange between nodes, which
// forwards other nodes' bundles), phase 2 asks lane_bytes(lane, i, j) for the bundles of the
// other nodes i instead of summing bytes() over their ranks: the pairs build_radix_bruck_v asks
// for in the exchange among the lane's N ports (node indices), learnt at init.
using LaneBytes = std::function<std::int64_t(int lane, int from_node, int to_node)>;
Schedule build_two_level(int rank, const NodeMap& nodes, int radix_intra, int radix_inter,
                         const PairBytes& bytes, bool merge_digits,
                         const LaneBytes& lane_bytes = nullptr);

// The base of the radix exchange among n participants that build_two_level runs for radix r.
int two_level_radix(int r, int n);

// The destinations this rank is the phase-1 port for (ascending): those d with
// local(d) mod Q = local(rank), Q the size of this rank's node.
std::vector<int> two_level_served(int rank, const NodeMap& nodes);

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
