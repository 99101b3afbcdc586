// Direct exchange: every block goes straight to its destination; one round of P-1 exchanges,
// exchange i with destination rank+i and source rank-i (a shift, so every rank has exactly one
// partner of each kind at each step and no two ranks flood the same destination).
//   pairwise (window 1, seed 001 Algorithm 1): (P-1)(alpha + n beta), one exchange at a time;
//   linear (window P, Algorithm 2): all posted at once, time bounded by injection bandwidth.
// Restrictions: none.
// Records: alltoall pairwise and linear (the alltoallv ones are collective/alltoallv/direct.cpp).
#include "collective/alltoall/builders.hpp"
#include "collective/record.hpp"

namespace mpia {

Schedule build_direct_v(int p, const std::vector<std::int64_t>& send_bytes,
                        const std::vector<std::int64_t>& recv_bytes) {
  Schedule sch;
  const int P = int(send_bytes.size());
  Round round;
  if (send_bytes[p] > 0)
    round.copies.push_back({Piece::send(p, send_bytes[p]), Piece::recv(p, recv_bytes[p])});
  for (int i = 1; i < P; ++i) {
    Exchange x;
    const int to = (p + i) % P, from = (p - i + P) % P;
    if (send_bytes[to] > 0) {
      x.send.peer = to;
      x.send.pieces.push_back(Piece::send(to, send_bytes[to]));
    }
    if (recv_bytes[from] > 0) {
      x.recv.peer = from;
      x.recv.pieces.push_back(Piece::recv(from, recv_bytes[from]));
    }
    if (x.send.active() || x.recv.active()) round.exchanges.push_back(std::move(x));
  }
  if (!round.copies.empty() || !round.exchanges.empty()) sch.rounds.push_back(std::move(round));
  return sch;
}

Schedule build_direct(const AlltoallShape& s) {
  const std::vector<std::int64_t> bytes(s.size, s.block_bytes);
  return build_direct_v(s.rank, bytes, bytes);
}

namespace {

using namespace detail;

Schedule pairwise(const AlltoallShape& s, const ParamValues&) {
  return with(build_direct(s), Policy{1, Completion::Waitall}, Lowering::Pack);
}
Schedule linear(const AlltoallShape& s, const ParamValues&) {
  return with(build_direct(s), kRoundByRound, Lowering::Pack);
}

// P-1 rounds of one block each, off the node for the ranks whose peer at that distance is.
Terms pairwise_cost(const Machine& m, const Stats& st, const ParamValues&) {
  Terms t;
  for (std::int64_t d = 1; d < m.nranks; ++d)
    add_round(t, double(st.max_block), flat_flows(m, d), 1);
  return t;
}
constexpr const char* kPairwiseCost = "the sum over d = 1..P-1 of round(B, f(d))";

// Every exchange posted at once: one latency, the overheads in series, the node's NIC carrying
// every off-node block of its Q ranks, and 2(P-Q) of its messages in flight through the NIC per
// rank, where a round-by-round schedule has two.
Terms linear_cost(const Machine& m, const Stats& st, const ParamValues&) {
  Terms t;
  const std::int64_t P = m.nranks, Q = std::min<std::int64_t>(m.ppn, P), N = m.nnodes;
  const double B = double(st.max_block);
  t.rounds = 1;
  t.messages = t.blocks = P - 1;
  t.cpu[kMsgIntra] = t.cpu[kRecvIntra] = double(Q - 1);
  t.cpu[kMsgInter] = t.cpu[kRecvInter] = double(P - Q);
  t.c[N > 1 ? kLatInter : kLatIntra] = 1;
  t.c[kInflight] = inflight_beyond_one(double(Q), double(P - Q));
  t.wire[kBytesIntra] = Q > 1 ? B : 0;
  t.wire[kBytesNic] = double(Q) * double(P - Q) * B;
  return t;
}
constexpr const char* kLinearCost =
    "lat + G(Q, P-Q) g_inflight + max((Q-1) msg_intra + (P-Q) msg_inter, [Q > 1] B/bw_intra + "
    "Q (P-Q) B/bw_inter), lat = lat_inter on several nodes, lat_intra on one";

}  // namespace

MPIA_ALGORITHMS(alltoall_direct) {
  return {
      record(
          "pairwise", 100, "direct exchange with one peer at a time: P-1 rounds (seed 001 Alg. 1)",
          {MPIA_SEED_001 ", Algorithm 1 (pairwise exchange), here of equal blocks", kPairwiseCost},
          {}, pairwise, {pairwise_cost, always, 20}),
      // Searched before pairwise: ties go to linear, the simplest schedule.
      record("linear", 110,
             "direct exchange, all P-1 sends and receives posted at once (seed 001 Alg. 2)",
             {MPIA_SEED_001 ", Algorithm 2 (non-blocking), here of equal blocks", kLinearCost}, {},
             linear, {linear_cost, always, 10}),
  };
}

}  // namespace mpia
