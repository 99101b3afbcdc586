// The plan caches under many distinct patterns (issue 41): an unmodified application may call
// MPI_Alltoallv with thousands of patterns, so every per-communicator cache of plans is bounded
// in bytes (MPIX_PLAN_CACHE_BYTES, set by the registration: see plan_cache.cmake) as well as in
// entries. Hundreds of distinct alltoallv count patterns, blocking (under auto and under bruck,
// which take the agreed plan cache) and nonblocking (MPIX_Ialltoallv's idle plans), each call's
// every received element against a formula on every rank (and the holes between blocks left
// alone), failures summed over ranks; then:
//   - the agreed cache evicts in step: its entry count and the sum of its entries' agreed sizes
//     are the same on every rank after every call (a rank evicting by its own bytes differs);
//   - its agreed sum stays within the bound (or it holds one plan alone), and the communicator's
//     plans within the bound plus two plans (the agreed cache's newest, whose size is agreed at
//     the next call, and the blocking calls' last plan);
//   - the process's peak (MPIA_Plan_cache_bytes, what MPIX_REPORT prints) stays within the
//     bound plus two plans (the agreed cache's newest and the blocking calls' last plan);
//   - a repeated pattern hits (MPIA_Comm_last_call, recorded under MPIX_REPORT=1).
#include "test_support.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

// Not in the public header (src/api/c_api.cpp).
extern "C" int MPIA_Plan_cache_bytes(MPI_Count* peak_bytes, MPI_Count* bytes_now,
                                     MPI_Count* entries_now, MPI_Count* largest_plan);
extern "C" int MPIA_Comm_plan_cache(MPI_Comm comm, MPI_Count* entries, MPI_Count* agreed_bytes,
                                    MPI_Count* bytes);
extern "C" int MPIA_Comm_last_call(MPI_Comm comm, int collective, const char** algorithm,
                                   int* cache_hit);

