// The process-topology stand-ins of smpi_compat.h (SimGrid 3.32's SMPI aborts in
// MPI_Topo_test, MPI_Dist_graph_create_adjacent, MPI_Dist_graph_neighbors(_count) and
// MPI_(I)neighbor_alltoall(v): "Not yet implemented"). Part of the SMPI component (built into
// the library only for SimGrid's SMPI, MPIA_SMPI): one definition per rank --
// the benchmark and the library are separate modules, and the record of a topology must be
// found through one keyval whichever of them made the communicator. Exported as MPIA_Smpi_*.
//
// The record: an attribute on every communicator that MPI_Cart_create, MPI_Cart_sub or
// MPI_Dist_graph_create_adjacent (the stand-ins) made, copied by MPI_Comm_dup (SMPI runs the
// copy callbacks; its own duplicate keeps a Cartesian topology too). MPI_Topo_test reads its
// kind: MPI_CART, MPI_DIST_GRAPH, else MPI_UNDEFINED -- not SMPI's MPI_Cartdim_get, which warns on
// stderr for every communicator without a topology. SMPI implements MPI_Graph_create neither:
// graph topologies stay unsupported.
#include <mpi.h>

#include "util/error.hpp"
#include "util/platform.hpp"

#include <algorithm>
#include <cstdint>
#include <vector>

#define MPIA_SMPI_API extern "C" __attribute__((visibility("default")))

namespace {

struct Record {
  int kind = MPI_UNDEFINED;
  bool weighted = false;
  std::vector<int> sources, destinations, source_weights, destination_weights;
  // A duplicate for the neighbor collectives' own messages (made at the first one): never the
  // user's traffic, as an MPI library's collective context. Not copied.
  MPI_Comm exchange = MPI_COMM_NULL;
};

int copy_record(MPI_Comm, int, void*, void* in, void* out, int* flag) {
  auto* copy = new Record(*static_cast<Record*>(in));
  copy->exchange = MPI_COMM_NULL;
  *static_cast<void**>(out) = copy;
  *flag = 1;
  return MPI_SUCCESS;
}

int delete_record(MPI_Comm, int, void* value, void*) {
  auto* r = static_cast<Record*>(value);
  int finalized = 0;
  PMPI_Finalized(&finalized);
  if (!finalized && r->exchange != MPI_COMM_NULL) PMPI_Comm_free(&r->exchange);
  delete r;
  return MPI_SUCCESS;
}

int keyval() {
  static int k = MPI_KEYVAL_INVALID;  // one per rank: SMPI privatizes the library per rank
  if (k == MPI_KEYVAL_INVALID) PMPI_Comm_create_keyval(copy_record, delete_record, &k, nullptr);
  return k;
}

Record* record_of(MPI_Comm comm) {
  if (comm == MPI_COMM_NULL) return nullptr;
  void* value = nullptr;
  int found = 0;
  if (PMPI_Comm_get_attr(comm, keyval(), &value, &found) != MPI_SUCCESS || !found) return nullptr;
  return static_cast<Record*>(value);
}

int attach(MPI_Comm comm, Record* r) {
  if (comm == MPI_COMM_NULL) {
    delete r;
    return MPI_SUCCESS;
  }
  return PMPI_Comm_set_attr(comm, keyval(), r);
}

// An error as MPI reports it: through comm's error handler.
int raise(MPI_Comm comm, int code) {
  mpia::call_errhandler(comm == MPI_COMM_NULL ? MPI_COMM_WORLD : comm, code);
  return code;
}

// The neighbors of a communicator in MPI's order, and the tag each message carries: Cartesian
// messages are told apart by direction (receive block j takes the message sent into it, tag j),
// which also pairs the two directions of a periodic dimension of size 1 or 2; graph edges all
// carry tag 0 and pair in posting order, as MPI's non-overtaking rule keeps them.
struct Neighbors {
  std::vector<int> sources, destinations, recv_tag, send_tag;
};

int neighbors(MPI_Comm comm, Record* r, Neighbors& n) {
  if (r->kind == MPI_CART) {
    int ndims = 0;
    if (int rc = PMPI_Cartdim_get(comm, &ndims)) return rc;
    for (int d = 0; d < ndims; ++d) {
      int minus = MPI_PROC_NULL, plus = MPI_PROC_NULL;
      if (int rc = PMPI_Cart_shift(comm, d, 1, &minus, &plus)) return rc;
      n.sources.insert(n.sources.end(), {minus, plus});
      n.destinations.insert(n.destinations.end(), {minus, plus});
      n.recv_tag.insert(n.recv_tag.end(), {2 * d, 2 * d + 1});
      n.send_tag.insert(n.send_tag.end(), {2 * d + 1, 2 * d});
    }
    return MPI_SUCCESS;
  }
  n.sources = r->sources;
  n.destinations = r->destinations;
  n.recv_tag.assign(n.sources.size(), 0);
  n.send_tag.assign(n.destinations.size(), 0);
  return MPI_SUCCESS;
}

// The exchange of the neighbor collectives: every receive, then every send, then all complete.
int exchange(const void* sendbuf, const int* sendcounts, const int* sdispls, MPI_Datatype sendtype,
             void* recvbuf, const int* recvcounts, const int* rdispls, MPI_Datatype recvtype,
             MPI_Comm comm) {
  Record* r = record_of(comm);
  if (!r) return raise(comm, MPI_ERR_TOPOLOGY);
  Neighbors n;
  if (int rc = neighbors(comm, r, n)) return raise(comm, rc);
  if (r->exchange == MPI_COMM_NULL) {
    if (int rc = PMPI_Comm_dup(comm, &r->exchange)) return raise(comm, rc);
  }
  MPI_Aint lb = 0, sext = 0, rext = 0;
  PMPI_Type_get_extent(sendtype, &lb, &sext);
  PMPI_Type_get_extent(recvtype, &lb, &rext);
  std::vector<MPI_Request> reqs;
  for (std::size_t j = 0; j < n.sources.size(); ++j) {
    if (n.sources[j] == MPI_PROC_NULL) continue;
    reqs.emplace_back();
    if (int rc = PMPI_Irecv(static_cast<char*>(recvbuf) + rdispls[j] * rext, recvcounts[j],
                            recvtype, n.sources[j], n.recv_tag[j], r->exchange, &reqs.back()))
      return raise(comm, rc);
  }
  // The receive overhead SMPI charges to none of these receives (and the engine's receives pay):
  // the machine's smpi/or per message, as an MPI library's neighbor collective would pay it.
  int rsize = 0;
  PMPI_Type_size(recvtype, &rsize);
  double unpaid = 0;
  for (std::size_t j = 0; j < n.sources.size(); ++j)
    if (n.sources[j] != MPI_PROC_NULL)
      unpaid += mpia::platform::unpaid_receive_seconds(std::int64_t(recvcounts[j]) * rsize);
  mpia::platform::charge(unpaid);
  for (std::size_t k = 0; k < n.destinations.size(); ++k) {
    if (n.destinations[k] == MPI_PROC_NULL) continue;
    reqs.emplace_back();
    if (int rc = PMPI_Isend(static_cast<const char*>(sendbuf) + sdispls[k] * sext, sendcounts[k],
                            sendtype, n.destinations[k], n.send_tag[k], r->exchange, &reqs.back()))
      return raise(comm, rc);
  }
  if (int rc = PMPI_Waitall(int(reqs.size()), reqs.data(), MPI_STATUSES_IGNORE))
    return raise(comm, rc);
  return MPI_SUCCESS;
}

}  // namespace

