// Error handling: invalid arguments return MPI error codes (with MPI_ERRORS_RETURN on the
// communicator and on MPI_COMM_SELF), raise the error handler of the communicator involved,
// leave the out request MPIX_REQUEST_NULL, and never hang when every rank sees the same error.
// Each test ends with a correct all-to-all on the same communicator: errors must not leave it
// unusable.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <string>
#include <vector>

#include "test_support.hpp"

using namespace mpia_test;

namespace {

// A non-null value that no valid request has: init must overwrite it on failure.
MPIX_Request bogus_request() {
  static int dummy;
  return reinterpret_cast<MPIX_Request>(&dummy);
}

class Errors : public ::testing::Test {
 protected:
  void SetUp() override {
    MPI_Comm_dup(MPI_COMM_WORLD, &comm_);
    MPI_Comm_set_errhandler(comm_, MPI_ERRORS_RETURN);
    MPI_Comm_get_errhandler(MPI_COMM_SELF, &self_old_);
    MPI_Comm_set_errhandler(MPI_COMM_SELF, MPI_ERRORS_RETURN);
    nprocs_ = comm_size(comm_);
    me_ = comm_rank(comm_);
    send_.assign(static_cast<std::size_t>(nprocs_) * 2, 1);
    recv_.assign(static_cast<std::size_t>(nprocs_) * 2, 0);
  }
  void TearDown() override {
    // The communicator still works after the errors.
    Layout lint = layout_int();
    run_blocking(comm_, "", lint, 2, lint, 2, false);
    RunOptions opt;
    opt.iterations = 1;
    run_persistent(comm_, "", lint, 1, lint, 1, opt);
    MPI_Comm_free(&comm_);
    MPI_Comm_set_errhandler(MPI_COMM_SELF, self_old_);
    MPI_Errhandler_free(&self_old_);
  }

  // Persistent init expected to fail with one of `classes`; checks the request is nulled.
  void expect_init_fails(const void* sbuf, int scount, MPI_Datatype stype, void* rbuf, int rcount,
                         MPI_Datatype rtype, MPI_Comm comm, const char* spec,
                         std::vector<int> classes, const std::string& what) {
    SCOPED_TRACE(what);
    MPI_Info info = MPI_INFO_NULL;
    if (spec) {
      MPI_Info_create(&info);
      MPI_Info_set(info, MPIX_INFO_KEY_ALGORITHM, spec);
    }
    MPIX_Request req = bogus_request();
    const int rc = MPIX_Alltoall_init(sbuf, scount, stype, rbuf, rcount, rtype, comm, info, &req);
    if (info != MPI_INFO_NULL) MPI_Info_free(&info);
    EXPECT_NE(rc, MPI_SUCCESS) << "MPIX_Alltoall_init accepted it";
    if (rc != MPI_SUCCESS) {
      const int cls = error_class(rc);
      EXPECT_NE(std::find(classes.begin(), classes.end(), cls), classes.end())
          << "unexpected error: " << error_string(rc);
      EXPECT_EQ(req, MPIX_REQUEST_NULL) << "the request must be MPIX_REQUEST_NULL on failure";
    } else if (req != MPIX_REQUEST_NULL && req != bogus_request()) {
      MPIX_Request_free(&req);
    }
  }

  // Blocking call expected to fail with one of `classes`.
  void expect_blocking_fails(const void* sbuf, int scount, MPI_Datatype stype, void* rbuf,
                             int rcount, MPI_Datatype rtype, MPI_Comm comm,
                             std::vector<int> classes, const std::string& what) {
    SCOPED_TRACE("blocking: " + what);
    const int rc = MPIX_Alltoall(sbuf, scount, stype, rbuf, rcount, rtype, comm);
    EXPECT_NE(rc, MPI_SUCCESS) << "MPIX_Alltoall accepted it";
    if (rc != MPI_SUCCESS) {
      const int cls = error_class(rc);
      EXPECT_NE(std::find(classes.begin(), classes.end(), cls), classes.end())
          << "unexpected error: " << error_string(rc);
    }
  }

