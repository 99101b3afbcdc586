// Nonblocking calls (MPIX_Ialltoall, MPIX_Ialltoallv, MPIX_Ineighbor_alltoall(v,w), their _c
// forms): every received byte against a reference computed here, on every rank, for every
// algorithm a communicator can choose; several calls active at once (more than the tags
// nonblocking calls take in turn, so that later ones wait for earlier ones), completed in a
// different order on different ranks, beside persistent requests and blocking calls on the same
// communicator; repeated with changed data (the cached plans); MPI_IN_PLACE, derived datatypes
// with holes, zero counts; and the request's rules (freed by its completion, not startable,
// not freeable while active).
#include "test_support.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <numeric>
#include <random>
#include <string>
#include <vector>

namespace {

using mpia_test::error_string;
const auto rank_of = mpia_test::comm_rank;
const auto size_of = mpia_test::comm_size;

// The byte that rank src sends to rank dst at index i in round `round`.
unsigned char byte_of(int src, int dst, std::int64_t i, int round) {
  return static_cast<unsigned char>((src * 73 + dst * 31 + i * 7 + round * 151 + (i >> 8)) & 0xff);
}

// The algorithms of a collective ("alltoall", "alltoallv", "neighbor_alltoallv"), from the
// registry, auto included.
std::vector<std::string> algorithms(const char* collective) {
  std::vector<std::string> out;
  const char *name = nullptr, *desc = nullptr;
  for (int i = 0; MPIX_Algorithm_get(collective, i, &name, &desc) == MPI_SUCCESS; ++i)
    out.push_back(name);
  return out;
}

// The order a rank completes n requests in: a rank-dependent permutation.
std::vector<int> completion_order(int n, int rank, int salt) {
  std::vector<int> order(n);
  std::iota(order.begin(), order.end(), 0);
  std::mt19937 g(unsigned(rank * 7919 + salt));
  std::shuffle(order.begin(), order.end(), g);
  return order;
}

// Completes every request, in this rank's order: MPIX_Wait, or MPIX_Test polled (odd salt).
// Salt 100: odd ranks wait newest first, even ranks oldest first (the most calls of one tag
// driven out of their order).
void complete_all(std::vector<MPIX_Request>& reqs, int rank, int salt) {
  std::vector<int> order = completion_order(int(reqs.size()), rank, salt);
  if (salt == 100) {
    std::iota(order.begin(), order.end(), 0);
    if (rank % 2) std::reverse(order.begin(), order.end());
  }
  if (salt % 2 == 0) {
    for (int i : order) {
      const int rc = MPIX_Wait(&reqs[std::size_t(i)], MPI_STATUS_IGNORE);
      EXPECT_EQ(rc, MPI_SUCCESS) << error_string(rc);
      EXPECT_EQ(reqs[std::size_t(i)], MPIX_REQUEST_NULL);
    }
    return;
  }
  for (std::size_t left = reqs.size(); left > 0;)
    for (int i : order) {
      if (reqs[std::size_t(i)] == MPIX_REQUEST_NULL) continue;
      int flag = 0;
      const int rc = MPIX_Test(&reqs[std::size_t(i)], &flag, MPI_STATUS_IGNORE);
      ASSERT_EQ(rc, MPI_SUCCESS) << error_string(rc);
      if (flag) {
        EXPECT_EQ(reqs[std::size_t(i)], MPIX_REQUEST_NULL);
        --left;
      }
    }
}

// n alltoalls of B bytes per block active at once on comm, `rounds` times with new data.
// Returns the number of wrong bytes on this rank.
long long run_ialltoall(MPI_Comm comm, int n, int B, int rounds, bool in_place, int salt) {
  const int P = size_of(comm), me = rank_of(comm);
  const std::size_t total = std::size_t(P) * std::size_t(B);
  std::vector<std::vector<unsigned char>> send(n, std::vector<unsigned char>(total)),
      recv(n, std::vector<unsigned char>(total));
  long long wrong = 0;
  for (int round = 0; round < rounds; ++round) {
    std::vector<MPIX_Request> reqs(std::size_t(n), MPIX_REQUEST_NULL);
    for (int k = 0; k < n; ++k) {
      std::vector<unsigned char>& out = in_place ? recv[k] : send[k];
      for (int d = 0; d < P; ++d)
        for (int i = 0; i < B; ++i) out[std::size_t(d) * B + i] = byte_of(me, d, i, round * n + k);
      if (!in_place) std::fill(recv[k].begin(), recv[k].end(), static_cast<unsigned char>(0xEE));
      const int rc = MPIX_Ialltoall(in_place ? MPI_IN_PLACE : send[k].data(), B, MPI_BYTE,
                                    recv[k].data(), B, MPI_BYTE, comm, &reqs[std::size_t(k)]);
      EXPECT_EQ(rc, MPI_SUCCESS) << error_string(rc);
      EXPECT_NE(reqs[std::size_t(k)], MPIX_REQUEST_NULL);
    }
    complete_all(reqs, me, salt + round);
    for (int k = 0; k < n; ++k)
      for (int s = 0; s < P; ++s)
        for (int i = 0; i < B; ++i)
          wrong += recv[k][std::size_t(s) * B + i] != byte_of(s, me, i, round * n + k);
  }
  return wrong;
}

long long run_ialltoallv(MPI_Comm comm, int n, int rounds, int salt);

long long sum(MPI_Comm comm, long long v) {
  MPI_Allreduce(MPI_IN_PLACE, &v, 1, MPI_LONG_LONG, MPI_SUM, comm);
  return v;
}

TEST(Ialltoall, EveryAlgorithm) {
  for (const std::string& alg : algorithms("alltoall")) {
    MPI_Comm comm;
    MPI_Comm_dup(MPI_COMM_WORLD, &comm);
    ASSERT_EQ(MPIX_Comm_set_algorithm(comm, "alltoall", alg.c_str()), MPI_SUCCESS) << alg;
    // 3 at once, 12 rounds: past the 8 tags taken in turn, the plans come from the cache.
    for (int B : {1, 8, 300})
      EXPECT_EQ(sum(comm, run_ialltoall(comm, 3, B, 12, false, B)), 0) << alg << " B=" << B;
    EXPECT_EQ(sum(comm, run_ialltoall(comm, 2, 0, 2, false, 1)), 0) << alg << " zero";
    EXPECT_EQ(sum(comm, run_ialltoall(comm, 2, 24, 3, true, 2)), 0) << alg << " in place";
    MPI_Comm_free(&comm);
  }
}

// What a call runs: the communicator's choice itself, unless it learns its peers' sizes or needs
// a node map nothing computed yet (then what auto runs without them), or is auto.
std::string runs(MPI_Comm comm, const std::string& collective) {
  const int P = size_of(comm);
  std::vector<int> s(std::size_t(P), 0), r(std::size_t(P), 0), c(std::size_t(P), 1);
  std::vector<int> d(std::size_t(P), 0);
  std::iota(d.begin(), d.end(), 0);
  MPIX_Request req = MPIX_REQUEST_NULL;
  if (collective == "alltoall")
    EXPECT_EQ(MPIX_Ialltoall(s.data(), 1, MPI_INT, r.data(), 1, MPI_INT, comm, &req), MPI_SUCCESS);
  else
    EXPECT_EQ(MPIX_Ialltoallv(s.data(), c.data(), d.data(), MPI_INT, r.data(), c.data(), d.data(),
                              MPI_INT, comm, &req),
              MPI_SUCCESS);
  char name[MPIX_MAX_ALGORITHM_STRING] = "";
  int len = 0;
  MPIX_Request_get_algorithm(req, name, &len);
  MPIX_Wait(&req, MPI_STATUS_IGNORE);
  return name;
}

TEST(Ialltoall, RunsTheChoiceOnceTheNodeMapIsKnown) {
  // Two emulated nodes where there are 4 ranks or more (MPIX_LOCALITY, else the real map).
  for (const char* coll : {"alltoall", "alltoallv"})
    for (const std::string& alg : algorithms(coll)) {
      if (alg == "auto") continue;
      MPI_Comm comm;
      MPI_Comm_dup(MPI_COMM_WORLD, &comm);
      ASSERT_EQ(MPIX_Comm_set_algorithm(comm, coll, alg.c_str()), MPI_SUCCESS);
      int node, nnodes, lrank, lsize;
      ASSERT_EQ(MPIX_Comm_locality(comm, &node, &nnodes, &lrank, &lsize), MPI_SUCCESS);
      const std::string got = runs(comm, coll);
      const bool learns = std::string(coll) == "alltoallv" &&
                          (alg == "bruck" || alg == "hybrid" || alg.rfind("locality", 0) == 0);
      if (!learns && size_of(comm) > 1)
        EXPECT_EQ(got.substr(0, alg.size()), alg) << coll << ": chose " << alg << ", ran " << got;
      if (learns) EXPECT_NE(got.substr(0, alg.size()), alg) << coll << ": " << got;
      if (std::string(coll) == "alltoall")
        EXPECT_EQ(sum(comm, run_ialltoall(comm, 3, 8, 10, false, 7)), 0) << alg;
      else
        EXPECT_EQ(sum(comm, run_ialltoallv(comm, 3, 10, 7)), 0) << alg;
      MPI_Comm_free(&comm);
    }
}

TEST(Ialltoall, ManyActiveAtOnce) {
  // 40 at once, on 8 tags: every tag serves 5 calls, each waiting for the one before.
  EXPECT_EQ(sum(MPI_COMM_WORLD, run_ialltoall(MPI_COMM_WORLD, 40, 16, 2, false, 3)), 0);
  EXPECT_EQ(sum(MPI_COMM_WORLD, run_ialltoall(MPI_COMM_WORLD, 40, 16, 1, false, 4)), 0);
  // Waiting for the newest first: every later call of a tag is driven before the earlier ones,
  // which must still post first.
  EXPECT_EQ(sum(MPI_COMM_WORLD, run_ialltoall(MPI_COMM_WORLD, 40, 300, 1, false, 100)), 0);
}

TEST(Ialltoall, BesidePersistentAndBlockingCalls) {
  MPI_Comm comm = MPI_COMM_WORLD;
  const int P = size_of(comm), me = rank_of(comm);
  const int B = 40;
  std::vector<unsigned char> ps(std::size_t(P) * B), pr(std::size_t(P) * B), bs(ps), br(pr), is(ps),
      ir(pr);
  MPIX_Request persistent = MPIX_REQUEST_NULL;
  ASSERT_EQ(MPIX_Alltoall_init(ps.data(), B, MPI_BYTE, pr.data(), B, MPI_BYTE, comm, MPI_INFO_NULL,
                               &persistent),
            MPI_SUCCESS);
  long long wrong = 0;
  for (int round = 0; round < 5; ++round) {
    for (int d = 0; d < P; ++d)
      for (int i = 0; i < B; ++i) {
        ps[std::size_t(d) * B + i] = byte_of(me, d, i, 3 * round);
        bs[std::size_t(d) * B + i] = byte_of(me, d, i, 3 * round + 1);
        is[std::size_t(d) * B + i] = byte_of(me, d, i, 3 * round + 2);
      }
    MPIX_Request nb = MPIX_REQUEST_NULL;
    ASSERT_EQ(MPIX_Start(&persistent), MPI_SUCCESS);
    ASSERT_EQ(MPIX_Ialltoall(is.data(), B, MPI_BYTE, ir.data(), B, MPI_BYTE, comm, &nb),
              MPI_SUCCESS);
    ASSERT_EQ(MPIX_Alltoall(bs.data(), B, MPI_BYTE, br.data(), B, MPI_BYTE, comm), MPI_SUCCESS);
    MPIX_Request both[2] = {me % 2 ? nb : persistent, me % 2 ? persistent : nb};
    ASSERT_EQ(MPIX_Waitall(2, both, MPI_STATUSES_IGNORE), MPI_SUCCESS);
    EXPECT_EQ(both[me % 2 ? 0 : 1], MPIX_REQUEST_NULL);  // the nonblocking call's: freed
    EXPECT_NE(both[me % 2 ? 1 : 0], MPIX_REQUEST_NULL);  // the persistent one lives on
    for (int s = 0; s < P; ++s)
      for (int i = 0; i < B; ++i) {
        wrong += pr[std::size_t(s) * B + i] != byte_of(s, me, i, 3 * round);
        wrong += br[std::size_t(s) * B + i] != byte_of(s, me, i, 3 * round + 1);
        wrong += ir[std::size_t(s) * B + i] != byte_of(s, me, i, 3 * round + 2);
      }
  }
  MPIX_Request_free(&persistent);
  EXPECT_EQ(sum(comm, wrong), 0);
}

TEST(Ialltoall, DerivedTypesWithHolesAndLargeCountForm) {
  // Send blocks of 3 ints taken every other int (a vector with holes, negative lower bound via
  // a resized type), received contiguous: one per destination; through the _c form.
  MPI_Comm comm = MPI_COMM_WORLD;
  const int P = size_of(comm), me = rank_of(comm);
  MPI_Datatype vec, holey;
  MPI_Type_vector(3, 1, 2, MPI_INT, &vec);
  MPI_Type_create_resized(vec, -4, 6 * int(sizeof(int)), &holey);
  MPI_Type_commit(&holey);
  MPI_Type_free(&vec);
  // Element k of block d starts at int 1 + 6 d (the -4 lower bound puts it one int before).
  std::vector<int> send(std::size_t(6 * P + 2), -1), recv(std::size_t(3 * P), -2);
  for (int d = 0; d < P; ++d)
    for (int j = 0; j < 3; ++j) send[std::size_t(1 + 6 * d + 2 * j)] = me * 1000 + d * 10 + j;
  MPIX_Request req = MPIX_REQUEST_NULL;
  ASSERT_EQ(MPIX_Ialltoall_c(send.data() + 1, 1, holey, recv.data(), 3, MPI_INT, comm, &req),
            MPI_SUCCESS);
  MPI_Type_free(&holey);  // MPI allows it while the call runs
  ASSERT_EQ(MPIX_Wait(&req, MPI_STATUS_IGNORE), MPI_SUCCESS);
  long long wrong = 0;
  for (int s = 0; s < P; ++s)
    for (int j = 0; j < 3; ++j) wrong += recv[std::size_t(3 * s + j)] != s * 1000 + me * 10 + j;
  EXPECT_EQ(sum(comm, wrong), 0);
}

// Alltoallv: rank s sends (s + 2 d + round) % 5 bytes to d (zeros included), blocks packed in
// reverse order of destination (displacements not ascending).
long long run_ialltoallv(MPI_Comm comm, int n, int rounds, int salt) {
  const int P = size_of(comm), me = rank_of(comm);
  long long wrong = 0;
  for (int round = 0; round < rounds; ++round) {
    auto count = [&](int s, int d) { return (s + 2 * d + round) % 5; };
    std::vector<int> sc(P), sd(P), rc(P), rd(P);
    int at = 0;
    for (int d = P - 1; d >= 0; --d) sc[d] = count(me, d), sd[d] = at, at += sc[d];
    const int stotal = at;
    at = 0;
    for (int s = 0; s < P; ++s) rc[s] = count(s, me), rd[s] = at, at += rc[s];
    const int rtotal = at;
    std::vector<std::vector<unsigned char>> send(n, std::vector<unsigned char>(stotal + 1)),
        recv(n, std::vector<unsigned char>(rtotal + 1, 0xEE));
    std::vector<MPIX_Request> reqs(std::size_t(n), MPIX_REQUEST_NULL);
    for (int k = 0; k < n; ++k) {
      for (int d = 0; d < P; ++d)
        for (int i = 0; i < sc[d]; ++i) send[k][sd[d] + i] = byte_of(me, d, i, round * n + k);
      const int r = MPIX_Ialltoallv(send[k].data(), sc.data(), sd.data(), MPI_BYTE, recv[k].data(),
                                    rc.data(), rd.data(), MPI_BYTE, comm, &reqs[std::size_t(k)]);
      EXPECT_EQ(r, MPI_SUCCESS) << error_string(r);
    }
    complete_all(reqs, me, salt + round);
    for (int k = 0; k < n; ++k)
      for (int s = 0; s < P; ++s)
        for (int i = 0; i < rc[s]; ++i)
          wrong += recv[k][rd[s] + i] != byte_of(s, me, i, round * n + k);
  }
  return wrong;
}

TEST(Ialltoallv, EveryAlgorithm) {
  for (const std::string& alg : algorithms("alltoallv")) {
    MPI_Comm comm;
    MPI_Comm_dup(MPI_COMM_WORLD, &comm);
    ASSERT_EQ(MPIX_Comm_set_algorithm(comm, "alltoallv", alg.c_str()), MPI_SUCCESS) << alg;
    EXPECT_EQ(sum(comm, run_ialltoallv(comm, 3, 10, 5)), 0) << alg;
    MPI_Comm_free(&comm);
  }
}

// A ring as a distributed graph: receive from left and right, send to right and left.
TEST(Ineighbor, RingEveryFormAndAlgorithm) {
  const int P = size_of(MPI_COMM_WORLD), me = rank_of(MPI_COMM_WORLD);
  const int left = (me - 1 + P) % P, right = (me + 1) % P;
  const int srcs[2] = {left, right}, dsts[2] = {right, left};
  for (const std::string& alg : algorithms("neighbor_alltoallv")) {
    // At 1 or 2 ranks left and right are the same peer: two edges to it, which MPI's own
    // neighbor collectives pair differently from one version to the next (MPICH 4.3.2: in
    // reverse; test_neighbor.cpp's runnable), so "system" runs on rings of 3 ranks or more.
    if (alg == "system" && P <= 2) continue;
    MPI_Comm ring;
    MPI_Dist_graph_create_adjacent(MPI_COMM_WORLD, 2, srcs, MPI_UNWEIGHTED, 2, dsts, MPI_UNWEIGHTED,
                                   MPI_INFO_NULL, 0, &ring);
    ASSERT_EQ(MPIX_Comm_set_algorithm(ring, "neighbor_alltoallv", alg.c_str()), MPI_SUCCESS) << alg;
    long long wrong = 0;
    for (int round = 0; round < 10; ++round) {
      // Regular: 5 ints per edge; the block to destination k is k's.
      const int B = 5;
      std::vector<int> s1(2 * B), r1(2 * B, -1);
      for (int k = 0; k < 2; ++k)
        for (int i = 0; i < B; ++i) s1[k * B + i] = round * 100000 + me * 100 + dsts[k] * 10 + i;
      // v: edge k carries k + 1 + round % 3 ints, in reverse order.
      std::vector<int> vc = {1 + round % 3, 2 + round % 3}, vd = {vc[1], 0};
      std::vector<int> s2(vc[0] + vc[1]), r2(vc[0] + vc[1], -1);
      for (int k = 0; k < 2; ++k)
        for (int i = 0; i < vc[k]; ++i) s2[vd[k] + i] = round * 7 + me * 3 + k * 1000 + i;
      // A peer's count for the edge it receives on: left sent me its block 0 (to its right),
      // right its block 1 (to its left).
      std::vector<int> rvc = {vc[0], vc[1]}, rvd = {0, vc[0]};
      // w: edge k carries 2 doubles as bytes.
      std::vector<double> s3(4), r3(4, -1);
      for (int k = 0; k < 2; ++k)
        for (int i = 0; i < 2; ++i) s3[2 * k + i] = round + me * 0.5 + k * 0.25 + i;
      const int wc[2] = {2, 2};
      const MPI_Aint wd[2] = {0, 2 * sizeof(double)};
      const MPI_Datatype wt[2] = {MPI_DOUBLE, MPI_DOUBLE};
      MPIX_Request reqs[3];
      ASSERT_EQ(
          MPIX_Ineighbor_alltoall(s1.data(), B, MPI_INT, r1.data(), B, MPI_INT, ring, &reqs[0]),
          MPI_SUCCESS);
      ASSERT_EQ(MPIX_Ineighbor_alltoallv(s2.data(), vc.data(), vd.data(), MPI_INT, r2.data(),
                                         rvc.data(), rvd.data(), MPI_INT, ring, &reqs[1]),
                MPI_SUCCESS);
      ASSERT_EQ(
          MPIX_Ineighbor_alltoallw(s3.data(), wc, wd, wt, r3.data(), wc, wd, wt, ring, &reqs[2]),
          MPI_SUCCESS);
      std::vector<MPIX_Request> all(reqs, reqs + 3);
      complete_all(all, me, round);
      for (int j = 0; j < 2; ++j) {  // j: the edge I receive on, from srcs[j]
        const int from = srcs[j];
        const int k = j == 0 ? 0 : 1;  // left sent to its right: its block 0; right: block 1
        for (int i = 0; i < B; ++i)
          wrong += r1[j * B + i] != round * 100000 + from * 100 + me * 10 + i;
        for (int i = 0; i < rvc[j]; ++i)
          wrong += r2[rvd[j] + i] != round * 7 + from * 3 + k * 1000 + i;
        for (int i = 0; i < 2; ++i) wrong += r3[2 * j + i] != round + from * 0.5 + k * 0.25 + i;
      }
    }
    EXPECT_EQ(sum(ring, wrong), 0) << alg;
    MPI_Comm_free(&ring);
  }
}

TEST(Nonblocking, RequestRules) {
  MPI_Comm comm;
  MPI_Comm_dup(MPI_COMM_WORLD, &comm);
  MPI_Comm_set_errhandler(comm, MPI_ERRORS_RETURN);
  const int P = size_of(comm);
  std::vector<int> s(std::size_t(P) * 4, 1), r(std::size_t(P) * 4, 0);
  MPIX_Request req = MPIX_REQUEST_NULL;
  ASSERT_EQ(MPIX_Ialltoall(s.data(), 4, MPI_INT, r.data(), 4, MPI_INT, comm, &req), MPI_SUCCESS);
  char name[MPIX_MAX_ALGORITHM_STRING];
  int len = 0;
  EXPECT_EQ(MPIX_Request_get_algorithm(req, name, &len), MPI_SUCCESS);
  EXPECT_GT(len, 0);
  int cls = MPI_SUCCESS;
  MPI_Error_class(MPIX_Start(&req), &cls);
  EXPECT_EQ(cls, MPI_ERR_REQUEST) << "MPIX_Start on a nonblocking call's request";
  MPI_Error_class(MPIX_Startall(1, &req), &cls);
  EXPECT_EQ(cls, MPI_ERR_REQUEST) << "MPIX_Startall with a nonblocking call's request";
  MPI_Error_class(MPIX_Request_free(&req), &cls);
  EXPECT_EQ(cls, MPI_ERR_REQUEST) << "MPIX_Request_free while active";
  EXPECT_NE(req, MPIX_REQUEST_NULL);
  EXPECT_EQ(MPIX_Wait(&req, MPI_STATUS_IGNORE), MPI_SUCCESS);
  EXPECT_EQ(req, MPIX_REQUEST_NULL);
  EXPECT_EQ(MPIX_Wait(&req, MPI_STATUS_IGNORE), MPI_SUCCESS);  // null: at once
  // A bad argument on every rank: the same class everywhere, no request.
  MPI_Error_class(MPIX_Ialltoall(s.data(), -1, MPI_INT, r.data(), 4, MPI_INT, comm, &req), &cls);
  EXPECT_EQ(cls, MPI_ERR_COUNT);
  EXPECT_EQ(req, MPIX_REQUEST_NULL);
  // A rank's wrong argument leaves every rank in step: the next call runs everywhere.
  EXPECT_EQ(sum(comm, run_ialltoall(comm, 2, 8, 2, false, 9)), 0);
  MPI_Comm_free(&comm);
}

}  // namespace

