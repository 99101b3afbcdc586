// Progress during the library's own blocking calls (issue 9, item 2).
//
// One "late" rank starts request A, then runs some library call X that is collective (or
// becomes collective inside: a persistent init, agreement, locality, the first call on a new
// communicator, a blocking call) BEFORE waiting on A; every other rank waits on A first and
// only then calls X. That order is legal MPI (the same program with MPI_Ialltoall and
// MPI_Allreduce completes) and must complete here too: while X waits for its peers, it has to
// drive A, which the peers cannot finish without the late rank.
//
// A is a multi-round schedule (bruck, pairwise; alltoall and alltoallv) with blocks of up to
// 64 KiB (past both MPIs' eager limits): after its first round every peer needs the late
// rank's library to post the next one. With 2 ranks every algorithm is a single round, which
// the MPI library completes by itself inside X's own MPI calls: there these tests pass even
// without the library's progress; from 3 ranks up a missing progress path hangs them (the
// watchdog then ends the run in seconds, naming the test).
//
// Every case checks A's data and X's result (data, or the locality/communicator it returns)
// on every rank. The late rank is 0 or the last rank.
#include <gtest/gtest.h>

#include <cstdlib>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "thread_test_support.hpp"

using namespace mpia_thread_test;
using Kind = Exchange::Kind;

namespace {

constexpr int kBig = 16384;  // 64 KiB of 32-bit elements per block

// What every case may use. Communicators made here are freed at the end.
struct Ctx {
  MPI_Comm comm = MPI_COMM_NULL;  // A's communicator (also X's for the same-communicator cases)
  int me = 0, P = 1, late = 0;
  std::vector<MPI_Comm> owned;
  std::unique_ptr<Exchange> b;  // X's exchange, if any
  MPIX_Request breq = MPIX_REQUEST_NULL;
  MPI_Comm other = MPI_COMM_NULL;  // a second communicator
  MPI_Comm made = MPI_COMM_NULL;   // a communicator X returns
  int rc = MPI_SUCCESS;            // X's return code
  int expect_class = MPI_SUCCESS;  // what X must return on every rank
  // X's request is the MPI library's own persistent neighbor call on a periodic ring of 1 or 2
  // ranks, where Open MPI 4.1 swaps the two directions (docs/guide.md; test_neighbor.cpp's
  // runnable()): its data is not checked there.
  bool system_degenerate = false;

