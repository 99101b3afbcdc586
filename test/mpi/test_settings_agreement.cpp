// Agreement on per-rank settings (issue 9, item 7). The library reads its environment once per
// process and agrees on it at the first call on each communicator: when ranks differ, every
// call on that communicator fails with MPI_ERR_ARG on every rank (instead of running different
// schedules: wrong data or a hang), and plain MPI on it still works.
//
// The registration sets MPIA_TEST_RANK0_ENV="VAR=value": rank 0 (only) puts VAR=value into its
// environment after MPI_Init and before any call of the library (a global test environment, set
// up before the first test). Settings.Disagree expects the failures (at one rank there is
// nothing to disagree with: everything works); Settings.Agree runs with the same settings on
// every rank and expects everything to work, with what the settings select.
#include <gtest/gtest.h>

#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "hardening_util.hpp"
#include "test_support.hpp"

using namespace hardening;
using namespace mpia_test;

namespace {

std::string rank0_env() {
  const char* v = std::getenv("MPIA_TEST_RANK0_ENV");
  return v ? v : "";
}

class Rank0Environment : public ::testing::Environment {
 public:
  void SetUp() override {
    const std::string spec = rank0_env();
    if (spec.empty() || comm_rank(MPI_COMM_WORLD) != 0) return;
    const std::size_t eq = spec.find('=');
    if (eq == std::string::npos || eq == 0) {
      std::fprintf(stderr, "MPIA_TEST_RANK0_ENV='%s': expected VAR=value\n", spec.c_str());
      return;
    }
    setenv(spec.substr(0, eq).c_str(), spec.substr(eq + 1).c_str(), 1);
  }
};
const auto* g_env = ::testing::AddGlobalTestEnvironment(new Rank0Environment);

int g_salt = 5000;

// Every entry point that works on a communicator, once each, with valid arguments; `want` is
// the class every rank must return (MPI_SUCCESS: the call must also deliver the right data).
void exercise(MPI_Comm comm, int want, const std::string& where) {
  const int P = comm_size(comm), me = comm_rank(comm);
  const bool ok = want == MPI_SUCCESS;
  const std::string tail = " on " + where;
  {
    IntExchange x(comm, 3);
    const int salt = g_salt++;
    x.fill(salt);
    const int rc = MPIX_Alltoall(x.send.data(), 3, MPI_INT, x.recv.data(), 3, MPI_INT, comm);
    expect_class_everywhere(comm, rc, want, "MPIX_Alltoall" + tail);
    if (ok) x.check(salt, "MPIX_Alltoall" + tail);
  }
  std::vector<int> counts(std::size_t(P), 2), displs(static_cast<std::size_t>(P));
  for (int k = 0; k < P; ++k) displs[std::size_t(k)] = 2 * k;
  {
    IntExchange x(comm, 2);
    const int salt = g_salt++;
    x.fill(salt);
    const int rc = MPIX_Alltoallv(x.send.data(), counts.data(), displs.data(), MPI_INT,
                                  x.recv.data(), counts.data(), displs.data(), MPI_INT, comm);
    expect_class_everywhere(comm, rc, want, "MPIX_Alltoallv" + tail);
    if (ok) x.check(salt, "MPIX_Alltoallv" + tail);
  }
  for (const char* alg : {"", "pairwise", "system"}) {
    IntExchange x(comm, 2);
    MPI_Info info = algorithm_info(alg);
    MPIX_Request req = MPIX_REQUEST_NULL;
    int rc =
        MPIX_Alltoall_init(x.send.data(), 2, MPI_INT, x.recv.data(), 2, MPI_INT, comm, info, &req);
    expect_class_everywhere(comm, rc, want, std::string("MPIX_Alltoall_init (") + alg + ")" + tail);
    if (rc == MPI_SUCCESS) {
      const int salt = g_salt++;
      x.fill(salt);
      EXPECT_EQ(MPIX_Start(&req), MPI_SUCCESS);
      EXPECT_EQ(MPIX_Wait(&req, MPI_STATUS_IGNORE), MPI_SUCCESS);
      x.check(salt, "persistent alltoall" + tail);
      MPIX_Request_free(&req);
    }
    rc = MPIX_Alltoallv_init(x.send.data(), counts.data(), displs.data(), MPI_INT, x.recv.data(),
                             counts.data(), displs.data(), MPI_INT, comm, info, &req);
    expect_class_everywhere(comm, rc, want,
                            std::string("MPIX_Alltoallv_init (") + alg + ")" + tail);
    if (rc == MPI_SUCCESS) {
      const int salt = g_salt++;
      x.fill(salt);
      EXPECT_EQ(MPIX_Start(&req), MPI_SUCCESS);
      EXPECT_EQ(MPIX_Wait(&req, MPI_STATUS_IGNORE), MPI_SUCCESS);
      x.check(salt, "persistent alltoallv" + tail);
      MPIX_Request_free(&req);
    }
    if (info != MPI_INFO_NULL) MPI_Info_free(&info);
  }
  {
    int node = -1, nnodes = -1, lr = -1, ls = -1;
    int rc = MPIX_Comm_locality(comm, &node, &nnodes, &lr, &ls);
    expect_class_everywhere(comm, rc, want, "MPIX_Comm_locality" + tail);
    rc = MPIX_Comm_rank_locality(comm, 0, &node, &lr, nullptr, nullptr);
    expect_class_everywhere(comm, rc, want, "MPIX_Comm_rank_locality" + tail);
    MPI_Comm split = MPI_COMM_NULL;
    rc = MPIX_Comm_locality_split(comm, MPIX_LOCALITY_NODE, &split);
    expect_class_everywhere(comm, rc, want, "MPIX_Comm_locality_split" + tail);
    if (split != MPI_COMM_NULL) MPI_Comm_free(&split);
    rc = MPIX_Comm_set_algorithm(comm, "alltoall", "pairwise");
    expect_class_everywhere(comm, rc, want, "MPIX_Comm_set_algorithm" + tail);
    if (ok) {
      IntExchange x(comm, 1);
      const int salt = g_salt++;
      x.fill(salt);
      EXPECT_EQ(MPIX_Alltoall(x.send.data(), 1, MPI_INT, x.recv.data(), 1, MPI_INT, comm),
                MPI_SUCCESS);
      x.check(salt, "MPIX_Alltoall after MPIX_Comm_set_algorithm" + tail);
      MPIX_Comm_set_algorithm(comm, "alltoall", nullptr);
    }
  }
  // Plain MPI on the same communicator is unaffected (nothing of ours is left in flight).
  {
    IntExchange x(comm, 2);
    const int salt = g_salt++;
    x.fill(salt);
    EXPECT_EQ(MPI_Alltoall(x.send.data(), 2, MPI_INT, x.recv.data(), 2, MPI_INT, comm),
              MPI_SUCCESS);
    x.check(salt, "MPI_Alltoall" + tail);
  }
  (void)me;
}

// The neighbor collectives on a periodic ring built from comm.
void exercise_neighbor(MPI_Comm parent, int want, const std::string& where) {
  const int P = comm_size(parent);
  int dims[1] = {P}, periods[1] = {1};
  MPI_Comm ring;
  MPI_Cart_create(parent, 1, dims, periods, 0, &ring);
  MPI_Comm_set_errhandler(ring, MPI_ERRORS_RETURN);
  const int me = comm_rank(ring);
  const int left = (me + P - 1) % P, right = (me + 1) % P;
  const bool ok = want == MPI_SUCCESS;
  const std::string tail = " on a ring from " + where;
  std::vector<int> s = {value(me, 0, 0, g_salt), value(me, 1, 0, g_salt)}, r = {kPoison, kPoison};
  auto check = [&](const std::string& what) {
    if (!ok) return;
    EXPECT_EQ(r[0], value(left, 1, 0, g_salt)) << what << tail;
    EXPECT_EQ(r[1], value(right, 0, 0, g_salt)) << what << tail;
    r = {kPoison, kPoison};
  };
  int rc = MPIX_Neighbor_alltoall(s.data(), 1, MPI_INT, r.data(), 1, MPI_INT, ring);
  expect_class_everywhere(ring, rc, want, "MPIX_Neighbor_alltoall" + tail);
  check("MPIX_Neighbor_alltoall");
  int c[2] = {1, 1}, d[2] = {0, 1};
  rc = MPIX_Neighbor_alltoallv(s.data(), c, d, MPI_INT, r.data(), c, d, MPI_INT, ring);
  expect_class_everywhere(ring, rc, want, "MPIX_Neighbor_alltoallv" + tail);
  check("MPIX_Neighbor_alltoallv");
  MPIX_Request req = MPIX_REQUEST_NULL;
  rc = MPIX_Neighbor_alltoall_init(s.data(), 1, MPI_INT, r.data(), 1, MPI_INT, ring, MPI_INFO_NULL,
                                   &req);
  expect_class_everywhere(ring, rc, want, "MPIX_Neighbor_alltoall_init" + tail);
  if (rc == MPI_SUCCESS) {
    EXPECT_EQ(MPIX_Start(&req), MPI_SUCCESS);
    EXPECT_EQ(MPIX_Wait(&req, MPI_STATUS_IGNORE), MPI_SUCCESS);
    check("persistent MPIX_Neighbor_alltoall");
    MPIX_Request_free(&req);
  }
  rc = MPIX_Neighbor_alltoallv_init(s.data(), c, d, MPI_INT, r.data(), c, d, MPI_INT, ring,
                                    MPI_INFO_NULL, &req);
  expect_class_everywhere(ring, rc, want, "MPIX_Neighbor_alltoallv_init" + tail);
  if (rc == MPI_SUCCESS) {
    EXPECT_EQ(MPIX_Start(&req), MPI_SUCCESS);
    EXPECT_EQ(MPIX_Wait(&req, MPI_STATUS_IGNORE), MPI_SUCCESS);
    check("persistent MPIX_Neighbor_alltoallv");
    MPIX_Request_free(&req);
  }
  ++g_salt;
  MPI_Comm_free(&ring);
}

// Rank 0's settings differ from the others': MPI_ERR_ARG on every rank, for every call, on
// every communicator (the world, a duplicate, a ring), again on a second round (the
// disagreement is permanent), and nothing hangs.
TEST(Settings, Disagree) {
  ASSERT_FALSE(rank0_env().empty()) << "run with MPIA_TEST_RANK0_ENV=VAR=value";
  MPI_Errhandler self_old;
  MPI_Comm_get_errhandler(MPI_COMM_SELF, &self_old);
  MPI_Comm_set_errhandler(MPI_COMM_SELF, MPI_ERRORS_RETURN);
  MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
  const int P = comm_size(MPI_COMM_WORLD);
  // At one rank there is no one to disagree with.
  const int want = P > 1 ? MPI_ERR_ARG : MPI_SUCCESS;
  {
    DupComm c;
    exercise(c.get(), want, "a duplicate of MPI_COMM_WORLD");
    exercise(c.get(), want, "a duplicate of MPI_COMM_WORLD (second round)");
  }
  exercise(MPI_COMM_WORLD, want, "MPI_COMM_WORLD");
  exercise_neighbor(MPI_COMM_WORLD, want, "MPI_COMM_WORLD");
  {
    // A communicator without rank 0 agrees (every member has the same settings).
    MPI_Comm rest;
    const int me = comm_rank(MPI_COMM_WORLD);
    MPI_Comm_split(MPI_COMM_WORLD, me == 0 ? MPI_UNDEFINED : 1, me, &rest);
    if (rest != MPI_COMM_NULL) {
      MPI_Comm_set_errhandler(rest, MPI_ERRORS_RETURN);
      exercise(rest, MPI_SUCCESS, "the ranks other than 0");
      MPI_Comm_free(&rest);
    }
    // And MPI_COMM_SELF of every rank is consistent with itself.
    MPI_Comm self;
    MPI_Comm_dup(MPI_COMM_SELF, &self);
    MPI_Comm_set_errhandler(self, MPI_ERRORS_RETURN);
    exercise(self, MPI_SUCCESS, "a duplicate of MPI_COMM_SELF");
    MPI_Comm_free(&self);
  }
  MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_ARE_FATAL);
  MPI_Comm_set_errhandler(MPI_COMM_SELF, self_old);
  MPI_Errhandler_free(&self_old);
}

