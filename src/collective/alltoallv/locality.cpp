// Alltoallv locality: node-aware. Both phases of the two-level exchange
// (collective/alltoall/two_level.cpp) direct (radix >= size, digits merged): a rank sends
// within its node once to each port, then each port once to each remote node's rank of its
// lane -- one message per node pair and port between nodes.
//   time ~ (Q-1)(alpha_intra) + (N-1) alpha_inter + bytes through the NIC once
// A port needs the sizes of the blocks its node's other ranks give it, to the destinations it
// serves: at init every rank of a node sends every other one message (its sizes for the
// destinations that rank serves): O(P) memory, Q - 1 messages each way.
// Restrictions: none (any placement, uneven nodes). No parameters.
#include "collective/alltoall/builders.hpp"
#include "collective/alltoallv/peer_sizes.hpp"
#include "collective/record.hpp"

namespace mpia {

namespace {

using namespace detail;

Schedule locality(const AlltoallvShape& s, const ParamValues&) {
  if (!s.nodes) fail(MPI_ERR_INTERN, "mpi-advance: locality built without a node map");
  return with(build_two_level(s.rank, *s.nodes, s.nodes->max_local(), s.nodes->nnodes(),
                              s.pair_bytes, true),
              kRoundByRound, Lowering::Pack);
}

void learn(AlltoallvShape& shape, const ParamValues&, SizeChannel& channel) {
  const NodeMap& nm = *shape.nodes;
  const int me = shape.rank;
  const std::shared_ptr<PeerSizes> t = peer_sizes(shape);
  const std::vector<int>& mine = nm.members[std::size_t(nm.node_of[me])];
  const int Q = int(mine.size()), q = nm.local_of[me];
  std::vector<std::vector<std::int64_t>> out(static_cast<std::size_t>(Q)), in(out.size());
  for (int d = 0; d < nm.size(); ++d)
    out[std::size_t(nm.local_of[d] % Q)].push_back(shape.send_bytes[std::size_t(d)]);
  const std::vector<int> served = two_level_served(me, nm);
  for (int a = 0; a < Q; ++a) {
    if (a == q) continue;
    in[std::size_t(a)].assign(served.size(), 0);
    channel.post_recv(mine[std::size_t(a)], in[std::size_t(a)].data(), int(served.size()));
  }
  for (int b = 0; b < Q; ++b) {
    if (b == q) continue;
    channel.post_send(mine[std::size_t(b)], out[std::size_t(b)].data(),
                      int(out[std::size_t(b)].size()));
  }
  channel.wait_all();
  for (int a = 0; a < Q; ++a)
    if (a != q)
      for (std::size_t k = 0; k < served.size(); ++k)
        t->add(mine[std::size_t(a)], served[k], in[std::size_t(a)][k]);
}

// Both phases direct: a radix-Q exchange within the node moving bundles of N blocks, then a
// radix-N one between nodes moving bundles of Q, every block at the largest block's size.
Terms cost(const Machine& m, const Stats& st, const ParamValues&) {
  Terms t;
  const std::int64_t Q = std::min<std::int64_t>(m.ppn, m.nranks), N = m.nnodes;
  add_radix(t, Q, Q, double(N) * double(st.max_block), N, [](std::int64_t) { return 0; });
  add_radix(t, N, N, double(Q) * double(st.max_block), Q, [Q](std::int64_t) { return Q; });
  return t;
}

// Weighed on several nodes, within the range where auto weighs forwarding at all (bruck's).
std::vector<ParamValues> candidates(const Machine& m, const Stats& st) {
  if (m.nranks < 4 || m.nranks > 1024 || st.max_block == 0 || m.nnodes <= 1) return {};
  return {ParamValues{}};
}

}  // namespace

MPIA_ALGORITHMS(alltoallv_locality) {
  AlgorithmSpec a = detail::record(
      Collective::Alltoallv, "locality", 500,
      "node-aware: blocks for a remote node gathered in the node and sent as one message per "
      "node pair and port; the sizes a port forwards are gathered within its node at init");
  a.build_alltoallv = locality;
  a.needs_peer_sizes = true;
  a.learn_alltoallv = learn;
  a.needs_locality = true;
  a.cost = cost;
  a.candidates = candidates;
  a.search = 30;
  return {a};
}

}  // namespace mpia
