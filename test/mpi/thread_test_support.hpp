// Helpers of the thread and progress tests (test_threads.cpp, test_progress.cpp,
// test_progress_thread.cpp): checked integer exchanges (all-to-all with equal or varying
// blocks, neighbor all-to-all on a ring) whose every received element is compared with an
// independent formula, a per-test watchdog that turns a hang into a prompt failure, and
// collective helpers for decisions that every rank must take identically.
//
// Header-only; everything inline, in namespace mpia_thread_test.
#pragma once

#include <gtest/gtest.h>
#include <mpi.h>

#include "mpi_advance.h"

#include <unistd.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <functional>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

namespace mpia_thread_test {

// ------------------------------------------------------------------------------------------
// Decisions every rank takes identically.
// ------------------------------------------------------------------------------------------

// True on every rank when `local` is true on every rank of comm.
inline bool everywhere(MPI_Comm comm, bool local) {
  int in = local ? 1 : 0, out = 0;
  MPI_Allreduce(&in, &out, 1, MPI_INT, MPI_MIN, comm);
  return out != 0;
}

// The thread level MPI provides, as the minimum over MPI_COMM_WORLD (asked once; collective
// the first time, so every rank must call it at the same point).
inline int world_thread_level() {
  static int level = [] {
    int mine = MPI_THREAD_SINGLE, least = MPI_THREAD_SINGLE;
    MPI_Query_thread(&mine);
    MPI_Allreduce(&mine, &least, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
    return least;
  }();
  return level;
}

// "MPI_SUCCESS", or the error class's name and the message of an error code.
inline std::string error_text(int rc) {
  if (rc == MPI_SUCCESS) return "MPI_SUCCESS";
  char buf[MPI_MAX_ERROR_STRING] = {};
  int len = 0, cls = -1;
  MPI_Error_class(rc, &cls);
  MPI_Error_string(rc, buf, &len);
  return "error class " + std::to_string(cls) + ": " + std::string(buf, std::size_t(len));
}
inline int error_class(int rc) {
  int cls = rc;
  if (rc != MPI_SUCCESS) MPI_Error_class(rc, &cls);
  return cls;
}

// The reference values: a splitmix64 mix of the coordinates (independent of the library).
inline std::uint64_t mix(std::uint64_t a, std::uint64_t b, std::uint64_t c, std::uint64_t d) {
  std::uint64_t x = ((a * 1000003u + b) * 1000003u + c) * 1000003u + d + 0x9E3779B97F4A7C15ull;
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
  return x ^ (x >> 31);
}

// An integer environment variable, or `fallback`.
inline long env_long(const char* name, long fallback) {
  const char* v = std::getenv(name);
  if (!v || !*v) return fallback;
  char* end = nullptr;
  const long x = std::strtol(v, &end, 10);
  return (end && *end == '\0' && x > 0) ? x : fallback;
}

// ------------------------------------------------------------------------------------------
// Watchdog: a thread that makes no MPI call and ends the process (exit status 124, which
// mpiexec turns into the failure of the whole job) when the test it guards has not finished
// within its limit. A hang thus fails in seconds, naming the test and the rank, instead of at
// ctest's TIMEOUT. MPIA_TEST_WATCHDOG_S overrides every limit (e.g. for a slow sanitizer run).
// ------------------------------------------------------------------------------------------
class Watchdog {
 public:
  explicit Watchdog(double seconds) {
    const long over = env_long("MPIA_TEST_WATCHDOG_S", 0);
    if (over > 0) seconds = double(over);
    const ::testing::TestInfo* t = ::testing::UnitTest::GetInstance()->current_test_info();
    name_ = t ? std::string(t->test_suite_name()) + "." + t->name() : std::string("?");
    MPI_Comm_rank(MPI_COMM_WORLD, &rank_);
    thread_ = std::thread([this, seconds] {
      std::unique_lock<std::mutex> lock(mutex_);
      const auto deadline =
          std::chrono::steady_clock::now() + std::chrono::milliseconds(long(seconds * 1000));
      if (cv_.wait_until(lock, deadline, [this] { return done_; })) return;
      std::fprintf(stderr,
                   "[rank %d] WATCHDOG: %s did not finish within %.0f s (hang: a request or "
                   "collective never completed); phase: %s; aborting\n",
                   rank_, name_.c_str(), seconds, phase_.c_str());
      std::fflush(stderr);
      _exit(124);
    });
  }
  ~Watchdog() {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      done_ = true;
    }
    cv_.notify_all();
    thread_.join();
  }
  Watchdog(const Watchdog&) = delete;
  Watchdog& operator=(const Watchdog&) = delete;

  // What the test is doing now (printed when the watchdog fires).
  void phase(const std::string& p) {
    std::lock_guard<std::mutex> lock(mutex_);
    phase_ = p;
  }

 private:
  std::mutex mutex_;
  std::condition_variable cv_;
  bool done_ = false;
  std::string name_, phase_ = "start";
  int rank_ = 0;
  std::thread thread_;
};

// ------------------------------------------------------------------------------------------
// Threads.
// ------------------------------------------------------------------------------------------

// Runs body(t) for t = 0..n-1 in n threads and joins them. An exception escaping a body is a
// test failure (recorded from that thread; gtest's reporting is thread-safe).
inline void run_threads(int n, const std::function<void(int)>& body) {
  std::vector<std::thread> threads;
  threads.reserve(std::size_t(n));
  for (int t = 0; t < n; ++t)
    threads.emplace_back([t, &body] {
      try {
        body(t);
      } catch (const std::exception& e) {
        ADD_FAILURE() << "thread " << t << ": exception: " << e.what();
      } catch (...) {
        ADD_FAILURE() << "thread " << t << ": unknown exception";
      }
    });
  for (std::thread& th : threads) th.join();
}

// Busy work without MPI calls (the "compute" of a Start / compute / Wait loop).
inline void spin_for(double seconds) {
  const auto end =
      std::chrono::steady_clock::now() + std::chrono::microseconds(long(seconds * 1e6));
  while (std::chrono::steady_clock::now() < end) {
  }
}

// ------------------------------------------------------------------------------------------
// A checked exchange of 32-bit integers.
//
// Element e of the block that rank s sends to its destination slot d in iteration `iter` of an
// exchange identified by `salt` holds the low 32 bits of mix(s, d, e, key(salt, iter)): a
// different value for every (sender, destination, element, iteration, exchange), so a block
// delivered to the wrong place, from the wrong iteration or from another request is detected.
// (mix() is this header's own formula, not test_support's, so that these programs need no test
// support library and can link either gtest main.) Receive blocks are poisoned with the
// complement of what they must receive before each iteration, and the gaps between blocks
// (displacements leave 1-3 unused elements after every block) hold a sentinel that must never
// change; the send buffer must not change either.
//
// Kinds:
//   Uniform   all-to-all: `count` elements per destination (MPIX_Alltoall(_init)).
//   Varying   all-to-all-v: the count from s to d is a formula of (s, d, salt) in
//             0..max_count, with zeros (MPIX_Alltoallv(_init)).
//   Ring      neighbor all-to-all on a periodic 1-D Cartesian communicator: send block 0 to
//             the -1 neighbor, block 1 to the +1 neighbor; receive block 0 from the -1 neighbor
//             (its block 1), block 1 from the +1 neighbor (its block 0) -- MPI's Cartesian
//             neighbor order, which also holds on rings of 1 and 2 ranks.
// ------------------------------------------------------------------------------------------
class Exchange {
 public:
  enum class Kind { Uniform, Varying, Ring };
  static constexpr std::uint32_t kSentinel = 0x5EA5EA5Eu;

