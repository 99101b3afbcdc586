// The list of running operations and the progress thread (src/operation/progress.cpp), from
// inside the library: operations of this test's own that never finish until told, so what is
// checked is who drives them, not MPI.
//
// The bug this guards: a pass over the list (every Wait, Test and library wait runs one)
// moves the operation it visits to the back by unlinking and relinking it, and the running
// counts went down and up again around that move. The progress thread, deciding whether to
// sleep, could read the dip -- no threaded operation running -- and sleep with one running;
// nothing woke it until the next Start of a threaded request. A rank whose user thread then
// sat in MPI_Barrier never advanced its request, and its peers waited for it forever
// (mpi.progress_thread under MPICH, once in CI: one thread waiting on the request, the other
// in the barrier, the progress thread asleep). The same dip could make Wait think its
// operation was the only one running and block in MPI on it.
//
// Rank-local: every rank runs the same checks (registered at 1 and 3 ranks, threads.cmake).
#include <gtest/gtest.h>
#include <mpi.h>

#include <atomic>
#include <chrono>
#include <memory>

#include "operation/operation.hpp"
#include "thread_test_support.hpp"

namespace {

using Clock = std::chrono::steady_clock;

// Running until finish is set; counts how often it was driven.
class Endless : public mpia::Operation {
 public:
  std::atomic<long> driven{0};
  std::atomic<bool> finish{false};

 protected:
  bool do_start() override { return false; }
  bool do_progress(bool /*block*/) override {
    driven.fetch_add(1, std::memory_order_relaxed);
    return finish.load(std::memory_order_acquire);
  }
};

// Whether op is driven again within seconds (by whoever drives it).
bool driven_again(const Endless& op, double seconds) {
  const long before = op.driven.load();
  const auto end = Clock::now() + std::chrono::milliseconds(long(seconds * 1000));
  while (Clock::now() < end)
    if (op.driven.load() > before) return true;
  return false;
}

void finish(Endless& op) {
  op.finish.store(true, std::memory_order_release);
  op.wait();
}

class RunningList : public ::testing::Test {
 protected:
  void SetUp() override {
    int level = MPI_THREAD_SINGLE;
    MPI_Query_thread(&level);
    if (level < MPI_THREAD_MULTIPLE) GTEST_SKIP() << "MPI provides less than THREAD_MULTIPLE";
    watchdog_ = std::make_unique<mpia_thread_test::Watchdog>(60);
    ASSERT_TRUE(mpia::start_progress_thread());
  }
  void TearDown() override {
    mpia::stop_progress_thread();
    watchdog_.reset();
  }
  std::unique_ptr<mpia_thread_test::Watchdog> watchdog_;
};

// A threaded operation and a plain one running; this thread passes over the list for a while
// (moving each to the back, as Wait and Test do), then stops: the progress thread must still
// be driving the threaded one. Before the fix it was asleep after 2-4 of the 20 rounds, and
// this test failed 4 of 5 runs here (Open MPI, one rank).
TEST_F(RunningList, PassesDoNotPutTheProgressThreadToSleep) {
  for (int round = 0; round < 20; ++round) {
    Endless threaded, plain;
    threaded.threaded = true;
    threaded.start();
    plain.start();
    const auto end = Clock::now() + std::chrono::milliseconds(250);
    long passes = 0;
    while (Clock::now() < end) {
      mpia::progress_running();
      ++passes;
    }
    EXPECT_TRUE(driven_again(threaded, 2.0))
        << "round " << round << ": after " << passes
        << " passes by another thread, the progress thread no longer drives the running "
           "threaded operation";
    EXPECT_TRUE(mpia::any_running());
    finish(plain);
    finish(threaded);
    EXPECT_FALSE(mpia::any_running());
  }
}

// The progress thread drives threaded operations only, and sleeps when none runs; a Start of a
// threaded one wakes it.
TEST_F(RunningList, ProgressThreadDrivesThreadedOnly) {
  Endless plain;
  plain.start();
  const long plain_before = plain.driven.load();
  EXPECT_FALSE(driven_again(plain, 0.2)) << "the progress thread drove a plain operation";
  EXPECT_EQ(plain.driven.load(), plain_before);
  Endless threaded;
  threaded.threaded = true;
  threaded.start();
  EXPECT_TRUE(driven_again(threaded, 2.0)) << "a threaded Start did not wake the progress thread";
  finish(threaded);
  finish(plain);
}

}  // namespace
