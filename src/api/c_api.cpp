// The extern "C" entry points. Every body runs inside guard(): exceptions become MPI error
// classes raised on the communicator's error handler (MPI_COMM_SELF's when there is none), and
// nothing -- no exception, no crash on bad input -- crosses into C or Fortran.
#include "mpi_advance.h"

#include "collective/alltoall/alltoall.hpp"
#include "collective/alltoallv/alltoallv.hpp"
#include "collective/model.hpp"
#include "collective/neighbor/neighbor.hpp"
#include "collective/selection.hpp"
#include "locality/locality.hpp"
#include "persistent/comm_state.hpp"
#include "persistent/request.hpp"
#include "util/error.hpp"

#include <cstdio>
#include <cstdlib>
#include <algorithm>
#include <cstring>
#include <functional>
#include <new>
#include <string>
#include <vector>

#define MPIA_API extern "C" __attribute__((visibility("default")))

namespace mpia {
namespace {

int raise(MPI_Comm comm, int code, const char* what) {
  int initialized = 0, finalized = 0;
  MPI_Initialized(&initialized);
  MPI_Finalized(&finalized);
  if (!initialized || finalized) return code;
  if (comm == MPI_COMM_NULL) comm = MPI_COMM_SELF;
  // With a fatal handler the program ends inside MPI_Comm_call_errhandler: say why first.
  MPI_Errhandler handler = MPI_ERRHANDLER_NULL;
  if (MPI_Comm_get_errhandler(comm, &handler) == MPI_SUCCESS) {
    if (handler == MPI_ERRORS_ARE_FATAL && what && *what) std::fprintf(stderr, "%s\n", what);
    if (handler != MPI_ERRHANDLER_NULL) MPI_Errhandler_free(&handler);
  }
  MPI_Comm_call_errhandler(comm, code);
  return code;
}

template <class F>
int guard(MPI_Comm comm, F&& body) {
  int code = MPI_SUCCESS;
  std::string what;
  try {
    body();
    return MPI_SUCCESS;
  } catch (const Error& e) {
    code = e.code();
    what = e.what();
  } catch (const std::bad_alloc&) {
    code = MPI_ERR_NO_MEM;
    what = "mpi-advance: out of memory";
  } catch (const std::exception& e) {
    code = MPI_ERR_INTERN;
    what = std::string("mpi-advance: internal error: ") + e.what();
  } catch (...) {
    code = MPI_ERR_INTERN;
    what = "mpi-advance: internal error";
  }
  return raise(comm, code, what.c_str());
}

void check_comm(MPI_Comm comm) {
  if (comm == MPI_COMM_NULL) fail(MPI_ERR_COMM, "mpi-advance: MPI_COMM_NULL");
  int inter = 0;
  MPIA_CHECK(MPI_Comm_test_inter(comm, &inter));
  if (inter) fail(MPI_ERR_COMM, "mpi-advance: intercommunicators are not supported");
}

// Parameters resolved against the communicator: its size, and for the locality-aware
// algorithms its node map (computed here the first time: collective).
ExtentOf extent_of(CommState& st) {
  return [&st](const AlgorithmSpec& a) {
    if (!a.needs_locality) return Extent(st.size);
    const NodeMap& m = comm_locality(st).map;
    return Extent(st.size, m.nnodes(), m.max_local());
  };
}

// Persistent init computes the communicator's locality first, on every rank, before anything
// can fail locally: a rank must never skip a collective its peers are in. (A malformed
// MPIX_LOCALITY fails identically on every rank, before any communication.)
void init_locality(CommState& st) { comm_locality(st); }

const NeighborTopology& topology(CommState& st, MPI_Comm user) {
  if (!st.topology) st.topology = std::make_unique<NeighborTopology>(neighbor_topology(user));
  return *st.topology;
}

Selection resolve(Selection sel, int nranks, std::int64_t block_bytes) {
  if (sel.algorithm->kind == AlgorithmKind::Auto) return choose_alltoall(nranks, block_bytes);
  return sel;
}

// Persistent init is collective: its local errors and choices are agreed on with one
// allreduce, so that a rank with bad arguments makes every rank fail instead of leaving the
// others waiting, and ranks that chose different algorithms or block sizes are caught.
void agree(CommState& st, const Error* local, const std::string& choice, std::int64_t bytes) {
  const std::int64_t h = std::int64_t(std::hash<std::string>{}(choice) & 0x3fffffffffffffffULL);
  // Ranks without a local error take the class of a rank that has one, so that every rank
  // returns the same error class.
  int cls = 0;
  if (local && MPI_Error_class(local->code(), &cls) != MPI_SUCCESS) cls = MPI_ERR_OTHER;
  std::int64_t v[5] = {cls, h, -h, bytes, -bytes};
  MPIA_CHECK(MPI_Allreduce(MPI_IN_PLACE, v, 5, MPI_INT64_T, MPI_MAX, st.comm->get()));
  if (local) throw *local;
  if (v[0]) fail(int(v[0]), "mpi-advance: another rank rejected its arguments");
  if (v[1] != -v[2])
    fail(MPI_ERR_ARG, "mpi-advance: ranks selected different algorithms (this rank: " + choice + ")");
  if (v[3] != -v[4])
    fail(MPI_ERR_TRUNCATE, "mpi-advance: ranks disagree on the block size (type signatures differ)");
}

// MPIX_DEBUG=1: blocking calls also verify (one allreduce each) that every rank chose the same
// algorithm and block size; persistent init always does.
bool debug_checks() {
  static const bool on = [] {
    const char* v = std::getenv("MPIX_DEBUG");
    return v && *v && std::string(v) != "0";
  }();
  return on;
}

// The blocking call's plan cache key: the resolved selection and the raw arguments. Only
// predefined datatypes are cached: a freed derived type's handle value can be reused by a
// different type.
bool predefined(MPI_Datatype t) {
  int ni, na, nd, combiner;
  MPIA_CHECK(MPI_Type_get_envelope(t, &ni, &na, &nd, &combiner));
  return combiner == MPI_COMBINER_NAMED;
}

// The blocking selection for collective c: from the memo when the environment value and the
// key are unchanged, else selected (and, for auto, resolved) afresh.
template <class Resolve>
const Selection& blocking_selection(CommState& st, Collective c,
                                    std::initializer_list<std::int64_t> key, Resolve&& resolve) {
  const char* env = std::getenv(collective_env(c));
  CommState::Memo& m = st.memo;
  const bool same = m.collective == int(c) && m.env_set == (env != nullptr) &&
                    (!env || m.env == env) && m.key.size() == key.size() &&
                    std::equal(key.begin(), key.end(), m.key.begin());
  if (!same) {
    m.collective = -1;  // invalid until the new selection is complete
    Selection sel = select_algorithm(c, MPI_INFO_NULL, extent_of(st));
    if (sel.algorithm->kind == AlgorithmKind::Auto) sel = resolve();
    m.selection = sel;
    m.env_set = env != nullptr;
    m.env = env ? env : "";
    m.key.assign(key.begin(), key.end());
    m.collective = int(c);
  }
  return m.selection;
}

// Runs a blocking call's plan: the cached one when this call's argument words match the words
// it was built for, else a new one from build(), kept if cacheable.
template <class Build>
void run_blocking(CommState& st, bool cacheable, Build&& build) {
  if (cacheable && st.cached && st.call_words == st.cached_words) {
    st.cached->start();
    st.cached->wait();
    return;
  }
  std::unique_ptr<Operation> op = build();
  op->start();
  op->wait();
  if (cacheable) {
    st.cached = std::move(op);
    st.cached_words.swap(st.call_words);
  }
}

template <class T>
std::int64_t word(T v) {
  std::int64_t w = 0;
  static_assert(sizeof(T) <= sizeof w, "argument word too wide");
  std::memcpy(&w, &v, sizeof v);
  return w;
}

void empty_status(MPI_Status* status) {
  if (status == MPI_STATUS_IGNORE) return;
  status->MPI_SOURCE = MPI_ANY_SOURCE;
  status->MPI_TAG = MPI_ANY_TAG;
  status->MPI_ERROR = MPI_SUCCESS;
  MPI_Status_set_elements(status, MPI_BYTE, 0);
  MPI_Status_set_cancelled(status, 0);
}

MPI_Comm comm_of(MPIX_Request r) {
  if (!r) return MPI_COMM_NULL;
  return r->library_comm && r->library_comm->user_freed ? MPI_COMM_SELF : r->comm;
}

}  // namespace
}  // namespace mpia

