// Datatypes larger than INT_MAX bytes (issue 9, item 8a): one element of a contiguous type of
// 2^31 + 64 bytes must arrive intact with every algorithm (it used to "succeed" in no time and
// move nothing). Alltoall at one rank (the block to itself), alltoallv at two ranks with only
// the cross-rank block non-empty: each rank holds one 2 GiB + 64 send block and one receive
// block. And the large-count forms (issue 20): 2^31 + 64 elements (> INT_MAX) of MPI_BYTE, or of
// a one-byte indexed type, through every MPIX_*_c and MPIX_*_init_c function at one rank.
// Sampled 8-byte words of the received block (the first and last MiB whole, one word per
// 4 KiB page between) are poisoned before each run and checked against a formula after it. Skipped
// (on every rank alike) when /proc/meminfo's MemAvailable is too low; MPIA_LARGE_ALGORITHMS=a,b,...
// restricts the algorithms.
#include <gtest/gtest.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include "hardening_util.hpp"
#include "test_support.hpp"

using namespace hardening;
using namespace mpia_test;

namespace {

constexpr std::int64_t kChunk = 64;
constexpr std::int64_t kChunks = (std::int64_t(1) << 25) + 1;  // x 64 = 2^31 + 64 bytes
constexpr std::int64_t kBytes = kChunk * kChunks;
constexpr std::int64_t kWords = kBytes / 8;

std::int64_t mem_available_bytes() {
  std::FILE* f = std::fopen("/proc/meminfo", "r");
  if (!f) return -1;
  char line[256];
  std::int64_t kb = -1;
  while (std::fgets(line, sizeof line, f)) {
    long long v = 0;
    if (std::sscanf(line, "MemAvailable: %lld kB", &v) == 1) {
      kb = v;
      break;
    }
  }
  std::fclose(f);
  return kb < 0 ? -1 : kb * 1024;
}

// Skip unless every rank sees enough memory for the whole job (the ranks share the machine:
// each needs `per_rank` bytes). Decided on the minimum over ranks, so identically everywhere.
bool enough_memory(std::int64_t per_rank, std::string* why) {
  const int P = comm_size(MPI_COMM_WORLD);
  long long mine = mem_available_bytes(), least = 0;
  MPI_Allreduce(&mine, &least, 1, MPI_LONG_LONG, MPI_MIN, MPI_COMM_WORLD);
  const long long need = (long long)per_rank * P + (2LL << 30);
  if (least >= need) return true;
  std::ostringstream s;
  s << "MemAvailable " << (least >> 20) << " MiB < " << (need >> 20) << " MiB needed";
  *why = s.str();
  return false;
}

// The word at index i of the block rank src sends to rank dst.
inline std::uint64_t word(int src, int dst, std::int64_t i) {
  std::uint64_t x = std::uint64_t(i) * 0x9E3779B97F4A7C15ull;
  x ^= (std::uint64_t(src) << 56) ^ (std::uint64_t(dst) << 48);
  return x ^ (x >> 29);
}

// A buffer of one big block (plus a tail of guard words).
struct Big {
  std::unique_ptr<std::uint64_t[]> mem;
  static constexpr std::int64_t kTail = 8;
  Big() : mem(new std::uint64_t[std::size_t(kWords + kTail)]) {}
  int filled_src = -1, filled_dst = -1;
  void fill(int src, int dst) {
    if (src == filled_src && dst == filled_dst) return;  // writing 2 GiB takes a while
    filled_src = src;
    filled_dst = dst;
    std::uint64_t* p = mem.get();
    for (std::int64_t i = 0; i < kWords; ++i) p[i] = word(src, dst, i);
    for (std::int64_t i = 0; i < kTail; ++i) p[kWords + i] = 0x6A6A6A6A6A6A6A6Aull;
  }
  // The words checked: every word of the first and last MiB, and one word in every 4 KiB
  // page in between (at an offset that moves from page to page). Only those are poisoned
  // before a run, so a run that moves nothing, or only part of the block, leaves poison.
  template <class F>
  static void for_each_sample(F&& f) {
    constexpr std::int64_t edge = (1 << 20) / 8, page = 4096 / 8;
    for (std::int64_t i = 0; i < edge; ++i) f(i);
    for (std::int64_t p = edge / page; (p + 1) * page <= kWords - edge; ++p)
      f(p * page + (p * 37) % page);
    for (std::int64_t i = kWords - edge; i < kWords; ++i) f(i);
  }
  void poison() {
    std::uint64_t* p = mem.get();
    for_each_sample([p](std::int64_t i) { p[i] = 0xA5A5A5A5A5A5A5A5ull; });
    for (std::int64_t i = 0; i < kTail; ++i) p[kWords + i] = 0x6A6A6A6A6A6A6A6Aull;
  }
  // Number of wrong sampled words (the first and last reported).
  std::int64_t check(int src, int dst, const std::string& what) const {
    const std::uint64_t* p = mem.get();
    std::int64_t bad = 0, first = -1, last = -1, samples = 0;
    for_each_sample([&](std::int64_t i) {
      ++samples;
      if (p[i] != word(src, dst, i)) {
        if (first < 0) first = i;
        last = i;
        ++bad;
      }
    });
    for (std::int64_t i = 0; i < kTail; ++i)
      if (p[kWords + i] != 0x6A6A6A6A6A6A6A6Aull) {
        ADD_FAILURE() << what << ": written past the receive block";
        break;
      }
    if (bad)
      ADD_FAILURE() << what << ": " << bad << " of " << samples << " sampled words wrong (bytes "
                    << first * 8 << " to " << last * 8 + 7 << "; e.g. word " << first << " is 0x"
                    << std::hex << p[first] << ", expected 0x" << word(src, dst, first) << ")";
    return bad;
  }
};

// One send and one receive buffer for the whole program (touching 4 GiB of fresh pages is
// slow): allocated by the first test that needs them.
Big& send_buffer() {
  static Big b;
  return b;
}
Big& recv_buffer() {
  static Big b;
  return b;
}

MPI_Datatype big_type() {
  MPI_Datatype chunk, big;
  MPI_Type_contiguous(int(kChunk), MPI_BYTE, &chunk);
  MPI_Type_contiguous(int(kChunks), chunk, &big);
  MPI_Type_commit(&big);
  MPI_Type_free(&chunk);
  return big;
}

std::vector<std::string> algorithms(const char* collective) {
  std::vector<std::string> all = registered_algorithms(collective);
  const char* only = std::getenv("MPIA_LARGE_ALGORITHMS");
  if (!only || !*only) return all;
  std::vector<std::string> keep;
  const std::string list = std::string(",") + only + ",";
  for (const std::string& a : all)
    if (list.find("," + a + ",") != std::string::npos) keep.push_back(a);
  return keep;
}

double now() { return MPI_Wtime(); }

void report(const std::string& what, double seconds) {
  if (comm_rank(MPI_COMM_WORLD) == 0) {
    std::printf("[   MPI    ] %-55s %6.2f s\n", what.c_str(), seconds);
    std::fflush(stdout);
  }
}

// Runs init (persistent: `starts` starts) and blocking, with algorithm alg of collective (the
// blocking call's set on comm), checking the receive buffer after each: the block rank src
// sends to rank dst.
template <class Init, class Blocking>
void run_both(MPI_Comm comm, const char* collective, const std::string& alg,
              const std::string& what, int src, int dst, int starts, Init&& init,
              Blocking&& blocking) {
  Big& recv = recv_buffer();
  MPI_Info info = algorithm_info(alg);
  MPIX_Request req = MPIX_REQUEST_NULL;
  int rc = init(info, &req);
  if (info != MPI_INFO_NULL) MPI_Info_free(&info);
  EXPECT_EQ(rc, MPI_SUCCESS) << what << " init, " << alg << ": " << error_string(rc);
  for (int it = 0; rc == MPI_SUCCESS && it < starts; ++it) {
    recv.poison();
    const double t0 = now();
    EXPECT_EQ(MPIX_Start(&req), MPI_SUCCESS) << what << ", " << alg;
    const int code = MPIX_Wait(&req, MPI_STATUS_IGNORE);
    report(what + " persistent " + alg, now() - t0);
    EXPECT_EQ(code, MPI_SUCCESS) << what << " persistent, " << alg << ": " << error_string(code);
    recv.check(src, dst, what + " persistent, " + alg + ", start " + std::to_string(it));
  }
  if (req != MPIX_REQUEST_NULL) MPIX_Request_free(&req);
  rc = MPIX_Comm_set_algorithm(comm, collective, alg.c_str());
  EXPECT_EQ(rc, MPI_SUCCESS) << error_string(rc);
  recv.poison();
  const double t0 = now();
  rc = blocking();
  report(what + " blocking " + alg, now() - t0);
  EXPECT_EQ(rc, MPI_SUCCESS) << what << " blocking, " << alg << ": " << error_string(rc);
  recv.check(src, dst, what + " blocking, " + alg);
}

// Why a test of one rank and two big buffers cannot run here ("" when it can): another number
// of ranks, or too little memory.
std::string one_rank_skip() {
  if (comm_size(MPI_COMM_WORLD) != 1) return "runs at one rank";
  std::string why;
  return enough_memory(3 * kBytes, &why) ? std::string() : why;
}

TEST(LargeType, TypeIsLargerThanIntMax) {
  MPI_Datatype t = big_type();
  MPI_Count size = 0;
  MPI_Type_size_x(t, &size);
  EXPECT_EQ(std::int64_t(size), kBytes);
  EXPECT_GT(std::int64_t(size), std::int64_t(2147483647));
  MPI_Type_free(&t);
}

// One rank: the block to itself, persistent and blocking, every alltoall algorithm.
TEST(LargeType, AlltoallOneRank) {
  const std::string skip = one_rank_skip();
  if (!skip.empty()) GTEST_SKIP() << skip;
  MPI_Comm comm;
  MPI_Comm_dup(MPI_COMM_WORLD, &comm);
  MPI_Comm_set_errhandler(comm, MPI_ERRORS_RETURN);
  MPI_Datatype t = big_type();
  Big &send = send_buffer(), &recv = recv_buffer();
  send.fill(0, 0);
  void *sb = send.mem.get(), *rb = recv.mem.get();
  for (const std::string& alg : algorithms("alltoall")) {
    // Persistent, twice (the second start reuses everything).
    run_both(
        comm, "alltoall", alg, "alltoall P=1", 0, 0, 2,
        [&](MPI_Info info, MPIX_Request* req) {
          return MPIX_Alltoall_init(sb, 1, t, rb, 1, t, comm, info, req);
        },
        [&] { return MPIX_Alltoall(sb, 1, t, rb, 1, t, comm); });
    if (::testing::Test::HasFailure()) break;
  }
  MPI_Type_free(&t);
  MPI_Comm_free(&comm);
}

// Alltoallv: at two ranks, each sends its one big block to the other and nothing to itself; at
// one rank the block goes to itself. Every alltoallv algorithm, persistent and blocking.
TEST(LargeType, AlltoallvCrossRankBlock) {
  const int P = comm_size(MPI_COMM_WORLD);
  if (P > 2) GTEST_SKIP() << "runs at one or two ranks";
  std::string why;
  if (!enough_memory(3 * kBytes, &why)) GTEST_SKIP() << why;
  MPI_Comm comm;
  MPI_Comm_dup(MPI_COMM_WORLD, &comm);
  MPI_Comm_set_errhandler(comm, MPI_ERRORS_RETURN);
  const int me = comm_rank(comm), peer = (me + 1) % P;
  MPI_Datatype t = big_type();
  // Block for `peer` at displacement 0 of both buffers; every other count 0.
  std::vector<int> sc(std::size_t(P), 0), rc_(std::size_t(P), 0), d(std::size_t(P), 0);
  sc[std::size_t(peer)] = 1;
  rc_[std::size_t(peer)] = 1;
  Big &send = send_buffer(), &recv = recv_buffer();
  send.fill(me, peer);
  void *sb = send.mem.get(), *rb = recv.mem.get();
  for (const std::string& alg : algorithms("alltoallv")) {
    run_both(
        comm, "alltoallv", alg, "alltoallv P=" + std::to_string(P), peer, me, 1,
        [&](MPI_Info info, MPIX_Request* req) {
          return MPIX_Alltoallv_init(sb, sc.data(), d.data(), t, rb, rc_.data(), d.data(), t, comm,
                                     info, req);
        },
        [&] {
          return MPIX_Alltoallv(sb, sc.data(), d.data(), t, rb, rc_.data(), d.data(), t, comm);
        });
    if (!all_true(comm, !::testing::Test::HasFailure())) break;
  }
  MPI_Type_free(&t);
  MPI_Comm_free(&comm);
}

// ------------------------------------------------------------------------------------------
// The large-count forms (MPIX_*_c): one block of kBytes (2^31 + 64 > INT_MAX) elements of
// MPI_BYTE, or of a one-byte type the library cannot treat as plain bytes (an indexed type:
// it binds such a block as one element of a datatype of kBytes elements), from the only rank to
// itself: every _c function, its persistent form once and its blocking form once per algorithm.
// Neighbor calls on a distributed graph of one self edge.
// ------------------------------------------------------------------------------------------
MPI_Datatype indexed_byte() {
  MPI_Datatype t;
  const int at = 0;
  MPI_Type_create_indexed_block(1, 1, &at, MPI_BYTE, &t);
  MPI_Type_commit(&t);
  return t;
}

TEST(LargeCount, AlltoallAndAlltoallv) {
  const std::string skip = one_rank_skip();
  if (!skip.empty()) GTEST_SKIP() << skip;
  MPI_Comm comm;
  MPI_Comm_dup(MPI_COMM_WORLD, &comm);
  MPI_Comm_set_errhandler(comm, MPI_ERRORS_RETURN);
  Big &send = send_buffer(), &recv = recv_buffer();
  send.fill(0, 0);
  void *sb = send.mem.get(), *rb = recv.mem.get();
  const MPI_Count n = kBytes;
  for (const std::string& alg : algorithms("alltoall")) {
    run_both(
        comm, "alltoall", alg, "MPIX_Alltoall_c", 0, 0, 1,
        [&](MPI_Info info, MPIX_Request* req) {
          return MPIX_Alltoall_init_c(sb, n, MPI_BYTE, rb, n, MPI_BYTE, comm, info, req);
        },
        [&] { return MPIX_Alltoall_c(sb, n, MPI_BYTE, rb, n, MPI_BYTE, comm); });
    if (!all_true(comm, !::testing::Test::HasFailure())) break;
  }
  // Received as indexed bytes on even-numbered algorithms, as MPI_BYTE on the others.
  MPI_Datatype bytes1 = indexed_byte();
  const MPI_Count counts[1] = {n};
  const MPI_Aint displs[1] = {0};
  int k = 0;
  for (const std::string& alg : algorithms("alltoallv")) {
    const MPI_Datatype rt = k++ % 2 == 0 ? bytes1 : MPI_BYTE;
    run_both(
        comm, "alltoallv", alg,
        std::string("MPIX_Alltoallv_c") + (rt == bytes1 ? " (indexed bytes)" : ""), 0, 0, 1,
        [&](MPI_Info info, MPIX_Request* req) {
          return MPIX_Alltoallv_init_c(sb, counts, displs, MPI_BYTE, rb, counts, displs, rt, comm,
                                       info, req);
        },
        [&] {
          return MPIX_Alltoallv_c(sb, counts, displs, MPI_BYTE, rb, counts, displs, rt, comm);
        });
    if (!all_true(comm, !::testing::Test::HasFailure())) break;
  }
  MPI_Type_free(&bytes1);
  MPI_Comm_free(&comm);
}

TEST(LargeCount, Neighbor) {
  const std::string skip = one_rank_skip();
  if (!skip.empty()) GTEST_SKIP() << skip;
  MPI_Comm graph;
  const int self = 0;
  MPI_Dist_graph_create_adjacent(MPI_COMM_WORLD, 1, &self, MPI_UNWEIGHTED, 1, &self, MPI_UNWEIGHTED,
                                 MPI_INFO_NULL, 0, &graph);
  MPI_Comm_set_errhandler(graph, MPI_ERRORS_RETURN);
  Big &send = send_buffer(), &recv = recv_buffer();
  send.fill(0, 0);
  void *sb = send.mem.get(), *rb = recv.mem.get();
  const MPI_Count n = kBytes, counts[1] = {n};
  const MPI_Aint displs[1] = {0};
  MPI_Datatype bytes1 = indexed_byte();
  const MPI_Datatype stypes[1] = {MPI_BYTE}, rtypes[1] = {bytes1};
  const char* coll = "neighbor_alltoallv";
  for (const std::string& alg : algorithms(coll)) {
    run_both(
        graph, coll, alg, "MPIX_Neighbor_alltoall_c", 0, 0, 1,
        [&](MPI_Info info, MPIX_Request* req) {
          return MPIX_Neighbor_alltoall_init_c(sb, n, MPI_BYTE, rb, n, MPI_BYTE, graph, info, req);
        },
        [&] { return MPIX_Neighbor_alltoall_c(sb, n, MPI_BYTE, rb, n, MPI_BYTE, graph); });
    run_both(
        graph, coll, alg, "MPIX_Neighbor_alltoallv_c", 0, 0, 1,
        [&](MPI_Info info, MPIX_Request* req) {
          return MPIX_Neighbor_alltoallv_init_c(sb, counts, displs, MPI_BYTE, rb, counts, displs,
                                                MPI_BYTE, graph, info, req);
        },
        [&] {
          return MPIX_Neighbor_alltoallv_c(sb, counts, displs, MPI_BYTE, rb, counts, displs,
                                           MPI_BYTE, graph);
        });
    run_both(
        graph, coll, alg, "MPIX_Neighbor_alltoallw_c (indexed bytes)", 0, 0, 1,
        [&](MPI_Info info, MPIX_Request* req) {
          return MPIX_Neighbor_alltoallw_init_c(sb, counts, displs, stypes, rb, counts, displs,
                                                rtypes, graph, info, req);
        },
        [&] {
          return MPIX_Neighbor_alltoallw_c(sb, counts, displs, stypes, rb, counts, displs, rtypes,
                                           graph);
        });
    if (!all_true(graph, !::testing::Test::HasFailure())) break;
  }
  MPI_Type_free(&bytes1);
  MPI_Comm_free(&graph);
}

}  // namespace
