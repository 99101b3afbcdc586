#include "operation/size_channel.hpp"

#include "operation/operation.hpp"
#include "util/error.hpp"

namespace mpia {

void MpiSizeChannel::post_recv(int peer, std::int64_t* data, int n) {
  requests_.emplace_back(MPI_REQUEST_NULL);
  MPIA_CHECK(MPI_Irecv(data, n, MPI_INT64_T, peer, tag_, comm_, &requests_.back()));
}

void MpiSizeChannel::post_send(int peer, const std::int64_t* data, int n) {
  requests_.emplace_back(MPI_REQUEST_NULL);
  MPIA_CHECK(MPI_Isend(data, n, MPI_INT64_T, peer, tag_, comm_, &requests_.back()));
}

void MpiSizeChannel::wait_all() {
  for (MPI_Request& r : requests_) complete(r, what_);
  requests_.clear();
}

}  // namespace mpia