using namespace mpia;

MPIA_API int MPIA_Alltoall_init(const void* sendbuf, int sendcount, MPI_Datatype sendtype,
                                void* recvbuf, int recvcount, MPI_Datatype recvtype,
                                MPI_Comm comm, MPI_Info info, MPIX_Request* request) {
  return guard(comm, [&] {
    if (request) *request = MPIX_REQUEST_NULL;
    check_comm(comm);
    CommState& st = comm_state(comm);
    AlltoallArgs a{sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype};
    std::unique_ptr<Error> local;
    Selection sel;
    std::int64_t bytes = -1;
    try {
      init_locality(st);
      if (!request) fail(MPI_ERR_ARG, "mpi-advance: request is NULL");
      bytes = check_alltoall(a, st.size);
      sel = resolve(select_algorithm(Collective::Alltoall, info, extent_of(st)), st.size, bytes);
    } catch (const Error& e) {
      local = std::make_unique<Error>(e);
    }
    agree(st, local.get(), local ? std::string() : sel.to_string(), bytes);
    const int tag = st.allocate_tag();
    auto handle = std::make_unique<mpia_request>();
    handle->comm = comm;
    handle->library_comm = st.comm;
    handle->op = make_alltoall(a, sel, st, tag);
    *request = handle.release();
  });
}

