// Invalid arguments of the neighborhood all-to-all (MPIX_Neighbor_alltoallv[_init],
// MPIX_Neighbor_alltoall[_init], MPIX_Neighbor_alltoallw[_init]) under MPI_ERRORS_RETURN: the
// error class of each mistake (MPI_Error_class), on every rank and without hanging; a
// communicator without a topology (MPI_ERR_TOPOLOGY), MPI_COMM_NULL (MPI_ERR_COMM), bad
// selections in info (MPI_ERR_INFO_VALUE), a null request pointer (MPI_ERR_ARG), a sender's
// block that does not match the receiver's (MPI_ERR_TRUNCATE on every rank at init, which
// agrees sizes collectively), mistakes on one rank only at init (every rank fails with the
// culprit's class), one bad datatype among alltoallw's blocks (MPI_ERR_TYPE), a bad
// MPIX_NEIGHBOR_ALLTOALLV (NeighborErrorsEnv, run by environment.cmake), and the communicator
// still usable afterwards.
#include <gtest/gtest.h>

#include <cstdlib>
#include <string>
#include <vector>

#include "test_support.hpp"

using namespace mpia_test;

namespace {

// A periodic ring (Cartesian, dims {P}): block 0 goes to / comes from the left neighbor,
// block 1 the right one; at P = 1 and 2 both neighbors are the same rank.
MPI_Comm make_ring() {
  const int P = comm_size(MPI_COMM_WORLD);
  int dims[1] = {P}, periods[1] = {1};
  MPI_Comm ring;
  MPI_Cart_create(MPI_COMM_WORLD, 1, dims, periods, 0, &ring);
  return ring;
}

// A distributed graph: every rank sends to rank (r+1) mod P twice and to itself.
MPI_Comm make_graph() {
  const int P = comm_size(MPI_COMM_WORLD), me = comm_rank(MPI_COMM_WORLD);
  const int dst[3] = {(me + 1) % P, me, (me + 1) % P};
  const int src[3] = {(me + P - 1) % P, me, (me + P - 1) % P};
  MPI_Comm g;
  MPI_Dist_graph_create_adjacent(MPI_COMM_WORLD, 3, src, MPI_UNWEIGHTED, 3, dst, MPI_UNWEIGHTED,
                                 MPI_INFO_NULL, 0, &g);
  return g;
}

class Comms {
 public:
  Comms() : ring(make_ring()), graph(make_graph()) {}
  ~Comms() {
    MPI_Comm_free(&ring);
    MPI_Comm_free(&graph);
  }
  MPI_Comm ring, graph;
};

// Valid arguments for a topology with `deg` neighbors (2 ints per block), to be spoiled.
struct Args {
  Args(MPI_Comm c, int deg) : comm(c), me(comm_rank(MPI_COMM_WORLD)), n(deg) {
    for (int b = 0; b < n; ++b) {
      sc.push_back(2);
      rc.push_back(2);
      sd.push_back(2 * (n - 1 - b));  // reverse order
      rd.push_back(2 * b);
    }
    sbuf.assign(static_cast<std::size_t>(2 * n + 8), me);
    rbuf.assign(static_cast<std::size_t>(2 * n + 8), -1);
  }
  MPI_Comm comm;
  int me, n;
  std::vector<int> sc, sd, rc, rd, sbuf, rbuf;
  bool null_send = false, null_recv = false;
  int scount = 2, rcount = 2;  // neighbor_alltoall
  MPI_Datatype stype = MPI_INT, rtype = MPI_INT;

  const void* send() const { return null_send ? nullptr : sbuf.data(); }
  void* recv() { return null_recv ? nullptr : rbuf.data(); }

