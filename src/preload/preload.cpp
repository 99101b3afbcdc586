// The drop-in library's C entry points and dispatchers (see preload.hpp), and MPIX_REPORT.
#include "preload/preload.hpp"
#include "util/mpi_features.h"
#include "preload/topo_degrees.h"

#include "api/mpia_private.h"
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

using mpia_preload::depth;
using mpia_preload::Inside;

namespace {

// The calls intercepted: every form of every collective of src/bindings/calls.txt, blocking,
// nonblocking and persistent, int and large-count (enum Form, generated). A form's MPIX_REPORT
// lines are its own; a persistent form's count its starts.
#include "preload_enum.inc"

// The library's collective that runs a form: its MPIX_ variable and its mpia_private_comm_last_call
// name.
enum class Coll { alltoall, alltoallv, neighbor };
const char* const kCollName[] = {"alltoall", "alltoallv", "neighbor_alltoallv"};
const char* const kCollEnv[] = {"MPIX_ALLTOALL", "MPIX_ALLTOALLV", "MPIX_NEIGHBOR_ALLTOALLV"};
struct FormInfo {
  const char* mpi;  // its MPI name, for the report
  Coll coll;
  bool persistent;  // an _init form: its report lines count starts
};
// Open MPI 4.1 has the persistent collectives as its extension's MPIX_ functions.
#if MPIA_HAVE_PERSISTENT_COLL
#define MPIA_PRELOAD_INIT_PREFIX "MPI_"
#else
#define MPIA_PRELOAD_INIT_PREFIX "MPIX_"
#endif
extern const FormInfo kForms[kFormCount];  // preload_forms.inc
Coll coll_of(int form) { return kForms[form].coll; }

// Read once. A setting that must be the same everywhere (the selection) is agreed by the
// library itself; "system" is decided here, before the library sees the call, so it must be
// set alike on every rank (as every MPIX_ setting).
struct Env {
  bool system[kFormCount] = {};
  int report = 0;  // 0 off, 1 rank 0 of MPI_COMM_WORLD, 2 every rank
  Env() {
    for (int c = 0; c < kFormCount; ++c) {
      const char* v = std::getenv(kCollEnv[int(coll_of(c))]);
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
                  kForms[std::get<0>(key)].mpi, std::get<1>(key), row.calls, row.bytes,
                  std::get<2>(key).c_str(), row.seconds, row.hits);
    out += line;
  }
  MPI_Count peak = 0, now = 0, entries = 0;
  if (mpia_private_plan_cache_bytes(&peak, &now, &entries, nullptr) == MPI_SUCCESS)
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

// A blocking call: what the library ran (mpia_private_comm_last_call), or the MPI library's.
void record(Form c, MPI_Comm comm, bool library, double bytes, double seconds) {
  const char* algorithm = "system (MPI library)";
  int hit = 0;
  if (library && mpia_private_comm_last_call(comm, kCollName[int(coll_of(c))], &algorithm, &hit) !=
                     MPI_SUCCESS)
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
bool ours(Form c, MPI_Comm comm) {
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
  if (coll_of(c) == Coll::neighbor) {
    int topo = MPI_UNDEFINED;
    if (PMPI_Topo_test(comm, &topo) != MPI_SUCCESS || topo == MPI_UNDEFINED) return false;
  }
  return true;
}

// Runs call (ours or PMPI_), timed and recorded under MPIX_REPORT.
template <class Ours, class System, class Bytes>
int dispatch(Form c, MPI_Comm comm, Ours&& run_ours, System&& run_system, Bytes&& bytes) {
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
int dispatch_request(Form c, MPI_Comm comm, MPI_Request* request, Ours&& run_ours,
                     System&& run_system, Bytes&& bytes) {
  const bool persistent = kForms[c].persistent;
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

// The blocks a form's call receives: one per rank of comm, or per in-edge of its topology (0
// without one).
int blocks(const FormInfo& f, MPI_Comm comm) {
  if (f.coll != Coll::neighbor) return comm_size(comm);
  int in = 0, out = 0;
  mpia_topo_degrees(comm, &in, &out);
  return std::max(in, 0);
}
double regular_bytes(MPI_Count count, MPI_Datatype type, int blocks) {
  return double(count) * type_bytes(type) * blocks;
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
#include "preload_creators.inc"

}  // extern "C"

#include "preload_forms.inc"
