// MPIX_Alltoallw in all six forms (blocking, nonblocking, persistent; int and _c), through every
// alltoallv algorithm and "system": a datatype per block on both sides (contiguous ints, ints
// with holes after them, ints at a negative offset below a negative lower bound), counts that
// include zeros, byte displacements in a scrambled order, MPI_IN_PLACE, restarts with changed
// data. Every byte of every receive buffer is compared with a reference computed here,
// holes and gaps included (they must keep their fill), on every rank; a failure on any rank fails
// every rank (mpi_gtest_main).
#include "mpi_advance.h"
#include "test_support.hpp"

#include <gtest/gtest.h>
#include <mpi.h>

#include <cstdint>
#include <algorithm>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

namespace {

using mpia_test::comm_rank;
using mpia_test::comm_size;
using mpia_test::registered_algorithms;

constexpr unsigned char kFill = 0xEE;

// Three layouts of a sequence of ints: element k of a block at byte displ + k * stride + at.
struct Kind {
  MPI_Datatype type;
  MPI_Aint stride, at;
};

class Kinds {
 public:
  Kinds() {
    k_[0] = {MPI_INT, 4, 0};
    MPI_Datatype t;
    MPI_Type_create_resized(MPI_INT, 0, 8, &t);  // an int, then a 4-byte hole
    MPI_Type_commit(&t);
    k_[1] = {t, 8, 0};
    // An int at -8, lower bound -8, extent 12: data below the block's displacement.
    const int one = 1;
    const MPI_Aint disp = -8;
    MPI_Datatype s, base = MPI_INT;
    MPI_Type_create_struct(1, &one, &disp, &base, &s);
    MPI_Type_create_resized(s, -8, 12, &t);
    MPI_Type_free(&s);
    MPI_Type_commit(&t);
    k_[2] = {t, 12, -8};
  }
  ~Kinds() {
    MPI_Type_free(&k_[1].type);
    MPI_Type_free(&k_[2].type);
  }
  const Kind& operator[](int i) const { return k_[i % 3]; }