MPIA_API int MPIA_Alltoall(const void* sendbuf, int sendcount, MPI_Datatype sendtype,
                           void* recvbuf, int recvcount, MPI_Datatype recvtype, MPI_Comm comm) {
  return guard(comm, [&] {
    check_comm(comm);
    CommState& st = comm_state(comm);
    AlltoallArgs a{sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype};
    const std::int64_t bytes = check_alltoall(a, st.size);
    const Selection& sel = blocking_selection(st, Collective::Alltoall, {bytes}, [&] {
      return choose_alltoall(st.size, bytes);
    });
    if (debug_checks()) agree(st, nullptr, sel.to_string(), bytes);
    if (sel.algorithm->kind == AlgorithmKind::System) {
      MPIA_CHECK(MPI_Alltoall(sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype,
                              st.comm->get()));
      return;
    }
    const bool cacheable = predefined(recvtype) && (a.in_place() || predefined(sendtype));
    st.call_words.clear();
    if (cacheable) {
      for (std::int64_t w : {std::int64_t(-1), word(sel.algorithm), word(sendbuf),
                             std::int64_t(sendcount), word(sendtype),
                             word(recvbuf), std::int64_t(recvcount), word(recvtype)})
        st.call_words.push_back(w);
      for (std::int64_t v : sel.values) st.call_words.push_back(v);
    }
    // Blocking calls never overlap one another on a communicator: they all use tag 0.
    run_blocking(st, cacheable, [&] { return make_alltoall(a, sel, st, 0); });
  });
}

MPIA_API int MPIA_Alltoallv_init(const void* sendbuf, const int sendcounts[], const int sdispls[],
                                 MPI_Datatype sendtype, void* recvbuf, const int recvcounts[],
                                 const int rdispls[], MPI_Datatype recvtype, MPI_Comm comm,
                                 MPI_Info info, MPIX_Request* request) {
  return guard(comm, [&] {
    if (request) *request = MPIX_REQUEST_NULL;
    check_comm(comm);
    CommState& st = comm_state(comm);
    const MPI_Comm lib = st.comm->get();
    AlltoallvArgs a{sendbuf, sendcounts, sdispls, sendtype, recvbuf, recvcounts, rdispls, recvtype};
    std::unique_ptr<Error> local;
    AlltoallvSizes sizes;
    Selection sel;
    try {
      init_locality(st);
      if (!request) fail(MPI_ERR_ARG, "mpi-advance: request is NULL");
      sizes = check_alltoallv(a, st.size);
      sel = select_algorithm(Collective::Alltoallv, info, extent_of(st));
    } catch (const Error& e) {
      local = std::make_unique<Error>(e);
      sizes = AlltoallvSizes{};
      sizes.send_bytes.assign(st.size, 0);
      sizes.recv_bytes.assign(st.size, 0);
    }
    // Every pair must agree on its block's size: what each peer will send me must be what I
    // expect to receive.
    std::vector<std::int64_t> incoming(st.size);
    MPIA_CHECK(MPI_Alltoall(sizes.send_bytes.data(), 1, MPI_INT64_T, incoming.data(), 1,
                            MPI_INT64_T, lib));
    if (!local) {
      for (int i = 0; i < st.size; ++i)
        if (incoming[i] != sizes.recv_bytes[i]) {
          local = std::make_unique<Error>(
              MPI_ERR_TRUNCATE, "mpi-advance: rank " + std::to_string(i) + " sends " +
                                    std::to_string(incoming[i]) + " bytes, this rank expects " +
                                    std::to_string(sizes.recv_bytes[i]));
          break;
        }
    }
    const AlltoallvStats stats = agree_stats(sizes, lib);
    if (!local && sel.algorithm->kind == AlgorithmKind::Auto) sel = choose_alltoallv(st.size, stats);
    agree(st, local.get(), local ? std::string() : sel.to_string(), 0);
    const int tag = st.allocate_tag();
    auto handle = std::make_unique<mpia_request>();
    handle->comm = comm;
    handle->library_comm = st.comm;
    handle->op = make_alltoallv(a, sel, st, tag, std::move(sizes));
    *request = handle.release();
  });
}

