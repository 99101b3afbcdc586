// What the forwarding alltoallv algorithms (bruck, locality) learn at init: the sizes their
// builder asks for (AlltoallvShape::pair_bytes), as this rank's own blocks (from its
// arguments) and a table of the other pairs, filled by the algorithm's exchange hook. Asking
// for a pair nobody told this rank is a bug, reported as one.
#pragma once

#include "collective/registry.hpp"
#include "util/error.hpp"

#include <mpi.h>

#include <cstdint>
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

}  // namespace mpia::detail
