// Threads (issue 9, item 1): under MPI_THREAD_MULTIPLE, several threads of every rank use the
// library at once, and every received element is checked in every iteration.
//
//   Blocking*        each thread calls MPIX_Alltoall / MPIX_Alltoallv / MPIX_Neighbor_alltoall
//                    on its own duplicate of MPI_COMM_WORLD, switching the algorithm of its
//                    communicator (MPIX_Comm_set_algorithm, itself collective) as it goes.
//   PersistentOwnCommunicators  each thread creates (concurrent inits on different
//                    communicators) and runs its own requests with Start/Wait, Startall/Waitall
//                    and Test polling.
//   SharedCommunicator  the requests of all threads live on ONE communicator (and one ring for
//                    the neighbor ones): created up front by the main thread in a fixed order,
//                    then started and completed concurrently by their threads, in an order
//                    that differs between ranks and iterations.
//   FreeWhileOthersRun  threads finish at different times and free their requests while the
//                    others still run; one then creates and frees requests on its own
//                    communicator in a loop.
//   MixedBlockingAndPersistent  blocking calls on own communicators and persistent requests on
//                    a shared one, side by side.
//   Ownership.*      one request between two threads, each rank alone on MPI_COMM_SELF:
//                    concurrent MPIX_Startall on arrays sharing a request (at most one wins, a
//                    loser starts nothing); the user freeing a request's communicator while
//                    another thread runs the request.
//
// MPI forbids two threads to issue collective calls (blocking calls, inits,
// MPIX_Comm_set_algorithm) on the same communicator concurrently; the tests never do. Start,
// Wait, Test and Request_free of different requests of one communicator are concurrent.
// Multi-round algorithms are preferred: their rounds are where one thread drives another's
// request. Every test runs with 2 and 4 threads; it is skipped (on every rank) when MPI
// provides less than MPI_THREAD_MULTIPLE. A hang is ended by the watchdog.
//
// Iterations per thread: MPIA_TEST_THREAD_ITERS (default 12; 8 above 5 ranks, 4 above 8).
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "thread_test_support.hpp"

using namespace mpia_thread_test;
using Kind = Exchange::Kind;

namespace {

const std::vector<std::string> kAlltoall = {
    "bruck", "tra", "pairwise", "zero_copy_bruck", "modified_bruck", "tra:radix=2", "linear"};
const std::vector<std::string> kAlltoallv = {"bruck", "pairwise", "multipair_testany",
                                             "multipair_waitany", "multipair_waitall:window=2"};
const std::vector<std::string> kNeighbor = {"direct", "locality"};

const char* collective_of(Kind k) {
  switch (k) {
    case Kind::Uniform:
      return "alltoall";
    case Kind::Varying:
      return "alltoallv";
    case Kind::Ring:
      return "neighbor_alltoallv";
  }
  return "?";
}
const std::vector<std::string>& algorithms_of(Kind k) {
  switch (k) {
    case Kind::Uniform:
      return kAlltoall;
    case Kind::Varying:
      return kAlltoallv;
    case Kind::Ring:
      return kNeighbor;
  }
  return kAlltoall;
}
// Block sizes in elements (up to 20 KB: past both MPIs' eager limits at these rank counts).
const int kCounts[] = {1, 37, 700, 5000};

// Fewer on many (oversubscribed) ranks, where each collective round waits for the scheduler.
int iterations() {
  int P = 1;
  MPI_Comm_size(MPI_COMM_WORLD, &P);
  return int(env_long("MPIA_TEST_THREAD_ITERS", P <= 5 ? 12 : P <= 8 ? 8 : 4));
}

class Threads : public ::testing::TestWithParam<int> {
 protected:
  void SetUp() override {
    if (world_thread_level() < MPI_THREAD_MULTIPLE)
      GTEST_SKIP() << "MPI provides less than MPI_THREAD_MULTIPLE";
    nthreads_ = GetParam();
    MPI_Comm_rank(MPI_COMM_WORLD, &me_);
    MPI_Comm_size(MPI_COMM_WORLD, &P_);
    watchdog_ = std::make_unique<Watchdog>(90);
  }
  void TearDown() override {
    watchdog_.reset();
    for (MPI_Comm& c : comms_)
      if (c != MPI_COMM_NULL) MPI_Comm_free(&c);
  }
  // A new communicator (a duplicate of MPI_COMM_WORLD, or a ring), freed at the end.
  MPI_Comm make_comm(Kind k) {
    comms_.push_back(k == Kind::Ring ? ring_of(MPI_COMM_WORLD) : dup_of(MPI_COMM_WORLD));
    return comms_.back();
  }

