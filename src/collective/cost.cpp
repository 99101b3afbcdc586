#include "collective/cost.hpp"

namespace mpia::detail {

std::int64_t round_blocks(std::int64_t n, std::int64_t rx, std::int64_t r, std::int64_t z) {
  const std::int64_t cycle = rx * r;
  const std::int64_t rem = n % cycle;
  return (n / cycle) * rx + std::clamp<std::int64_t>(rem - z * rx, 0, rx);
}

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

Terms direct_terms(const Machine& m, std::int64_t messages, std::int64_t bytes,
                   std::int64_t max_block, std::int64_t window) {
  const std::int64_t P = m.nranks, Q = std::min<std::int64_t>(m.ppn, P);
  Terms d;
  const double off = double(P - Q) / double(P - 1);
  d.cpu[kMsgIntra] = d.cpu[kRecvIntra] = double(messages) * (1 - off);
  d.cpu[kMsgInter] = d.cpu[kRecvInter] = double(messages) * off;
  d.c[m.nnodes > 1 ? kLatInter : kLatIntra] = 1;
  d.c[kInflight] = inflight_beyond_one(double(Q), double(window) * off);
  d.wire[kBytesIntra] = double(max_block);
  d.wire[kBytesNic] = double(Q) * double(bytes) * off;
  return d;
}

double forwarded_block(const Machine& m, const Stats& st) {
  if (st.rank_bytes == 0 || m.nranks <= 0) return double(st.max_block);
  return std::min(double(st.max_block), double(st.rank_bytes) / double(m.nranks));
}

std::int64_t flat_flows(const Machine& m, std::int64_t d) {
  if (m.nnodes <= 1) return 0;
  if (!m.blocked) return m.ppn;
  return std::min<std::int64_t>({d, m.ppn, m.nranks - d});
}

std::vector<std::int64_t> radix_ladder(std::int64_t n) {
  std::vector<std::int64_t> rs;
  for (std::int64_t r = 2; r <= n; r = r < 64 ? r + 1 : r + r / 16) rs.push_back(r);
  if (n >= 2 && rs.back() != n) rs.push_back(n);
  return rs;
}

}  // namespace mpia::detail
