#include "collective/model.hpp"

#include "collective/selection.hpp"
#include "locality/node_map.hpp"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

namespace mpia {

namespace {

struct Key {
  const char* name;
  double CostModel::*field;
};
// In the order of the terms (enum Term): a prediction is the dot product of the two.
constexpr Key kKeys[] = {
    {"o_intra", &CostModel::o_intra},           {"o_inter", &CostModel::o_inter},
    {"lat_intra", &CostModel::lat_intra},       {"lat_inter", &CostModel::lat_inter},
    {"bw_intra", &CostModel::bw_intra},         {"bw_inter", &CostModel::bw_inter},
    {"bw_copy", &CostModel::bw_copy},           {"o_recv_intra", &CostModel::o_recv_intra},
    {"o_recv_inter", &CostModel::o_recv_inter}, {"g_inflight", &CostModel::g_inflight},
};
static_assert(sizeof kKeys / sizeof kKeys[0] == kModelTerms, "one key per term");

double inverse(double bw) { return bw > 0 ? 1.0 / bw : 0.0; }

enum Term {
  kMsgIntra, kMsgInter, kLatIntra, kLatInter, kBytesIntra, kBytesNic, kBytesCopy,
  kRecvIntra, kRecvInter, kInflight
};
// The constants whose term is bytes: the model holds a bandwidth, the term its inverse.
constexpr bool is_bandwidth(int i) { return i == kBytesIntra || i == kBytesNic || i == kBytesCopy; }

// Messages in flight through a node's NIC when each of its q ranks has k off-node exchanges
// (a send and a receive each) outstanding at once, beyond the one exchange per rank that every
// round of a round-by-round schedule has: what g_inflight is charged for.
double inflight_beyond_one(double q, double k) { return k > 1 ? 2 * q * (k - 1) : 0.0; }

// The blocks of a radix-r exchange among n participants whose j-th digit (in base r) at
// position x (weight rx) is z: the round (x, z) of seed 003 (the same count as
// tra_blocks_D's terms).
std::int64_t round_blocks(std::int64_t n, std::int64_t rx, std::int64_t r, std::int64_t z) {
  const std::int64_t cycle = rx * r;
  const std::int64_t rem = n % cycle;
  return (n / cycle) * rx + std::clamp<std::int64_t>(rem - z * rx, 0, rx);
}

// One round in which every rank sends one message of `bytes` over distance `d` and receives
// one; `nic_flows` ranks of each node send theirs off the node at once (0: all intra-node).
void add_round(Terms& t, double bytes, std::int64_t nic_flows, std::int64_t blocks) {
  ++t.rounds;
  ++t.messages;
  t.blocks += blocks;
  // The message received comes over the same distance (from rank - d): off the node exactly
  // when the one sent leaves it, on blocked nodes and on scattered ones alike.
  if (nic_flows > 0) {
    t.c[kMsgInter] += 1;
    t.c[kRecvInter] += 1;
    t.c[kLatInter] += 1;
    t.c[kBytesNic] += bytes * double(nic_flows);
  } else {
    t.c[kMsgIntra] += 1;
    t.c[kRecvIntra] += 1;
    t.c[kLatIntra] += 1;
    t.c[kBytesIntra] += bytes;
  }
  // A message of several blocks is packed on the way out and unpacked on arrival.
  if (blocks > 1) t.c[kBytesCopy] += 2 * bytes;
}

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

// A flat radix exchange whose digits end at the node's boundary (the ranks per node a power
// of the radix: radix 2 and 4 on 16-rank nodes), on blocked nodes: its first log_r(Q) digits
// are the rounds of distance below a node, in which only the ranks within d of the node's end
// send off the node, the same ones round after round; the node's ranks fall out of step, and
// one rank's overheads and latencies overlap the others' transfers through the NIC. Measured in
// the simulation (scripts/smpi, P = 64-1024, 8 B-4 KiB): the time is max(A, W) + s min(A, W),
// A the overheads and latencies, W the transfers, s from 0.19 to 0.43 (median 0.26; 0.3 keeps
// the measured grid's picks), where the sum of the rounds, A + W, was up to 45 % high. Other
// radices fit A + W better (s 0.13-1.2, mostly above 0.4; A + W within 15 %, but for radix 8 up
// to 36 % high), and so do tra2's rounds, which keep a node's ranks in step. Written as
// c = s (A + W), cpu = (1 - s) A, wire = (1 - s) W: the time is then c + max(cpu, wire).
constexpr double kOutOfStepSerial = 0.3;
bool power_of(std::int64_t q, std::int64_t r) {
  if (r < 2 || q <= r) return false;
  while (q % r == 0) q /= r;
  return q == 1;
}
void overlap_rounds(Terms& t) {
  for (int i : {kMsgIntra, kMsgInter, kRecvIntra, kRecvInter, kLatIntra, kLatInter}) {
    t.cpu[i] += (1 - kOutOfStepSerial) * t.c[i];
    t.c[i] *= kOutOfStepSerial;
  }
  for (int i : {kBytesIntra, kBytesNic}) {
    t.wire[i] += (1 - kOutOfStepSerial) * t.c[i];
    t.c[i] *= kOutOfStepSerial;
  }
}

// Ranks of a node whose peer at distance d (rank + d mod P) is on another node.
std::int64_t flat_flows(const Machine& m, std::int64_t d) {
  if (m.nnodes <= 1) return 0;
  if (!m.blocked) return m.ppn;
  return std::min<std::int64_t>({d, m.ppn, m.nranks - d});
}

}  // namespace

void apply_cost_model(CostModel& m, std::string_view text, std::string* warnings) {
  const std::string s(text);
  std::size_t at = 0;
  while (at < s.size()) {
    std::size_t comma = s.find(',', at);
    if (comma == std::string::npos) comma = s.size();
    const std::string kv = s.substr(at, comma - at);
    at = comma + 1;
    if (kv.empty()) continue;
    const std::size_t eq = kv.find('=');
    const Key* key = nullptr;
    for (const Key& k : kKeys)
      if (eq != std::string::npos && kv.compare(0, eq, k.name) == 0 && eq == std::strlen(k.name))
        key = &k;
    char* end = nullptr;
    const double v = eq == std::string::npos ? -1 : std::strtod(kv.c_str() + eq + 1, &end);
    if (!key || v < 0 || !end || *end != '\0' || end == kv.c_str() + eq + 1) {
      if (warnings) {
        *warnings += "ignoring '" + kv + "' (expected key=value, value >= 0, key one of";
        for (const Key& k : kKeys) *warnings += std::string(&k == kKeys ? " " : ", ") + k.name;
        *warnings += ")\n";
      }
      continue;
    }
    m.*(key->field) = v;
  }
}

const char* cost_model_key(int i) { return i >= 0 && i < kModelTerms ? kKeys[i].name : ""; }

CostModel parse_cost_model(std::string_view text) {
  CostModel m;
  apply_cost_model(m, text);
  return m;
}

std::string to_string(const CostModel& m) {
  std::string s;
  char buf[64];
  for (const Key& k : kKeys) {
    std::snprintf(buf, sizeof buf, "%s%s=%.6g", s.empty() ? "" : ",", k.name, m.*(k.field));
    s += buf;
  }
  return s;
}

Machine machine_of(const NodeMap& map) {
  Machine m;
  m.nranks = map.size();
  m.nnodes = std::max(1, map.nnodes());
  m.ppn = std::max(1, map.max_local());
  m.blocked = map.uniform();
  for (int p = 0; p < map.size() && m.blocked; ++p) m.blocked = map.node_of[p] == p / m.ppn;
  return m;
}

Terms predicted_terms(const Selection& s, const Machine& m, std::int64_t block_bytes) {
  Terms t;
  const std::string_view name = s.algorithm->name;
  const std::int64_t P = m.nranks, Q = std::min<std::int64_t>(m.ppn, P), N = m.nnodes;
  const double B = double(block_bytes);
  if (P <= 1) return t;
  auto flat = [&m](std::int64_t d) { return flat_flows(m, d); };
  if (name == "linear") {
    // Every exchange posted at once: one latency, the overheads in series, the node's NIC
    // carrying every off-node block of its Q ranks, and 2(P-Q) of its messages in flight
    // through the NIC per rank, where a round-by-round schedule has two.
    t.rounds = 1;
    t.messages = t.blocks = P - 1;
    t.cpu[kMsgIntra] = t.cpu[kRecvIntra] = double(Q - 1);
    t.cpu[kMsgInter] = t.cpu[kRecvInter] = double(P - Q);
    t.c[N > 1 ? kLatInter : kLatIntra] = 1;
    t.c[kInflight] = inflight_beyond_one(double(Q), double(P - Q));
    t.wire[kBytesIntra] = Q > 1 ? B : 0;
    t.wire[kBytesNic] = double(Q) * double(P - Q) * B;
  } else if (name == "pairwise") {
    for (std::int64_t d = 1; d < P; ++d) add_round(t, B, flat(d), 1);
  } else if (name == "tra2") {
    // Seed 003 IV: K1 = K(Q, r1) rounds within the node moving bundles of N blocks, then
    // K2 = K(N, r2) rounds between nodes moving bundles of Q blocks, all Q ranks of a node
    // sending through its NIC at once.
    add_radix(t, Q, s.value("radix_intra"), double(N) * B, N, [](std::int64_t) { return 0; });
    add_radix(t, N, s.value("radix_inter"), double(Q) * B, Q, [Q](std::int64_t) { return Q; });
  } else {
    const std::int64_t r = name == "tra" ? s.value("radix") : 2;
    add_radix(t, P, r, B, 1, flat);
    // Extra local copies of the published variants (builders.hpp); zero-copy Bruck lets the
    // MPI datatype engine gather the blocks: one copy where tra packs and unpacks.
    if (name == "bruck") t.c[kBytesCopy] += 2.0 * double(P) * B;
    if (name == "modified_bruck") t.c[kBytesCopy] += double(P) * B;
    if (name == "zero_copy_bruck") t.c[kBytesCopy] *= 0.5;
    if (N > 1 && m.blocked && power_of(Q, r)) overlap_rounds(t);
  }
  return t;
}

namespace {

double dot(const CostModel& model, const TermArray& c) {
  double s = 0;
  for (int i = 0; i < kModelTerms; ++i) {
    const double v = model.*(kKeys[i].field);
    s += c[std::size_t(i)] * (is_bandwidth(i) ? inverse(v) : v);
  }
  return s;
}

}  // namespace

double predicted_seconds(const CostModel& model, const Terms& t) {
  return dot(model, t.c) + std::max(dot(model, t.cpu), dot(model, t.wire));
}

TermArray effective_terms(const CostModel& model, const Terms& t) {
  const TermArray& more = dot(model, t.cpu) >= dot(model, t.wire) ? t.cpu : t.wire;
  TermArray e = t.c;
  for (std::size_t i = 0; i < e.size(); ++i) e[i] += more[i];
  return e;
}

double predicted_seconds(const CostModel& model, const Selection& s, const Machine& m,
                         std::int64_t block_bytes) {
  return predicted_seconds(model, predicted_terms(s, m, block_bytes));
}

namespace {

// Every radix up to 64, then steps of about 6 % up to n (the cost is smooth there).
std::vector<std::int64_t> radix_ladder(std::int64_t n) {
  std::vector<std::int64_t> rs;
  for (std::int64_t r = 2; r <= n; r = r < 64 ? r + 1 : r + r / 16) rs.push_back(r);
  if (n >= 2 && rs.back() != n) rs.push_back(n);
  return rs;
}

// A selection built directly (the candidates' values are in range by construction).
Selection make(Collective c, const char* name, std::vector<std::int64_t> values = {}) {
  Selection s;
  s.algorithm = find_algorithm(c, name);
  s.values = std::move(values);
  return s;
}

}  // namespace

std::vector<Selection> alltoall_candidates(const Machine& m) {
  std::vector<Selection> out;
  for (const char* name : {"linear", "pairwise"}) out.push_back(make(Collective::Alltoall, name));
  if (m.nranks > 2)
    for (std::int64_t r : radix_ladder(m.nranks)) out.push_back(make(Collective::Alltoall, "tra", {r}));
  if (m.nnodes > 1)
    for (std::int64_t r1 : radix_ladder(std::max(2, m.ppn)))
      for (std::int64_t r2 : radix_ladder(std::max(2, m.nnodes)))
        out.push_back(make(Collective::Alltoall, "tra2", {r1, r2}));
  // The published Bruck variants: radix 2 with more copies than tra's (or, zero-copy, the
  // datatype engine's); they win only where copies cost more than the model says tra's do.
  for (const char* name : {"bruck", "modified_bruck", "zero_copy_bruck"})
    out.push_back(make(Collective::Alltoall, name));
  return out;
}

Selection choose_alltoall(const CostModel& model, const Machine& m, std::int64_t block_bytes) {
  Selection best;
  double best_t = 0;
  // Ties go to the earlier candidate: the simpler algorithm, the smaller radix.
  for (Selection& s : alltoall_candidates(m)) {
    const double t = predicted_seconds(model, s, m, block_bytes);
    if (!best.algorithm || t < best_t * (1 - 1e-9)) best = std::move(s), best_t = t;
  }
  return best;
}

// Direct exchange (a window of 8, which bounds outstanding requests and absorbs late arrivals;
// linear when a rank has no more than that), the radix exchange with every block counted at
// the largest block's size (it forwards blocks; skewed sizes make it pay), and the node-aware
// exchange (both of its phases direct).
namespace {

// The pick (the first candidate of least time: later ones replace it only when strictly
// faster) to the front, the others after it by predicted time.
std::vector<Ranked> pick_first(std::vector<Ranked> out) {
  std::size_t best = 0;
  for (std::size_t i = 1; i < out.size(); ++i)
    if (out[i].seconds < out[best].seconds) best = i;
  if (out.empty()) return out;
  std::rotate(out.begin(), out.begin() + best, out.begin() + best + 1);
  std::stable_sort(out.begin() + 1, out.end(),
                   [](const Ranked& a, const Ranked& b) { return a.seconds < b.seconds; });
  return out;
}

}  // namespace

Selection choose_alltoallv(const CostModel& model, const Machine& m, const AlltoallvStats& st) {
  return rank_alltoallv(model, m, st).front().selection;
}

std::vector<Ranked> rank_alltoallv(const CostModel& model, const Machine& m,
                                   const AlltoallvStats& st) {
  const std::int64_t P = m.nranks, Q = std::min<std::int64_t>(m.ppn, P);
  Selection direct = make(Collective::Alltoallv, "multipair_waitany", {8});
  if (st.rank_messages <= direct.values[0]) direct = make(Collective::Alltoallv, "linear");
  if (P <= 1) return {{direct, 0.0}};
  // The direct exchange as linear alltoall with the rank's real message count and bytes (as
  // many received as sent), its window's off-node exchanges in flight at once.
  Terms d;
  const double off = double(P - Q) / double(P - 1);
  d.cpu[kMsgIntra] = d.cpu[kRecvIntra] = double(st.rank_messages) * (1 - off);
  d.cpu[kMsgInter] = d.cpu[kRecvInter] = double(st.rank_messages) * off;
  d.c[m.nnodes > 1 ? kLatInter : kLatIntra] = 1;
  const std::int64_t window =
      direct.values.empty() ? st.rank_messages : std::min(st.rank_messages, direct.values[0]);
  d.c[kInflight] = inflight_beyond_one(double(Q), double(window) * off);
  d.wire[kBytesIntra] = double(st.max_block);
  d.wire[kBytesNic] = double(Q) * double(st.rank_bytes) * off;
  std::vector<Ranked> out{{direct, predicted_seconds(model, d)}};
  // The radix exchange learns forwarded sizes at init with O(P log P) work and memory per rank:
  // beyond 1024 ranks the direct exchange is taken.
  if (P < 4 || P > 1024 || st.max_block == 0) return out;
  for (std::int64_t r : radix_ladder(P)) {
    Terms t;
    add_radix(t, P, r, double(st.max_block), 1, [&m](std::int64_t dist) { return flat_flows(m, dist); });
    out.push_back({make(Collective::Alltoallv, "bruck", {r}), predicted_seconds(model, t)});
  }
  if (m.nnodes > 1) {
    Terms t;
    const std::int64_t N = m.nnodes;
    add_radix(t, Q, Q, double(N) * double(st.max_block), N, [](std::int64_t) { return 0; });
    add_radix(t, N, N, double(Q) * double(st.max_block), Q, [Q](std::int64_t) { return Q; });
    out.push_back({make(Collective::Alltoallv, "locality"), predicted_seconds(model, t)});
  }
  return pick_first(std::move(out));
}

// Direct sends every off-node edge through the NIC; locality gathers a node's off-node edges
// to one gateway per remote node (one intra-node hop), sends one message per node pair, and
// scatters on arrival (a second hop): fewer off-node messages for two intra-node ones each.
Selection choose_neighbor(const CostModel& model, const Machine& m, const NeighborStats& st) {
  return rank_neighbor(model, m, st).front().selection;
}

std::vector<Ranked> rank_neighbor(const CostModel& model, const Machine& m, const NeighborStats& st) {
  const Selection direct = make(Collective::NeighborAlltoallv, "direct");
  if (m.nnodes <= 1 || st.remote_edges == 0) return {{direct, 0.0}};
  const double E = double(st.remote_edges), M = double(st.max_message);
  const double Q = double(m.ppn);
  Terms d, l;
  d.cpu[kMsgInter] = d.cpu[kRecvInter] = E;
  d.c[kLatInter] = 1;
  d.wire[kBytesNic] = Q * E * M;
  d.c[kInflight] = inflight_beyond_one(Q, E);  // every off-node edge at once
  l.c[kMsgIntra] = l.c[kRecvIntra] = 2 * E;
  l.c[kLatIntra] = 2;
  l.c[kBytesIntra] = 2 * M;
  l.c[kMsgInter] = l.c[kRecvInter] = double(st.remote_nodes);
  l.c[kLatInter] = 1;
  l.c[kInflight] = inflight_beyond_one(Q, double(st.remote_nodes));
  l.c[kBytesNic] = Q * E * M;
  l.c[kBytesCopy] = 4 * E * M;
  return pick_first({{direct, predicted_seconds(model, d)},
                     {make(Collective::NeighborAlltoallv, "locality"), predicted_seconds(model, l)}});
}

}  // namespace mpia
