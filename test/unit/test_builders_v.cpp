// Every scheduled alltoallv algorithm of the registry in the simulator, on the count patterns
// that matter in practice: random, sparse (most pairs empty, as in HeFFTe's reshapes),
// a rank that sends nothing and one that receives nothing, one huge block among tiny ones,
// power-law rows, and the banded pattern of a partitioned sparse matrix.
#include "collective/alltoall/builders.hpp"
#include "collective/registry.hpp"
#include "collective/selection.hpp"
#include "simulate.hpp"

#include <gtest/gtest.h>

#include <random>
#include <set>
#include <string>

namespace mpia {
namespace {

using Matrix = std::vector<std::int64_t>;  // bytes(src, dst), row-major

// The pairs the bruck builder may ask rank p for (builders.hpp): its own blocks, and after each
// round those it then holds -- what the size exchange at init tells it, nothing more.
std::set<std::pair<int, int>> bruck_pairs(int p, int P, int radix) {
  std::set<std::pair<int, int>> out;
  for (const DigitRound& d : radix_rounds(P, radix))
    for (int j : d.blocks) out.insert(radix_block_after(p, P, j, d.distance / d.z * radix));
  return out;
}

// The sizes of m, failing the test for a pair outside allowed (own blocks always allowed).
PairBytes strict_sizes(int rank, int P, const Matrix& m, std::set<std::pair<int, int>> allowed) {
  return [rank, P, &m, allowed = std::move(allowed)](int src, int dst) {
    if (src != rank && dst != rank && !allowed.count({src, dst}))
      ADD_FAILURE() << "rank " << rank << " asked for the size of " << src << " -> " << dst;
    return m[std::size_t(src) * P + dst];
  };
}

std::vector<std::pair<std::string, Matrix>> patterns(int P, std::mt19937& rng) {
  std::vector<std::pair<std::string, Matrix>> out;
  auto make = [&](const char* name, auto f) {
    Matrix m(std::size_t(P) * P);
    for (int s = 0; s < P; ++s)
      for (int d = 0; d < P; ++d) m[std::size_t(s) * P + d] = f(s, d);
    out.emplace_back(name, std::move(m));
  };
  make("random", [&](int, int) { return std::int64_t(rng() % 7); });
  make("sparse", [&](int, int) { return rng() % 5 == 0 ? std::int64_t(1 + rng() % 9) : 0; });
  make("zeros", [](int, int) { return std::int64_t(0); });
  make("silent_and_deaf", [&](int s, int d) {
    return s == 0 || d == P - 1 ? std::int64_t(0) : std::int64_t(1 + (s + d) % 3);
  });
  make("one_huge", [&](int s, int d) { return s == P / 2 && d == 0 ? std::int64_t(5000) : 1; });
  make("power_law", [&](int s, int d) { return std::int64_t(64 / ((s * 31 + d * 17) % P + 1)); });
  make("banded", [&](int s, int d) {  // 1D Laplacian rows partitioned by rank
    const int dist = std::abs(s - d);
    return dist == 1 ? std::int64_t(8) : dist == 0 ? std::int64_t(2) : 0;
  });
  return out;
}

std::vector<Selection> selections(int P) {
  std::vector<Selection> out;
  for (int i = 0; const AlgorithmSpec* a = algorithm_at(Collective::Alltoallv, i); ++i) {
    // The locality-aware ones need a node map: test_two_level.cpp.
    if (a->kind != AlgorithmKind::Scheduled || a->needs_locality) continue;
    for (ParamValues& v : param_grid(*a, P, 36)) out.push_back(Selection{a, std::move(v)});
  }
  return out;
}

TEST(BuildersV, EveryAlgorithmDeliversEveryByte) {
  std::mt19937 rng(12345);
  for (int P : {1, 2, 3, 4, 5, 7, 8, 11, 16, 23, 32}) {
    for (auto& [pname, m] : patterns(P, rng)) {
      auto layout = [&, &m = m](int r) {
        SimLayout l;
        for (int q = 0; q < P; ++q) {
          l.send_bytes.push_back(m[std::size_t(r) * P + q]);
          l.recv_bytes.push_back(m[std::size_t(q) * P + r]);
        }
        return l;
      };
      for (const Selection& sel : selections(P)) {
        SimResult res = simulate(
            P,
            [&, &m = m](int rank) {
              AlltoallvShape shape;
              shape.rank = rank;
              shape.size = P;
              SimLayout l = layout(rank);
              shape.send_bytes = l.send_bytes;
              shape.recv_bytes = l.recv_bytes;
              if (sel.algorithm->needs_peer_sizes)
                shape.pair_bytes =
                    strict_sizes(rank, P, m, bruck_pairs(rank, P, int(sel.value("radix"))));
              return sel.algorithm->build_alltoallv(shape, sel.values);
            },
            layout, [](int rank, int block) { return std::make_pair(block, rank); });
        ASSERT_TRUE(res.ok) << sel.to_string() << " P=" << P << " " << pname << ": " << res.error;
      }
    }
  }
}

// The window counts only real exchanges: a rank with k non-empty peers posts k messages.
TEST(BuildersV, NoZeroByteMessagesAndOnlyRealExchanges) {
  const int P = 9;
  std::vector<std::int64_t> send(P, 0), recv(P, 0);
  send[3] = 10;
  recv[5] = 4;
  AlltoallvShape shape{0, P, send, recv, {}};
  for (const Selection& sel : selections(P)) {
    if (sel.algorithm->needs_peer_sizes) continue;
    Schedule s = sel.algorithm->build_alltoallv(shape, sel.values);
    ASSERT_EQ(s.rounds.size(), 1u) << sel.to_string();
    EXPECT_EQ(s.rounds[0].exchanges.size(), 2u) << sel.to_string();
    EXPECT_EQ(s.messages_sent(), 1) << sel.to_string();
  }
}

TEST(BuildersV, WindowPolicyComesFromTheRegistry) {
  const int P = 6;
  AlltoallvShape shape{0, P, std::vector<std::int64_t>(P, 1), std::vector<std::int64_t>(P, 1), {}};
  auto policy = [&](const char* text) {
    Selection sel = parse_selection(Collective::Alltoallv, text, P, true);
    return sel.algorithm->build_alltoallv(shape, sel.values).policy;
  };
  EXPECT_EQ(policy("pairwise").window, 1);
  EXPECT_EQ(policy("linear").window, 0);
  EXPECT_EQ(policy("multipair_waitany:window=3").window, 3);
  EXPECT_EQ(policy("multipair_waitany").completion, Completion::Waitany);
  EXPECT_EQ(policy("multipair_testany").completion, Completion::Testany);
  EXPECT_EQ(policy("multipair_waitall").completion, Completion::Waitall);
}

}  // namespace
}  // namespace mpia
