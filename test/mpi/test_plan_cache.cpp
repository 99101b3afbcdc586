// The plan caches under many distinct patterns (issue 41): an unmodified application may call
// MPI_Alltoallv with thousands of patterns, so every per-communicator cache of plans is bounded
// in bytes (MPIX_PLAN_CACHE_BYTES, set by the registration: see plan_cache.cmake) as well as in
// entries. Hundreds of distinct alltoallv count patterns, blocking (under auto and under bruck,
// which take the agreed plan cache; MPIX_Neighbor_alltoallv on a periodic ring under auto too)
// and nonblocking (MPIX_Ialltoallv's idle plans), each call's
// every received element against a formula on every rank (and the holes between blocks left
// alone), failures summed over ranks; then:
//   - the agreed cache evicts in step: its entry count and the sum of its entries' agreed sizes
//     are the same on every rank after every call (a rank evicting by its own bytes differs);
//   - its agreed sum stays within the bound (or it holds one plan alone), and the communicator's
//     plans within the bound plus two plans (the agreed cache's newest, whose size is agreed at
//     the next call, and the blocking calls' last plan);
//   - the process's peak (mpia_private_plan_cache_bytes, what MPIX_REPORT prints) stays within the
//     bound plus two plans (the agreed cache's newest and the blocking calls' last plan);
//   - a repeated pattern hits (mpia_private_comm_last_call, recorded under MPIX_REPORT=1).
#include "mpia_private.h"
#include "test_support.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <utility>
#include <vector>

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

// How many distinct patterns each case runs: 200, or MPIA_TEST_PLAN_CACHE_PATTERNS (MPICH's
// registrations take fewer: oversubscribed, it busy-polls through every collective).
int npatterns() {
  const char* v = std::getenv("MPIA_TEST_PLAN_CACHE_PATTERNS");
  return v ? std::atoi(v) : 200;
}

// Pattern k of rank r: what it sends in its block j (elements; block j goes to rank j for
// alltoallv, to neighbor j for the neighbor call), the first element's offset and the gap after
// each block. Distinct for k < 420 at any P (k mod 3, 4, 5 and 7 all enter). One rank (k mod 7)
// sends 2 KiB blocks, so that a forwarding plan's scratch, and its bytes, differ across ranks
// (which an eviction by this rank's own bytes would then show).
int count_of(int r, int j, int k) {
  return (r * 3 + j * 5 + k) % 4 + k % 3 + (r == k % 7 ? 512 : 0);
}
int send_offset(int k) { return k % 5; }
int recv_offset(int k) { return (k * 3) % 7; }
constexpr int kSendGap = 1, kRecvGap = 2, kHole = -1;

// The element that rank src sends in its block j at index i of pattern k, call n.
int value_of(int src, int j, int k, int i, int n) {
  return src * 1000003 + j * 7919 + k * 131 + i + n * 17;
}

// Who sends what this rank receives: per receive block, the sending rank and its block.
struct Shape {
  int nsend = 0;
  std::vector<std::pair<int, int>> from;
};

// MPIX_Alltoallv: block j to and from rank j.
Shape alltoallv_shape(int me, int P) {
  Shape sh;
  sh.nsend = P;
  for (int j = 0; j < P; ++j) sh.from.emplace_back(j, me);
  return sh;
}

// MPIX_Neighbor_alltoallv on a periodic ring (MPI_Cart_create, one dimension): blocks to and
// from the left and the right neighbor; the left one's block 1 (its right) arrives in block 0.
Shape ring_shape(int me, int P) {
  Shape sh;
  sh.nsend = 2;
  sh.from = {{(me + P - 1) % P, 1}, {(me + 1) % P, 0}};
  return sh;
}

struct Pattern {
  std::vector<int> scounts, sdispls, rcounts, rdispls;
  int send_total = 0, recv_total = 0;
};

Pattern pattern(int me, const Shape& sh, int k) {
  Pattern p;
  int s = send_offset(k), r = recv_offset(k);
  for (int j = 0; j < sh.nsend; ++j) {
    p.scounts.push_back(count_of(me, j, k));
    p.sdispls.push_back(s);
    s += p.scounts.back() + kSendGap;
  }
  for (const auto& [src, block] : sh.from) {
    p.rcounts.push_back(count_of(src, block, k));
    p.rdispls.push_back(r);
    r += p.rcounts.back() + kRecvGap;
  }
  p.send_total = s, p.recv_total = r;
  return p;
}

// Fills send for call n of pattern k, and recv with holes.
void fill(const Pattern& p, int me, int k, int n, std::vector<int>& send, std::vector<int>& recv) {
  send.assign(std::size_t(p.send_total), kHole);
  for (std::size_t j = 0; j < p.scounts.size(); ++j)
    for (int i = 0; i < p.scounts[j]; ++i)
      send[std::size_t(p.sdispls[j] + i)] = value_of(me, int(j), k, i, n);
  recv.assign(std::size_t(p.recv_total), kHole);
}