MPIA_API int MPIA_Alltoallv(const void* sendbuf, const int sendcounts[], const int sdispls[],
                            MPI_Datatype sendtype, void* recvbuf, const int recvcounts[],
                            const int rdispls[], MPI_Datatype recvtype, MPI_Comm comm) {
  return guard(comm, [&] {
    check_comm(comm);
    CommState& st = comm_state(comm);
    AlltoallvArgs a{sendbuf, sendcounts, sdispls, sendtype, recvbuf, recvcounts, rdispls, recvtype};
    AlltoallvSizes sizes = check_alltoallv(a, st.size);
    // The blocking auto takes the windowed direct exchange without communicating: every direct
    // variant (pairwise, linear, multipair with any window) moves one message per pair on the
    // same tag, so they interoperate across ranks and need no agreement. Only bruck does (it
    // forwards blocks), and persistent init, which agrees on statistics, may choose it.
    const Selection* chosen = &blocking_selection(st, Collective::Alltoallv, {-1}, [&] {
      return parse_selection(Collective::Alltoallv, "multipair_waitany", st.size, true);
    });
    const Selection& sel = *chosen;
    if (debug_checks()) agree(st, nullptr, sel.to_string(), 0);
    if (sel.algorithm->kind == AlgorithmKind::System) {
      MPIA_CHECK(MPI_Alltoallv(sendbuf, sendcounts, sdispls, sendtype, recvbuf, recvcounts,
                               rdispls, recvtype, st.comm->get()));
      return;
    }
    // A plan is reused while this rank's own arguments repeat; algorithms that depend on
    // other ranks' sizes (needs_matrix) are rebuilt every call.
    const bool cacheable = !sel.algorithm->needs_matrix && predefined(recvtype) &&
                           (a.in_place() || predefined(sendtype));
    st.call_words.clear();
    if (cacheable) {
      for (std::int64_t w : {std::int64_t(-2), word(sel.algorithm), word(sendbuf), word(sendtype),
                             word(recvbuf), word(recvtype)})
        st.call_words.push_back(w);
      for (std::int64_t v : sel.values) st.call_words.push_back(v);
      for (int i = 0; i < st.size; ++i) {
        st.call_words.push_back(recvcounts[i]);
        st.call_words.push_back(rdispls[i]);
        if (!a.in_place()) {
          st.call_words.push_back(sendcounts[i]);
          st.call_words.push_back(sdispls[i]);
        }
      }
    }
    run_blocking(st, cacheable, [&] { return make_alltoallv(a, sel, st, 0, std::move(sizes)); });
  });
}

MPIA_API int MPIA_Start(MPIX_Request* request) {
  return guard(request ? comm_of(*request) : MPI_COMM_NULL, [&] {
    if (!request || !*request) fail(MPI_ERR_REQUEST, "mpi-advance: MPIX_Start on a null request");
    if ((*request)->op->active())
      fail(MPI_ERR_REQUEST, "mpi-advance: MPIX_Start on an active request");
    (*request)->op->start();
  });
}

