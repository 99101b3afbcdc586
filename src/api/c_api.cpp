// The extern "C" entry points: thin. Every body runs inside guard(): exceptions become MPI
// error classes raised on the communicator's error handler (MPI_COMM_SELF's when there is
// none), and nothing -- no exception, no crash on bad input -- crosses into C or Fortran. The
// work (agreement, selection, building, running) is the operation layer's (src/operation/).
#include "mpi_advance.h"
#include "api/mpia_private.h"

#include "collective/selection.hpp"
#include "locality/locality.hpp"
#include "operation/entry_points.hpp"
#include "operation/attach.hpp"
#include "operation/blocking_cache.hpp"
#include "operation/comm_state.hpp"
#include "operation/deferred.hpp"
#include "operation/neighbor_topology.hpp"
#include "operation/nonblocking.hpp"
#include "operation/operation.hpp"
#include "operation/protocol.hpp"
#include "operation/request.hpp"
#include "operation/select.hpp"
#include "operation/topo.hpp"
#include "util/error.hpp"

#include <algorithm>
#include <climits>
#include <cstring>
#include <new>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#define MPIA_API extern "C" __attribute__((visibility("default")))

namespace mpia {
namespace {

int raise(MPI_Comm comm, int code, const char* what) {
  int initialized = 0, finalized = 0;
  MPI_Initialized(&initialized);
  MPI_Finalized(&finalized);
  if (!initialized || finalized) return code;
  // With a fatal handler the program ends in the call: it says why first.
  call_errhandler(comm == MPI_COMM_NULL ? MPI_COMM_SELF : comm, code, what);
  return code;
}

// Runs body; returns MPI_SUCCESS or the error's code, with its message in what.
template <class F>
int run(F&& body, std::string& what) {
  try {
    body();
    return MPI_SUCCESS;
  } catch (const Error& e) {
    what = e.what();
    return e.code();
  } catch (const std::bad_alloc&) {
    what = "mpi-advance: out of memory";
    return MPI_ERR_NO_MEM;
  } catch (const std::exception& e) {
    what = std::string("mpi-advance: internal error: ") + e.what();
    return MPI_ERR_INTERN;
  } catch (...) {
    what = "mpi-advance: internal error";
    return MPI_ERR_INTERN;
  }
}

template <class F>
int guard(MPI_Comm comm, F&& body) {
  std::string what;
  const int code = run(body, what);
  return code == MPI_SUCCESS ? code : raise(comm, code, what.c_str());
}

void check_comm(MPI_Comm comm) {
  if (comm == MPI_COMM_NULL) fail(MPI_ERR_COMM, "mpi-advance: MPI_COMM_NULL");
  int inter = 0;
  MPIA_CHECK(MPI_Comm_test_inter(comm, &inter));
  if (inter) fail(MPI_ERR_COMM, "mpi-advance: intercommunicators are not supported");
}

CommState& state_of(MPI_Comm comm) {
  // A communicator with a state passed check_comm when the state was made.
  if (CommState* st = last_comm_state(comm)) return *st;
  check_comm(comm);
  return comm_state(comm);
}

// The outputs the caller asked for (not NULL) get their values: put(out, value, out, value...).
void put() {}
template <class T, class V, class... Rest>
void put(T* out, V value, Rest... rest) {
  if (out) *out = T(value);
  put(rest...);
}

void empty_status(MPI_Status* status, int code) {
  if (status == MPI_STATUS_IGNORE) return;
  status->MPI_SOURCE = MPI_ANY_SOURCE;
  status->MPI_TAG = MPI_ANY_TAG;
  status->MPI_ERROR = code;
  MPI_Status_set_elements(status, MPI_BYTE, 0);
  MPI_Status_set_cancelled(status, 0);
}

// A request's "starting" claim, held while MPIX_Start starts it (see MPIA_Startall).
class StartClaim {
 public:
  explicit StartClaim(mpia_request* r)
      : r_(r->starting.exchange(true, std::memory_order_acquire) ? nullptr : r) {}
  ~StartClaim() {
    if (r_) r_->starting.store(false, std::memory_order_release);
  }
  StartClaim(const StartClaim&) = delete;
  StartClaim& operator=(const StartClaim&) = delete;
  explicit operator bool() const { return r_ != nullptr; }

