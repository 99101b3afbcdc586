// Invalid arguments of MPIX_Alltoallv and MPIX_Alltoallv_init under MPI_ERRORS_RETURN: the
// error class of each mistake (negative displacements are not one: MPI allows them, and
// test_alltoallv.cpp runs them), errors detected on only some ranks failing init on every rank
// with the culprit's class (without hanging), mismatched pair sizes (MPI_ERR_TRUNCATE
// everywhere), bad selections in info, a bad MPIX_ALLTOALLV (AlltoallvErrorsEnv, run by
// environment.cmake), MPI_COMM_SELF, and the communicator still usable afterwards.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdlib>
#include <string>
#include <vector>

#include "test_support.hpp"

using namespace mpia_test;

namespace {

// Valid arguments (P ints to and from everyone, 2 per peer), to be spoiled by each test.
struct Args {
  explicit Args(MPI_Comm c) : comm(c), P(comm_size(c)), me(comm_rank(c)) {
    sc.assign(static_cast<std::size_t>(P), 2);
    rc = sc;
    for (int p = 0; p < P; ++p) {
      sd.push_back(2 * (P - 1 - p));  // reverse order
      rd.push_back(2 * p);
    }
    sbuf.assign(static_cast<std::size_t>(2 * P), me);
    rbuf.assign(static_cast<std::size_t>(2 * P), -1);
  }
  MPI_Comm comm;
  int P, me;
  std::vector<int> sc, sd, rc, rd, sbuf, rbuf;
  const void* send = nullptr;  // overrides sbuf when use_send is set
  bool use_send = false;
  void* recv = nullptr;
  bool use_recv = false;
  const int* psc() const { return null_sc ? nullptr : sc.data(); }
  const int* psd() const { return null_sd ? nullptr : sd.data(); }
  const int* prc() const { return null_rc ? nullptr : rc.data(); }
  const int* prd() const { return null_rd ? nullptr : rd.data(); }
  bool null_sc = false, null_sd = false, null_rc = false, null_rd = false;
  MPI_Datatype stype = MPI_INT, rtype = MPI_INT;

