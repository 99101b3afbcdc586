// MPI-aware main() for GoogleTest programs run under mpiexec.
//
//  * MPI_Init before GoogleTest parses its flags, MPI_Finalize at the end. Compiled with
//    MPIA_TEST_THREAD_MULTIPLE defined, it asks for MPI_THREAD_MULTIPLE instead of
//    MPI_THREAD_SINGLE (the library mpia_mpi_gtest_main_mt of test/mpi/threads.cmake).
//  * A test fails on every rank when it fails on any rank: at the end of each test every rank
//    contributes a local failure flag (MPI_Allgather on MPI_COMM_WORLD) and ranks that passed
//    locally record a failure naming the failing ranks. Every rank therefore runs the same
//    sequence of tests and collectives; a test that leaves ranks out of step hangs, and
//    ctest's TIMEOUT turns the hang into a failure.
//  * Output: rank 0 prints GoogleTest's usual report; other ranks print only their own
//    failures, prefixed with "[rank r]".
//  * The exit status is the same on every rank: non-zero when any rank failed anything.
//
// Tests must therefore be written so that every rank runs every test (GTEST_SKIP must be
// decided identically on all ranks) and every rank calls the same collectives.
#include <gtest/gtest.h>
#include <mpi.h>

#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <memory>
#include <string>
#include <vector>

namespace {

class MpiListener : public ::testing::TestEventListener {
 public:
  MpiListener(::testing::TestEventListener* printer, int rank, int size)
      : printer_(printer), rank_(rank), size_(size) {}

  void OnTestProgramStart(const ::testing::UnitTest& u) override {
    if (printer_) printer_->OnTestProgramStart(u);
  }
  void OnTestIterationStart(const ::testing::UnitTest& u, int it) override {
    if (printer_) {
      std::printf("[   MPI    ] running on %d rank%s\n", size_, size_ == 1 ? "" : "s");
      printer_->OnTestIterationStart(u, it);
    }
  }
  void OnEnvironmentsSetUpStart(const ::testing::UnitTest& u) override {
    if (printer_) printer_->OnEnvironmentsSetUpStart(u);
  }
  void OnEnvironmentsSetUpEnd(const ::testing::UnitTest& u) override {
    if (printer_) printer_->OnEnvironmentsSetUpEnd(u);
  }
  void OnTestSuiteStart(const ::testing::TestSuite& s) override {
    if (printer_) printer_->OnTestSuiteStart(s);
  }
  void OnTestStart(const ::testing::TestInfo& t) override {
    if (printer_) printer_->OnTestStart(t);
  }
  void OnTestPartResult(const ::testing::TestPartResult& r) override {
    if (printer_) {
      printer_->OnTestPartResult(r);
      std::fflush(stdout);
    } else if (r.failed() && !in_sync_) {
      std::fprintf(stderr, "[rank %d] %s:%d: %s\n%s\n", rank_,
                   r.file_name() ? r.file_name() : "unknown", r.line_number(),
                   r.fatally_failed() ? "Fatal failure" : "Failure", r.message());
      std::fflush(stderr);
    }
  }
  void OnTestEnd(const ::testing::TestInfo& t) override {
    const int local = t.result() && t.result()->Failed() ? 1 : 0;
    std::vector<int> all(static_cast<size_t>(size_), 0);
    MPI_Allgather(&local, 1, MPI_INT, all.data(), 1, MPI_INT, MPI_COMM_WORLD);
    std::string failing;
    for (int r = 0; r < size_; ++r) {
      if (all[static_cast<size_t>(r)]) failing += (failing.empty() ? "" : ",") + std::to_string(r);
    }
    if (!failing.empty() && !local) {
      // Recorded on the current test (still current during OnTestEnd); on ranks other than
      // 0 it is not printed: the failing ranks print their own failures.
      in_sync_ = true;
      ADD_FAILURE() << "test failed on rank(s) " << failing << " of " << size_;
      in_sync_ = false;
    }
    if (printer_) {
      printer_->OnTestEnd(t);
      std::fflush(stdout);
    } else if (local) {
      std::fprintf(stderr, "[rank %d] [  FAILED  ] %s.%s\n", rank_, t.test_suite_name(), t.name());
      std::fflush(stderr);
    }
  }
  void OnTestSuiteEnd(const ::testing::TestSuite& s) override {
    if (printer_) printer_->OnTestSuiteEnd(s);
  }
  void OnEnvironmentsTearDownStart(const ::testing::UnitTest& u) override {
    if (printer_) printer_->OnEnvironmentsTearDownStart(u);
  }
  void OnEnvironmentsTearDownEnd(const ::testing::UnitTest& u) override {
    if (printer_) printer_->OnEnvironmentsTearDownEnd(u);
  }
  void OnTestIterationEnd(const ::testing::UnitTest& u, int it) override {
    if (printer_) printer_->OnTestIterationEnd(u, it);
  }
  void OnTestProgramEnd(const ::testing::UnitTest& u) override {
    if (printer_) printer_->OnTestProgramEnd(u);
    std::fflush(stdout);
  }

 private:
  std::unique_ptr<::testing::TestEventListener> printer_;
  int rank_;
  int size_;
  bool in_sync_ = false;
};

}  // namespace

int main(int argc, char** argv) {
  int provided = 0;
#ifdef MPIA_TEST_THREAD_MULTIPLE
  // The thread tests' variant (test/mpi/threads.cmake): they skip, identically on every rank,
  // when MPI provides less (MPI_Query_thread).
  MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided);
#else
  MPI_Init_thread(&argc, &argv, MPI_THREAD_SINGLE, &provided);
#endif
  int rank = 0, size = 1;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);

  ::testing::InitGoogleTest(&argc, argv);

  // Shuffling must produce the same order on every rank.
  if (GTEST_FLAG_GET(shuffle)) {
    int seed = GTEST_FLAG_GET(random_seed);
    if (seed == 0) seed = static_cast<int>(std::time(nullptr) % 99991) + 1;
    MPI_Bcast(&seed, 1, MPI_INT, 0, MPI_COMM_WORLD);
    GTEST_FLAG_SET(random_seed, seed);
  }

  ::testing::TestEventListeners& listeners = ::testing::UnitTest::GetInstance()->listeners();
  ::testing::TestEventListener* printer = listeners.Release(listeners.default_result_printer());
  if (rank != 0) {
    delete printer;
    printer = nullptr;
  }
  listeners.Append(new MpiListener(printer, rank, size));

  int local = RUN_ALL_TESTS();
  int global = 0;
  local = local != 0 ? 1 : 0;
  MPI_Allreduce(&local, &global, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
  MPI_Finalize();
  return global;
}
