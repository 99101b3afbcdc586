// The two-level exchange (TRA2), built by composing two radix-r zero-copy exchanges: one over
// the ranks of this rank's node, then one per lane over the nodes. The sub-exchanges are built
// by build_radix_bruck_v on "bundles" (all the blocks that travel together), and their pieces
// are then rewritten into this rank's real blocks and scratch (compose()).
//
// Seed 003 assumes Q ranks on every node, placed in blocks. Here a node may hold any number
// of ranks at any ranks of the communicator:
//  - lanes are 0..L-1 (L = the most ranks on a node); destination d is in lane local(d);
//  - on a node of Q ranks, lane l's port is local rank l mod Q, so a rank of a small node
//    serves several lanes and every lane has exactly one port per node;
//  - phase 1 (intra-node): rank s gives every block for lane l to its node's port of l (its
//    own node's destinations arrive at their final place here: the port of lane local(d) on
//    d's own node is d);
//  - phase 2 (inter-node): lane l runs a radix-r2 exchange among its N ports. The bundle from
//    node i to node j holds the blocks of every rank of i for rank l of j (empty if j has no
//    rank l), received straight into the receive buffer by that rank, which is j's port of l.
// With Q ranks on every node this is the paper's algorithm: K1 = K(Q, r1) intra-node rounds,
// K2 = K(N, r2) inter-node rounds, one inter-node message per rank per round.
// Record: alltoall tra2 (parameters radix_intra, 2..Q, default ceil(sqrt(Q)); radix_inter,
// 2..N, default N); alltoallv locality and locality_radix (collective/alltoallv/locality.cpp)
// build on it too.
#include "collective/alltoall/builders.hpp"
#include "collective/record.hpp"

#include "util/error.hpp"

#include <mpi.h>

#include <algorithm>

