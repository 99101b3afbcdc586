// The fixture library of the neighborhood all-to-all tests (test_neighbor.cpp, built twice:
// mpia_test_neighbor and, with MPIA_NEIGHBOR_VIA_TOPO, mpia_test_neighbor_topo), compiled once
// in mpia_mpi_neighbor_fixtures for any MPI test program to link: topologies with their
// reference model of who sends what to whom (Cartesian, MPI_Graph_create multigraphs,
// distributed graphs, the halo exchange of distributed sparse matrix-vector products), guarded
// buffers of blocks with their own counts, displacements and datatypes, the configurations of
// the v, regular and w forms, and runners of one persistent or blocking exchange checked
// against the reference. The reference itself is described at the top of test_neighbor.cpp.
#pragma once

#include <gtest/gtest.h>
#include <mpi.h>

#include "mpi_advance.h"
#include "test_support.hpp"

#include <cstdint>
#include <map>
#include <memory>
#include <ostream>
#include <string>
#include <utility>
#include <vector>

namespace mpia_test {
namespace neighbor {

inline const char* const kEnvVar = "MPIX_NEIGHBOR_ALLTOALLV";
inline const char* const kCollective = "neighbor_alltoallv";  // for MPIX_Comm_set_algorithm
inline constexpr int kElemSalt = 7919;  // sender block b is encoded as value_hash's "dst" b + salt

// ------------------------------------------------------------------------------------------
// The reference model of one topology.
// ------------------------------------------------------------------------------------------
struct Topo {
  std::string name;
  MPI_Comm comm = MPI_COMM_NULL;  // MPI_COMM_NULL on ranks outside the topology
  std::vector<MPI_Comm> extra;    // helper communicators to free with it
  bool cartesian = false;
  bool degenerate = false;  // a periodic Cartesian dimension of size 1 or 2
  int me = -1, size = 0;
  std::vector<std::vector<int>> src, dst;  // of every rank of comm (MPI_PROC_NULL for Cartesian)
  std::vector<std::pair<int, int>> from;   // this rank's receive blocks: (sender, its block)
  std::vector<int> world_of;               // MPI_COMM_WORLD rank of every rank of comm
  // Units of the block `block` of rank `sender`, when the topology defines them (SpMV).
  std::vector<std::vector<int>> own_units;

  bool member() const { return comm != MPI_COMM_NULL; }
  int indegree() const { return static_cast<int>(src[static_cast<std::size_t>(me)].size()); }
  int outdegree() const { return static_cast<int>(dst[static_cast<std::size_t>(me)].size()); }
  const std::vector<int>& my_dst() const { return dst[static_cast<std::size_t>(me)]; }
  const std::vector<int>& my_src() const { return src[static_cast<std::size_t>(me)]; }