  int blocking() {
    return MPIX_Alltoallv(use_send ? send : sbuf.data(), psc(), psd(), stype,
                          use_recv ? recv : rbuf.data(), prc(), prd(), rtype, comm);
  }
  int init(MPI_Info info, MPIX_Request* req) {
    return MPIX_Alltoallv_init(use_send ? send : sbuf.data(), psc(), psd(), stype,
                               use_recv ? recv : rbuf.data(), prc(), prd(), rtype, comm, info, req);
  }
  // A correct exchange works (the communicator is not left broken).
  void expect_works() {
    for (int p = 0; p < P; ++p) {
      sbuf[static_cast<std::size_t>(sd[static_cast<std::size_t>(p)])] = me * 1000 + p;
      sbuf[static_cast<std::size_t>(sd[static_cast<std::size_t>(p)] + 1)] = -(me * 1000 + p);
    }
    const int code = MPIX_Alltoallv(sbuf.data(), sc.data(), sd.data(), MPI_INT, rbuf.data(),
                                    rc.data(), rd.data(), MPI_INT, comm);
    EXPECT_EQ(code, MPI_SUCCESS) << "valid call after an error: " << error_string(code);
    for (int p = 0; p < P; ++p) {
      EXPECT_EQ(rbuf[static_cast<std::size_t>(2 * p)], p * 1000 + me);
      EXPECT_EQ(rbuf[static_cast<std::size_t>(2 * p + 1)], -(p * 1000 + me));
    }
  }
};

using Spoil = void (*)(Args&);

struct Mistake {
  const char* name;
  Spoil spoil;
  int error_class;
};

const Mistake kMistakes[] = {
    {"null sendcounts", [](Args& a) { a.null_sc = true; }, MPI_ERR_ARG},
    {"null sdispls", [](Args& a) { a.null_sd = true; }, MPI_ERR_ARG},
    {"null recvcounts", [](Args& a) { a.null_rc = true; }, MPI_ERR_ARG},
    {"null rdispls", [](Args& a) { a.null_rd = true; }, MPI_ERR_ARG},
    {"negative sendcount", [](Args& a) { a.sc[static_cast<std::size_t>(a.P - 1)] = -2; },
     MPI_ERR_COUNT},
    {"negative recvcount", [](Args& a) { a.rc[0] = -1; }, MPI_ERR_COUNT},
    {"null sendbuf with counts",
     [](Args& a) {
       a.use_send = true;
       a.send = nullptr;
     },
     MPI_ERR_BUFFER},
    {"null recvbuf with counts",
     [](Args& a) {
       a.use_recv = true;
       a.recv = nullptr;
     },
     MPI_ERR_BUFFER},
    {"recvbuf MPI_IN_PLACE",
     [](Args& a) {
       a.use_recv = true;
       a.recv = MPI_IN_PLACE;
     },
     MPI_ERR_BUFFER},
    {"null recvtype", [](Args& a) { a.rtype = MPI_DATATYPE_NULL; }, MPI_ERR_TYPE},
};

class AlltoallvErrors : public ::testing::TestWithParam<Mistake> {};

std::string mistake_name(const ::testing::TestParamInfo<Mistake>& info) {
  std::string s = info.param.name;
  for (char& ch : s)
    if (ch == ' ') ch = '_';
  return s;
}

// The same mistake on every rank: blocking and persistent init fail with its class, on the
// world communicator and on MPI_COMM_SELF.
TEST_P(AlltoallvErrors, EveryRank) {
  const Mistake& m = GetParam();
  for (MPI_Comm comm : {MPI_COMM_WORLD, MPI_COMM_SELF}) {
    SCOPED_TRACE(std::string(m.name) + (comm == MPI_COMM_SELF ? " on MPI_COMM_SELF" : ""));
    ScopedErrhandler eh(comm, MPI_ERRORS_RETURN);
    {
      Args a(comm);
      m.spoil(a);
      const int code = a.blocking();
      EXPECT_EQ(error_class(code), m.error_class) << "MPIX_Alltoallv: " << error_string(code);
    }
    {
      Args a(comm);
      m.spoil(a);
      MPIX_Request req = reinterpret_cast<MPIX_Request>(0x1);
      const int code = a.init(MPI_INFO_NULL, &req);
      EXPECT_EQ(error_class(code), m.error_class) << "MPIX_Alltoallv_init: " << error_string(code);
      EXPECT_EQ(req, MPIX_REQUEST_NULL) << "a failed init must leave a null request";
      if (code == MPI_SUCCESS && req != MPIX_REQUEST_NULL) MPIX_Request_free(&req);
    }
    Args ok(comm);
    ok.expect_works();
  }
}

// The mistake on one rank only: init fails on every rank, every rank with the mistake's class
// (an argument error outranks the size mismatches its peers see), nobody hangs, and the
// communicator works afterwards.
TEST_P(AlltoallvErrors, OneRankInit) {
  const Mistake& m = GetParam();
  const int P = comm_size(MPI_COMM_WORLD);
  ScopedErrhandler eh(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
  for (int culprit : {0, P - 1}) {
    SCOPED_TRACE(std::string(m.name) + " on rank " + std::to_string(culprit));
    Args a(MPI_COMM_WORLD);
    // Null buffers are only wrong when something is received or sent: keep counts intact.
    if (a.me == culprit) m.spoil(a);
    MPIX_Request req = MPIX_REQUEST_NULL;
    const int code = a.init(MPI_INFO_NULL, &req);
    EXPECT_NE(code, MPI_SUCCESS) << "init must fail on every rank";
    EXPECT_EQ(error_class(code), m.error_class)
        << (a.me == culprit ? "the culprit: " : "every rank reports the culprit's class: ")
        << error_string(code);
    EXPECT_EQ(req, MPIX_REQUEST_NULL);
    if (code == MPI_SUCCESS && req != MPIX_REQUEST_NULL) MPIX_Request_free(&req);
    Args ok(MPI_COMM_WORLD);
    ok.expect_works();
  }
}

INSTANTIATE_TEST_SUITE_P(Mistakes, AlltoallvErrors, ::testing::ValuesIn(kMistakes), mistake_name);

int init_with(Args& a, const std::string& spec, MPIX_Request* req) {
  MPI_Info info;
  MPI_Info_create(&info);
  MPI_Info_set(info, MPIX_INFO_KEY_ALGORITHM, spec.c_str());
  const int code = a.init(info, req);
  MPI_Info_free(&info);
  return code;
}

TEST(AlltoallvErrorsInfo, BadSelections) {
  const int P = comm_size(MPI_COMM_WORLD);
  ScopedErrhandler eh(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
  std::vector<std::string> bad = {"nosuch",
                                  ":window=2",
                                  "multipair_waitall:window=0",
                                  "multipair_waitany:window=0",
                                  "multipair_testany:window=0",
                                  "multipair_waitany:window=-3",
                                  "multipair_waitall:window=x",
                                  "bruck:radix=1",
                                  "bruck:radix=" + std::to_string(std::max(2, P) + 1),
                                  "pairwise:window=2",
                                  "linear:radix=2",
                                  "bruck:radix=2,radix=2",
                                  "tra"};  // an alltoall algorithm, not an alltoallv one
  for (const std::string& spec : bad) {
    SCOPED_TRACE("mpix_algorithm='" + spec + "'");
    Args a(MPI_COMM_WORLD);
    MPIX_Request req = MPIX_REQUEST_NULL;
    const int code = init_with(a, spec, &req);
    EXPECT_EQ(error_class(code), MPI_ERR_INFO_VALUE) << error_string(code);
    EXPECT_EQ(req, MPIX_REQUEST_NULL);
    if (code == MPI_SUCCESS && req != MPIX_REQUEST_NULL) MPIX_Request_free(&req);
  }
  // A bad value on one rank only: every rank fails, that one with MPI_ERR_INFO_VALUE.
  {
    Args a(MPI_COMM_WORLD);
    MPIX_Request req = MPIX_REQUEST_NULL;
    const int code =
        init_with(a, a.me == P - 1 ? "multipair_waitall:window=0" : "multipair_waitall", &req);
    EXPECT_NE(code, MPI_SUCCESS);
    if (a.me == P - 1) {
      EXPECT_EQ(error_class(code), MPI_ERR_INFO_VALUE) << error_string(code);
    }
    EXPECT_EQ(req, MPIX_REQUEST_NULL);
    if (code == MPI_SUCCESS && req != MPIX_REQUEST_NULL) MPIX_Request_free(&req);
  }
  // Different (valid) algorithms on different ranks: every rank fails.
  if (P > 1) {
    Args a(MPI_COMM_WORLD);
    MPIX_Request req = MPIX_REQUEST_NULL;
    const int code = init_with(a, a.me == 0 ? "pairwise" : "linear", &req);
    EXPECT_NE(code, MPI_SUCCESS) << "ranks selected different algorithms";
    if (code == MPI_SUCCESS && req != MPIX_REQUEST_NULL) MPIX_Request_free(&req);
  }
  Args ok(MPI_COMM_WORLD);
  ok.expect_works();
}

// A bad value in MPIX_ALLTOALLV is reported on stderr and ignored (an unknown name or
// parameter: auto runs) or clamped (a number out of range): the calls run and deliver.
// test/mpi/environment.cmake runs this with the variable set before the process starts (it is
// read once per process); without it the test skips, on every rank alike.
TEST(AlltoallvErrorsEnv, BadEnvironmentIgnored) {
  const char* env = std::getenv("MPIX_ALLTOALLV");
  if (env == nullptr) GTEST_SKIP() << "MPIX_ALLTOALLV is not set (see environment.cmake)";
  SCOPED_TRACE(std::string("MPIX_ALLTOALLV='") + env + "'");
  ScopedErrhandler eh(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
  {
    // The first call that selects: the library says what is wrong with the value.
    Args a(MPI_COMM_WORLD);
    const std::string said = capture_stderr([&] { a.expect_works(); });
    EXPECT_NE(said.find("MPIX_ALLTOALLV"), std::string::npos)
        << "a bad MPIX_ALLTOALLV must be reported on stderr; stderr had '" << said << "'";
  }
  Args a(MPI_COMM_WORLD);
  a.expect_works();
  MPIX_Request req = MPIX_REQUEST_NULL;
  const int code = a.init(MPI_INFO_NULL, &req);
  EXPECT_EQ(code, MPI_SUCCESS) << error_string(code);
  if (code == MPI_SUCCESS) {
    for (int p = 0; p < a.P; ++p) {
      a.sbuf[static_cast<std::size_t>(a.sd[static_cast<std::size_t>(p)])] = a.me * 1000 + p;
      a.sbuf[static_cast<std::size_t>(a.sd[static_cast<std::size_t>(p)] + 1)] = -(a.me * 1000 + p);
    }
    std::fill(a.rbuf.begin(), a.rbuf.end(), -1);
    EXPECT_EQ(MPIX_Start(&req), MPI_SUCCESS);
    EXPECT_EQ(MPIX_Wait(&req, MPI_STATUS_IGNORE), MPI_SUCCESS);
    for (int p = 0; p < a.P; ++p) {
      EXPECT_EQ(a.rbuf[static_cast<std::size_t>(2 * p)], p * 1000 + a.me) << "from " << p;
      EXPECT_EQ(a.rbuf[static_cast<std::size_t>(2 * p + 1)], -(p * 1000 + a.me)) << "from " << p;
    }
    EXPECT_EQ(MPIX_Request_free(&req), MPI_SUCCESS);
  }
}

// Rank `culprit` sends one int more to its right neighbour than that neighbour expects:
// MPI_ERR_TRUNCATE on every rank (the header's promise), for every algorithm, no hang.
TEST(AlltoallvErrorsMismatch, TruncateEverywhere) {
  const int P = comm_size(MPI_COMM_WORLD);
  ScopedErrhandler eh(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
  std::vector<std::string> specs = registered_algorithms("alltoallv");
  specs.emplace_back("");
  for (const std::string& spec : specs) {
    for (int more : {1, -1}) {
      SCOPED_TRACE("algorithm '" + spec + "', rank 0 sends " + (more > 0 ? "more" : "less") +
                   " than rank " + std::to_string(1 % P) + " expects");
      Args a(MPI_COMM_WORLD);
      a.sbuf.resize(a.sbuf.size() + 4);
      if (a.me == 0) a.sc[static_cast<std::size_t>(1 % P)] += more;
      MPIX_Request req = MPIX_REQUEST_NULL;
      int code;
      if (spec.empty()) {
        code = a.init(MPI_INFO_NULL, &req);
      } else {
        code = init_with(a, spec, &req);
      }
      EXPECT_EQ(error_class(code), MPI_ERR_TRUNCATE) << error_string(code);
      EXPECT_EQ(req, MPIX_REQUEST_NULL);
      if (code == MPI_SUCCESS && req != MPIX_REQUEST_NULL) MPIX_Request_free(&req);
    }
  }
  Args ok(MPI_COMM_WORLD);
  ok.expect_works();
}

// MPI_COMM_NULL: MPI_ERR_COMM through MPI_COMM_SELF's error handler.
TEST(AlltoallvErrorsComm, NullCommunicator) {
  ScopedErrhandler eh(MPI_COMM_SELF, MPI_ERRORS_RETURN);
  Args a(MPI_COMM_SELF);
  a.comm = MPI_COMM_NULL;
  EXPECT_EQ(error_class(a.blocking()), MPI_ERR_COMM);
  MPIX_Request req = MPIX_REQUEST_NULL;
  EXPECT_EQ(error_class(a.init(MPI_INFO_NULL, &req)), MPI_ERR_COMM);
  EXPECT_EQ(req, MPIX_REQUEST_NULL);
}

// A null request pointer in init: MPI_ERR_ARG on every rank, no hang.
TEST(AlltoallvErrorsComm, NullRequestPointer) {
  ScopedErrhandler eh(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
  Args a(MPI_COMM_WORLD);
  EXPECT_EQ(error_class(a.init(MPI_INFO_NULL, nullptr)), MPI_ERR_ARG);
  a.expect_works();
}

// The communicator's own error handler is invoked (once) with the error code.
int g_handler_calls = 0;
int g_handler_code = MPI_SUCCESS;
void counting_handler(MPI_Comm*, int* code, ...) {
  ++g_handler_calls;
  g_handler_code = *code;
}

TEST(AlltoallvErrorsComm, UserErrorHandlerCalled) {
  MPI_Errhandler h;
  MPI_Comm_create_errhandler(counting_handler, &h);
  {
    ScopedErrhandler eh(MPI_COMM_WORLD, h);
    g_handler_calls = 0;
    Args a(MPI_COMM_WORLD);
    a.rc[0] = -5;
    const int code = a.blocking();
    EXPECT_EQ(error_class(code), MPI_ERR_COUNT);
    EXPECT_EQ(g_handler_calls, 1);
    EXPECT_EQ(error_class(g_handler_code), MPI_ERR_COUNT);
    g_handler_calls = 0;
    MPIX_Request req = MPIX_REQUEST_NULL;
    const int code2 = a.init(MPI_INFO_NULL, &req);
    EXPECT_EQ(error_class(code2), MPI_ERR_COUNT);
    EXPECT_EQ(g_handler_calls, 1);
  }
  MPI_Errhandler_free(&h);
}

}  // namespace