 private:
  Kind k_[3];
};

std::int32_t value(int src, int dst, int k, int round) {
  return std::int32_t(src * 1000003 + dst * 1009 + k * 7 + round * 131 + 1);
}

// One side's blocks: counts, byte displacements (blocks laid out in reverse rank order, a gap
// between them, the first at 16 so that kind 2's data at -8 stays inside), types.
struct Side {
  std::vector<int> counts, displs;
  std::vector<MPI_Aint> adispls;
  std::vector<MPI_Count> ccounts;
  std::vector<MPI_Datatype> types;
  std::vector<int> kind;
  std::vector<unsigned char> buf;
  Side(const Kinds& kinds, int P, int me, bool send, int round, bool symmetric) {
    MPI_Aint at = 16;
    counts.resize(P), displs.resize(P), types.resize(P), kind.resize(P);
    for (int j = P - 1; j >= 0; --j) {
      const int src = send ? me : j, dst = send ? j : me;
      counts[j] = symmetric ? (src + dst + round) % 4 : (src + 2 * dst + round) % 4;
      kind[j] = send ? me + j + round : j + 2 * me + 1;
      types[j] = kinds[kind[j]].type;
      displs[j] = int(at);
      // Then a gap of 12 or 16 bytes: kind 2's data starts 8 bytes below its displacement.
      at += counts[j] * kinds[kind[j]].stride + 8 + 4 * ((j % 2) + 1);
    }
    adispls.assign(displs.begin(), displs.end());
    ccounts.assign(counts.begin(), counts.end());
    buf.assign(std::size_t(at + 16), kFill);
  }
  std::int32_t* element(const Kinds& kinds, int j, int k) {
    const Kind& t = kinds[kind[j]];
    return reinterpret_cast<std::int32_t*>(buf.data() + displs[j] + k * t.stride + t.at);
  }
  // What this side holds when block j carries (src, dst)'s data (send: me -> j, recv: j -> me).
  void fill(const Kinds& kinds, int me, bool send, int round) {
    for (int j = 0; j < int(counts.size()); ++j)
      for (int k = 0; k < counts[j]; ++k) {
        const std::int32_t v = send ? value(me, j, k, round) : value(j, me, k, round);
        std::memcpy(element(kinds, j, k), &v, 4);
      }
  }
};

// Loads round `round`'s data: send's blocks or, in place, recv's (block j goes to j from where
// block j is received, with the receive layout). Returns what recv must hold after the call.
Side load(const Kinds& kinds, Side& send, Side& recv, int me, int round, bool in_place) {
  Side expect = recv;
  expect.fill(kinds, me, false, round);
  if (!in_place) {
    send.fill(kinds, me, true, round);
    return expect;
  }
  for (int j = 0; j < int(recv.counts.size()); ++j)
    for (int k = 0; k < recv.counts[j]; ++k) {
      const std::int32_t v = value(me, j, k, round);
      std::memcpy(recv.element(kinds, j, k), &v, 4);
    }
  return expect;
}

enum class Form { Blocking, BlockingC, Nonblocking, NonblockingC, Persistent, PersistentC };
const char* form_name(Form f) {
  static const char* names[] = {"blocking",      "blocking_c", "nonblocking",
                                "nonblocking_c", "persistent", "persistent_c"};
  return names[int(f)];
}

// Runs `rounds` calls of form f (a persistent request: one init, `rounds` starts, the send data
// changed between them) and checks every byte after each. Returns the failures on this rank.
int run(MPI_Comm comm, const std::string& algorithm, Form f, bool in_place, int rounds) {
  const Kinds kinds;
  const int P = comm_size(comm), me = comm_rank(comm);
  int failures = 0;
  Side send(kinds, P, me, true, 0, in_place), recv(kinds, P, me, false, 0, in_place);
  MPI_Info info;
  MPI_Info_create(&info);
  MPI_Info_set(info, MPIX_INFO_KEY_ALGORITHM, algorithm.c_str());
  MPIX_Request req = MPIX_REQUEST_NULL;
  const void* sb = in_place ? MPI_IN_PLACE : send.buf.data();
  const bool persistent = f == Form::Persistent || f == Form::PersistentC;
  if (f == Form::Persistent) {
    EXPECT_EQ(MPIX_Alltoallw_init(sb, send.counts.data(), send.displs.data(), send.types.data(),
                                  recv.buf.data(), recv.counts.data(), recv.displs.data(),
                                  recv.types.data(), comm, info, &req),
              MPI_SUCCESS);
  }
  if (f == Form::PersistentC) {
    EXPECT_EQ(MPIX_Alltoallw_init_c(sb, send.ccounts.data(), send.adispls.data(), send.types.data(),
                                    recv.buf.data(), recv.ccounts.data(), recv.adispls.data(),
                                    recv.types.data(), comm, info, &req),
              MPI_SUCCESS);
  }
  MPI_Info_free(&info);
  for (int round = 0; round < rounds; ++round) {
    // The data of this round (a persistent request keeps its counts: round 0's layout).
    const int layout_round = persistent ? 0 : round;
    Side s(kinds, P, me, true, layout_round, in_place),
        r(kinds, P, me, false, layout_round, in_place);
    if (!persistent) send = std::move(s), recv = std::move(r);
    std::fill(send.buf.begin(), send.buf.end(), kFill);
    std::fill(recv.buf.begin(), recv.buf.end(), kFill);
    const Side expect = load(kinds, send, recv, me, round, in_place);
    sb = in_place ? MPI_IN_PLACE : send.buf.data();
    int rc = MPI_SUCCESS;
    switch (f) {
      case Form::Blocking:
        rc = MPIX_Alltoallw(sb, send.counts.data(), send.displs.data(), send.types.data(),
                            recv.buf.data(), recv.counts.data(), recv.displs.data(),
                            recv.types.data(), comm);
        break;
      case Form::BlockingC:
        rc = MPIX_Alltoallw_c(sb, send.ccounts.data(), send.adispls.data(), send.types.data(),
                              recv.buf.data(), recv.ccounts.data(), recv.adispls.data(),
                              recv.types.data(), comm);
        break;
      case Form::Nonblocking:
        rc = MPIX_Ialltoallw(sb, send.counts.data(), send.displs.data(), send.types.data(),
                             recv.buf.data(), recv.counts.data(), recv.displs.data(),
                             recv.types.data(), comm, &req);
        if (rc == MPI_SUCCESS) rc = MPIX_Wait(&req, MPI_STATUS_IGNORE);
        break;
      case Form::NonblockingC:
        rc = MPIX_Ialltoallw_c(sb, send.ccounts.data(), send.adispls.data(), send.types.data(),
                               recv.buf.data(), recv.ccounts.data(), recv.adispls.data(),
                               recv.types.data(), comm, &req);
        if (rc == MPI_SUCCESS) rc = MPIX_Wait(&req, MPI_STATUS_IGNORE);
        break;
      default:
        rc = MPIX_Start(&req);
        if (rc == MPI_SUCCESS) rc = MPIX_Wait(&req, MPI_STATUS_IGNORE);
    }
    EXPECT_EQ(rc, MPI_SUCCESS) << algorithm << " " << form_name(f) << " round " << round;
    if (rc != MPI_SUCCESS) ++failures;
    for (std::size_t b = 0; b < recv.buf.size(); ++b)
      if (recv.buf[b] != expect.buf[b]) {
        ADD_FAILURE() << algorithm << " " << form_name(f) << (in_place ? " in place" : "")
                      << " round " << round << ": rank " << me << " byte " << b << " is "
                      << int(recv.buf[b]) << ", expected " << int(expect.buf[b]);
        ++failures;
        break;
      }
  }
  if (persistent) {
    EXPECT_EQ(MPIX_Request_free(&req), MPI_SUCCESS);
  }
  return failures;
}

std::vector<std::string> algorithms() {
  std::vector<std::string> names = registered_algorithms("alltoallv");
  return names;
}

TEST(Alltoallw, EveryAlgorithmEveryForm) {
  MPI_Comm comm;
  MPI_Comm_dup(MPI_COMM_WORLD, &comm);
  for (const std::string& a : algorithms()) {
    // The blocking and nonblocking forms run the communicator's choice.
    ASSERT_EQ(mpia_test::set_comm_algorithm(comm, "alltoallv", a.c_str()), MPI_SUCCESS) << a;
    for (Form f : {Form::Blocking, Form::BlockingC, Form::Nonblocking, Form::NonblockingC,
                   Form::Persistent, Form::PersistentC})
      for (bool in_place : {false, true}) run(comm, a, f, in_place, 3);
  }
  MPI_Comm_free(&comm);
}

// MPIX_Ialltoallw as the library's first call on a communicator: the call waits for the
// communicator's attach (made without waiting), and the user frees every derived per-block type
// right after it returned, before the attach is done, as MPI allows; in place too. Every byte
// checked, on a new communicator each time.
TEST(Alltoallw, FirstCallNonblockingTypesFreedAtOnce) {
  const Kinds layout;  // the same strides and offsets as the freed types'
  int failures = 0;
  for (int round = 0; round < 3; ++round)
    for (bool in_place : {false, true}) {
      MPI_Comm comm;
      MPI_Comm_dup(MPI_COMM_WORLD, &comm);
      const int P = comm_size(comm), me = comm_rank(comm);
      auto freed = std::make_unique<Kinds>();
      Side send(*freed, P, me, true, round, in_place), recv(*freed, P, me, false, round, in_place);
      const Side expect = load(layout, send, recv, me, round, in_place);
      MPIX_Request req = MPIX_REQUEST_NULL;
      int rc =
          MPIX_Ialltoallw(in_place ? MPI_IN_PLACE : send.buf.data(), send.counts.data(),
                          send.displs.data(), send.types.data(), recv.buf.data(),
                          recv.counts.data(), recv.displs.data(), recv.types.data(), comm, &req);
      freed.reset();  // MPI_Type_free of the derived types
      if (rc == MPI_SUCCESS) rc = MPIX_Wait(&req, MPI_STATUS_IGNORE);
      EXPECT_EQ(rc, MPI_SUCCESS) << "round " << round << (in_place ? " in place" : "");
      if (rc != MPI_SUCCESS || recv.buf != expect.buf) {
        ADD_FAILURE() << "round " << round << (in_place ? " in place" : "") << ": rank " << me
                      << " received wrong bytes";
        ++failures;
      }
      MPI_Comm_free(&comm);
    }
  EXPECT_EQ(failures, 0);
}

// A zero-count block may name any committed type, and every array entry of a zero-size
// communicator side is still checked: MPI_DATATYPE_NULL is MPI_ERR_TYPE on every rank.
TEST(Alltoallw, NullTypeIsAnError) {
  MPI_Comm comm;
  MPI_Comm_dup(MPI_COMM_WORLD, &comm);
  MPI_Comm_set_errhandler(comm, MPI_ERRORS_RETURN);
  const int P = comm_size(comm);
  std::vector<int> zero(P, 0);
  std::vector<MPI_Datatype> types(P, MPI_INT), bad(P, MPI_INT);
  bad[P - 1] = MPI_DATATYPE_NULL;
  int x = 0, y = 0;
  const int rc = MPIX_Alltoallw(&x, zero.data(), zero.data(), bad.data(), &y, zero.data(),
                                zero.data(), types.data(), comm);
  int cls = MPI_SUCCESS;
  MPI_Error_class(rc, &cls);
  EXPECT_EQ(cls, MPI_ERR_TYPE);
  MPI_Comm_free(&comm);
}

}  // namespace