namespace mpia {

namespace {

// How the names of a sub-schedule (built over sub-ranks 0..n-1 on bundles) map to this rank's
// schedule: sub-rank -> rank, bundle -> the pieces of its blocks, scratch -> shifted scratch.
struct SubMap {
  std::vector<int> peer;
  std::function<void(int bundle, std::vector<Piece>&out)> send_bundle, recv_bundle;
  std::int64_t scratch_base = 0;
};

void expand(const SubMap& m, const Piece& p, std::vector<Piece>& out) {
  switch (p.slot) {
    case Slot::Send:
      m.send_bundle(p.block, out);
      break;
    case Slot::Recv:
      m.recv_bundle(p.block, out);
      break;
    default:
      out.push_back(Piece::scratch(m.scratch_base + p.offset, p.bytes));
      break;
  }
}

// Bytes [at, at + n) of piece p; only scratch pieces may be cut.
Piece cut(const Piece& p, std::int64_t at, std::int64_t n) {
  if (p.slot == Slot::Scratch) return Piece::scratch(p.offset + at, n);
  if (at != 0 || n != p.bytes) fail(MPI_ERR_INTERN, "mpi-advance: two-level copy splits a block");
  return p;
}

// A sub-schedule's copy between two bundles, as copies between their pieces.
void zip_copies(const std::vector<Piece>& from, const std::vector<Piece>& to,
                std::vector<Copy>& out) {
  std::size_t i = 0, j = 0;
  std::int64_t at_i = 0, at_j = 0;
  while (i < from.size() && j < to.size()) {
    const std::int64_t n = std::min(from[i].bytes - at_i, to[j].bytes - at_j);
    out.push_back({cut(from[i], at_i, n), cut(to[j], at_j, n)});
    at_i += n, at_j += n;
    if (at_i == from[i].bytes) ++i, at_i = 0;
    if (at_j == to[j].bytes) ++j, at_j = 0;
  }
  if (i != from.size() || j != to.size())
    fail(MPI_ERR_INTERN, "mpi-advance: two-level copy between bundles of different sizes");
}

// Appends sub-schedule round `sub` into `into`, rewritten through m.
void compose(const SubMap& m, const Round& sub, Round& into) {
  std::vector<Piece> from, to;
  for (const Copy& c : sub.copies) {
    from.clear(), to.clear();
    expand(m, c.from, from);
    expand(m, c.to, to);
    zip_copies(from, to, into.copies);
  }
  for (const Exchange& x : sub.exchanges) {
    Exchange y;
    for (const auto& [src, dst] : {std::pair{&x.send, &y.send}, std::pair{&x.recv, &y.recv}}) {
      if (!src->active()) continue;
      dst->peer = m.peer[src->peer];
      for (const Piece& p : src->pieces) expand(m, p, dst->pieces);
    }
    into.exchanges.push_back(std::move(y));
  }
}

// One message per peer and direction in a round: transfers to the same peer (a rank serving
// several lanes) are concatenated in the order they were added, which is lane order on both
// sides.
void merge_peers(Round& r) {
  std::vector<Transfer> sends, recvs;
  auto add = [](std::vector<Transfer>& list, Transfer&& t) {
    if (!t.active()) return;
    for (Transfer& u : list)
      if (u.peer == t.peer) {
        u.pieces.insert(u.pieces.end(), t.pieces.begin(), t.pieces.end());
        return;
      }
    list.push_back(std::move(t));
  };
  for (Exchange& x : r.exchanges) add(sends, std::move(x.send)), add(recvs, std::move(x.recv));
  r.exchanges.clear();
  for (std::size_t i = 0; i < std::max(sends.size(), recvs.size()); ++i) {
    Exchange x;
    if (i < sends.size()) x.send = std::move(sends[i]);
    if (i < recvs.size()) x.recv = std::move(recvs[i]);
    r.exchanges.push_back(std::move(x));
  }
}

// Which output round each sub-round goes to: one per round, or one per digit when merging.
std::vector<int> round_slots(int n, int radix, bool merge_digits) {
  const std::vector<DigitRound> digits = radix_rounds(n, radix);
  std::vector<int> slot;
  for (std::size_t i = 0; i < digits.size(); ++i)
    slot.push_back(!merge_digits ? int(i)
                   : i == 0      ? 0
                                 : slot.back() + (digits[i].x != digits[i - 1].x));
  if (slot.empty()) slot.push_back(0);  // build_radix_bruck_v emits one round for n = 1
  return slot;
}

}  // namespace

int two_level_radix(int r, int n) { return std::max(2, std::min(r, std::max(2, n))); }

std::vector<int> two_level_served(int me, const NodeMap& nm) {
  const std::vector<int>& mine = nm.members[nm.node_of[me]];
  const int Q = int(mine.size()), q = nm.local_of[me];
  std::vector<int> out;
  for (int d = 0; d < nm.size(); ++d)
    if (nm.local_of[d] % Q == q) out.push_back(d);
  return out;
}

Schedule build_two_level(int me, const NodeMap& nm, int radix_intra, int radix_inter,
                         const PairBytes& bytes, bool merge_digits, const LaneBytes& lane_bytes) {
  const int N = nm.nnodes(), L = nm.max_local();
  const int n = nm.node_of[me], q = nm.local_of[me];
  const std::vector<int>& mine = nm.members[n];
  const int Q = int(mine.size());
  auto port_of = [&](int d) { return nm.local_of[d] % Q; };  // on this node

  // Phase 1 rounds: the most any node needs, so every rank enters phase 2 in the same round.
  int rounds1 = 0;
  for (const auto& node : nm.members) {
    const int k = int(node.size());
    const std::vector<int> s = round_slots(k, two_level_radix(radix_intra, k), merge_digits);
    rounds1 = std::max(rounds1, s.back() + 1);
  }
  const std::vector<int> slots2 = round_slots(N, two_level_radix(radix_inter, N), merge_digits);
  Schedule out;
  out.rounds.resize(std::size_t(rounds1 + (N > 1 ? slots2.back() + 1 : 0)));

  // Destinations served by each port of this node, ascending; where each lands in my list.
  std::vector<std::vector<int>> served(Q);
  std::vector<int> index_in_mine(nm.size(), -1);
  for (int d = 0; d < nm.size(); ++d) {
    if (port_of(d) == q) index_in_mine[d] = int(served[q].size());
    served[port_of(d)].push_back(d);
  }
  // Phase 1 leaves the blocks of my node's other ranks for my remote destinations in
  // scratch: at[a][k] for local source a and served[q][k].
  const std::vector<int>& lane_dests = served[q];
  std::vector<std::vector<std::int64_t>> at(Q, std::vector<std::int64_t>(lane_dests.size(), -1));

  // ---- Phase 1: a radix-r1 exchange of bundles among the Q ranks of my node. A bundle's size
  // is asked for only when the sub-exchange needs it (a direct one: its row and column).
  {
    const PairBytes m1 = [&](int a, int b) {
      if (a == b) return bytes(mine[a], mine[a]);
      std::int64_t sum = 0;
      for (int d : served[b]) sum += bytes(mine[a], d);
      return sum;
    };
    const int r1 = two_level_radix(radix_intra, Q);
    const Schedule sub = build_radix_bruck_v(q, Q, r1, m1);
    std::int64_t next = sub.scratch_bytes;
    for (int a = 0; a < Q; ++a)
      for (std::size_t k = 0; k < lane_dests.size(); ++k) {
        const int d = lane_dests[k];
        const std::int64_t b = bytes(mine[a], d);
        if (a == q || nm.node_of[d] == n || b == 0) continue;
        at[a][k] = next;
        next += b;
      }
    SubMap m;
    m.peer = mine;
    m.send_bundle = [&](int b, std::vector<Piece>& o) {
      if (b == q) {
        o.push_back(Piece::send(me, bytes(me, me)));
        return;
      }
      for (int d : served[b])
        if (const std::int64_t k = bytes(me, d)) o.push_back(Piece::send(d, k));
    };
    m.recv_bundle = [&](int a, std::vector<Piece>& o) {
      if (a == q) {
        o.push_back(Piece::recv(me, bytes(me, me)));
        return;
      }
      for (std::size_t k = 0; k < lane_dests.size(); ++k) {
        const int d = lane_dests[k];
        const std::int64_t b = bytes(mine[a], d);
        if (b == 0) continue;
        o.push_back(d == me ? Piece::recv(mine[a], b) : Piece::scratch(at[a][k], b));
      }
    };
    const std::vector<int> slot = round_slots(Q, r1, merge_digits);
    for (std::size_t i = 0; i < sub.rounds.size(); ++i)
      compose(m, sub.rounds[i], out.rounds[slot[i]]);
    out.scratch_bytes = next;
  }

  // ---- Phase 2: for each lane this rank is the port of, a radix-r2 exchange among the lane's
  // ports on the N nodes.
  if (N > 1) {
    const int r2 = two_level_radix(radix_inter, N);
    for (int lane = q; lane < L; lane += Q) {
      std::vector<int> port(N), dest(N, -1);  // per node: the lane's port, its rank `lane`
      for (int j = 0; j < N; ++j) {
        const std::vector<int>& node = nm.members[j];
        port[j] = node[lane % int(node.size())];
        if (lane < int(node.size())) dest[j] = node[lane];
      }
      const PairBytes m2 = [&](int i, int j) {
        std::int64_t sum = 0;
        if (i != j && dest[j] >= 0 && i != n && lane_bytes) return lane_bytes(lane, i, j);
        if (i != j && dest[j] >= 0)
          for (int s : nm.members[i]) sum += bytes(s, dest[j]);
        return sum;
      };
      const Schedule sub = build_radix_bruck_v(n, N, r2, m2);
      SubMap m;
      m.peer = port;
      m.scratch_base = out.scratch_bytes;
      m.send_bundle = [&](int j, std::vector<Piece>& o) {
        const int d = dest[j];
        for (int s : mine) {
          const std::int64_t b = d < 0 ? 0 : bytes(s, d);
          if (b == 0) continue;
          o.push_back(s == me ? Piece::send(d, b)
                              : Piece::scratch(at[nm.local_of[s]][index_in_mine[d]], b));
        }
      };
      m.recv_bundle = [&](int i, std::vector<Piece>& o) {
        for (int s : nm.members[i])
          if (const std::int64_t b = bytes(s, me)) o.push_back(Piece::recv(s, b));
      };
      for (std::size_t i = 0; i < sub.rounds.size(); ++i)
        compose(m, sub.rounds[i], out.rounds[std::size_t(rounds1 + slots2[i])]);
      out.scratch_bytes += sub.scratch_bytes;
    }
  }
  for (Round& r : out.rounds) merge_peers(r);
  return out;
}

namespace {

using namespace detail;

// TRA2 (seed 003, section V-C): r1 = sqrt(Q) within a node, r2 = N across nodes.
constexpr Bound kIntraDefault = Bound::sqrt_of(Bound::Of::MaxLocal, 2);
constexpr Bound kIntraMax = Bound::of_size(Bound::Of::MaxLocal, 2);
constexpr Bound kInterMax = Bound::of_size(Bound::Of::Nodes, 2);

Schedule tra2(const AlltoallShape& s, const ParamValues& v) {
  const std::int64_t B = s.block_bytes;
  if (B == 0) return Schedule{};
  if (!s.nodes) fail(MPI_ERR_INTERN, "mpi-advance: tra2 built without a node map");
  return with(build_two_level(
                  s.rank, *s.nodes, int(v[0]), int(v[1]), [B](int, int) { return B; }, false),
              kRoundByRound, Lowering::Pack);
}

// Seed 003 IV: K1 = K(Q, r1) rounds within the node moving bundles of N blocks, then
// K2 = K(N, r2) rounds between nodes moving bundles of Q blocks, all Q ranks of a node
// sending through its NIC at once.
Terms tra2_cost(const Machine& m, const Stats& st, const ParamValues& v) {
  Terms t;
  const std::int64_t Q = std::min<std::int64_t>(m.ppn, m.nranks), N = m.nnodes;
  const double B = double(st.max_block);
  add_radix(t, Q, v[0], double(N) * B, N, [](std::int64_t) { return 0; });
  add_radix(t, N, v[1], double(Q) * B, Q, [Q](std::int64_t) { return Q; });
  return t;
}
constexpr const char* kTra2Cost =
    "radix(Q, r1, N B, 0) + radix(N, r2, Q B, Q), r1 = radix_intra, r2 = radix_inter: within the "
    "node, bundles of N blocks; between nodes, bundles of Q blocks, all Q ranks of a node "
    "through its NIC at once";

// Every (radix_intra, radix_inter) pair of the radix ladders, when the machine has several
// nodes.
std::vector<ParamValues> tra2_radices(const Machine& m, const Stats&) {
  std::vector<ParamValues> out;
  if (m.nnodes > 1)
    for (std::int64_t r1 : radix_ladder(std::max(2, m.ppn)))
      for (std::int64_t r2 : radix_ladder(std::max(2, m.nnodes))) out.push_back({r1, r2});
  return out;
}

}  // namespace

MPIA_ALGORITHMS(alltoall_two_level) {
  return {record(
      "tra2", 400,
      "two-level tunable radix (seed 003 IV): radix_intra rounds within each node, then "
      "radix_inter rounds between nodes, all ranks of a node acting as ports; any placement",
      {MPIA_SEED_003 ", section IV (TRA2), here for any placement and uneven nodes", kTra2Cost},
      {{"radix_intra", "base of the intra-node exchange (Q: most ranks on a node)", kIntraDefault,
        kRadixMin, kIntraMax},
       {"radix_inter", "base of the inter-node exchange (N: nodes)", kInterMax, kRadixMin,
        kInterMax}},
      tra2, {tra2_cost, tra2_radices, 40}, kNeedsLocality)};
}

}  // namespace mpia