MPIA_API int MPIA_Startall(int count, MPIX_Request requests[]) {
  if (count < 0 || (count > 0 && !requests))
    return guard(MPI_COMM_NULL, [] { fail(MPI_ERR_ARG, "mpi-advance: MPIX_Startall: bad array"); });
  // All checked before any is started, so that an error leaves every request as it was.
  for (int i = 0; i < count; ++i) {
    if (!requests[i] || requests[i]->op->active())
      return guard(comm_of(requests[i]), [] {
        fail(MPI_ERR_REQUEST, "mpi-advance: MPIX_Startall: null or active request");
      });
  }
  for (int i = 0; i < count; ++i) {
    const int rc = MPIA_Start(&requests[i]);
    if (rc != MPI_SUCCESS) return rc;
  }
  return MPI_SUCCESS;
}

MPIA_API int MPIA_Wait(MPIX_Request* request, MPI_Status* status) {
  return guard(request ? comm_of(*request) : MPI_COMM_NULL, [&] {
    if (!request) fail(MPI_ERR_ARG, "mpi-advance: MPIX_Wait: request pointer is NULL");
    if (*request) (*request)->op->wait();
    empty_status(status);
  });
}

MPIA_API int MPIA_Waitall(int count, MPIX_Request requests[], MPI_Status statuses[]) {
  if (count < 0 || (count > 0 && !requests))
    return guard(MPI_COMM_NULL, [] { fail(MPI_ERR_ARG, "mpi-advance: MPIX_Waitall: bad array"); });
  int result = MPI_SUCCESS;
  for (int i = 0; i < count; ++i) {
    const int rc =
        MPIA_Wait(&requests[i], statuses == MPI_STATUSES_IGNORE ? MPI_STATUS_IGNORE : &statuses[i]);
    if (rc != MPI_SUCCESS) result = MPI_ERR_IN_STATUS;
    if (statuses != MPI_STATUSES_IGNORE) statuses[i].MPI_ERROR = rc;
  }
  return result;
}

MPIA_API int MPIA_Test(MPIX_Request* request, int* flag, MPI_Status* status) {
  return guard(request ? comm_of(*request) : MPI_COMM_NULL, [&] {
    if (!request || !flag) fail(MPI_ERR_ARG, "mpi-advance: MPIX_Test: NULL argument");
    *flag = !*request || (*request)->op->test();
    if (*flag) empty_status(status);
  });
}

MPIA_API int MPIA_Request_free(MPIX_Request* request) {
  return guard(request ? comm_of(*request) : MPI_COMM_NULL, [&] {
    if (!request) fail(MPI_ERR_ARG, "mpi-advance: MPIX_Request_free: request pointer is NULL");
    if (!*request) return;
    if ((*request)->op->active())
      fail(MPI_ERR_REQUEST, "mpi-advance: MPIX_Request_free on an active request (wait first)");
    delete *request;
    *request = MPIX_REQUEST_NULL;
  });
}

MPIA_API int MPIA_Request_get_algorithm(MPIX_Request request, char* name, int* resultlen) {
  return guard(comm_of(request), [&] {
    if (!request) fail(MPI_ERR_REQUEST, "mpi-advance: null request");
    if (!name || !resultlen) fail(MPI_ERR_ARG, "mpi-advance: NULL output argument");
    const std::string& s = request->op->algorithm();
    const std::size_t n = std::min<std::size_t>(s.size(), MPIX_MAX_ALGORITHM_STRING - 1);
    std::memcpy(name, s.data(), n);
    name[n] = '\0';
    *resultlen = int(n);
  });
}

MPIA_API int MPIA_Algorithm_get(const char* collective, int index, const char** name,
                                const char** description) {
  Collective c;
  // Running off the end of the list is how callers find its length: that returns
  // MPI_ERR_ARG quietly, without invoking an error handler.
  if (collective && name && collective_from_name(collective, c) && !algorithm_at(c, index))
    return MPI_ERR_ARG;
  return guard(MPI_COMM_NULL, [&] {
    if (!collective || !name) fail(MPI_ERR_ARG, "mpi-advance: NULL argument");
    if (!collective_from_name(collective, c))
      fail(MPI_ERR_ARG, std::string("mpi-advance: unknown collective '") + collective + "'");
    const AlgorithmSpec* a = algorithm_at(c, index);
    *name = a->name;
    if (description) *description = a->description;
  });
}