 private:
  mpia_request* r_;
};

MPI_Comm comm_of(MPIX_Request r) {
  if (!r) return MPI_COMM_NULL;
  return r->library_comm && r->library_comm->user_freed.load(std::memory_order_acquire)
             ? MPI_COMM_SELF
             : r->comm;
}

// A completed nonblocking call's request: its plan back to the communicator's cache (when it
// ran without error), the request freed and nulled.
void retire(MPIX_Request* request, bool ok) {
  mpia_request* r = *request;
  if (ok) {
    if (auto* nb = dynamic_cast<NonblockingOperation*>(r->op.get()))
      nb->finish();
    else if (auto* d = dynamic_cast<DeferredOperation*>(r->op.get()))
      d->finish();
  }
  delete r;
  *request = MPIX_REQUEST_NULL;
}

// Completes one request without raising: its code (the request's own error, with its class).
int wait_one(MPIX_Request* request, MPI_Status* status, std::string& what) {
  const int code = run(
      [&] {
        if (!request) fail(MPI_ERR_ARG, "mpi-advance: MPIX_Wait: request pointer is NULL");
        if (*request) (*request)->op->wait();
      },
      what);
  if (request && *request && (*request)->one_shot && !(*request)->op->active())
    retire(request, code == MPI_SUCCESS);
  empty_status(status, code);
  return code;
}

template <class Init>
int init_request(MPI_Comm comm, MPIX_Request* request, Init&& init) {
  return guard(comm, [&] {
    if (request) *request = MPIX_REQUEST_NULL;
    CommState& st = state_of(comm);
    std::unique_ptr<Operation> op = init(st, request != nullptr);
    *request = make_request(comm, st, std::move(op));
  });
}

}  // namespace
}  // namespace mpia

using namespace mpia;

namespace mpia {
namespace {

// The arguments of the forms (api_forms.inc): the int forms and the large-count (_c) forms share
// these, counts and displacements read as 64-bit (operation/args.hpp).
template <class Count>
AlltoallArgs regular_args(const void* sendbuf, Count sendcount, MPI_Datatype sendtype,
                          void* recvbuf, Count recvcount, MPI_Datatype recvtype) {
  return AlltoallArgs{
      sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype, sizeof(Count) > sizeof(int)};
}

template <class Count, class Displ>
AlltoallvArgs v_args(const void* sendbuf, const Count sendcounts[], const Displ sdispls[],
                     MPI_Datatype sendtype, void* recvbuf, const Count recvcounts[],
                     const Displ rdispls[], MPI_Datatype recvtype) {
  AlltoallvArgs a;
  a.send = v_side(sendbuf, sendcounts, sdispls, sendtype);
  a.recv = v_side(recvbuf, recvcounts, rdispls, recvtype);
  a.large = sizeof(Count) > sizeof(int);
  return a;
}

template <class Count, class Displ>
AlltoallvArgs w_args(const void* sendbuf, const Count sendcounts[], const Displ sdispls[],
                     const MPI_Datatype sendtypes[], void* recvbuf, const Count recvcounts[],
                     const Displ rdispls[], const MPI_Datatype recvtypes[]) {
  AlltoallvArgs a;
  a.send = w_side(sendbuf, sendcounts, sdispls, sendtypes);
  a.recv = w_side(recvbuf, recvcounts, rdispls, recvtypes);
  a.large = sizeof(Count) > sizeof(int);
  return a;
}

}  // namespace
}  // namespace mpia

namespace mpia {
namespace {
// Starts a request's operation; a settled trial first gives way to the operation it settled on.
void start_op(mpia_request* r) {
  if (r->one_shot)
    fail(MPI_ERR_REQUEST,
         "mpi-advance: MPIX_Start on a nonblocking call's request (not persistent)");
  if (std::unique_ptr<Operation> settled = r->op->settled_part()) r->op = std::move(settled);
  r->op->start();
}
}  // namespace
}  // namespace mpia

MPIA_API int MPIA_Start(MPIX_Request* request) {
  return guard(request ? comm_of(*request) : MPI_COMM_NULL, [&] {
    if (!request || !*request) fail(MPI_ERR_REQUEST, "mpi-advance: MPIX_Start on a null request");
    StartClaim claim(*request);
    if (!claim)
      fail(MPI_ERR_REQUEST, "mpi-advance: MPIX_Start: another thread is starting this request");
    start_op(*request);
  });
}

