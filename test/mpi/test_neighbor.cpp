// Correctness of the neighborhood all-to-all (MPIX_Neighbor_alltoallv[_init],
// MPIX_Neighbor_alltoall[_init], MPIX_Neighbor_alltoallw[_init]) against a reference computed
// here, independently of the system MPI (whose own neighborhood collectives are wrong on
// Cartesian periodic dimensions of size 1 and 2 in some versions; NeighborWMatrix also checks
// MPI_Neighbor_alltoallw itself against the reference where it is right).
//
// The reference (MPI-4.1 section 7.6): every rank knows the neighbor lists of every rank of
// the topology. Cartesian: for each dimension d the -1 neighbor (source of MPI_Cart_shift(d,1))
// then the +1 neighbor, for sending and receiving alike; receive block 2d holds what the -1
// neighbor sent in its block 2d+1, receive block 2d+1 what the +1 neighbor sent in its block
// 2d, whatever the neighbors are (the same rank, or this rank, for periodic sizes 1 and 2);
// blocks of MPI_PROC_NULL neighbors are never touched. Graph and distributed graph: receive
// block i comes from sources[i]; the k-th occurrence of rank s in a receiver's sources pairs
// with the k-th occurrence of the receiver in s's destinations (duplicate edges, self loops).
// Every element is value_hash(sender, sender's block, element, iteration), counts are a
// formula of (sender, sender's block), so the receiver knows what each block must hold.
//
// Topologies: Cartesian 1D/2D/3D, periodic and not, with periodic dimensions of size 1 and 2
// (on MPI_COMM_SELF, on pairs of ranks, {2, P/2}, {1, P}, {2, 2, P/4}, MPI_Dims_create shapes,
// a communicator whose ranks are reversed); MPI_Graph_create multigraphs (duplicate edges,
// self loops, an isolated rank, fewer nodes than ranks); distributed graphs (adjacent and
// general, weighted and MPI_UNWEIGHTED, random sparse with duplicates, self loops and ranks of
// zero in- or out-degree, fan-in/fan-out, empty); the halo exchange of distributed sparse
// matrix-vector products (1D and 2D Laplacians and an unsymmetric random matrix partitioned by
// uneven row blocks). For each: every registered algorithm and the default, persistent (>= 5
// Start/complete cycles, new data each time) and blocking (algorithm chosen with
// MPIX_Comm_set_algorithm), with datatypes with holes, a non-zero lower bound, negative stride
// and different send and receive type maps, non-monotonic displacements with gaps, negative
// displacements (the base pointer at the end or in the middle of the buffer), zero counts and
// large blocks. The environment variable MPIX_NEIGHBOR_ALLTOALLV (read once per process) is
// tested by NeighborSelectionEnv, which test/mpi/environment.cmake runs with it set.
//
// MPIA_NEIGHBOR_ALGORITHMS (comma list; "default" = no info, no MPIX_Comm_set_algorithm)
// restricts the algorithms, for the registrations under emulated nodes (MPIX_LOCALITY=ppn:K).
//
// Built with MPIA_NEIGHBOR_VIA_TOPO (mpia_test_neighbor_topo), the matrix runs the graph
// topologies (every kind but the Cartesian ones, whose MPI_PROC_NULL neighbors and directions a
// graph cannot express) through MPIX_Topo objects made from the same lists over the topology's
// communicator: persistent requests from MPIX_Neighbor_alltoallv_topo_init with the object freed
// right after init (the request keeps what it uses), then the result compared byte for byte with
// MPIX_Neighbor_alltoall(v) on the topology communicator; blocking calls with the algorithm given
// to MPIX_Topo_create's info, or inherited from the communicator's MPIX_Comm_set_algorithm. The
// NeighborTopo tests (that build only) check the object's own rules: errors, lifetime, several
// objects on one communicator.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <map>
#include <memory>
#include <numeric>
#include <ostream>
#include <set>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "neighbor_fixtures.hpp"
#include "test_support.hpp"

// The fixture library (topologies, reference, buffers, configurations, runners):
// neighbor_fixtures.hpp, compiled once in mpia_mpi_neighbor_fixtures.
using namespace mpia_test;
using namespace mpia_test::neighbor;

