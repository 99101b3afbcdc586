// The engine: the only code that issues point-to-point MPI calls. It lowers a schedule once
// (persistent send/receive requests; pack/unpack steps or one derived datatype per transfer;
// committed at lowering time) and then executes it any number of times under the schedule's
// progress policy. Start allocates nothing and creates nothing, except that a send of at most
// kIsendBytes is posted with MPI_Isend at each start rather than as a persistent request:
// Open MPI's ob1 sends a small message inline from MPI_Isend, but MPI_Start of a persistent
// send takes its general path (Start+Wait at P = 2, 8 B blocks, back to back: 0.95x Open
// MPI's own persistent alltoall this way, 1.88x with persistent sends;
// docs/results/2026-11-23-persistent-call-cost-p2.md).
// The message, its buffer and its matching are the same either way.
//
// Errors while executing (a truncated receive, a failed pack) never stop an execution: the
// first is recorded in the StickyError the schedule was bound to, and the schedule runs to its
// end, so that every request it posted completes (none is ever freed while posted) and no
// peer waits for a message this rank gave up on -- what MPICH's scheduled collectives do. The
// request then reports the error from its own Wait/Test, with its real class.
#pragma once

#include "schedule/schedule.hpp"
#include "util/error.hpp"
#include "util/platform.hpp"

#include <mpi.h>

#include <cstdint>
#include <memory>
#include <vector>

namespace mpia {

// Sends of at most this many bytes are posted with MPI_Isend at each start (see above; an MPI
// library's platform, util/platform.hpp).
using platform::kIsendBytes;

// The element type of some of a buffer's blocks.
struct BlockType {
  MPI_Datatype type = MPI_DATATYPE_NULL;  // not owned by the engine
  bool dense = false;  // one element's packed bytes are its memory, starting at true_lb
  MPI_Aint true_lb = 0;
};

// A user buffer as the engine sees it: block b is count[b] elements of type(b) at base +
// displacement[b] bytes. A block of a type that is not dense has an int count (a larger one is
// bound as one element of a type made for it: count_type); a dense block moves as bytes.
struct BlockBuffer {
  char* base = nullptr;
  std::size_t n = 0;  // blocks
  std::vector<BlockType> types;
  std::vector<int> type_of;  // index into types per block; empty: every block is types[0]
  // Block b: count[b] x its type at base + displacement[b]; both empty when the blocks are
  // uniform (an alltoall's): then uniform_count x types[0] at b x stride. An alltoall's plan
  // at P ranks keeps two of these: 32 bytes a peer that the lab's P = 8192 could not afford.
  std::vector<MPI_Aint> displacement;
  std::vector<std::int64_t> count;
  MPI_Aint stride = 0;
  std::int64_t uniform_count = 0;
  const BlockType& type(std::size_t b) const {
    return type_of.empty() ? types[0] : types[std::size_t(type_of[b])];
  }
  MPI_Aint displacement_of(std::size_t b) const {
    return displacement.empty() ? MPI_Aint(b) * stride : displacement[b];
  }
  std::int64_t count_of(std::size_t b) const { return count.empty() ? uniform_count : count[b]; }
};

// MPI's counts are ints: count x type as (n, the datatype to send n of). Up to INT_MAX, n =
// count and type itself; above, n = 1 and a committed datatype of count x type (lower bound
// type's, extent count x type's, so that consecutive ones are laid out as the elements are),
// whose parts are appended to owned (the caller frees them).
MPI_Datatype count_type(std::int64_t count, MPI_Datatype type, int& n,
                        std::vector<MPI_Datatype>& owned);

// True when count x t occupies exactly its packed bytes, in type-map order, from its true lower
// bound: then it can be moved with memcpy. Conservative: false means "use the datatype engine".
bool is_dense(MPI_Datatype t);

// What a lowered plan holds: bytes the library allocated for it (scratch, staging, its own
// bookkeeping), persistent MPI requests, and derived datatypes it made or duplicated.
struct Memory {
  std::int64_t bytes = 0, mpi_requests = 0, datatypes = 0;
  Memory& operator+=(const Memory& o) {
    bytes += o.bytes, mpi_requests += o.mpi_requests, datatypes += o.datatypes;
    return *this;
  }
};

struct Bindings {
  const BlockBuffer* send = nullptr;  // read while lowering only: the plan keeps no copy
  const BlockBuffer* recv = nullptr;
  MPI_Comm comm = MPI_COMM_NULL;  // the library's private communicator
  int tag = 0;
  StickyError* errors = nullptr;  // where execution errors go (required)
};

class LoweredSchedule {
 public:
  LoweredSchedule(const Schedule& schedule, const Bindings& bindings);
  ~LoweredSchedule();
  LoweredSchedule(const LoweredSchedule&) = delete;
  LoweredSchedule& operator=(const LoweredSchedule&) = delete;

