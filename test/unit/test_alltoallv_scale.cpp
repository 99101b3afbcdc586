// The alltoallv algorithms at scale, in process: every scheduled alltoallv record (the forwarding
// ones bruck, hybrid, locality, locality_radix at several radices and thresholds) learns the sizes
// it forwards through its own init-time exchange hook -- run for all P ranks at once, one thread
// each, over an in-process SizeChannel -- then builds its schedule from what it learnt, and the
// simulator checks every received byte. Count distributions: uniform, power law (S x^4, x from a
// hash of the pair), sparse (~sqrt(P) peers), hot spots, all-zero rows and columns, one huge
// block, counts that differ by sender only and by receiver only; P = 1, 2, 3, 5, 8, 13, 16, 64;
// node maps in blocks (uneven last node) and round-robin for the locality-aware ones. Also the
// peak scratch of each algorithm (the schedule's scratch plus the engine's staging under the
// Pack lowering) against the bound of issue 19: at most twice the bytes the rank sends plus
// O(P).
#include "collective/alltoall/builders.hpp"
#include "collective/model.hpp"
#include "collective/registry.hpp"
#include "collective/selection.hpp"
#include "locality/node_map.hpp"
#include "sanitized.hpp"
#include "simulate.hpp"
#include "thread_channel.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <exception>
#include <string>