  Topo() = default;
  Topo(const Topo&) = delete;
  Topo& operator=(const Topo&) = delete;
  ~Topo() {
    if (comm != MPI_COMM_NULL) MPI_Comm_free(&comm);
    for (MPI_Comm& c : extra)
      if (c != MPI_COMM_NULL) MPI_Comm_free(&c);
  }
};
using TopoPtr = std::unique_ptr<Topo>;

using Edges = std::vector<std::pair<int, int>>;  // (source, destination), duplicates allowed

// ---- distributed sparse matrix-vector product ---------------------------------------------
// A matrix partitioned by contiguous, uneven row blocks; x is partitioned like the rows.
// Rank r needs x[c] for every column c of its rows owned by another rank q: those are
// received from q (ascending c), and q sends them (same order).
struct SpMV {
  std::string name;
  int n = 0;
  std::vector<int> lo;                    // rank r owns rows/columns [lo[r], lo[r+1])
  std::vector<std::vector<int>> cols;     // columns of each row
  std::vector<std::vector<double>> vals;  // values of each row
  // needs[r][q]: columns owned by q that r needs, ascending
  std::vector<std::map<int, std::vector<int>>> needs;
  int owner(int c) const {
    return static_cast<int>(std::upper_bound(lo.begin(), lo.end(), c) - lo.begin()) - 1;
  }
};

// ---- the catalogue ------------------------------------------------------------------------
enum class Kind {
  Cart1dPeriodic,
  Cart1dOpen,
  CartSelf,
  CartPairs,
  Cart2dPeriodic,
  Cart2dMixed,
  Cart2xHalf,
  Cart1xP,
  CartPx1,
  Cart2x2xK,
  Cart3dOpen,
  CartReversed,
  GraphMulti,
  GraphSubset,
  DistAdjRandom,
  DistAdjWeighted,
  DistCreateRandom,
  DistCreateWeighted,
  DistFan,
  DistEmpty,
  SpmvLaplace1d,
  SpmvLaplace2d,
  SpmvRandom,
};

inline constexpr Kind kKinds[] = {
    Kind::Cart1dPeriodic,   Kind::Cart1dOpen,         Kind::CartSelf,      Kind::CartPairs,
    Kind::Cart2dPeriodic,   Kind::Cart2dMixed,        Kind::Cart2xHalf,    Kind::Cart1xP,
    Kind::CartPx1,          Kind::Cart2x2xK,          Kind::Cart3dOpen,    Kind::CartReversed,
    Kind::GraphMulti,       Kind::GraphSubset,        Kind::DistAdjRandom, Kind::DistAdjWeighted,
    Kind::DistCreateRandom, Kind::DistCreateWeighted, Kind::DistFan,       Kind::DistEmpty,
    Kind::SpmvLaplace1d,    Kind::SpmvLaplace2d,      Kind::SpmvRandom};
constexpr int kNumKinds = static_cast<int>(sizeof(kKinds) / sizeof(kKinds[0]));

// ------------------------------------------------------------------------------------------
// Counts and displacements.
// ------------------------------------------------------------------------------------------
enum class Pattern {
  Uniform,      // 2 everywhere
  Varied,       // seeded 0..4
  Directional,  // even blocks 1, odd blocks 3 + sender % 3 (the two Cartesian directions differ)
  Zeros,        // nothing at all
  OneBig,       // rank 0's block 0 is large (rendezvous-sized), the others 0..2
  Topology,     // the topology's own (SpMV: the halo sizes), else Varied
};

enum class Displ {
  Ascending,
  ReverseGaps,
  ShuffledGaps,
  NegativeEnd,     // reverse order with gaps, every displacement < 0: the base is the buffer's end
  NegativeMiddle,  // shuffled with gaps, the base in the middle: displacements of both signs
};

// ------------------------------------------------------------------------------------------
// A guarded buffer of blocks with their own counts and displacements. Blocks that are not
// live (receive blocks of MPI_PROC_NULL neighbors) are left out of the type map: their bytes
// keep the sentinel, like every gap and guard.
// ------------------------------------------------------------------------------------------
class NBuffer {
 public:
  // Every block of layout `lay`, displacements in its extents (the v form).
  NBuffer(const Layout& lay, const std::vector<int>& counts, const std::vector<int>& displs,
          const std::vector<char>& live, unsigned char sentinel);
  // Block b of layout *lays[b] at byte displacement byte_displs[b] (the w form).
  NBuffer(const std::vector<const Layout*>& lays, const std::vector<int>& counts,
          const std::vector<MPI_Aint>& byte_displs, const std::vector<char>& live,
          unsigned char sentinel);

  void* ptr() { return storage_.data() + origin_; }
  const int* counts() const { return counts_.empty() ? &zero_ : counts_.data(); }
  const int* displs() const { return displs_.empty() ? &zero_ : displs_.data(); }
  const MPI_Aint* byte_displs() const {
    return byte_displs_.empty() ? &azero_ : byte_displs_.data();
  }
  const MPI_Datatype* types() const { return types_.empty() ? &int_type_ : types_.data(); }

  // As a send buffer: block b of rank me.
  void fill(int me, int iter);
  void poison(unsigned char p);
  // As a receive buffer: block b holds block from[b].second of rank from[b].first. Returns the
  // number of wrong elements and bytes (each one a test failure, the first few described).
  long check(int me, const std::vector<std::pair<int, int>>& from, int iter,
             const std::string& what) const;
  std::vector<unsigned char> snapshot() const { return storage_; }
  bool same_as(const std::vector<unsigned char>& snap) const { return snap == storage_; }

