// The drop-in library's C entry points and dispatchers (see preload.hpp), and MPIX_REPORT.
#include "preload/preload.hpp"
#include "util/mpi_features.h"
#include "util/topo_degrees.h"

#include "mpi_advance.h"

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <mutex>
#include <string>
#include <tuple>

// Exported by libmpi_advance (not in the public header): what the last blocking call of a
// collective (0 alltoall, 1 alltoallv, 2 neighbor) on comm ran, and whether it reused a plan.
extern "C" int MPIA_Comm_last_call(MPI_Comm comm, int collective, const char** algorithm,
                                   int* cache_hit);

using mpia_preload::depth;
using mpia_preload::Inside;

namespace {

// The calls intercepted, blocking, nonblocking and persistent; the _c forms (MPI-4's large
// counts) are reported on lines of their own. A persistent call's line counts its starts.
enum Coll {
  kAlltoall,
  kAlltoallv,
  kNeighbor,
  kNeighborV,
  kNeighborW,
  kAlltoallC,
  kAlltoallvC,
  kNeighborC,
  kNeighborVC,
  kNeighborWC,
  kIalltoall,
  kIalltoallv,
  kIneighbor,
  kIneighborV,
  kIneighborW,
  kIalltoallC,
  kIalltoallvC,
  kIneighborC,
  kIneighborVC,
  kIneighborWC,
  kAlltoallInit,
  kAlltoallvInit,
  kNeighborInit,
  kNeighborVInit,
  kNeighborWInit,
  kAlltoallInitC,
  kAlltoallvInitC,
  kNeighborInitC,
  kNeighborVInitC,
  kNeighborWInitC,
  kColls
};
// Open MPI 4.1 has the persistent collectives as its extension's MPIX_ functions.
#if MPIA_HAVE_PERSISTENT_COLL
#define MPIA_PRELOAD_INIT(name) "MPI_" name
#else
#define MPIA_PRELOAD_INIT(name) "MPIX_" name
#endif
const char* const kNames[kColls] = {"MPI_Alltoall",
                                    "MPI_Alltoallv",
                                    "MPI_Neighbor_alltoall",
                                    "MPI_Neighbor_alltoallv",
                                    "MPI_Neighbor_alltoallw",
                                    "MPI_Alltoall_c",
                                    "MPI_Alltoallv_c",
                                    "MPI_Neighbor_alltoall_c",
                                    "MPI_Neighbor_alltoallv_c",
                                    "MPI_Neighbor_alltoallw_c",
                                    "MPI_Ialltoall",
                                    "MPI_Ialltoallv",
                                    "MPI_Ineighbor_alltoall",
                                    "MPI_Ineighbor_alltoallv",
                                    "MPI_Ineighbor_alltoallw",
                                    "MPI_Ialltoall_c",
                                    "MPI_Ialltoallv_c",
                                    "MPI_Ineighbor_alltoall_c",
                                    "MPI_Ineighbor_alltoallv_c",
                                    "MPI_Ineighbor_alltoallw_c",
                                    MPIA_PRELOAD_INIT("Alltoall_init"),
                                    MPIA_PRELOAD_INIT("Alltoallv_init"),
                                    MPIA_PRELOAD_INIT("Neighbor_alltoall_init"),
                                    MPIA_PRELOAD_INIT("Neighbor_alltoallv_init"),
                                    MPIA_PRELOAD_INIT("Neighbor_alltoallw_init"),
                                    "MPI_Alltoall_init_c",
                                    "MPI_Alltoallv_init_c",
                                    "MPI_Neighbor_alltoall_init_c",
                                    "MPI_Neighbor_alltoallv_init_c",
                                    "MPI_Neighbor_alltoallw_init_c"};
#undef MPIA_PRELOAD_INIT
// The library's collective index of each (0 alltoall, 1 alltoallv, 2 the neighbor calls).
int library_index(int c) {
  static const int per[10] = {0, 1, 2, 2, 2, 0, 1, 2, 2, 2};
  return per[c % 10];
}

// Read once. A setting that must be the same everywhere (the selection) is agreed by the
// library itself; "system" is decided here, before the library sees the call, so it must be
// set alike on every rank (as every MPIX_ setting).
struct Env {
  bool system[kColls] = {};
  int report = 0;  // 0 off, 1 rank 0 of MPI_COMM_WORLD, 2 every rank
  Env() {
    const char* vars[3] = {"MPIX_ALLTOALL", "MPIX_ALLTOALLV", "MPIX_NEIGHBOR_ALLTOALLV"};
    for (int c = 0; c < kColls; ++c) {
      const char* v = std::getenv(vars[library_index(c)]);
      system[c] = v && std::strcmp(v, "system") == 0;
    }
    const char* r = std::getenv("MPIX_REPORT");
    if (r && *r && std::strcmp(r, "0") != 0) report = std::strcmp(r, "all") == 0 ? 2 : 1;
  }
};
const Env& env() {
  static const Env e;
  return e;
}

// --- MPIX_REPORT ---------------------------------------------------------------------------

struct Row {
  long long calls = 0, hits = 0;
  double bytes = 0, seconds = 0;
};
std::mutex report_mutex;
std::map<std::tuple<int, int, std::string>, Row>* rows = nullptr;  // leaked: printed at finalize
int report_keyval = MPI_KEYVAL_INVALID;

// Exported by libmpi_advance (not in the public header): the process's plan caches.
extern "C" int MPIA_Plan_cache_bytes(MPI_Count* peak_bytes, MPI_Count* bytes_now,
                                     MPI_Count* entries_now, MPI_Count* largest_plan);

int print_report(MPI_Comm, int, void*, void*) {
  std::lock_guard<std::mutex> lock(report_mutex);
  // Run once, at MPI_Finalize (MPI_COMM_SELF's attributes go first): the keyval goes with it.
  int finalized = 0;
  PMPI_Finalized(&finalized);
  if (!finalized) PMPI_Comm_free_keyval(&report_keyval);
  int rank = 0, size = 1;
  PMPI_Comm_rank(MPI_COMM_WORLD, &rank);
  PMPI_Comm_size(MPI_COMM_WORLD, &size);
  if (!rows || (env().report == 1 && rank != 0)) return MPI_SUCCESS;
  std::string out = "mpi-advance report: rank " + std::to_string(rank) + " of MPI_COMM_WORLD (" +
                    std::to_string(size) +
                    " ranks); per collective, communicator size and "
                    "algorithm:\n";
  for (const auto& [key, row] : *rows) {
    char line[512];
    std::snprintf(line, sizeof line,
                  "mpi-advance: %s ranks=%d calls=%lld bytes=%.0f algorithm=%s time=%.6fs "
                  "cache_hits=%lld\n",
                  kNames[std::get<0>(key)], std::get<1>(key), row.calls, row.bytes,
                  std::get<2>(key).c_str(), row.seconds, row.hits);
    out += line;
  }
  MPI_Count peak = 0, now = 0, entries = 0;
  if (MPIA_Plan_cache_bytes(&peak, &now, &entries, nullptr) == MPI_SUCCESS)
    out += "mpi-advance: plan caches peak_bytes=" + std::to_string(peak) +
           " bytes_now=" + std::to_string(now) + " entries_now=" + std::to_string(entries) + "\n";
  std::fputs(out.c_str(), stdout);
  std::fflush(stdout);
  return MPI_SUCCESS;
}

int comm_size(MPI_Comm comm) {
  int n = 0;
  PMPI_Comm_size(comm, &n);
  return n;
}

void record_line(int c, int size, const char* algorithm, int hit, double bytes, double seconds) {
  std::lock_guard<std::mutex> lock(report_mutex);
  if (!rows) {
    rows = new std::map<std::tuple<int, int, std::string>, Row>();
    // Printed by the delete callback MPI_Finalize runs first, while MPI is still usable.
    PMPI_Comm_create_keyval(MPI_COMM_NULL_COPY_FN, print_report, &report_keyval, nullptr);
    PMPI_Comm_set_attr(MPI_COMM_SELF, report_keyval, nullptr);
  }
  Row& r = (*rows)[std::make_tuple(int(c), size, std::string(algorithm))];
  ++r.calls;
  r.hits += hit;
  r.bytes += bytes;
  r.seconds += seconds;
}

// A blocking call: what the library ran (MPIA_Comm_last_call), or the MPI library's.
void record(Coll c, MPI_Comm comm, bool library, double bytes, double seconds) {
  const char* algorithm = "system (MPI library)";
  int hit = 0;
  if (library && MPIA_Comm_last_call(comm, library_index(c), &algorithm, &hit) != MPI_SUCCESS)
    algorithm = "?";
  record_line(c, comm_size(comm), algorithm, hit, bytes, seconds);
}

// A request's call: what the library request runs (null: the MPI library's).
void record_request(int c, int ranks, MPIX_Request op, double bytes, double seconds) {
  char name[MPIX_MAX_ALGORITHM_STRING] = "system (MPI library)";
  int len = 0;
  if (op != MPIX_REQUEST_NULL && MPIX_Request_get_algorithm(op, name, &len) != MPI_SUCCESS)
    std::strcpy(name, "?");
  record_line(c, ranks, name, 0, bytes, seconds);
}

double type_bytes(MPI_Datatype t) {
  int s = 0;
  return PMPI_Type_size(t, &s) == MPI_SUCCESS ? double(s) : 0.0;
}

// Whether the library runs this call (else PMPI_).
bool ours(Coll c, MPI_Comm comm) {
  if (depth > 0 || env().system[c] || comm == MPI_COMM_NULL) return false;
  // Once true, stays true (a call after MPI_Finalize is erroneous).
  static std::atomic<bool> initialized{false};
  if (!initialized.load(std::memory_order_relaxed)) {
    int flag = 0;
    PMPI_Initialized(&flag);
    if (!flag) return false;
    int done = 0;
    PMPI_Finalized(&done);
    if (done) return false;
    initialized.store(true, std::memory_order_relaxed);
  }
  int inter = 0;
  if (PMPI_Comm_test_inter(comm, &inter) != MPI_SUCCESS || inter) return false;
  if (library_index(c) == 2) {
    int topo = MPI_UNDEFINED;
    if (PMPI_Topo_test(comm, &topo) != MPI_SUCCESS || topo == MPI_UNDEFINED) return false;
  }
  return true;
}

// Runs call (ours or PMPI_), timed and recorded under MPIX_REPORT.
template <class Ours, class System, class Bytes>
int dispatch(Coll c, MPI_Comm comm, Ours&& run_ours, System&& run_system, Bytes&& bytes) {
  const bool library = ours(c, comm);
  if (!env().report || depth > 0) {
    if (!library) return run_system();
    Inside in;
    return run_ours();
  }
  const double t0 = PMPI_Wtime();
  int rc;
  if (library) {
    Inside in;
    rc = run_ours();
  } else {
    rc = run_system();
  }
  const double t1 = PMPI_Wtime();
  if (rc == MPI_SUCCESS) {
    Inside in;
    record(c, comm, library, bytes(), t1 - t0);
  }
  return rc;
}

// A nonblocking or persistent call: the library's request behind a shell (requests.cpp), or the
// MPI library's own call. run_ours(MPIX_Request*) makes the library's request. A nonblocking
// call's MPIX_REPORT line counts its calls (time: the call's own); a persistent call's counts its
// starts (report_start), and its init is not timed.
template <class Ours, class System, class Bytes>
int dispatch_request(Coll c, MPI_Comm comm, bool persistent, MPI_Request* request, Ours&& run_ours,
                     System&& run_system, Bytes&& bytes) {
  if (!request || !ours(c, comm)) {
    const int rc = run_system();
    if (rc == MPI_SUCCESS && env().report && depth == 0) {
      Inside in;
      if (persistent)
        mpia_preload::report_library_request(*request, c, comm_size(comm), bytes());
      else
        record_request(c, comm_size(comm), MPIX_REQUEST_NULL, bytes(), 0.0);
    }
    return rc;
  }
  const double t0 = env().report ? PMPI_Wtime() : 0.0;
  MPIX_Request op = MPIX_REQUEST_NULL;
  int rc;
  {
    Inside in;
    rc = run_ours(&op);
  }
  if (rc != MPI_SUCCESS) {
    *request = MPI_REQUEST_NULL;
    return rc;  // the library raised it on comm's error handler
  }
  // A call deferred on its communicator's attach does not know its algorithm yet: reported by
  // requests.cpp once it does (report_call).
  bool later = false;
  if (env().report && !persistent) {
    Inside in;
    later = !mpia_preload::report_call(c, comm_size(comm), op, bytes(), PMPI_Wtime() - t0);
  }
  return mpia_preload::make_shell(op, persistent, comm, c, env().report ? bytes() : 0.0, later,
                                  request);
}

// Bytes received: a v call's (n blocks of one type), a w call's (n blocks, a type each).
template <class Count>
double v_bytes(const Count counts[], MPI_Datatype type, int n) {
  double total = 0;
  for (int i = 0; i < n; ++i) total += double(counts[i]);
  return total * type_bytes(type);
}
template <class Count>
double w_bytes(const Count counts[], const MPI_Datatype types[], int n) {
  double total = 0;
  for (int i = 0; i < n; ++i) total += double(counts[i]) * type_bytes(types[i]);
  return total;
}

// The degrees of a topology communicator (0 without one).
void degrees(MPI_Comm comm, int* in, int* out) {
  mpia_topo_degrees(comm, in, out);
  *in = std::max(*in, 0);
  *out = std::max(*out, 0);
}

// The in-degree of a topology communicator (0 without one), and the bytes of in blocks of bytes.
int in_degree(MPI_Comm comm) {
  int in = 0, out = 0;
  degrees(comm, &in, &out);
  return in;
}
double neighbor_bytes(MPI_Comm comm, double block) { return block * in_degree(comm); }

// The MPI library's persistent inits: MPI-4's, or Open MPI 4.1's extension (init.cpp defines the
// entry points only where one of them exists, so the last branch is never called).
int system_init_alltoall(const void* sendbuf, int sendcount, MPI_Datatype sendtype, void* recvbuf,
                         int recvcount, MPI_Datatype recvtype, MPI_Comm comm, MPI_Info info,
                         MPI_Request* request) {
#if MPIA_HAVE_PERSISTENT_COLL
  return PMPI_Alltoall_init(sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype, comm, info,
                            request);
#elif defined(OMPI_HAVE_MPI_EXT_PCOLLREQ) && OMPI_HAVE_MPI_EXT_PCOLLREQ
  return PMPIX_Alltoall_init(sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype, comm, info,
                             request);
#else
  (void)sendbuf, (void)recvbuf, (void)comm, (void)info, (void)request;
  return MPI_ERR_INTERN;
#endif
}

int system_init_alltoallv(const void* sendbuf, const int sendcounts[], const int sdispls[],
                          MPI_Datatype sendtype, void* recvbuf, const int recvcounts[],
                          const int rdispls[], MPI_Datatype recvtype, MPI_Comm comm, MPI_Info info,
                          MPI_Request* request) {
#if MPIA_HAVE_PERSISTENT_COLL
  return PMPI_Alltoallv_init(sendbuf, sendcounts, sdispls, sendtype, recvbuf, recvcounts, rdispls,
                             recvtype, comm, info, request);
#elif defined(OMPI_HAVE_MPI_EXT_PCOLLREQ) && OMPI_HAVE_MPI_EXT_PCOLLREQ
  return PMPIX_Alltoallv_init(sendbuf, sendcounts, sdispls, sendtype, recvbuf, recvcounts, rdispls,
                              recvtype, comm, info, request);
#else
  (void)sendbuf, (void)recvbuf, (void)comm, (void)info, (void)request;
  return MPI_ERR_INTERN;
#endif
}

int system_init_neighbor_alltoall(const void* sendbuf, int sendcount, MPI_Datatype sendtype,
                                  void* recvbuf, int recvcount, MPI_Datatype recvtype,
                                  MPI_Comm comm, MPI_Info info, MPI_Request* request) {
#if MPIA_HAVE_PERSISTENT_COLL
  return PMPI_Neighbor_alltoall_init(sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype,
                                     comm, info, request);
#elif defined(OMPI_HAVE_MPI_EXT_PCOLLREQ) && OMPI_HAVE_MPI_EXT_PCOLLREQ
  return PMPIX_Neighbor_alltoall_init(sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype,
                                      comm, info, request);
#else
  (void)sendbuf, (void)recvbuf, (void)comm, (void)info, (void)request;
  return MPI_ERR_INTERN;
#endif
}

int system_init_neighbor_alltoallv(const void* sendbuf, const int sendcounts[], const int sdispls[],
                                   MPI_Datatype sendtype, void* recvbuf, const int recvcounts[],
                                   const int rdispls[], MPI_Datatype recvtype, MPI_Comm comm,
                                   MPI_Info info, MPI_Request* request) {
#if MPIA_HAVE_PERSISTENT_COLL
  return PMPI_Neighbor_alltoallv_init(sendbuf, sendcounts, sdispls, sendtype, recvbuf, recvcounts,
                                      rdispls, recvtype, comm, info, request);
#elif defined(OMPI_HAVE_MPI_EXT_PCOLLREQ) && OMPI_HAVE_MPI_EXT_PCOLLREQ
  return PMPIX_Neighbor_alltoallv_init(sendbuf, sendcounts, sdispls, sendtype, recvbuf, recvcounts,
                                       rdispls, recvtype, comm, info, request);
#else
  (void)sendbuf, (void)recvbuf, (void)comm, (void)info, (void)request;
  return MPI_ERR_INTERN;
#endif
}

int system_init_neighbor_alltoallw(const void* sendbuf, const int sendcounts[],
                                   const MPI_Aint sdispls[], const MPI_Datatype sendtypes[],
                                   void* recvbuf, const int recvcounts[], const MPI_Aint rdispls[],
                                   const MPI_Datatype recvtypes[], MPI_Comm comm, MPI_Info info,
                                   MPI_Request* request) {
#if MPIA_HAVE_PERSISTENT_COLL
  return PMPI_Neighbor_alltoallw_init(sendbuf, sendcounts, sdispls, sendtypes, recvbuf, recvcounts,
                                      rdispls, recvtypes, comm, info, request);
#elif defined(OMPI_HAVE_MPI_EXT_PCOLLREQ) && OMPI_HAVE_MPI_EXT_PCOLLREQ
  return PMPIX_Neighbor_alltoallw_init(sendbuf, sendcounts, sdispls, sendtypes, recvbuf, recvcounts,
                                       rdispls, recvtypes, comm, info, request);
#else
  (void)sendbuf, (void)recvbuf, (void)comm, (void)info, (void)request;
  return MPI_ERR_INTERN;
#endif
}

}  // namespace

