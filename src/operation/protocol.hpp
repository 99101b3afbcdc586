// The init protocol: what ranks agree on before they act on anything one of them decided
// alone. Persistent init (all three collectives), MPIX_Comm_set_algorithm and, with
// MPIX_DEBUG, every blocking call run one agree(): a single nonblocking allreduce on the private
// communicator, completed while driving the running operations, that carries
//   - this rank's argument error, if any: every rank then fails with the same error class (an
//     argument error's before one found by comparing with peers; then the largest), none is
//     left waiting in a later step;
//   - a stable hash of the algorithm and parameters each rank chose (MPI_ERR_ARG if they differ);
//   - a value that must be equal everywhere, e.g. the block size (its own class if not);
//   - up to three values reduced by MPI_MAX (alltoallv statistics, the largest neighbor edge);
//   - the window of tags each rank's live requests still hold, from which the first free one
//     is taken (a second allreduce only when the window is full).
// The settings of each rank (environment) are agreed once per communicator, at its first call
// (comm_state.cpp, agree_settings).
#pragma once

#include "collective/registry.hpp"
#include "operation/comm_state.hpp"
#include "util/error.hpp"

#include <cstdint>
#include <memory>
#include <string>

namespace mpia {

// Statistics agreed as maxima over ranks (alltoallv: largest block, bytes sent, messages, other
// nodes reached; neighbor: its own three).
constexpr int kMaxima = 4;

struct Proposal {
  std::unique_ptr<Error> error;  // this rank's local error, if any
  // The error was found by comparing with peers (a size a peer sends that this rank does not
  // expect), so it may be the consequence of another rank's bad argument: such errors give way
  // to argument errors, so that every rank reports the culprit's class.
  bool derived = false;
  std::string choice;                 // must be the same on every rank
  std::int64_t same = 0;              // must be the same on every rank ...
  int same_class = MPI_ERR_TRUNCATE;  // ... else every rank fails with this class
  const char* same_what = "mpi-advance: ranks disagree on the block size (type signatures differ)";
  std::int64_t maxima[kMaxima] = {};
  bool tag = false;  // take a tag for a new live request
};

struct Agreement {
  std::int64_t maxima[kMaxima] = {};
  int tag = 0;
};

// Collective over st's communicator; throws the agreed error.
Agreement agree(CommState& st, const Proposal& p);

// Agrees on the settings' fingerprint; records a disagreement in st (not thrown: every later
// call on the communicator reports it, on every rank).
void agree_settings(CommState& st);
// Its two halves, for an attach that must not wait (attach.hpp): the allreduce of the settings'
// fingerprint posted on st's private communicator, and its result taken.
void post_settings(const CommState& st, std::int64_t v[2], MPI_Request* r);
void apply_settings(CommState& st, const std::int64_t v[2]);

// Local checks of a persistent init whose errors go into the agreement instead of being thrown.
template <class F>
void checked(Proposal& p, F&& checks) {
  try {
    checks();
  } catch (const Error& e) {
    p.error = std::make_unique<Error>(e);
  }
}

// MPIX_DEBUG=1: a blocking call agrees like a persistent init (its argument errors, algorithm
// and block size), on every call.
void debug_agree(CommState& st, std::unique_ptr<Error> local, const Selection* sel,
                 std::int64_t same);

// Frees the protocol's MPI objects (at MPI_Finalize).
void free_protocol();

}  // namespace mpia
