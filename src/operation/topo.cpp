#include "operation/topo.hpp"

#include "mpi_advance.h"

#include "collective/selection.hpp"
#include "operation/attach.hpp"
#include "operation/neighbor_topology.hpp"
#include "operation/operation.hpp"
#include "operation/protocol.hpp"
#include "operation/select.hpp"
#include "util/error.hpp"
#include "util/hash.hpp"

#include <cstdint>
#include <string>
#include <vector>

namespace mpia {

namespace {

constexpr Collective kNeighbor = Collective::NeighborAlltoallv;

void check_ranks(const int* ranks, int n, int size, const char* which) {
  for (int i = 0; i < n; ++i) {
    if (ranks[i] >= 0 && ranks[i] < size) continue;
    fail(MPI_ERR_ARG, std::string("mpi-advance: MPIX_Topo_create: ") + which + "[" +
                          std::to_string(i) + "] = " + std::to_string(ranks[i]) +
                          (ranks[i] == MPI_PROC_NULL ? " (MPI_PROC_NULL)" : "") +
                          " is not a rank of the communicator (0.." + std::to_string(size - 1) +
                          "; MPI_PROC_NULL is not allowed, as in MPI_Dist_graph_create_adjacent)");
  }
}

std::uint64_t edge_hash(int from, int to) {
  return mix64((std::uint64_t(std::uint32_t(from)) << 32) | std::uint32_t(to));
}

// Whether every rank's sources are, as a multiset, the ranks whose destinations name it: one
// reduce-scatter of (edge count, sum of edge hashes) per destination -- O(P) words per rank, no
// message along an edge that one side may not expect. Ranks out of range are left out (they are
// argument errors already). Returns "" or this rank's mismatch. Collective.
std::string check_edges(const CommState& st, int indegree, const int* sources, int outdegree,
                        const int* destinations) {
  std::vector<std::uint64_t> out(2 * std::size_t(st.size), 0);
  for (int k = 0; k < outdegree; ++k) {
    const int d = destinations[k];
    if (d < 0 || d >= st.size) continue;
    out[2 * std::size_t(d)] += 1;
    out[2 * std::size_t(d) + 1] += edge_hash(st.rank, d);
  }
  std::uint64_t want[2] = {0, 0}, got[2] = {0, 0};
  for (int j = 0; j < indegree; ++j) {
    const int s = sources[j];
    if (s < 0 || s >= st.size) continue;
    want[0] += 1;
    want[1] += edge_hash(s, st.rank);
  }
  MPI_Request r;
  MPIA_CHECK(
      MPI_Ireduce_scatter_block(out.data(), got, 2, MPI_UINT64_T, MPI_SUM, st.comm->get(), &r));
  complete(r, "MPI_Ireduce_scatter_block (the topology's edges)");
  if (got[0] == want[0] && got[1] == want[1]) return {};
  return "mpi-advance: MPIX_Topo_create: the sources of rank " + std::to_string(st.rank) +
         " do not match the destinations that name it (" + std::to_string(want[0]) + " sources, " +
         std::to_string(got[0]) + " edges to it)";
}

// The value of info "mpix_algorithm", or "" when there is none.
std::string info_algorithm(MPI_Info info) {
  if (info == MPI_INFO_NULL) return {};
  int len = 0, flag = 0;
  MPIA_CHECK(MPI_Info_get_valuelen(info, MPIX_INFO_KEY_ALGORITHM, &len, &flag));
  if (!flag) return {};
  std::string value(std::size_t(len) + 1, '\0');
  MPIA_CHECK(MPI_Info_get(info, MPIX_INFO_KEY_ALGORITHM, len, value.data(), &flag));
  value.resize(std::size_t(len));
  return value;
}

}  // namespace

std::unique_ptr<MPIX_Topo_s> topo_create(CommState& parent, MPI_Comm user, int indegree,
                                         const int sources[], int outdegree,
                                         const int destinations[], MPI_Info info, bool topo_given) {
  parent.check_settings();
  Proposal p;
  std::string text;
  bool lists_ok = false;
  checked(p, [&] {
    if (!topo_given) fail(MPI_ERR_ARG, "mpi-advance: MPIX_Topo_create: topo is NULL");
    if (indegree < 0 || outdegree < 0)
      fail(MPI_ERR_ARG, "mpi-advance: MPIX_Topo_create: negative degree");
    if ((indegree > 0 && !sources) || (outdegree > 0 && !destinations))
      fail(MPI_ERR_ARG, "mpi-advance: MPIX_Topo_create: NULL sources or destinations");
    lists_ok = true;
    check_ranks(sources, indegree, parent.size, "sources");
    check_ranks(destinations, outdegree, parent.size, "destinations");
    // Locally against the widest ranges (as MPIX_Comm_set_algorithm); exactly once agreed.
    text = info_algorithm(info);
    if (!text.empty())
      parse_selection(kNeighbor, text, Extent(parent.size, parent.size, parent.size), true);
  });
  const std::string mismatch = lists_ok
                                   ? check_edges(parent, indegree, sources, outdegree, destinations)
                                   : check_edges(parent, 0, nullptr, 0, nullptr);
  if (!p.error && !mismatch.empty()) {
    p.derived = true;
    p.error = std::make_unique<Error>(MPI_ERR_ARG, mismatch);
  }
  p.choice = "topo=" + text;
  agree(parent, p);

  auto topo = std::make_unique<MPIX_Topo_s>();
  topo->user = user;
  topo->user_private = parent.comm;
  topo->state = derived_comm_state(parent);
  CommState& st = *topo->state;
  st.topology = std::make_shared<const NeighborTopology>(
      graph_topology(std::vector<int>(sources, sources + indegree),
                     std::vector<int>(destinations, destinations + outdegree)));
  if (!text.empty()) {
    parse_for(kNeighbor, text, extent_of(st), true);  // the same text on every rank
    st.per[std::size_t(kNeighbor)].algorithm = text;
  }
  return topo;
}

MPI_Comm topo_error_comm(const MPIX_Topo_s* topo) {
  if (!topo || !topo->user_private ||
      topo->user_private->user_freed.load(std::memory_order_acquire))
    return MPI_COMM_SELF;
  return topo->user;
}

CommState& topo_state(MPIX_Topo_s* topo) {
  if (!topo) fail(MPI_ERR_TOPOLOGY, "mpi-advance: MPIX_TOPO_NULL");
  return *topo->state;
}

// Every destructor below checks MPI_Finalized before it frees an MPI object.
void topo_free(MPIX_Topo_s* topo) { delete topo; }

}  // namespace mpia
