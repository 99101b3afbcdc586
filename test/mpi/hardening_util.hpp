// Small helpers shared by the hardening tests (issue 9): int all-to-all buffers with guards and
// values from an independent formula, error-class agreement across ranks, counting error
// handlers. Header-only; every program includes it once.
#pragma once

#include <gtest/gtest.h>
#include <mpi.h>

#include "mpi_advance.h"
#include "test_support.hpp"

#include <cstdint>
#include <cstdlib>
#include <string>
#include <vector>

namespace hardening {

constexpr int kPoison = -7;
constexpr int kGuard = -99;
constexpr int kGuards = 16;  // guard elements after every receive buffer

// The value rank src sends to rank dst, element j, in the run with `salt` (never the poison).
inline int value(int src, int dst, int j, int salt) {
  std::uint64_t x = (std::uint64_t(std::uint32_t(salt)) << 40) ^
                    (std::uint64_t(std::uint32_t(src)) << 24) ^
                    (std::uint64_t(std::uint32_t(dst)) << 8) ^ std::uint64_t(std::uint32_t(j));
  x += 0x9E3779B97F4A7C15ull;
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
  x ^= x >> 31;
  int v = int(std::uint32_t(x) & 0x7fffffff);
  return v;  // >= 0: never the poison or the guard
}

// An all-to-all of `count` ints per block over `nprocs` ranks: send blocks in rank order, a
// receive buffer with guard elements after it.
struct IntExchange {
  int me = 0, nprocs = 1, count = 0;
  std::vector<int> send, recv;

  IntExchange() = default;
  IntExchange(MPI_Comm comm, int count_) : count(count_) {
    MPI_Comm_rank(comm, &me);
    MPI_Comm_size(comm, &nprocs);
    send.assign(std::size_t(nprocs) * std::size_t(count), 0);
    recv.assign(std::size_t(nprocs) * std::size_t(count) + kGuards, kGuard);
  }
  void fill(int salt) {
    for (int d = 0; d < nprocs; ++d)
      for (int j = 0; j < count; ++j) send[std::size_t(d * count + j)] = value(me, d, j, salt);
    for (std::size_t i = 0; i < recv.size(); ++i)
      recv[i] = i < std::size_t(nprocs) * std::size_t(count) ? kPoison : kGuard;
  }
  // Counts wrong elements (records a few gtest failures naming `what`).
  long check(int salt, const std::string& what) const {
    long bad = 0;
    for (int s = 0; s < nprocs; ++s)
      for (int j = 0; j < count; ++j) {
        const int got = recv[std::size_t(s * count + j)];
        const int want = value(s, me, j, salt);
        if (got != want) {
          if (bad < 3)
            ADD_FAILURE() << what << ": rank " << me << " block from " << s << " element " << j
                          << ": got " << got << ", expected " << want
                          << (got == kPoison ? " (never written)" : "");
          ++bad;
        }
      }
    bad += check_guards(what);
    return bad;
  }
  long check_guards(const std::string& what) const {
    long bad = 0;
    for (std::size_t i = std::size_t(nprocs) * std::size_t(count); i < recv.size(); ++i)
      if (recv[i] != kGuard) {
        if (bad < 3)
          ADD_FAILURE() << what << ": rank " << me << " wrote past the receive buffer (guard "
                        << i - std::size_t(nprocs) * std::size_t(count) << ")";
        ++bad;
      }
    return bad;
  }
};

// MPI_Error_class, or MPI_SUCCESS for MPI_SUCCESS (unlike mpia_test::error_class).
// Open MPI 4.1's MPI_Alltoall(v) on counts that disagree is itself unsafe: its request wait
// returns at the first failed request and the collective frees the others while they are still
// posted, so a later message lands in freed memory (seen under ASan in the hardening test). Our
// "system" algorithm is that call: the tests do not feed it mismatched counts on Open MPI.
#ifdef OPEN_MPI
constexpr bool kSystemUnsafeOnMismatch = true;
#else
constexpr bool kSystemUnsafeOnMismatch = false;
#endif

inline int cls(int code) {
  return code == MPI_SUCCESS ? MPI_SUCCESS : mpia_test::error_class(code);
}

inline std::string class_name(int c) {
  switch (c) {
    case MPI_SUCCESS:
      return "MPI_SUCCESS";
    case MPI_ERR_ARG:
      return "MPI_ERR_ARG";
    case MPI_ERR_TYPE:
      return "MPI_ERR_TYPE";
    case MPI_ERR_TRUNCATE:
      return "MPI_ERR_TRUNCATE";
    case MPI_ERR_REQUEST:
      return "MPI_ERR_REQUEST";
    case MPI_ERR_OTHER:
      return "MPI_ERR_OTHER";
    case MPI_ERR_IN_STATUS:
      return "MPI_ERR_IN_STATUS";
    case MPI_ERR_COUNT:
      return "MPI_ERR_COUNT";
    case MPI_ERR_COMM:
      return "MPI_ERR_COMM";
    case MPI_ERR_INTERN:
      return "MPI_ERR_INTERN";
    case MPI_ERR_TOPOLOGY:
      return "MPI_ERR_TOPOLOGY";
    default:
      return "class " + std::to_string(c);
  }
}

// The error classes of every rank of comm (gathered on every rank).
inline std::vector<int> all_classes(MPI_Comm comm, int code) {
  int n = 1;
  MPI_Comm_size(comm, &n);
  std::vector<int> all(std::size_t(n), 0);
  const int mine = cls(code);
  MPI_Allgather(&mine, 1, MPI_INT, all.data(), 1, MPI_INT, comm);
  return all;
}

// Expects class `want` on every rank of comm (checked on every rank, failures name ranks).
inline void expect_class_everywhere(MPI_Comm comm, int code, int want, const std::string& what) {
  const std::vector<int> all = all_classes(comm, code);
  for (std::size_t r = 0; r < all.size(); ++r)
    EXPECT_EQ(all[r], want) << what << ": rank " << r << " returned " << class_name(all[r])
                            << ", expected " << class_name(want) << " on every rank"
                            << (int(r) == mpia_test::comm_rank(comm)
                                    ? " (" + mpia_test::error_string(code) + ")"
                                    : std::string());
}

inline bool all_true(MPI_Comm comm, bool local) {
  int l = local ? 1 : 0, g = 0;
  MPI_Allreduce(&l, &g, 1, MPI_INT, MPI_MIN, comm);
  return g != 0;
}

inline MPI_Info algorithm_info(const std::string& spec) {
  if (spec.empty()) return MPI_INFO_NULL;
  MPI_Info info;
  MPI_Info_create(&info);
  MPI_Info_set(info, MPIX_INFO_KEY_ALGORITHM, spec.c_str());
  return info;
}

inline std::string reported_algorithm(MPIX_Request req) {
  char name[MPIX_MAX_ALGORITHM_STRING] = {};
  int len = 0;
  if (MPIX_Request_get_algorithm(req, name, &len) != MPI_SUCCESS) return "(error)";
  return std::string(name, std::size_t(len));
}

// An error handler that records the codes it is called with, per communicator kind.
struct HandlerLog {
  std::vector<int> codes;
};
inline std::vector<HandlerLog>& handler_logs() {
  static std::vector<HandlerLog> logs(4);
  return logs;
}
template <int Slot>
void record_handler(MPI_Comm*, int* code, ...) {
  handler_logs()[Slot].codes.push_back(*code);
}
// Installs a recording handler on comm (slot 0..3); restores the previous one when destroyed.
class RecordingHandler {
 public:
  template <int Slot>
  static RecordingHandler make(MPI_Comm comm) {
    RecordingHandler h;
    h.comm_ = comm;
    h.slot_ = Slot;
    handler_logs()[Slot].codes.clear();
    MPI_Comm_get_errhandler(comm, &h.old_);
    MPI_Comm_create_errhandler(&record_handler<Slot>, &h.mine_);
    MPI_Comm_set_errhandler(comm, h.mine_);
    return h;
  }
  RecordingHandler(RecordingHandler&& o) noexcept
      : comm_(o.comm_), slot_(o.slot_), old_(o.old_), mine_(o.mine_) {
    o.comm_ = MPI_COMM_NULL;
  }
  RecordingHandler& operator=(RecordingHandler&&) = delete;
  ~RecordingHandler() {
    if (comm_ == MPI_COMM_NULL) return;
    MPI_Comm_set_errhandler(comm_, old_);
    MPI_Errhandler_free(&old_);
    MPI_Errhandler_free(&mine_);
  }
  const std::vector<int>& codes() const { return handler_logs()[slot_].codes; }
  void clear() { handler_logs()[slot_].codes.clear(); }