  int blocking_v() {
    return MPIX_Neighbor_alltoallv(send(), sc.data(), sd.data(), stype, recv(), rc.data(),
                                   rd.data(), rtype, comm);
  }
  int init_v(MPI_Info info, MPIX_Request* req) {
    return MPIX_Neighbor_alltoallv_init(send(), sc.data(), sd.data(), stype, recv(), rc.data(),
                                        rd.data(), rtype, comm, info, req);
  }
  int blocking_u() {
    return MPIX_Neighbor_alltoall(send(), scount, stype, recv(), rcount, rtype, comm);
  }
  int init_u(MPI_Info info, MPIX_Request* req) {
    return MPIX_Neighbor_alltoall_init(send(), scount, stype, recv(), rcount, rtype, comm, info,
                                       req);
  }
  // The w form: the v form's blocks, displacements in bytes, stype/rtype for every block but
  // the one wsend_bad / wrecv_bad names (a type of its own there: wbad).
  int wsend_bad = -1, wrecv_bad = -1;
  MPI_Datatype wbad = MPI_DATATYPE_NULL;
  struct W {
    std::vector<MPI_Aint> sd, rd;
    std::vector<MPI_Datatype> st, rt;
  };
  W w_arrays() const {
    W w;
    for (int b = 0; b < n; ++b) {
      const std::size_t k = static_cast<std::size_t>(b);
      w.sd.push_back(static_cast<MPI_Aint>(sd[k]) * static_cast<MPI_Aint>(sizeof(int)));
      w.rd.push_back(static_cast<MPI_Aint>(rd[k]) * static_cast<MPI_Aint>(sizeof(int)));
      w.st.push_back(b == wsend_bad ? wbad : stype);
      w.rt.push_back(b == wrecv_bad ? wbad : rtype);
    }
    return w;
  }
  int blocking_w() {
    const W w = w_arrays();
    return MPIX_Neighbor_alltoallw(send(), sc.data(), w.sd.data(), w.st.data(), recv(), rc.data(),
                                   w.rd.data(), w.rt.data(), comm);
  }
  int init_w(MPI_Info info, MPIX_Request* req) {
    const W w = w_arrays();
    return MPIX_Neighbor_alltoallw_init(send(), sc.data(), w.sd.data(), w.st.data(), recv(),
                                        rc.data(), w.rd.data(), w.rt.data(), comm, info, req);
  }
};

enum class Call { BlockingV, InitV, BlockingU, InitU, BlockingW, InitW };
const Call kCalls[] = {Call::BlockingV, Call::InitV,     Call::BlockingU,
                       Call::InitU,     Call::BlockingW, Call::InitW};

const char* call_name(Call c) {
  switch (c) {
    case Call::BlockingV:
      return "MPIX_Neighbor_alltoallv";
    case Call::InitV:
      return "MPIX_Neighbor_alltoallv_init";
    case Call::BlockingU:
      return "MPIX_Neighbor_alltoall";
    case Call::InitU:
      return "MPIX_Neighbor_alltoall_init";
    case Call::BlockingW:
      return "MPIX_Neighbor_alltoallw";
    case Call::InitW:
      return "MPIX_Neighbor_alltoallw_init";
  }
  return "?";
}

// Runs one call; for init, checks that a failure leaves a null request (frees a success).
int do_call(Args& a, Call c, MPI_Info info = MPI_INFO_NULL) {
  MPIX_Request req = reinterpret_cast<MPIX_Request>(0x1);
  int code = MPI_SUCCESS;
  switch (c) {
    case Call::BlockingV:
      return a.blocking_v();
    case Call::BlockingU:
      return a.blocking_u();
    case Call::BlockingW:
      return a.blocking_w();
    case Call::InitV:
      code = a.init_v(info, &req);
      break;
    case Call::InitU:
      code = a.init_u(info, &req);
      break;
    case Call::InitW:
      code = a.init_w(info, &req);
      break;
  }
  if (code != MPI_SUCCESS) {
    EXPECT_EQ(req, MPIX_REQUEST_NULL)
        << call_name(c) << ": a failed init must leave a null request";
  } else if (req != MPIX_REQUEST_NULL) {
    MPIX_Request_free(&req);
  }
  return code;
}

// A correct exchange works on the ring (the communicator is not left broken).
void expect_ring_works(MPI_Comm ring) {
  const int P = comm_size(ring), me = comm_rank(ring);
  const int left = (me + P - 1) % P, right = (me + 1) % P;
  std::vector<int> s = {me * 10 + 0, me * 10 + 1}, r = {-1, -1};
  const int code = MPIX_Neighbor_alltoall(s.data(), 1, MPI_INT, r.data(), 1, MPI_INT, ring);
  EXPECT_EQ(code, MPI_SUCCESS) << "valid call after an error: " << error_string(code);
  // Block 0 from the left neighbor's block 1, block 1 from the right neighbor's block 0.
  EXPECT_EQ(r[0], left * 10 + 1);
  EXPECT_EQ(r[1], right * 10 + 0);
}

using Spoil = void (*)(Args&);
struct Mistake {
  const char* name;
  Spoil spoil;
  int error_class;
};

const Mistake kMistakes[] = {
    {"negative sendcount",
     [](Args& a) {
       a.sc[static_cast<std::size_t>(a.n - 1)] = -2;
       a.scount = -2;
     },
     MPI_ERR_COUNT},
    {"negative recvcount",
     [](Args& a) {
       a.rc[0] = -1;
       a.rcount = -1;
     },
     MPI_ERR_COUNT},
    {"null sendbuf with counts", [](Args& a) { a.null_send = true; }, MPI_ERR_BUFFER},
    {"null recvbuf with counts", [](Args& a) { a.null_recv = true; }, MPI_ERR_BUFFER},
    {"null sendtype", [](Args& a) { a.stype = MPI_DATATYPE_NULL; }, MPI_ERR_TYPE},
    {"null recvtype", [](Args& a) { a.rtype = MPI_DATATYPE_NULL; }, MPI_ERR_TYPE},
};

class NeighborErrors : public ::testing::TestWithParam<Mistake> {};

std::string mistake_name(const ::testing::TestParamInfo<Mistake>& info) {
  std::string s = info.param.name;
  for (char& ch : s)
    if (ch == ' ') ch = '_';
  return s;
}

// The same mistake on every rank: all four calls fail with its class, on a Cartesian ring and
// on a distributed graph.
TEST_P(NeighborErrors, EveryRank) {
  const Mistake& m = GetParam();
  Comms comms;
  const bool slow = sample_stride(72, 1.0) > 1;
  for (MPI_Comm comm : {comms.ring, comms.graph}) {
    if (slow && comm == comms.graph && std::string(m.name).size() % 2 == 0) continue;
    ScopedErrhandler eh(comm, MPI_ERRORS_RETURN);
    for (Call c : kCalls) {
      SCOPED_TRACE(std::string(m.name) + ", " + call_name(c) +
                   (comm == comms.ring ? " on a ring" : " on a graph"));
      Args a(comm, comm == comms.ring ? 2 : 3);
      m.spoil(a);
      const int code = do_call(a, c);
      EXPECT_EQ(error_class(code), m.error_class) << error_string(code);
    }
  }
  ScopedErrhandler eh(comms.ring, MPI_ERRORS_RETURN);
  expect_ring_works(comms.ring);
}

// The mistake on one rank only, at init: init fails on every rank, every rank with the
// mistake's class (an argument error outranks the size mismatches its neighbors see), nobody
// hangs, and the communicator works afterwards.
TEST_P(NeighborErrors, OneRankInit) {
  const Mistake& m = GetParam();
  const int P = comm_size(MPI_COMM_WORLD);
  Comms comms;
  ScopedErrhandler eh(comms.ring, MPI_ERRORS_RETURN);
  const bool slow = sample_stride(24, 1.0) > 1;
  for (Call c : {Call::InitV, Call::InitU, Call::InitW}) {
    for (int culprit : {0, P - 1}) {
      if (slow && culprit == (c == Call::InitV ? 0 : P - 1) && P > 1) continue;
      SCOPED_TRACE(std::string(m.name) + " on rank " + std::to_string(culprit) + ", " +
                   call_name(c));
      Args a(comms.ring, 2);
      if (a.me == culprit) m.spoil(a);
      const int code = do_call(a, c);
      EXPECT_NE(code, MPI_SUCCESS) << "init must fail on every rank";
      EXPECT_EQ(error_class(code), m.error_class)
          << (a.me == culprit ? "the culprit: " : "every rank reports the culprit's class: ")
          << error_string(code);
    }
  }
  expect_ring_works(comms.ring);
}

INSTANTIATE_TEST_SUITE_P(Mistakes, NeighborErrors, ::testing::ValuesIn(kMistakes), mistake_name);

// The w form's own mistake: one block's datatype bad (MPI_DATATYPE_NULL, or a derived type never
// committed), on the send or the receive side, on every rank or (init) on one rank only:
// MPI_ERR_TYPE, on every rank for init, whatever the block's count (here 0 and 2).
TEST(NeighborErrorsW, OneBadBlockType) {
  Comms comms;
  const int P = comm_size(MPI_COMM_WORLD);
  MPI_Datatype uncommitted;
  MPI_Type_contiguous(2, MPI_INT, &uncommitted);
  for (MPI_Comm comm : {comms.ring, comms.graph}) {
    ScopedErrhandler eh(comm, MPI_ERRORS_RETURN);
    const int deg = comm == comms.ring ? 2 : 3;
    for (MPI_Datatype bad : {MPI_DATATYPE_NULL, uncommitted}) {
      for (int side = 0; side < 2; ++side) {
        for (int culprit : {-1, P - 1}) {  // -1: every rank
          for (Call c : {Call::BlockingW, Call::InitW}) {
            if (culprit >= 0 && c == Call::BlockingW) continue;  // blocking checks locally
            SCOPED_TRACE(
                std::string(bad == MPI_DATATYPE_NULL ? "MPI_DATATYPE_NULL" : "uncommitted") +
                (side ? " receive" : " send") + " type, " +
                (culprit < 0 ? "every rank" : "rank " + std::to_string(culprit)) + ", " +
                call_name(c) + (comm == comms.ring ? " on a ring" : " on a graph"));
            Args a(comm, deg);
            if (culprit < 0 || a.me == culprit) {
              a.wbad = bad;
              (side ? a.wrecv_bad : a.wsend_bad) = deg - 1;
              // A count of 0 is no excuse.
              if (bad == MPI_DATATYPE_NULL) (side ? a.rc : a.sc)[std::size_t(deg - 1)] = 0;
            }
            const int code = do_call(a, c);
            EXPECT_EQ(error_class(code), MPI_ERR_TYPE) << error_string(code);
          }
        }
      }
    }
  }
  MPI_Type_free(&uncommitted);
  ScopedErrhandler eh(comms.ring, MPI_ERRORS_RETURN);
  expect_ring_works(comms.ring);
}

// A communicator without a topology: MPI_ERR_TOPOLOGY from all four calls (a duplicate of
// MPI_COMM_WORLD, and MPI_COMM_SELF).
TEST(NeighborErrorsComm, NoTopology) {
  MPI_Comm dup;
  MPI_Comm_dup(MPI_COMM_WORLD, &dup);
  for (MPI_Comm comm : {dup, MPI_COMM_SELF}) {
    ScopedErrhandler eh(comm, MPI_ERRORS_RETURN);
    for (Call c : kCalls) {
      SCOPED_TRACE(std::string(call_name(c)) +
                   (comm == dup ? " on a dup of MPI_COMM_WORLD" : " on MPI_COMM_SELF"));
      Args a(comm, 2);
      const int code = do_call(a, c);
      EXPECT_EQ(error_class(code), MPI_ERR_TOPOLOGY) << error_string(code);
    }
  }
  MPI_Comm_free(&dup);
}

// MPI_COMM_NULL: MPI_ERR_COMM (through MPI_COMM_SELF's error handler).
TEST(NeighborErrorsComm, NullCommunicator) {
  ScopedErrhandler eh(MPI_COMM_SELF, MPI_ERRORS_RETURN);
  for (Call c : kCalls) {
    SCOPED_TRACE(call_name(c));
    Args a(MPI_COMM_NULL, 2);
    const int code = do_call(a, c);
    EXPECT_EQ(error_class(code), MPI_ERR_COMM) << error_string(code);
  }
}

// A null request pointer: MPI_ERR_ARG on every rank, no hang.
TEST(NeighborErrorsComm, NullRequestPointer) {
  Comms comms;
  ScopedErrhandler eh(comms.ring, MPI_ERRORS_RETURN);
  Args a(comms.ring, 2);
  int code = a.init_v(MPI_INFO_NULL, nullptr);
  EXPECT_EQ(error_class(code), MPI_ERR_ARG)
      << "MPIX_Neighbor_alltoallv_init: " << error_string(code);
  code = a.init_u(MPI_INFO_NULL, nullptr);
  EXPECT_EQ(error_class(code), MPI_ERR_ARG)
      << "MPIX_Neighbor_alltoall_init: " << error_string(code);
  expect_ring_works(comms.ring);
}

MPI_Info info_with(const std::string& spec) {
  MPI_Info info;
  MPI_Info_create(&info);
  MPI_Info_set(info, MPIX_INFO_KEY_ALGORITHM, spec.c_str());
  return info;
}

// Bad selections in info: MPI_ERR_INFO_VALUE (both init calls), on every rank.
TEST(NeighborErrorsInfo, BadSelections) {
  Comms comms;
  ScopedErrhandler eh(comms.ring, MPI_ERRORS_RETURN);
  const char* bad[] = {"nosuch",   "pairwise" /* an alltoallv algorithm */,   "tra",
                       ":radix=2", "direct:window=2" /* no such parameter */, "locality:x"};
  for (const char* spec : bad) {
    for (Call c : {Call::InitV, Call::InitU}) {
      SCOPED_TRACE(std::string("mpix_algorithm='") + spec + "', " + call_name(c));
      Args a(comms.ring, 2);
      MPI_Info info = info_with(spec);
      const int code = do_call(a, c, info);
      MPI_Info_free(&info);
      EXPECT_EQ(error_class(code), MPI_ERR_INFO_VALUE) << error_string(code);
    }
  }
  // A bad value on one rank only: every rank fails, that one with MPI_ERR_INFO_VALUE.
  const int P = comm_size(MPI_COMM_WORLD);
  {
    Args a(comms.ring, 2);
    MPI_Info info = info_with(a.me == P - 1 ? "nosuch" : "direct");
    const int code = do_call(a, Call::InitV, info);
    MPI_Info_free(&info);
    EXPECT_NE(code, MPI_SUCCESS) << "a bad selection on rank " << P - 1;
    if (a.me == P - 1) {
      EXPECT_EQ(error_class(code), MPI_ERR_INFO_VALUE) << error_string(code);
    }
  }
  // Different valid algorithms on different ranks: every rank fails.
  if (P > 1) {
    Args a(comms.ring, 2);
    MPI_Info info = info_with(a.me == 0 ? "direct" : "locality");
    const int code = do_call(a, Call::InitV, info);
    MPI_Info_free(&info);
    EXPECT_NE(code, MPI_SUCCESS) << "ranks selected different algorithms";
  }
  expect_ring_works(comms.ring);
}

// A bad value in MPIX_NEIGHBOR_ALLTOALLV is reported on stderr and ignored: the calls run
// (auto). test/mpi/environment.cmake runs this with the variable set before the process starts
// (it is read once per process); without it the test skips, on every rank alike.
TEST(NeighborErrorsEnv, BadEnvironmentIgnored) {
  const char* env = std::getenv("MPIX_NEIGHBOR_ALLTOALLV");
  if (env == nullptr) GTEST_SKIP() << "MPIX_NEIGHBOR_ALLTOALLV is not set (see environment.cmake)";
  SCOPED_TRACE(std::string("MPIX_NEIGHBOR_ALLTOALLV='") + env + "'");
  Comms comms;
  ScopedErrhandler eh(comms.ring, MPI_ERRORS_RETURN);
  // The first call that selects: the library says what is wrong with the value.
  const std::string said = capture_stderr([&] { expect_ring_works(comms.ring); });
  EXPECT_NE(said.find("MPIX_NEIGHBOR_ALLTOALLV"), std::string::npos)
      << "a bad MPIX_NEIGHBOR_ALLTOALLV must be reported on stderr; stderr had '" << said << "'";
  expect_ring_works(comms.ring);
  Args a(comms.ring, 2);
  MPIX_Request req = MPIX_REQUEST_NULL;
  const int code = a.init_v(MPI_INFO_NULL, &req);
  EXPECT_EQ(code, MPI_SUCCESS) << error_string(code);
  if (code == MPI_SUCCESS) {
    char name[MPIX_MAX_ALGORITHM_STRING];
    int len = 0;
    EXPECT_EQ(MPIX_Request_get_algorithm(req, name, &len), MPI_SUCCESS);
    EXPECT_NE(std::string(name), "auto") << "auto reports what it chose";
    EXPECT_EQ(MPIX_Start(&req), MPI_SUCCESS);
    EXPECT_EQ(MPIX_Wait(&req, MPI_STATUS_IGNORE), MPI_SUCCESS);
    EXPECT_EQ(MPIX_Request_free(&req), MPI_SUCCESS);
  }
}

std::vector<std::string> all_specs() {
  std::vector<std::string> specs = registered_algorithms("neighbor_alltoallv");
  specs.emplace_back("");
  return specs;
}

// Rank 0 sends one int more (or less) in its block 1 than its right neighbor expects in its
// block 0: MPI_ERR_TRUNCATE on every rank at init, for every algorithm, no hang. At P = 1 and
// 2 the right neighbor is also the left one (or rank 0 itself): the blocks still pair by
// direction. Also on the graph (rank 0's second edge to rank 1), and with
// MPIX_Neighbor_alltoall_init (rank 0's sendcount differs from everybody's recvcount).
TEST(NeighborErrorsMismatch, TruncateEverywhere) {
  Comms comms;
  const int me = comm_rank(MPI_COMM_WORLD);
  const std::vector<std::string> specs = all_specs();
  const int stride = sample_stride(static_cast<long>(specs.size()) * 6, 2.0);
  for (std::size_t a = 0; a < specs.size(); ++a) {
    const std::string& spec = specs[a];
    for (int more : {1, -1}) {
      // A slow MPI: every algorithm once, with one of the two mistakes.
      if (stride > 1 && (static_cast<int>(a) + (more > 0 ? 0 : 1)) % 2 == 1) continue;
      const std::string what = "algorithm '" + spec + "', rank 0 sends " +
                               (more > 0 ? "more" : "less") + " than expected";
      {
        SCOPED_TRACE(what + " (ring, alltoallv)");
        ScopedErrhandler eh(comms.ring, MPI_ERRORS_RETURN);
        Args a(comms.ring, 2);
        if (me == 0) a.sc[1] += more;
        MPI_Info info = spec.empty() ? MPI_INFO_NULL : info_with(spec);
        const int code = do_call(a, Call::InitV, info);
        if (info != MPI_INFO_NULL) MPI_Info_free(&info);
        EXPECT_EQ(error_class(code), MPI_ERR_TRUNCATE) << error_string(code);
      }
      for (Call c : {Call::InitV, Call::InitW}) {
        SCOPED_TRACE(what + " (graph, " + call_name(c) + ")");
        ScopedErrhandler eh(comms.graph, MPI_ERRORS_RETURN);
        Args a(comms.graph, 3);
        if (me == 0) a.sc[2] += more;
        MPI_Info info = spec.empty() ? MPI_INFO_NULL : info_with(spec);
        const int code = do_call(a, c, info);
        if (info != MPI_INFO_NULL) MPI_Info_free(&info);
        EXPECT_EQ(error_class(code), MPI_ERR_TRUNCATE) << error_string(code);
      }
      {
        SCOPED_TRACE(what + " (ring, alltoall)");
        ScopedErrhandler eh(comms.ring, MPI_ERRORS_RETURN);
        Args a(comms.ring, 2);
        if (me == 0) a.scount += more;
        MPI_Info info = spec.empty() ? MPI_INFO_NULL : info_with(spec);
        const int code = do_call(a, Call::InitU, info);
        if (info != MPI_INFO_NULL) MPI_Info_free(&info);
        EXPECT_EQ(error_class(code), MPI_ERR_TRUNCATE) << error_string(code);
      }
    }
  }
  ScopedErrhandler eh(comms.ring, MPI_ERRORS_RETURN);
  expect_ring_works(comms.ring);
}

// Swapped directions on a periodic ring of 1 or 2: rank 0 sends 3 ints to the left and 1 to
// the right, and every rank expects 3 from the left. Each pair matches in total bytes but
// not block by block, which is what matters: MPI_ERR_TRUNCATE everywhere.
TEST(NeighborErrorsMismatch, DirectionsNotInterchangeable) {
  Comms comms;
  const int P = comm_size(MPI_COMM_WORLD);
  if (P > 2) GTEST_SKIP() << "only periodic rings of 1 and 2 have one neighbor both ways";
  ScopedErrhandler eh(comms.ring, MPI_ERRORS_RETURN);
  for (const std::string& spec : all_specs()) {
    SCOPED_TRACE("algorithm '" + spec + "'");
    Args a(comms.ring, 2);
    a.sc = {3, 1};  // sent left, sent right
    a.sd = {0, 3};
    a.rc = {3, 1};  // from the left (= what it sent right: 1), from the right (its left: 3)
    a.rd = {0, 3};
    MPI_Info info = spec.empty() ? MPI_INFO_NULL : info_with(spec);
    const int code = do_call(a, Call::InitV, info);
    if (info != MPI_INFO_NULL) MPI_Info_free(&info);
    EXPECT_EQ(error_class(code), MPI_ERR_TRUNCATE) << error_string(code);
  }
  expect_ring_works(comms.ring);
}

// The communicator's error handler is invoked (once) with the error code.
int g_handler_calls = 0;
int g_handler_code = MPI_SUCCESS;
void counting_handler(MPI_Comm*, int* code, ...) {
  ++g_handler_calls;
  g_handler_code = *code;
}

TEST(NeighborErrorsComm, UserErrorHandlerCalled) {
  Comms comms;
  MPI_Errhandler h;
  MPI_Comm_create_errhandler(counting_handler, &h);
  {
    ScopedErrhandler eh(comms.ring, h);
    for (Call c : kCalls) {
      SCOPED_TRACE(call_name(c));
      g_handler_calls = 0;
      Args a(comms.ring, 2);
      a.rc[0] = -5;
      a.rcount = -5;
      const int code = do_call(a, c);
      EXPECT_EQ(error_class(code), MPI_ERR_COUNT);
      EXPECT_EQ(g_handler_calls, 1);
      EXPECT_EQ(error_class(g_handler_code), MPI_ERR_COUNT);
    }
  }
  MPI_Errhandler_free(&h);
}

}  // namespace
