// The progress thread (issue 9, item 3): a request created with info "mpix_progress" =
// "thread" (or every request, under MPIX_PROGRESS=thread) is driven by a library thread while
// its rank computes or sits in another MPI call.
//
// The deadlock case: every rank starts A; the even ranks then enter MPI_Barrier (or wait in
// MPI_Recv for their odd partner) BEFORE waiting on A, the odd ranks wait on A first. The odd
// ranks cannot finish a multi-round A (bruck, pairwise; 64 KiB blocks) unless the even ranks'
// next rounds are posted, which only the progress thread can do while the even ranks block in
// MPI: without it this hangs from 3 ranks up (with 2 ranks every algorithm is one round, which
// MPI's own progress inside the barrier completes). The watchdog turns a hang into a failure.
//
// This one program is registered several times (test/mpi/threads.cmake):
//   mpi.progress_thread         MPI_THREAD_MULTIPLE, per-request info key
//   mpi.progress_thread_env     MPI_THREAD_MULTIPLE, MPIX_PROGRESS=thread (no info key needed)
//   mpi.progress_thread_single  built with the MPI_THREAD_SINGLE main: the info key (and
//                               MPIX_PROGRESS=thread, mpi.progress_thread_single_env) must be
//                               harmless -- a warning, no thread, requests work when waited;
//                               the tests that need the thread skip (on every rank).
#include <gtest/gtest.h>

#include <cstdlib>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "thread_test_support.hpp"

using namespace mpia_thread_test;
using Kind = Exchange::Kind;

namespace {

constexpr int kBig = 16384;  // 64 KiB of 32-bit elements per block

bool env_threaded() {
  const char* v = std::getenv("MPIX_PROGRESS");
  return v && std::string(v) == "thread";
}

// The info value that makes a request threaded in this registration: none under
// MPIX_PROGRESS=thread (the environment does it), else "thread".
std::string threaded_info() { return env_threaded() ? "" : "thread"; }

struct Active {
  const char* name;
  Kind kind;
  const char* algorithm;
  int count;
};
const Active kActive[] = {
    {"bruck", Kind::Uniform, "bruck", kBig},
    {"pairwise", Kind::Uniform, "pairwise", kBig},
    {"zero_copy_bruck", Kind::Uniform, "zero_copy_bruck", kBig},
    {"tra", Kind::Uniform, "tra", kBig},
    {"alltoallv_pairwise", Kind::Varying, "pairwise", kBig},
    {"alltoallv_bruck", Kind::Varying, "bruck", 2000},
    {"neighbor_direct", Kind::Ring, "direct", kBig},
};

// Skips the calling test (on every rank: the level is agreed) below MPI_THREAD_MULTIPLE.
#define REQUIRE_THREAD()                                                                     \
  do {                                                                                       \
    if (!multiple_) GTEST_SKIP() << "MPI provides less than MPI_THREAD_MULTIPLE: no thread"; \
  } while (0)

class ProgressThread : public ::testing::Test {
 protected:
  void SetUp() override {
    multiple_ = world_thread_level() >= MPI_THREAD_MULTIPLE;
    comm_ = dup_of(MPI_COMM_WORLD);
    ring_ = ring_of(MPI_COMM_WORLD);
    MPI_Comm_rank(comm_, &me_);
    MPI_Comm_size(comm_, &P_);
    watchdog_ = std::make_unique<Watchdog>(60);
  }
  void TearDown() override {
    watchdog_.reset();
    MPI_Comm_free(&ring_);
    MPI_Comm_free(&comm_);
  }
  MPI_Comm comm_for(Kind k) const { return k == Kind::Ring ? ring_ : comm_; }