MPIA_API int MPIA_Startall(int count, MPIX_Request requests[]) {
  if (count < 0 || (count > 0 && !requests))
    return guard(MPI_COMM_NULL, [] { fail(MPI_ERR_ARG, "mpi-advance: MPIX_Startall: bad array"); });
  // Everything is checked before anything is started, so that an error leaves every request
  // as it was: null, active, or the same request twice. Each request is claimed first (an
  // atomic exchange), so a request that is in this array twice, or that another thread is
  // starting, is seen without a race; the claims are held until the starts are done.
  int bad = -1, claimed = 0;
  const char* why = nullptr;
  for (; claimed < count; ++claimed) {
    mpia_request* r = requests[claimed];
    if (!r) {
      bad = claimed, why = "mpi-advance: MPIX_Startall: null request";
      break;
    }
    if (r->starting.exchange(true, std::memory_order_acquire)) {
      bad = claimed;
      why = std::find(requests, requests + claimed, r) != requests + claimed
                ? "mpi-advance: MPIX_Startall: the same request twice"
                : "mpi-advance: MPIX_Startall: another thread is starting one of the requests";
      break;
    }
    if (r->op->active() || r->one_shot) {
      bad = claimed++, why = r->one_shot
                                 ? "mpi-advance: MPIX_Startall: a nonblocking call's request"
                                 : "mpi-advance: MPIX_Startall: active request";
      break;
    }
  }
  int rc = MPI_SUCCESS;
  if (bad >= 0) {
    rc = guard(comm_of(requests[bad]), [why] { fail(MPI_ERR_REQUEST, why); });
  } else {
    for (int i = 0; i < count && rc == MPI_SUCCESS; ++i)
      rc = guard(comm_of(requests[i]), [&] { start_op(requests[i]); });
  }
  for (int i = 0; i < claimed; ++i) requests[i]->starting.store(false, std::memory_order_release);
  return rc;
}

MPIA_API int MPIA_Wait(MPIX_Request* request, MPI_Status* status) {
  std::string what;
  // Taken first: a nonblocking call's request is freed by its completion.
  const MPI_Comm comm = request ? comm_of(*request) : MPI_COMM_NULL;
  const int code = wait_one(request, status, what);
  if (code == MPI_SUCCESS) return code;
  return raise(comm, code, what.c_str());
}

// Every request is completed (one failing does not leave the others active); a failure is
// MPI_ERR_IN_STATUS, with each request's own code in its status, raised once on the first
// failed request's communicator.
MPIA_API int MPIA_Waitall(int count, MPIX_Request requests[], MPI_Status statuses[]) {
  if (count < 0 || (count > 0 && !requests))
    return guard(MPI_COMM_NULL, [] { fail(MPI_ERR_ARG, "mpi-advance: MPIX_Waitall: bad array"); });
  int first = -1;
  MPI_Comm first_comm = MPI_COMM_NULL;
  std::string what, first_what;
  for (int i = 0; i < count; ++i) {
    const MPI_Comm comm = comm_of(requests[i]);  // before a nonblocking call's is freed
    const int rc = wait_one(
        &requests[i], statuses == MPI_STATUSES_IGNORE ? MPI_STATUS_IGNORE : &statuses[i], what);
    if (rc != MPI_SUCCESS && first < 0) first = i, first_what = what, first_comm = comm;
  }
  if (first < 0) return MPI_SUCCESS;
  return raise(first_comm, MPI_ERR_IN_STATUS, first_what.c_str());
}

MPIA_API int MPIA_Test(MPIX_Request* request, int* flag, MPI_Status* status) {
  return guard(request ? comm_of(*request) : MPI_COMM_NULL, [&] {
    if (!request || !flag) fail(MPI_ERR_ARG, "mpi-advance: MPIX_Test: NULL argument");
    *flag = 0;
    bool done = true;
    try {
      done = !*request || (*request)->op->test();
    } catch (const Error& e) {  // complete, with its error
      *flag = 1;
      empty_status(status, e.code());
      if ((*request)->one_shot) retire(request, false);
      throw;
    }
    *flag = done;
    if (done) {
      empty_status(status, MPI_SUCCESS);
      if (*request && (*request)->one_shot) retire(request, true);
    }
  });
}