namespace {

using mpia_test::error_string;
const auto rank_of = mpia_test::comm_rank;
const auto size_of = mpia_test::comm_size;

// The bound the registration set, in bytes (MPIX_PLAN_CACHE_BYTES: digits, optional K, M or G).
long long bound() {
  const char* v = std::getenv("MPIX_PLAN_CACHE_BYTES");
  if (!v) return -1;
  char* end = nullptr;
  long long n = std::strtoll(v, &end, 10);
  switch (*end) {
    case 'K':
    case 'k':
      n <<= 10;
      break;
    case 'M':
    case 'm':
      n <<= 20;
      break;
    case 'G':
    case 'g':
      n <<= 30;
      break;
    default:
      break;
  }
  return n;
}

// Pattern k of rank r: what it sends to rank j (elements), the first element's offset and the
// gap after each block. Distinct for k < 420 at any P (k mod 3, 4, 5 and 7 all enter). One rank
// (k mod 7) sends 2 KiB blocks, so that a forwarding plan's scratch, and its bytes, differ
// across ranks (which an eviction by this rank's own bytes would then show).
int count_of(int r, int j, int k) {
  return (r * 3 + j * 5 + k) % 4 + k % 3 + (r == k % 7 ? 512 : 0);
}
int send_offset(int k) { return k % 5; }
int recv_offset(int k) { return (k * 3) % 7; }
constexpr int kSendGap = 1, kRecvGap = 2, kHole = -1;

// The element that rank src sends to rank dst at index i of pattern k, call n.
int value_of(int src, int dst, int k, int i, int n) {
  return src * 1000003 + dst * 7919 + k * 131 + i + n * 17;
}

struct Pattern {
  std::vector<int> scounts, sdispls, rcounts, rdispls;
  int send_total = 0, recv_total = 0;
};

Pattern pattern(int me, int P, int k) {
  Pattern p;
  int s = send_offset(k), r = recv_offset(k);
  for (int j = 0; j < P; ++j) {
    p.scounts.push_back(count_of(me, j, k));
    p.sdispls.push_back(s);
    s += p.scounts.back() + kSendGap;
    p.rcounts.push_back(count_of(j, me, k));
    p.rdispls.push_back(r);
    r += p.rcounts.back() + kRecvGap;
  }
  p.send_total = s, p.recv_total = r;
  return p;
}

// Fills send for call n of pattern k; returns the wrong elements of recv after it.
void fill(const Pattern& p, int me, int k, int n, std::vector<int>& send, std::vector<int>& recv) {
  send.assign(std::size_t(p.send_total), kHole);
  for (std::size_t j = 0; j < p.scounts.size(); ++j)
    for (int i = 0; i < p.scounts[j]; ++i)
      send[std::size_t(p.sdispls[j] + i)] = value_of(me, int(j), k, i, n);
  recv.assign(std::size_t(p.recv_total), kHole);
}

long long wrong(const Pattern& p, int me, int k, int n, const std::vector<int>& recv) {
  std::vector<int> want(std::size_t(p.recv_total), kHole);
  for (std::size_t j = 0; j < p.rcounts.size(); ++j)
    for (int i = 0; i < p.rcounts[j]; ++i)
      want[std::size_t(p.rdispls[j] + i)] = value_of(int(j), me, k, i, n);
  long long bad = 0;
  for (std::size_t i = 0; i < want.size(); ++i) bad += recv[i] != want[i];
  return bad;
}

long long sum(MPI_Comm comm, long long v) {
  MPI_Allreduce(MPI_IN_PLACE, &v, 1, MPI_LONG_LONG, MPI_SUM, comm);
  return v;
}

// Whether v is the same on every rank of comm.
bool same(MPI_Comm comm, long long v) {
  long long lo = v, hi = v;
  MPI_Allreduce(MPI_IN_PLACE, &lo, 1, MPI_LONG_LONG, MPI_MIN, comm);
  MPI_Allreduce(MPI_IN_PLACE, &hi, 1, MPI_LONG_LONG, MPI_MAX, comm);
  return lo == hi;
}

struct Totals {
  MPI_Count peak = 0, now = 0, entries = 0, largest = 0;
};
Totals totals() {
  Totals t;
  EXPECT_EQ(MPIA_Plan_cache_bytes(&t.peak, &t.now, &t.entries, &t.largest), MPI_SUCCESS);
  return t;
}

// Blocking alltoallv of patterns 0..npatterns-1, each called `calls` times in a row (the first
// call of a pattern runs uncached, the second builds and caches the agreed plan, the third hits
// it), checking the agreed cache after every call. Returns the wrong elements on this rank.
long long run_blocking_patterns(MPI_Comm comm, int npatterns, int calls) {
  const int P = size_of(comm), me = rank_of(comm);
  const long long B = bound();
  std::vector<int> send, recv;
  long long bad = 0, n = 0;
  int steps_out_of_step = 0, over_bound = 0, local_over = 0;
  MPI_Count most = 0, largest_agreed_sum = 0;
  for (int k = 0; k < npatterns; ++k) {
    const Pattern p = pattern(me, P, k);
    for (int c = 0; c < calls; ++c, ++n) {
      fill(p, me, k, int(n), send, recv);
      const int rc = MPIX_Alltoallv(send.data(), p.scounts.data(), p.sdispls.data(), MPI_INT,
                                    recv.data(), p.rcounts.data(), p.rdispls.data(), MPI_INT, comm);
      EXPECT_EQ(rc, MPI_SUCCESS) << "pattern " << k << ": " << error_string(rc);
      bad += wrong(p, me, k, int(n), recv);
      MPI_Count entries = 0, agreed = 0, bytes = 0;
      EXPECT_EQ(MPIA_Comm_plan_cache(comm, &entries, &agreed, &bytes), MPI_SUCCESS);
      most = std::max(most, entries);
      largest_agreed_sum = std::max(largest_agreed_sum, agreed);
      // In step on every rank: what the agreed eviction is for.
      const bool in_step = same(comm, entries) && same(comm, agreed);
      if (!in_step && steps_out_of_step++ == 0)
        ADD_FAILURE() << "the agreed plan cache differs across ranks after pattern " << k
                      << " call " << c << " (here: " << entries << " entries, " << agreed
                      << " agreed bytes)";
      if (agreed > B && entries > 1 && over_bound++ == 0)
        ADD_FAILURE() << "agreed bytes " << agreed << " > bound " << B << " with " << entries
                      << " entries, pattern " << k;
      // The communicator's plans: the agreed cache within the bound plus its newest plan, and
      // the blocking calls' last plan.
      const MPI_Count largest = totals().largest;
      if (bytes > B + 2 * largest && local_over++ == 0)
        ADD_FAILURE() << "cache bytes " << bytes << " > bound " << B << " + two plans (" << largest
                      << " each at most), pattern " << k;
    }
  }
  if (me == 0)
    std::printf("[plan cache] %d patterns: at most %lld entries, agreed bytes at most %lld\n",
                npatterns, static_cast<long long>(most),
                static_cast<long long>(largest_agreed_sum));
  // The bound, not the entry count, is what limits the cache here.
  EXPECT_LT(most, 16);
  return bad;
}

// The process's peak within the bound plus two plans (the agreed cache's newest, whose size is
// agreed at the next call, and the blocking calls' last plan); a bound that binds at all.
void expect_peak_within_bound(const char* what) {
  const Totals t = totals();
  const long long B = bound();
  if (rank_of(MPI_COMM_WORLD) == 0)
    std::printf("[plan cache] %s: bound %lld, peak %lld, largest plan %lld\n",
                *what ? what : "auto", B, static_cast<long long>(t.peak),
                static_cast<long long>(t.largest));
  EXPECT_GT(t.largest, 0) << what;
  EXPECT_LE(t.peak, B + 2 * t.largest)
      << what << ": peak " << t.peak << ", bound " << B << ", largest plan " << t.largest;
  // The test means something only if the entry count (16) alone would not keep it there.
  EXPECT_LT(B, 16 * t.largest) << what << ": the bound does not bind (largest plan " << t.largest
                               << ")";
}

void blocking_case(const char* selection) {
  ASSERT_GT(bound(), 0) << "MPIX_PLAN_CACHE_BYTES is not set (see plan_cache.cmake)";
  MPI_Comm comm;
  MPI_Comm_dup(MPI_COMM_WORLD, &comm);
  if (*selection) {
    ASSERT_EQ(MPIX_Comm_set_algorithm(comm, "alltoallv", selection), MPI_SUCCESS);
  }
  EXPECT_EQ(sum(comm, run_blocking_patterns(comm, 200, 3)), 0) << selection;
  // One pattern repeated: after its first two calls, every call hits on every rank.
  const int P = size_of(comm), me = rank_of(comm);
  const Pattern p = pattern(me, P, 401);
  std::vector<int> send, recv;
  long long bad = 0, misses = 0;
  for (int n = 0; n < 10; ++n) {
    fill(p, me, 401, n, send, recv);
    ASSERT_EQ(MPIX_Alltoallv(send.data(), p.scounts.data(), p.sdispls.data(), MPI_INT, recv.data(),
                             p.rcounts.data(), p.rdispls.data(), MPI_INT, comm),
              MPI_SUCCESS);
    bad += wrong(p, me, 401, n, recv);
    const char* algorithm = nullptr;
    int hit = 0;
    ASSERT_EQ(MPIA_Comm_last_call(comm, 1, &algorithm, &hit), MPI_SUCCESS);
    if (n >= 2) misses += !hit;
  }
  EXPECT_EQ(sum(comm, bad), 0);
  EXPECT_EQ(sum(comm, misses), 0) << "a repeated pattern missed the agreed cache";
  expect_peak_within_bound(selection);
  MPI_Comm_free(&comm);
  // Freed with the communicator.
  EXPECT_EQ(totals().now, 0);
  EXPECT_EQ(totals().entries, 0);
}

TEST(PlanCacheBytes, BlockingAuto) { blocking_case(""); }

TEST(PlanCacheBytes, BlockingBruck) { blocking_case("bruck"); }

// MPIX_Ialltoallv with many patterns, 4 calls active at once (the idle plans' cache is local:
// its hits need no agreement, only the bound).
TEST(PlanCacheBytes, Nonblocking) {
  ASSERT_GT(bound(), 0);
  MPI_Comm comm;
  MPI_Comm_dup(MPI_COMM_WORLD, &comm);
  const int P = size_of(comm), me = rank_of(comm);
  constexpr int kActive = 4;
  long long bad = 0;
  MPI_Count max_bytes = 0;
  std::vector<std::vector<int>> send(kActive), recv(kActive);
  for (int round = 0; round < 2; ++round)
    for (int k0 = 0; k0 < 200; k0 += kActive) {
      std::vector<MPIX_Request> reqs(kActive, MPIX_REQUEST_NULL);
      std::vector<Pattern> ps;
      for (int a = 0; a < kActive; ++a) {
        const int k = k0 + a;
        ps.push_back(pattern(me, P, k));
        const Pattern& p = ps.back();
        fill(p, me, k, round, send[a], recv[a]);
        const int rc = MPIX_Ialltoallv(send[a].data(), p.scounts.data(), p.sdispls.data(), MPI_INT,
                                       recv[a].data(), p.rcounts.data(), p.rdispls.data(), MPI_INT,
                                       comm, &reqs[std::size_t(a)]);
        ASSERT_EQ(rc, MPI_SUCCESS) << error_string(rc);
      }
      for (int a = kActive - 1; a >= 0; --a) {
        ASSERT_EQ(MPIX_Wait(&reqs[std::size_t(a)], MPI_STATUS_IGNORE), MPI_SUCCESS);
        bad += wrong(ps[std::size_t(a)], me, k0 + a, round, recv[a]);
      }
      MPI_Count entries = 0, agreed = 0, bytes = 0;
      ASSERT_EQ(MPIA_Comm_plan_cache(comm, &entries, &agreed, &bytes), MPI_SUCCESS);
      if (bytes > max_bytes) max_bytes = bytes;
    }
  EXPECT_EQ(sum(comm, bad), 0);
  const Totals t = totals();
  // The idle plans: within the bound, or one plan alone.
  EXPECT_LE(max_bytes, std::max<long long>(bound(), t.largest)) << "largest plan " << t.largest;
  EXPECT_LE(t.peak, bound() + 2 * t.largest) << "largest plan " << t.largest;
  EXPECT_GT(t.entries, 0);
  MPI_Comm_free(&comm);
  EXPECT_EQ(totals().now, 0);
}

}  // namespace
