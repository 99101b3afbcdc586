// The radix-r Bruck exchange: bruck, modified_bruck, zero_copy_bruck and tra are one builder.
//
// References: J. Bruck et al., "Efficient algorithms for all-to-all communications in
// multiport message-passing systems", IEEE TPDS 1997; J. L. Traff, A. Rougier, S. Hunold,
// "Implementing a classic: zero-copy all-to-all communication with MPI datatypes", ICS 2014
// (seed 000); K. Fan et al., "Configurable algorithms for all-to-all collectives", ISC 2024
// (seed 003).
//
// Block index j in [1, P) is written in base r with w = ceil(log_r P) digits. For each digit
// position x and value z in 1..r-1 there is one round, in which every rank forwards all blocks
// whose x-th digit is z over distance z*r^x. A block reaches its destination after one hop per
// non-zero digit.
//   rounds  K = w(r-1) - floor((r^w - P) / r^(w-1))            (Props. 1 and 3)
//   blocks  D = sum over rounds of the blocks with digit x = z   (Props. 2 and 4)
//   time    ~ K*alpha + D*n*beta (+ local copies: see the variants in builders.hpp)
// r = 2 is Bruck's log2(P)-round algorithm; r = P sends each block directly (P-1 rounds).
// Restrictions: none (any P, any r in 2..max(2,P)); uniform block size.
// Records: alltoall bruck, modified_bruck, zero_copy_bruck (family "bruck": they differ only in
// their copies) and tra (parameter radix, 2..P, default ceil(sqrt(P))).
#include "collective/alltoall/builders.hpp"
#include "collective/record.hpp"

#include <algorithm>
#include <functional>