MPIA_API int MPIA_Request_get_traffic(MPIX_Request request, MPI_Count* messages, MPI_Count* bytes,
                                      MPI_Count* internode_messages, MPI_Count* internode_bytes) {
  return guard(comm_of(request), [&] {
    if (!request) fail(MPI_ERR_REQUEST, "mpi-advance: null request");
    const Traffic& t = request->op->traffic();
    if (messages) *messages = MPI_Count(t.messages);
    if (bytes) *bytes = MPI_Count(t.bytes);
    if (internode_messages) *internode_messages = MPI_Count(t.internode_messages);
    if (internode_bytes) *internode_bytes = MPI_Count(t.internode_bytes);
  });
}

MPIA_API int MPIA_Comm_locality(MPI_Comm comm, int* node, int* nnodes, int* local_rank,
                                int* local_size) {
  return guard(comm, [&] {
    check_comm(comm);
    CommState& st = comm_state(comm);
    const NodeMap& m = comm_locality(st).map;
    const int n = m.node_of[st.rank];
    if (node) *node = n;
    if (nnodes) *nnodes = m.nnodes();
    if (local_rank) *local_rank = m.local_of[st.rank];
    if (local_size) *local_size = int(m.members[n].size());
  });
}

MPIA_API int MPIA_Comm_rank_locality(MPI_Comm comm, int rank, int* node, int* local_rank,
                                     int* package, int* numa) {
  return guard(comm, [&] {
    check_comm(comm);
    CommState& st = comm_state(comm);
    const Locality& loc = comm_locality(st);
    if (rank < 0 || rank >= st.size)
      fail(MPI_ERR_RANK, "mpi-advance: rank " + std::to_string(rank) + " is not in the communicator");
    if (node) *node = loc.map.node_of[rank];
    if (local_rank) *local_rank = loc.map.local_of[rank];
    if (package) *package = loc.package_of[rank];
    if (numa) *numa = loc.numa_of[rank];
  });
}

MPIA_API int MPIA_Comm_locality_split(MPI_Comm comm, int kind, MPI_Comm* newcomm) {
  return guard(comm, [&] {
    if (newcomm) *newcomm = MPI_COMM_NULL;
    check_comm(comm);
    CommState& st = comm_state(comm);
    const NodeMap& m = comm_locality(st).map;
    // Arguments are agreed on before MPI_Comm_split, so that a bad kind on one rank fails
    // every rank instead of leaving the others in the split.
    int bad = !newcomm || (kind != MPIX_LOCALITY_NODE && kind != MPIX_LOCALITY_CROSS);
    MPIA_CHECK(MPI_Allreduce(MPI_IN_PLACE, &bad, 1, MPI_INT, MPI_MAX, st.comm->get()));
    if (!newcomm) fail(MPI_ERR_ARG, "mpi-advance: newcomm is NULL");
    if (kind != MPIX_LOCALITY_NODE && kind != MPIX_LOCALITY_CROSS)
      fail(MPI_ERR_ARG, "mpi-advance: kind must be MPIX_LOCALITY_NODE or MPIX_LOCALITY_CROSS");
    if (bad) fail(MPI_ERR_ARG, "mpi-advance: another rank passed a bad kind or newcomm");
    const int color = kind == MPIX_LOCALITY_NODE ? m.node_of[st.rank] : m.local_of[st.rank];
    MPIA_CHECK(MPI_Comm_split(comm, color, st.rank, newcomm));
  });
}