MPIA_API int MPIA_Request_free(MPIX_Request* request) {
  return guard(request ? comm_of(*request) : MPI_COMM_NULL, [&] {
    if (!request) fail(MPI_ERR_ARG, "mpi-advance: MPIX_Request_free: request pointer is NULL");
    if (!*request) return;
    if ((*request)->op->active())
      fail(MPI_ERR_REQUEST,
           (*request)->one_shot
               ? "mpi-advance: MPIX_Request_free on a nonblocking call's active "
                 "request (erroneous in MPI: complete it with MPIX_Wait or "
                 "MPIX_Test)"
               : "mpi-advance: MPIX_Request_free on an active request (wait first)");
    delete *request;
    *request = MPIX_REQUEST_NULL;
  });
}

namespace mpia {
namespace {
// A request's text (what(op)) into out, at most max characters with the NUL.
template <class What>
int request_text(MPIX_Request request, char* out, int* resultlen, std::size_t max, What what) {
  return guard(comm_of(request), [&] {
    if (!request) fail(MPI_ERR_REQUEST, "mpi-advance: null request");
    if (!out || !resultlen) fail(MPI_ERR_ARG, "mpi-advance: NULL output argument");
    const std::string s = what(*request->op);
    const std::size_t n = std::min<std::size_t>(s.size(), max - 1);
    std::memcpy(out, s.data(), n);
    out[n] = '\0';
    *resultlen = int(n);
  });
}
}  // namespace
}  // namespace mpia

MPIA_API int MPIA_Request_get_algorithm(MPIX_Request request, char* name, int* resultlen) {
  return request_text(request, name, resultlen, MPIX_MAX_ALGORITHM_STRING,
                      [](const Operation& op) { return op.algorithm(); });
}

MPIA_API int MPIA_Request_get_trial(MPIX_Request request, char* text, int* resultlen) {
  return request_text(request, text, resultlen, MPIX_MAX_TRIAL_STRING,
                      [](const Operation& op) { return op.trial(); });
}

MPIA_API int MPIA_Get_version(int* major, int* minor, int* patch) {
  put(major, MPIA_VERSION_MAJOR, minor, MPIA_VERSION_MINOR, patch, MPIA_VERSION_PATCH);
  return MPI_SUCCESS;
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
    if (description) *description = a->summary.c_str();
  });
}

// The private entry points (api/mpia_private.h).
MPIA_API int mpia_private_progress(void) {
  try {
    progress_running();
  } catch (...) {  // not expected: executions record their errors
  }
  return MPI_SUCCESS;
}

MPIA_API int mpia_private_request_running(MPIX_Request request) {
  return request && request->op && request->op->running() ? 1 : 0;
}

MPIA_API int mpia_private_comm_last_call(MPI_Comm comm, const char* collective,
                                         const char** algorithm, int* cache_hit) {
  return guard(comm, [&] {
    Collective c;
    if (!collective || !collective_from_name(collective, c) || !algorithm || !cache_hit)
      fail(MPI_ERR_ARG, "mpi-advance: mpia_private_comm_last_call: bad argument");
    const CommState& st = state_of(comm);
    *algorithm = st.per[std::size_t(c)].last_algorithm.c_str();
    *cache_hit = st.per[std::size_t(c)].last_hit;
  });
}

MPIA_API int mpia_private_plan_cache_bytes(MPI_Count* peak_bytes, MPI_Count* bytes_now,
                                           MPI_Count* entries_now, MPI_Count* largest_plan) {
  return guard(MPI_COMM_NULL, [&] {
    const PlanCacheTotals t = plan_cache_totals();
    put(peak_bytes, t.peak, bytes_now, t.bytes, entries_now, t.entries, largest_plan, t.largest);
  });
}

MPIA_API int mpia_private_comm_plan_cache(MPI_Comm comm, MPI_Count* entries,
                                          MPI_Count* agreed_bytes, MPI_Count* bytes) {
  return guard(comm, [&] {
    const CommPlanCache c = comm_plan_cache(state_of(comm));
    put(entries, c.entries, agreed_bytes, c.agreed_bytes, bytes, c.bytes);
  });
}