namespace {

#ifdef MPIA_NEIGHBOR_VIA_TOPO
constexpr bool kViaTopo = true;
#else
constexpr bool kViaTopo = false;
#endif

// This program's runners: through MPIX_Topo objects in mpia_test_neighbor_topo.
void run_persistent(const Topo& t, const std::string& spec, const Config& c, int key,
                    int cycles = 5) {
  run_persistent_via(kViaTopo, t, spec, c, key, cycles);
}
void run_blocking(const Topo& t, const std::string& spec, const Config& c, int key, int calls = 2) {
  run_blocking_via(kViaTopo, t, spec, c, key, calls);
}

class NeighborMatrix : public ::testing::TestWithParam<Kind> {};

TEST_P(NeighborMatrix, EveryAlgorithm) {
  const Kind kind = GetParam();
  const int kindex = static_cast<int>(kind);
  const std::vector<std::string>& specs = specs_to_run();
  ASSERT_FALSE(specs.empty());
  const int stride = matrix_stride();  // collective on MPI_COMM_WORLD the first time
  // A very slow MPI (oversubscribed MPICH) runs each topology at every other rank count.
  if (stride >= 20 && (kindex + comm_size(MPI_COMM_WORLD)) % 2 == 1) {
    GTEST_SKIP()
        << "slow MPI: this topology runs at every other rank count (MPIA_TEST_FULL=1 runs it)";
  }
  TopoPtr t = make_topology(kind);
  ASSERT_TRUE(t);
  if (kViaTopo && t->cartesian)
    GTEST_SKIP() << "MPIX_Topo is a graph: Cartesian directions and MPI_PROC_NULL are not";
  const long nspecs = static_cast<long>(specs.size());
  // When sampling (a slow MPI), every topology still runs one algorithm and configuration,
  // persistent for even topologies and blocking for odd ones, rotating over the algorithms
  // and configurations, plus a 1-in-stride sample of the rest.
  const long keep_a = runnable_from(*t, specs, (kindex / 2) % nspecs);
  const long keep_pa = kindex % 2 == 0 ? keep_a : -1;
  const long keep_ba = kindex % 2 == 1 ? keep_a : -1;
  const int keep_pc = (kindex / 2) % kNumConfigs, keep_bc = (kindex / 2 + 3) % kNumConfigs;
  for (long a = 0; a < nspecs; ++a) {
    const std::string& spec = specs[static_cast<std::size_t>(a)];
    if (!runnable(*t, spec)) continue;
    for (int c = 0; c < kNumConfigs; ++c) {
      const long combo = ((static_cast<long>(kindex) * nspecs + a) * kNumConfigs + c) * 2;
      const int key = static_cast<int>(combo % 100000);
      if (stride == 1 || (a == keep_pa && c == keep_pc) || sampled(combo, stride)) {
        run_persistent(*t, spec, kConfigs[c], key);
      }
      if (stride == 1 || (a == keep_ba && c == keep_bc) || sampled(combo + 1, stride)) {
        run_blocking(*t, spec, kConfigs[c], key + 1);
      }
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Topologies, NeighborMatrix, ::testing::ValuesIn(kKinds), kind_param_name);

// ------------------------------------------------------------------------------------------
// MPIX_Neighbor_alltoallw: a datatype pair per block (kTypes, drawn per sender and block: holes,
// a lower bound that is not 0, a negative stride, different send and receive type maps), byte
// displacements (mostly unaligned; blocks in ascending, reverse and shuffled order, the base at
// the end or in the middle), every topology x algorithm, persistent and blocking. On topologies
// where the MPI library's own MPI_Neighbor_alltoallw is right (see runnable), it is checked
// against the same reference with the same buffers.
// ------------------------------------------------------------------------------------------
const Config kWConfigs[] = {
    {nullptr, Pattern::Topology, Displ::ShuffledGaps, Displ::ReverseGaps, false, true, 0},
    {nullptr, Pattern::Varied, Displ::NegativeEnd, Displ::NegativeMiddle, false, true, 3},
    {nullptr, Pattern::OneBig, Displ::Ascending, Displ::ShuffledGaps, false, true, 5},
    {nullptr, Pattern::Zeros, Displ::ReverseGaps, Displ::Ascending, false, true, 1},
};
constexpr int kNumWConfigs = static_cast<int>(sizeof(kWConfigs) / sizeof(kWConfigs[0]));

// The MPI library's MPI_Neighbor_alltoallw on the same buffers, against the reference.
void run_mpi_w(const Topo& t, const Config& c, int key) {
  if (!t.member()) return;
  SCOPED_TRACE(describe("MPI_Neighbor_alltoallw (the MPI library's)", "", t, c));
  Buffers b;
  make_buffers(t, c, &b);
  b.sbuf->fill(t.me, key);
  b.rbuf->poison(0x5A);
  const int rc = MPI_Neighbor_alltoallw(b.sbuf->ptr(), b.sbuf->counts(), b.sbuf->byte_displs(),
                                        b.sbuf->types(), b.rbuf->ptr(), b.rbuf->counts(),
                                        b.rbuf->byte_displs(), b.rbuf->types(), t.comm);
  EXPECT_EQ(rc, MPI_SUCCESS) << error_string(rc);
  b.rbuf->check(t.me, t.from, key, "receive buffer");
}

class NeighborWMatrix : public ::testing::TestWithParam<Kind> {};

TEST_P(NeighborWMatrix, EveryAlgorithm) {
  const Kind kind = GetParam();
  const int kindex = static_cast<int>(kind);
  const std::vector<std::string>& specs = specs_to_run();
  const long nspecs = static_cast<long>(specs.size());
  static const int stride = sample_stride(kNumKinds * nspecs * kNumWConfigs * 2, 2.0);
  if (stride >= 20 && (kindex + comm_size(MPI_COMM_WORLD)) % 2 == 1) {
    GTEST_SKIP()
        << "slow MPI: this topology runs at every other rank count (MPIA_TEST_FULL=1 runs it)";
  }
  TopoPtr t = make_topology(kind);
  ASSERT_TRUE(t);
  // When sampling, every topology still runs one algorithm persistent and another blocking.
  const long keep_pa = runnable_from(*t, specs, kindex % nspecs, runnable_w);
  const long keep_ba = runnable_from(*t, specs, (kindex + 1) % nspecs, runnable_w);
  for (long a = 0; a < nspecs; ++a) {
    const std::string& spec = specs[static_cast<std::size_t>(a)];
    if (!runnable_w(*t, spec)) continue;
    for (int c = 0; c < kNumWConfigs; ++c) {
      const long combo = ((static_cast<long>(kindex) * nspecs + a) * kNumWConfigs + c) * 2 + 500000;
      const int key = static_cast<int>(combo % 100000);
      if (stride == 1 || (a == keep_pa && c == kindex % kNumWConfigs) || sampled(combo, stride))
        run_persistent(*t, spec, kWConfigs[c], key);
      if (stride == 1 || (a == keep_ba && c == (kindex + 1) % kNumWConfigs) ||
          sampled(combo + 1, stride))
        run_blocking(*t, spec, kWConfigs[c], key + 1);
    }
  }
  if (runnable_w(*t, "system")) run_mpi_w(*t, kWConfigs[kindex % kNumWConfigs], 77000 + kindex);
}

INSTANTIATE_TEST_SUITE_P(Topologies, NeighborWMatrix, ::testing::ValuesIn(kKinds), kind_param_name);

// ------------------------------------------------------------------------------------------
// The registry and the selection.
// ------------------------------------------------------------------------------------------
TEST(NeighborRegistry, HasTheDocumentedAlgorithms) {
  const std::vector<std::string>& names = registry_n();
  for (const char* want : {"direct", "locality", "system", "auto"}) {
    EXPECT_NE(std::find(names.begin(), names.end(), want), names.end())
        << "neighbor_alltoallv registry lacks " << want;
  }
  std::vector<std::string> sorted = names;
  std::sort(sorted.begin(), sorted.end());
  EXPECT_EQ(std::adjacent_find(sorted.begin(), sorted.end()), sorted.end()) << "duplicates";
  ScopedErrhandler eh(MPI_COMM_SELF, MPI_ERRORS_RETURN);
  const char *name = nullptr, *desc = nullptr;
  EXPECT_NE(MPIX_Algorithm_get("neighbor_alltoallv", static_cast<int>(names.size()), &name, &desc),
            MPI_SUCCESS)
      << "index past the end";
}

// One persistent init on t (neighbor_alltoall_init when `uniform`) with info `info_spec` ("":
// none), which must report algorithm `want`, and one checked cycle.
void expect_init_runs(const Topo& t, bool uniform, const std::string& info_spec,
                      const std::string& want) {
  Config c{&kTypes[kInt], Pattern::Uniform, Displ::Ascending, Displ::Ascending, uniform};
  SCOPED_TRACE("info '" + info_spec + "'" + (uniform ? " (neighbor_alltoall_init)" : ""));
  Buffers b;
  make_buffers(t, c, &b);
  MPI_Info info = algorithm_info(info_spec);
  MPIX_Request req = MPIX_REQUEST_NULL;
  const int rc = init_call(b, c, t, info, &req);
  if (info != MPI_INFO_NULL) MPI_Info_free(&info);
  EXPECT_EQ(rc, MPI_SUCCESS) << error_string(rc);
  if (rc != MPI_SUCCESS) return;  // failed on every rank: init agrees
  char name[MPIX_MAX_ALGORITHM_STRING];
  int len = 0;
  EXPECT_EQ(MPIX_Request_get_algorithm(req, name, &len), MPI_SUCCESS);
  Spec got;
  EXPECT_TRUE(parse_spec(name, &got));
  EXPECT_EQ(got.name, want) << "reported '" << name << "'";
  b.sbuf->fill(t.me, 5);
  complete(&req, 0, "cycle");
  b.rbuf->check(t.me, t.from, 5, "receive buffer");
  EXPECT_EQ(MPIX_Request_free(&req), MPI_SUCCESS);
}

// Info wins over the communicator's choice (MPIX_Comm_set_algorithm); that choice selects when
// there is no info; both init calls report what they run.
TEST(NeighborSelection, InfoAndCommAlgorithm) {
  const bool slow = sample_stride(12, 2.0) > 1;
  TopoPtr t = make_topology(Kind::Cart1dPeriodic);
  if (!t->member()) return;
  // (communicator's choice, info, neighbor_alltoall_init instead of the v variant)
  struct Case {
    const char *chosen, *info;
    bool uniform;
  };
  const Case cases[] = {{"locality", "", false},      {"direct", "locality", false},
                        {"locality", "direct", true}, {"direct", "", true},
                        {"direct", "direct", false},  {"locality", "locality", true}};
  for (const Case& k : cases) {
    if (slow && &k - cases >= 3) break;
    SCOPED_TRACE(std::string("MPIX_Comm_set_algorithm '") + k.chosen + "'");
    ScopedCommAlgorithm sel(t->comm, kCollective, k.chosen);
    expect_init_runs(*t, k.uniform, k.info, *k.info ? k.info : k.chosen);
  }
}

// The environment selects when there is neither info nor a communicator's choice, on every
// communicator; info and MPIX_Comm_set_algorithm win over it; the blocking call runs and
// delivers. test/mpi/environment.cmake runs this with MPIX_NEIGHBOR_ALLTOALLV set (to a valid
// algorithm) before the process starts; without it the test skips, on every rank alike.
TEST(NeighborSelectionEnv, InfoAndEnvironment) {
  const char* env = std::getenv(kEnvVar);
  if (env == nullptr) GTEST_SKIP() << kEnvVar << " is not set (see environment.cmake)";
  SCOPED_TRACE(std::string(kEnvVar) + "='" + env + "'");
  Spec want;
  ASSERT_TRUE(parse_spec(env, &want));
  const std::string other = want.name == "direct" ? "locality" : "direct";
  for (Kind kind : {Kind::Cart1dPeriodic, Kind::DistAdjRandom}) {
    TopoPtr t = make_topology(kind);
    if (!t->member()) continue;
    SCOPED_TRACE(t->name);
    for (bool uniform : {false, true}) {
      expect_init_runs(*t, uniform, "", want.name);
      expect_init_runs(*t, uniform, other, other);
    }
    {
      ScopedCommAlgorithm sel(t->comm, kCollective, other);
      expect_init_runs(*t, false, "", other);
      expect_init_runs(*t, true, want.name, want.name);
    }
    expect_init_runs(*t, false, "", want.name);  // the reset returns to the environment's
    run_blocking(*t, "", kConfigs[0], 4100 + static_cast<int>(kind));
    run_blocking(*t, "", kConfigs[6], 4200 + static_cast<int>(kind));
  }
}

// ------------------------------------------------------------------------------------------
// Edge cases.
// ------------------------------------------------------------------------------------------
// Many cycles, alternating completion calls.
TEST(NeighborEdge, ManyCycles) {
  const std::vector<std::string> specs = edge_specs(2, 2.0, 0, 1);
  const bool slow = specs.size() < specs_to_run().size();
  TopoPtr t = make_topology(Kind::DistCreateWeighted);
  const Config c{&kTypes[kStructToPacked], Pattern::Varied, Displ::ShuffledGaps, Displ::ReverseGaps,
                 false};
  for (std::size_t a = 0; a < specs.size(); ++a) {
    // "system" is not checked where a rank has two edges to the same peer (runnable): at 1-3
    // ranks this random graph has some, and MPICH 4.3.2 pairs them in reverse.
    if (!runnable(*t, specs[a])) continue;
    run_persistent(*t, specs[a], c, 900 + static_cast<int>(a), slow ? 6 : 12);
  }
}

// Several requests on the same and on different topology communicators, all active at once,
// completed in reverse order.
TEST(NeighborEdge, ConcurrentRequests) {
  TopoPtr t1 = make_topology(Kind::Cart2dPeriodic);
  TopoPtr t2 = make_topology(Kind::DistAdjRandom);
  const std::vector<std::string> specs = edge_specs(6, 3.0, 1, 2);
  const Config c1{&kTypes[kInt], Pattern::Directional, Displ::ReverseGaps, Displ::ShuffledGaps,
                  false};
  const Config c2{&kTypes[kDouble], Pattern::Varied, Displ::ShuffledGaps, Displ::Ascending, false};
  const Config c3{
      nullptr, Pattern::Directional, Displ::ReverseGaps, Displ::ShuffledGaps, false, true, 4};
  struct Live {
    const Topo* t;
    const Config* c;
    Buffers b;
    MPIX_Request req = MPIX_REQUEST_NULL;
  };
  std::vector<std::unique_ptr<Live>> live;
  for (std::size_t a = 0; a < specs.size(); ++a) {
    for (int which = 0; which < 4; ++which) {
      const Topo* t = which >= 2 ? t2.get() : t1.get();
      if (!t->member() || !(which == 3 ? runnable_w : runnable)(*t, specs[a])) continue;
      std::unique_ptr<Live> l(new Live);
      l->t = t;
      l->c = which == 1 ? &c2 : which == 3 ? &c3 : &c1;
      make_buffers(*t, *l->c, &l->b);
      MPI_Info info = algorithm_info(specs[a]);
      const int rc = init_call(l->b, *l->c, *t, info, &l->req);
      if (info != MPI_INFO_NULL) MPI_Info_free(&info);
      ASSERT_EQ(rc, MPI_SUCCESS) << "init of request " << live.size() << ": " << error_string(rc);
      live.push_back(std::move(l));
    }
  }
  const int rounds = specs.size() < specs_to_run().size() ? 2 : 3;
  for (int round = 0; round < rounds; ++round) {
    for (std::size_t i = 0; i < live.size(); ++i) {
      live[i]->b.sbuf->fill(live[i]->t->me, 7000 + round * 100 + static_cast<int>(i));
      live[i]->b.rbuf->poison(0x11);
      EXPECT_EQ(MPIX_Start(&live[i]->req), MPI_SUCCESS);
    }
    for (std::size_t i = live.size(); i-- > 0;) {
      EXPECT_EQ(MPIX_Wait(&live[i]->req, MPI_STATUS_IGNORE), MPI_SUCCESS);
      live[i]->b.rbuf->check(live[i]->t->me, live[i]->t->from,
                             7000 + round * 100 + static_cast<int>(i),
                             "round " + std::to_string(round) + " request " + std::to_string(i) +
                                 " on " + live[i]->t->name);
    }
  }
  for (auto& l : live) EXPECT_EQ(MPIX_Request_free(&l->req), MPI_SUCCESS);
}

// The blocking call repeated on the same buffers with changing counts (a cached plan must not
// be reused for different arguments), and with different algorithms on the same arguments.
TEST(NeighborEdge, BlockingCountsChange) {
  TopoPtr t = make_topology(Kind::CartPairs);
  TopoPtr g = make_topology(Kind::DistAdjWeighted);
  const Pattern pats[] = {Pattern::Uniform, Pattern::Directional, Pattern::Varied, Pattern::Zeros,
                          Pattern::Directional};
  const std::vector<std::string> specs = edge_specs(6, 3.0, 2, 2);
  for (const Topo* tp : {t.get(), g.get()}) {
    if (!tp->member()) continue;
    const int cap = 64 * (tp->indegree() + tp->outdegree()) + 64;
    std::vector<int> sbuf(static_cast<std::size_t>(cap)), rbuf(static_cast<std::size_t>(cap));
    for (const std::string& spec : specs) {
      if (!runnable(*tp, spec)) continue;
      SCOPED_TRACE(tp->name + ", algorithm '" + spec + "'");
      ScopedCommAlgorithm sel(tp->comm, kCollective, spec);
      for (int i = 0; i < 5; ++i) {
        const Pattern p = pats[i];
        std::vector<int> sc, rc;
        for (int j = 0; j < tp->outdegree(); ++j) sc.push_back(units_of(*tp, p, tp->me, j, 1));
        for (int k = 0; k < tp->indegree(); ++k) {
          const auto& f = tp->from[static_cast<std::size_t>(k)];
          rc.push_back(f.first == MPI_PROC_NULL ? 1 : units_of(*tp, p, f.first, f.second, 1));
        }
        std::vector<int> sd = make_displs(sc, Displ::ShuffledGaps, i);
        std::vector<int> rd = make_displs(rc, Displ::ReverseGaps, i);
        sc.push_back(0);
        sd.push_back(0);
        rc.push_back(0);
        rd.push_back(0);
        const int iter = 5000 + i;
        std::fill(sbuf.begin(), sbuf.end(), -1);
        std::fill(rbuf.begin(), rbuf.end(), -7);
        for (int j = 0; j < tp->outdegree(); ++j)
          for (int e = 0; e < sc[static_cast<std::size_t>(j)]; ++e)
            encode_value(Prim::Int, value_hash(tp->me, j + kElemSalt, e, iter),
                         reinterpret_cast<unsigned char*>(
                             &sbuf[static_cast<std::size_t>(sd[static_cast<std::size_t>(j)] + e)]));
        const int code =
            MPIX_Neighbor_alltoallv(sbuf.data(), sc.data(), sd.data(), MPI_INT, rbuf.data(),
                                    rc.data(), rd.data(), MPI_INT, tp->comm);
        EXPECT_EQ(code, MPI_SUCCESS) << "call " << i << ": " << error_string(code);
        std::vector<int> want(rbuf.size(), -7);
        for (int k = 0; k < tp->indegree(); ++k) {
          const auto& f = tp->from[static_cast<std::size_t>(k)];
          if (f.first == MPI_PROC_NULL) continue;
          for (int e = 0; e < rc[static_cast<std::size_t>(k)]; ++e)
            encode_value(Prim::Int, value_hash(f.first, f.second + kElemSalt, e, iter),
                         reinterpret_cast<unsigned char*>(
                             &want[static_cast<std::size_t>(rd[static_cast<std::size_t>(k)] + e)]));
        }
        long bad = 0;
        for (std::size_t x = 0; x < want.size(); ++x) bad += want[x] != rbuf[x];
        EXPECT_EQ(bad, 0) << "call " << i << " (" << pattern_name(p) << "): " << bad
                          << " wrong ints on rank " << tp->me;
      }
    }
  }
}

// Negative displacements are legal MPI: the base pointer may be the end of the buffer (every
// block before it) or its middle. Every algorithm and the default, persistent and blocking,
// on an open Cartesian grid (MPI_PROC_NULL blocks, never to be written), a periodic 2D grid
// and a multigraph (duplicate edges, self loops), against the reference, with every byte
// around the blocks checked untouched.
TEST(NeighborEdge, NegativeDisplacements) {
  const std::vector<std::string>& specs = specs_to_run();
  const Kind kinds[] = {Kind::Cart1dOpen, Kind::Cart2dPeriodic, Kind::GraphMulti};
  const Config configs[] = {
      {&kTypes[kInt], Pattern::Directional, Displ::NegativeEnd, Displ::NegativeMiddle, false},
      {&kTypes[kStructToPacked], Pattern::Varied, Displ::NegativeMiddle, Displ::NegativeEnd, false},
      {&kTypes[kNegStride], Pattern::Topology, Displ::NegativeEnd, Displ::NegativeEnd, false},
  };
  const long nspecs = static_cast<long>(specs.size());
  const int stride = sample_stride(3L * nspecs * 3 * 2, 4.0);
  for (int k = 0; k < 3; ++k) {
    TopoPtr t = make_topology(kinds[k]);
    for (long a = 0; a < nspecs; ++a) {
      const std::string& spec = specs[static_cast<std::size_t>(a)];
      if (!runnable(*t, spec)) continue;
      for (int c = 0; c < 3; ++c) {
        const long combo = ((k * nspecs + a) * 3 + c) * 2 + 800000;
        const int key = static_cast<int>(combo % 100000);
        // When sampling, every algorithm still runs persistent on one configuration and
        // blocking on another, rotating over the topologies.
        if ((k == a % 3 && c == (a + 1) % 3) || sampled(combo, stride)) {
          run_persistent(*t, spec, configs[c], key, 3);
        }
        if ((k == (a + 1) % 3 && c == a % 3) || sampled(combo + 1, stride)) {
          run_blocking(*t, spec, configs[c], key + 1);
        }
      }
    }
  }
}

// Zero counts everywhere with a null send or receive buffer: legal, moves nothing.
TEST(NeighborEdge, ZeroCountsNullBuffers) {
  const std::vector<std::string> specs = edge_specs(4, 2.0, 3, 1);
  TopoPtr t = make_topology(Kind::GraphMulti);
  if (!t->member()) return;
  const int deg = std::max(t->indegree(), t->outdegree()) + 1;
  std::vector<int> zeros(static_cast<std::size_t>(deg), 0);
  int dummy = 42;
  for (const std::string& spec : specs) {
    SCOPED_TRACE("algorithm '" + spec + "'");
    MPI_Info info = algorithm_info(spec);
    MPIX_Request req = MPIX_REQUEST_NULL;
    int rc = MPIX_Neighbor_alltoallv_init(nullptr, zeros.data(), zeros.data(), MPI_INT, &dummy,
                                          zeros.data(), zeros.data(), MPI_INT, t->comm, info, &req);
    EXPECT_EQ(rc, MPI_SUCCESS) << error_string(rc);
    if (rc == MPI_SUCCESS) {
      for (int i = 0; i < 2; ++i) complete(&req, i, "cycle " + std::to_string(i));
      EXPECT_EQ(MPIX_Request_free(&req), MPI_SUCCESS);
    }
    rc = MPIX_Neighbor_alltoall_init(&dummy, 0, MPI_INT, nullptr, 0, MPI_INT, t->comm, info, &req);
    EXPECT_EQ(rc, MPI_SUCCESS) << error_string(rc);
    if (rc == MPI_SUCCESS) {
      complete(&req, 0, "cycle");
      EXPECT_EQ(MPIX_Request_free(&req), MPI_SUCCESS);
    }
    if (info != MPI_INFO_NULL) MPI_Info_free(&info);
    ScopedCommAlgorithm sel(t->comm, kCollective, spec);
    rc = MPIX_Neighbor_alltoallv(&dummy, zeros.data(), zeros.data(), MPI_INT, nullptr, zeros.data(),
                                 zeros.data(), MPI_INT, t->comm);
    EXPECT_EQ(rc, MPI_SUCCESS) << error_string(rc);
    rc = MPIX_Neighbor_alltoall(nullptr, 0, MPI_INT, &dummy, 0, MPI_INT, t->comm);
    EXPECT_EQ(rc, MPI_SUCCESS) << error_string(rc);
    EXPECT_EQ(dummy, 42);
  }
}

// The user's datatypes may be freed right after init (the request keeps what it needs).
TEST(NeighborEdge, TypesFreedAfterInit) {
  const std::vector<std::string> specs = edge_specs(2, 2.0, 4, 1);
  TopoPtr t = make_topology(Kind::Cart2x2xK);
  if (!t->member()) return;
  for (const std::string& spec : specs) {
    if (!runnable(*t, spec)) continue;
    SCOPED_TRACE("algorithm '" + spec + "'");
    const Config c{&kTypes[kVecToInt], Pattern::Directional, Displ::ReverseGaps,
                   Displ::ShuffledGaps, false};
    Buffers b;
    make_buffers(*t, c, &b);
    MPI_Datatype st, rt;
    MPI_Type_dup(b.slay.type(), &st);
    MPI_Type_dup(b.rlay.type(), &rt);
    MPI_Info info = algorithm_info(spec);
    MPIX_Request req = MPIX_REQUEST_NULL;
    const int rc = MPIX_Neighbor_alltoallv_init(b.sbuf->ptr(), b.sbuf->counts(), b.sbuf->displs(),
                                                st, b.rbuf->ptr(), b.rbuf->counts(),
                                                b.rbuf->displs(), rt, t->comm, info, &req);
    if (info != MPI_INFO_NULL) MPI_Info_free(&info);
    MPI_Type_free(&st);
    MPI_Type_free(&rt);
    ASSERT_EQ(rc, MPI_SUCCESS) << error_string(rc);
    for (int i = 0; i < 5; ++i) {
      b.sbuf->fill(t->me, 300 + i);
      b.rbuf->poison(0x77);
      complete(&req, i, "cycle " + std::to_string(i));
      b.rbuf->check(t->me, t->from, 300 + i, "cycle " + std::to_string(i));
    }
    EXPECT_EQ(MPIX_Request_free(&req), MPI_SUCCESS);
  }
}

// The same for the w form, on an irregular graph: every block's datatype a duplicate, freed
// right after init (and the type arrays with them).
TEST(NeighborEdge, TypesFreedAfterInitW) {
  const std::vector<std::string> specs = edge_specs(2, 2.0, 5, 1);
  TopoPtr t = make_topology(Kind::SpmvRandom);
  if (!t->member()) return;
  const Config c{nullptr, Pattern::Varied, Displ::ShuffledGaps, Displ::ReverseGaps, false, true, 2};
  for (const std::string& spec : specs) {
    if (!runnable_w(*t, spec)) continue;
    SCOPED_TRACE("algorithm '" + spec + "'");
    Buffers b;
    make_buffers(*t, c, &b);
    std::vector<MPI_Datatype> st(static_cast<std::size_t>(t->outdegree()) + 1, MPI_INT);
    std::vector<MPI_Datatype> rt(static_cast<std::size_t>(t->indegree()) + 1, MPI_INT);
    for (int j = 0; j < t->outdegree(); ++j)
      MPI_Type_dup(b.sbuf->types()[j], &st[static_cast<std::size_t>(j)]);
    for (int i = 0; i < t->indegree(); ++i)
      MPI_Type_dup(b.rbuf->types()[i], &rt[static_cast<std::size_t>(i)]);
    MPI_Info info = algorithm_info(spec);
    MPIX_Request req = MPIX_REQUEST_NULL;
    const int rc = MPIX_Neighbor_alltoallw_init(
        b.sbuf->ptr(), b.sbuf->counts(), b.sbuf->byte_displs(), st.data(), b.rbuf->ptr(),
        b.rbuf->counts(), b.rbuf->byte_displs(), rt.data(), t->comm, info, &req);
    if (info != MPI_INFO_NULL) MPI_Info_free(&info);
    for (int j = 0; j < t->outdegree(); ++j) MPI_Type_free(&st[static_cast<std::size_t>(j)]);
    for (int i = 0; i < t->indegree(); ++i) MPI_Type_free(&rt[static_cast<std::size_t>(i)]);
    ASSERT_EQ(rc, MPI_SUCCESS) << error_string(rc);
    for (int i = 0; i < 3; ++i) {
      b.sbuf->fill(t->me, 400 + i);
      b.rbuf->poison(0x78);
      complete(&req, i, "cycle " + std::to_string(i));
      b.rbuf->check(t->me, t->from, 400 + i, "cycle " + std::to_string(i));
    }
    EXPECT_EQ(MPIX_Request_free(&req), MPI_SUCCESS);
  }
}

// ------------------------------------------------------------------------------------------
// A real halo exchange: y = A x for distributed sparse matrices, x changing between starts,
// checked against y computed here from the whole matrix.
// ------------------------------------------------------------------------------------------
TEST(NeighborSpMV, HaloExchangeProducts) {
  const int P = comm_size(MPI_COMM_WORLD), me = comm_rank(MPI_COMM_WORLD);
  long rotate = 0;
  const bool slow = sample_stride(45, 3.0) > 1;
  for (const char* kind : {"laplace2d", "random", "laplace1d"}) {
    if (slow && std::strcmp(kind, "laplace1d") == 0) break;
    const std::vector<std::string> specs = edge_specs(3, 2.0, rotate++, 1);
    const SpMV m = make_spmv(kind, P);
    TopoPtr t = make_spmv_topo(MPI_COMM_WORLD, m);
    const int lo = m.lo[static_cast<std::size_t>(me)], hi = m.lo[static_cast<std::size_t>(me) + 1];
    // Send block j: x at the columns dst j needs from me; receive block i: what I need from src i.
    std::vector<int> sc, sd, rc, rd;
    std::vector<int> send_cols, recv_cols;
    for (int d : t->my_dst()) {
      const auto& cols = m.needs[static_cast<std::size_t>(d)].at(me);
      sd.push_back(static_cast<int>(send_cols.size()));
      sc.push_back(static_cast<int>(cols.size()));
      send_cols.insert(send_cols.end(), cols.begin(), cols.end());
    }
    for (int s : t->my_src()) {
      const auto& cols = m.needs[static_cast<std::size_t>(me)].at(s);
      rd.push_back(static_cast<int>(recv_cols.size()));
      rc.push_back(static_cast<int>(cols.size()));
      recv_cols.insert(recv_cols.end(), cols.begin(), cols.end());
    }
    sc.push_back(0);
    sd.push_back(0);
    rc.push_back(0);
    rd.push_back(0);
    std::vector<double> sendv(send_cols.size() + 1), halo(recv_cols.size() + 1);
    std::map<int, std::size_t> halo_at;
    for (std::size_t i = 0; i < recv_cols.size(); ++i) halo_at[recv_cols[i]] = i;
    auto xval = [](int c, int it) { return static_cast<double>((c * 37 + it * 11) % 101) - 50.0; };
    for (const std::string& spec : specs) {
      SCOPED_TRACE(std::string("spmv ") + kind + ", algorithm '" + spec + "'");
      MPI_Info info = algorithm_info(spec);
      MPIX_Request req = MPIX_REQUEST_NULL;
      const int rcode =
          MPIX_Neighbor_alltoallv_init(sendv.data(), sc.data(), sd.data(), MPI_DOUBLE, halo.data(),
                                       rc.data(), rd.data(), MPI_DOUBLE, t->comm, info, &req);
      if (info != MPI_INFO_NULL) MPI_Info_free(&info);
      ASSERT_EQ(rcode, MPI_SUCCESS) << error_string(rcode);
      for (int it = 0; it < 5; ++it) {
        for (std::size_t i = 0; i < send_cols.size(); ++i) sendv[i] = xval(send_cols[i], it);
        std::fill(halo.begin(), halo.end(), 1e300);
        complete(&req, it, "product " + std::to_string(it));
        long bad = 0;
        for (int row = lo; row < hi; ++row) {
          double y = 0.0, want = 0.0;
          const auto& cols = m.cols[static_cast<std::size_t>(row)];
          const auto& vals = m.vals[static_cast<std::size_t>(row)];
          for (std::size_t k = 0; k < cols.size(); ++k) {
            const int c = cols[k];
            const double x = (c >= lo && c < hi) ? xval(c, it) : halo[halo_at.at(c)];
            y += vals[k] * x;
            want += vals[k] * xval(c, it);
          }
          if (y != want) {
            if (bad++ < 3)
              ADD_FAILURE() << "product " << it << " row " << row << ": " << y << " != " << want;
          }
        }
        EXPECT_EQ(bad, 0) << "rank " << me << " product " << it;
      }
      EXPECT_EQ(MPIX_Request_free(&req), MPI_SUCCESS);
    }
  }
}

// ------------------------------------------------------------------------------------------
// Traffic: MPIX_Request_get_traffic per algorithm; node-aware combining never sends more
// inter-node messages than direct, and strictly fewer for a 2D stencil at 16 ranks with 4
// ranks per node (several edges cross each node pair).
// ------------------------------------------------------------------------------------------
int env_ppn() {
  const char* loc = std::getenv("MPIX_LOCALITY");
  if (!loc || std::strncmp(loc, "ppn:", 4) != 0) return 0;
  if (std::strchr(loc, ',')) return 0;  // roundrobin
  return std::atoi(loc + 4);
}

struct Traffic {
  MPI_Count messages = -2, bytes = -2, inter_messages = -2, inter_bytes = -2;
};

Traffic traffic_of(const Topo& t, const std::string& spec, const Config& c, bool* ok) {
  Traffic tr;
  Buffers b;
  make_buffers(t, c, &b);
  MPI_Info info = algorithm_info(spec);
  MPIX_Request req = MPIX_REQUEST_NULL;
  int rc = init_call(b, c, t, info, &req);
  if (info != MPI_INFO_NULL) MPI_Info_free(&info);
  EXPECT_EQ(rc, MPI_SUCCESS) << spec << " init: " << error_string(rc);
  *ok = rc == MPI_SUCCESS;
  if (rc != MPI_SUCCESS) return tr;
  rc = MPIX_Request_get_traffic(req, &tr.messages, &tr.bytes, &tr.inter_messages, &tr.inter_bytes);
  EXPECT_EQ(rc, MPI_SUCCESS) << spec << " MPIX_Request_get_traffic: " << error_string(rc);
  b.sbuf->fill(t.me, 77);
  complete(&req, 0, spec + " cycle");
  b.rbuf->check(t.me, t.from, 77, spec + " receive buffer");
  EXPECT_EQ(MPIX_Request_free(&req), MPI_SUCCESS);
  return tr;
}

long long sum_over(MPI_Comm comm, MPI_Count v) {
  long long in = static_cast<long long>(v), out = 0;
  MPI_Allreduce(&in, &out, 1, MPI_LONG_LONG, MPI_SUM, comm);
  return out;
}

TEST(NeighborTraffic, LocalityCombinesInterNodeMessages) {
  const int P = comm_size(MPI_COMM_WORLD);
  const int ppn = env_ppn();
  const Config c{&kTypes[kInt], Pattern::Uniform, Displ::Ascending, Displ::Ascending, false};
  const bool slow = sample_stride(12, 3.0) > 1;
  for (Kind kind : {Kind::Cart1dPeriodic, Kind::Cart2dPeriodic, Kind::SpmvLaplace2d}) {
    if (slow && kind != Kind::Cart2dPeriodic && ppn == 0) continue;
    // Without MPIX_Comm_locality before init the node counts may be unknown (-1): the
    // library computes the locality in every persistent init, so in fact they are known.
    {
      TopoPtr fresh = make_topology(kind);
      bool ok = false;
      const Traffic d = traffic_of(*fresh, "direct", c, &ok);
      if (ok) {
        EXPECT_GE(d.inter_messages, -1) << fresh->name;
        EXPECT_EQ(d.inter_messages == -1, d.inter_bytes == -1) << fresh->name;
        EXPECT_GE(d.messages, 0) << fresh->name;
        EXPECT_GE(d.bytes, 0) << fresh->name;
      }
      if (std::find(registry_n().begin(), registry_n().end(), "system") != registry_n().end() &&
          !fresh->degenerate) {
        const Traffic s = traffic_of(*fresh, "system", c, &ok);
        if (ok) {
          EXPECT_EQ(s.messages, -1) << "system does not know its traffic";
          EXPECT_EQ(s.bytes, -1);
          EXPECT_EQ(s.inter_messages, -1);
          EXPECT_EQ(s.inter_bytes, -1);
        }
      }
    }
    TopoPtr t = make_topology(kind);
    SCOPED_TRACE(t->name + (ppn ? ", MPIX_LOCALITY=ppn:" + std::to_string(ppn) : std::string()));
    int node = -1, nnodes = -1, lrank = -1, lsize = -1;
    int rc = MPIX_Comm_locality(t->comm, &node, &nnodes, &lrank, &lsize);
    ASSERT_EQ(rc, MPI_SUCCESS) << "MPIX_Comm_locality: " << error_string(rc);
    // The node of every rank (from the emulation when there is one, else from the library).
    std::vector<int> node_of(static_cast<std::size_t>(t->size));
    for (int r = 0; r < t->size; ++r) {
      int nd = -1, lr = -1;
      rc = MPIX_Comm_rank_locality(t->comm, r, &nd, &lr, nullptr, nullptr);
      EXPECT_EQ(rc, MPI_SUCCESS);
      node_of[static_cast<std::size_t>(r)] = nd;
      if (ppn > 0) {
        // Nodes are numbered by their lowest rank in comm.
        std::map<int, int> number;
        for (int q = 0; q < t->size; ++q) {
          const int wn = t->world_of[static_cast<std::size_t>(q)] / ppn;
          if (!number.count(wn)) number[wn] = static_cast<int>(number.size());
        }
        EXPECT_EQ(nd, number[t->world_of[static_cast<std::size_t>(r)] / ppn])
            << "node of rank " << r;
      }
    }
    // Direct: one message per edge with data; its inter-node part is exactly the edges to
    // ranks on other nodes.
    long long edge_msgs = 0, edge_bytes = 0, self_msgs = 0, self_bytes = 0, all_msgs = 0,
              all_bytes = 0;
    for (int j = 0; j < t->outdegree(); ++j) {
      const int d = t->my_dst()[static_cast<std::size_t>(j)];
      if (d == MPI_PROC_NULL) continue;
      const long long bytes = 2LL * static_cast<long long>(sizeof(int));
      ++all_msgs;
      all_bytes += bytes;
      if (d == t->me) {
        ++self_msgs;
        self_bytes += bytes;
      }
      if (node_of[static_cast<std::size_t>(d)] != node) {
        ++edge_msgs;
        edge_bytes += bytes;
      }
    }
    bool ok_d = false, ok_l = false;
    const Traffic d = traffic_of(*t, "direct", c, &ok_d);
    const Traffic l = traffic_of(*t, "locality", c, &ok_l);
    ASSERT_TRUE(ok_d && ok_l);
    EXPECT_EQ(d.inter_messages, edge_msgs) << "direct: inter-node messages of rank " << t->me;
    EXPECT_EQ(d.inter_bytes, edge_bytes) << "direct: inter-node bytes of rank " << t->me;
    EXPECT_GE(d.messages, all_msgs - self_msgs) << "direct: messages";
    EXPECT_LE(d.messages, all_msgs) << "direct: messages";
    EXPECT_GE(d.bytes, all_bytes - self_bytes) << "direct: bytes";
    EXPECT_LE(d.bytes, all_bytes) << "direct: bytes";
    EXPECT_GE(l.inter_messages, 0) << "locality must know its inter-node traffic";
    EXPECT_LE(l.inter_messages, l.messages);
    EXPECT_LE(l.inter_bytes, l.bytes);
    const long long dsum = sum_over(t->comm, d.inter_messages);
    const long long lsum = sum_over(t->comm, l.inter_messages);
    const long long dbytes = sum_over(t->comm, d.inter_bytes);
    const long long lbytes = sum_over(t->comm, l.inter_bytes);
    EXPECT_LE(lsum, dsum) << "inter-node messages summed over ranks: locality " << lsum
                          << ", direct " << dsum;
    // Every byte that crosses nodes with direct crosses them once with locality too.
    EXPECT_GE(lbytes, dbytes) << "locality must still carry every inter-node byte";
    if (kind == Kind::Cart2dPeriodic && P == 16 && ppn == 4) {
      EXPECT_LT(lsum, dsum) << "4x4 periodic stencil on 4 nodes of 4: 8 edges per node pair";
    }
    // locality_partial lies between them: at min_edges 1 and rank_edges 0 it is locality on
    // every rank, at threshold 0 every off-node edge goes straight (one message per off-node
    // destination, duplicate edges sharing it), at its defaults some node pairs each way.
    std::set<int> off_node;
    for (int d : t->my_dst())
      if (d != MPI_PROC_NULL && node_of[static_cast<std::size_t>(d)] != node) off_node.insert(d);
    for (const char* spec : {"locality_partial", "locality_partial:min_edges=1,rank_edges=0",
                             "locality_partial:threshold=0"}) {
      bool ok_p = false;
      const Traffic p = traffic_of(*t, spec, c, &ok_p);
      ASSERT_TRUE(ok_p) << spec;
      const long long psum = sum_over(t->comm, p.inter_messages);
      EXPECT_LE(lsum, psum) << spec;
      EXPECT_LE(psum, dsum) << spec;
      EXPECT_GE(sum_over(t->comm, p.inter_bytes), dbytes) << spec;
      if (std::string(spec) == "locality_partial:min_edges=1,rank_edges=0") {
        EXPECT_EQ(p.inter_messages, l.inter_messages) << spec << " on rank " << t->me;
        EXPECT_EQ(p.messages, l.messages) << spec << " on rank " << t->me;
      }
      if (std::string(spec) == "locality_partial:threshold=0") {
        EXPECT_EQ(p.inter_messages, static_cast<MPI_Count>(off_node.size()))
            << spec << " on rank " << t->me;
      }
    }
    if (comm_rank(t->comm) == 0) {
      std::printf(
          "[   MPI    ] %s: inter-node messages direct %lld, locality %lld; bytes %lld, %lld\n",
          t->name.c_str(), dsum, lsum, dbytes, lbytes);
    }
  }
}

#ifdef MPIA_NEIGHBOR_VIA_TOPO
// ------------------------------------------------------------------------------------------
// MPIX_Topo's own rules.
// ------------------------------------------------------------------------------------------
// code's class is want on this rank, and the same on every rank of comm.
void expect_class_everywhere(MPI_Comm comm, int code, int want, const std::string& what) {
  const int cls = error_class(code);
  EXPECT_EQ(cls, want) << what << ": " << error_string(code);
  int lo = 0, hi = 0;
  MPI_Allreduce(&cls, &lo, 1, MPI_INT, MPI_MIN, comm);
  MPI_Allreduce(&cls, &hi, 1, MPI_INT, MPI_MAX, comm);
  EXPECT_EQ(lo, hi) << what << ": the ranks fail with different classes";
}

// A ring: this rank receives from me-1 and sends to me+1 (step -1: the other way round).
struct Ring {
  std::vector<int> src, dst;
  Ring(int me, int P, int step) : src{(me - step + 2 * P) % P}, dst{(me + step + 2 * P) % P} {}
};

TEST(NeighborTopo, CreateErrorsOnEveryRank) {
  MPI_Comm world = MPI_COMM_WORLD;
  const int P = comm_size(world), me = comm_rank(world);
  ScopedErrhandler eh(world, MPI_ERRORS_RETURN);
  struct Case {
    const char* what;
    int want;
    std::function<void(std::vector<int>& src, std::vector<int>& dst, int& indeg, bool& null_src,
                       std::string& info, bool& null_topo)>
        edit;
  };
  const int last = P - 1;
  const std::vector<Case> cases = {
      {"negative indegree on rank 0", MPI_ERR_ARG,
       [&](auto&, auto&, int& indeg, bool&, auto&, bool&) {
         if (me == 0) indeg = -1;
       }},
      {"a destination out of range on the last rank", MPI_ERR_ARG,
       [&](auto&, auto& dst, int&, bool&, auto&, bool&) {
         if (me == last) dst[0] = P;
       }},
      {"MPI_PROC_NULL as a source on the last rank", MPI_ERR_ARG,
       [&](auto& src, auto&, int&, bool&, auto&, bool&) {
         if (me == last) src[0] = MPI_PROC_NULL;
       }},
      {"NULL sources with indegree 1 on rank 0", MPI_ERR_ARG,
       [&](auto&, auto&, int&, bool& null_src, auto&, bool&) { null_src = me == 0; }},
      {"an edge its destination does not list (rank 0 to itself)", MPI_ERR_ARG,
       [&](auto&, auto& dst, int&, bool&, auto&, bool&) {
         if (me == 0) dst.push_back(0);
       }},
      {"a source that does not send (the last rank from itself)", MPI_ERR_ARG,
       [&](auto& src, auto&, int&, bool&, auto&, bool&) {
         if (me == last) src.push_back(last);
       }},
      {"an unknown algorithm in info", MPI_ERR_INFO_VALUE,
       [&](auto&, auto&, int&, bool&, std::string& info, bool&) { info = "no_such_algorithm"; }},
      {"different algorithms in info", MPI_ERR_ARG,
       [&](auto&, auto&, int&, bool&, std::string& info, bool&) {
         info = me == 0 ? "direct" : "locality";
       }},
      {"topo pointer NULL on the last rank", MPI_ERR_ARG,
       [&](auto&, auto&, int&, bool&, auto&, bool& null_topo) { null_topo = me == last; }},
  };
  for (const Case& c : cases) {
    if (P == 1 && std::string(c.what) == "different algorithms in info") continue;
    Ring r(me, P, 1);
    int indeg = 1;
    bool null_src = false, null_topo = false;
    std::string text;
    c.edit(r.src, r.dst, indeg, null_src, text, null_topo);
    if (indeg >= 0 && indeg != static_cast<int>(r.src.size()))
      indeg = static_cast<int>(r.src.size());
    MPI_Info info = algorithm_info(text);
    MPIX_Topo x = MPIX_TOPO_NULL;
    const int code = MPIX_Topo_create(world, indeg, null_src ? nullptr : r.src.data(),
                                      static_cast<int>(r.dst.size()), r.dst.data(), info,
                                      null_topo ? nullptr : &x);
    if (info != MPI_INFO_NULL) MPI_Info_free(&info);
    expect_class_everywhere(world, code, c.want, c.what);
    EXPECT_EQ(x, MPIX_TOPO_NULL) << c.what;
    if (x != MPIX_TOPO_NULL) MPIX_Topo_free(&x);
  }
  // The handle's own errors are raised on MPI_COMM_SELF.
  ScopedErrhandler self(MPI_COMM_SELF, MPI_ERRORS_RETURN);
  EXPECT_EQ(error_class(MPIX_Topo_free(nullptr)), MPI_ERR_ARG);
  MPIX_Topo none = MPIX_TOPO_NULL;
  EXPECT_EQ(MPIX_Topo_free(&none), MPI_SUCCESS) << "freeing MPIX_TOPO_NULL is a no-op";
  int sbuf = 0, rbuf = 0, one = 1, zero = 0;
  EXPECT_EQ(error_class(MPIX_Neighbor_alltoallv_topo(&sbuf, &one, &zero, MPI_INT, &rbuf, &one,
                                                     &zero, MPI_INT, MPIX_TOPO_NULL)),
            MPI_ERR_TOPOLOGY);
  MPIX_Request req = MPIX_REQUEST_NULL;
  EXPECT_EQ(
      error_class(MPIX_Neighbor_alltoallv_topo_init(&sbuf, &one, &zero, MPI_INT, &rbuf, &one, &zero,
                                                    MPI_INT, MPIX_TOPO_NULL, MPI_INFO_NULL, &req)),
      MPI_ERR_TOPOLOGY);
  EXPECT_EQ(req, MPIX_REQUEST_NULL);
}

// Argument errors of the calls on a valid object: agreed like the communicator's.
TEST(NeighborTopo, CallErrorsOnEveryRank) {
  MPI_Comm world = MPI_COMM_WORLD;
  const int P = comm_size(world), me = comm_rank(world);
  ScopedErrhandler eh(world, MPI_ERRORS_RETURN);
  const Ring r(me, P, 1);
  MPIX_Topo x = MPIX_TOPO_NULL;
  ASSERT_EQ(MPIX_Topo_create(world, 1, r.src.data(), 1, r.dst.data(), MPI_INFO_NULL, &x),
            MPI_SUCCESS);
  int sbuf[4] = {1, 2, 3, 4}, rbuf[4] = {0, 0, 0, 0}, zero = 0;
  const int two = 2;
  // The receiver of rank 0's edge expects 1 int where rank 0 sends 2.
  const int recvs = me == (1 % P) ? 1 : 2;
  MPIX_Request req = MPIX_REQUEST_NULL;
  int code = MPIX_Neighbor_alltoallv_topo_init(sbuf, &two, &zero, MPI_INT, rbuf, &recvs, &zero,
                                               MPI_INT, x, MPI_INFO_NULL, &req);
  expect_class_everywhere(world, code, MPI_ERR_TRUNCATE, "an edge's sizes differ");
  EXPECT_EQ(req, MPIX_REQUEST_NULL);
  code = MPIX_Neighbor_alltoallv_topo_init(sbuf, &two, &zero, me == 0 ? MPI_DATATYPE_NULL : MPI_INT,
                                           rbuf, &two, &zero, MPI_INT, x, MPI_INFO_NULL, &req);
  expect_class_everywhere(world, code, MPI_ERR_TYPE, "MPI_DATATYPE_NULL on rank 0");
  EXPECT_EQ(req, MPIX_REQUEST_NULL);
  MPI_Info info = algorithm_info("no_such_algorithm");
  code = MPIX_Neighbor_alltoallv_topo_init(sbuf, &two, &zero, MPI_INT, rbuf, &two, &zero, MPI_INT,
                                           x, info, &req);
  MPI_Info_free(&info);
  expect_class_everywhere(world, code, MPI_ERR_INFO_VALUE, "an unknown algorithm");
  code = MPIX_Neighbor_alltoallv_topo(MPI_IN_PLACE, &two, &zero, MPI_INT, rbuf, &two, &zero,
                                      MPI_INT, x);
  expect_class_everywhere(world, code, MPI_ERR_BUFFER, "MPI_IN_PLACE");
  // The object still works after the errors.
  code = MPIX_Neighbor_alltoallv_topo(sbuf, &two, &zero, MPI_INT, rbuf, &two, &zero, MPI_INT, x);
  EXPECT_EQ(code, MPI_SUCCESS) << error_string(code);
  EXPECT_EQ(rbuf[0], 1);
  EXPECT_EQ(rbuf[1], 2);
  EXPECT_EQ(MPIX_Topo_free(&x), MPI_SUCCESS);
}

// Requests keep what they run on: the object is freed while they are active, and again while
// they are inactive (other requests), and they run on, every start checked.
TEST(NeighborTopo, FreedWhileRequestsRun) {
  TopoPtr t = make_topology(Kind::DistAdjRandom);
  const Config c{&kTypes[kVecToInt], Pattern::Varied, Displ::ShuffledGaps, Displ::ReverseGaps,
                 false};
  std::vector<std::string> specs;
  for (const std::string& spec : specs_to_run())
    if (runnable(*t, spec)) specs.push_back(spec);
  MPIX_Topo x = make_xtopo(*t, "");
  std::vector<std::unique_ptr<Buffers>> bufs;
  std::vector<MPIX_Request> reqs;
  for (const std::string& spec : specs) {
    bufs.emplace_back(new Buffers);
    make_buffers(*t, c, bufs.back().get());
    MPI_Info info = algorithm_info(spec);
    reqs.push_back(MPIX_REQUEST_NULL);
    EXPECT_EQ(init_call(*bufs.back(), c, *t, info, &reqs.back(), x), MPI_SUCCESS) << spec;
    if (info != MPI_INFO_NULL) MPI_Info_free(&info);
  }
  for (int cycle = 0; cycle < 3; ++cycle) {
    for (std::size_t i = 0; i < reqs.size(); ++i) {
      bufs[i]->sbuf->fill(t->me, 300 + cycle * 10 + static_cast<int>(i));
      bufs[i]->rbuf->poison(0x22);
      EXPECT_EQ(MPIX_Start(&reqs[i]), MPI_SUCCESS);
    }
    if (cycle == 0) {
      EXPECT_EQ(MPIX_Topo_free(&x), MPI_SUCCESS) << "freed while its requests are active";
      EXPECT_EQ(x, MPIX_TOPO_NULL);
    }
    for (std::size_t i = reqs.size(); i-- > 0;) {
      EXPECT_EQ(MPIX_Wait(&reqs[i], MPI_STATUS_IGNORE), MPI_SUCCESS);
      bufs[i]->rbuf->check(t->me, t->from, 300 + cycle * 10 + static_cast<int>(i),
                           "cycle " + std::to_string(cycle) + ", algorithm '" + specs[i] + "'");
    }
  }
  for (std::size_t i = 0; i < reqs.size(); ++i) {
    char name[MPIX_MAX_ALGORITHM_STRING];
    int len = 0;
    EXPECT_EQ(MPIX_Request_get_algorithm(reqs[i], name, &len), MPI_SUCCESS);
    EXPECT_EQ(MPIX_Request_free(&reqs[i]), MPI_SUCCESS);
  }
}

int g_self_errors = 0, g_self_class = MPI_SUCCESS;
void count_self_errors(MPI_Comm*, int* code, ...) {
  ++g_self_errors;
  g_self_class = error_class(*code);
}

// The object keeps a duplicate of its communicator: the user may free that first. Errors are
// raised on the communicator while it lives, then on MPI_COMM_SELF.
TEST(NeighborTopo, OutlivesItsCommunicator) {
  const int P = comm_size(MPI_COMM_WORLD), me = comm_rank(MPI_COMM_WORLD);
  MPI_Comm d;
  MPI_Comm_dup(MPI_COMM_WORLD, &d);
  MPI_Comm_set_errhandler(d, MPI_ERRORS_RETURN);
  const Ring r(me, P, 1);
  MPIX_Topo x = MPIX_TOPO_NULL;
  ASSERT_EQ(MPIX_Topo_create(d, 1, r.src.data(), 1, r.dst.data(), MPI_INFO_NULL, &x), MPI_SUCCESS);
  int sbuf[3], rbuf[3];
  const int three = 3, zero = 0;
  MPIX_Request req = MPIX_REQUEST_NULL;
  ASSERT_EQ(MPIX_Neighbor_alltoallv_topo_init(sbuf, &three, &zero, MPI_INT, rbuf, &three, &zero,
                                              MPI_INT, x, MPI_INFO_NULL, &req),
            MPI_SUCCESS);
  MPI_Comm_free(&d);
  MPI_Errhandler counting;
  MPI_Comm_create_errhandler(count_self_errors, &counting);
  ScopedErrhandler self(MPI_COMM_SELF, counting);
  for (int i = 0; i < 3; ++i) {
    for (int k = 0; k < 3; ++k) sbuf[k] = me * 100 + i * 10 + k;
    std::fill(rbuf, rbuf + 3, -1);
    if (i == 1) {
      EXPECT_EQ(MPIX_Start(&req), MPI_SUCCESS);
      EXPECT_EQ(MPIX_Wait(&req, MPI_STATUS_IGNORE), MPI_SUCCESS);
    } else {
      EXPECT_EQ(MPIX_Neighbor_alltoallv_topo(sbuf, &three, &zero, MPI_INT, rbuf, &three, &zero,
                                             MPI_INT, x),
                MPI_SUCCESS);
    }
    for (int k = 0; k < 3; ++k) EXPECT_EQ(rbuf[k], r.src[0] * 100 + i * 10 + k) << "call " << i;
  }
  EXPECT_EQ(g_self_errors, 0);
  // A blocking call's local argument error: raised on MPI_COMM_SELF now.
  const int code = MPIX_Neighbor_alltoallv_topo(sbuf, &three, &zero, MPI_DATATYPE_NULL, rbuf,
                                                &three, &zero, MPI_INT, x);
  EXPECT_EQ(error_class(code), MPI_ERR_TYPE);
  EXPECT_EQ(g_self_errors, 1) << "the error must be raised on MPI_COMM_SELF";
  EXPECT_EQ(g_self_class, MPI_ERR_TYPE);
  EXPECT_EQ(MPIX_Request_free(&req), MPI_SUCCESS);
  EXPECT_EQ(MPIX_Topo_free(&x), MPI_SUCCESS);
  MPI_Errhandler_free(&counting);
}

// Two objects on one communicator, called in turn with the very same arguments: each has its
// own plans (a plan of one must never run for the other).
TEST(NeighborTopo, SeveralObjectsOnOneCommunicator) {
  MPI_Comm world = MPI_COMM_WORLD;
  const int P = comm_size(world), me = comm_rank(world);
  const Ring fwd(me, P, 1), bwd(me, P, -1);
  for (const std::string& spec : specs_to_run()) {
    SCOPED_TRACE("algorithm '" + spec + "'");
    MPI_Info info = algorithm_info(spec);
    MPIX_Topo a = MPIX_TOPO_NULL, b = MPIX_TOPO_NULL;
    ASSERT_EQ(MPIX_Topo_create(world, 1, fwd.src.data(), 1, fwd.dst.data(), info, &a), MPI_SUCCESS);
    ASSERT_EQ(MPIX_Topo_create(world, 1, bwd.src.data(), 1, bwd.dst.data(), info, &b), MPI_SUCCESS);
    if (info != MPI_INFO_NULL) MPI_Info_free(&info);
    int sbuf[2], rbuf[2];
    const int two = 2, zero = 0;
    for (int i = 0; i < 6; ++i) {
      const bool first = i % 2 == 0;
      sbuf[0] = me * 1000 + i;
      sbuf[1] = -sbuf[0];
      rbuf[0] = rbuf[1] = 7;
      const int code = MPIX_Neighbor_alltoallv_topo(sbuf, &two, &zero, MPI_INT, rbuf, &two, &zero,
                                                    MPI_INT, first ? a : b);
      EXPECT_EQ(code, MPI_SUCCESS) << error_string(code);
      const int from = (first ? fwd : bwd).src[0];
      EXPECT_EQ(rbuf[0], from * 1000 + i) << "call " << i;
      EXPECT_EQ(rbuf[1], -(from * 1000 + i)) << "call " << i;
    }
    EXPECT_EQ(MPIX_Topo_free(&a), MPI_SUCCESS);
    EXPECT_EQ(MPIX_Topo_free(&b), MPI_SUCCESS);
  }
}

// What an object's inits run without the info key: its creation info, else the communicator's
// MPIX_Comm_set_algorithm choice at creation (kept when the communicator's changes later).
TEST(NeighborTopo, ReportsAndInheritsTheAlgorithm) {
  MPI_Comm world = MPI_COMM_WORLD;
  const int P = comm_size(world), me = comm_rank(world);
  const Ring r(me, P, 1);
  int sbuf = me, rbuf = -1;
  const int one = 1, zero = 0;
  auto reported = [&](MPIX_Topo x, const std::string& info_spec) {
    MPI_Info info = algorithm_info(info_spec);
    MPIX_Request req = MPIX_REQUEST_NULL;
    const int code = MPIX_Neighbor_alltoallv_topo_init(&sbuf, &one, &zero, MPI_INT, &rbuf, &one,
                                                       &zero, MPI_INT, x, info, &req);
    if (info != MPI_INFO_NULL) MPI_Info_free(&info);
    EXPECT_EQ(code, MPI_SUCCESS) << error_string(code);
    char name[MPIX_MAX_ALGORITHM_STRING] = "";
    int len = 0;
    MPIX_Request_get_algorithm(req, name, &len);
    rbuf = -1;
    MPIX_Start(&req);
    MPIX_Wait(&req, MPI_STATUS_IGNORE);
    EXPECT_EQ(rbuf, r.src[0]);
    MPIX_Request_free(&req);
    Spec sp;
    parse_spec(name, &sp);
    return sp.name;
  };
  MPI_Info info = algorithm_info("locality");
  MPIX_Topo x = MPIX_TOPO_NULL;
  ASSERT_EQ(MPIX_Topo_create(world, 1, r.src.data(), 1, r.dst.data(), info, &x), MPI_SUCCESS);
  MPI_Info_free(&info);
  EXPECT_EQ(reported(x, ""), "locality") << "the object's info";
  EXPECT_EQ(reported(x, "direct"), "direct") << "the init's info wins";
  EXPECT_EQ(MPIX_Topo_free(&x), MPI_SUCCESS);
  {
    ScopedCommAlgorithm sel(world, kCollective, "direct");
    ASSERT_EQ(MPIX_Topo_create(world, 1, r.src.data(), 1, r.dst.data(), MPI_INFO_NULL, &x),
              MPI_SUCCESS);
  }
  EXPECT_EQ(reported(x, ""), "direct") << "the communicator's choice at creation";
  EXPECT_EQ(MPIX_Topo_free(&x), MPI_SUCCESS);
  ASSERT_EQ(MPIX_Topo_create(world, 1, r.src.data(), 1, r.dst.data(), MPI_INFO_NULL, &x),
            MPI_SUCCESS);
  const std::string a = reported(x, "");
  EXPECT_NE(std::find(registry_n().begin(), registry_n().end(), a), registry_n().end()) << a;
  EXPECT_NE(a, "auto") << "auto reports what it chose";
  EXPECT_EQ(MPIX_Topo_free(&x), MPI_SUCCESS);
}
#endif  // MPIA_NEIGHBOR_VIA_TOPO

}  // namespace