MPIA_SMPI_API int MPIA_Smpi_cart_create(MPI_Comm comm, int ndims, const int* dims,
                                        const int* periods, int reorder, MPI_Comm* cart) {
  if (int rc = PMPI_Cart_create(comm, ndims, dims, periods, reorder, cart)) return raise(comm, rc);
  auto* r = new Record;
  r->kind = MPI_CART;
  return attach(*cart, r);
}

MPIA_SMPI_API int MPIA_Smpi_cart_sub(MPI_Comm comm, const int* remain, MPI_Comm* sub) {
  if (int rc = PMPI_Cart_sub(comm, remain, sub)) return raise(comm, rc);
  auto* r = new Record;
  r->kind = MPI_CART;
  return attach(*sub, r);
}

MPIA_SMPI_API int MPIA_Smpi_dist_graph_create_adjacent(MPI_Comm comm, int indegree,
                                                       const int* sources, const int* sweights,
                                                       int outdegree, const int* destinations,
                                                       const int* dweights, MPI_Info, int,
                                                       MPI_Comm* graph) {
  int size = 0;
  if (comm == MPI_COMM_NULL) return raise(comm, MPI_ERR_COMM);
  PMPI_Comm_size(comm, &size);
  if (indegree < 0 || outdegree < 0 || !graph) return raise(comm, MPI_ERR_ARG);
  auto in_range = [size](const int* v, int n) {
    return std::all_of(v, v + n, [size](int x) { return x >= 0 && x < size; });
  };
  if ((indegree > 0 && (!sources || !in_range(sources, indegree))) ||
      (outdegree > 0 && (!destinations || !in_range(destinations, outdegree))))
    return raise(comm, MPI_ERR_ARG);
  auto* r = new Record;
  r->kind = MPI_DIST_GRAPH;
  r->sources.assign(sources, sources + indegree);
  r->destinations.assign(destinations, destinations + outdegree);
  r->weighted = sweights != MPI_UNWEIGHTED;
  if (r->weighted && sweights != MPI_WEIGHTS_EMPTY && indegree > 0)
    r->source_weights.assign(sweights, sweights + indegree);
  if (r->weighted && dweights != MPI_UNWEIGHTED && dweights != MPI_WEIGHTS_EMPTY && outdegree > 0)
    r->destination_weights.assign(dweights, dweights + outdegree);
  if (int rc = PMPI_Comm_dup(comm, graph)) {
    delete r;
    return raise(comm, rc);
  }
  return attach(*graph, r);
}