  MPIX_Request valid_request(const char* spec) {
    MPI_Info info;
    MPI_Info_create(&info);
    MPI_Info_set(info, MPIX_INFO_KEY_ALGORITHM, spec);
    MPIX_Request req = MPIX_REQUEST_NULL;
    const int rc =
        MPIX_Alltoall_init(send_.data(), 2, MPI_INT, recv_.data(), 2, MPI_INT, comm_, info, &req);
    MPI_Info_free(&info);
    EXPECT_EQ(rc, MPI_SUCCESS) << error_string(rc);
    return req;
  }

  void fill_send(int iter) {
    for (int d = 0; d < nprocs_; ++d) {
      for (int j = 0; j < 2; ++j)
        send_[static_cast<std::size_t>(d * 2 + j)] = code(me_, d, j, iter);
    }
    std::fill(recv_.begin(), recv_.end(), -1);
  }
  void check_recv(int iter) {
    for (int s = 0; s < nprocs_; ++s) {
      for (int j = 0; j < 2; ++j) {
        EXPECT_EQ(recv_[static_cast<std::size_t>(s * 2 + j)], code(s, me_, j, iter))
            << "from rank " << s << " element " << j;
      }
    }
  }
  static int code(int src, int dst, int j, int iter) {
    return ((iter * 64 + src) * 64 + dst) * 4 + j;
  }