// The wrong elements of recv after call n of pattern k (holes included).
long long wrong(const Pattern& p, const Shape& sh, int k, int n, const std::vector<int>& recv) {
  std::vector<int> want(std::size_t(p.recv_total), kHole);
  for (std::size_t b = 0; b < sh.from.size(); ++b)
    for (int i = 0; i < p.rcounts[b]; ++i)
      want[std::size_t(p.rdispls[b] + i)] = value_of(sh.from[b].first, sh.from[b].second, k, i, n);
  long long bad = 0;
  for (std::size_t i = 0; i < want.size(); ++i) bad += recv[i] != want[i];
  return bad;
}

// One blocking call of pattern p: alltoallv, or the neighbor call on a topology communicator.
int call(MPI_Comm comm, bool neighbor, const Pattern& p, const std::vector<int>& send,
         std::vector<int>& recv) {
  if (neighbor)
    return MPIX_Neighbor_alltoallv(send.data(), p.scounts.data(), p.sdispls.data(), MPI_INT,
                                   recv.data(), p.rcounts.data(), p.rdispls.data(), MPI_INT, comm);
  return MPIX_Alltoallv(send.data(), p.scounts.data(), p.sdispls.data(), MPI_INT, recv.data(),
                        p.rcounts.data(), p.rdispls.data(), MPI_INT, comm);
}

long long sum(MPI_Comm comm, long long v) {
  MPI_Allreduce(MPI_IN_PLACE, &v, 1, MPI_LONG_LONG, MPI_SUM, comm);
  return v;
}

// Whether a and b are each the same on every rank of comm (one allreduce).
bool same(MPI_Comm comm, long long a, long long b) {
  long long v[4] = {a, -a, b, -b};
  MPI_Allreduce(MPI_IN_PLACE, v, 4, MPI_LONG_LONG, MPI_MAX, comm);
  return v[0] == -v[1] && v[2] == -v[3];
}

struct Totals {
  MPI_Count peak = 0, now = 0, entries = 0, largest = 0;
};
Totals totals() {
  Totals t;
  EXPECT_EQ(mpia_private_plan_cache_bytes(&t.peak, &t.now, &t.entries, &t.largest), MPI_SUCCESS);
  return t;
}