MPIA_API int MPIA_Comm_set_algorithm(MPI_Comm comm, const char* collective, const char* selection) {
  return guard(comm, [&] {
    CommState& st = state_of(comm);
    st.check_settings();
    const std::string text = selection ? selection : "";
    Collective c = Collective::Alltoall;
    Proposal p;
    checked(p, [&] {
      if (!collective || !collective_from_name(collective, c))
        fail(MPI_ERR_ARG,
             std::string("mpi-advance: MPIX_Comm_set_algorithm: unknown collective '") +
                 (collective ? collective : "(null)") + "'");
      // Locally: everything but what needs the node map, against the widest ranges any node
      // map of this size allows (a value outside them is bad whatever the locality).
      if (!text.empty()) parse_selection(c, text, Extent(st.size, st.size, st.size), true);
      p.choice = std::string(collective) + "=" + text;
    });
    agree(st, p);
    // Every rank has the same text now: the parameter ranges (which may need the locality of
    // the communicator, a collective) are checked identically everywhere.
    if (!text.empty()) parse_for(c, text, extent_of(st), true);
    st.per[std::size_t(c)].algorithm = text;
    // A blocking alltoall repeated with the same arguments checks the memo, not the text.
    if (st.blocking) st.blocking->memo.collective = -1;
  });
}

MPIA_API int MPIA_Request_get_traffic(MPIX_Request request, MPI_Count* messages, MPI_Count* bytes,
                                      MPI_Count* internode_messages, MPI_Count* internode_bytes) {
  return guard(comm_of(request), [&] {
    if (!request) fail(MPI_ERR_REQUEST, "mpi-advance: null request");
    const Traffic t = request->op->traffic();
    put(messages, t.messages, bytes, t.bytes, internode_messages, t.internode_messages,
        internode_bytes, t.internode_bytes);
  });
}

MPIA_API int MPIA_Request_get_memory(MPIX_Request request, MPI_Count* bytes,
                                     MPI_Count* mpi_requests, MPI_Count* datatypes) {
  return guard(comm_of(request), [&] {
    if (!request) fail(MPI_ERR_REQUEST, "mpi-advance: null request");
    const Memory m = request->op->memory();
    put(bytes, m.bytes + std::int64_t(sizeof(*request)), mpi_requests, m.mpi_requests, datatypes,
        m.datatypes);
  });
}

MPIA_API int MPIA_Comm_locality(MPI_Comm comm, int* node, int* nnodes, int* local_rank,
                                int* local_size) {
  return guard(comm, [&] {
    CommState& st = state_of(comm);
    st.check_settings();
    const NodeMap& m = comm_locality(st).map;
    const int n = m.node_of[st.rank];
    put(node, n, nnodes, m.nnodes(), local_rank, m.local_of[st.rank], local_size,
        int(m.members[n].size()));
  });
}

MPIA_API int MPIA_Comm_rank_locality(MPI_Comm comm, int rank, int* node, int* local_rank,
                                     int* package, int* numa) {
  return guard(comm, [&] {
    CommState& st = state_of(comm);
    st.check_settings();
    const Locality& loc = comm_locality(st);
    if (rank < 0 || rank >= st.size)
      fail(MPI_ERR_RANK,
           "mpi-advance: rank " + std::to_string(rank) + " is not in the communicator");
    put(node, loc.map.node_of[rank], local_rank, loc.map.local_of[rank], package,
        loc.package_of[rank], numa, loc.numa_of[rank]);
  });
}

MPIA_API int MPIA_Comm_locality_split(MPI_Comm comm, int kind, MPI_Comm* newcomm) {
  return guard(comm, [&] {
    if (newcomm) *newcomm = MPI_COMM_NULL;
    CommState& st = state_of(comm);
    st.check_settings();
    comm_locality(st);
    // Arguments are agreed on before MPI_Comm_split, so that a bad kind on one rank fails
    // every rank instead of leaving the others in the split.
    Proposal p;
    checked(p, [&] {
      if (!newcomm) fail(MPI_ERR_ARG, "mpi-advance: newcomm is NULL");
      if (kind != MPIX_LOCALITY_NODE && kind != MPIX_LOCALITY_CROSS)
        fail(MPI_ERR_ARG, "mpi-advance: kind must be MPIX_LOCALITY_NODE or MPIX_LOCALITY_CROSS");
    });
    agree(st, p);
    // The agreement completed on every rank: nobody still waits on this one for a request.
    comm_locality_split(st, comm, kind == MPIX_LOCALITY_NODE, newcomm);
  });
}