 private:
  RecordingHandler() = default;
  MPI_Comm comm_ = MPI_COMM_NULL;
  int slot_ = 0;
  MPI_Errhandler old_ = MPI_ERRHANDLER_NULL, mine_ = MPI_ERRHANDLER_NULL;
};

// A duplicate of MPI_COMM_WORLD with MPI_ERRORS_RETURN, freed at scope exit.
class DupComm {
 public:
  explicit DupComm(MPI_Comm parent = MPI_COMM_WORLD) {
    MPI_Comm_dup(parent, &comm_);
    MPI_Comm_set_errhandler(comm_, MPI_ERRORS_RETURN);
  }
  ~DupComm() {
    if (comm_ != MPI_COMM_NULL) MPI_Comm_free(&comm_);
  }
  DupComm(const DupComm&) = delete;
  DupComm& operator=(const DupComm&) = delete;
  MPI_Comm get() const { return comm_; }

 private:
  MPI_Comm comm_ = MPI_COMM_NULL;
};

// A correct blocking MPIX_Alltoall of `count` ints on comm, checked on every rank.
inline void expect_blocking_works(MPI_Comm comm, int count, int salt, const std::string& what) {
  IntExchange x(comm, count);
  x.fill(salt);
  const int rc = MPIX_Alltoall(x.send.data(), count, MPI_INT, x.recv.data(), count, MPI_INT, comm);
  EXPECT_EQ(rc, MPI_SUCCESS) << what << ": " << mpia_test::error_string(rc);
  x.check(salt, what);
}

}  // namespace hardening
