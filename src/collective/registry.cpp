#include "collective/registry.hpp"

#include "util/error.hpp"

#include <mpi.h>

#include <cmath>

namespace mpia {

namespace {

std::int64_t isqrt_ceil(std::int64_t n) {
  std::int64_t r = std::int64_t(std::sqrt(double(n)));
  while (r * r < n) ++r;
  while (r > 1 && (r - 1) * (r - 1) >= n) --r;
  return r;
}

std::int64_t radix_min(const Extent&) { return 2; }
std::int64_t radix_max(const Extent& e) { return e.nranks < 2 ? 2 : e.nranks; }
// seed 003, section III-B: r = sqrt(P) balances rounds against volume.
std::int64_t radix_default(const Extent& e) {
  const std::int64_t r = isqrt_ceil(e.nranks);
  return r < 2 ? 2 : r;
}
// TRA2 (seed 003, section V-C): r1 = sqrt(Q) within a node, r2 = N across nodes.
std::int64_t intra_default(const Extent& e) {
  const std::int64_t r = isqrt_ceil(e.max_local);
  return r < 2 ? 2 : r;
}
std::int64_t intra_max(const Extent& e) { return e.max_local < 2 ? 2 : e.max_local; }
std::int64_t inter_default(const Extent& e) { return e.nnodes < 2 ? 2 : e.nnodes; }

Schedule with(Schedule s, Policy policy, Lowering lowering) {
  s.policy = policy;
  s.lowering = lowering;
  return s;
}

constexpr Policy kRoundByRound{0, Completion::Waitall};

Schedule pairwise(const AlltoallShape& s, const ParamValues&) {
  return with(build_direct(s), Policy{1, Completion::Waitall}, Lowering::Pack);
}
Schedule linear(const AlltoallShape& s, const ParamValues&) {
  return with(build_direct(s), kRoundByRound, Lowering::Pack);
}
Schedule bruck(const AlltoallShape& s, const ParamValues&) {
  return with(build_radix_bruck(s, 2, BruckVariant::Basic), kRoundByRound, Lowering::Pack);
}
Schedule modified_bruck(const AlltoallShape& s, const ParamValues&) {
  return with(build_radix_bruck(s, 2, BruckVariant::Modified), kRoundByRound, Lowering::Pack);
}
Schedule zero_copy_bruck(const AlltoallShape& s, const ParamValues&) {
  return with(build_radix_bruck(s, 2, BruckVariant::ZeroCopy), kRoundByRound,
              Lowering::Datatype);
}
Schedule tra(const AlltoallShape& s, const ParamValues& v) {
  return with(build_radix_bruck(s, int(v[0]), BruckVariant::ZeroCopy), kRoundByRound,
              Lowering::Pack);
}
Schedule tra2(const AlltoallShape& s, const ParamValues& v) {
  const std::int64_t B = s.block_bytes;
  if (B == 0) return Schedule{};
  if (!s.nodes) fail(MPI_ERR_INTERN, "mpi-advance: tra2 built without a node map");
  return with(build_two_level(s.rank, *s.nodes, int(v[0]), int(v[1]),
                              [B](int, int) { return B; }, false),
              kRoundByRound, Lowering::Pack);
}

std::int64_t window_default(const Extent&) { return 8; }
std::int64_t window_min(const Extent&) { return 1; }
std::int64_t window_max(const Extent&) { return std::int64_t(1) << 30; }

Schedule direct_v(const AlltoallvShape& s, Policy policy) {
  return with(build_direct_v(s.rank, s.send_bytes, s.recv_bytes), policy, Lowering::Pack);
}
Schedule v_pairwise(const AlltoallvShape& s, const ParamValues&) {
  return direct_v(s, Policy{1, Completion::Waitall});
}
Schedule v_linear(const AlltoallvShape& s, const ParamValues&) { return direct_v(s, kRoundByRound); }
Schedule v_waitall(const AlltoallvShape& s, const ParamValues& v) {
  return direct_v(s, Policy{int(v[0]), Completion::Waitall});
}
Schedule v_waitany(const AlltoallvShape& s, const ParamValues& v) {
  return direct_v(s, Policy{int(v[0]), Completion::Waitany});
}
Schedule v_testany(const AlltoallvShape& s, const ParamValues& v) {
  return direct_v(s, Policy{int(v[0]), Completion::Testany});
}
// Node-aware alltoallv: both phases of the two-level exchange direct (radix >= size, digits
// merged), so a rank sends within its node once to each port, then each port once to each
// remote node's rank of its lane.
Schedule v_locality(const AlltoallvShape& s, const ParamValues&) {
  if (!s.nodes) fail(MPI_ERR_INTERN, "mpi-advance: locality built without a node map");
  return with(build_two_level(s.rank, *s.nodes, s.nodes->max_local(), s.nodes->nnodes(),
                              s.pair_bytes, true),
              kRoundByRound, Lowering::Pack);
}
Schedule v_bruck(const AlltoallvShape& s, const ParamValues& v) {
  return with(build_radix_bruck_v(s.rank, s.size, int(v[0]), s.pair_bytes), kRoundByRound,
              Lowering::Pack);
}

Schedule n_direct(const NeighborShape& s, const ParamValues&) {
  return with(build_neighbor_direct(s), kRoundByRound, Lowering::Pack);
}
Schedule n_locality(const NeighborShape& s, const ParamValues&) {
  return with(build_neighbor_locality(s), kRoundByRound, Lowering::Pack);
}

const ParamSpec kWindow{"window",
                        "exchanges in flight at once (the paper's stride), >= 1; default 8",
                        window_default, window_min, window_max};
const ParamSpec kRadixV{"radix", "base of the exchange, 2..P (default 2: Bruck)",
                        radix_min, radix_min, radix_max};

const ParamSpec kRadix{"radix", "base of the exchange, 2..P (2 = Bruck, P = direct)",
                       radix_default, radix_min, radix_max};
const ParamSpec kRadixIntra{"radix_intra",
                            "base of the intra-node exchange, 2..Q (Q: most ranks on a node); "
                            "default ceil(sqrt(Q))",
                            intra_default, radix_min, intra_max};
const ParamSpec kRadixInter{"radix_inter",
                            "base of the inter-node exchange, 2..N (N: nodes); default N",
                            inter_default, radix_min, inter_default};

}  // namespace

const char* collective_name(Collective c) {
  switch (c) {
    case Collective::Alltoall: return "alltoall";
    case Collective::Alltoallv: return "alltoallv";
    default: return "neighbor_alltoallv";
  }
}
const char* collective_env(Collective c) {
  switch (c) {
    case Collective::Alltoall: return "MPIX_ALLTOALL";
    case Collective::Alltoallv: return "MPIX_ALLTOALLV";
    default: return "MPIX_NEIGHBOR_ALLTOALLV";
  }
}
bool collective_from_name(std::string_view name, Collective& c) {
  for (Collective k : {Collective::Alltoall, Collective::Alltoallv, Collective::NeighborAlltoallv})
    if (name == collective_name(k)) return c = k, true;
  return false;
}

const std::vector<AlgorithmSpec>& registry() {
  static const std::vector<AlgorithmSpec> table = {
      {Collective::Alltoall, "pairwise",
       "direct exchange with one peer at a time: P-1 rounds (seed 001 Alg. 1)",
       AlgorithmKind::Scheduled, {}, pairwise},
      {Collective::Alltoall, "linear",
       "direct exchange, all P-1 sends and receives posted at once (seed 001 Alg. 2)",
       AlgorithmKind::Scheduled, {}, linear},
      {Collective::Alltoall, "bruck",
       "Bruck et al.: log2(P) rounds, rotate in, unpack each round, rotate out",
       AlgorithmKind::Scheduled, {}, bruck, nullptr, false, false, nullptr, "bruck"},
      {Collective::Alltoall, "modified_bruck",
       "Traff's modified Bruck: log2(P) rounds, no final rotation", AlgorithmKind::Scheduled,
       {}, modified_bruck, nullptr, false, false, nullptr, "bruck"},
      {Collective::Alltoall, "zero_copy_bruck",
       "Traff's zero-copy Bruck: log2(P) rounds, one derived datatype per round, no copies",
       AlgorithmKind::Scheduled, {}, zero_copy_bruck, nullptr, false, false, nullptr, "bruck"},
      {Collective::Alltoall, "tra",
       "tunable radix (seed 003): K=w(r-1)-floor((r^w-P)/r^(w-1)) rounds, zero-copy placement",
       AlgorithmKind::Scheduled, {kRadix}, tra},
      {Collective::Alltoall, "tra2",
       "two-level tunable radix (seed 003 IV): radix_intra rounds within each node, then "
       "radix_inter rounds between nodes, all ranks of a node acting as ports; any placement",
       AlgorithmKind::Scheduled, {kRadixIntra, kRadixInter}, tra2, nullptr, false, true},
      {Collective::Alltoall, "system", "the MPI library's own alltoall (persistent if it has one)",
       AlgorithmKind::System, {}, nullptr},
      {Collective::Alltoall, "auto",
       "the tuning file's rule, else the cost model (collective/model.hpp) over every algorithm "
       "and parameter, tra2 included, from P, the node map and the block size",
       AlgorithmKind::Auto, {}, nullptr},
      {Collective::Alltoallv, "pairwise",
       "one exchange at a time, peer rank+i / rank-i (seed 001 Alg. 1)",
       AlgorithmKind::Scheduled, {}, nullptr, v_pairwise},
      {Collective::Alltoallv, "linear",
       "every non-empty send and receive posted at once, one waitall (seed 001 Alg. 2)",
       AlgorithmKind::Scheduled, {}, nullptr, v_linear},
      {Collective::Alltoallv, "multipair_waitall",
       "window of exchanges, the next window posted when all complete (seed 001 Alg. 3)",
       AlgorithmKind::Scheduled, {kWindow}, nullptr, v_waitall},
      {Collective::Alltoallv, "multipair_waitany",
       "window of exchanges, refilled by waitany as each completes (seed 001 Alg. 4)",
       AlgorithmKind::Scheduled, {kWindow}, nullptr, v_waitany},
      {Collective::Alltoallv, "multipair_testany",
       "window of exchanges, refilled by polling testany, never blocking (seed 001 Alg. 5)",
       AlgorithmKind::Scheduled, {kWindow}, nullptr, v_testany},
      {Collective::Alltoallv, "bruck",
       "zero-copy radix-r exchange for near-uniform small blocks; the sizes of the blocks a "
       "rank forwards are learnt at init by running the same rounds on the sizes",
       AlgorithmKind::Scheduled, {kRadixV}, nullptr, v_bruck, true},
      {Collective::Alltoallv, "locality",
       "node-aware: blocks for a remote node gathered in the node and sent as one message per "
       "node pair and port; the sizes a port forwards are gathered within its node at init",
       AlgorithmKind::Scheduled, {}, nullptr, v_locality, true, true},
      {Collective::Alltoallv, "system", "the MPI library's own alltoallv (persistent if it has one)",
       AlgorithmKind::System, {}, nullptr},
      {Collective::Alltoallv, "auto",
       "cost model on agreed statistics (direct, bruck radix, locality); blocking: the same, "
       "from the agreed plan cache once a pattern repeats, else multipair_waitany",
       AlgorithmKind::Auto, {}, nullptr},
      {Collective::NeighborAlltoallv, "direct",
       "one message per edge, all posted at once, matched per direction (Cartesian) or per "
       "edge order (graphs)",
       AlgorithmKind::Scheduled, {}, nullptr, nullptr, false, false, n_direct},
      {Collective::NeighborAlltoallv, "locality",
       "node-aware: edges between two nodes combined into one message between one gateway "
       "rank on each; routing from the allgathered edge list at init",
       AlgorithmKind::Scheduled, {}, nullptr, nullptr, true, true, n_locality},
      {Collective::NeighborAlltoallv, "system",
       "the MPI library's own neighbor alltoallv (persistent if it has one)",
       AlgorithmKind::System, {}, nullptr},
      {Collective::NeighborAlltoallv, "auto",
       "persistent: cost model on agreed statistics (off-node edges, nodes they reach, largest "
       "message): locality or direct; blocking: the same, from the agreed plan cache once a "
       "pattern repeats, else direct",
       AlgorithmKind::Auto, {}, nullptr},
  };
  return table;
}

const AlgorithmSpec* find_algorithm(Collective c, std::string_view name) {
  for (const AlgorithmSpec& a : registry())
    if (a.collective == c && name == a.name) return &a;
  return nullptr;
}

const AlgorithmSpec* algorithm_at(Collective c, int index) {
  if (index < 0) return nullptr;
  for (const AlgorithmSpec& a : registry())
    if (a.collective == c && index-- == 0) return &a;
  return nullptr;
}

std::string Selection::to_string() const {
  std::string s = algorithm ? algorithm->name : "none";
  for (std::size_t i = 0; algorithm && i < algorithm->params.size(); ++i)
    s += (i == 0 ? ":" : ",") + std::string(algorithm->params[i].name) + "=" +
         std::to_string(values[i]);
  return s;
}

std::int64_t Selection::value(std::string_view param) const {
  for (std::size_t i = 0; i < algorithm->params.size(); ++i)
    if (param == algorithm->params[i].name) return values[i];
  return 0;
}

}  // namespace mpia