  MPI_Comm comm_ = MPI_COMM_NULL;
  MPI_Errhandler self_old_ = MPI_ERRHANDLER_NULL;
  int nprocs_ = 0;
  int me_ = 0;
  std::vector<int> send_, recv_;
};

TEST_F(Errors, NullBuffersWithNonZeroCount) {
  const std::vector<int> buf = {MPI_ERR_BUFFER};
  expect_init_fails(nullptr, 2, MPI_INT, recv_.data(), 2, MPI_INT, comm_, nullptr, buf,
                    "null sendbuf");
  expect_init_fails(send_.data(), 2, MPI_INT, nullptr, 2, MPI_INT, comm_, nullptr, buf,
                    "null recvbuf");
  expect_init_fails(MPI_IN_PLACE, 2, MPI_INT, nullptr, 2, MPI_INT, comm_, nullptr, buf,
                    "in place, null recvbuf");
  expect_init_fails(nullptr, 2, MPI_INT, recv_.data(), 2, MPI_INT, comm_, "bruck", buf,
                    "null sendbuf, bruck");
  expect_blocking_fails(nullptr, 2, MPI_INT, recv_.data(), 2, MPI_INT, comm_, buf, "null sendbuf");
  expect_blocking_fails(send_.data(), 2, MPI_INT, nullptr, 2, MPI_INT, comm_, buf, "null recvbuf");
}

TEST_F(Errors, NegativeCount) {
  const std::vector<int> cnt = {MPI_ERR_COUNT};
  expect_init_fails(send_.data(), -1, MPI_INT, recv_.data(), 2, MPI_INT, comm_, nullptr, cnt,
                    "sendcount -1");
  expect_init_fails(send_.data(), 2, MPI_INT, recv_.data(), -3, MPI_INT, comm_, nullptr, cnt,
                    "recvcount -3");
  expect_init_fails(MPI_IN_PLACE, 2, MPI_INT, recv_.data(), -1, MPI_INT, comm_, nullptr, cnt,
                    "in place, recvcount -1");
  expect_blocking_fails(send_.data(), -1, MPI_INT, recv_.data(), 2, MPI_INT, comm_, cnt,
                        "sendcount -1");
  expect_blocking_fails(send_.data(), 2, MPI_INT, recv_.data(), -1, MPI_INT, comm_, cnt,
                        "recvcount -1");
}

TEST_F(Errors, CommNull) {
  const std::vector<int> cls = {MPI_ERR_COMM};
  expect_init_fails(send_.data(), 2, MPI_INT, recv_.data(), 2, MPI_INT, MPI_COMM_NULL, nullptr, cls,
                    "MPI_COMM_NULL");
  expect_blocking_fails(send_.data(), 2, MPI_INT, recv_.data(), 2, MPI_INT, MPI_COMM_NULL, cls,
                        "MPI_COMM_NULL");
}

TEST_F(Errors, DatatypeNull) {
  const std::vector<int> cls = {MPI_ERR_TYPE};
  expect_init_fails(send_.data(), 2, MPI_DATATYPE_NULL, recv_.data(), 2, MPI_INT, comm_, nullptr,
                    cls, "null sendtype");
  expect_init_fails(send_.data(), 2, MPI_INT, recv_.data(), 2, MPI_DATATYPE_NULL, comm_, nullptr,
                    cls, "null recvtype");
  expect_init_fails(MPI_IN_PLACE, 2, MPI_INT, recv_.data(), 2, MPI_DATATYPE_NULL, comm_, nullptr,
                    cls, "in place, null recvtype");
  expect_blocking_fails(send_.data(), 2, MPI_DATATYPE_NULL, recv_.data(), 2, MPI_INT, comm_, cls,
                        "null sendtype");
  expect_blocking_fails(send_.data(), 2, MPI_INT, recv_.data(), 2, MPI_DATATYPE_NULL, comm_, cls,
                        "null recvtype");
}

TEST_F(Errors, BadAlgorithmInInfo) {
  const std::vector<int> cls = {MPI_ERR_INFO_VALUE, MPI_ERR_ARG};
  const std::string too_big = "tra:radix=" + std::to_string(std::max(2, nprocs_) + 1);
  for (const std::string& spec :
       {std::string("tra:radix=1"), std::string("tra:radix=0"), std::string("tra:radix=-2"),
        too_big, std::string("tra:radix=1000000"), std::string("tra:radix=abc"),
        std::string("tra:radix=3x"), std::string("no_such_algorithm"), std::string(":radix=2")}) {
    expect_init_fails(send_.data(), 2, MPI_INT, recv_.data(), 2, MPI_INT, comm_, spec.c_str(), cls,
                      "mpix_algorithm=" + spec);
  }
}

TEST_F(Errors, NullRequestPointer) {
  MPI_Info info = MPI_INFO_NULL;
  const int rc =
      MPIX_Alltoall_init(send_.data(), 2, MPI_INT, recv_.data(), 2, MPI_INT, comm_, info, nullptr);
  EXPECT_NE(rc, MPI_SUCCESS);
  if (rc != MPI_SUCCESS) {
    const int cls = error_class(rc);
    EXPECT_TRUE(cls == MPI_ERR_REQUEST || cls == MPI_ERR_ARG) << error_string(rc);
  }
  EXPECT_NE(MPIX_Start(nullptr), MPI_SUCCESS);
  EXPECT_NE(MPIX_Request_free(nullptr), MPI_SUCCESS);
  EXPECT_NE(MPIX_Startall(1, nullptr), MPI_SUCCESS);
}

TEST_F(Errors, StartOnActiveRequest) {
  MPIX_Request req = valid_request("pairwise");
  ASSERT_NE(req, MPIX_REQUEST_NULL);
  for (int iter = 0; iter < 2; ++iter) {
    fill_send(iter);
    ASSERT_EQ(MPIX_Start(&req), MPI_SUCCESS);
    int rc = MPIX_Start(&req);
    EXPECT_EQ(error_class(rc), MPI_ERR_REQUEST) << "second MPIX_Start: " << error_string(rc);
    rc = MPIX_Startall(1, &req);
    EXPECT_EQ(error_class(rc), MPI_ERR_REQUEST) << "MPIX_Startall: " << error_string(rc);
    rc = MPIX_Request_free(&req);
    EXPECT_EQ(error_class(rc), MPI_ERR_REQUEST)
        << "free of an active request: " << error_string(rc);
    ASSERT_NE(req, MPIX_REQUEST_NULL) << "a failed free must keep the request";
    EXPECT_EQ(MPIX_Wait(&req, MPI_STATUS_IGNORE), MPI_SUCCESS);
    check_recv(iter);
    // Now inactive: Wait and Test return at once.
    EXPECT_EQ(MPIX_Wait(&req, MPI_STATUS_IGNORE), MPI_SUCCESS);
    int flag = 0;
    EXPECT_EQ(MPIX_Test(&req, &flag, MPI_STATUS_IGNORE), MPI_SUCCESS);
    EXPECT_TRUE(flag) << "MPIX_Test on an inactive request";
    EXPECT_NE(req, MPIX_REQUEST_NULL);
  }
  EXPECT_EQ(MPIX_Request_free(&req), MPI_SUCCESS);
  EXPECT_EQ(req, MPIX_REQUEST_NULL);
}

TEST_F(Errors, NullRequestHandles) {
  MPIX_Request req = MPIX_REQUEST_NULL;
  MPI_Status status;
  std::memset(&status, 0x5c, sizeof status);
  EXPECT_EQ(MPIX_Wait(&req, &status), MPI_SUCCESS);
  EXPECT_EQ(status.MPI_SOURCE, MPI_ANY_SOURCE) << "empty status";
  EXPECT_EQ(status.MPI_TAG, MPI_ANY_TAG) << "empty status";
  int count = -1;
  MPI_Get_count(&status, MPI_BYTE, &count);
  EXPECT_EQ(count, 0) << "empty status";
  EXPECT_EQ(MPIX_Wait(&req, MPI_STATUS_IGNORE), MPI_SUCCESS);

  int flag = 0;
  EXPECT_EQ(MPIX_Test(&req, &flag, MPI_STATUS_IGNORE), MPI_SUCCESS);
  EXPECT_TRUE(flag);

  MPIX_Request reqs[3] = {MPIX_REQUEST_NULL, MPIX_REQUEST_NULL, MPIX_REQUEST_NULL};
  EXPECT_EQ(MPIX_Waitall(3, reqs, MPI_STATUSES_IGNORE), MPI_SUCCESS);
  EXPECT_EQ(MPIX_Waitall(0, nullptr, MPI_STATUSES_IGNORE), MPI_SUCCESS);
  EXPECT_EQ(MPIX_Startall(0, nullptr), MPI_SUCCESS);

  EXPECT_EQ(MPIX_Request_free(&req), MPI_SUCCESS) << "freeing MPIX_REQUEST_NULL is a no-op";
  EXPECT_EQ(req, MPIX_REQUEST_NULL);

  int rc = MPIX_Start(&req);
  EXPECT_EQ(error_class(rc), MPI_ERR_REQUEST)
      << "MPIX_Start(MPIX_REQUEST_NULL): " << error_string(rc);
  rc = MPIX_Startall(3, reqs);
  EXPECT_EQ(error_class(rc), MPI_ERR_REQUEST)
      << "MPIX_Startall of null requests: " << error_string(rc);

  char name[MPIX_MAX_ALGORITHM_STRING];
  int len = 0;
  EXPECT_NE(MPIX_Request_get_algorithm(MPIX_REQUEST_NULL, name, &len), MPI_SUCCESS);
}

// A mix of null and real requests in Startall/Waitall.
TEST_F(Errors, WaitallWithNullEntries) {
  MPIX_Request reqs[2] = {MPIX_REQUEST_NULL, valid_request("bruck")};
  ASSERT_NE(reqs[1], MPIX_REQUEST_NULL);
  fill_send(7);
  EXPECT_EQ(MPIX_Start(&reqs[1]), MPI_SUCCESS);
  MPI_Status statuses[2];
  EXPECT_EQ(MPIX_Waitall(2, reqs, statuses), MPI_SUCCESS);
  check_recv(7);
  EXPECT_EQ(MPIX_Request_free(&reqs[1]), MPI_SUCCESS);
}

// Errors go through the error handler of the communicator involved (MPI_COMM_SELF's when
// there is none), and the handler gets the code the call returns.
int g_handler_calls = 0;
int g_handler_code = MPI_SUCCESS;
void counting_handler(MPI_Comm*, int* code, ...) {
  ++g_handler_calls;
  g_handler_code = *code;
}

TEST_F(Errors, ErrorHandlerIsInvoked) {
  MPI_Errhandler eh;
  MPI_Comm_create_errhandler(counting_handler, &eh);
  {
    ScopedErrhandler on_comm(comm_, eh);
    g_handler_calls = 0;
    MPIX_Request req = bogus_request();
    const int rc = MPIX_Alltoall_init(send_.data(), -1, MPI_INT, recv_.data(), 2, MPI_INT, comm_,
                                      MPI_INFO_NULL, &req);
    EXPECT_NE(rc, MPI_SUCCESS);
    EXPECT_EQ(g_handler_calls, 1) << "the communicator's error handler must be called once";
    if (g_handler_calls == 1) {
      EXPECT_EQ(error_class(g_handler_code), error_class(rc));
    }
    g_handler_calls = 0;
    const int rc2 =
        MPIX_Alltoall(send_.data(), 2, MPI_INT, recv_.data(), 2, MPI_DATATYPE_NULL, comm_);
    EXPECT_NE(rc2, MPI_SUCCESS);
    EXPECT_EQ(g_handler_calls, 1) << "blocking: the error handler must be called once";
  }
  {
    ScopedErrhandler on_self(MPI_COMM_SELF, eh);
    g_handler_calls = 0;
    MPIX_Request req = bogus_request();
    const int rc = MPIX_Alltoall_init(send_.data(), 2, MPI_INT, recv_.data(), 2, MPI_INT,
                                      MPI_COMM_NULL, MPI_INFO_NULL, &req);
    EXPECT_NE(rc, MPI_SUCCESS);
    EXPECT_EQ(g_handler_calls, 1) << "MPI_COMM_NULL: MPI_COMM_SELF's handler must be called";
    g_handler_calls = 0;
    MPIX_Request null_req = MPIX_REQUEST_NULL;
    EXPECT_NE(MPIX_Start(&null_req), MPI_SUCCESS);
    EXPECT_EQ(g_handler_calls, 1) << "MPIX_Start(null): MPI_COMM_SELF's handler must be called";
  }
  MPI_Errhandler_free(&eh);
}

// A failed init must not disturb later operations: a bad call between two good ones.
TEST_F(Errors, FailureBetweenValidCalls) {
  MPIX_Request a = valid_request("tra");
  ASSERT_NE(a, MPIX_REQUEST_NULL);
  expect_init_fails(send_.data(), 2, MPI_INT, recv_.data(), 2, MPI_INT, comm_, "tra:radix=1",
                    {MPI_ERR_INFO_VALUE, MPI_ERR_ARG}, "radix 1 while another request exists");
  for (int iter = 0; iter < 2; ++iter) {
    fill_send(20 + iter);
    EXPECT_EQ(MPIX_Start(&a), MPI_SUCCESS);
    EXPECT_EQ(MPIX_Wait(&a, MPI_STATUS_IGNORE), MPI_SUCCESS);
    check_recv(20 + iter);
  }
  EXPECT_EQ(MPIX_Request_free(&a), MPI_SUCCESS);
}

// Persistent init is collective: when only some ranks pass bad arguments, every rank must
// fail (none may be left waiting, none may get a request).
TEST_F(Errors, ErrorOnSomeRanksFailsEverywhere) {
  if (nprocs_ < 2) GTEST_SKIP() << "needs two ranks";
  const bool bad = me_ == nprocs_ - 1;
  MPIX_Request req = bogus_request();
  int rc = MPIX_Alltoall_init(bad ? nullptr : send_.data(), 2, MPI_INT, recv_.data(), 2, MPI_INT,
                              comm_, MPI_INFO_NULL, &req);
  EXPECT_NE(rc, MPI_SUCCESS) << (bad ? "null sendbuf here" : "null sendbuf on another rank");
  EXPECT_EQ(req, MPIX_REQUEST_NULL);
  if (bad) {
    EXPECT_EQ(error_class(rc), MPI_ERR_BUFFER) << error_string(rc);
  }
  if (rc == MPI_SUCCESS && req != MPIX_REQUEST_NULL && req != bogus_request()) {
    MPIX_Request_free(&req);
  }
  // A radix that is valid nowhere but requested by one rank only.
  MPI_Info info;
  MPI_Info_create(&info);
  MPI_Info_set(info, MPIX_INFO_KEY_ALGORITHM, me_ == 0 ? "tra:radix=1" : "tra");
  req = bogus_request();
  rc = MPIX_Alltoall_init(send_.data(), 2, MPI_INT, recv_.data(), 2, MPI_INT, comm_, info, &req);
  MPI_Info_free(&info);
  EXPECT_NE(rc, MPI_SUCCESS);
  EXPECT_EQ(req, MPIX_REQUEST_NULL);
  if (rc == MPI_SUCCESS && req != MPIX_REQUEST_NULL && req != bogus_request()) {
    MPIX_Request_free(&req);
  }
}

TEST_F(Errors, Intercommunicator) {
  if (nprocs_ < 2) GTEST_SKIP() << "needs two ranks";
  MPI_Comm half, inter;
  MPI_Comm_split(comm_, me_ % 2, me_, &half);
  MPI_Intercomm_create(half, 0, comm_, me_ % 2 == 0 ? 1 : 0, 99, &inter);
  MPI_Comm_set_errhandler(inter, MPI_ERRORS_RETURN);
  // Either unsupported (MPI_ERR_COMM) everywhere, or correct: this library documents the
  // former.
  expect_init_fails(send_.data(), 1, MPI_INT, recv_.data(), 1, MPI_INT, inter, nullptr,
                    {MPI_ERR_COMM}, "intercommunicator");
  expect_blocking_fails(send_.data(), 1, MPI_INT, recv_.data(), 1, MPI_INT, inter, {MPI_ERR_COMM},
                        "intercommunicator");
  MPI_Comm_free(&inter);
  MPI_Comm_free(&half);
}

TEST_F(Errors, NullOutputArguments) {
  MPIX_Request req = valid_request("linear");
  ASSERT_NE(req, MPIX_REQUEST_NULL);
  EXPECT_NE(MPIX_Test(&req, nullptr, MPI_STATUS_IGNORE), MPI_SUCCESS);
  int len = 0;
  EXPECT_NE(MPIX_Request_get_algorithm(req, nullptr, &len), MPI_SUCCESS);
  char name[MPIX_MAX_ALGORITHM_STRING];
  EXPECT_NE(MPIX_Request_get_algorithm(req, name, nullptr), MPI_SUCCESS);
  EXPECT_NE(MPIX_Wait(nullptr, MPI_STATUS_IGNORE), MPI_SUCCESS);
  int flag = 0;
  EXPECT_NE(MPIX_Test(nullptr, &flag, MPI_STATUS_IGNORE), MPI_SUCCESS);
  EXPECT_NE(MPIX_Startall(-1, &req), MPI_SUCCESS);
  EXPECT_NE(MPIX_Waitall(-1, &req, MPI_STATUSES_IGNORE), MPI_SUCCESS);
  EXPECT_EQ(MPIX_Request_free(&req), MPI_SUCCESS);
}

// MPIX_Startall checks every entry before starting any: a null entry fails the call and
// leaves the valid requests inactive.
TEST_F(Errors, StartallWithNullEntryStartsNothing) {
  MPIX_Request reqs[2] = {valid_request("modified_bruck"), MPIX_REQUEST_NULL};
  ASSERT_NE(reqs[0], MPIX_REQUEST_NULL);
  const int rc = MPIX_Startall(2, reqs);
  EXPECT_EQ(error_class(rc), MPI_ERR_REQUEST) << error_string(rc);
  // Still inactive: it can be freed (freeing an active request is an error).
  EXPECT_EQ(MPIX_Request_free(&reqs[0]), MPI_SUCCESS);
}

}  // namespace
