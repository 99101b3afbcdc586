// The drop-in library's C entry points and dispatchers (see preload.hpp), and MPIX_REPORT.
#include "preload/preload.hpp"
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

namespace {

// The calls intercepted; the _c forms (MPI-4's large counts) are reported on lines of their own.
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
  kColls
};
const char* const kNames[kColls] = {"MPI_Alltoall",
                                    "MPI_Alltoallv",
                                    "MPI_Neighbor_alltoall",
                                    "MPI_Neighbor_alltoallv",
                                    "MPI_Neighbor_alltoallw",
                                    "MPI_Alltoall_c",
                                    "MPI_Alltoallv_c",
                                    "MPI_Neighbor_alltoall_c",
                                    "MPI_Neighbor_alltoallv_c",
                                    "MPI_Neighbor_alltoallw_c"};
// The library's collective index of each (0 alltoall, 1 alltoallv, 2 the neighbor calls).
const int kLibrary[kColls] = {0, 1, 2, 2, 2, 0, 1, 2, 2, 2};

// Read once. A setting that must be the same everywhere (the selection) is agreed by the
// library itself; "system" is decided here, before the library sees the call, so it must be
// set alike on every rank (as every MPIX_ setting).
struct Env {
  bool system[kColls] = {};
  int report = 0;  // 0 off, 1 rank 0 of MPI_COMM_WORLD, 2 every rank
  Env() {
    const char* vars[3] = {"MPIX_ALLTOALL", "MPIX_ALLTOALLV", "MPIX_NEIGHBOR_ALLTOALLV"};
    for (int c = 0; c < kColls; ++c) {
      const char* v = std::getenv(vars[kLibrary[c]]);
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

// Calls made while this thread is inside mpi-advance go to the MPI library.
thread_local int depth = 0;
struct Inside {
  Inside() { ++depth; }
  ~Inside() { --depth; }
};

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
                  kNames[std::get<0>(key)], std::get<1>(key), row.calls, row.bytes,
                  std::get<2>(key).c_str(), row.seconds, row.hits);
    out += line;
  }
  std::fputs(out.c_str(), stdout);
  std::fflush(stdout);
  return MPI_SUCCESS;
}

void record(Coll c, MPI_Comm comm, bool library, double bytes, double seconds) {
  const char* algorithm = "system (MPI library)";
  int hit = 0;
  if (library && MPIA_Comm_last_call(comm, kLibrary[c], &algorithm, &hit) != MPI_SUCCESS)
    algorithm = "?";
  int size = 0;
  PMPI_Comm_size(comm, &size);
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
  if (kLibrary[c] == 2) {
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

int comm_size(MPI_Comm comm) {
  int n = 0;
  PMPI_Comm_size(comm, &n);
  return n;
}

// The degrees of a topology communicator (0 without one).
void degrees(MPI_Comm comm, int* in, int* out) {
  mpia_topo_degrees(comm, in, out);
  *in = std::max(*in, 0);
  *out = std::max(*out, 0);
}

}  // namespace

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
      [&] {
        double n = 0;
        for (int i = 0, P = comm_size(comm); i < P; ++i) n += recvcounts[i];
        return n * type_bytes(recvtype);
      });
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
      [&] {
        int in = 0, out = 0;
        degrees(comm, &in, &out);
        double n = 0;
        for (int i = 0; i < in; ++i) n += recvcounts[i];
        return n * type_bytes(recvtype);
      });
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
      [&] {
        int in = 0, out = 0;
        degrees(comm, &in, &out);
        double n = 0;
        for (int i = 0; i < in; ++i) n += recvcounts[i] * type_bytes(recvtypes[i]);
        return n;
      });
}

// The large-count forms, where the MPI declares them (MPI-4).
#if MPI_VERSION >= 4
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
      [&] {
        double n = 0;
        for (int i = 0, P = comm_size(comm); i < P; ++i) n += double(recvcounts[i]);
        return n * type_bytes(recvtype);
      });
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
      [&] {
        int in = 0, out = 0;
        degrees(comm, &in, &out);
        double n = 0;
        for (int i = 0; i < in; ++i) n += double(recvcounts[i]);
        return n * type_bytes(recvtype);
      });
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
      [&] {
        int in = 0, out = 0;
        degrees(comm, &in, &out);
        double n = 0;
        for (int i = 0; i < in; ++i) n += double(recvcounts[i]) * type_bytes(recvtypes[i]);
        return n;
      });
}
#endif

// The C bindings (the _c forms where the MPI declares them).
#define MPIA_PRELOAD_EXPORT __attribute__((visibility("default")))

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

#if MPI_VERSION >= 4
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

}  // extern "C"