  int nthreads_ = 2, me_ = 0, P_ = 1;
  std::unique_ptr<Watchdog> watchdog_;
  std::vector<MPI_Comm> comms_;
};

// Thread t of every rank on its own communicator: `iters` blocking calls, the block size and
// the algorithm changing as it goes (the algorithm by MPIX_Comm_set_algorithm, collective on
// this thread's communicator only).
void blocking_loop(MPI_Comm comm, Kind kind, int t, int iters) {
  std::vector<std::unique_ptr<Exchange>> ex;
  for (int c : kCounts)
    ex.push_back(std::make_unique<Exchange>(comm, kind, c, 1000u * unsigned(t) + unsigned(c)));
  const std::vector<std::string>& algs = algorithms_of(kind);
  for (int it = 0; it < iters; ++it) {
    if (it % 3 == 0) {
      const std::string& alg = algs[(std::size_t(t) + std::size_t(it / 3)) % algs.size()];
      const int rc = MPIX_Comm_set_algorithm(comm, collective_of(kind), alg.c_str());
      EXPECT_EQ(rc, MPI_SUCCESS) << "thread " << t << ": MPIX_Comm_set_algorithm " << alg << ": "
                                 << error_text(rc);
    }
    Exchange& x = *ex[std::size_t(it + t) % ex.size()];
    x.prepare(it);
    const int rc = x.blocking();
    EXPECT_EQ(rc, MPI_SUCCESS) << "thread " << t << " iteration " << it << ": " << error_text(rc);
    // A wrong result is recorded and the loop goes on: every rank keeps issuing the same
    // collectives, so a failure never turns into a hang of the others.
    x.check(it, "thread " + std::to_string(t) + " blocking " + collective_of(kind) + " count " +
                    std::to_string(x.count()));
  }
}

TEST_P(Threads, BlockingAlltoall) {
  std::vector<MPI_Comm> comms;
  for (int t = 0; t < nthreads_; ++t) comms.push_back(make_comm(Kind::Uniform));
  run_threads(nthreads_, [&](int t) { blocking_loop(comms[t], Kind::Uniform, t, iterations()); });
}

TEST_P(Threads, BlockingAlltoallv) {
  std::vector<MPI_Comm> comms;
  for (int t = 0; t < nthreads_; ++t) comms.push_back(make_comm(Kind::Varying));
  run_threads(nthreads_, [&](int t) { blocking_loop(comms[t], Kind::Varying, t, iterations()); });
}

TEST_P(Threads, BlockingNeighborAlltoall) {
  std::vector<MPI_Comm> comms;
  for (int t = 0; t < nthreads_; ++t) comms.push_back(make_comm(Kind::Ring));
  run_threads(nthreads_, [&](int t) { blocking_loop(comms[t], Kind::Ring, t, iterations()); });
}

TEST_P(Threads, BlockingMixed) {
  const Kind kinds[] = {Kind::Uniform, Kind::Varying, Kind::Ring};
  std::vector<MPI_Comm> comms;
  for (int t = 0; t < nthreads_; ++t) comms.push_back(make_comm(kinds[t % 3]));
  run_threads(nthreads_, [&](int t) { blocking_loop(comms[t], kinds[t % 3], t, iterations()); });
}

// One persistent request with its exchange.
struct Req {
  std::unique_ptr<Exchange> ex;
  std::string algorithm;
  MPIX_Request req = MPIX_REQUEST_NULL;
  std::string name() const {
    return std::string(collective_of(ex->kind())) + " '" + algorithm + "' count " +
           std::to_string(ex->count());
  }
};

// The request of slot k of a thread: kind, algorithm and size from (t, k).
std::unique_ptr<Req> make_req(MPI_Comm comm, MPI_Comm ring, int t, int k, Kind kind) {
  auto r = std::make_unique<Req>();
  const std::vector<std::string>& algs = algorithms_of(kind);
  r->algorithm = algs[std::size_t(3 * t + k) % algs.size()];
  const int count = kCounts[std::size_t(t + 2 * k) % 4];
  r->ex = std::make_unique<Exchange>(kind == Kind::Ring ? ring : comm, kind, count,
                                     7000u + 100u * unsigned(t) + unsigned(k));
  const int rc = r->ex->init(r->algorithm, "", &r->req);
  EXPECT_EQ(rc, MPI_SUCCESS) << "thread " << t << ": init " << r->name() << ": " << error_text(rc);
  return r;
}

// `iters` cycles of a thread's requests: all started (in an order that depends on the rank and
// the iteration), then completed with Wait in order or reversed, with Waitall, or by polling
// Test; every element checked (a wrong result is recorded and the cycles go on, so that every
// rank keeps the same sequence). Returns whether all data was right.
bool cycle(std::vector<std::unique_ptr<Req>>& reqs, int me, int t, int iters, int first_iter = 0) {
  const int n = int(reqs.size());
  for (auto& r : reqs)
    if (r->req == MPIX_REQUEST_NULL) return false;  // its init failed (on every rank: agreed)
  std::vector<MPIX_Request> handles(std::size_t(n), MPIX_REQUEST_NULL);
  long bad = 0;
  for (int it = first_iter; it < first_iter + iters; ++it) {
    for (auto& r : reqs) r->ex->prepare(it);
    const bool reverse = (me + t + it) % 2 == 1;
    const int mode = (me + it) % 4;
    if (mode == 3) {
      for (int i = 0; i < n; ++i) handles[std::size_t(i)] = reqs[std::size_t(i)]->req;
      const int rc = MPIX_Startall(n, handles.data());
      EXPECT_EQ(rc, MPI_SUCCESS) << "thread " << t << ": Startall: " << error_text(rc);
    } else {
      for (int j = 0; j < n; ++j) {
        Req& r = *reqs[std::size_t(reverse ? n - 1 - j : j)];
        const int rc = MPIX_Start(&r.req);
        EXPECT_EQ(rc, MPI_SUCCESS)
            << "thread " << t << ": Start " << r.name() << ": " << error_text(rc);
      }
    }
    switch (mode) {
      case 0:
      case 1:
        for (int j = 0; j < n; ++j) {
          Req& r = *reqs[std::size_t((mode == 1) != reverse ? n - 1 - j : j)];
          const int rc = MPIX_Wait(&r.req, MPI_STATUS_IGNORE);
          EXPECT_EQ(rc, MPI_SUCCESS)
              << "thread " << t << ": Wait " << r.name() << ": " << error_text(rc);
        }
        break;
      case 2: {
        std::vector<bool> done(std::size_t(n), false);
        for (int left = n; left > 0;) {
          for (int j = 0; j < n; ++j) {
            if (done[std::size_t(j)]) continue;
            int flag = 0;
            const int rc = MPIX_Test(&reqs[std::size_t(j)]->req, &flag, MPI_STATUS_IGNORE);
            EXPECT_EQ(rc, MPI_SUCCESS) << "thread " << t << ": Test: " << error_text(rc);
            if (flag || rc != MPI_SUCCESS) done[std::size_t(j)] = true, --left;
          }
        }
        break;
      }
      case 3: {
        const int rc = MPIX_Waitall(n, handles.data(), MPI_STATUSES_IGNORE);
        EXPECT_EQ(rc, MPI_SUCCESS) << "thread " << t << ": Waitall: " << error_text(rc);
        break;
      }
    }
    for (auto& r : reqs) bad += r->ex->check(it, "thread " + std::to_string(t) + " " + r->name());
  }
  return bad == 0;
}

void free_all(std::vector<std::unique_ptr<Req>>& reqs, int t) {
  for (auto& r : reqs) {
    const int rc = MPIX_Request_free(&r->req);
    EXPECT_EQ(rc, MPI_SUCCESS) << "thread " << t << ": free " << r->name() << ": "
                               << error_text(rc);
  }
}

TEST_P(Threads, PersistentOwnCommunicators) {
  std::vector<MPI_Comm> comms, rings;
  for (int t = 0; t < nthreads_; ++t) {
    comms.push_back(make_comm(Kind::Uniform));
    rings.push_back(make_comm(Kind::Ring));
  }
  run_threads(nthreads_, [&](int t) {
    // Inits run concurrently with the other threads' inits and cycles (other communicators).
    std::vector<std::unique_ptr<Req>> reqs;
    reqs.push_back(make_req(comms[t], rings[t], t, 0, Kind::Uniform));
    reqs.push_back(make_req(comms[t], rings[t], t, 1, t % 2 ? Kind::Ring : Kind::Varying));
    reqs.push_back(make_req(comms[t], rings[t], t, 2, Kind::Uniform));
    cycle(reqs, me_, t, iterations());
    free_all(reqs, t);
  });
}

// Requests of every thread on one communicator (and one ring), created by the main thread.
class Shared {
 public:
  Shared(MPI_Comm comm, MPI_Comm ring, int nthreads, int per_thread) : per_(nthreads) {
    const Kind kinds[] = {Kind::Uniform, Kind::Varying, Kind::Uniform, Kind::Ring};
    for (int t = 0; t < nthreads; ++t)
      for (int k = 0; k < per_thread; ++k)
        per_[std::size_t(t)].push_back(make_req(comm, ring, t, k, kinds[(t + k) % 4]));
  }
  std::vector<std::unique_ptr<Req>>& of(int t) { return per_[std::size_t(t)]; }

