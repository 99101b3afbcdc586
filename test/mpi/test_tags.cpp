// Tags of persistent requests (issue 9, item 4). Every live persistent request of a
// communicator holds a tag of its own, agreed at init from the tags every rank still holds, and
// freed tags are recycled; when none is free, init fails on every rank and the communicator
// keeps working. Registered with MPIX_TAG_UB=4 (the library then uses tags 1..4 only), so the
// tags wrap around many times and a reused tag that is still live anywhere mixes messages of
// requests with different block sizes: wrong data or MPI_ERR_TRUNCATE. Without MPIX_TAG_UB the
// same life cycles run over the full range (the exhaustion tests are then skipped).
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdlib>
#include <memory>
#include <string>
#include <vector>

#include "hardening_util.hpp"
#include "test_support.hpp"

using namespace hardening;
using namespace mpia_test;

namespace {

// MPIX_TAG_UB of this run (the same on every rank: set by the test registration), 0 if unset.
int tag_cap() {
  const char* v = std::getenv("MPIX_TAG_UB");
  return v && *v ? std::atoi(v) : 0;
}

const std::vector<std::string>& algorithms() {
  static const std::vector<std::string> a = {"pairwise",       "bruck",           "linear",
                                             "system",         "zero_copy_bruck", "tra",
                                             "modified_bruck", "tra:radix=2",     "tra2"};
  return a;
}

int g_salt = 1;  // advanced identically on every rank

// A persistent alltoall of `count` ints with its own buffers.
struct Req {
  IntExchange x;
  MPIX_Request r = MPIX_REQUEST_NULL;
  std::string name;
  int salt = 0;
};

// Collective. Returns the init's code; req->r is set on success.
int init_req(Req& q, MPI_Comm comm, const std::string& alg, int count, const std::string& name) {
  q.x = IntExchange(comm, count);
  q.name = name + " (" + alg + ", count " + std::to_string(count) + ")";
  MPI_Info info = algorithm_info(alg);
  const int rc = MPIX_Alltoall_init(q.x.send.data(), count, MPI_INT, q.x.recv.data(), count,
                                    MPI_INT, comm, info, &q.r);
  if (info != MPI_INFO_NULL) MPI_Info_free(&info);
  return rc;
}

std::unique_ptr<Req> make_req(MPI_Comm comm, const std::string& alg, int count,
                              const std::string& name) {
  auto q = std::make_unique<Req>();
  const int rc = init_req(*q, comm, alg, count, name);
  EXPECT_EQ(rc, MPI_SUCCESS) << "init of " << q->name << ": " << error_string(rc);
  return q;
}

// New data (salt) for q; salts are handed out in the same order on every rank.
void refill(Req& q) {
  q.salt = g_salt++;
  q.x.fill(q.salt);
}

void start_only(Req& q) {
  const int rc = MPIX_Start(&q.r);
  EXPECT_EQ(rc, MPI_SUCCESS) << "MPIX_Start of " << q.name << ": " << error_string(rc);
}

void start(Req& q) {
  refill(q);
  start_only(q);
}

void finish(Req& q, const std::string& when) {
  const int rc = MPIX_Wait(&q.r, MPI_STATUS_IGNORE);
  EXPECT_EQ(rc, MPI_SUCCESS) << "MPIX_Wait of " << q.name << " " << when << ": "
                             << error_string(rc);
  q.x.check(q.salt, q.name + " " + when);
}

void free_req(std::unique_ptr<Req>& q) {
  if (!q) return;
  if (q->r != MPIX_REQUEST_NULL) {
    const int rc = MPIX_Request_free(&q->r);
    EXPECT_EQ(rc, MPI_SUCCESS) << "MPIX_Request_free of " << q->name << ": " << error_string(rc);
  }
  q.reset();
}

// The requests in the order this rank starts them: odd ranks reverse it. Persistent
// collectives may be started in different orders on different ranks (MPI-4 asks for the same
// order only under the info assertion mpi_assert_strict_persistent_collective_ordering), and a
// tag shared by two live requests then mixes their messages up deterministically.
std::vector<Req*> start_order(const std::vector<Req*>& reqs, int me) {
  std::vector<Req*> order = reqs;
  if (me % 2 == 1) std::reverse(order.begin(), order.end());
  return order;
}

void start_all(const std::vector<Req*>& reqs, int me) {
  for (Req* q : reqs) refill(*q);
  for (Req* q : start_order(reqs, me)) start_only(*q);
}

// Starts every request (in a rank-dependent order, alternately one by one and with
// MPIX_Startall), then completes them in an order that depends on the rank and `round`, with
// MPIX_Wait, MPIX_Waitall or polling MPIX_Test, and checks every one.
void run_all(const std::vector<Req*>& reqs, int me, int round, const std::string& when) {
  if (round % 2 == 0) {
    start_all(reqs, me);
  } else {
    std::vector<MPIX_Request> hs;
    for (Req* q : reqs) refill(*q);
    for (Req* q : start_order(reqs, me)) hs.push_back(q->r);
    const int rc = MPIX_Startall(int(hs.size()), hs.data());
    EXPECT_EQ(rc, MPI_SUCCESS) << "MPIX_Startall " << when << ": " << error_string(rc);
  }
  std::vector<Req*> order = reqs;
  if (!order.empty())
    std::rotate(order.begin(), order.begin() + (me + round) % int(order.size()), order.end());
  if (me % 2 == 1) std::reverse(order.begin(), order.end());
  switch ((me + round) % 3) {
    case 0:
      for (Req* q : order) finish(*q, when);
      break;
    case 1: {
      std::vector<MPIX_Request> hs;
      for (Req* q : order) hs.push_back(q->r);
      std::vector<MPI_Status> st(hs.size());
      const int rc = MPIX_Waitall(int(hs.size()), hs.data(), st.data());
      EXPECT_EQ(rc, MPI_SUCCESS) << "MPIX_Waitall " << when << ": " << error_string(rc);
      for (Req* q : order) q->x.check(q->salt, q->name + " " + when);
      break;
    }
    default:
      for (Req* q : order) {
        int flag = 0;
        for (long spins = 0; !flag; ++spins) {
          const int rc = MPIX_Test(&q->r, &flag, MPI_STATUS_IGNORE);
          EXPECT_EQ(rc, MPI_SUCCESS)
              << "MPIX_Test of " << q->name << " " << when << ": " << error_string(rc);
          if (rc != MPI_SUCCESS) break;
        }
        q->x.check(q->salt, q->name + " " + when);
      }
  }
}

// A long-lived request L stays alive (and is active during every other iteration, across the
// inits of the new requests) while two new requests are created, run and freed per iteration,
// with different algorithms and block sizes. Rank 0 frees each iteration's second request only
// after the next iteration's inits, so at that point four tags are live in the union of the
// ranks' views (L, the late one, the two new): with MPIX_TAG_UB=4 every tag is in use and the
// cursor wraps every other iteration. Ranks free in different orders.
TEST(Tags, LongLivedRequestAmongManyShortLivedOnes) {
  const int cap = tag_cap();
  if (cap > 0 && cap < 4) GTEST_SKIP() << "needs at least 4 tags (MPIX_TAG_UB=" << cap << ")";
  DupComm c;
  const MPI_Comm comm = c.get();
  const int me = comm_rank(comm);
  std::unique_ptr<Req> L = make_req(comm, "pairwise", 3, "long-lived L");
  std::unique_ptr<Req> late;  // rank 0: the previous iteration's B
  const int iterations = 24;
  const auto& algs = algorithms();
  for (int i = 0; i < iterations && !::testing::Test::HasFailure(); ++i) {
    const std::string when = "in iteration " + std::to_string(i);
    const bool l_active = i % 2 == 0;
    if (l_active) start(*L);  // active across the inits below
    std::unique_ptr<Req> A =
        make_req(comm, algs[std::size_t(i) % algs.size()], 1 + i % 4, "A" + std::to_string(i));
    std::unique_ptr<Req> B = make_req(comm, algs[std::size_t(i + 3) % algs.size()], 2 + (i % 3) * 2,
                                      "B" + std::to_string(i));
    if (me == 0) free_req(late);
    if (l_active) finish(*L, when + " (active across two inits)");
    std::vector<Req*> reqs = {A.get(), B.get()};
    if (i % 3 != 0) reqs.insert(reqs.begin(), L.get());
    if (i % 3 == 1) {
      // A blocking call on the same communicator while the requests run.
      start_all(reqs, me);
      expect_blocking_works(
          comm, 2, g_salt++,
          "blocking MPIX_Alltoall " + when + " while persistent requests are active");
      for (Req* q : reqs) finish(*q, when + " (after a blocking call)");
    } else {
      run_all(reqs, me, i, when);
    }
    if (me == 0) {
      free_req(A);
      late = std::move(B);
    } else if (me % 2 == 1) {
      free_req(A);
      free_req(B);
    } else {
      free_req(B);
      free_req(A);
    }
  }
  free_req(late);
  // L still works after all that.
  run_all({L.get()}, me, 0, "L at the end");
  free_req(L);
}

// With every tag live (MPIX_TAG_UB requests), the next persistent init of any collective fails
// with the same class on every rank and leaves the request MPIX_REQUEST_NULL; the live requests
// and blocking calls keep working. A tag that only rank 0 still holds is not free; once every
// rank freed it, the next init gets it.
TEST(Tags, ExhaustionFailsEverywhereAndRecovers) {
  const int cap = tag_cap();
  if (cap <= 0 || cap > 16) GTEST_SKIP() << "needs a small MPIX_TAG_UB (run with MPIX_TAG_UB=4)";
  DupComm c;
  const MPI_Comm comm = c.get();
  const int me = comm_rank(comm), P = comm_size(comm);
  const auto& algs = algorithms();
  std::vector<std::unique_ptr<Req>> live;
  for (int k = 0; k < cap; ++k)
    live.push_back(
        make_req(comm, algs[std::size_t(k) % algs.size()], 1 + k, "live " + std::to_string(k)));
  ASSERT_TRUE(all_true(comm, !::testing::Test::HasFailure()));

  auto expect_no_free_tag = [&](const std::string& when) {
    Req extra;
    const int rc = init_req(extra, comm, "bruck", 2, "one too many");
    expect_class_everywhere(comm, rc, MPI_ERR_OTHER, "MPIX_Alltoall_init " + when);
    EXPECT_EQ(extra.r, MPIX_REQUEST_NULL) << "a failed init must leave MPIX_REQUEST_NULL";
    if (extra.r != MPIX_REQUEST_NULL) MPIX_Request_free(&extra.r);
    // Every persistent collective needs a tag: alltoallv too.
    std::vector<int> s(std::size_t(P), 1), r(std::size_t(P), 0), cnt(std::size_t(P), 1);
    std::vector<int> dis(static_cast<std::size_t>(P));
    for (int k = 0; k < P; ++k) dis[std::size_t(k)] = k;
    MPIX_Request v = MPIX_REQUEST_NULL;
    const int rcv = MPIX_Alltoallv_init(s.data(), cnt.data(), dis.data(), MPI_INT, r.data(),
                                        cnt.data(), dis.data(), MPI_INT, comm, MPI_INFO_NULL, &v);
    expect_class_everywhere(comm, rcv, MPI_ERR_OTHER, "MPIX_Alltoallv_init " + when);
    EXPECT_EQ(v, MPIX_REQUEST_NULL);
    if (v != MPIX_REQUEST_NULL) MPIX_Request_free(&v);
  };
  expect_no_free_tag("with all " + std::to_string(cap) + " tags live");

  // The live requests, and a blocking call among them, still work.
  std::vector<Req*> all;
  for (auto& q : live) all.push_back(q.get());
  run_all(all, me, 0, "after the failed inits");
  start_all(all, me);
  expect_blocking_works(comm, 3, g_salt++, "blocking call with every tag live and active");
  for (Req* q : all) finish(*q, "around a blocking call");

  // Rank 0 frees one; the others still hold its tag: still none free.
  if (me == 0) free_req(live[1]);
  if (P > 1) expect_no_free_tag("while ranks other than 0 still hold the freed tag");
  // Now everyone has freed it: the next init gets it and works next to the others.
  if (me != 0) free_req(live[1]);
  live[1] = make_req(comm, "linear", 5, "replacement");
  all.clear();
  for (auto& q : live) all.push_back(q.get());
  run_all(all, me, 1, "with the replacement");
  run_all(all, me, 2, "with the replacement, again");
  expect_no_free_tag("after the replacement took the freed tag");
  for (auto& q : live) free_req(q);
  // All free again: a full set can be created once more.
  for (int k = 0; k < cap; ++k)
    live[std::size_t(k)] = make_req(comm, algs[std::size_t(k + 2) % algs.size()], 2,
                                    "second generation " + std::to_string(k));
  all.clear();
  for (auto& q : live) all.push_back(q.get());
  run_all(all, me, 3, "second generation");
  for (auto& q : live) free_req(q);
}

// "system" requests hold tags too (their MPI requests live on the private communicator).
TEST(Tags, SystemRequestsHoldTags) {
  const int cap = tag_cap();
  if (cap <= 0 || cap > 16) GTEST_SKIP() << "needs a small MPIX_TAG_UB (run with MPIX_TAG_UB=4)";
  DupComm c;
  const MPI_Comm comm = c.get();
  const int me = comm_rank(comm);
  std::vector<std::unique_ptr<Req>> live;
  for (int k = 0; k < cap; ++k)
    live.push_back(make_req(comm, "system", 1 + k, "system " + std::to_string(k)));
  Req extra;
  const int rc = init_req(extra, comm, "system", 2, "one too many");
  expect_class_everywhere(comm, rc, MPI_ERR_OTHER, "the (MPIX_TAG_UB+1)-th system request");
  if (extra.r != MPIX_REQUEST_NULL) MPIX_Request_free(&extra.r);
  std::vector<Req*> all;
  for (auto& q : live) all.push_back(q.get());
  run_all(all, me, 0, "system requests");
  free_req(live[0]);
  live[0] = make_req(comm, "pairwise", 3, "pairwise after a system request");
  all[0] = live[0].get();
  run_all(all, me, 1, "mixed");
  for (auto& q : live) free_req(q);
}

// Neighbor requests draw from the same tags as the others of their communicator.
TEST(Tags, NeighborRequestsHoldTags) {
  const int cap = tag_cap();
  if (cap <= 0 || cap > 16) GTEST_SKIP() << "needs a small MPIX_TAG_UB (run with MPIX_TAG_UB=4)";
  const int P = comm_size(MPI_COMM_WORLD);
  MPI_Comm ring;
  int dims[1] = {P}, periods[1] = {1};
  MPI_Cart_create(MPI_COMM_WORLD, 1, dims, periods, 0, &ring);
  MPI_Comm_set_errhandler(ring, MPI_ERRORS_RETURN);
  const int me = comm_rank(ring);
  int left = 0, right = 0;
  MPI_Cart_shift(ring, 0, 1, &left, &right);
  struct NReq {
    std::vector<int> send, recv;
    MPIX_Request r = MPIX_REQUEST_NULL;
  };
  std::vector<NReq> live(static_cast<std::size_t>(cap));
  std::unique_ptr<Req> all2all;
  for (int k = 0; k < cap; ++k) {
    NReq& q = live[std::size_t(k)];
    const int n = 1 + k;
    q.send.assign(std::size_t(2 * n), 0);
    q.recv.assign(std::size_t(2 * n), kPoison);
    if (k == cap - 1) {  // the last tag goes to an alltoall on the same communicator
      all2all = make_req(ring, "bruck", 2, "alltoall on the ring");
      continue;
    }
    const int rc = MPIX_Neighbor_alltoall_init(q.send.data(), n, MPI_INT, q.recv.data(), n, MPI_INT,
                                               ring, MPI_INFO_NULL, &q.r);
    EXPECT_EQ(rc, MPI_SUCCESS) << error_string(rc);
  }
  std::vector<int> s(2), r(2);
  MPIX_Request extra = MPIX_REQUEST_NULL;
  const int rc = MPIX_Neighbor_alltoall_init(s.data(), 1, MPI_INT, r.data(), 1, MPI_INT, ring,
                                             MPI_INFO_NULL, &extra);
  expect_class_everywhere(ring, rc, MPI_ERR_OTHER, "one neighbor request too many");
  if (extra != MPIX_REQUEST_NULL) MPIX_Request_free(&extra);
  // All of them at once, data checked (direction d: block 0 goes left, block 1 right).
  const int salt = g_salt++;
  for (int k = 0; k + 1 < cap; ++k) {
    NReq& q = live[std::size_t(k)];
    const int n = 1 + k;
    for (int b = 0; b < 2; ++b)
      for (int j = 0; j < n; ++j) q.send[std::size_t(b * n + j)] = value(me, b, j, salt + k);
    std::fill(q.recv.begin(), q.recv.end(), kPoison);
    EXPECT_EQ(MPIX_Start(&q.r), MPI_SUCCESS);
  }
  start(*all2all);
  for (int k = cap - 2; k >= 0; --k) {
    NReq& q = live[std::size_t(k)];
    const int n = 1 + k;
    EXPECT_EQ(MPIX_Wait(&q.r, MPI_STATUS_IGNORE), MPI_SUCCESS);
    // Block 0 comes from the left neighbor's block 1, block 1 from the right one's block 0.
    for (int j = 0; j < n; ++j) {
      EXPECT_EQ(q.recv[std::size_t(j)], value(left, 1, j, salt + k)) << "request " << k;
      EXPECT_EQ(q.recv[std::size_t(n + j)], value(right, 0, j, salt + k)) << "request " << k;
    }
  }
  finish(*all2all, "next to neighbor requests");
  for (auto& q : live)
    if (q.r != MPIX_REQUEST_NULL) MPIX_Request_free(&q.r);
  free_req(all2all);
  MPI_Comm_free(&ring);
}

// Tags are per communicator: two communicators with every tag live each, all requests active at
// once, completed in different orders; exhaustion of one does not touch the other.
TEST(Tags, CommunicatorsAreIndependent) {
  const int cap = tag_cap();
  const int n = cap > 0 && cap <= 16 ? cap : 4;
  DupComm cx, cy;
  const int me = comm_rank(cx.get());
  const auto& algs = algorithms();
  std::vector<std::unique_ptr<Req>> xs, ys;
  for (int k = 0; k < n; ++k) {
    xs.push_back(
        make_req(cx.get(), algs[std::size_t(k) % algs.size()], 1 + k, "X" + std::to_string(k)));
    ys.push_back(make_req(cy.get(), algs[std::size_t(k + 1) % algs.size()], 2 + 2 * k,
                          "Y" + std::to_string(k)));
  }
  std::vector<Req*> all;
  for (int k = 0; k < n; ++k) {
    all.push_back(xs[std::size_t(k)].get());
    all.push_back(ys[std::size_t(k)].get());
  }
  for (int round = 0; round < 3; ++round)
    run_all(all, me, round, "two communicators, round " + std::to_string(round));
  if (cap > 0 && cap <= 16) {
    Req extra;
    int rc = init_req(extra, cx.get(), "pairwise", 1, "X extra");
    expect_class_everywhere(cx.get(), rc, MPI_ERR_OTHER, "X full");
    if (extra.r != MPIX_REQUEST_NULL) MPIX_Request_free(&extra.r);
    free_req(ys[0]);
    ys[0] = make_req(cy.get(), "bruck", 7, "Y replacement");
    all[1] = ys[0].get();
    Req extra2;
    rc = init_req(extra2, cx.get(), "pairwise", 1, "X extra");
    expect_class_everywhere(cx.get(), rc, MPI_ERR_OTHER, "X still full after Y freed one");
    if (extra2.r != MPIX_REQUEST_NULL) MPIX_Request_free(&extra2.r);
    run_all(all, me, 4, "two communicators after the replacement");
  }
  for (auto& q : xs) free_req(q);
  for (auto& q : ys) free_req(q);
}

}  // namespace