namespace mpia {
namespace {

// The persistent neighbor auto: node-aware aggregation pays when messages are small enough
// for their count (latency) to dominate and the communicator spans several nodes.
constexpr std::int64_t kNeighborLocalityMaxBytes = 16384;

int neighbor_init(const void* sendbuf, const int sendcounts[], const int sdispls[],
                  MPI_Datatype sendtype, void* recvbuf, const int recvcounts[],
                  const int rdispls[], MPI_Datatype recvtype, MPI_Comm comm, MPI_Info info,
                  MPIX_Request* request) {
  return guard(comm, [&] {
    if (request) *request = MPIX_REQUEST_NULL;
    check_comm(comm);
    CommState& st = comm_state(comm);
    const NeighborTopology& topo = topology(st, comm);  // no topology: the same on every rank
    AlltoallvArgs a{sendbuf, sendcounts, sdispls, sendtype, recvbuf, recvcounts, rdispls, recvtype};
    std::unique_ptr<Error> local;
    std::vector<std::int64_t> sb, rb;
    Selection sel;
    try {
      init_locality(st);
      if (!request) fail(MPI_ERR_ARG, "mpi-advance: request is NULL");
      check_neighbor(a, topo, sb, rb);
      sel = select_algorithm(Collective::NeighborAlltoallv, info, extent_of(st));
    } catch (const Error& e) {
      local = std::make_unique<Error>(e);
      sb.assign(topo.destinations.size(), 0);
      rb.assign(topo.sources.size(), 0);
    }
    // Every edge must agree on its size (tag 0: no blocking call is in flight during init).
    const std::string mismatch = check_edge_sizes(topo, sb, rb, st.comm->get(), 0);
    if (!local && !mismatch.empty()) local = std::make_unique<Error>(MPI_ERR_TRUNCATE, mismatch);
    std::int64_t largest = 0;
    for (std::int64_t b : sb) largest = std::max(largest, b);
    MPIA_CHECK(MPI_Allreduce(MPI_IN_PLACE, &largest, 1, MPI_INT64_T, MPI_MAX, st.comm->get()));
    if (!local && sel.algorithm->kind == AlgorithmKind::Auto) {
      const bool spread = comm_locality(st).map.nnodes() > 1;
      sel = parse_selection(Collective::NeighborAlltoallv,
                            spread && largest <= kNeighborLocalityMaxBytes ? "locality" : "direct",
                            st.size, true);
    }
    agree(st, local.get(), local ? std::string() : sel.to_string(), 0);
    const int tag = st.allocate_tag();
    auto handle = std::make_unique<mpia_request>();
    handle->comm = comm;
    handle->library_comm = st.comm;
    handle->op = make_neighbor(a, sel, st, topo, tag, std::move(sb), std::move(rb));
    *request = handle.release();
  });
}

int neighbor_blocking(const void* sendbuf, const int sendcounts[], const int sdispls[],
                      MPI_Datatype sendtype, void* recvbuf, const int recvcounts[],
                      const int rdispls[], MPI_Datatype recvtype, MPI_Comm comm) {
  return guard(comm, [&] {
    check_comm(comm);
    CommState& st = comm_state(comm);
    const NeighborTopology& topo = topology(st, comm);
    AlltoallvArgs a{sendbuf, sendcounts, sdispls, sendtype, recvbuf, recvcounts, rdispls, recvtype};
    std::vector<std::int64_t> sb, rb;
    check_neighbor(a, topo, sb, rb);
    // The blocking auto is direct: it needs no agreement and no edge list.
    const Selection& sel = blocking_selection(st, Collective::NeighborAlltoallv, {-3}, [&] {
      return parse_selection(Collective::NeighborAlltoallv, "direct", st.size, true);
    });
    if (debug_checks()) agree(st, nullptr, sel.to_string(), 0);
    const int indeg = int(topo.sources.size()), outdeg = int(topo.destinations.size());
    if (sel.algorithm->kind == AlgorithmKind::System) {
      // MPI wants arrays even for a zero degree.
      const int none = 0;
      MPIA_CHECK(MPI_Neighbor_alltoallv(sendbuf, outdeg ? sendcounts : &none,
                                        outdeg ? sdispls : &none, sendtype, recvbuf,
                                        indeg ? recvcounts : &none, indeg ? rdispls : &none,
                                        recvtype, st.comm->get()));
      return;
    }
    const bool cacheable = !sel.algorithm->needs_matrix && predefined(recvtype) && predefined(sendtype);
    st.call_words.clear();
    if (cacheable) {
      for (std::int64_t w : {std::int64_t(-3), word(sel.algorithm), word(sendbuf), word(sendtype),
                             word(recvbuf), word(recvtype)})
        st.call_words.push_back(w);
      for (int j = 0; j < indeg; ++j) st.call_words.push_back(recvcounts[j]), st.call_words.push_back(rdispls[j]);
      for (int k = 0; k < outdeg; ++k) st.call_words.push_back(sendcounts[k]), st.call_words.push_back(sdispls[k]);
    }
    run_blocking(st, cacheable, [&] {
      return make_neighbor(a, sel, st, topo, 0, std::move(sb), std::move(rb));
    });
  });
}

// MPIX_Neighbor_alltoall as the v form: block k at k * count elements.
struct RegularBlocks {
  std::vector<int> scounts, sdispls, rcounts, rdispls;
  RegularBlocks(int outdeg, int scount, int indeg, int rcount) {
    // A negative count stays negative (check_blocks reports it); its displacements are 0.
    for (int k = 0; k < outdeg; ++k)
      scounts.push_back(scount), sdispls.push_back(scount < 0 ? 0 : k * scount);
    for (int j = 0; j < indeg; ++j)
      rcounts.push_back(rcount), rdispls.push_back(rcount < 0 ? 0 : j * rcount);
  }
};

}  // namespace
}  // namespace mpia