namespace mpia {
namespace {

// MPIX_Neighbor_alltoall as the v form: block k at k * count elements.
struct RegularBlocks {
  std::vector<std::int64_t> scounts, sdispls, rcounts, rdispls;
  AlltoallvArgs args;
  RegularBlocks(CommState& st, const AlltoallArgs& a) {
    const NeighborTopology& topo = comm_topology(st);
    const int indeg = int(topo.sources.size()), outdeg = int(topo.destinations.size());
    const std::int64_t sc = a.sendcount, rc = a.recvcount;
    for (int k = 0; k < outdeg; ++k) scounts.push_back(sc), sdispls.push_back(k * sc);
    for (int j = 0; j < indeg; ++j) rcounts.push_back(rc), rdispls.push_back(j * rc);
    args.send = v_side(a.sendbuf, scounts.data(), sdispls.data(), a.sendtype);
    args.recv = v_side(a.recvbuf, rcounts.data(), rdispls.data(), a.recvtype);
    args.regular = true;
    args.sendcount = sc;
    args.recvcount = rc;
    args.large = a.large;
  }
};

}  // namespace
}  // namespace mpia

// --- Topology objects (operation/topo.hpp) ---------------------------------------------------

MPIA_API int MPIA_Topo_create(MPI_Comm comm, int indegree, const int sources[], int outdegree,
                              const int destinations[], MPI_Info info, MPIX_Topo* topo) {
  return guard(comm, [&] {
    if (topo) *topo = MPIX_TOPO_NULL;
    std::unique_ptr<MPIX_Topo_s> t = topo_create(state_of(comm), comm, indegree, sources, outdegree,
                                                 destinations, info, topo != nullptr);
    *topo = t.release();
  });
}

MPIA_API int MPIA_Topo_free(MPIX_Topo* topo) {
  return guard(topo_error_comm(topo ? *topo : MPIX_TOPO_NULL), [&] {
    if (!topo) fail(MPI_ERR_ARG, "mpi-advance: MPIX_Topo_free: topo pointer is NULL");
    topo_free(*topo);
    *topo = MPIX_TOPO_NULL;
  });
}

MPIA_API int MPIA_Neighbor_alltoallv_topo(const void* sendbuf, const int sendcounts[],
                                          const int sdispls[], MPI_Datatype sendtype, void* recvbuf,
                                          const int recvcounts[], const int rdispls[],
                                          MPI_Datatype recvtype, MPIX_Topo topo) {
  return guard(topo_error_comm(topo), [&] {
    neighbor_blocking(topo_state(topo), v_args(sendbuf, sendcounts, sdispls, sendtype, recvbuf,
                                               recvcounts, rdispls, recvtype));
  });
}

MPIA_API int MPIA_Neighbor_alltoallv_topo_init(const void* sendbuf, const int sendcounts[],
                                               const int sdispls[], MPI_Datatype sendtype,
                                               void* recvbuf, const int recvcounts[],
                                               const int rdispls[], MPI_Datatype recvtype,
                                               MPIX_Topo topo, MPI_Info info,
                                               MPIX_Request* request) {
  return guard(topo_error_comm(topo), [&] {
    if (request) *request = MPIX_REQUEST_NULL;
    CommState& st = topo_state(topo);
    std::unique_ptr<Operation> op = neighbor_init(
        st, v_args(sendbuf, sendcounts, sdispls, sendtype, recvbuf, recvcounts, rdispls, recvtype),
        info, request != nullptr);
    *request = make_request(topo->user, st, std::move(op));
    // Errors go where the object's go: the user's communicator while it lives.
    (*request)->library_comm = topo->user_private;
  });
}

// --- Nonblocking calls (MPIX_Ialltoall, ...) ---------------------------------------------------

