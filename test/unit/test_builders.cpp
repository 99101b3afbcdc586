// Every scheduled alltoall algorithm of the registry, run in the simulator for P = 1..64 and
// every radix: every receive byte must end up holding the right source byte, and the radix-r
// exchange must take exactly the paper's K rounds and send exactly D blocks.
#include "collective/alltoall/builders.hpp"
#include "collective/registry.hpp"
#include "collective/selection.hpp"
#include "sanitized.hpp"
#include "simulate.hpp"

#include <gtest/gtest.h>

#include <string>

namespace mpia {
namespace {

// Every scheduled algorithm at every value of its parameters (a radix: 2..P) up to 64 of them.
std::vector<Selection> selections(int P) {
  std::vector<Selection> out;
  for (int i = 0; const AlgorithmSpec* a = algorithm_at(Collective::Alltoall, i); ++i) {
    // The locality-aware ones need a node map: test_two_level.cpp.
    if (a->kind != AlgorithmKind::Scheduled || a->needs_locality) continue;
    for (ParamValues& v : param_grid(*a, P, 64)) out.push_back(Selection{a, std::move(v)});
  }
  return out;
}

TEST(Builders, EveryAlgorithmDeliversEveryByteForP1To64) {
  for (int P = 1; P <= 64; ++P) {
    if (!mpia_unit::sweeps(P)) continue;
    for (const Selection& sel : selections(P)) {
      for (std::int64_t B : {std::int64_t(1), std::int64_t(3)}) {
        SimResult res = simulate_alltoall(P, B, [&](int rank) {
          return sel.algorithm->build_alltoall(AlltoallShape{rank, P, B}, sel.values);
        });
        ASSERT_TRUE(res.ok) << sel.to_string() << " P=" << P << " B=" << B << ": " << res.error;
      }
    }
  }
}

TEST(Builders, ZeroBytesSendNothing) {
  for (int P : {1, 2, 7}) {
    for (const Selection& sel : selections(P)) {
      Schedule s = sel.algorithm->build_alltoall(AlltoallShape{0, P, 0}, sel.values);
      EXPECT_EQ(s.messages_sent(), 0) << sel.to_string();
      EXPECT_EQ(s.scratch_bytes, 0) << sel.to_string();
    }
  }
}

// Propositions 1-4 of seed 003, against what the built schedules actually do.
TEST(Builders, RadixExchangeMatchesKAndD) {
  for (int P = 2; P <= 64; ++P) {
    for (int r = 2; r <= P; ++r) {
      for (BruckVariant v : {BruckVariant::Basic, BruckVariant::Modified, BruckVariant::ZeroCopy}) {
        for (int rank : {0, P / 2, P - 1}) {
          Schedule s = build_radix_bruck(AlltoallShape{rank, P, 5}, r, v);
          ASSERT_EQ(s.communication_rounds(), tra_rounds_K(P, r)) << "P=" << P << " r=" << r;
          ASSERT_EQ(s.bytes_sent(), 5 * tra_blocks_D(P, r)) << "P=" << P << " r=" << r;
          ASSERT_EQ(s.messages_sent(), tra_rounds_K(P, r));
        }
      }
    }
  }
}

TEST(Builders, ClosedFormsMatchThePapersExamples) {
  // Section III-B: P = 16384, r = sqrt(P) = 128 gives K = 254 and D = 32512; r = 2 gives
  // D = 114688 and K = 14; r = P gives P-1 rounds of one block.
  EXPECT_EQ(tra_rounds_K(16384, 128), 254);
  EXPECT_EQ(tra_blocks_D(16384, 128), 32512);
  EXPECT_EQ(tra_rounds_K(16384, 2), 14);
  EXPECT_EQ(tra_blocks_D(16384, 2), 114688);
  EXPECT_EQ(tra_rounds_K(16384, 16384), 16383);
  EXPECT_EQ(tra_blocks_D(16384, 16384), 16383);
  // Figure 3: P = 11, r = 3 takes 5 rounds.
  EXPECT_EQ(tra_rounds_K(11, 3), 5);
  // Proposition 1 for P = r^w.
  EXPECT_EQ(tra_rounds_K(81, 3), 4 * 2);
  EXPECT_EQ(tra_blocks_D(81, 3), 4 * 2 * 27);
}

TEST(Builders, RadixRoundsCoverEachNonzeroDigitOnce) {
  for (int P : {2, 5, 17, 64, 100}) {
    for (int r : {2, 3, 7, P}) {
      if (r > P) continue;
      std::vector<int> hops(P, 0);
      for (const DigitRound& d : radix_rounds(P, r))
        for (int j : d.blocks) hops[j] += 1;
      for (int j = 1; j < P; ++j) {
        int digits = 0;
        for (int k = j; k > 0; k /= r) digits += k % r != 0;
        ASSERT_EQ(hops[j], digits) << "P=" << P << " r=" << r << " j=" << j;
      }
    }
  }
}

TEST(Builders, ZeroCopyBruckHasNoLocalCopiesButTheSelfBlock) {
  for (int P : {2, 5, 8, 13}) {
    Schedule s = build_radix_bruck(AlltoallShape{1, P, 4}, 2, BruckVariant::ZeroCopy);
    std::size_t copies = 0;
    for (const Round& r : s.rounds) copies += r.copies.size();
    EXPECT_EQ(copies, 1u) << "P=" << P;
  }
}

// The simulator must be able to fail: a schedule that delivers a block to the wrong place, one
// that posts a send nobody receives, and one that receives where it sends from.
TEST(Simulator, CatchesBrokenSchedules) {
  const int P = 3;
  auto swapped = [&](int rank) {
    Schedule s = build_direct(AlltoallShape{rank, P, 2});
    std::swap(s.rounds[0].exchanges[0].recv.pieces[0], s.rounds[0].exchanges[1].recv.pieces[0]);
    return s;
  };
  EXPECT_FALSE(simulate_alltoall(P, 2, swapped).ok);
  auto unmatched = [&](int rank) {
    Schedule s = build_direct(AlltoallShape{rank, P, 2});
    if (rank == 0) s.rounds[0].exchanges[0].recv = Transfer{};
    return s;
  };
  EXPECT_FALSE(simulate_alltoall(P, 2, unmatched).ok);
  auto overlapping = [&](int rank) {
    Schedule s = build_radix_bruck(AlltoallShape{rank, P, 2}, 2, BruckVariant::ZeroCopy);
    for (Round& r : s.rounds)
      for (Exchange& x : r.exchanges) x.recv.pieces = x.send.pieces;
    return s;
  };
  EXPECT_FALSE(simulate_alltoall(P, 2, overlapping).ok);
}

}  // namespace
}  // namespace mpia
