// What an algorithm record's cost function works with (collective/model.hpp explains the
// model): the machine, the agreed statistics of a call, and the coefficients of the model's
// constants a schedule incurs, with the pieces the records share to count them.
#pragma once

#include <algorithm>
#include <array>
#include <cstdint>
#include <vector>

namespace mpia {

// The machine a communicator runs on, as the model sees it.
struct Machine {
  int nranks = 1;
  int nnodes = 1;
  int ppn = 1;          // the most ranks on one node
  bool blocked = true;  // every node holds ppn consecutive ranks (block placement)
  static Machine flat(int nranks) { return Machine{nranks, 1, nranks < 1 ? 1 : nranks, true}; }
};

// The statistics of one call that every rank agrees on (each the maximum over ranks: the slowest
// rank sets the pace). A collective fills what it knows and leaves the rest 0.
struct Stats {
  std::int64_t max_block = 0;      // alltoall: the block; alltoallv: the largest block any rank
                                   // sends; neighbor: the largest message on any edge
  std::int64_t rank_bytes = 0;     // alltoallv: most bytes one rank sends
  std::int64_t rank_messages = 0;  // alltoallv: most non-empty blocks one rank sends
  std::int64_t remote_edges = 0;   // neighbor: most out-edges of one rank that leave its node
  std::int64_t remote_nodes = 0;   // neighbor: most distinct other nodes one rank's edges reach;
                                   // alltoallv: its non-empty blocks (0: priced as all)
};

// The constants of CostModel (model.hpp), in its order, and the number of a prediction's terms.
constexpr int kModelTerms = 10;
using TermArray = std::array<double, kModelTerms>;

// Coefficients of the model's constants, in CostModel's order (o_intra, o_inter, lat_intra,
// lat_inter, 1/bw_intra, 1/bw_inter, 1/bw_copy, o_recv_intra, o_recv_inter, g_inflight), plus
// the structural counts for tests.
struct Terms {
  TermArray c{};  // messages sent intra, inter, latencies intra/inter, bytes on one intra flow,
                  // bytes through one NIC, bytes copied, messages received intra, inter,
                  // messages in flight through the NIC beyond one exchange per rank
  // Two costs that overlap (linear: the CPU posting every message while the NIC drains the
  // first ones; flat radix exchanges whose ranks fall out of step, cost.cpp): the time is
  // c + max(cpu, wire).
  TermArray cpu{}, wire{};
  std::int64_t rounds = 0;    // dependent rounds (K, or K1 + K2)
  std::int64_t blocks = 0;    // blocks a rank sends, forwarded ones included (D, D1 + D2)
  std::int64_t messages = 0;  // messages a rank sends
};

// What the records' cost formulas (AlgorithmSpec::cost_formula) are, and their notation, symbol and
// meaning:
// a call's agreed statistics (Stats), the model's constants (CostModel, model.hpp) and the
// helpers below that the cost functions compose, each in the words of its code. The listings
// print it (mpia_info, docs/algorithms.md): a helper that changes changes its line here.
inline constexpr const char* kCostFormulas =
    "Each formula is the time the cost model predicts for one call on P > 1 ranks (0 on one), "
    "linear in its constants, which MPIX_COST_MODEL or a tuning file's model line set "
    "(scripts/calibrate.py fits them); auto picks the least.";
struct CostSymbol {
  const char* symbol;
  const char* meaning;
};
inline constexpr CostSymbol kCostNotation[] = {
    {"P, N, Q", "the ranks, the nodes, the most ranks on one node"},
    {"B",
     "the largest block (alltoall: the block; alltoallv: the largest block any rank sends; "
     "neighbor_alltoallv: the largest message on an edge)"},
    {"S, M", "alltoallv: the most bytes and the most non-empty blocks one rank sends"},
    {"b", "alltoallv: the block a rank forwards, min(B, S/P) (B when S is not known)"},
    {"E", "neighbor_alltoallv: the most out-edges of one rank that leave its node"},
    {"R",
     "the most other nodes one rank's edges (neighbor_alltoallv) or non-empty blocks (alltoallv; "
     "N-1 when not known) reach"},
    {"o_intra, o_inter, o_recv_intra, o_recv_inter",
     "CPU time per message sent, and per message received, within a node and between nodes"},
    {"lat_intra, lat_inter", "latency within a node and between nodes"},
    {"bw_intra, bw_inter, bw_copy",
     "bytes/s of one flow within a node, of a node's NIC (shared by the flows of its ranks), of "
     "local copies"},
    {"g_inflight", "time per message in flight through a node's NIC beyond one exchange per rank"},
    {"msg_intra, msg_inter",
     "a message's overheads, o_intra + o_recv_intra within a node, o_inter + o_recv_inter between "
     "nodes"},
    {"round(x, f)",
     "one round in which every rank sends one message of x bytes and receives one: msg_intra + "
     "lat_intra + x/bw_intra when f = 0, msg_inter + lat_inter + f x/bw_inter when f > 0 ranks of "
     "a node send off it at once (sharing its NIC); plus 2x/bw_copy when the message holds more "
     "than one block (packed, then unpacked)"},
    {"f(d)",
     "the ranks of a node whose peer at distance d (rank + d mod P) is on another node: 0 on one "
     "node, min(d, Q, P-d) when every node holds Q consecutive ranks, Q otherwise"},
    {"k(n, r, i, z)",
     "of the units 1..n-1 of a radix-r exchange among n participants, those whose i-th base-r "
     "digit is z: what its round (i, z) moves"},
    {"radix(n, r, x, f)",
     "the radix-r exchange among n participants of units of x bytes (seed 003): the sum, over "
     "digit positions i with r^i < n and digit values z = 1..r-1, of round(k x, f(z r^i)), k = "
     "k(n, r, i, z) (rounds with k = 0 omitted): K rounds moving D = the sum of the k units "
     "(seed 003, Props. 1-4); f may be a constant"},
    {"out_of_step(T, r)",
     "T; but where N > 1, every node holds Q consecutive ranks and Q is a power of r above r, a "
     "node's ranks fall out of step: 0.3 (A + W) + 0.7 max(A, W), A the overheads and latencies "
     "of T, W its transfers (its copies unchanged)"},
    {"G(q, k)",
     "2q(k-1) when k > 1, else 0: the messages in flight through a node's NIC beyond one exchange "
     "per rank when each of its q ranks has k off-node exchanges outstanding"},
    {"direct(m, s, w)",
     "a rank's direct exchange of m messages of s bytes in all (as many received), w of its "
     "off-node exchanges in flight at once: lat + G(Q, w phi) g_inflight + max(m ((1-phi) "
     "msg_intra + phi msg_inter), B/bw_intra + Q s phi/bw_inter), phi = (P-Q)/(P-1) the share of "
     "its peers off its node, lat = lat_inter on several nodes, lat_intra on one"},
    {"max(a, b)", "CPU overheads and transfers that overlap: the longer counts"},
    {"[c]", "1 when c holds, else 0"},
};

namespace detail {

// Indices into a TermArray.
enum Term : int {
  kMsgIntra,
  kMsgInter,
  kLatIntra,
  kLatInter,
  kBytesIntra,
  kBytesNic,
  kBytesCopy,
  kRecvIntra,
  kRecvInter,
  kInflight
};

// Messages in flight through a node's NIC when each of its q ranks has k off-node exchanges
// (a send and a receive each) outstanding at once, beyond the one exchange per rank that every
// round of a round-by-round schedule has: what g_inflight is charged for.
inline double inflight_beyond_one(double q, double k) { return k > 1 ? 2 * q * (k - 1) : 0.0; }

// The blocks of a radix-r exchange among n participants whose j-th digit (in base r) at
// position x (weight rx) is z: the round (x, z) of seed 003 (the same count as tra_blocks_D's
// terms).
std::int64_t round_blocks(std::int64_t n, std::int64_t rx, std::int64_t r, std::int64_t z);

// One round in which every rank sends one message of `bytes` and receives one; `nic_flows`
// ranks of each node send theirs off the node at once (0: all intra-node).
void add_round(Terms& t, double bytes, std::int64_t nic_flows, std::int64_t blocks);

// The radix-r exchange (seed 003) among n participants whose unit (a block, or a bundle of
// `per` blocks travelling together) is `unit` bytes; nic_flows(d): how many ranks of a node
// send off the node in a round of distance d.
template <class NicFlows>
void add_radix(Terms& t, std::int64_t n, std::int64_t r, double unit, std::int64_t per,
               NicFlows nic_flows) {
  for (std::int64_t rx = 1; rx < n; rx *= r)
    for (std::int64_t z = 1; z < r; ++z) {
      const std::int64_t m = round_blocks(n, rx, r, z);
      if (m > 0) add_round(t, double(m) * unit, nic_flows(z * rx), m * per);
    }
}

// The direct exchange of a rank with `messages` non-empty blocks of `bytes` in all (the largest
// max_block) to peers spread over the communicator, as linear alltoall with the rank's real
// message count and bytes (as many received as sent), `window` of its off-node exchanges in
// flight at once.
Terms direct_terms(const Machine& m, std::int64_t messages, std::int64_t bytes,
                   std::int64_t max_block, std::int64_t window);

// Whether q is a power of r above r (a flat radix exchange whose digits end at the node's
// boundary), and the overlap of such an exchange's rounds (cost.cpp says why).
bool power_of(std::int64_t q, std::int64_t r);
void overlap_rounds(Terms& t);

// The block size at which an alltoallv that forwards other pairs' blocks (bruck, hybrid's small
// blocks, locality_radix's bundles) is priced: the heaviest sender's mean block (its bytes over
// P, empty blocks counted), at most the largest block; the largest where the statistics hold no
// byte counts. Not the largest block: a few large blocks among many small ones (power-law
// counts) do not make every forwarded block large (issue 19: bruck priced that way was never
// tried where it was 1.23x faster than what the trial settled on). Nor the heaviest receiver's:
// a radix exchange's last rounds converge on a destination, but pricing every round so put
// locality_radix out of the trial at hot-spot counts (P = 64, 4 KiB: 1.57x).
double forwarded_block(const Machine& m, const Stats& st);

// Ranks of a node whose peer at distance d (rank + d mod P) is on another node.
std::int64_t flat_flows(const Machine& m, std::int64_t d);

// Every radix up to 64, then steps of about 6 % up to n (the cost is smooth there): the
// radices a search weighs.
std::vector<std::int64_t> radix_ladder(std::int64_t n);

}  // namespace detail

}  // namespace mpia
