#include "schedule/schedule.hpp"

namespace mpia {

std::int64_t Transfer::bytes() const {
  std::int64_t n = 0;
  for (const Piece& p : pieces) n += p.bytes;
  return n;
}

int Schedule::communication_rounds() const {
  int k = 0;
  for (const Round& r : rounds) {
    for (const Exchange& x : r.exchanges) {
      if (x.send.active()) {
        ++k;
        break;
      }
    }
  }
  return k;
}

std::int64_t Schedule::bytes_sent() const {
  std::int64_t n = 0;
  for (const Round& r : rounds)
    for (const Exchange& x : r.exchanges)
      if (x.send.active()) n += x.send.bytes();
  return n;
}

std::int64_t Schedule::messages_sent() const {
  std::int64_t n = 0;
  for (const Round& r : rounds)
    for (const Exchange& x : r.exchanges)
      if (x.send.active()) ++n;
  return n;
}

std::int64_t Schedule::memory_bytes() const {
  std::int64_t b = sizeof(Schedule) + std::int64_t(rounds.capacity() * sizeof(Round));
  for (const Round& r : rounds) {
    b += std::int64_t(r.copies.capacity() * sizeof(Copy) +
                      r.exchanges.capacity() * sizeof(Exchange));
    for (const Exchange& x : r.exchanges)
      b += std::int64_t((x.send.pieces.capacity() + x.recv.pieces.capacity()) * sizeof(Piece));
  }
  return b;
}

}  // namespace mpia