MPIA_SMPI_API int MPIA_Smpi_topo_test(MPI_Comm comm, int* status) {
  if (comm == MPI_COMM_NULL) return raise(comm, MPI_ERR_COMM);
  const Record* r = record_of(comm);
  *status = r ? r->kind : MPI_UNDEFINED;
  return MPI_SUCCESS;
}

MPIA_SMPI_API int MPIA_Smpi_dist_graph_neighbors_count(MPI_Comm comm, int* indegree, int* outdegree,
                                                       int* weighted) {
  const Record* r = record_of(comm);
  if (!r || r->kind != MPI_DIST_GRAPH) return raise(comm, MPI_ERR_TOPOLOGY);
  *indegree = int(r->sources.size());
  *outdegree = int(r->destinations.size());
  *weighted = r->weighted;
  return MPI_SUCCESS;
}

MPIA_SMPI_API int MPIA_Smpi_dist_graph_neighbors(MPI_Comm comm, int maxindegree, int* sources,
                                                 int* sweights, int maxoutdegree, int* destinations,
                                                 int* dweights) {
  const Record* r = record_of(comm);
  if (!r || r->kind != MPI_DIST_GRAPH) return raise(comm, MPI_ERR_TOPOLOGY);
  const int in = std::min(maxindegree, int(r->sources.size()));
  const int out = std::min(maxoutdegree, int(r->destinations.size()));
  std::copy(r->sources.begin(), r->sources.begin() + in, sources);
  std::copy(r->destinations.begin(), r->destinations.begin() + out, destinations);
  if (r->weighted && sweights != MPI_UNWEIGHTED && int(r->source_weights.size()) >= in)
    std::copy(r->source_weights.begin(), r->source_weights.begin() + in, sweights);
  if (r->weighted && dweights != MPI_UNWEIGHTED && int(r->destination_weights.size()) >= out)
    std::copy(r->destination_weights.begin(), r->destination_weights.begin() + out, dweights);
  return MPI_SUCCESS;
}

MPIA_SMPI_API int MPIA_Smpi_neighbor_alltoallv(const void* sendbuf, const int* sendcounts,
                                               const int* sdispls, MPI_Datatype sendtype,
                                               void* recvbuf, const int* recvcounts,
                                               const int* rdispls, MPI_Datatype recvtype,
                                               MPI_Comm comm) {
  return exchange(sendbuf, sendcounts, sdispls, sendtype, recvbuf, recvcounts, rdispls, recvtype,
                  comm);
}

MPIA_SMPI_API int MPIA_Smpi_neighbor_alltoall(const void* sendbuf, int sendcount,
                                              MPI_Datatype sendtype, void* recvbuf, int recvcount,
                                              MPI_Datatype recvtype, MPI_Comm comm) {
  Record* r = record_of(comm);
  if (!r) return raise(comm, MPI_ERR_TOPOLOGY);
  Neighbors n;
  if (int rc = neighbors(comm, r, n)) return raise(comm, rc);
  std::vector<int> sc(n.destinations.size() + 1, sendcount), sd(sc.size()),
      rc(n.sources.size() + 1, recvcount), rd(rc.size());
  for (std::size_t k = 0; k < sd.size(); ++k) sd[k] = int(k) * sendcount;
  for (std::size_t j = 0; j < rd.size(); ++j) rd[j] = int(j) * recvcount;
  return exchange(sendbuf, sc.data(), sd.data(), sendtype, recvbuf, rc.data(), rd.data(), recvtype,
                  comm);
}

MPIA_SMPI_API int MPIA_Smpi_ineighbor_alltoallv(const void* sendbuf, const int* sendcounts,
                                                const int* sdispls, MPI_Datatype sendtype,
                                                void* recvbuf, const int* recvcounts,
                                                const int* rdispls, MPI_Datatype recvtype,
                                                MPI_Comm comm, MPI_Request* request) {
  *request = MPI_REQUEST_NULL;
  return exchange(sendbuf, sendcounts, sdispls, sendtype, recvbuf, recvcounts, rdispls, recvtype,
                  comm);
}

MPIA_SMPI_API int MPIA_Smpi_ineighbor_alltoall(const void* sendbuf, int sendcount,
                                               MPI_Datatype sendtype, void* recvbuf, int recvcount,
                                               MPI_Datatype recvtype, MPI_Comm comm,
                                               MPI_Request* request) {
  *request = MPI_REQUEST_NULL;
  return MPIA_Smpi_neighbor_alltoall(sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype,
                                     comm);
}