// The same settings on every rank: everything works, and the settings take effect.
TEST(Settings, Agree) {
  MPI_Errhandler self_old;
  MPI_Comm_get_errhandler(MPI_COMM_SELF, &self_old);
  MPI_Comm_set_errhandler(MPI_COMM_SELF, MPI_ERRORS_RETURN);
  DupComm c;
  exercise(c.get(), MPI_SUCCESS, "a duplicate of MPI_COMM_WORLD");
  exercise_neighbor(c.get(), MPI_SUCCESS, "a duplicate of MPI_COMM_WORLD");
  // A persistent request without info reports the environment's algorithm.
  for (const char* var : {"MPIX_ALLTOALL", "MPIX_ALLTOALLV"}) {
    const char* v = std::getenv(var);
    if (!v || !*v) continue;
    const std::string want = v;
    const int P = comm_size(c.get());
    IntExchange x(c.get(), 2);
    std::vector<int> counts(std::size_t(P), 2), displs(static_cast<std::size_t>(P));
    for (int k = 0; k < P; ++k) displs[std::size_t(k)] = 2 * k;
    MPIX_Request req = MPIX_REQUEST_NULL;
    const int rc = std::strcmp(var, "MPIX_ALLTOALL") == 0
                       ? MPIX_Alltoall_init(x.send.data(), 2, MPI_INT, x.recv.data(), 2, MPI_INT,
                                            c.get(), MPI_INFO_NULL, &req)
                       : MPIX_Alltoallv_init(x.send.data(), counts.data(), displs.data(), MPI_INT,
                                             x.recv.data(), counts.data(), displs.data(), MPI_INT,
                                             c.get(), MPI_INFO_NULL, &req);
    ASSERT_EQ(rc, MPI_SUCCESS) << error_string(rc);
    const std::string got = reported_algorithm(req);
    EXPECT_EQ(got.substr(0, want.size()), want)
        << var << "=" << want << " but the request runs " << got;
    MPIX_Request_free(&req);
  }
  MPI_Comm_set_errhandler(MPI_COMM_SELF, self_old);
  MPI_Errhandler_free(&self_old);
}

}  // namespace
