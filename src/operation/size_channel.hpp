// The channel through which an algorithm's init-time exchange hook learns its peers' sizes.
#pragma once

#include "collective/exchange.hpp"

#include <mpi.h>

#include <cstdint>
#include <vector>

namespace mpia {

// The channel an algorithm's init-time exchange hook talks through (collective/exchange.hpp):
// point-to-point int64 messages on comm and tag, completed while driving running operations.
// Collective hooks run on every rank in the same order, so tag 0 (or the request's own tag)
// never crosses another exchange. (After a failure, what is still posted is left behind, as
// every failed init exchange does: the communicator is unusable by then.)
class MpiSizeChannel final : public SizeChannel {
 public:
  MpiSizeChannel(MPI_Comm comm, int tag, const char* what) : comm_(comm), tag_(tag), what_(what) {}
  void post_recv(int peer, std::int64_t* data, int n) override;
  void post_send(int peer, const std::int64_t* data, int n) override;
  void wait_all() override;

 private:
  MPI_Comm comm_;
  int tag_;
  const char* what_;
  std::vector<MPI_Request> requests_;
};

}  // namespace mpia