 private:
  std::vector<std::vector<std::unique_ptr<Req>>> per_;
};

// Thread start times differ per rank, so that the interleaving differs too.
void stagger(int me, int t) {
  std::this_thread::sleep_for(std::chrono::microseconds(((me * 7 + t * 3) % 5) * 300));
}

TEST_P(Threads, SharedCommunicator) {
  MPI_Comm comm = make_comm(Kind::Uniform), ring = make_comm(Kind::Ring);
  Shared shared(comm, ring, nthreads_, 2);
  run_threads(nthreads_, [&](int t) {
    stagger(me_, t);
    cycle(shared.of(t), me_, t, iterations());
  });
  for (int t = 0; t < nthreads_; ++t) free_all(shared.of(t), t);
}

TEST_P(Threads, FreeWhileOthersRun) {
  MPI_Comm comm = make_comm(Kind::Uniform), ring = make_comm(Kind::Ring);
  std::vector<MPI_Comm> own;
  for (int t = 0; t < nthreads_; ++t) own.push_back(make_comm(Kind::Uniform));
  Shared shared(comm, ring, nthreads_, 2);
  const int iters = iterations();
  run_threads(nthreads_, [&](int t) {
    stagger(me_, t);
    // Thread t runs (t + 1) / nthreads of the iterations, then frees its requests at once
    // while the later threads still run.
    cycle(shared.of(t), me_, t, std::max(1, iters * (t + 1) / nthreads_));
    free_all(shared.of(t), t);
    if (t + 1 == nthreads_) return;
    // Then a few requests created, run and freed on its own communicator, each one its own
    // collective sequence, while the others go on.
    for (int k = 0; k < 4; ++k) {
      std::vector<std::unique_ptr<Req>> reqs;
      reqs.push_back(make_req(own[t], ring, t, k, k % 2 ? Kind::Varying : Kind::Uniform));
      cycle(reqs, me_, t, 2, 100 * k);
      free_all(reqs, t);
    }
  });
}

TEST_P(Threads, MixedBlockingAndPersistent) {
  MPI_Comm comm = make_comm(Kind::Uniform), ring = make_comm(Kind::Ring);
  std::vector<MPI_Comm> own;
  for (int t = 0; t < nthreads_; ++t)
    own.push_back(make_comm(t % 4 == 2 ? Kind::Varying : Kind::Uniform));
  // Roles by t % 4: 0 blocking alltoall (own), 1 and 3 persistent (shared), 2 blocking
  // alltoallv (own).
  Shared shared(comm, ring, nthreads_, 2);
  run_threads(nthreads_, [&](int t) {
    stagger(me_, t);
    switch (t % 4) {
      case 0:
        blocking_loop(own[t], Kind::Uniform, t, iterations());
        break;
      case 2:
        blocking_loop(own[t], Kind::Varying, t, iterations());
        break;
      default:
        cycle(shared.of(t), me_, t, iterations());
        break;
    }
  });
  for (int t = 0; t < nthreads_; ++t) free_all(shared.of(t), t);
}

// ------------------------------------------------------------------------------------------
// Ownership of one request between threads (issue 18). Each rank works alone on a duplicate of
// MPI_COMM_SELF, so that whether a start succeeded may differ between ranks and threads.
// ------------------------------------------------------------------------------------------

// Two threads rendezvous before each round, so that their calls overlap.
class Rendezvous {
 public:
  void arrive(int round) {
    arrived_.fetch_add(1);
    while (arrived_.load() < 2 * (round + 1)) std::this_thread::yield();
  }

