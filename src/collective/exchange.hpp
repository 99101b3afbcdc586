// The means an algorithm's init-time exchange hook (AlgorithmSpec::learn_*) is handed to talk
// to its peers: point-to-point messages of 64-bit integers on the request's private
// communicator and tag. collective/ makes no MPI call itself; operation/ implements this with
// MPI (operation/size_channel.hpp: MpiSizeChannel), the unit tests may implement it in process.
#pragma once

#include <cstdint>

namespace mpia {

class SizeChannel {
 public:
  virtual ~SizeChannel() = default;
  // Post a receive of n values from peer into data, or a send of n values to peer from data.
  // The buffers must stay alive and untouched until wait_all returns. Messages between two
  // ranks match in posting order.
  virtual void post_recv(int peer, std::int64_t* data, int n) = 0;
  virtual void post_send(int peer, const std::int64_t* data, int n) = 0;
  // Completes everything posted so far (driving the library's running operations meanwhile);
  // throws the first failure.
  virtual void wait_all() = 0;
};

}  // namespace mpia