namespace mpia_preload {

bool reporting() { return env().report != 0; }

bool report_call(int coll, int ranks, MPIX_Request op, double bytes, double seconds) {
  char name[MPIX_MAX_ALGORITHM_STRING] = "";
  int len = 0;
  if (MPIX_Request_get_algorithm(op, name, &len) == MPI_SUCCESS && name[0] == '(') return false;
  record_request(coll, ranks, op, bytes, seconds);
  return true;
}

void report_start(int coll, int ranks, MPIX_Request op, double bytes) {
  if (!env().report) return;
  Inside in;
  record_request(coll, ranks, op, bytes, 0.0);
}

}  // namespace mpia_preload

extern "C" {

int mpia_preload_alltoall(const void* sendbuf, int sendcount, MPI_Datatype sendtype, void* recvbuf,
                          int recvcount, MPI_Datatype recvtype, MPI_Comm comm) {
  return dispatch(
      kAlltoall, comm,
      [&] {
        return MPIX_Alltoall(sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype, comm);
      },
      [&] {
        return PMPI_Alltoall(sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype, comm);
      },
      [&] { return double(recvcount) * type_bytes(recvtype) * comm_size(comm); });
}

int mpia_preload_alltoallv(const void* sendbuf, const int sendcounts[], const int sdispls[],
                           MPI_Datatype sendtype, void* recvbuf, const int recvcounts[],
                           const int rdispls[], MPI_Datatype recvtype, MPI_Comm comm) {
  return dispatch(
      kAlltoallv, comm,
      [&] {
        return MPIX_Alltoallv(sendbuf, sendcounts, sdispls, sendtype, recvbuf, recvcounts, rdispls,
                              recvtype, comm);
      },
      [&] {
        return PMPI_Alltoallv(sendbuf, sendcounts, sdispls, sendtype, recvbuf, recvcounts, rdispls,
                              recvtype, comm);
      },
      [&] { return v_bytes(recvcounts, recvtype, comm_size(comm)); });
}

int mpia_preload_neighbor_alltoall(const void* sendbuf, int sendcount, MPI_Datatype sendtype,
                                   void* recvbuf, int recvcount, MPI_Datatype recvtype,
                                   MPI_Comm comm) {
  return dispatch(
      kNeighbor, comm,
      [&] {
        return MPIX_Neighbor_alltoall(sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype,
                                      comm);
      },
      [&] {
        return PMPI_Neighbor_alltoall(sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype,
                                      comm);
      },
      [&] {
        int in = 0, out = 0;
        degrees(comm, &in, &out);
        return double(recvcount) * type_bytes(recvtype) * in;
      });
}

int mpia_preload_neighbor_alltoallv(const void* sendbuf, const int sendcounts[],
                                    const int sdispls[], MPI_Datatype sendtype, void* recvbuf,
                                    const int recvcounts[], const int rdispls[],
                                    MPI_Datatype recvtype, MPI_Comm comm) {
  return dispatch(
      kNeighborV, comm,
      [&] {
        return MPIX_Neighbor_alltoallv(sendbuf, sendcounts, sdispls, sendtype, recvbuf, recvcounts,
                                       rdispls, recvtype, comm);
      },
      [&] {
        return PMPI_Neighbor_alltoallv(sendbuf, sendcounts, sdispls, sendtype, recvbuf, recvcounts,
                                       rdispls, recvtype, comm);
      },
      [&] { return v_bytes(recvcounts, recvtype, in_degree(comm)); });
}

int mpia_preload_neighbor_alltoallw(const void* sendbuf, const int sendcounts[],
                                    const MPI_Aint sdispls[], const MPI_Datatype sendtypes[],
                                    void* recvbuf, const int recvcounts[], const MPI_Aint rdispls[],
                                    const MPI_Datatype recvtypes[], MPI_Comm comm) {
  return dispatch(
      kNeighborW, comm,
      [&] {
        return MPIX_Neighbor_alltoallw(sendbuf, sendcounts, sdispls, sendtypes, recvbuf, recvcounts,
                                       rdispls, recvtypes, comm);
      },
      [&] {
        return PMPI_Neighbor_alltoallw(sendbuf, sendcounts, sdispls, sendtypes, recvbuf, recvcounts,
                                       rdispls, recvtypes, comm);
      },
      [&] { return w_bytes(recvcounts, recvtypes, in_degree(comm)); });
}

// The large-count forms, where the MPI declares them (MPI-4).
#if MPIA_HAVE_LARGE_COUNT
static int preload_alltoall_c(const void* sendbuf, MPI_Count sendcount, MPI_Datatype sendtype,
                              void* recvbuf, MPI_Count recvcount, MPI_Datatype recvtype,
                              MPI_Comm comm) {
  return dispatch(
      kAlltoallC, comm,
      [&] {
        return MPIX_Alltoall_c(sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype, comm);
      },
      [&] {
        return PMPI_Alltoall_c(sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype, comm);
      },
      [&] { return double(recvcount) * type_bytes(recvtype) * comm_size(comm); });
}

static int preload_alltoallv_c(const void* sendbuf, const MPI_Count sendcounts[],
                               const MPI_Aint sdispls[], MPI_Datatype sendtype, void* recvbuf,
                               const MPI_Count recvcounts[], const MPI_Aint rdispls[],
                               MPI_Datatype recvtype, MPI_Comm comm) {
  return dispatch(
      kAlltoallvC, comm,
      [&] {
        return MPIX_Alltoallv_c(sendbuf, sendcounts, sdispls, sendtype, recvbuf, recvcounts,
                                rdispls, recvtype, comm);
      },
      [&] {
        return PMPI_Alltoallv_c(sendbuf, sendcounts, sdispls, sendtype, recvbuf, recvcounts,
                                rdispls, recvtype, comm);
      },
      [&] { return v_bytes(recvcounts, recvtype, comm_size(comm)); });
}

static int preload_neighbor_alltoall_c(const void* sendbuf, MPI_Count sendcount,
                                       MPI_Datatype sendtype, void* recvbuf, MPI_Count recvcount,
                                       MPI_Datatype recvtype, MPI_Comm comm) {
  return dispatch(
      kNeighborC, comm,
      [&] {
        return MPIX_Neighbor_alltoall_c(sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype,
                                        comm);
      },
      [&] {
        return PMPI_Neighbor_alltoall_c(sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype,
                                        comm);
      },
      [&] {
        int in = 0, out = 0;
        degrees(comm, &in, &out);
        return double(recvcount) * type_bytes(recvtype) * in;
      });
}

static int preload_neighbor_alltoallv_c(const void* sendbuf, const MPI_Count sendcounts[],
                                        const MPI_Aint sdispls[], MPI_Datatype sendtype,
                                        void* recvbuf, const MPI_Count recvcounts[],
                                        const MPI_Aint rdispls[], MPI_Datatype recvtype,
                                        MPI_Comm comm) {
  return dispatch(
      kNeighborVC, comm,
      [&] {
        return MPIX_Neighbor_alltoallv_c(sendbuf, sendcounts, sdispls, sendtype, recvbuf,
                                         recvcounts, rdispls, recvtype, comm);
      },
      [&] {
        return PMPI_Neighbor_alltoallv_c(sendbuf, sendcounts, sdispls, sendtype, recvbuf,
                                         recvcounts, rdispls, recvtype, comm);
      },
      [&] { return v_bytes(recvcounts, recvtype, in_degree(comm)); });
}

static int preload_neighbor_alltoallw_c(const void* sendbuf, const MPI_Count sendcounts[],
                                        const MPI_Aint sdispls[], const MPI_Datatype sendtypes[],
                                        void* recvbuf, const MPI_Count recvcounts[],
                                        const MPI_Aint rdispls[], const MPI_Datatype recvtypes[],
                                        MPI_Comm comm) {
  return dispatch(
      kNeighborWC, comm,
      [&] {
        return MPIX_Neighbor_alltoallw_c(sendbuf, sendcounts, sdispls, sendtypes, recvbuf,
                                         recvcounts, rdispls, recvtypes, comm);
      },
      [&] {
        return PMPI_Neighbor_alltoallw_c(sendbuf, sendcounts, sdispls, sendtypes, recvbuf,
                                         recvcounts, rdispls, recvtypes, comm);
      },
      [&] { return w_bytes(recvcounts, recvtypes, in_degree(comm)); });
}
#endif

// The nonblocking and persistent calls: the library's request behind a shell, or the MPI's.
static int preload_ialltoall(const void* sendbuf, int sendcount, MPI_Datatype sendtype,
                             void* recvbuf, int recvcount, MPI_Datatype recvtype, MPI_Comm comm,
                             MPI_Request* request) {
  return dispatch_request(
      kIalltoall, comm, false, request,
      [&](MPIX_Request* q) {
        return MPIX_Ialltoall(sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype, comm, q);
      },
      [&] {
        return PMPI_Ialltoall(sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype, comm,
                              request);
      },
      [&] { return double(recvcount) * type_bytes(recvtype) * comm_size(comm); });
}

int mpia_preload_alltoall_init(const void* sendbuf, int sendcount, MPI_Datatype sendtype,
                               void* recvbuf, int recvcount, MPI_Datatype recvtype, MPI_Comm comm,
                               MPI_Info info, MPI_Request* request) {
  return dispatch_request(
      kAlltoallInit, comm, true, request,
      [&](MPIX_Request* q) {
        return MPIX_Alltoall_init(sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype, comm,
                                  info, q);
      },
      [&] {
        return system_init_alltoall(sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype,
                                    comm, info, request);
      },
      [&] { return double(recvcount) * type_bytes(recvtype) * comm_size(comm); });
}

#if MPIA_HAVE_LARGE_COUNT
static int preload_ialltoall_c(const void* sendbuf, MPI_Count sendcount, MPI_Datatype sendtype,
                               void* recvbuf, MPI_Count recvcount, MPI_Datatype recvtype,
                               MPI_Comm comm, MPI_Request* request) {
  return dispatch_request(
      kIalltoallC, comm, false, request,
      [&](MPIX_Request* q) {
        return MPIX_Ialltoall_c(sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype, comm,
                                q);
      },
      [&] {
        return PMPI_Ialltoall_c(sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype, comm,
                                request);
      },
      [&] { return double(recvcount) * type_bytes(recvtype) * comm_size(comm); });
}

static int preload_alltoall_init_c(const void* sendbuf, MPI_Count sendcount, MPI_Datatype sendtype,
                                   void* recvbuf, MPI_Count recvcount, MPI_Datatype recvtype,
                                   MPI_Comm comm, MPI_Info info, MPI_Request* request) {
  return dispatch_request(
      kAlltoallInitC, comm, true, request,
      [&](MPIX_Request* q) {
        return MPIX_Alltoall_init_c(sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype,
                                    comm, info, q);
      },
      [&] {
        return PMPI_Alltoall_init_c(sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype,
                                    comm, info, request);
      },
      [&] { return double(recvcount) * type_bytes(recvtype) * comm_size(comm); });
}
#endif

static int preload_ialltoallv(const void* sendbuf, const int sendcounts[], const int sdispls[],
                              MPI_Datatype sendtype, void* recvbuf, const int recvcounts[],
                              const int rdispls[], MPI_Datatype recvtype, MPI_Comm comm,
                              MPI_Request* request) {
  return dispatch_request(
      kIalltoallv, comm, false, request,
      [&](MPIX_Request* q) {
        return MPIX_Ialltoallv(sendbuf, sendcounts, sdispls, sendtype, recvbuf, recvcounts, rdispls,
                               recvtype, comm, q);
      },
      [&] {
        return PMPI_Ialltoallv(sendbuf, sendcounts, sdispls, sendtype, recvbuf, recvcounts, rdispls,
                               recvtype, comm, request);
      },
      [&] { return v_bytes(recvcounts, recvtype, comm_size(comm)); });
}

int mpia_preload_alltoallv_init(const void* sendbuf, const int sendcounts[], const int sdispls[],
                                MPI_Datatype sendtype, void* recvbuf, const int recvcounts[],
                                const int rdispls[], MPI_Datatype recvtype, MPI_Comm comm,
                                MPI_Info info, MPI_Request* request) {
  return dispatch_request(
      kAlltoallvInit, comm, true, request,
      [&](MPIX_Request* q) {
        return MPIX_Alltoallv_init(sendbuf, sendcounts, sdispls, sendtype, recvbuf, recvcounts,
                                   rdispls, recvtype, comm, info, q);
      },
      [&] {
        return system_init_alltoallv(sendbuf, sendcounts, sdispls, sendtype, recvbuf, recvcounts,
                                     rdispls, recvtype, comm, info, request);
      },
      [&] { return v_bytes(recvcounts, recvtype, comm_size(comm)); });
}

#if MPIA_HAVE_LARGE_COUNT
static int preload_ialltoallv_c(const void* sendbuf, const MPI_Count sendcounts[],
                                const MPI_Aint sdispls[], MPI_Datatype sendtype, void* recvbuf,
                                const MPI_Count recvcounts[], const MPI_Aint rdispls[],
                                MPI_Datatype recvtype, MPI_Comm comm, MPI_Request* request) {
  return dispatch_request(
      kIalltoallvC, comm, false, request,
      [&](MPIX_Request* q) {
        return MPIX_Ialltoallv_c(sendbuf, sendcounts, sdispls, sendtype, recvbuf, recvcounts,
                                 rdispls, recvtype, comm, q);
      },
      [&] {
        return PMPI_Ialltoallv_c(sendbuf, sendcounts, sdispls, sendtype, recvbuf, recvcounts,
                                 rdispls, recvtype, comm, request);
      },
      [&] { return v_bytes(recvcounts, recvtype, comm_size(comm)); });
}

static int preload_alltoallv_init_c(const void* sendbuf, const MPI_Count sendcounts[],
                                    const MPI_Aint sdispls[], MPI_Datatype sendtype, void* recvbuf,
                                    const MPI_Count recvcounts[], const MPI_Aint rdispls[],
                                    MPI_Datatype recvtype, MPI_Comm comm, MPI_Info info,
                                    MPI_Request* request) {
  return dispatch_request(
      kAlltoallvInitC, comm, true, request,
      [&](MPIX_Request* q) {
        return MPIX_Alltoallv_init_c(sendbuf, sendcounts, sdispls, sendtype, recvbuf, recvcounts,
                                     rdispls, recvtype, comm, info, q);
      },
      [&] {
        return PMPI_Alltoallv_init_c(sendbuf, sendcounts, sdispls, sendtype, recvbuf, recvcounts,
                                     rdispls, recvtype, comm, info, request);
      },
      [&] { return v_bytes(recvcounts, recvtype, comm_size(comm)); });
}
#endif

static int preload_ineighbor_alltoall(const void* sendbuf, int sendcount, MPI_Datatype sendtype,
                                      void* recvbuf, int recvcount, MPI_Datatype recvtype,
                                      MPI_Comm comm, MPI_Request* request) {
  return dispatch_request(
      kIneighbor, comm, false, request,
      [&](MPIX_Request* q) {
        return MPIX_Ineighbor_alltoall(sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype,
                                       comm, q);
      },
      [&] {
        return PMPI_Ineighbor_alltoall(sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype,
                                       comm, request);
      },
      [&] { return neighbor_bytes(comm, double(recvcount) * type_bytes(recvtype)); });
}

int mpia_preload_neighbor_alltoall_init(const void* sendbuf, int sendcount, MPI_Datatype sendtype,
                                        void* recvbuf, int recvcount, MPI_Datatype recvtype,
                                        MPI_Comm comm, MPI_Info info, MPI_Request* request) {
  return dispatch_request(
      kNeighborInit, comm, true, request,
      [&](MPIX_Request* q) {
        return MPIX_Neighbor_alltoall_init(sendbuf, sendcount, sendtype, recvbuf, recvcount,
                                           recvtype, comm, info, q);
      },
      [&] {
        return system_init_neighbor_alltoall(sendbuf, sendcount, sendtype, recvbuf, recvcount,
                                             recvtype, comm, info, request);
      },
      [&] { return neighbor_bytes(comm, double(recvcount) * type_bytes(recvtype)); });
}

#if MPIA_HAVE_LARGE_COUNT
static int preload_ineighbor_alltoall_c(const void* sendbuf, MPI_Count sendcount,
                                        MPI_Datatype sendtype, void* recvbuf, MPI_Count recvcount,
                                        MPI_Datatype recvtype, MPI_Comm comm,
                                        MPI_Request* request) {
  return dispatch_request(
      kIneighborC, comm, false, request,
      [&](MPIX_Request* q) {
        return MPIX_Ineighbor_alltoall_c(sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype,
                                         comm, q);
      },
      [&] {
        return PMPI_Ineighbor_alltoall_c(sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype,
                                         comm, request);
      },
      [&] { return neighbor_bytes(comm, double(recvcount) * type_bytes(recvtype)); });
}

static int preload_neighbor_alltoall_init_c(const void* sendbuf, MPI_Count sendcount,
                                            MPI_Datatype sendtype, void* recvbuf,
                                            MPI_Count recvcount, MPI_Datatype recvtype,
                                            MPI_Comm comm, MPI_Info info, MPI_Request* request) {
  return dispatch_request(
      kNeighborInitC, comm, true, request,
      [&](MPIX_Request* q) {
        return MPIX_Neighbor_alltoall_init_c(sendbuf, sendcount, sendtype, recvbuf, recvcount,
                                             recvtype, comm, info, q);
      },
      [&] {
        return PMPI_Neighbor_alltoall_init_c(sendbuf, sendcount, sendtype, recvbuf, recvcount,
                                             recvtype, comm, info, request);
      },
      [&] { return neighbor_bytes(comm, double(recvcount) * type_bytes(recvtype)); });
}
#endif

static int preload_ineighbor_alltoallv(const void* sendbuf, const int sendcounts[],
                                       const int sdispls[], MPI_Datatype sendtype, void* recvbuf,
                                       const int recvcounts[], const int rdispls[],
                                       MPI_Datatype recvtype, MPI_Comm comm, MPI_Request* request) {
  return dispatch_request(
      kIneighborV, comm, false, request,
      [&](MPIX_Request* q) {
        return MPIX_Ineighbor_alltoallv(sendbuf, sendcounts, sdispls, sendtype, recvbuf, recvcounts,
                                        rdispls, recvtype, comm, q);
      },
      [&] {
        return PMPI_Ineighbor_alltoallv(sendbuf, sendcounts, sdispls, sendtype, recvbuf, recvcounts,
                                        rdispls, recvtype, comm, request);
      },
      [&] { return v_bytes(recvcounts, recvtype, in_degree(comm)); });
}

int mpia_preload_neighbor_alltoallv_init(const void* sendbuf, const int sendcounts[],
                                         const int sdispls[], MPI_Datatype sendtype, void* recvbuf,
                                         const int recvcounts[], const int rdispls[],
                                         MPI_Datatype recvtype, MPI_Comm comm, MPI_Info info,
                                         MPI_Request* request) {
  return dispatch_request(
      kNeighborVInit, comm, true, request,
      [&](MPIX_Request* q) {
        return MPIX_Neighbor_alltoallv_init(sendbuf, sendcounts, sdispls, sendtype, recvbuf,
                                            recvcounts, rdispls, recvtype, comm, info, q);
      },
      [&] {
        return system_init_neighbor_alltoallv(sendbuf, sendcounts, sdispls, sendtype, recvbuf,
                                              recvcounts, rdispls, recvtype, comm, info, request);
      },
      [&] { return v_bytes(recvcounts, recvtype, in_degree(comm)); });
}

#if MPIA_HAVE_LARGE_COUNT
static int preload_ineighbor_alltoallv_c(const void* sendbuf, const MPI_Count sendcounts[],
                                         const MPI_Aint sdispls[], MPI_Datatype sendtype,
                                         void* recvbuf, const MPI_Count recvcounts[],
                                         const MPI_Aint rdispls[], MPI_Datatype recvtype,
                                         MPI_Comm comm, MPI_Request* request) {
  return dispatch_request(
      kIneighborVC, comm, false, request,
      [&](MPIX_Request* q) {
        return MPIX_Ineighbor_alltoallv_c(sendbuf, sendcounts, sdispls, sendtype, recvbuf,
                                          recvcounts, rdispls, recvtype, comm, q);
      },
      [&] {
        return PMPI_Ineighbor_alltoallv_c(sendbuf, sendcounts, sdispls, sendtype, recvbuf,
                                          recvcounts, rdispls, recvtype, comm, request);
      },
      [&] { return v_bytes(recvcounts, recvtype, in_degree(comm)); });
}

static int preload_neighbor_alltoallv_init_c(const void* sendbuf, const MPI_Count sendcounts[],
                                             const MPI_Aint sdispls[], MPI_Datatype sendtype,
                                             void* recvbuf, const MPI_Count recvcounts[],
                                             const MPI_Aint rdispls[], MPI_Datatype recvtype,
                                             MPI_Comm comm, MPI_Info info, MPI_Request* request) {
  return dispatch_request(
      kNeighborVInitC, comm, true, request,
      [&](MPIX_Request* q) {
        return MPIX_Neighbor_alltoallv_init_c(sendbuf, sendcounts, sdispls, sendtype, recvbuf,
                                              recvcounts, rdispls, recvtype, comm, info, q);
      },
      [&] {
        return PMPI_Neighbor_alltoallv_init_c(sendbuf, sendcounts, sdispls, sendtype, recvbuf,
                                              recvcounts, rdispls, recvtype, comm, info, request);
      },
      [&] { return v_bytes(recvcounts, recvtype, in_degree(comm)); });
}
#endif

static int preload_ineighbor_alltoallw(const void* sendbuf, const int sendcounts[],
                                       const MPI_Aint sdispls[], const MPI_Datatype sendtypes[],
                                       void* recvbuf, const int recvcounts[],
                                       const MPI_Aint rdispls[], const MPI_Datatype recvtypes[],
                                       MPI_Comm comm, MPI_Request* request) {
  return dispatch_request(
      kIneighborW, comm, false, request,
      [&](MPIX_Request* q) {
        return MPIX_Ineighbor_alltoallw(sendbuf, sendcounts, sdispls, sendtypes, recvbuf,
                                        recvcounts, rdispls, recvtypes, comm, q);
      },
      [&] {
        return PMPI_Ineighbor_alltoallw(sendbuf, sendcounts, sdispls, sendtypes, recvbuf,
                                        recvcounts, rdispls, recvtypes, comm, request);
      },
      [&] { return w_bytes(recvcounts, recvtypes, in_degree(comm)); });
}

int mpia_preload_neighbor_alltoallw_init(const void* sendbuf, const int sendcounts[],
                                         const MPI_Aint sdispls[], const MPI_Datatype sendtypes[],
                                         void* recvbuf, const int recvcounts[],
                                         const MPI_Aint rdispls[], const MPI_Datatype recvtypes[],
                                         MPI_Comm comm, MPI_Info info, MPI_Request* request) {
  return dispatch_request(
      kNeighborWInit, comm, true, request,
      [&](MPIX_Request* q) {
        return MPIX_Neighbor_alltoallw_init(sendbuf, sendcounts, sdispls, sendtypes, recvbuf,
                                            recvcounts, rdispls, recvtypes, comm, info, q);
      },
      [&] {
        return system_init_neighbor_alltoallw(sendbuf, sendcounts, sdispls, sendtypes, recvbuf,
                                              recvcounts, rdispls, recvtypes, comm, info, request);
      },
      [&] { return w_bytes(recvcounts, recvtypes, in_degree(comm)); });
}

#if MPIA_HAVE_LARGE_COUNT
static int preload_ineighbor_alltoallw_c(const void* sendbuf, const MPI_Count sendcounts[],
                                         const MPI_Aint sdispls[], const MPI_Datatype sendtypes[],
                                         void* recvbuf, const MPI_Count recvcounts[],
                                         const MPI_Aint rdispls[], const MPI_Datatype recvtypes[],
                                         MPI_Comm comm, MPI_Request* request) {
  return dispatch_request(
      kIneighborWC, comm, false, request,
      [&](MPIX_Request* q) {
        return MPIX_Ineighbor_alltoallw_c(sendbuf, sendcounts, sdispls, sendtypes, recvbuf,
                                          recvcounts, rdispls, recvtypes, comm, q);
      },
      [&] {
        return PMPI_Ineighbor_alltoallw_c(sendbuf, sendcounts, sdispls, sendtypes, recvbuf,
                                          recvcounts, rdispls, recvtypes, comm, request);
      },
      [&] { return w_bytes(recvcounts, recvtypes, in_degree(comm)); });
}

static int preload_neighbor_alltoallw_init_c(const void* sendbuf, const MPI_Count sendcounts[],
                                             const MPI_Aint sdispls[],
                                             const MPI_Datatype sendtypes[], void* recvbuf,
                                             const MPI_Count recvcounts[], const MPI_Aint rdispls[],
                                             const MPI_Datatype recvtypes[], MPI_Comm comm,
                                             MPI_Info info, MPI_Request* request) {
  return dispatch_request(
      kNeighborWInitC, comm, true, request,
      [&](MPIX_Request* q) {
        return MPIX_Neighbor_alltoallw_init_c(sendbuf, sendcounts, sdispls, sendtypes, recvbuf,
                                              recvcounts, rdispls, recvtypes, comm, info, q);
      },
      [&] {
        return PMPI_Neighbor_alltoallw_init_c(sendbuf, sendcounts, sdispls, sendtypes, recvbuf,
                                              recvcounts, rdispls, recvtypes, comm, info, request);
      },
      [&] { return w_bytes(recvcounts, recvtypes, in_degree(comm)); });
}
#endif

// The C bindings (the _c forms where the MPI declares them).
#define MPIA_PRELOAD_EXPORT __attribute__((visibility("default")))

// Open MPI: a nonblocking call may not attach its communicator (src/operation/attach.hpp: its
// MPI_Comm_idup cannot overlap other nonblocking collectives), and one on a communicator no
// blocking or persistent call attached runs the MPI library's own call. So communicators are
// attached where the application makes them instead -- MPI_COMM_WORLD inside MPI_Init, the
// others inside the blocking collective that creates them, on every rank of the new
// communicator alike -- unless every collective is left to the MPI library. (MPI_Comm_idup's
// communicators, and those a program gets some other way, are attached by their first blocking
// or persistent call, as on any MPI.)
int mpia_preload_created(int rc, const MPI_Comm* made) {
#if defined(OPEN_MPI) && OPEN_MPI
  if (rc != MPI_SUCCESS || depth > 0 || !made || *made == MPI_COMM_NULL) return rc;
  bool all_system = true;
  for (bool s : env().system) all_system = all_system && s;
  int inter = 0;
  if (all_system || PMPI_Comm_test_inter(*made, &inter) != MPI_SUCCESS || inter) return rc;
  // The attach is not the application's call: it must not fail it. What it could raise (ranks
  // whose MPIX_ settings differ) stays with the communicator's state and fails its first
  // all-to-all on every rank, as without this attach.
  MPI_Errhandler handler = MPI_ERRHANDLER_NULL;
  const bool swapped = PMPI_Comm_get_errhandler(*made, &handler) == MPI_SUCCESS &&
                       PMPI_Comm_set_errhandler(*made, MPI_ERRORS_RETURN) == MPI_SUCCESS;
  {
    Inside in;
    MPIX_Comm_set_algorithm(*made, "alltoall", nullptr);
  }
  if (swapped) PMPI_Comm_set_errhandler(*made, handler);
  if (handler != MPI_ERRHANDLER_NULL) PMPI_Errhandler_free(&handler);
  return rc;
#else
  (void)made;
  return rc;
#endif
}

int mpia_preload_initialized(int rc) {
  const MPI_Comm world = MPI_COMM_WORLD;
  return mpia_preload_created(rc, &world);
}

MPIA_PRELOAD_EXPORT int MPI_Init(int* argc, char*** argv) {
  return mpia_preload_initialized(PMPI_Init(argc, argv));
}

MPIA_PRELOAD_EXPORT int MPI_Init_thread(int* argc, char*** argv, int required, int* provided) {
  return mpia_preload_initialized(PMPI_Init_thread(argc, argv, required, provided));
}

// The intracommunicators a program makes with a blocking collective (Open MPI: attached at once,
// above; elsewhere these only pass the call on).
MPIA_PRELOAD_EXPORT int MPI_Comm_dup(MPI_Comm comm, MPI_Comm* newcomm) {
  return mpia_preload_created(PMPI_Comm_dup(comm, newcomm), newcomm);
}

MPIA_PRELOAD_EXPORT int MPI_Comm_dup_with_info(MPI_Comm comm, MPI_Info info, MPI_Comm* newcomm) {
  return mpia_preload_created(PMPI_Comm_dup_with_info(comm, info, newcomm), newcomm);
}

MPIA_PRELOAD_EXPORT int MPI_Comm_split(MPI_Comm comm, int color, int key, MPI_Comm* newcomm) {
  return mpia_preload_created(PMPI_Comm_split(comm, color, key, newcomm), newcomm);
}

MPIA_PRELOAD_EXPORT int MPI_Comm_split_type(MPI_Comm comm, int split_type, int key, MPI_Info info,
                                            MPI_Comm* newcomm) {
  return mpia_preload_created(PMPI_Comm_split_type(comm, split_type, key, info, newcomm), newcomm);
}

MPIA_PRELOAD_EXPORT int MPI_Comm_create(MPI_Comm comm, MPI_Group group, MPI_Comm* newcomm) {
  return mpia_preload_created(PMPI_Comm_create(comm, group, newcomm), newcomm);
}

MPIA_PRELOAD_EXPORT int MPI_Comm_create_group(MPI_Comm comm, MPI_Group group, int tag,
                                              MPI_Comm* newcomm) {
  return mpia_preload_created(PMPI_Comm_create_group(comm, group, tag, newcomm), newcomm);
}

MPIA_PRELOAD_EXPORT int MPI_Intercomm_merge(MPI_Comm intercomm, int high, MPI_Comm* newcomm) {
  return mpia_preload_created(PMPI_Intercomm_merge(intercomm, high, newcomm), newcomm);
}

MPIA_PRELOAD_EXPORT int MPI_Cart_create(MPI_Comm comm, int ndims, const int dims[],
                                        const int periods[], int reorder, MPI_Comm* newcomm) {
  return mpia_preload_created(PMPI_Cart_create(comm, ndims, dims, periods, reorder, newcomm),
                              newcomm);
}

MPIA_PRELOAD_EXPORT int MPI_Cart_sub(MPI_Comm comm, const int remain_dims[], MPI_Comm* newcomm) {
  return mpia_preload_created(PMPI_Cart_sub(comm, remain_dims, newcomm), newcomm);
}

MPIA_PRELOAD_EXPORT int MPI_Graph_create(MPI_Comm comm, int nnodes, const int index[],
                                         const int edges[], int reorder, MPI_Comm* newcomm) {
  return mpia_preload_created(PMPI_Graph_create(comm, nnodes, index, edges, reorder, newcomm),
                              newcomm);
}

MPIA_PRELOAD_EXPORT int MPI_Dist_graph_create(MPI_Comm comm, int n, const int sources[],
                                              const int degrees[], const int destinations[],
                                              const int weights[], MPI_Info info, int reorder,
                                              MPI_Comm* newcomm) {
  return mpia_preload_created(PMPI_Dist_graph_create(comm, n, sources, degrees, destinations,
                                                     weights, info, reorder, newcomm),
                              newcomm);
}

MPIA_PRELOAD_EXPORT int MPI_Dist_graph_create_adjacent(MPI_Comm comm, int indegree,
                                                       const int sources[],
                                                       const int sourceweights[], int outdegree,
                                                       const int destinations[],
                                                       const int destweights[], MPI_Info info,
                                                       int reorder, MPI_Comm* newcomm) {
  return mpia_preload_created(
      PMPI_Dist_graph_create_adjacent(comm, indegree, sources, sourceweights, outdegree,
                                      destinations, destweights, info, reorder, newcomm),
      newcomm);
}

MPIA_PRELOAD_EXPORT int MPI_Alltoall(const void* sendbuf, int sendcount, MPI_Datatype sendtype,
                                     void* recvbuf, int recvcount, MPI_Datatype recvtype,
                                     MPI_Comm comm) {
  return mpia_preload_alltoall(sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype, comm);
}

MPIA_PRELOAD_EXPORT int MPI_Alltoallv(const void* sendbuf, const int sendcounts[],
                                      const int sdispls[], MPI_Datatype sendtype, void* recvbuf,
                                      const int recvcounts[], const int rdispls[],
                                      MPI_Datatype recvtype, MPI_Comm comm) {
  return mpia_preload_alltoallv(sendbuf, sendcounts, sdispls, sendtype, recvbuf, recvcounts,
                                rdispls, recvtype, comm);
}

MPIA_PRELOAD_EXPORT int MPI_Neighbor_alltoall(const void* sendbuf, int sendcount,
                                              MPI_Datatype sendtype, void* recvbuf, int recvcount,
                                              MPI_Datatype recvtype, MPI_Comm comm) {
  return mpia_preload_neighbor_alltoall(sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype,
                                        comm);
}

MPIA_PRELOAD_EXPORT int MPI_Neighbor_alltoallv(const void* sendbuf, const int sendcounts[],
                                               const int sdispls[], MPI_Datatype sendtype,
                                               void* recvbuf, const int recvcounts[],
                                               const int rdispls[], MPI_Datatype recvtype,
                                               MPI_Comm comm) {
  return mpia_preload_neighbor_alltoallv(sendbuf, sendcounts, sdispls, sendtype, recvbuf,
                                         recvcounts, rdispls, recvtype, comm);
}

MPIA_PRELOAD_EXPORT int MPI_Neighbor_alltoallw(const void* sendbuf, const int sendcounts[],
                                               const MPI_Aint sdispls[],
                                               const MPI_Datatype sendtypes[], void* recvbuf,
                                               const int recvcounts[], const MPI_Aint rdispls[],
                                               const MPI_Datatype recvtypes[], MPI_Comm comm) {
  return mpia_preload_neighbor_alltoallw(sendbuf, sendcounts, sdispls, sendtypes, recvbuf,
                                         recvcounts, rdispls, recvtypes, comm);
}

#if MPIA_HAVE_LARGE_COUNT
MPIA_PRELOAD_EXPORT int MPI_Alltoall_c(const void* sendbuf, MPI_Count sendcount,
                                       MPI_Datatype sendtype, void* recvbuf, MPI_Count recvcount,
                                       MPI_Datatype recvtype, MPI_Comm comm) {
  return preload_alltoall_c(sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype, comm);
}

MPIA_PRELOAD_EXPORT int MPI_Alltoallv_c(const void* sendbuf, const MPI_Count sendcounts[],
                                        const MPI_Aint sdispls[], MPI_Datatype sendtype,
                                        void* recvbuf, const MPI_Count recvcounts[],
                                        const MPI_Aint rdispls[], MPI_Datatype recvtype,
                                        MPI_Comm comm) {
  return preload_alltoallv_c(sendbuf, sendcounts, sdispls, sendtype, recvbuf, recvcounts, rdispls,
                             recvtype, comm);
}

MPIA_PRELOAD_EXPORT int MPI_Neighbor_alltoall_c(const void* sendbuf, MPI_Count sendcount,
                                                MPI_Datatype sendtype, void* recvbuf,
                                                MPI_Count recvcount, MPI_Datatype recvtype,
                                                MPI_Comm comm) {
  return preload_neighbor_alltoall_c(sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype,
                                     comm);
}

MPIA_PRELOAD_EXPORT int MPI_Neighbor_alltoallv_c(const void* sendbuf, const MPI_Count sendcounts[],
                                                 const MPI_Aint sdispls[], MPI_Datatype sendtype,
                                                 void* recvbuf, const MPI_Count recvcounts[],
                                                 const MPI_Aint rdispls[], MPI_Datatype recvtype,
                                                 MPI_Comm comm) {
  return preload_neighbor_alltoallv_c(sendbuf, sendcounts, sdispls, sendtype, recvbuf, recvcounts,
                                      rdispls, recvtype, comm);
}

MPIA_PRELOAD_EXPORT int MPI_Neighbor_alltoallw_c(const void* sendbuf, const MPI_Count sendcounts[],
                                                 const MPI_Aint sdispls[],
                                                 const MPI_Datatype sendtypes[], void* recvbuf,
                                                 const MPI_Count recvcounts[],
                                                 const MPI_Aint rdispls[],
                                                 const MPI_Datatype recvtypes[], MPI_Comm comm) {
  return preload_neighbor_alltoallw_c(sendbuf, sendcounts, sdispls, sendtypes, recvbuf, recvcounts,
                                      rdispls, recvtypes, comm);
}
#endif

// The nonblocking calls, and MPI-4's persistent ones (Open MPI 4.1's: init.cpp).
MPIA_PRELOAD_EXPORT int MPI_Ialltoall(const void* sendbuf, int sendcount, MPI_Datatype sendtype,
                                      void* recvbuf, int recvcount, MPI_Datatype recvtype,
                                      MPI_Comm comm, MPI_Request* request) {
  return preload_ialltoall(sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype, comm,
                           request);
}

#if MPIA_HAVE_PERSISTENT_COLL
MPIA_PRELOAD_EXPORT int MPI_Alltoall_init(const void* sendbuf, int sendcount, MPI_Datatype sendtype,
                                          void* recvbuf, int recvcount, MPI_Datatype recvtype,
                                          MPI_Comm comm, MPI_Info info, MPI_Request* request) {
  return mpia_preload_alltoall_init(sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype,
                                    comm, info, request);
}
#endif

#if MPIA_HAVE_LARGE_COUNT
MPIA_PRELOAD_EXPORT int MPI_Ialltoall_c(const void* sendbuf, MPI_Count sendcount,
                                        MPI_Datatype sendtype, void* recvbuf, MPI_Count recvcount,
                                        MPI_Datatype recvtype, MPI_Comm comm,
                                        MPI_Request* request) {
  return preload_ialltoall_c(sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype, comm,
                             request);
}

MPIA_PRELOAD_EXPORT int MPI_Alltoall_init_c(const void* sendbuf, MPI_Count sendcount,
                                            MPI_Datatype sendtype, void* recvbuf,
                                            MPI_Count recvcount, MPI_Datatype recvtype,
                                            MPI_Comm comm, MPI_Info info, MPI_Request* request) {
  return preload_alltoall_init_c(sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype, comm,
                                 info, request);
}
#endif

MPIA_PRELOAD_EXPORT int MPI_Ialltoallv(const void* sendbuf, const int sendcounts[],
                                       const int sdispls[], MPI_Datatype sendtype, void* recvbuf,
                                       const int recvcounts[], const int rdispls[],
                                       MPI_Datatype recvtype, MPI_Comm comm, MPI_Request* request) {
  return preload_ialltoallv(sendbuf, sendcounts, sdispls, sendtype, recvbuf, recvcounts, rdispls,
                            recvtype, comm, request);
}

#if MPIA_HAVE_PERSISTENT_COLL
MPIA_PRELOAD_EXPORT int MPI_Alltoallv_init(const void* sendbuf, const int sendcounts[],
                                           const int sdispls[], MPI_Datatype sendtype,
                                           void* recvbuf, const int recvcounts[],
                                           const int rdispls[], MPI_Datatype recvtype,
                                           MPI_Comm comm, MPI_Info info, MPI_Request* request) {
  return mpia_preload_alltoallv_init(sendbuf, sendcounts, sdispls, sendtype, recvbuf, recvcounts,
                                     rdispls, recvtype, comm, info, request);
}
#endif

#if MPIA_HAVE_LARGE_COUNT
MPIA_PRELOAD_EXPORT int MPI_Ialltoallv_c(const void* sendbuf, const MPI_Count sendcounts[],
                                         const MPI_Aint sdispls[], MPI_Datatype sendtype,
                                         void* recvbuf, const MPI_Count recvcounts[],
                                         const MPI_Aint rdispls[], MPI_Datatype recvtype,
                                         MPI_Comm comm, MPI_Request* request) {
  return preload_ialltoallv_c(sendbuf, sendcounts, sdispls, sendtype, recvbuf, recvcounts, rdispls,
                              recvtype, comm, request);
}

MPIA_PRELOAD_EXPORT int MPI_Alltoallv_init_c(const void* sendbuf, const MPI_Count sendcounts[],
                                             const MPI_Aint sdispls[], MPI_Datatype sendtype,
                                             void* recvbuf, const MPI_Count recvcounts[],
                                             const MPI_Aint rdispls[], MPI_Datatype recvtype,
                                             MPI_Comm comm, MPI_Info info, MPI_Request* request) {
  return preload_alltoallv_init_c(sendbuf, sendcounts, sdispls, sendtype, recvbuf, recvcounts,
                                  rdispls, recvtype, comm, info, request);
}
#endif

MPIA_PRELOAD_EXPORT int MPI_Ineighbor_alltoall(const void* sendbuf, int sendcount,
                                               MPI_Datatype sendtype, void* recvbuf, int recvcount,
                                               MPI_Datatype recvtype, MPI_Comm comm,
                                               MPI_Request* request) {
  return preload_ineighbor_alltoall(sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype,
                                    comm, request);
}

#if MPIA_HAVE_PERSISTENT_COLL
MPIA_PRELOAD_EXPORT int MPI_Neighbor_alltoall_init(const void* sendbuf, int sendcount,
                                                   MPI_Datatype sendtype, void* recvbuf,
                                                   int recvcount, MPI_Datatype recvtype,
                                                   MPI_Comm comm, MPI_Info info,
                                                   MPI_Request* request) {
  return mpia_preload_neighbor_alltoall_init(sendbuf, sendcount, sendtype, recvbuf, recvcount,
                                             recvtype, comm, info, request);
}
#endif

#if MPIA_HAVE_LARGE_COUNT
MPIA_PRELOAD_EXPORT int MPI_Ineighbor_alltoall_c(const void* sendbuf, MPI_Count sendcount,
                                                 MPI_Datatype sendtype, void* recvbuf,
                                                 MPI_Count recvcount, MPI_Datatype recvtype,
                                                 MPI_Comm comm, MPI_Request* request) {
  return preload_ineighbor_alltoall_c(sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype,
                                      comm, request);
}

MPIA_PRELOAD_EXPORT int MPI_Neighbor_alltoall_init_c(const void* sendbuf, MPI_Count sendcount,
                                                     MPI_Datatype sendtype, void* recvbuf,
                                                     MPI_Count recvcount, MPI_Datatype recvtype,
                                                     MPI_Comm comm, MPI_Info info,
                                                     MPI_Request* request) {
  return preload_neighbor_alltoall_init_c(sendbuf, sendcount, sendtype, recvbuf, recvcount,
                                          recvtype, comm, info, request);
}
#endif

MPIA_PRELOAD_EXPORT int MPI_Ineighbor_alltoallv(const void* sendbuf, const int sendcounts[],
                                                const int sdispls[], MPI_Datatype sendtype,
                                                void* recvbuf, const int recvcounts[],
                                                const int rdispls[], MPI_Datatype recvtype,
                                                MPI_Comm comm, MPI_Request* request) {
  return preload_ineighbor_alltoallv(sendbuf, sendcounts, sdispls, sendtype, recvbuf, recvcounts,
                                     rdispls, recvtype, comm, request);
}

#if MPIA_HAVE_PERSISTENT_COLL
MPIA_PRELOAD_EXPORT int MPI_Neighbor_alltoallv_init(const void* sendbuf, const int sendcounts[],
                                                    const int sdispls[], MPI_Datatype sendtype,
                                                    void* recvbuf, const int recvcounts[],
                                                    const int rdispls[], MPI_Datatype recvtype,
                                                    MPI_Comm comm, MPI_Info info,
                                                    MPI_Request* request) {
  return mpia_preload_neighbor_alltoallv_init(sendbuf, sendcounts, sdispls, sendtype, recvbuf,
                                              recvcounts, rdispls, recvtype, comm, info, request);
}
#endif

#if MPIA_HAVE_LARGE_COUNT
MPIA_PRELOAD_EXPORT int MPI_Ineighbor_alltoallv_c(const void* sendbuf, const MPI_Count sendcounts[],
                                                  const MPI_Aint sdispls[], MPI_Datatype sendtype,
                                                  void* recvbuf, const MPI_Count recvcounts[],
                                                  const MPI_Aint rdispls[], MPI_Datatype recvtype,
                                                  MPI_Comm comm, MPI_Request* request) {
  return preload_ineighbor_alltoallv_c(sendbuf, sendcounts, sdispls, sendtype, recvbuf, recvcounts,
                                       rdispls, recvtype, comm, request);
}

MPIA_PRELOAD_EXPORT int MPI_Neighbor_alltoallv_init_c(
    const void* sendbuf, const MPI_Count sendcounts[], const MPI_Aint sdispls[],
    MPI_Datatype sendtype, void* recvbuf, const MPI_Count recvcounts[], const MPI_Aint rdispls[],
    MPI_Datatype recvtype, MPI_Comm comm, MPI_Info info, MPI_Request* request) {
  return preload_neighbor_alltoallv_init_c(sendbuf, sendcounts, sdispls, sendtype, recvbuf,
                                           recvcounts, rdispls, recvtype, comm, info, request);
}
#endif

MPIA_PRELOAD_EXPORT int MPI_Ineighbor_alltoallw(const void* sendbuf, const int sendcounts[],
                                                const MPI_Aint sdispls[],
                                                const MPI_Datatype sendtypes[], void* recvbuf,
                                                const int recvcounts[], const MPI_Aint rdispls[],
                                                const MPI_Datatype recvtypes[], MPI_Comm comm,
                                                MPI_Request* request) {
  return preload_ineighbor_alltoallw(sendbuf, sendcounts, sdispls, sendtypes, recvbuf, recvcounts,
                                     rdispls, recvtypes, comm, request);
}

#if MPIA_HAVE_PERSISTENT_COLL
MPIA_PRELOAD_EXPORT int MPI_Neighbor_alltoallw_init(
    const void* sendbuf, const int sendcounts[], const MPI_Aint sdispls[],
    const MPI_Datatype sendtypes[], void* recvbuf, const int recvcounts[], const MPI_Aint rdispls[],
    const MPI_Datatype recvtypes[], MPI_Comm comm, MPI_Info info, MPI_Request* request) {
  return mpia_preload_neighbor_alltoallw_init(sendbuf, sendcounts, sdispls, sendtypes, recvbuf,
                                              recvcounts, rdispls, recvtypes, comm, info, request);
}
#endif

#if MPIA_HAVE_LARGE_COUNT
MPIA_PRELOAD_EXPORT int MPI_Ineighbor_alltoallw_c(
    const void* sendbuf, const MPI_Count sendcounts[], const MPI_Aint sdispls[],
    const MPI_Datatype sendtypes[], void* recvbuf, const MPI_Count recvcounts[],
    const MPI_Aint rdispls[], const MPI_Datatype recvtypes[], MPI_Comm comm, MPI_Request* request) {
  return preload_ineighbor_alltoallw_c(sendbuf, sendcounts, sdispls, sendtypes, recvbuf, recvcounts,
                                       rdispls, recvtypes, comm, request);
}

MPIA_PRELOAD_EXPORT int MPI_Neighbor_alltoallw_init_c(
    const void* sendbuf, const MPI_Count sendcounts[], const MPI_Aint sdispls[],
    const MPI_Datatype sendtypes[], void* recvbuf, const MPI_Count recvcounts[],
    const MPI_Aint rdispls[], const MPI_Datatype recvtypes[], MPI_Comm comm, MPI_Info info,
    MPI_Request* request) {
  return preload_neighbor_alltoallw_init_c(sendbuf, sendcounts, sdispls, sendtypes, recvbuf,
                                           recvcounts, rdispls, recvtypes, comm, info, request);
}
#endif

}  // extern "C"
