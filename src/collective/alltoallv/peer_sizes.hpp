// What the forwarding alltoallv algorithms (bruck, hybrid, locality, locality_radix) learn at
// init: the sizes their builder asks for (AlltoallvShape::pair_bytes), as this rank's own
// blocks (from its arguments) and a table of the other pairs, filled by the algorithm's
// exchange hook; and the size exchange of the radix-r exchange they share. Asking for a pair
// nobody told this rank is a bug, reported as one.
#pragma once

#include "collective/alltoall/builders.hpp"
#include "collective/exchange.hpp"
#include "collective/registry.hpp"
#include "util/error.hpp"

#include <mpi.h>

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

namespace mpia::detail {

class PeerSizes {
 public:
  PeerSizes(int me, int P, std::vector<std::int64_t> send, std::vector<std::int64_t> recv)
      : me_(me), P_(P), send_(std::move(send)), recv_(std::move(recv)) {}
  void add(int src, int dst, std::int64_t bytes) { table_[key(src, dst)] = bytes; }
  std::int64_t operator()(int src, int dst) const {
    if (src == me_) return send_[std::size_t(dst)];
    if (dst == me_) return recv_[std::size_t(src)];
    const auto it = table_.find(key(src, dst));
    if (it == table_.end())
      fail(MPI_ERR_INTERN, "mpi-advance: a builder asked for the size of a block (" +
                               std::to_string(src) + " to " + std::to_string(dst) +
                               ") this rank never learnt");
    return it->second;
  }
  std::size_t entries() const { return table_.size(); }

 private:
  std::int64_t key(int src, int dst) const { return std::int64_t(src) * P_ + dst; }
  int me_, P_;
  std::vector<std::int64_t> send_, recv_;
  std::unordered_map<std::int64_t, std::int64_t> table_;
};

// A table for shape's rank, and shape.pair_bytes answering from it.
inline std::shared_ptr<PeerSizes> peer_sizes(AlltoallvShape& shape) {
  auto t = std::make_shared<PeerSizes>(shape.rank, shape.size, shape.send_bytes, shape.recv_bytes);
  shape.pair_bytes = [t](int src, int dst) { return (*t)(src, dst); };
  return t;
}

// The size exchange of the zero-copy radix-r exchange (build_radix_bruck_v) among n
// participants, this one `me`, participant k being rank peer(k) of the channel: the same
// rounds run on the sizes themselves (8 bytes per block). slot[j] starts as the size of this
// participant's block for participant me - j (mod n), 0 for a block that does not travel
// this way; after every round, learnt(src, dst, bytes) is told each block (as participants)
// the round brought -- exactly the pairs the builder then asks for. K rounds of one message
// each way, O(n) memory.
inline void radix_size_exchange(int me, int n, int radix, std::vector<std::int64_t> slot,
                                const std::function<int(int)>& peer, SizeChannel& channel,
                                const std::function<void(int, int, std::int64_t)>& learnt) {
  auto mod = [n](std::int64_t a) { return int(((a % n) + n) % n); };
  std::vector<std::int64_t> out, in;
  for (const DigitRound& d : radix_rounds(n, radix)) {
    const std::int64_t processed = d.distance / d.z * radix;
    out.clear();
    for (int j : d.blocks) out.push_back(slot[std::size_t(j)]);
    in.assign(out.size(), 0);
    const int k = int(out.size());
    channel.post_recv(peer(mod(me + d.distance)), in.data(), k);
    channel.post_send(peer(mod(me - d.distance)), out.data(), k);
    channel.wait_all();
    for (std::size_t i = 0; i < d.blocks.size(); ++i) {
      const int j = d.blocks[i];
      slot[std::size_t(j)] = in[i];
      const auto [src, dst] = radix_block_after(me, n, j, processed);
      learnt(src, dst, in[i]);
    }
  }
}

// The size exchange of bruck and hybrid over the whole communicator: shape.pair_bytes then
// answers every pair build_radix_bruck_v asks for, blocks above `threshold` bytes carried as 0
// (they do not travel this way).
inline void learn_radix_v(AlltoallvShape& shape, int radix, std::int64_t threshold,
                          SizeChannel& channel) {
  const int me = shape.rank, P = shape.size;
  const std::shared_ptr<PeerSizes> t = peer_sizes(shape);
  std::vector<std::int64_t> slot(static_cast<std::size_t>(P));
  for (int j = 1; j < P; ++j) {
    const std::int64_t b = shape.send_bytes[std::size_t((me - j + P) % P)];
    slot[std::size_t(j)] = b <= threshold ? b : 0;
  }
  radix_size_exchange(
      me, P, radix, std::move(slot), [](int k) { return k; }, channel,
      [&t](int src, int dst, std::int64_t b) { t->add(src, dst, b); });
}

}  // namespace mpia::detail
