#include "persistent/request.hpp"

#include "util/error.hpp"

#include <algorithm>
#include <cstring>
#include <mutex>
#include <vector>

namespace mpia {

namespace {
std::mutex g_mutex;                 // guards g_active (requests may be used from several threads)
std::vector<Operation*> g_active;   // started and not yet completed
}  // namespace

Operation::~Operation() {
  std::lock_guard<std::mutex> lock(g_mutex);
  g_active.erase(std::remove(g_active.begin(), g_active.end(), this), g_active.end());
}

void Operation::start() {
  do_start();
  active_ = true;
  std::lock_guard<std::mutex> lock(g_mutex);
  g_active.push_back(this);
}

void Operation::progress_all() {
  // Copy: completing an operation removes it from the list.
  std::vector<Operation*> snapshot;
  {
    std::lock_guard<std::mutex> lock(g_mutex);
    snapshot = g_active;
  }
  for (Operation* op : snapshot) {
    if (op->active_ && op->do_progress(false)) {
      op->active_ = false;
      std::lock_guard<std::mutex> lock(g_mutex);
      g_active.erase(std::remove(g_active.begin(), g_active.end(), op), g_active.end());
    }
  }
}

void Operation::wait() {
  if (!active_) return;
  bool alone;
  {
    std::lock_guard<std::mutex> lock(g_mutex);
    alone = g_active.size() == 1;
  }
  if (alone) {
    // Nothing else to keep moving: let MPI block (and yield) inside its own wait calls.
    try {
      do_progress(true);
    } catch (...) {
      active_ = false;  // a failed execution cannot be resumed; the request may be freed
      std::lock_guard<std::mutex> lock(g_mutex);
      g_active.erase(std::remove(g_active.begin(), g_active.end(), this), g_active.end());
      throw;
    }
    active_ = false;
    std::lock_guard<std::mutex> lock(g_mutex);
    g_active.erase(std::remove(g_active.begin(), g_active.end(), this), g_active.end());
    return;
  }
  while (active_) progress_all();
}

bool Operation::test() {
  if (active_) progress_all();
  return !active_;
}

TypeHandle::TypeHandle(MPI_Datatype user) { MPIA_CHECK(MPI_Type_dup(user, &type_)); }

TypeHandle::~TypeHandle() {
  int finalized = 0;
  MPI_Finalized(&finalized);
  if (!finalized && type_ != MPI_DATATYPE_NULL) MPI_Type_free(&type_);
}

ScheduledOperation::ScheduledOperation(std::string algorithm, std::shared_ptr<PrivateComm> comm)
    : comm_(std::move(comm)) {
  algorithm_ = std::move(algorithm);
}

ScheduledOperation::~ScheduledOperation() {
  lowered_.reset();  // requests and derived types go before the types they were built from
}

BlockBuffer ScheduledOperation::bind(const void* base, const int* counts, const MPI_Aint* displs,
                                     int nblocks, MPI_Datatype type) {
  if (ntypes_ == 2) fail(MPI_ERR_INTERN, "mpi-advance: more than two buffers bound");
  types_[ntypes_] = std::make_unique<TypeHandle>(type);
  BlockBuffer b;
  b.base = static_cast<char*>(const_cast<void*>(base));
  b.type = types_[ntypes_++]->get();
  int size;
  MPI_Aint lb, extent, tlb, textent;
  MPIA_CHECK(MPI_Type_size(type, &size));
  MPIA_CHECK(MPI_Type_get_extent(type, &lb, &extent));
  MPIA_CHECK(MPI_Type_get_true_extent(type, &tlb, &textent));
  b.dense = is_dense(type);
  b.true_lb = tlb;
  b.displacement.resize(nblocks);
  b.count.assign(counts, counts + nblocks);
  b.bytes.resize(nblocks);
  for (int i = 0; i < nblocks; ++i) {
    b.displacement[i] = displs[i] * extent;  // MPI_Aint: 64-bit offsets
    b.bytes[i] = std::int64_t(counts[i]) * size;
  }
  return b;
}

BlockBuffer ScheduledOperation::shadow_of(const BlockBuffer& recv) {
  MPI_Aint lb, extent, tlb, textent;
  MPIA_CHECK(MPI_Type_get_extent(recv.type, &lb, &extent));
  MPIA_CHECK(MPI_Type_get_true_extent(recv.type, &tlb, &textent));
  // The bytes the receive blocks span: what MPI_IN_PLACE reads at each Start.
  MPI_Aint lo = 0, hi = 0;
  bool any = false;
  for (std::size_t b = 0; b < recv.count.size(); ++b) {
    if (recv.count[b] == 0) continue;
    const MPI_Aint first = recv.displacement[b] + tlb;
    const MPI_Aint last = first + MPI_Aint(recv.count[b] - 1) * extent;
    const MPI_Aint l = std::min(first, last), h = std::max(first, last) + textent;
    lo = any ? std::min(lo, l) : l;
    hi = any ? std::max(hi, h) : h;
    any = true;
  }
  BlockBuffer send = recv;
  shadow_bytes_ = std::size_t(hi - lo);
  if (shadow_bytes_ > 0) shadow_.reset(new char[shadow_bytes_]);
  shadow_source_ = recv.base + lo;
  // Same layout as recv, shifted onto the shadow: block b lives at shadow + displacement - lo.
  if (shadow_bytes_ > 0) send.base = shadow_.get() - lo;
  return send;
}

void ScheduledOperation::lower(const Schedule& schedule, const BlockBuffer& send,
                               const BlockBuffer& recv, int tag) {
  Bindings b;
  b.send = send;
  b.recv = recv;
  b.comm = comm_->get();
  b.tag = tag;
  lowered_ = std::make_unique<LoweredSchedule>(schedule, b);
}

void ScheduledOperation::do_start() {
  if (shadow_bytes_ > 0) std::memcpy(shadow_.get(), shadow_source_, shadow_bytes_);
  lowered_->start();
}

bool ScheduledOperation::do_progress(bool block) { return lowered_->progress(block); }

}  // namespace mpia