  // Starts an execution; returns whether it is already complete (nothing to wait for).
  bool start();
  // Advances the execution; with block, does not return before it is complete. Returns whether
  // it is complete. Never throws: errors go to the bound StickyError.
  bool progress(bool block);
  // A whole execution inside a blocking call, where runs_blocking(): a schedule of one round
  // whose exchanges are all posted at once (every algorithm at P = 2; direct exchanges without
  // a window) and that has sends of at most kIsendBytes: its receives are started, then those
  // sends made with MPI_Send (the others started), then everything waited for in order. Only
  // for a caller that waits for nothing else meanwhile: a blocking collective (every rank posts
  // all its receives on entry, so a send can wait on nothing but its peer's entry, even where
  // MPI_Send waits for the match) with no other operation running. What it saves is a request
  // per small send and the window's bookkeeping: Open MPI's ob1 sends such a message inline and
  // completes MPI_Send at once.
  bool runs_blocking() const;
  void run_blocking();
  bool active() const { return active_; }
  Memory memory() const;

 private:
  struct Region {
    char* addr = nullptr;
    std::int64_t bytes = 0;
    MPI_Datatype type = MPI_DATATYPE_NULL;
    int count = 0;  // typed regions: count x type
    bool dense = true;
  };
  // One copy, or -- dense on both ends -- `repeat` copies of the same size, the i-th from
  // from.addr + i x from_stride to to.addr + i x to_stride, run in that order (the packing of
  // every second, fourth... block in Bruck and TRA: one step a round instead of one a block,
  // which at P = 1024 was most of what a plan held).
  struct LocalStep {
    Region from, to;
    std::int64_t from_stride = 0, to_stride = 0, repeat = 1;
  };
  // Appends s to steps, as part of the last step where it continues it (see LocalStep).
  static void append(std::vector<LocalStep>& steps, const LocalStep& s);
  // How a persistent request was made, to make it again: Open MPI frees a persistent
  // request that completes with an error (and nulls the handle it was completed through).
  struct Recipe {
    void* addr = nullptr;
    int count = 0;
    MPI_Datatype type = MPI_DATATYPE_NULL;
    int peer = MPI_PROC_NULL;
    bool isend = false;  // a send posted with MPI_Isend at each start, no persistent request
  };
  struct LoweredRound {
    std::vector<LocalStep> before;        // copies, then packing of outgoing transfers
    std::vector<LocalStep> after;         // unpacking of incoming transfers
    std::vector<MPI_Request> send, recv;  // per exchange; MPI_REQUEST_NULL when absent
    std::vector<Recipe> send_recipe, recv_recipe;
  };

  Region resolve(const Piece& p) const;
  std::vector<Region> regions(const std::vector<Piece>& pieces) const;
  bool staged(const std::vector<Region>& rs, bool is_send) const;
  void run_large(const LocalStep& s);
  void run_self(const LocalStep& s);
  void lower_transfer(const Transfer& t, bool is_send, LoweredRound& round,
                      std::int64_t& staging_at);
  MPI_Datatype byte_type(std::int64_t bytes, int& count);
  void run(const std::vector<LocalStep>& steps);
  void enter_round();
  void fill(std::size_t slot);
  bool post(MPI_Request& q, const LoweredRound& r, std::size_t e, bool is_send);
  void fill_window();
  bool complete_some(bool block);
  bool start_direct();
  bool progress_direct(bool block);
  void finished(int index, int error);
  void remake(LoweredRound& r, std::size_t e, bool is_send);
  void complete(int index);
  void free_all() noexcept;

  Policy policy_;
  Lowering lowering_;
  const BlockBuffer* send_;  // while lowering only (nullptr after)
  const BlockBuffer* recv_;
  MPI_Comm comm_;
  int tag_;
  int me_ = 0;  // rank in comm_
  StickyError* errors_;
  std::unique_ptr<char[]> scratch_, staging_, bounce_;
  std::int64_t scratch_bytes_ = 0, staging_bytes_ = 0, bounce_bytes_ = 0;
  std::vector<LoweredRound> rounds_;
  std::vector<MPI_Datatype> owned_types_;

  // execution state
  bool active_ = false;
  // One round, every exchange posted at once (runs_blocking()): started and completed without
  // the window's slots (start_direct, progress_direct), in the same order as through them.
  bool direct_ = false;
  bool small_sends_ = false;  // some send of at most kIsendBytes (posted with MPI_Isend)
  std::size_t round_ = 0, next_ = 0, inflight_ = 0;
  std::vector<MPI_Request> window_;    // 2 per slot: send, receive
  std::vector<int> pending_;           // per slot: requests still to complete
  std::vector<std::size_t> exchange_;  // per slot: its exchange in the round
};

}  // namespace mpia