 private:
  struct Slot {
    std::size_t pos;
    Prim kind;
    int block;
    long elem;
  };
  void build(const std::vector<const Layout*>& lays, const std::vector<MPI_Aint>& at,
             const std::vector<char>& live);
  // For a wrong value: which (sender, block) would have produced it (a swapped block?).
  std::string describe_origin(const Slot& s, const std::vector<std::pair<int, int>>& from,
                              int iter) const;
  std::vector<int> counts_, displs_;
  std::vector<MPI_Aint> byte_displs_;
  std::vector<MPI_Datatype> types_;
  std::vector<unsigned char> storage_;
  std::vector<unsigned char> covered_;
  std::vector<Slot> slots_;
  std::size_t origin_ = 0;
  unsigned char sentinel_;
  int zero_ = 0;
  MPI_Aint azero_ = 0;
  MPI_Datatype int_type_ = MPI_INT;
};

// ------------------------------------------------------------------------------------------
// Configurations and runners.
// ------------------------------------------------------------------------------------------
inline const TypeCase kTypes[] = {
    {"int", layout_int, 1, layout_int, 1},
    {"vector_gaps_to_int", layout_vector_gaps, 1, layout_int, 6},
    {"resized_lb_to_contig2", layout_resized_lb, 1, layout_contig2_int, 1},
    {"struct_to_packed", layout_struct_char_double, 1, layout_packed_char_double, 1},
    {"negative_stride", layout_negative_stride, 1, layout_negative_stride, 1},
    {"resized_lb", layout_resized_lb, 1, layout_resized_lb, 1},
    {"double", layout_double, 1, layout_double, 1},
};
enum { kInt, kVecToInt, kLbToContig2, kStructToPacked, kNegStride, kResizedLb, kDouble };

constexpr int kNumTypes = static_cast<int>(sizeof(kTypes) / sizeof(kTypes[0]));

struct Config {
  const TypeCase* tc;  // nullptr for the w form
  Pattern pattern;
  Displ sdispl, rdispl;
  bool uniform_call = false;  // MPIX_Neighbor_alltoall (one count for every block)
  bool w = false;             // MPIX_Neighbor_alltoallw: a type pair per block (w_type_of)
  int salt = 0;               // the w form: which pair each block gets
};

struct Buffers {
  Layout slay, rlay;
  std::vector<Layout> wsend, wrecv;  // the w form: kTypes[i].send(), .recv()
  std::unique_ptr<NBuffer> sbuf, rbuf;
  int scount = 0, rcount = 0;  // uniform call
};

// ------------------------------------------------------------------------------------------
// The matrix: topology x algorithm x configuration x {persistent, blocking}.
// ------------------------------------------------------------------------------------------
inline const Config kConfigs[] = {
    {&kTypes[kInt], Pattern::Topology, Displ::ReverseGaps, Displ::ShuffledGaps, false},
    {&kTypes[kVecToInt], Pattern::Directional, Displ::ShuffledGaps, Displ::ReverseGaps, false},
    {&kTypes[kLbToContig2], Pattern::Uniform, Displ::Ascending, Displ::ShuffledGaps, false},
    {&kTypes[kStructToPacked], Pattern::OneBig, Displ::ShuffledGaps, Displ::Ascending, false},
    {&kTypes[kNegStride], Pattern::Zeros, Displ::ReverseGaps, Displ::ReverseGaps, false},
    {&kTypes[kResizedLb], Pattern::Uniform, Displ::Ascending, Displ::Ascending, true},
    {&kTypes[kVecToInt], Pattern::Uniform, Displ::Ascending, Displ::Ascending, true},
};
constexpr int kNumConfigs = static_cast<int>(sizeof(kConfigs) / sizeof(kConfigs[0]));

// ------------------------------------------------------------------------------------------
// The functions (neighbor_fixtures.cpp).
// ------------------------------------------------------------------------------------------
// A hash of (a, b, seed): seeded counts, weights, shuffles.
std::uint64_t mix(long a, long b, long seed);

// The registry of neighbor_alltoallv.
const std::vector<std::string>& registry_n();
// The algorithms to run: the registry and "" (the default), or MPIA_NEIGHBOR_ALGORITHMS
// (comma list; "default" = no info, no MPIX_Comm_set_algorithm).
const std::vector<std::string>& specs_to_run();
// Whether `local` is true on every rank of comm (collective).
bool all_ok(MPI_Comm comm, bool local);

// Topology builders; every one is collective over MPI_COMM_WORLD or `base`.
void fill_membership(Topo& t);
void pair_by_occurrence(Topo& t);
TopoPtr make_cart(MPI_Comm base, const std::string& name, std::vector<int> dims,
                  std::vector<int> periods);
std::vector<int> dims_create(int n, int nd);
TopoPtr make_graph(MPI_Comm base, const std::string& name,
                   const std::vector<std::vector<int>>& adj);
void lists_from_edges(const Edges& e, int P, long seed, std::vector<std::vector<int>>* src,
                      std::vector<std::vector<int>>* dst);
int weight_of(int a, int b, long salt);
void query_dist(Topo& t, bool weighted, std::vector<int>* srcs, std::vector<int>* dsts,
                std::vector<int>* sw, std::vector<int>* dw);
std::vector<std::vector<int>> allgather_lists(MPI_Comm comm, const std::vector<int>& mine);
TopoPtr make_dist_adjacent(MPI_Comm base, const std::string& name, const Edges& edges, long seed,
                           bool weighted);
TopoPtr make_dist_general(MPI_Comm base, const std::string& name, const Edges& edges,
                          bool weighted);
Edges random_edges(int P, long seed);
SpMV make_spmv(const std::string& kind, int P);
TopoPtr make_spmv_topo(MPI_Comm base, const SpMV& m);
const char* kind_name(Kind k);
// The catalogue's topology k over MPI_COMM_WORLD (collective).
TopoPtr make_topology(Kind k);

// Counts and displacements.
const char* pattern_name(Pattern p);
int units_of(const Topo& t, Pattern p, int sender, int block, int big);
const char* displ_name(Displ d);
std::vector<int> block_order(int n, Displ mode, long salt);
std::vector<int> make_displs(const std::vector<int>& counts, Displ mode, long salt);
std::vector<MPI_Aint> make_byte_displs(const std::vector<const Layout*>& lays,
                                       const std::vector<int>& counts, Displ mode, long salt);

// Configurations, buffers and calls.
int w_type_of(int sender, int block, int salt);
std::string describe(const char* mode, const std::string& spec, const Topo& t, const Config& c);
void make_w_buffers(const Topo& t, const Config& c, Buffers* b);
void make_buffers(const Topo& t, const Config& c, Buffers* b);
// MPIX_Request_get_algorithm of req names spec's algorithm (auto: one of the registry's).
void expect_reported(MPIX_Request req, const std::string& spec);
// Info with "mpix_algorithm" = spec (MPI_INFO_NULL for an empty spec); the caller frees it.
MPI_Info algorithm_info(const std::string& spec);
// One Start/complete cycle of req: how % 3 picks Start+Wait, Startall+Waitall or Start+Test.
void complete(MPIX_Request* req, int how, const std::string& label);
// An MPIX_Topo with t's lists of this rank, over t.comm; info "mpix_algorithm" = spec unless
// spec is empty. Collective over t.comm.
MPIX_Topo make_xtopo(const Topo& t, const std::string& spec);
int init_call(Buffers& b, const Config& c, const Topo& t, MPI_Info info, MPIX_Request* req,
              MPIX_Topo x = MPIX_TOPO_NULL);
int blocking_call(Buffers& b, const Config& c, const Topo& t, MPIX_Topo x = MPIX_TOPO_NULL);

// One persistent request (init with spec, `cycles` cycles, new data each) and one series of
// `calls` blocking calls (spec chosen with MPIX_Comm_set_algorithm), every result checked
// against the reference. `key` makes the data of every run different (identical on every
// rank). via_topo: the graph topologies through MPIX_Topo objects made from the same lists
// (persistent: the object freed right after init, the result also compared byte for byte with
// the topology communicator's own call; blocking: the object's algorithm from its info or
// inherited from the communicator, alternating with key).
void run_persistent_via(bool via_topo, const Topo& t, const std::string& spec, const Config& c,
                        int key, int cycles = 5);
void run_blocking_via(bool via_topo, const Topo& t, const std::string& spec, const Config& c,
                      int key, int calls = 2);

// Whether some rank has two edges to the same destination (every rank computes the same).
bool duplicate_edges(const Topo& t);
// Whether spec can run on t ("system" inherits the MPI library's bugs: neighbor_fixtures.cpp).
bool runnable(const Topo& t, const std::string& spec);
bool mpich();
// The same for the w form.
bool runnable_w(const Topo& t, const std::string& spec);
// The algorithms an edge case runs: all of them, or, when the MPI is slow, `keep` of them,
// rotating from `start`.
std::vector<std::string> edge_specs(long runs_each, double budget, long start, int keep);

// GoogleTest names and printing of the catalogue's topologies.
std::string kind_param_name(const ::testing::TestParamInfo<Kind>& info);
void PrintTo(Kind k, std::ostream* os);
// The sampling stride of the matrix (collective on MPI_COMM_WORLD the first time).
int matrix_stride();
// The first runnable algorithm from index a on (wrapping), or -1.
long runnable_from(const Topo& t, const std::vector<std::string>& specs, long a,
                   bool (*can)(const Topo&, const std::string&) = runnable);

}  // namespace neighbor
}  // namespace mpia_test