// Blocking alltoallv of patterns 0..npatterns-1, each called `calls` times in a row (the first
// call of a pattern runs uncached, the second builds and caches the agreed plan, the third hits
// it), checking the agreed cache after every call. Returns the wrong elements on this rank.
long long run_blocking_patterns(MPI_Comm comm, bool neighbor, int npatterns, int calls) {
  const int P = size_of(comm), me = rank_of(comm);
  const Shape sh = neighbor ? ring_shape(me, P) : alltoallv_shape(me, P);
  const long long B = bound();
  std::vector<int> send, recv;
  long long bad = 0, n = 0;
  int steps_out_of_step = 0, over_bound = 0, local_over = 0;
  MPI_Count most = 0, largest_agreed_sum = 0;
  for (int k = 0; k < npatterns; ++k) {
    const Pattern p = pattern(me, sh, k);
    for (int c = 0; c < calls; ++c, ++n) {
      fill(p, me, k, int(n), send, recv);
      const int rc = call(comm, neighbor, p, send, recv);
      EXPECT_EQ(rc, MPI_SUCCESS) << "pattern " << k << ": " << error_string(rc);
      bad += wrong(p, sh, k, int(n), recv);
      MPI_Count entries = 0, agreed = 0, bytes = 0;
      EXPECT_EQ(mpia_private_comm_plan_cache(comm, &entries, &agreed, &bytes), MPI_SUCCESS);
      most = std::max(most, entries);
      largest_agreed_sum = std::max(largest_agreed_sum, agreed);
      // In step on every rank: what the agreed eviction is for.
      const bool in_step = same(comm, entries, agreed);
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
    std::printf("[plan cache] %s: bound %lld, peak %lld, largest plan %lld\n", what, B,
                static_cast<long long>(t.peak), static_cast<long long>(t.largest));
  EXPECT_GT(t.largest, 0) << what;
  EXPECT_LE(t.peak, B + 2 * t.largest)
      << what << ": peak " << t.peak << ", bound " << B << ", largest plan " << t.largest;
  // The test means something only if the entry count (16) alone would not keep it there.
  EXPECT_LT(B, 16 * t.largest) << what << ": the bound does not bind (largest plan " << t.largest
                               << ")";
}

// Blocking calls of many patterns on comm (a copy of MPI_COMM_WORLD, or a periodic ring for the
// neighbor call) under `selection` ("": auto), then one pattern repeated.
void blocking_case(bool neighbor, const char* selection) {
  ASSERT_GT(bound(), 0) << "MPIX_PLAN_CACHE_BYTES is not set (see plan_cache.cmake)";
  MPI_Comm comm;
  const int P = size_of(MPI_COMM_WORLD), me = rank_of(MPI_COMM_WORLD);
  if (neighbor) {
    int dims[1] = {P}, periods[1] = {1};
    MPI_Cart_create(MPI_COMM_WORLD, 1, dims, periods, 0, &comm);
  } else {
    MPI_Comm_dup(MPI_COMM_WORLD, &comm);
  }
  const char* collective = neighbor ? "neighbor_alltoallv" : "alltoallv";
  if (*selection) {
    ASSERT_EQ(MPIX_Comm_set_algorithm(comm, collective, selection), MPI_SUCCESS);
  }
  EXPECT_EQ(sum(comm, run_blocking_patterns(comm, neighbor, npatterns(), 3)), 0) << selection;
  // One pattern repeated: after its first two calls, every call hits on every rank.
  const Shape sh = neighbor ? ring_shape(me, P) : alltoallv_shape(me, P);
  const Pattern p = pattern(me, sh, 401);
  std::vector<int> send, recv;
  long long bad = 0, misses = 0;
  for (int n = 0; n < 10; ++n) {
    fill(p, me, 401, n, send, recv);
    ASSERT_EQ(call(comm, neighbor, p, send, recv), MPI_SUCCESS);
    bad += wrong(p, sh, 401, n, recv);
    const char* algorithm = nullptr;
    int hit = 0;
    ASSERT_EQ(mpia_private_comm_last_call(comm, neighbor ? "neighbor_alltoallv" : "alltoallv",
                                          &algorithm, &hit),
              MPI_SUCCESS);
    if (n >= 2) misses += !hit;
  }
  EXPECT_EQ(sum(comm, bad), 0);
  EXPECT_EQ(sum(comm, misses), 0) << "a repeated pattern missed the agreed cache";
  expect_peak_within_bound(
      (std::string(collective) + " " + (*selection ? selection : "auto")).c_str());
  MPI_Comm_free(&comm);
  // Freed with the communicator.
  EXPECT_EQ(totals().now, 0);
  EXPECT_EQ(totals().entries, 0);
}

TEST(PlanCacheBytes, BlockingAuto) { blocking_case(false, ""); }

TEST(PlanCacheBytes, BlockingBruck) { blocking_case(false, "bruck"); }

TEST(PlanCacheBytes, NeighborAuto) { blocking_case(true, ""); }

// MPIX_Ialltoallv with many patterns, 4 calls active at once (the idle plans' cache is local:
// its hits need no agreement, only the bound).
TEST(PlanCacheBytes, Nonblocking) {
  ASSERT_GT(bound(), 0);
  MPI_Comm comm;
  MPI_Comm_dup(MPI_COMM_WORLD, &comm);
  const int P = size_of(comm), me = rank_of(comm);
  const Shape sh = alltoallv_shape(me, P);
  constexpr int kActive = 4;
  long long bad = 0;
  MPI_Count max_bytes = 0;
  std::vector<std::vector<int>> send(kActive), recv(kActive);
  for (int round = 0; round < 2; ++round)
    for (int k0 = 0; k0 < npatterns(); k0 += kActive) {
      std::vector<MPIX_Request> reqs(kActive, MPIX_REQUEST_NULL);
      std::vector<Pattern> ps;
      for (int a = 0; a < kActive; ++a) {
        const int k = k0 + a;
        ps.push_back(pattern(me, sh, k));
        const Pattern& p = ps.back();
        fill(p, me, k, round, send[a], recv[a]);
        const int rc = MPIX_Ialltoallv(send[a].data(), p.scounts.data(), p.sdispls.data(), MPI_INT,
                                       recv[a].data(), p.rcounts.data(), p.rdispls.data(), MPI_INT,
                                       comm, &reqs[std::size_t(a)]);
        ASSERT_EQ(rc, MPI_SUCCESS) << error_string(rc);
      }
      for (int a = kActive - 1; a >= 0; --a) {
        ASSERT_EQ(MPIX_Wait(&reqs[std::size_t(a)], MPI_STATUS_IGNORE), MPI_SUCCESS);
        bad += wrong(ps[std::size_t(a)], sh, k0 + a, round, recv[a]);
      }
      MPI_Count entries = 0, agreed = 0, bytes = 0;
      ASSERT_EQ(mpia_private_comm_plan_cache(comm, &entries, &agreed, &bytes), MPI_SUCCESS);
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