MPIA_API int MPIA_Neighbor_alltoallv(const void* sendbuf, const int sendcounts[],
                                     const int sdispls[], MPI_Datatype sendtype, void* recvbuf,
                                     const int recvcounts[], const int rdispls[],
                                     MPI_Datatype recvtype, MPI_Comm comm) {
  return neighbor_blocking(sendbuf, sendcounts, sdispls, sendtype, recvbuf, recvcounts, rdispls,
                           recvtype, comm);
}

MPIA_API int MPIA_Neighbor_alltoallv_init(const void* sendbuf, const int sendcounts[],
                                          const int sdispls[], MPI_Datatype sendtype,
                                          void* recvbuf, const int recvcounts[],
                                          const int rdispls[], MPI_Datatype recvtype,
                                          MPI_Comm comm, MPI_Info info, MPIX_Request* request) {
  return neighbor_init(sendbuf, sendcounts, sdispls, sendtype, recvbuf, recvcounts, rdispls,
                       recvtype, comm, info, request);
}

// The regular forms become the v form. Their counts are checked there, so that a bad count
// on one rank fails persistent init on every rank (a count whose blocks would not fit int
// displacements is passed on as -1: MPI_ERR_COUNT).
static int regular_degrees(MPI_Comm comm, int* sendcount, int* recvcount, int* indeg,
                           int* outdeg) {
  return guard(comm, [&] {
    check_comm(comm);
    CommState& st = comm_state(comm);
    const NeighborTopology& topo = topology(st, comm);
    *indeg = int(topo.sources.size());
    *outdeg = int(topo.destinations.size());
    if (std::int64_t(*outdeg) * *sendcount > INT32_MAX) *sendcount = -1;
    if (std::int64_t(*indeg) * *recvcount > INT32_MAX) *recvcount = -1;
  });
}

MPIA_API int MPIA_Neighbor_alltoall(const void* sendbuf, int sendcount, MPI_Datatype sendtype,
                                    void* recvbuf, int recvcount, MPI_Datatype recvtype,
                                    MPI_Comm comm) {
  int indeg = 0, outdeg = 0;
  if (const int rc = regular_degrees(comm, &sendcount, &recvcount, &indeg, &outdeg)) return rc;
  const RegularBlocks b(outdeg, sendcount, indeg, recvcount);
  return neighbor_blocking(sendbuf, b.scounts.data(), b.sdispls.data(), sendtype, recvbuf,
                           b.rcounts.data(), b.rdispls.data(), recvtype, comm);
}

MPIA_API int MPIA_Neighbor_alltoall_init(const void* sendbuf, int sendcount,
                                         MPI_Datatype sendtype, void* recvbuf, int recvcount,
                                         MPI_Datatype recvtype, MPI_Comm comm, MPI_Info info,
                                         MPIX_Request* request) {
  int indeg = 0, outdeg = 0;
  if (const int rc = regular_degrees(comm, &sendcount, &recvcount, &indeg, &outdeg)) {
    if (request) *request = MPIX_REQUEST_NULL;
    return rc;
  }
  const RegularBlocks b(outdeg, sendcount, indeg, recvcount);
  return neighbor_init(sendbuf, b.scounts.data(), b.sdispls.data(), sendtype, recvbuf,
                       b.rcounts.data(), b.rdispls.data(), recvtype, comm, info, request);
}