  Exchange(MPI_Comm comm, Kind kind, int count, std::uint64_t salt)
      : comm_(comm), kind_(kind), count_(count), salt_(salt) {
    MPI_Comm_rank(comm, &me_);
    MPI_Comm_size(comm, &P_);
    if (kind == Kind::Ring) {
      nblocks_ = 2;
      left_ = (me_ - 1 + P_) % P_;
      right_ = (me_ + 1) % P_;
    } else {
      nblocks_ = P_;
    }
    scounts_.resize(nblocks_);
    rcounts_.resize(nblocks_);
    sdispls_.resize(nblocks_);
    rdispls_.resize(nblocks_);
    int spos = 0, rpos = 0;
    for (int b = 0; b < nblocks_; ++b) {
      scounts_[b] = send_count(b);
      rcounts_[b] = recv_count(b);
      sdispls_[b] = spos;
      rdispls_[b] = rpos;
      spos += scounts_[b] + 1 + b % 3;
      rpos += rcounts_[b] + 1 + (b + 1) % 3;
    }
    send_.assign(std::size_t(spos) + 1, kSentinel);
    recv_.assign(std::size_t(rpos) + 1, kSentinel);
  }

  MPI_Comm comm() const { return comm_; }
  Kind kind() const { return kind_; }
  int count() const { return count_; }
  std::uint32_t* send() { return send_.data(); }
  std::uint32_t* recv() { return recv_.data(); }
  const int* scounts() const { return scounts_.data(); }
  const int* sdispls() const { return sdispls_.data(); }
  const int* rcounts() const { return rcounts_.data(); }
  const int* rdispls() const { return rdispls_.data(); }
  // Uniform exchanges run on contiguous blocks: a displacement of count (+ gap) per block is
  // not expressible in MPI_Alltoall, so they use their own packed layout (gaps only at the
  // end of the buffers).
  bool packed() const { return kind_ == Kind::Uniform || kind_ == Kind::Ring; }

