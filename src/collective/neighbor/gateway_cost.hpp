// The cost of node-aware neighbor routing (locality.cpp, and locality_partial.cpp for the share
// it aggregates): one formula, so that the two records price the same routing alike.
#pragma once

#include "collective/cost.hpp"

#include <algorithm>

namespace mpia::detail {

// A rank's terms when ea of its E off-node edges go through the gateways (two intra-node hops,
// one message per node pair: ra of them) and the other E - ea straight to their destinations.
// hop: whether the intra-node hops' latency and bytes are charged (locality always charges
// them, locality_partial only when it aggregates something).
inline Terms gateway_terms(const Machine& m, const Stats& st, double ea, double ra, bool hop) {
  Terms l;
  const double E = double(st.remote_edges), M = double(st.max_block), Q = double(m.ppn);
  const double ed = E - ea;
  // one message per (round, peer): at most one to each gateway of the node, one from each
  l.c[kMsgIntra] = l.c[kRecvIntra] = 2 * std::min(ea, Q - 1);
  l.c[kLatIntra] = hop ? 2 : 0;
  l.c[kBytesIntra] = hop ? 2 * M : 0;
  l.c[kMsgInter] = l.c[kRecvInter] = ra + ed;
  l.c[kLatInter] = 1;
  l.c[kInflight] = inflight_beyond_one(Q, ra + ed);
  l.c[kBytesNic] = Q * E * M;
  l.c[kBytesCopy] = 4 * ea * M;
  return l;
}

}  // namespace mpia::detail
