#include "locality/locality.hpp"

#include "mpia_config.h"
#include "util/error.hpp"

#include <mpi.h>

#include <cstdio>
#include <cstdlib>
#include <memory>
#include <mutex>

#if MPIA_HAVE_HWLOC
#include <hwloc.h>
#endif

namespace mpia {

namespace {

// This process's package and NUMA domain: the logical index of the smallest such object that
// covers the CPU binding, or -1 when the binding spans several (an unbound process is bound to
// the whole machine) or hwloc is unavailable. The topology is loaded once per process.
void binding_place(int& package, int& numa) {
  package = numa = -1;
#if MPIA_HAVE_HWLOC
  static int cached[2] = {-1, -1};
  static std::once_flag once;
  std::call_once(once, [] {
    hwloc_topology_t topo;
    if (hwloc_topology_init(&topo) != 0) return;
    if (hwloc_topology_load(topo) == 0) {
      hwloc_bitmap_t set = hwloc_bitmap_alloc();
      if (set && hwloc_get_cpubind(topo, set, HWLOC_CPUBIND_PROCESS) == 0 &&
          !hwloc_bitmap_iszero(set)) {
        const int npackages = hwloc_get_nbobjs_by_type(topo, HWLOC_OBJ_PACKAGE);
        const int nnuma = hwloc_get_nbobjs_by_type(topo, HWLOC_OBJ_NUMANODE);
        // Covered by one package (of several): that package; likewise for NUMA domains, whose
        // cpusets are those of their parents in hwloc 2.
        for (int i = 0; i < npackages && npackages > 1; ++i) {
          hwloc_obj_t o = hwloc_get_obj_by_type(topo, HWLOC_OBJ_PACKAGE, unsigned(i));
          if (o && hwloc_bitmap_isincluded(set, o->cpuset)) cached[0] = int(o->logical_index);
        }
        for (int i = 0; i < nnuma && nnuma > 1; ++i) {
          hwloc_obj_t o = hwloc_get_obj_by_type(topo, HWLOC_OBJ_NUMANODE, unsigned(i));
          if (o && o->cpuset && hwloc_bitmap_isincluded(set, o->cpuset))
            cached[1] = int(o->logical_index);
        }
        // A machine with one package / one NUMA domain: a bound process is in index 0; an
        // unbound one (binding = every CPU) is reported unbound.
        hwloc_const_bitmap_t all = hwloc_topology_get_complete_cpuset(topo);
        const bool bound = !hwloc_bitmap_isincluded(all, set);
        if (bound && npackages == 1) cached[0] = 0;
        if (bound && nnuma == 1) cached[1] = 0;
      }
      if (set) hwloc_bitmap_free(set);
    }
    hwloc_topology_destroy(topo);
  });
  package = cached[0], numa = cached[1];
#endif
}

}  // namespace

Locality compute_locality(MPI_Comm comm, int rank, int P, const std::string& spec,
                          CompleteRequest complete) {
  Locality loc;
  int mine[3] = {0, -1, -1};
  if (!spec.empty()) {
    int world_size = 0, world_rank = 0;
    MPIA_CHECK(MPI_Comm_size(MPI_COMM_WORLD, &world_size));
    MPIA_CHECK(MPI_Comm_rank(MPI_COMM_WORLD, &world_rank));
    try {
      mine[0] = parse_locality_spec(spec, world_size)[std::size_t(world_rank)];
    } catch (const Error& e) {
      // Said once per process, whichever call met it first: with MPI_ERRORS_RETURN the calls'
      // MPI_ERR_ARG alone would not say why.
      static std::once_flag said;
      std::call_once(said, [&e] {
        std::fprintf(stderr,
                     "%s; every call that needs locality fails with MPI_ERR_ARG (persistent "
                     "inits, the locality calls, blocking calls of auto and of the "
                     "locality-aware algorithms)\n",
                     e.what());
      });
      throw;
    }
    loc.source = "MPIX_LOCALITY";
  } else {
    // The node's label: the lowest rank (in comm) of the ranks sharing memory with this one.
    // MPI_Comm_split_type has no nonblocking form: enter it once every rank has arrived.
    MPI_Request r;
    MPIA_CHECK(MPI_Ibarrier(comm, &r));
    complete(r, "MPI_Ibarrier");
    MPI_Comm node = MPI_COMM_NULL;
    MPIA_CHECK(MPI_Comm_split_type(comm, MPI_COMM_TYPE_SHARED, rank, MPI_INFO_NULL, &node));
    int rc = MPI_Iallreduce(&rank, &mine[0], 1, MPI_INT, MPI_MIN, node, &r);
    if (rc == MPI_SUCCESS) {
      try {
        complete(r, "MPI_Iallreduce");
      } catch (...) {
        MPI_Comm_free(&node);
        throw;
      }
    }
    MPI_Comm_free(&node);
    MPIA_CHECK(rc);
    loc.source = "MPI_Comm_split_type";
  }
  binding_place(mine[1], mine[2]);
  std::vector<int> all(std::size_t(3) * P);
  MPI_Request r;
  MPIA_CHECK(MPI_Iallgather(mine, 3, MPI_INT, all.data(), 3, MPI_INT, comm, &r));
  complete(r, "MPI_Iallgather");
  std::vector<int> labels(P);
  loc.package_of.resize(P);
  loc.numa_of.resize(P);
  for (int q = 0; q < P; ++q) {
    labels[q] = all[3 * q];
    loc.package_of[q] = all[3 * q + 1];
    loc.numa_of[q] = all[3 * q + 2];
  }
  loc.map = make_node_map(labels);
  return loc;
}

}  // namespace mpia