namespace {

// A nonblocking call that is the library's first on its communicator must not wait for the
// other ranks (it duplicates the communicator): here rank 0 makes its calls and only then sends
// rank 1 the message that lets rank 1 make its own -- a legal program that hangs if the calls
// block. Three alltoalls and an alltoallv on a fresh communicator (the later ones also wait for
// the attach), completed newest first on odd ranks; then a blocking call on a second fresh
// communicator right after its first nonblocking call (the blocking call finishes the attach).
TEST(Nonblocking, FirstCallOnACommunicatorDoesNotWait) {
  const int P = size_of(MPI_COMM_WORLD), me = rank_of(MPI_COMM_WORLD);
  MPI_Comm fresh, fresh2;
  MPI_Comm_dup(MPI_COMM_WORLD, &fresh);
  MPI_Comm_dup(MPI_COMM_WORLD, &fresh2);
  const int B = 5, n = 3;
  const std::size_t total = std::size_t(P) * B;
  std::vector<std::vector<unsigned char>> send(n + 1, std::vector<unsigned char>(total)),
      recv(n + 1, std::vector<unsigned char>(total, 0xEE));
  for (int k = 0; k <= n; ++k)
    for (int d = 0; d < P; ++d)
      for (int i = 0; i < B; ++i) send[k][std::size_t(d) * B + i] = byte_of(me, d, i, k);
  std::vector<int> counts(P, B), displs(P);
  for (int d = 0; d < P; ++d) displs[d] = d * B;
  int token = 7;
  if (me == 1) MPI_Recv(&token, 1, MPI_INT, 0, 99, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
  std::vector<MPIX_Request> reqs(n + 1, MPIX_REQUEST_NULL);
  for (int k = 0; k < n; ++k)
    EXPECT_EQ(MPIX_Ialltoall(send[k].data(), B, MPI_BYTE, recv[k].data(), B, MPI_BYTE, fresh,
                             &reqs[std::size_t(k)]),
              MPI_SUCCESS);
  EXPECT_EQ(MPIX_Ialltoallv(send[n].data(), counts.data(), displs.data(), MPI_BYTE, recv[n].data(),
                            counts.data(), displs.data(), MPI_BYTE, fresh, &reqs[std::size_t(n)]),
            MPI_SUCCESS);
  if (me == 0 && P > 1) MPI_Send(&token, 1, MPI_INT, 1, 99, MPI_COMM_WORLD);
  complete_all(reqs, me, 100);
  long long wrong = 0;
  for (int k = 0; k <= n; ++k)
    for (int s = 0; s < P; ++s)
      for (int i = 0; i < B; ++i) wrong += recv[k][std::size_t(s) * B + i] != byte_of(s, me, i, k);

  // A blocking call right after the first nonblocking call of fresh2.
  std::vector<unsigned char> r2(total, 0xEE), r3(total, 0xEE);
  MPIX_Request q = MPIX_REQUEST_NULL;
  EXPECT_EQ(MPIX_Ialltoall(send[0].data(), B, MPI_BYTE, r2.data(), B, MPI_BYTE, fresh2, &q),
            MPI_SUCCESS);
  EXPECT_EQ(MPIX_Alltoall(send[1].data(), B, MPI_BYTE, r3.data(), B, MPI_BYTE, fresh2),
            MPI_SUCCESS);
  EXPECT_EQ(MPIX_Wait(&q, MPI_STATUS_IGNORE), MPI_SUCCESS);
  for (int s = 0; s < P; ++s)
    for (int i = 0; i < B; ++i) {
      wrong += r2[std::size_t(s) * B + i] != byte_of(s, me, i, 0);
      wrong += r3[std::size_t(s) * B + i] != byte_of(s, me, i, 1);
    }
  EXPECT_EQ(sum(MPI_COMM_WORLD, wrong), 0);
  MPI_Comm_free(&fresh);
  MPI_Comm_free(&fresh2);
}

// MPI lets a program free a communicator right after starting nonblocking collectives on it
// (the calls complete normally). Here the calls are the library's first on their communicators,
// so the attach is still in flight when the user frees them: an alltoall and an alltoallv on a
// duplicate, the three neighbor forms on a ring graph, each freed at once, then completed; then a
// new communicator (which may get a freed one's handle) runs a call of its own. Every byte
// checked, three times over.
TEST(Nonblocking, CommunicatorFreedRightAfterTheFirstCall) {
  const int P = size_of(MPI_COMM_WORLD), me = rank_of(MPI_COMM_WORLD);
  const int left = (me - 1 + P) % P, right = (me + 1) % P;
  const int srcs[2] = {left, right}, dsts[2] = {right, left};
  const int B = 4;
  const std::size_t total = std::size_t(P) * B;
  long long wrong = 0;
  for (int round = 0; round < 3; ++round) {
    std::vector<unsigned char> send(total), r1(total, 0xEE), r2(total, 0xEE), r3(total, 0xEE);
    for (int d = 0; d < P; ++d)
      for (int i = 0; i < B; ++i) send[std::size_t(d) * B + i] = byte_of(me, d, i, round);
    std::vector<int> counts(P, B), displs(P);
    for (int d = 0; d < P; ++d) displs[d] = d * B;
    std::vector<int> ns(2 * B), nr(2 * B, -1);
    for (int k = 0; k < 2; ++k)
      for (int i = 0; i < B; ++i) ns[k * B + i] = round * 100000 + me * 100 + dsts[k] * 10 + i;
    std::vector<int> vs(ns), vr(2 * B, -1), ws(ns), wr(2 * B, -1);
    const int nc[2] = {B, B}, nd[2] = {0, B};
    const MPI_Aint wd[2] = {0, MPI_Aint(B * sizeof(int))};
    const MPI_Datatype wt[2] = {MPI_INT, MPI_INT};

    MPI_Comm a, b, ring;
    MPI_Comm_dup(MPI_COMM_WORLD, &a);
    MPI_Comm_dup(MPI_COMM_WORLD, &b);
    MPI_Dist_graph_create_adjacent(MPI_COMM_WORLD, 2, srcs, MPI_UNWEIGHTED, 2, dsts, MPI_UNWEIGHTED,
                                   MPI_INFO_NULL, 0, &ring);
    std::vector<MPIX_Request> reqs(5, MPIX_REQUEST_NULL);
    EXPECT_EQ(MPIX_Ialltoall(send.data(), B, MPI_BYTE, r1.data(), B, MPI_BYTE, a, &reqs[0]),
              MPI_SUCCESS);
    MPI_Comm_free(&a);
    EXPECT_EQ(MPIX_Ialltoallv(send.data(), counts.data(), displs.data(), MPI_BYTE, r2.data(),
                              counts.data(), displs.data(), MPI_BYTE, b, &reqs[1]),
              MPI_SUCCESS);
    MPI_Comm_free(&b);
    EXPECT_EQ(MPIX_Ineighbor_alltoall(ns.data(), B, MPI_INT, nr.data(), B, MPI_INT, ring, &reqs[2]),
              MPI_SUCCESS);
    EXPECT_EQ(MPIX_Ineighbor_alltoallv(vs.data(), nc, nd, MPI_INT, vr.data(), nc, nd, MPI_INT, ring,
                                       &reqs[3]),
              MPI_SUCCESS);
    EXPECT_EQ(
        MPIX_Ineighbor_alltoallw(ws.data(), nc, wd, wt, wr.data(), nc, wd, wt, ring, &reqs[4]),
        MPI_SUCCESS);
    MPI_Comm_free(&ring);
    MPI_Comm c;  // may take a freed communicator's handle
    MPI_Comm_dup(MPI_COMM_WORLD, &c);
    MPIX_Request q = MPIX_REQUEST_NULL;
    EXPECT_EQ(MPIX_Ialltoall(send.data(), B, MPI_BYTE, r3.data(), B, MPI_BYTE, c, &q), MPI_SUCCESS);
    reqs.push_back(q);
    complete_all(reqs, me, round);
    MPI_Comm_free(&c);
    for (int s = 0; s < P; ++s)
      for (int i = 0; i < B; ++i) {
        wrong += r1[std::size_t(s) * B + i] != byte_of(s, me, i, round);
        wrong += r2[std::size_t(s) * B + i] != byte_of(s, me, i, round);
        wrong += r3[std::size_t(s) * B + i] != byte_of(s, me, i, round);
      }
    for (int j = 0; j < 2; ++j)  // left sent its block 0 (to its right), right its block 1
      for (int i = 0; i < B; ++i) {
        const int want = round * 100000 + srcs[j] * 100 + me * 10 + i;
        wrong += nr[j * B + i] != want;
        wrong += vr[j * B + i] != want;
        wrong += wr[j * B + i] != want;
      }
  }
  EXPECT_EQ(sum(MPI_COMM_WORLD, wrong), 0);
}

}  // namespace