namespace mpia {

std::vector<DigitRound> radix_rounds(int nranks, int radix) {
  std::vector<DigitRound> rounds;
  const std::int64_t P = nranks, r = radix;
  for (std::int64_t rx = 1, x = 0; rx < P; rx *= r, ++x) {
    for (std::int64_t z = 1; z < r; ++z) {
      DigitRound d;
      d.x = int(x);
      d.z = int(z);
      d.distance = z * rx;
      // j = a*r^(x+1) + z*r^x + b, b in [0, r^x): ascending in j.
      for (std::int64_t base = z * rx; base < P; base += r * rx)
        for (std::int64_t j = base; j < std::min(base + rx, P); ++j) d.blocks.push_back(int(j));
      if (!d.blocks.empty()) rounds.push_back(std::move(d));
    }
  }
  return rounds;
}

std::int64_t tra_rounds_K(std::int64_t P, std::int64_t r) {
  if (P <= 1) return 0;
  std::int64_t w = 0, rw = 1;
  while (rw < P) rw *= r, ++w;
  const std::int64_t rw1 = rw / r;
  return w * (r - 1) - (rw - P) / rw1;
}

std::int64_t tra_blocks_D(std::int64_t P, std::int64_t r) {
  if (P <= 1) return 0;
  std::int64_t D = 0;
  for (std::int64_t rx = 1; rx < P; rx *= r) {
    const std::int64_t lgc = P % (rx * r);
    const std::int64_t lc = (P / (rx * r)) * rx;
    for (std::int64_t z = 1; z < r; ++z) {
      const std::int64_t t = lgc - z * rx;
      if (t <= 0)
        D += lc;
      else if (t / rx > 0)
        D += lc + rx;
      else
        D += lc + t % rx;
    }
  }
  return D;
}

namespace {

int mod(std::int64_t a, int P) { return int(((a % P) + P) % P); }

int nonzero_digits(int j, int r) {
  int n = 0;
  for (; j > 0; j /= r) n += (j % r) != 0;
  return n;
}

// The rounds the two classic variants share: block j lives at home(j) between rounds; round 0
// copies it there from send[(p+dir*j)%P]; round (x,z) sends the blocks d.blocks from home to
// p + dir z r^x, which receives them contiguously into scratch at `landing` and unpacks them home
// before its next round (or in the last one).
template <class Home>
Schedule bruck_rounds(const AlltoallShape& s, const std::vector<DigitRound>& rounds, int dir,
                      std::int64_t landing, Home home) {
  const int P = s.size, p = s.rank;
  const std::int64_t B = s.block_bytes;
  std::size_t maxj = 0;
  for (const DigitRound& d : rounds) maxj = std::max(maxj, d.blocks.size());
  Schedule sch;
  sch.scratch_bytes = landing + std::int64_t(maxj) * B;
  Round first;
  for (int j = 0; j < P; ++j)
    first.copies.push_back({Piece::send(mod(p + dir * j, P), B), home(j)});
  sch.rounds.push_back(std::move(first));
  const std::vector<int>* previous = nullptr;
  auto unpack = [&](Round& round) {
    if (!previous) return;
    for (std::size_t k = 0; k < previous->size(); ++k)
      round.copies.push_back(
          {Piece::scratch(landing + std::int64_t(k) * B, B), home((*previous)[k])});
  };
  for (const DigitRound& d : rounds) {
    Round round;
    unpack(round);
    Exchange x;
    x.send.peer = mod(p + dir * d.distance, P);
    for (int j : d.blocks) x.send.pieces.push_back(home(j));
    x.recv.peer = mod(p - dir * d.distance, P);
    x.recv.pieces.push_back(Piece::scratch(landing, std::int64_t(d.blocks.size()) * B));
    round.exchanges.push_back(std::move(x));
    sch.rounds.push_back(std::move(round));
    previous = &d.blocks;
  }
  Round last;
  unpack(last);
  sch.rounds.push_back(std::move(last));
  return sch;
}

// Bruck et al. as published (and TRA in seed 003): R[j] = send[(p+j)%P]; round (x,z) sends R[j]
// to p + z r^x, which receives the blocks contiguously into T and unpacks them into R before
// its next round; finally recv[(p-j)%P] = R[j].
Schedule basic(const AlltoallShape& s, const std::vector<DigitRound>& rounds) {
  const int P = s.size, p = s.rank;
  const std::int64_t B = s.block_bytes;
  const std::int64_t T = std::int64_t(P) * B;  // T follows R in scratch
  Schedule sch = bruck_rounds(s, rounds, 1, T, [&](int j) { return Piece::scratch(j * B, B); });
  Round& last = sch.rounds.back();
  for (int j = 0; j < P; ++j)
    last.copies.push_back({Piece::scratch(j * B, B), Piece::recv(mod(p - j, P), B)});
  return sch;
}

// Traff et al.'s modified Bruck: recv[(p+j)%P] = send[(p-j)%P]; round (x,z) sends the blocks at
// recv[(p+j)%P] to p - z r^x, which receives them contiguously into scratch and unpacks them to
// its own recv[(p'+j)%P]. No final rotation: recv[s] ends up holding the block from s.
Schedule modified(const AlltoallShape& s, const std::vector<DigitRound>& rounds) {
  const int P = s.size, p = s.rank;
  const std::int64_t B = s.block_bytes;
  return bruck_rounds(s, rounds, -1, 0, [&](int j) { return Piece::recv(mod(p + j, P), B); });
}

// Zero-copy placement (seed 000, section 3.3), generalised to radix r and to blocks of any
// size. Block j travels in the modified direction; on its first hop it is sent straight from
// send[(p-j)%P]; on its last it is received straight into recv[(p+j)%P]. In between it
// alternates between two places by the parity of the hops still to go, so a block is never
// received where it is being sent from. With uniform blocks the receive buffer itself is the
// second place (recv[(p+j)%P] is free until block j's last hop), as in Traff et al.; with
// varying sizes a block in transit may not fit there, so two scratch areas are used.
//
// Which block sits in slot j of rank q before digit x is processed: the one from source
// q + (j mod r^x) to destination q - (j - j mod r^x).
Schedule zero_copy(int p, int P, int r, const std::vector<DigitRound>& rounds,
                   const std::function<std::int64_t(int, int)>& bytes, bool uniform) {
  auto block_after = [&](int j, std::int64_t processed) {  // processed = r^(x+1)
    return radix_block_after(p, P, j, processed);
  };
  std::vector<int> hops(P);
  for (int j = 0; j < P; ++j) hops[j] = nonzero_digits(j, r);
  // Pass 1: capacity of each intermediate place (A = odd hops left, B = even, > 0).
  std::vector<std::int64_t> cap_a(P, 0), cap_b(P, 0);
  {
    std::vector<int> left = hops;
    std::int64_t rx = 1;
    int x = -1;
    for (const DigitRound& d : rounds) {
      if (d.x != x) x = d.x, rx = d.distance / d.z;
      for (int j : d.blocks) {
        --left[j];
        const auto [src, dst] = block_after(j, rx * r);
        const std::int64_t n = bytes(src, dst);
        if (left[j] % 2 == 1)
          cap_a[j] = std::max(cap_a[j], n);
        else if (left[j] > 0)
          cap_b[j] = std::max(cap_b[j], n);
      }
    }
  }
  std::vector<std::int64_t> at_a(P), at_b(P);
  Schedule sch;
  for (int j = 0; j < P; ++j) at_a[j] = sch.scratch_bytes, sch.scratch_bytes += cap_a[j];
  for (int j = 0; j < P; ++j)
    at_b[j] = sch.scratch_bytes, sch.scratch_bytes += uniform ? 0 : cap_b[j];

  enum class Place { Send, A, B, Recv };
  std::vector<Place> where(P, Place::Send);
  std::vector<std::int64_t> size(P);
  for (int j = 0; j < P; ++j) size[j] = bytes(p, mod(p - j, P));
  auto piece = [&](int j) {
    switch (where[j]) {
      case Place::Send:
        return Piece::send(mod(p - j, P), size[j]);
      case Place::A:
        return Piece::scratch(at_a[j], size[j]);
      case Place::B:
        return uniform ? Piece::recv(mod(p + j, P), size[j]) : Piece::scratch(at_b[j], size[j]);
      default:
        return Piece::recv(mod(p + j, P), size[j]);
    }
  };
  Round round;
  if (size[0] > 0) round.copies.push_back({Piece::send(p, size[0]), Piece::recv(p, size[0])});
  std::int64_t rx = 1;
  int x = -1;
  for (const DigitRound& d : rounds) {
    if (d.x != x) x = d.x, rx = d.distance / d.z;
    Exchange ex;
    ex.send.peer = mod(p - d.distance, P);
    ex.recv.peer = mod(p + d.distance, P);
    for (int j : d.blocks) {
      if (size[j] > 0) ex.send.pieces.push_back(piece(j));
      --hops[j];
      where[j] = hops[j] == 0 ? Place::Recv : hops[j] % 2 == 1 ? Place::A : Place::B;
      const auto [src, dst] = block_after(j, rx * r);
      size[j] = bytes(src, dst);
      if (size[j] > 0) ex.recv.pieces.push_back(piece(j));
    }
    if (ex.send.pieces.empty()) ex.send = Transfer{};
    if (ex.recv.pieces.empty()) ex.recv = Transfer{};
    if (ex.send.active() || ex.recv.active()) round.exchanges.push_back(std::move(ex));
    sch.rounds.push_back(std::move(round));
    round = Round{};
  }
  if (rounds.empty()) sch.rounds.push_back(std::move(round));
  return sch;
}

}  // namespace

Schedule build_radix_bruck(const AlltoallShape& s, int radix, BruckVariant variant) {
  Schedule sch;
  if (s.block_bytes == 0) return sch;
  if (s.size == 1) {
    Round only;
    only.copies.push_back({Piece::send(0, s.block_bytes), Piece::recv(0, s.block_bytes)});
    sch.rounds.push_back(std::move(only));
    return sch;
  }
  const std::vector<DigitRound> rounds = radix_rounds(s.size, radix);
  switch (variant) {
    case BruckVariant::Basic:
      return basic(s, rounds);
    case BruckVariant::Modified:
      return modified(s, rounds);
    default: {
      const std::int64_t B = s.block_bytes;
      return zero_copy(
          s.rank, s.size, radix, rounds, [B](int, int) { return B; }, true);
    }
  }
}

Schedule build_radix_bruck_v(int rank, int nranks, int radix, const PairBytes& bytes) {
  const std::vector<DigitRound> rounds = radix_rounds(nranks, radix);
  return zero_copy(rank, nranks, radix, rounds, bytes, false);
}

std::pair<int, int> radix_block_after(int p, int P, int j, std::int64_t processed) {
  const std::int64_t low = j % processed;
  return std::make_pair(mod(p + low, P), mod(p - (j - low), P));
}

namespace {

using namespace detail;

// seed 003, section III-B: r = sqrt(P) balances rounds against volume.
constexpr Bound kRadixDefault = Bound::sqrt_of(Bound::Of::Ranks, 2);

Schedule bruck(const AlltoallShape& s, const ParamValues&) {
  return with(build_radix_bruck(s, 2, BruckVariant::Basic), kRoundByRound, Lowering::Pack);
}
Schedule modified_bruck(const AlltoallShape& s, const ParamValues&) {
  return with(build_radix_bruck(s, 2, BruckVariant::Modified), kRoundByRound, Lowering::Pack);
}
Schedule zero_copy_bruck(const AlltoallShape& s, const ParamValues&) {
  return with(build_radix_bruck(s, 2, BruckVariant::ZeroCopy), kRoundByRound, Lowering::Datatype);
}
Schedule tra(const AlltoallShape& s, const ParamValues& v) {
  return with(build_radix_bruck(s, int(v[0]), BruckVariant::ZeroCopy), kRoundByRound,
              Lowering::Pack);
}

// The radix-r rounds over the flat ranks, then the copies of the variant: tra packs and unpacks
// every message of several blocks (add_round); the published variants copy more (builders.hpp);
// zero-copy Bruck lets the MPI datatype engine gather the blocks, one copy where tra has two.
enum class Copies { Tra, Basic, Modified, ZeroCopy };
Terms radix_cost(const Machine& m, const Stats& st, std::int64_t r, Copies copies) {
  Terms t;
  const std::int64_t P = m.nranks, Q = std::min<std::int64_t>(m.ppn, P), N = m.nnodes;
  const double B = double(st.max_block);
  add_radix(t, P, r, B, 1, [&m](std::int64_t d) { return flat_flows(m, d); });
  if (copies == Copies::Basic) t.c[kBytesCopy] += 2.0 * double(P) * B;
  if (copies == Copies::Modified) t.c[kBytesCopy] += double(P) * B;
  if (copies == Copies::ZeroCopy) t.c[kBytesCopy] *= 0.5;
  if (N > 1 && m.blocked && power_of(Q, r)) overlap_rounds(t);
  return t;
}
constexpr const char* kTraCost = "out_of_step(radix(P, r, B, f), r)";
constexpr const char* kBruckCost =
    "out_of_step(radix(P, 2, B, f), 2) + 2 P B/bw_copy (the rotations in and out)";
constexpr const char* kModifiedCost =
    "out_of_step(radix(P, 2, B, f), 2) + P B/bw_copy (the rotation in)";
constexpr const char* kZeroCopyCost =
    "out_of_step(radix(P, 2, B, f), 2) with its copies halved (x/bw_copy, not 2x/bw_copy, per "
    "message of several blocks: the datatype engine gathers each one once)";

Terms tra_cost(const Machine& m, const Stats& st, const ParamValues& v) {
  return radix_cost(m, st, v[0], Copies::Tra);
}
template <Copies copies>
Terms radix2_cost(const Machine& m, const Stats& st, const ParamValues&) {
  return radix_cost(m, st, 2, copies);
}

// tra at every radix up to 64 and a ladder of ~6 % steps above (none for P <= 2: pairwise).
std::vector<ParamValues> tra_radices(const Machine& m, const Stats&) {
  std::vector<ParamValues> out;
  if (m.nranks > 2)
    for (std::int64_t r : radix_ladder(m.nranks)) out.push_back({r});
  return out;
}

// The published variants, weighed everywhere: radix 2 with more copies than tra's (or,
// zero-copy, the datatype engine's); they win only where copies cost more than the model says
// tra's do.
AlgorithmSpec variant(const char* name, int listing, const char* description, const About& about,
                      AlltoallBuilder build, CostFunction cost, int search) {
  AlgorithmSpec a = record(name, listing, description, about, {}, build, {cost, always, search});
  a.family = "bruck";
  return a;
}

}  // namespace

MPIA_ALGORITHMS(alltoall_bruck_family) {
  return {
      variant("bruck", 200,
              "Bruck et al.: log2(P) rounds, rotate in, unpack each round, rotate out",
              {MPIA_REF_BRUCK97 "; its basic form as in " MPIA_SEED_000 ", section 2", kBruckCost},
              bruck, radix2_cost<Copies::Basic>, 50),
      variant("modified_bruck", 210, "Traff's modified Bruck: log2(P) rounds, no final rotation",
              {MPIA_SEED_000 ", section 2 (modified Bruck)", kModifiedCost}, modified_bruck,
              radix2_cost<Copies::Modified>, 51),
      variant("zero_copy_bruck", 220,
              "Traff's zero-copy Bruck: log2(P) rounds, one derived datatype per round, no copies",
              {MPIA_SEED_000 ", section 3.3 (zero-copy Bruck)", kZeroCopyCost}, zero_copy_bruck,
              radix2_cost<Copies::ZeroCopy>, 52),
      record(
          "tra", 300,
          "tunable radix (seed 003): K=w(r-1)-floor((r^w-P)/r^(w-1)) rounds, zero-copy placement",
          {MPIA_SEED_003 ", section III (TRA); the placement of zero-copy Bruck (seed 000, "
                         "section 3.3) at any radix",
           kTraCost},
          {{"radix", "base of the exchange (2: Bruck, P: direct)", kRadixDefault, kRadixMin,
            kRadixMax}},
          tra, {tra_cost, tra_radices, 30}),
  };
}

}  // namespace mpia