  bool multiple_ = false;
  MPI_Comm comm_ = MPI_COMM_NULL, ring_ = MPI_COMM_NULL;
  int me_ = 0, P_ = 1;
  std::unique_ptr<Watchdog> watchdog_;
};

// Start; the even ranks block in `blocker` (an MPI call that needs the odd ranks) before
// waiting, the odd ranks wait first and then join `blocker`. Several iterations, new data each.
template <class Blocker, class Joiner>
void rank_dependent_arrival(Exchange& x, MPIX_Request& req, int me, int iterations,
                            Blocker&& blocker, Joiner&& joiner, const std::string& what,
                            Watchdog& wd) {
  for (int it = 0; it < iterations; ++it) {
    x.prepare(it);
    EXPECT_EQ(MPIX_Start(&req), MPI_SUCCESS);
    if (me % 2 == 0) {
      wd.phase(what + ": even rank blocked in MPI with the request active");
      blocker();
      wd.phase(what + ": even rank waiting");
      EXPECT_EQ(MPIX_Wait(&req, MPI_STATUS_IGNORE), MPI_SUCCESS);
    } else {
      wd.phase(what + ": odd rank waiting on the request");
      EXPECT_EQ(MPIX_Wait(&req, MPI_STATUS_IGNORE), MPI_SUCCESS);
      joiner();
    }
    x.check(it, what);
  }
}

TEST_F(ProgressThread, BarrierBetweenStartAndWait) {
  REQUIRE_THREAD();
  for (const Active& a : kActive) {
    Exchange x(comm_for(a.kind), a.kind, a.count, 11);
    MPIX_Request req = MPIX_REQUEST_NULL;
    const int rc = x.init(a.algorithm, threaded_info(), &req);
    ASSERT_TRUE(everywhere(MPI_COMM_WORLD, rc == MPI_SUCCESS)) << a.name << ": " << error_text(rc);
    auto barrier = [&] { EXPECT_EQ(MPI_Barrier(comm_), MPI_SUCCESS); };
    rank_dependent_arrival(x, req, me_, 3, barrier, barrier, a.name, *watchdog_);
    EXPECT_EQ(MPIX_Request_free(&req), MPI_SUCCESS);
  }
}

// The even rank r waits in MPI_Recv for r + 1, which sends only after completing the request.
TEST_F(ProgressThread, ReceiveBetweenStartAndWait) {
  REQUIRE_THREAD();
  for (const Active& a : {kActive[0], kActive[4]}) {
    Exchange x(comm_for(a.kind), a.kind, a.count, 12);
    MPIX_Request req = MPIX_REQUEST_NULL;
    const int rc = x.init(a.algorithm, threaded_info(), &req);
    ASSERT_TRUE(everywhere(MPI_COMM_WORLD, rc == MPI_SUCCESS)) << a.name << ": " << error_text(rc);
    int token = 0;
    auto recv = [&] {
      if (me_ + 1 < P_) {
        EXPECT_EQ(MPI_Recv(&token, 1, MPI_INT, me_ + 1, 5, comm_, MPI_STATUS_IGNORE), MPI_SUCCESS);
      }
    };
    auto send = [&] {
      token = me_;
      EXPECT_EQ(MPI_Send(&token, 1, MPI_INT, me_ - 1, 5, comm_), MPI_SUCCESS);
    };
    rank_dependent_arrival(x, req, me_, 3, recv, send, a.name, *watchdog_);
    EXPECT_EQ(MPIX_Request_free(&req), MPI_SUCCESS);
  }
}

// A request without the info key on the same communicator as a threaded one: it works (driven
// by its own Wait), alone and while the threaded one is active, and the threaded one still
// completes across a barrier.
TEST_F(ProgressThread, PlainRequestAlongside) {
  Exchange tx(comm_, Kind::Uniform, kBig, 21), px(comm_, Kind::Uniform, 700, 22);
  MPIX_Request treq = MPIX_REQUEST_NULL, preq = MPIX_REQUEST_NULL;
  int rc = tx.init("bruck", threaded_info(), &treq);
  ASSERT_TRUE(everywhere(MPI_COMM_WORLD, rc == MPI_SUCCESS)) << error_text(rc);
  rc = px.init("pairwise", env_threaded() ? "calls" : "", &preq);
  ASSERT_TRUE(everywhere(MPI_COMM_WORLD, rc == MPI_SUCCESS)) << error_text(rc);
  for (int it = 0; it < 3; ++it) {
    // The plain one alone.
    px.prepare(it);
    EXPECT_EQ(MPIX_Start(&preq), MPI_SUCCESS);
    EXPECT_EQ(MPIX_Wait(&preq, MPI_STATUS_IGNORE), MPI_SUCCESS);
    px.check(it, "plain request alone");
    // Both active, completed in a rank-dependent order.
    px.prepare(10 + it);
    tx.prepare(10 + it);
    EXPECT_EQ(MPIX_Start(&treq), MPI_SUCCESS);
    EXPECT_EQ(MPIX_Start(&preq), MPI_SUCCESS);
    MPIX_Request *first = me_ % 2 ? &treq : &preq, *second = me_ % 2 ? &preq : &treq;
    EXPECT_EQ(MPIX_Wait(first, MPI_STATUS_IGNORE), MPI_SUCCESS);
    EXPECT_EQ(MPIX_Wait(second, MPI_STATUS_IGNORE), MPI_SUCCESS);
    px.check(10 + it, "plain request beside the threaded one");
    tx.check(10 + it, "threaded request beside the plain one");
  }
  if (multiple_) {
    // The threaded one across a barrier, the plain one idle.
    auto barrier = [&] { EXPECT_EQ(MPI_Barrier(comm_), MPI_SUCCESS); };
    rank_dependent_arrival(tx, treq, me_, 2, barrier, barrier, "threaded beside plain", *watchdog_);
  }
  EXPECT_EQ(MPIX_Request_free(&treq), MPI_SUCCESS);
  EXPECT_EQ(MPIX_Request_free(&preq), MPI_SUCCESS);
}

// Start / compute (no MPI call) / Wait, and Start / Test polling: the data is right whoever
// drives the request.
TEST_F(ProgressThread, ComputeAndTest) {
  for (const Active& a : {kActive[1], kActive[5], kActive[6]}) {
    Exchange x(comm_for(a.kind), a.kind, a.count, 31);
    MPIX_Request req = MPIX_REQUEST_NULL;
    const int rc = x.init(a.algorithm, threaded_info(), &req);
    ASSERT_TRUE(everywhere(MPI_COMM_WORLD, rc == MPI_SUCCESS)) << a.name << ": " << error_text(rc);
    for (int it = 0; it < 4; ++it) {
      x.prepare(it);
      EXPECT_EQ(MPIX_Start(&req), MPI_SUCCESS);
      if (it % 2 == 0) {
        spin_for(0.002 * (1 + me_ % 3));
        EXPECT_EQ(MPIX_Wait(&req, MPI_STATUS_IGNORE), MPI_SUCCESS);
      } else {
        int flag = 0;
        while (!flag) {
          ASSERT_EQ(MPIX_Test(&req, &flag, MPI_STATUS_IGNORE), MPI_SUCCESS);
          if (!flag) spin_for(0.0002);
        }
      }
      x.check(it, std::string(a.name) + " compute/test");
    }
    EXPECT_EQ(MPIX_Request_free(&req), MPI_SUCCESS);
  }
}

// With info "mpix_progress" = "calls" the request is an ordinary one (also under
// MPIX_PROGRESS=thread, which the info overrides): it works when waited.
TEST_F(ProgressThread, InfoCalls) {
  Exchange x(comm_, Kind::Uniform, 900, 41);
  MPIX_Request req = MPIX_REQUEST_NULL;
  const int rc = x.init("bruck", "calls", &req);
  ASSERT_TRUE(everywhere(MPI_COMM_WORLD, rc == MPI_SUCCESS)) << error_text(rc);
  for (int it = 0; it < 3; ++it) {
    x.prepare(it);
    EXPECT_EQ(MPIX_Start(&req), MPI_SUCCESS);
    EXPECT_EQ(MPIX_Wait(&req, MPI_STATUS_IGNORE), MPI_SUCCESS);
    x.check(it, "info mpix_progress=calls");
  }
  EXPECT_EQ(MPIX_Request_free(&req), MPI_SUCCESS);
}

// Any other value is MPI_ERR_INFO_VALUE, on every rank (also when only one rank has it), and
// no request is created.
TEST_F(ProgressThread, BadInfoValue) {
  for (Kind k : {Kind::Uniform, Kind::Varying, Kind::Ring}) {
    for (int only_rank0 = 0; only_rank0 < 2; ++only_rank0) {
      Exchange x(comm_for(k), k, 10, 51);
      MPIX_Request req = MPIX_REQUEST_NULL;
      const bool bad_here = !only_rank0 || me_ == 0;
      const int rc = x.init("", bad_here ? "sometimes" : "", &req);
      EXPECT_EQ(error_class(rc), P_ > 1 || bad_here ? MPI_ERR_INFO_VALUE : MPI_SUCCESS)
          << "kind " << int(k) << ", only rank 0: " << only_rank0 << ": " << error_text(rc);
      EXPECT_EQ(req, MPIX_REQUEST_NULL);
      if (req != MPIX_REQUEST_NULL) MPIX_Request_free(&req);
    }
  }
}

// Works whatever the thread level: below MPI_THREAD_MULTIPLE the info key only warns, and the
// request is driven by its own Wait/Test. Many short-lived requests of every kind, created,
// run and freed in a loop, race the progress thread (when there is one) against the frees.
TEST_F(ProgressThread, InfoKeyHarmlessAndChurn) {
  const Kind kinds[] = {Kind::Uniform, Kind::Varying, Kind::Ring};
  const char* algs[] = {"bruck", "pairwise", "direct"};
  for (int round = 0; round < 24; ++round) {
    const Kind k = kinds[round % 3];
    Exchange x(comm_for(k), k, 1 + (round * 37) % 900, 60 + unsigned(round));
    MPIX_Request req = MPIX_REQUEST_NULL;
    const int rc = x.init(algs[round % 3], "thread", &req);
    ASSERT_TRUE(everywhere(MPI_COMM_WORLD, rc == MPI_SUCCESS)) << error_text(rc);
    const int cycles = 1 + round % 3;
    for (int it = 0; it < cycles; ++it) {
      x.prepare(it);
      EXPECT_EQ(MPIX_Start(&req), MPI_SUCCESS);
      if ((round + it) % 2) {
        int flag = 0;
        while (!flag) ASSERT_EQ(MPIX_Test(&req, &flag, MPI_STATUS_IGNORE), MPI_SUCCESS);
      } else {
        EXPECT_EQ(MPIX_Wait(&req, MPI_STATUS_IGNORE), MPI_SUCCESS);
      }
      x.check(it, "churn round " + std::to_string(round));
    }
    EXPECT_EQ(MPIX_Request_free(&req), MPI_SUCCESS);  // at once: the thread may be just past it
  }
}

// Under MPI_THREAD_MULTIPLE with user threads too: two threads of every rank, each on its own
// communicators, each with a threaded request crossing a barrier of its own communicator, and
// a blocking call in between.
TEST_F(ProgressThread, UserThreadsAndProgressThread) {
  REQUIRE_THREAD();
  const int nthreads = 2;
  std::vector<MPI_Comm> comms, rings;
  for (int t = 0; t < nthreads; ++t) {
    comms.push_back(dup_of(MPI_COMM_WORLD));
    rings.push_back(ring_of(MPI_COMM_WORLD));
  }
  // Where each thread is, for the watchdog's message if this hangs.
  std::mutex steps_mutex;
  std::vector<std::string> steps(nthreads, "not started");
  auto step = [&](int t, int it, const char* what) {
    std::lock_guard<std::mutex> lock(steps_mutex);
    steps[std::size_t(t)] = "iteration " + std::to_string(it) + ": " + what;
    std::string all;
    for (int u = 0; u < nthreads; ++u)
      all += (u ? "; thread " : "thread ") + std::to_string(u) + " " + steps[std::size_t(u)];
    watchdog_->phase(all);
  };
  run_threads(nthreads, [&](int t) {
    const Active& a = kActive[t == 0 ? 0 : 4];
    Exchange x(comms[t], a.kind, 4000, 70 + unsigned(t));
    Exchange blocking(rings[t], Kind::Ring, 333, 80 + unsigned(t));
    MPIX_Request req = MPIX_REQUEST_NULL;
    step(t, -1, "init");
    const int rc = x.init(a.algorithm, threaded_info(), &req);
    EXPECT_EQ(rc, MPI_SUCCESS) << error_text(rc);
    if (rc != MPI_SUCCESS) return;
    for (int it = 0; it < 4; ++it) {
      x.prepare(it);
      blocking.prepare(it);
      step(t, it, "start");
      EXPECT_EQ(MPIX_Start(&req), MPI_SUCCESS);
      if ((me_ + t) % 2 == 0) {
        step(t, it, "barrier, request active");
        EXPECT_EQ(MPI_Barrier(comms[t]), MPI_SUCCESS);
        step(t, it, "wait after the barrier");
        EXPECT_EQ(MPIX_Wait(&req, MPI_STATUS_IGNORE), MPI_SUCCESS);
      } else {
        step(t, it, "wait before the barrier");
        EXPECT_EQ(MPIX_Wait(&req, MPI_STATUS_IGNORE), MPI_SUCCESS);
        step(t, it, "barrier after the wait");
        EXPECT_EQ(MPI_Barrier(comms[t]), MPI_SUCCESS);
      }
      step(t, it, "blocking neighbor call");
      EXPECT_EQ(blocking.blocking(), MPI_SUCCESS);
      step(t, it, "check");
      x.check(it, "thread " + std::to_string(t) + " threaded request");
      blocking.check(it, "thread " + std::to_string(t) + " blocking neighbor call");
    }
    step(t, 4, "free");
    EXPECT_EQ(MPIX_Request_free(&req), MPI_SUCCESS);
    step(t, 4, "done");
  });
  for (int t = 0; t < nthreads; ++t) {
    MPI_Comm_free(&comms[t]);
    MPI_Comm_free(&rings[t]);
  }
}

}  // namespace