namespace mpia {
namespace {

// A nonblocking call's request: its operation, made by make(st, args). On a communicator the
// library has not attached yet, the attach begins without waiting and the operation is made
// once it is done (DeferredOperation), from a copy of args whose derived datatypes are kept.
template <class Args, class Make>
int start_nonblocking(MPI_Comm comm, MPIX_Request* request, const Args& args, Collective c,
                      Make make) {
  return guard(comm, [&] {
    if (!request) fail(MPI_ERR_ARG, "mpi-advance: request is NULL");
    *request = MPIX_REQUEST_NULL;
    CommState* st = last_comm_state(comm);
    if (!st) {
      check_comm(comm);
      st = find_comm_state(comm);
    }
    std::unique_ptr<Operation> op;
    if (!st && !nonblocking_may_attach(comm)) {
      // Handed to the MPI library on comm itself (attach.hpp); the state goes with the call.
      const std::unique_ptr<CommState> borrowed = borrowed_state(comm);
      mpia_request* r = make_request(comm, *borrowed, make(*borrowed, args));
      r->one_shot = true;
      *request = r;
      return;
    }
    std::uint64_t ticket = 0;
    std::shared_ptr<PendingAttach> attach = defer_on(comm, st != nullptr, &ticket);
    std::shared_ptr<PrivateComm> library_comm = attach ? attach_comm(*attach) : nullptr;
    if (!attach) {
      if (!st) st = &state_of(comm);  // attached by another thread meanwhile
      op = make(*st, args);
    } else {
      st = nullptr;
      auto copy = std::make_shared<Args>(args);
      std::shared_ptr<void> kept = keep_datatypes(*copy, comm, c);
      op = std::make_unique<DeferredOperation>(
          std::move(attach), ticket, [copy, make](CommState& s) { return make(s, *copy); }, kept);
      op->start();
    }
    mpia_request* r;
    if (st) {
      r = make_request(comm, *st, std::move(op));
    } else {  // its private communicator is still being made
      r = new mpia_request;
      r->comm = comm;
      r->library_comm = std::move(library_comm);
      r->op = std::move(op);
    }
    r->one_shot = true;
    *request = r;
  });
}

// Inlined into each entry point, as a hand-written entry point would be: the blocking calls' cost
// is counted per instruction (test/perf, perf.call_cost). Large (the _c form) makes each entry
// point's guard() an instantiation of its own, called once and so inlined too.
#define MPIA_INLINE __attribute__((always_inline)) inline

// --- The forms' cores: every C entry point of a collective (api_forms.inc, generated from
// src/bindings/calls.txt) builds its arguments and calls one of these for its collective. A
// regular neighbor call is carried as an alltoall's arguments until the communicator's state
// (its topology) is known, then as the v form (RegularBlocks).

// Runs f on a as collective C's entry points (operation/entry_points.hpp) take it: a regular
// neighbor call as the v form.
template <Collective C, class Args, class F>
decltype(auto) carried(CommState& st, const Args& a, F&& f) {
  if constexpr (C == Collective::NeighborAlltoallv && std::is_same<Args, AlltoallArgs>::value) {
    const RegularBlocks b(st, a);
    return f(b.args);
  } else {
    return f(a);
  }
}

template <Collective C, bool Large, class Args>
MPIA_INLINE int api_blocking(MPI_Comm comm, const Args& a) {
  return guard(comm, [&] {
    CommState& st = state_of(comm);
    carried<C>(st, a, [&](const auto& x) { EntryPoints<C>::blocking(st, x); });
  });
}

template <Collective C, class Args>
int api_persistent(MPI_Comm comm, MPI_Info info, MPIX_Request* request, const Args& a) {
  return init_request(comm, request, [&](CommState& st, bool given) {
    return carried<C>(st, a,
                      [&](const auto& x) { return EntryPoints<C>::init(st, x, info, given); });
  });
}

template <Collective C, class Args>
int api_nonblocking(MPI_Comm comm, MPIX_Request* request, const Args& a) {
  return start_nonblocking(comm, request, a, C, [](CommState& st, const Args& x) {
    return carried<C>(st, x, [&](const auto& y) { return EntryPoints<C>::nonblocking(st, y); });
  });
}

}  // namespace
}  // namespace mpia

#include "api_forms.inc"
