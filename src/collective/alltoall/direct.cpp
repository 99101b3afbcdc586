// Direct exchange: every block goes straight to its destination; one round of P-1 exchanges,
// exchange i with destination rank+i and source rank-i (a shift, so every rank has exactly one
// partner of each kind at each step and no two ranks flood the same destination).
//   pairwise (window 1, seed 001 Algorithm 1): (P-1)(alpha + n beta), one exchange at a time;
//   linear (window P, Algorithm 2): all posted at once, time bounded by injection bandwidth.
// Restrictions: none.
#include "collective/alltoall/builders.hpp"

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

}  // namespace mpia