namespace mpia {
namespace {

using Matrix = std::vector<std::int64_t>;  // bytes(src, dst), row-major

std::uint64_t hash2(int a, int b, std::uint64_t salt) {
  std::uint64_t h =
      (std::uint64_t(unsigned(a)) << 32 | unsigned(b)) ^ (salt * 0x9E3779B97F4A7C15ull);
  h = (h ^ (h >> 30)) * 0xBF58476D1CE4E5B9ull;
  h = (h ^ (h >> 27)) * 0x94D049BB133111EBull;
  return h ^ (h >> 31);
}

struct Distribution {
  const char* name;
  std::int64_t (*bytes)(int s, int d, int P);
};

std::int64_t isqrt_up(int P) {
  std::int64_t k = 1;
  while (k * k < P) ++k;
  return k;
}

const Distribution kDistributions[] = {
    {"uniform", [](int, int, int) -> std::int64_t { return 6; }},
    // floor(S x^4), x in (0, 1] from a hash of the pair: a few large blocks per rank.
    {"power_law",
     [](int s, int d, int) -> std::int64_t {
       const double x = double(hash2(s, d, 1) % 1048576 + 1) / 1048576.0;
       return std::int64_t(60 * x * x * x * x);
     }},
    // Each rank to about sqrt(P) peers.
    {"sparse",
     [](int s, int d, int P) -> std::int64_t {
       return hash2(s, d, 2) % std::uint64_t(isqrt_up(P)) == 0
                  ? 1 + std::int64_t(hash2(s, d, 3) % 9)
                  : 0;
     }},
    // A few ranks (every fifth) receive much more.
    {"hot_spots", [](int, int d, int) -> std::int64_t { return d % 5 == 0 ? 40 : 2; }},
    {"zero_rows_and_columns",
     [](int s, int d, int) -> std::int64_t {
       return s % 3 == 1 || d % 4 == 2 ? 0 : 1 + (s + d) % 5;
     }},
    {"one_huge",
     [](int s, int d, int P) -> std::int64_t { return s == P - 1 && d == 0 ? 3000 : (s * d) % 3; }},
    {"by_sender_only", [](int s, int, int) -> std::int64_t { return 1 + 3 * (s % 4); }},
    {"by_receiver_only", [](int, int d, int) -> std::int64_t { return (d % 3) * 5; }},
};

Matrix make_matrix(const Distribution& dist, int P) {
  Matrix m(std::size_t(P) * P);
  for (int s = 0; s < P; ++s)
    for (int d = 0; d < P; ++d) m[std::size_t(s) * P + d] = dist.bytes(s, d, P);
  return m;
}

// Each rank's shape after its init-time exchange (what the persistent init gives the builder).
std::vector<AlltoallvShape> learnt_shapes(const Selection& sel, int P, const Matrix& m,
                                          const NodeMap* nodes, std::string& error) {
  std::vector<AlltoallvShape> shapes(static_cast<std::size_t>(P));
  for (int r = 0; r < P; ++r) {
    AlltoallvShape& s = shapes[std::size_t(r)];
    s.rank = r;
    s.size = P;
    s.nodes = sel.algorithm->needs_locality ? nodes : nullptr;
    for (int q = 0; q < P; ++q) {
      s.send_bytes.push_back(m[std::size_t(r) * P + q]);
      s.recv_bytes.push_back(m[std::size_t(q) * P + r]);
    }
  }
  if (!sel.algorithm->learn_alltoallv) return shapes;
  error = run_threads(P, [&](int r, SizeChannel& ch) {
    sel.algorithm->learn_alltoallv(shapes[std::size_t(r)], sel.values, ch);
  });
  return shapes;
}

SimLayout layout_of(const AlltoallvShape& s) { return {s.send_bytes, s.recv_bytes}; }

// What a rank holds beyond the user's buffers while the schedule runs: the schedule's scratch,
// and the engine's staging under the Pack lowering (every transfer of several pieces, the
// rounds sharing one area: schedule/engine.cpp), dense datatypes assumed.
std::int64_t peak_scratch(const Schedule& s) {
  std::int64_t staging = 0;
  for (const Round& r : s.rounds) {
    std::int64_t n = 0;
    for (const Exchange& x : r.exchanges)
      for (const Transfer* t : {&x.send, &x.recv})
        if (t->active() && t->pieces.size() > 1 && s.lowering == Lowering::Pack) n += t->bytes();
    staging = std::max(staging, n);
  }
  return s.scratch_bytes + staging;
}

struct NodeLayout {
  std::string name;
  NodeMap map;
};

// Node maps for P ranks: blocks of 4 (the last node short when 4 does not divide P), the same
// dealt round-robin, and, at 64 ranks, 4 nodes of 16.
std::vector<NodeLayout> machines(int P) {
  std::vector<NodeLayout> out;
  std::vector<int> blocks(static_cast<std::size_t>(P)), rr(blocks.size());
  const int N = (P + 3) / 4;
  for (int r = 0; r < P; ++r) blocks[std::size_t(r)] = r / 4, rr[std::size_t(r)] = r % N;
  out.push_back({"ppn4", make_node_map(blocks)});
  if (P > 4) out.push_back({"ppn4_roundrobin", make_node_map(rr)});
  if (P == 64) {
    for (int r = 0; r < P; ++r) blocks[std::size_t(r)] = r / 16;
    out.push_back({"ppn16", make_node_map(blocks)});
  }
  return out;
}

// The algorithm at values spanning its parameters' ranges on this machine (a radix: every
// value up to 16 ranks or nodes, 2..5, the default, P and one between at scale).
std::vector<Selection> selections(const AlgorithmSpec& a, const Extent& e) {
  std::vector<Selection> out;
  for (ParamValues& v : param_grid(a, e, 16)) out.push_back(Selection{&a, std::move(v)});
  return out;
}

TEST(AlltoallvScale, LearntSizesDeliverEveryByte) {
  for (int P : {1, 2, 3, 5, 8, 13, 16, 64}) {
    if (mpia_unit::kSanitized && P == 64) continue;  // see sanitized.hpp
    const std::vector<NodeLayout> ms = machines(P);
    for (const Distribution& dist : kDistributions) {
      const Matrix m = make_matrix(dist, P);
      for (int i = 0; const AlgorithmSpec* a = algorithm_at(Collective::Alltoallv, i); ++i) {
        if (a->kind != AlgorithmKind::Scheduled) continue;
        for (const NodeLayout& mach : ms) {
          if (!a->needs_locality && &mach != &ms.front()) continue;
          const Extent e(P, mach.map.nnodes(), mach.map.max_local());
          for (const Selection& sel : selections(*a, e)) {
            const std::string where = sel.to_string() + " P=" + std::to_string(P) + " " +
                                      dist.name + (a->needs_locality ? " " + mach.name : "");
            std::string error;
            std::vector<AlltoallvShape> shapes = learnt_shapes(sel, P, m, &mach.map, error);
            ASSERT_TRUE(error.empty()) << where << ": size exchange: " << error;
            SimResult res;
            try {
              res = simulate(
                  P,
                  [&](int rank) {
                    return sel.algorithm->build_alltoallv(shapes[std::size_t(rank)], sel.values);
                  },
                  [&](int rank) { return layout_of(shapes[std::size_t(rank)]); },
                  [](int rank, int block) { return std::make_pair(block, rank); });
            } catch (const std::exception& ex) {
              FAIL() << where << ": " << ex.what();
            }
            ASSERT_TRUE(res.ok) << where << ": " << res.error;
          }
        }
      }
    }
  }
}

// hybrid: no block above the threshold is ever forwarded (each goes in one message from its
// source to its destination), and at threshold 0 every non-empty block goes directly.
TEST(AlltoallvScale, HybridSendsLargeBlocksDirectly) {
  const int P = 13;
  const Matrix m = make_matrix(kDistributions[1], P);  // power law
  for (std::int64_t threshold : {0, 10, 30}) {
    const Selection sel = parse_selection(
        Collective::Alltoallv, "hybrid:radix=2,threshold=" + std::to_string(threshold), P, true);
    std::string error;
    std::vector<AlltoallvShape> shapes = learnt_shapes(sel, P, m, nullptr, error);
    ASSERT_TRUE(error.empty()) << error;
    for (int r = 0; r < P; ++r) {
      const Schedule s = sel.algorithm->build_alltoallv(shapes[std::size_t(r)], sel.values);
      std::int64_t large = 0, direct = 0;
      for (int d = 0; d < P; ++d) large += d != r && m[std::size_t(r) * P + d] > threshold;
      for (const Round& round : s.rounds)
        for (const Exchange& x : round.exchanges) {
          if (!x.send.active()) continue;
          for (const Piece& p : x.send.pieces) {
            // Forwarded pieces live in scratch; a block sent from the send buffer is this
            // rank's own, and a large one must be alone in its message to its destination.
            if (p.slot == Slot::Scratch) EXPECT_LE(p.bytes, threshold) << "forwarded";
            if (p.slot == Slot::Send && p.bytes > threshold) {
              ++direct;
              EXPECT_EQ(x.send.pieces.size(), 1u);
              EXPECT_EQ(x.send.peer, p.block);
            }
          }
        }
      EXPECT_EQ(direct, large) << "rank " << r << " threshold " << threshold;
      if (threshold == 0) EXPECT_LE(s.scratch_bytes, 0) << "nothing is forwarded";
    }
  }
}

// locality_radix on N nodes at radix r: ceil(log_r N) inter-node steps, each of at most r - 1
// messages per lane served; radix N is locality's schedule.
TEST(AlltoallvScale, LocalityRadixStepsBetweenNodes) {
  const int P = 64;
  std::vector<int> labels(static_cast<std::size_t>(P));
  for (int r = 0; r < P; ++r) labels[std::size_t(r)] = r / 4;  // 16 nodes of 4
  const NodeMap map = make_node_map(labels);
  const Matrix m = make_matrix(kDistributions[0], P);
  const Extent e(P, 16, 4);
  for (int radix : {2, 4, 16}) {
    const Selection sel = parse_selection(Collective::Alltoallv,
                                          "locality_radix:radix=" + std::to_string(radix), e, true);
    std::string error;
    std::vector<AlltoallvShape> shapes = learnt_shapes(sel, P, m, &map, error);
    ASSERT_TRUE(error.empty()) << error;
    int steps = 0;
    for (int n = 1; n < 16; n *= radix) ++steps;
    for (int r = 0; r < P; ++r) {
      const Schedule s = sel.algorithm->build_alltoallv(shapes[std::size_t(r)], sel.values);
      int inter_rounds = 0;
      for (const Round& round : s.rounds) {
        int inter = 0;
        for (const Exchange& x : round.exchanges)
          inter += x.send.active() && map.node_of[x.send.peer] != map.node_of[r];
        EXPECT_LE(inter, radix - 1) << "radix " << radix;
        inter_rounds += inter > 0;
      }
      EXPECT_EQ(inter_rounds, steps) << "radix " << radix << " rank " << r;
    }
  }
}

// The cost records count the rounds and messages their schedules have: hybrid with no block
// above the threshold is the radix exchange (K(P, r) rounds of one message), at threshold 0 a
// direct exchange; locality_radix has Q - 1 rounds in the node, then one step per base-r digit
// of N with up to r - 1 messages each.
TEST(AlltoallvScale, CostsCountWhatTheSchedulesDo) {
  const Machine flat = Machine::flat(64);
  const Stats uniform{8, 8 * 64, 64, 0, 0};
  for (int r : {2, 3, 8}) {
    const Terms t = predicted_terms(
        parse_selection(Collective::Alltoallv, "hybrid:radix=" + std::to_string(r) + ",threshold=8",
                        64, true),
        flat, uniform);
    EXPECT_EQ(t.rounds, tra_rounds_K(64, r)) << r;
    EXPECT_EQ(t.messages, tra_rounds_K(64, r)) << r;
    EXPECT_EQ(t.blocks, tra_blocks_D(64, r)) << r;
  }
  const Terms direct = predicted_terms(
      parse_selection(Collective::Alltoallv, "hybrid:radix=2,threshold=0", 64, true), flat,
      uniform);
  EXPECT_EQ(direct.messages, 64);
  EXPECT_EQ(direct.rounds, 0);
  const Machine nodes{64, 16, 4, true};
  const Extent e(64, 16, 4);
  for (int r : {2, 4, 16}) {
    const Terms t =
        predicted_terms(parse_selection(Collective::Alltoallv,
                                        "locality_radix:radix=" + std::to_string(r), e, true),
                        nodes, uniform);
    int steps = 0;
    for (int n = 1; n < 16; n *= r) ++steps;
    EXPECT_EQ(t.rounds, 3 + steps) << r;
    EXPECT_EQ(t.messages, 3 + (r - 1) * steps) << r;
  }
}

// The peak scratch per rank of every forwarding algorithm, P = 64 on 16 nodes of 4, against the
// bound of issue 19 (twice the bytes the rank sends, forwarded ones included, plus 64 P); the
// table goes to the test's output (docs/guide.md, "Scratch while running").
TEST(AlltoallvScale, PeakScratchWithinBound) {
  const int P = 64;
  std::vector<int> labels(static_cast<std::size_t>(P));
  for (int r = 0; r < P; ++r) labels[std::size_t(r)] = r / 4;
  const NodeMap map = make_node_map(labels);
  const Extent e(P, 16, 4);
  std::printf("%-36s %-10s %12s %12s %12s %8s\n", "algorithm", "counts", "own bytes", "sent bytes",
              "peak scratch", "ratio");
  for (const char* text :
       {"linear", "bruck:radix=2", "bruck:radix=8", "hybrid:radix=2", "hybrid:radix=4,threshold=16",
        "locality", "locality_radix:radix=2", "locality_radix:radix=4"}) {
    const Selection sel = parse_selection(Collective::Alltoallv, text, e, true);
    for (int k : {0, 1, 5}) {  // uniform, power law, one huge block
      const Matrix m = make_matrix(kDistributions[k], P);
      std::string error;
      std::vector<AlltoallvShape> shapes = learnt_shapes(sel, P, m, &map, error);
      ASSERT_TRUE(error.empty()) << error;
      std::int64_t worst_own = 0, worst_sent = 0, worst_peak = 0;
      double worst_ratio = 0;
      for (int r = 0; r < P; ++r) {
        const Schedule s = sel.algorithm->build_alltoallv(shapes[std::size_t(r)], sel.values);
        std::int64_t own = 0;
        for (int d = 0; d < P; ++d) own += m[std::size_t(r) * P + d];
        const std::int64_t sent = s.bytes_sent(), peak = peak_scratch(s);
        EXPECT_LE(peak, 2 * sent + 64 * P)
            << text << " " << kDistributions[k].name << " rank " << r;
        const double ratio = double(peak) / double(std::max<std::int64_t>(1, sent));
        if (ratio >= worst_ratio)
          worst_ratio = ratio, worst_own = own, worst_sent = sent, worst_peak = peak;
      }
      std::printf("%-36s %-10s %12lld %12lld %12lld %8.2f\n", sel.to_string().c_str(),
                  kDistributions[k].name, (long long)worst_own, (long long)worst_sent,
                  (long long)worst_peak, worst_ratio);
    }
  }
}

}  // namespace
}  // namespace mpia