  MPI_Comm keep(MPI_Comm c) {
    owned.push_back(c);
    return c;
  }
};

// A case: `before` runs on every rank before A starts, `after_start` on every rank right after
// (before anyone waits), `x` is the call under test, `check` runs on every rank after both.
struct Case {
  std::string name;
  std::function<void(Ctx&)> before, after_start, x, check;
};

// Helpers for the cases.
void run_b(Ctx& c, int iter) {  // one Start/Wait of X's request, checked
  ASSERT_NE(c.breq, MPIX_REQUEST_NULL);
  c.b->prepare(iter);
  EXPECT_EQ(MPIX_Start(&c.breq), MPI_SUCCESS);
  EXPECT_EQ(MPIX_Wait(&c.breq, MPI_STATUS_IGNORE), MPI_SUCCESS);
  if (!c.system_degenerate) c.b->check(iter, "X's request");
}
void check_init_and_run(Ctx& c) {
  EXPECT_EQ(c.rc, MPI_SUCCESS) << error_text(c.rc);
  if (c.rc == MPI_SUCCESS) {
    run_b(c, 1);
    run_b(c, 2);
  }
  if (c.breq != MPIX_REQUEST_NULL) {
    EXPECT_EQ(MPIX_Request_free(&c.breq), MPI_SUCCESS);
  }
}
void check_blocking(Ctx& c) {
  EXPECT_EQ(c.rc, MPI_SUCCESS) << error_text(c.rc);
  c.b->check(0, "X's blocking call");
  // And the same call once more, now that nothing else runs.
  c.b->prepare(1);
  EXPECT_EQ(c.b->blocking(), MPI_SUCCESS);
  c.b->check(1, "X's blocking call, repeated");
}
void check_error(Ctx& c) {
  EXPECT_EQ(error_class(c.rc), c.expect_class) << error_text(c.rc);
  EXPECT_EQ(c.breq, MPIX_REQUEST_NULL);
}
void set_algorithm(MPI_Comm comm, const char* coll, const char* alg) {
  ASSERT_EQ(MPIX_Comm_set_algorithm(comm, coll, alg), MPI_SUCCESS) << coll << " " << alg;
}

// X = a persistent init of `kind` with `alg` on A's communicator (or on `other`).
Case init_case(const std::string& name, Kind kind, int count, const std::string& alg,
               bool on_other = false) {
  Case k;
  k.name = name;
  k.before = [=](Ctx& c) {
    MPI_Comm target = c.comm;
    if (kind == Kind::Ring) {
      target = c.keep(ring_of(c.comm));
      c.system_degenerate = alg == "system" && c.P <= 2;
      // The ring's first library call (topology, private duplicate) happens here, not in X.
      Exchange warm(target, Kind::Ring, 1, 99);
      warm.prepare(0);
      ASSERT_EQ(warm.blocking(), MPI_SUCCESS);
    } else if (on_other) {
      target = c.other = c.keep(dup_of(c.comm));
      int node = 0;
      ASSERT_EQ(MPIX_Comm_locality(target, &node, nullptr, nullptr, nullptr), MPI_SUCCESS);
    }
    c.b = std::make_unique<Exchange>(target, kind, count, 501);
  };
  k.x = [=](Ctx& c) { c.rc = c.b->init(alg, "", &c.breq); };
  k.check = check_init_and_run;
  return k;
}

// X = the first library call on a communicator duplicated (by the user, every rank) after A
// started: the library duplicates it and agrees on the settings inside that call.
Case first_call_case(const std::string& name, std::function<void(Ctx&)> x,
                     std::function<void(Ctx&)> check) {
  Case k;
  k.name = name;
  k.after_start = [](Ctx& c) { c.other = c.keep(dup_of(c.comm)); };
  k.x = std::move(x);
  k.check = std::move(check);
  return k;
}

// X = a blocking call of `kind` on A's communicator (or `other`) after
// MPIX_Comm_set_algorithm(alg) ("" = the default).
Case blocking_case(const std::string& name, Kind kind, int count, const std::string& alg,
                   bool on_other = false) {
  Case k;
  k.name = name;
  k.before = [=](Ctx& c) {
    MPI_Comm target = c.comm;
    if (kind == Kind::Ring)
      target = c.keep(ring_of(c.comm));
    else if (on_other)
      target = c.other = c.keep(dup_of(c.comm));
    if (!alg.empty()) {
      const char* coll = kind == Kind::Uniform   ? "alltoall"
                         : kind == Kind::Varying ? "alltoallv"
                                                 : "neighbor_alltoallv";
      set_algorithm(target, coll, alg.c_str());
    }
    c.b = std::make_unique<Exchange>(target, kind, count, 601);
    c.b->prepare(0);
  };
  k.x = [](Ctx& c) { c.rc = c.b->blocking(); };
  k.check = check_blocking;
  return k;
}

// The locality of `comm` as seen through MPIX_Comm_locality and _rank_locality of every rank,
// compared with the values `reference` (a communicator with the same group) reports.
void expect_same_locality(MPI_Comm comm, MPI_Comm reference) {
  int n1[4] = {}, n2[4] = {};
  ASSERT_EQ(MPIX_Comm_locality(comm, &n1[0], &n1[1], &n1[2], &n1[3]), MPI_SUCCESS);
  ASSERT_EQ(MPIX_Comm_locality(reference, &n2[0], &n2[1], &n2[2], &n2[3]), MPI_SUCCESS);
  for (int i = 0; i < 4; ++i) EXPECT_EQ(n1[i], n2[i]) << "locality value " << i;
  int P = 1;
  MPI_Comm_size(comm, &P);
  for (int r = 0; r < P; ++r) {
    int a[4] = {}, b[4] = {};
    ASSERT_EQ(MPIX_Comm_rank_locality(comm, r, &a[0], &a[1], &a[2], &a[3]), MPI_SUCCESS);
    ASSERT_EQ(MPIX_Comm_rank_locality(reference, r, &b[0], &b[1], &b[2], &b[3]), MPI_SUCCESS);
    for (int i = 0; i < 4; ++i) EXPECT_EQ(a[i], b[i]) << "rank " << r << ", value " << i;
  }
}

// X = MPIX_Comm_locality_split(kind): checked against MPIX_Comm_locality.
Case split_case(const std::string& name, int kind) {
  Case k;
  k.name = name;
  k.x = [kind](Ctx& c) { c.rc = MPIX_Comm_locality_split(c.comm, kind, &c.made); };
  k.check = [kind](Ctx& c) {
    ASSERT_EQ(c.rc, MPI_SUCCESS) << error_text(c.rc);
    ASSERT_NE(c.made, MPI_COMM_NULL);
    c.keep(c.made);
    // Expected: the ranks of comm on my node (NODE) or with my local rank (CROSS), in rank
    // order, from MPIX_Comm_rank_locality.
    int mine_node = 0, mine_local = 0, want_size = 0, want_rank = -1;
    ASSERT_EQ(MPIX_Comm_rank_locality(c.comm, c.me, &mine_node, &mine_local, nullptr, nullptr),
              MPI_SUCCESS);
    for (int r = 0; r < c.P; ++r) {
      int node = 0, local = 0;
      ASSERT_EQ(MPIX_Comm_rank_locality(c.comm, r, &node, &local, nullptr, nullptr), MPI_SUCCESS);
      if (kind == MPIX_LOCALITY_NODE ? node == mine_node : local == mine_local) {
        if (r == c.me) want_rank = want_size;
        ++want_size;
      }
    }
    int size = 0, rank = 0;
    MPI_Comm_size(c.made, &size);
    MPI_Comm_rank(c.made, &rank);
    EXPECT_EQ(size, want_size);
    EXPECT_EQ(rank, want_rank);
    // And it works as a communicator of the library.
    Exchange e(c.made, Kind::Uniform, 5, 801);
    e.prepare(0);
    EXPECT_EQ(e.blocking(), MPI_SUCCESS);
    e.check(0, "alltoall on the split communicator");
  };
  return k;
}

std::vector<Case> all_cases() {
  std::vector<Case> v;
  // Persistent inits (agreement, tag, locality, size exchanges, edge lists).
  v.push_back(init_case("AlltoallInit", Kind::Uniform, 300, "bruck"));
  v.push_back(init_case("AlltoallInitBig", Kind::Uniform, kBig, "pairwise"));
  v.push_back(init_case("AlltoallInitOtherComm", Kind::Uniform, 300, "tra", true));
  v.push_back(init_case("AlltoallInitSystem", Kind::Uniform, 300, "system"));
  v.push_back(init_case("AlltoallInitTra2", Kind::Uniform, 300, "tra2"));
  v.push_back(init_case("AlltoallInitAuto", Kind::Uniform, 300, ""));
  v.push_back(init_case("AlltoallvInit", Kind::Varying, 300, "pairwise"));
  v.push_back(init_case("AlltoallvInitBruck", Kind::Varying, 300, "bruck"));
  v.push_back(init_case("AlltoallvInitLocality", Kind::Varying, 300, "locality"));
  v.push_back(init_case("AlltoallvInitSystem", Kind::Varying, 300, "system"));
  v.push_back(init_case("NeighborInit", Kind::Ring, 300, "direct"));
  v.push_back(init_case("NeighborInitLocality", Kind::Ring, 300, "locality"));
  v.push_back(init_case("NeighborInitAuto", Kind::Ring, 300, ""));
  v.push_back(init_case("NeighborInitSystem", Kind::Ring, 300, "system"));
  {
    // An init whose arguments one rank rejects: the error is agreed, on every rank.
    Case k = init_case("AlltoallInitError", Kind::Uniform, 300, "bruck");
    k.x = [](Ctx& c) {
      if (c.me == c.late)
        c.rc = MPIX_Alltoall_init(c.b->send(), -1, MPI_UINT32_T, c.b->recv(), 300, MPI_UINT32_T,
                                  c.comm, MPI_INFO_NULL, &c.breq);
      else
        c.rc = c.b->init("bruck", "", &c.breq);
      c.expect_class = MPI_ERR_COUNT;
    };
    k.check = check_error;
    v.push_back(std::move(k));
  }
  // The first call on a brand-new communicator.
  v.push_back(first_call_case(
      "FirstCallBlocking",
      [](Ctx& c) {
        c.b = std::make_unique<Exchange>(c.other, Kind::Uniform, 300, 701);
        c.b->prepare(0);
        c.rc = c.b->blocking();
      },
      check_blocking));
  v.push_back(first_call_case(
      "FirstCallBlockingAlltoallv",
      [](Ctx& c) {
        c.b = std::make_unique<Exchange>(c.other, Kind::Varying, 300, 702);
        c.b->prepare(0);
        c.rc = c.b->blocking();
      },
      check_blocking));
  v.push_back(first_call_case(
      "FirstCallInit",
      [](Ctx& c) {
        c.b = std::make_unique<Exchange>(c.other, Kind::Uniform, 300, 703);
        c.rc = c.b->init("bruck", "", &c.breq);
      },
      check_init_and_run));
  v.push_back(first_call_case(
      "FirstCallLocality",
      [](Ctx& c) {
        int node = -1, nnodes = -1, lr = -1, ls = -1;
        c.rc = MPIX_Comm_locality(c.other, &node, &nnodes, &lr, &ls);
      },
      [](Ctx& c) {
        EXPECT_EQ(c.rc, MPI_SUCCESS) << error_text(c.rc);
        expect_same_locality(c.other, c.comm);
      }));
  v.push_back(first_call_case(
      "FirstCallRankLocality",
      [](Ctx& c) {
        int node = -1, lr = -1, pkg = 0, numa = 0;
        c.rc = MPIX_Comm_rank_locality(c.other, (c.me + 1) % c.P, &node, &lr, &pkg, &numa);
      },
      [](Ctx& c) {
        EXPECT_EQ(c.rc, MPI_SUCCESS) << error_text(c.rc);
        expect_same_locality(c.other, c.comm);
      }));
  v.push_back(first_call_case(
      "FirstCallSetAlgorithm",
      [](Ctx& c) { c.rc = MPIX_Comm_set_algorithm(c.other, "alltoall", "pairwise"); },
      [](Ctx& c) {
        EXPECT_EQ(c.rc, MPI_SUCCESS) << error_text(c.rc);
        Exchange e(c.other, Kind::Uniform, 9, 704);
        e.prepare(0);
        EXPECT_EQ(e.blocking(), MPI_SUCCESS);
        e.check(0, "blocking alltoall after MPIX_Comm_set_algorithm");
      }));
  // Locality on a communicator whose library state exists but has no locality yet.
  {
    Case k;
    k.name = "LocalityNotYetComputed";
    k.before = [](Ctx& c) {
      c.other = c.keep(dup_of(c.comm));
      Exchange e(c.other, Kind::Uniform, 3, 705);  // first call: state, no locality
      e.prepare(0);
      ASSERT_EQ(e.blocking(), MPI_SUCCESS);
    };
    k.x = [](Ctx& c) {
      int node = -1;
      c.rc = MPIX_Comm_locality(c.other, &node, nullptr, nullptr, nullptr);
    };
    k.check = [](Ctx& c) {
      EXPECT_EQ(c.rc, MPI_SUCCESS) << error_text(c.rc);
      expect_same_locality(c.other, c.comm);
    };
    v.push_back(std::move(k));
  }
  // Blocking calls (same communicator as A, another one, the system's through the library).
  v.push_back(blocking_case("BlockingAlltoallBruck", Kind::Uniform, 300, "bruck"));
  v.push_back(blocking_case("BlockingAlltoallBig", Kind::Uniform, kBig, "pairwise"));
  v.push_back(blocking_case("BlockingAlltoallSystem", Kind::Uniform, 300, "system"));
  v.push_back(blocking_case("BlockingAlltoallTra2", Kind::Uniform, 300, "tra2"));
  v.push_back(blocking_case("BlockingAlltoallOtherComm", Kind::Uniform, 300, "tra", true));
  v.push_back(blocking_case("BlockingAlltoallvDefault", Kind::Varying, 300, ""));
  v.push_back(blocking_case("BlockingAlltoallvPairwise", Kind::Varying, 300, "pairwise"));
  v.push_back(blocking_case("BlockingAlltoallvBruck", Kind::Varying, 300, "bruck"));
  v.push_back(blocking_case("BlockingAlltoallvLocality", Kind::Varying, 300, "locality"));
  v.push_back(blocking_case("BlockingAlltoallvSystem", Kind::Varying, 300, "system"));
  v.push_back(blocking_case("BlockingNeighbor", Kind::Ring, 300, ""));
  v.push_back(blocking_case("BlockingNeighborLocality", Kind::Ring, 300, "locality"));
  v.push_back(blocking_case("BlockingNeighborSystem", Kind::Ring, 300, "system"));
  // MPIX_Comm_set_algorithm (an agreement), and its agreed error.
  {
    Case k;
    k.name = "SetAlgorithm";
    k.x = [](Ctx& c) { c.rc = MPIX_Comm_set_algorithm(c.comm, "alltoall", "tra:radix=2"); };
    k.check = [](Ctx& c) {
      EXPECT_EQ(c.rc, MPI_SUCCESS) << error_text(c.rc);
      Exchange e(c.comm, Kind::Uniform, 11, 706);
      e.prepare(0);
      EXPECT_EQ(e.blocking(), MPI_SUCCESS);
      e.check(0, "blocking alltoall after MPIX_Comm_set_algorithm");
    };
    v.push_back(std::move(k));
  }
  {
    Case k;
    k.name = "SetAlgorithmDisagreement";
    k.x = [](Ctx& c) {
      c.rc = MPIX_Comm_set_algorithm(c.comm, "alltoall", c.me == c.late ? "bruck" : "pairwise");
      c.expect_class = c.P > 1 ? MPI_ERR_ARG : MPI_SUCCESS;
    };
    k.check = check_error;
    v.push_back(std::move(k));
  }
  // MPIX_Comm_locality_split (agreement, then MPI_Comm_split).
  v.push_back(split_case("LocalitySplitNode", MPIX_LOCALITY_NODE));
  v.push_back(split_case("LocalitySplitCross", MPIX_LOCALITY_CROSS));
  return v;
}

// A: the request the late rank leaves running.
struct Active {
  const char* name;
  Kind kind;
  const char* algorithm;
  int late;  // 0: rank 0; 1: the last rank
};
const Active kActive[] = {
    {"bruck_rank0", Kind::Uniform, "bruck", 0},
    {"alltoallv_pairwise_rank0", Kind::Varying, "pairwise", 0},
    {"pairwise_lastrank", Kind::Uniform, "pairwise", 1},
};

using Param = std::tuple<int, int>;  // case index, active index

class Progress : public ::testing::TestWithParam<Param> {};

TEST_P(Progress, LateRankCallsWhileRequestActive) {
  static const std::vector<Case> cases = all_cases();
  const int ci = std::get<0>(GetParam()), ai = std::get<1>(GetParam());
  const Case& k = cases[std::size_t(ci)];
  const Active& a = kActive[ai];
  // Where MPI is slow (oversubscribed MPICH busy-polls), threads.cmake sets
  // MPIA_TEST_PROGRESS_SAMPLE=n: each case then runs with one request A in n, rotating over the
  // cases so that every A still meets many cases. The same environment on every rank: the
  // same skips. MPIA_TEST_FULL=1 runs everything.
  const long stride = env_long("MPIA_TEST_PROGRESS_SAMPLE", 1);
  if (stride > 1 && !std::getenv("MPIA_TEST_FULL") && ci % stride != ai % stride)
    GTEST_SKIP() << "sampled out (MPIA_TEST_PROGRESS_SAMPLE=" << stride << ")";
  Watchdog watchdog(60);

  Ctx c;
  c.comm = dup_of(MPI_COMM_WORLD);
  MPI_Comm_rank(c.comm, &c.me);
  MPI_Comm_size(c.comm, &c.P);
  c.late = a.late ? c.P - 1 : 0;

  watchdog.phase("before");
  if (k.before) k.before(c);
  Exchange ax(c.comm, a.kind, kBig, 901);
  MPIX_Request areq = MPIX_REQUEST_NULL;
  const int arc = ax.init(a.algorithm, "", &areq);
  ASSERT_TRUE(everywhere(MPI_COMM_WORLD, arc == MPI_SUCCESS)) << error_text(arc);
  for (int iter = 0; iter < 2; ++iter) {
    ax.prepare(iter);
    EXPECT_EQ(MPIX_Start(&areq), MPI_SUCCESS);
    if (iter == 0) {
      if (k.after_start) k.after_start(c);
      watchdog.phase(c.me == c.late ? "the late rank in X, A active" : "waiting on A");
      if (c.me == c.late) {
        k.x(c);
        watchdog.phase("the late rank waiting on A");
        EXPECT_EQ(MPIX_Wait(&areq, MPI_STATUS_IGNORE), MPI_SUCCESS);
      } else {
        EXPECT_EQ(MPIX_Wait(&areq, MPI_STATUS_IGNORE), MPI_SUCCESS);
        watchdog.phase("in X after A completed");
        k.x(c);
      }
    } else {
      // A again, with X's leftovers in place: the request still works.
      EXPECT_EQ(MPIX_Wait(&areq, MPI_STATUS_IGNORE), MPI_SUCCESS);
    }
    ax.check(iter, std::string("A (") + a.name + ")");
  }
  watchdog.phase("check");
  if (k.check) k.check(c);
  EXPECT_EQ(MPIX_Request_free(&areq), MPI_SUCCESS);
  if (c.breq != MPIX_REQUEST_NULL) MPIX_Request_free(&c.breq);
  c.b.reset();
  for (MPI_Comm& o : c.owned) MPI_Comm_free(&o);
  MPI_Comm_free(&c.comm);
}

std::string param_name(const ::testing::TestParamInfo<Param>& p) {
  static const std::vector<Case> cases = all_cases();
  return cases[std::size_t(std::get<0>(p.param))].name + "_" + kActive[std::get<1>(p.param)].name;
}

INSTANTIATE_TEST_SUITE_P(Progress, Progress,
                         ::testing::Combine(::testing::Range(0, int(all_cases().size())),
                                            ::testing::Range(0, int(sizeof kActive /
                                                                    sizeof kActive[0]))),
                         param_name);

}  // namespace