  // Writes the send data of iteration iter and poisons every receive element.
  void prepare(int iter) {
    for (int b = 0; b < nblocks_; ++b)
      for (int e = 0; e < scounts_[b]; ++e)
        send_[std::size_t(send_offset(b) + e)] = value(me_, send_dest(b), e, iter);
    for (int b = 0; b < nblocks_; ++b)
      for (int e = 0; e < rcounts_[b]; ++e)
        recv_[std::size_t(recv_offset(b) + e)] = ~value(recv_source(b), recv_tag(b), e, iter);
  }

  // Checks every received element and every gap; returns the number of wrong ones (a few are
  // reported as gtest failures naming `what`).
  long check(int iter, const std::string& what) const {
    long bad = 0;
    int reported = 0;
    std::vector<char> covered(recv_.size(), 0);
    for (int b = 0; b < nblocks_; ++b)
      for (int e = 0; e < rcounts_[b]; ++e) {
        const std::size_t pos = std::size_t(recv_offset(b) + e);
        covered[pos] = 1;
        const std::uint32_t want = value(recv_source(b), recv_tag(b), e, iter);
        if (recv_[pos] != want) {
          ++bad;
          if (reported++ < 3)
            ADD_FAILURE() << what << ": rank " << me_ << ", iteration " << iter << ", block " << b
                          << " (from rank " << recv_source(b) << "), element " << e
                          << ": expected 0x" << std::hex << want << ", got 0x" << recv_[pos];
        }
      }
    for (std::size_t pos = 0; pos < recv_.size(); ++pos)
      if (!covered[pos] && recv_[pos] != kSentinel) {
        ++bad;
        if (reported++ < 3)
          ADD_FAILURE() << what << ": rank " << me_ << ", iteration " << iter << ": element " << pos
                        << " outside every receive block was overwritten";
      }
    for (int b = 0; b < nblocks_; ++b)  // the send buffer is read only
      for (int e = 0; e < scounts_[b]; ++e)
        if (send_[std::size_t(send_offset(b) + e)] != value(me_, send_dest(b), e, iter)) {
          ++bad;
          if (reported++ < 3)
            ADD_FAILURE() << what << ": rank " << me_ << ": the send buffer changed";
        }
    if (bad > 3) ADD_FAILURE() << what << ": rank " << me_ << ": " << bad << " wrong elements";
    return bad;
  }

