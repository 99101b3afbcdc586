#include "operation/operation.hpp"

#include "util/error.hpp"

#include <algorithm>
#include <cstring>

namespace mpia {

Traffic traffic_of(const Schedule& schedule, int me, const NodeMap* nodes) {
  Traffic t;
  t.messages = t.bytes = 0;
  if (nodes) t.internode_messages = t.internode_bytes = 0;
  for (const Round& r : schedule.rounds)
    for (const Exchange& x : r.exchanges) {
      if (!x.send.active()) continue;
      const std::int64_t b = x.send.bytes();
      ++t.messages;
      t.bytes += b;
      if (nodes && nodes->node_of[x.send.peer] != nodes->node_of[me])
        ++t.internode_messages, t.internode_bytes += b;
    }
  return t;
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
  const std::int64_t size = type_size(type);
  MPI_Aint lb, extent, tlb, textent;
  MPIA_CHECK(MPI_Type_get_extent(type, &lb, &extent));
  MPIA_CHECK(MPI_Type_get_true_extent(type, &tlb, &textent));
  b.dense = is_dense(type);
  b.true_lb = tlb;
  b.displacement.resize(nblocks);
  b.count.assign(counts, counts + nblocks);
  b.bytes.resize(nblocks);
  for (int i = 0; i < nblocks; ++i) {
    b.displacement[i] = displs[i] * extent;  // MPI_Aint: 64-bit offsets
    b.bytes[i] = counts[i] * size;
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
  send_ = send;
  recv_ = recv;
  tag_ = tag;
  Bindings b;
  b.send = send;
  b.recv = recv;
  b.comm = comm_->get();
  b.tag = tag;
  b.errors = &errors_;
  lowered_.reset();  // its requests are freed before the new ones are made
  lowered_ = std::make_unique<LoweredSchedule>(schedule, b);
}

void ScheduledOperation::relower(const Schedule& schedule, std::string algorithm,
                                 const Traffic& traffic) {
  if (active()) fail(MPI_ERR_INTERN, "mpi-advance: relowering an active operation");
  lower(schedule, send_, recv_, tag_);
  algorithm_ = std::move(algorithm);
  traffic_ = traffic;
}

bool ScheduledOperation::do_start() {
  if (shadow_bytes_ > 0) std::memcpy(shadow_.get(), shadow_source_, shadow_bytes_);
  return lowered_->start();
}

bool ScheduledOperation::do_progress(bool block) { return lowered_->progress(block); }

}  // namespace mpia
