// The schedule: what an algorithm builder produces and the engine executes.
//
// A builder makes no MPI call. It describes, for one rank, an ordered list of rounds; a round
// is a list of local copies followed by a set of exchanges (a send and/or a receive with one
// peer). Every datum is named by the block it belongs to: block b of the send buffer is the
// data for destination b, block b of the receive buffer the data from source b, and scratch
// holds blocks in packed form (their type signature's bytes) at byte offsets the builder
// chooses. The engine maps blocks to addresses and datatypes when it lowers the schedule.
//
// Rules a builder must keep (the simulator checks them):
//  - the send buffer is never written;
//  - within a round, no byte is written by two receives, and no byte a receive writes is read
//    by a send of the same round (so exchanges may run in any order or all at once);
//  - copies run in order before the round's exchanges;
//  - a transfer's pieces on the sender and on the receiver list the same bytes in the same order;
//  - transfers with zero bytes are not emitted.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace mpia {

enum class Slot : std::uint8_t { Send = 0, Recv = 1, Scratch = 2 };

struct Piece {
  Slot slot = Slot::Scratch;
  std::int32_t block = -1;  // Send/Recv: block index (the peer); Scratch: unused (-1)
  std::int64_t offset = 0;  // Scratch: byte offset; Send/Recv: 0
  std::int64_t bytes = 0;   // packed size

  static Piece send(int block, std::int64_t bytes) { return {Slot::Send, block, 0, bytes}; }
  static Piece recv(int block, std::int64_t bytes) { return {Slot::Recv, block, 0, bytes}; }
  static Piece scratch(std::int64_t offset, std::int64_t bytes) {
    return {Slot::Scratch, -1, offset, bytes};
  }
};

struct Transfer {
  int peer = -1;  // -1: no transfer
  std::vector<Piece> pieces;
  std::int64_t bytes() const;
  bool active() const { return peer >= 0; }
};

struct Exchange {
  Transfer send;
  Transfer recv;
};

struct Copy {
  Piece from;
  Piece to;
};

struct Round {
  std::vector<Copy> copies;
  std::vector<Exchange> exchanges;
};

// How the exchanges of a round are completed (seed 001, Algorithms 1-5): a window of at most
// `window` exchanges in flight (0 = all of them), refilled when the whole window completes
// (Waitall), as soon as any one completes (Waitany), or by polling without ever blocking in a
// wait call (Testany).
enum class Completion : std::uint8_t { Waitall, Waitany, Testany };

struct Policy {
  int window = 0;
  Completion completion = Completion::Waitall;
};

// How multi-piece transfers are lowered: packed through a staging buffer, or described by one
// derived datatype over absolute addresses (no explicit copy at all: zero-copy).
enum class Lowering : std::uint8_t { Pack, Datatype };

struct Schedule {
  std::vector<Round> rounds;
  std::int64_t scratch_bytes = 0;
  Policy policy;
  Lowering lowering = Lowering::Pack;

  // Rounds in which this rank sends at least one message (the paper's K), and bytes sent.
  int communication_rounds() const;
  std::int64_t bytes_sent() const;
  std::int64_t messages_sent() const;
  // What the schedule itself occupies (its rounds, exchanges, pieces and copies; not the
  // scratch it asks for).
  std::int64_t memory_bytes() const;
};

}  // namespace mpia
