// Direct exchange: every block goes straight to its destination; one round of P-1 exchanges,
// exchange i with destination rank+i and source rank-i (a shift, so every rank has exactly one
// partner of each kind at each step and no two ranks flood the same destination).
//   pairwise (window 1, seed 001 Algorithm 1): (P-1)(alpha + n beta), one exchange at a time;
//   linear (window P, Algorithm 2): all posted at once, time bounded by injection bandwidth.
// Restrictions: none.
#include "collective/alltoall/builders.hpp"

namespace mpia {

Schedule build_direct(const AlltoallShape& s) {
  Schedule sch;
  const int P = s.size, p = s.rank;
  const std::int64_t B = s.block_bytes;
  if (B == 0) return sch;
  Round round;
  round.copies.push_back({Piece::send(p, B), Piece::recv(p, B)});
  for (int i = 1; i < P; ++i) {
    Exchange x;
    x.send.peer = (p + i) % P;
    x.send.pieces.push_back(Piece::send(x.send.peer, B));
    x.recv.peer = (p - i + P) % P;
    x.recv.pieces.push_back(Piece::recv(x.recv.peer, B));
    round.exchanges.push_back(std::move(x));
  }
  sch.rounds.push_back(std::move(round));
  return sch;
}

}  // namespace mpia