  // Persistent init with info (MPI_INFO_NULL allowed).
  int init(MPI_Info info, MPIX_Request* req) {
    switch (kind_) {
      case Kind::Uniform:
        return MPIX_Alltoall_init(send(), count_, MPI_UINT32_T, recv(), count_, MPI_UINT32_T, comm_,
                                  info, req);
      case Kind::Varying:
        return MPIX_Alltoallv_init(send(), scounts(), sdispls(), MPI_UINT32_T, recv(), rcounts(),
                                   rdispls(), MPI_UINT32_T, comm_, info, req);
      case Kind::Ring:
        return MPIX_Neighbor_alltoall_init(send(), count_, MPI_UINT32_T, recv(), count_,
                                           MPI_UINT32_T, comm_, info, req);
    }
    return MPI_ERR_INTERN;
  }
  // Persistent init selecting `algorithm` ("" = none) and, when `progress` is not empty,
  // info "mpix_progress" = progress.
  int init(const std::string& algorithm, const std::string& progress, MPIX_Request* req) {
    MPI_Info info = MPI_INFO_NULL;
    if (!algorithm.empty() || !progress.empty()) MPI_Info_create(&info);
    if (!algorithm.empty()) MPI_Info_set(info, MPIX_INFO_KEY_ALGORITHM, algorithm.c_str());
    if (!progress.empty()) MPI_Info_set(info, "mpix_progress", progress.c_str());
    const int rc = init(info, req);
    if (info != MPI_INFO_NULL) MPI_Info_free(&info);
    return rc;
  }
  // The blocking call (algorithm: the communicator's, see MPIX_Comm_set_algorithm).
  int blocking() {
    switch (kind_) {
      case Kind::Uniform:
        return MPIX_Alltoall(send(), count_, MPI_UINT32_T, recv(), count_, MPI_UINT32_T, comm_);
      case Kind::Varying:
        return MPIX_Alltoallv(send(), scounts(), sdispls(), MPI_UINT32_T, recv(), rcounts(),
                              rdispls(), MPI_UINT32_T, comm_);
      case Kind::Ring:
        return MPIX_Neighbor_alltoall(send(), count_, MPI_UINT32_T, recv(), count_, MPI_UINT32_T,
                                      comm_);
    }
    return MPI_ERR_INTERN;
  }

 private:
  std::uint32_t value(int src, int dst, int elem, int iter) const {
    return static_cast<std::uint32_t>(mix(std::uint64_t(src), std::uint64_t(dst),
                                          std::uint64_t(elem),
                                          salt_ * 1000033u + std::uint64_t(iter)));
  }
  int varying_count(int s, int d) const {
    const std::uint64_t h = mix(std::uint64_t(s), std::uint64_t(d), ~std::uint64_t(0), salt_);
    if (h % 5 == 0) return 0;  // some pairs exchange nothing
    return int(h % std::uint64_t(count_ + 1));
  }
  int send_count(int b) const { return kind_ == Kind::Varying ? varying_count(me_, b) : count_; }
  int recv_count(int b) const { return kind_ == Kind::Varying ? varying_count(b, me_) : count_; }
  // Uniform and ring blocks are contiguous (b * count); varying blocks use the displacements.
  int send_offset(int b) const { return packed() ? b * count_ : sdispls_[b]; }
  int recv_offset(int b) const { return packed() ? b * count_ : rdispls_[b]; }
  // The "destination" coordinate of the formula: the destination rank, or on a ring the
  // sender's block index (0 = towards -1, 1 = towards +1).
  int send_dest(int b) const { return b; }
  int recv_source(int b) const {
    if (kind_ == Kind::Ring) return b == 0 ? left_ : right_;
    return b;
  }
  int recv_tag(int b) const {
    if (kind_ == Kind::Ring) return 1 - b;  // the left neighbor sent its block 1, the right its 0
    return me_;
  }

  MPI_Comm comm_;
  Kind kind_;
  int count_;
  std::uint64_t salt_;
  int me_ = 0, P_ = 1, nblocks_ = 0, left_ = 0, right_ = 0;
  std::vector<int> scounts_, rcounts_, sdispls_, rdispls_;
  std::vector<std::uint32_t> send_, recv_;
};

// A periodic 1-D Cartesian communicator over comm (collective; the caller frees it).
inline MPI_Comm ring_of(MPI_Comm comm) {
  int P = 1;
  MPI_Comm_size(comm, &P);
  int dims = P, periods = 1;
  MPI_Comm ring = MPI_COMM_NULL;
  MPI_Cart_create(comm, 1, &dims, &periods, 0, &ring);
  MPI_Comm_set_errhandler(ring, MPI_ERRORS_RETURN);
  return ring;
}

// A duplicate of comm whose errors return (collective; the caller frees it).
inline MPI_Comm dup_of(MPI_Comm comm) {
  MPI_Comm d = MPI_COMM_NULL;
  MPI_Comm_dup(comm, &d);
  MPI_Comm_set_errhandler(d, MPI_ERRORS_RETURN);
  return d;
}

}  // namespace mpia_thread_test
