#include "operation/private_comm.hpp"

#include "util/error.hpp"

#include <algorithm>

namespace mpia {

// --- Tags ---------------------------------------------------------------------------------

void TagAllocator::set_range(int ub) {
  std::lock_guard<std::mutex> lock(mutex_);
  ub_ = std::max(ub, 1);
  cursor_ = 1;
}

void TagAllocator::window(std::uint64_t (&bits)[kWords]) const {
  std::lock_guard<std::mutex> lock(mutex_);
  for (std::uint64_t& w : bits) w = ~std::uint64_t(0);
  const int n = window_size();
  for (int k = 0; k < n; ++k)
    if (!live_.count(window_tag(k))) bits[k / 64] &= ~(std::uint64_t(1) << (k % 64));
}

void TagAllocator::hold(int tag) {
  std::lock_guard<std::mutex> lock(mutex_);
  live_.insert(tag);
  cursor_ = tag >= ub_ ? 1 : tag + 1;
}

void TagAllocator::skip_window() {
  std::lock_guard<std::mutex> lock(mutex_);
  cursor_ = window_tag(window_size() % ub_);
}

void TagAllocator::release(int tag) {
  std::lock_guard<std::mutex> lock(mutex_);
  live_.erase(tag);
}

// --- The private communicator -------------------------------------------------------------

PrivateComm::PrivateComm(MPI_Comm comm, const char* name) { adopt(comm, name); }

void PrivateComm::adopt(MPI_Comm comm, const char* name) {
  comm_ = comm;
  // Internal failures come back as codes and are raised on the user's communicator instead.
  MPIA_CHECK(MPI_Comm_set_errhandler(comm_, MPI_ERRORS_RETURN));
  MPIA_CHECK(MPI_Comm_set_name(comm_, name));
}

std::shared_ptr<PrivateComm> PrivateComm::borrow(MPI_Comm user) {
  auto p = std::make_shared<PrivateComm>();
  p->comm_ = user;
  p->owned_ = false;
  return p;
}

PrivateComm::~PrivateComm() {
  if (!owned_) return;
  int finalized = 0;
  MPI_Finalized(&finalized);
  if (!finalized && comm_ != MPI_COMM_NULL) MPI_Comm_free(&comm_);
}

}  // namespace mpia