 private:
  std::atomic<int> arrived_{0};
};

class Ownership : public ::testing::Test {
 protected:
  void SetUp() override {
    if (world_thread_level() < MPI_THREAD_MULTIPLE)
      GTEST_SKIP() << "MPI provides less than MPI_THREAD_MULTIPLE";
    watchdog_ = std::make_unique<Watchdog>(90);
    MPI_Comm_dup(MPI_COMM_SELF, &self_);
    MPI_Comm_set_errhandler(self_, MPI_ERRORS_RETURN);
  }
  void TearDown() override {
    watchdog_.reset();
    if (self_ != MPI_COMM_NULL) MPI_Comm_free(&self_);
  }
  MPIX_Request make(std::vector<int>& buf) {
    MPIX_Request r = MPIX_REQUEST_NULL;
    const int rc = MPIX_Alltoall_init(buf.data(), 1, MPI_INT, buf.data() + 1, 1, MPI_INT, self_,
                                      MPI_INFO_NULL, &r);
    EXPECT_EQ(rc, MPI_SUCCESS) << error_text(rc);
    return r;
  }

  std::unique_ptr<Watchdog> watchdog_;
  MPI_Comm self_ = MPI_COMM_NULL;
};

// Two threads call MPIX_Startall at the same time on arrays that share one request, {own_t,
// shared}: starting an active request is erroneous, so at most one call succeeds, and a call
// that fails must have started nothing (MPIX_Startall checks everything first) -- its own
// request must start normally afterwards. A duplicate check that two calls race on lets both
// pass it, after which the loser has started its own request before it fails on the shared
// one.
TEST_F(Ownership, ConcurrentStartallSharingARequest) {
  std::vector<int> bufs[3] = {{1, 0}, {2, 0}, {3, 0}};
  MPIX_Request own[2] = {make(bufs[0]), make(bufs[1])}, shared = make(bufs[2]);
  ASSERT_TRUE(own[0] && own[1] && shared);
  const int rounds = int(env_long("MPIA_TEST_STARTALL_ROUNDS", 400));
  Rendezvous meet;
  int rcs[2] = {MPI_SUCCESS, MPI_SUCCESS};
  std::atomic<long> partial{0}, both{0};
  std::atomic<bool> stop{false};
  for (int round = 0; round < rounds && !stop; ++round) {
    run_threads(2, [&](int t) {
      MPIX_Request arr[2] = {own[t], shared};
      meet.arrive(round);
      rcs[t] = MPIX_Startall(2, arr);
    });
    if (rcs[0] == MPI_SUCCESS && rcs[1] == MPI_SUCCESS) ++both;
    for (int t = 0; t < 2; ++t) {
      if (rcs[t] == MPI_SUCCESS) {
        EXPECT_EQ(MPIX_Wait(&own[t], MPI_STATUS_IGNORE), MPI_SUCCESS);
        EXPECT_EQ(MPIX_Wait(&shared, MPI_STATUS_IGNORE), MPI_SUCCESS);
        continue;
      }
      EXPECT_EQ(error_class(rcs[t]), MPI_ERR_REQUEST) << error_text(rcs[t]);
      // Nothing of the failed call may have started: its own request is inactive.
      const int rc = MPIX_Start(&own[t]);
      if (rc != MPI_SUCCESS) ++partial, stop = true;
      EXPECT_EQ(rc, MPI_SUCCESS) << "round " << round << ": thread " << t
                                 << "'s MPIX_Startall failed (" << error_text(rcs[t])
                                 << ") but left its own request active: " << error_text(rc);
      EXPECT_EQ(MPIX_Wait(&own[t], MPI_STATUS_IGNORE), MPI_SUCCESS);
    }
    MPIX_Wait(&shared, MPI_STATUS_IGNORE);
  }
  EXPECT_EQ(both.load(), 0) << "both calls started the shared request";
  EXPECT_EQ(partial.load(), 0);
  for (MPIX_Request* r : {&own[0], &own[1], &shared}) EXPECT_EQ(MPIX_Request_free(r), MPI_SUCCESS);
}

// The user frees the communicator of a request in one thread while another thread keeps
// starting and completing the request (every Start, Wait and Test reads whether the user's
// communicator was freed, to know where errors go); afterwards an error of the request is raised
// on MPI_COMM_SELF. Under ThreadSanitizer this is the data race of a plain flag written by the
// attribute's delete callback and read by the request's calls.
TEST_F(Ownership, CommunicatorFreedWhileRequestRuns) {
  MPI_Comm user;
  MPI_Comm_dup(self_, &user);
  MPI_Comm_set_errhandler(user, MPI_ERRORS_RETURN);
  std::vector<int> buf = {7, 0};
  MPIX_Request r = MPIX_REQUEST_NULL;
  ASSERT_EQ(MPIX_Alltoall_init(buf.data(), 1, MPI_INT, buf.data() + 1, 1, MPI_INT, user,
                               MPI_INFO_NULL, &r),
            MPI_SUCCESS);
  std::atomic<int> started{0};
  std::atomic<bool> freed{false};
  run_threads(2, [&](int t) {
    if (t == 0) {
      while (started.load() < 20) std::this_thread::yield();
      EXPECT_EQ(MPI_Comm_free(&user), MPI_SUCCESS);
      freed = true;
      return;
    }
    for (int i = 0; !freed || i < 200; ++i) {
      buf[0] = i, buf[1] = -1;
      EXPECT_EQ(MPIX_Start(&r), MPI_SUCCESS);
      int flag = 0;
      EXPECT_EQ(MPIX_Test(&r, &flag, MPI_STATUS_IGNORE), MPI_SUCCESS);
      if (!flag) {
        EXPECT_EQ(MPIX_Wait(&r, MPI_STATUS_IGNORE), MPI_SUCCESS);
      }
      EXPECT_EQ(buf[1], i);
      ++started;
    }
  });
  // Starting an active request is an error, raised on MPI_COMM_SELF now.
  MPI_Errhandler old;
  MPI_Comm_get_errhandler(MPI_COMM_SELF, &old);
  MPI_Comm_set_errhandler(MPI_COMM_SELF, MPI_ERRORS_RETURN);
  EXPECT_EQ(MPIX_Start(&r), MPI_SUCCESS);
  EXPECT_EQ(error_class(MPIX_Start(&r)), MPI_ERR_REQUEST);
  EXPECT_EQ(MPIX_Wait(&r, MPI_STATUS_IGNORE), MPI_SUCCESS);
  MPI_Comm_set_errhandler(MPI_COMM_SELF, old);
  MPI_Errhandler_free(&old);
  EXPECT_EQ(MPIX_Request_free(&r), MPI_SUCCESS);
}

INSTANTIATE_TEST_SUITE_P(Threads, Threads, ::testing::Values(2, 4),
                         [](const ::testing::TestParamInfo<int>& p) {
                           return std::to_string(p.param) + "threads";
                         });

}  // namespace
