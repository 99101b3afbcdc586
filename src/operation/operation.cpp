#include "operation/operation.hpp"

#include "util/error.hpp"

#include <algorithm>
#include <climits>
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
  int finalized = 0;
  MPI_Finalized(&finalized);
  if (!finalized)
    for (MPI_Datatype& t : made_) MPI_Type_free(&t);
}

BlockBuffer ScheduledOperation::bind(const BlockSide& side, int n) {
  BlockBuffer b;
  b.base = static_cast<char*>(const_cast<void*>(side.buf));
  b.n = std::size_t(std::max(n, 0));
  b.displacement.resize(b.n);
  b.count.resize(b.n);
  // Each distinct user type once: its duplicate (in types_), size and extent.
  struct Seen {
    MPI_Datatype user;
    int index;
    std::int64_t size;
    MPI_Aint extent;
  };
  std::vector<Seen> seen;
  auto index_of = [&](MPI_Datatype user) -> const Seen& {
    for (const Seen& x : seen)
      if (x.user == user) return x;
    types_.push_back(std::make_unique<TypeHandle>(user));
    MPI_Aint lb, extent, tlb, textent;
    MPIA_CHECK(MPI_Type_get_extent(user, &lb, &extent));
    MPIA_CHECK(MPI_Type_get_true_extent(user, &tlb, &textent));
    b.types.push_back(BlockType{types_.back()->get(), is_dense(user), tlb});
    seen.push_back(Seen{user, int(b.types.size()) - 1, type_size(user), extent});
    return seen.back();
  };
  if (!side.w && n > 0) index_of(side.type);  // every block's: types[0]
  for (int i = 0; i < n; ++i) {
    const Seen& t = index_of(side.type_at(std::size_t(i)));
    const std::int64_t count = side.counts[std::size_t(i)];
    const std::int64_t displ = side.displs[std::size_t(i)];
    b.displacement[i] = side.w ? MPI_Aint(displ) : MPI_Aint(displ) * t.extent;
    b.count[i] = count;
    int index = t.index;
    if (!b.types[std::size_t(index)].dense && count > INT_MAX) {
      // One element of a type of count elements (the engine passes counts to MPI as ints).
      BlockType wide = b.types[std::size_t(index)];
      int one = 0;
      wide.type = count_type(count, wide.type, one, made_);
      b.types.push_back(wide);
      index = int(b.types.size()) - 1;
      b.count[i] = one;
    }
    if (index != 0 && b.type_of.empty()) b.type_of.assign(std::size_t(n), 0);
    if (!b.type_of.empty()) b.type_of[std::size_t(i)] = index;
  }
  // Uniform blocks (one type, one count, evenly spaced from the base): no arrays.
  bool uniform = b.type_of.empty() && b.n > 0 && b.displacement[0] == 0;
  const MPI_Aint stride = b.n > 1 ? b.displacement[1] : 0;
  for (std::size_t i = 1; uniform && i < b.n; ++i)
    uniform = b.count[i] == b.count[0] && b.displacement[i] == MPI_Aint(i) * stride;
  if (uniform) {
    b.stride = stride;
    b.uniform_count = b.count[0];
    std::vector<MPI_Aint>().swap(b.displacement);
    std::vector<std::int64_t>().swap(b.count);
  }
  return b;
}

BlockBuffer ScheduledOperation::shadow_of(const BlockBuffer& recv) {
  // The bytes the receive blocks span: what MPI_IN_PLACE reads at each Start.
  MPI_Aint lo = 0, hi = 0;
  bool any = false;
  for (std::size_t b = 0; b < recv.n; ++b) {
    if (recv.count_of(b) == 0) continue;
    MPI_Aint lb, extent, tlb, textent;
    MPIA_CHECK(MPI_Type_get_extent(recv.type(b).type, &lb, &extent));
    MPIA_CHECK(MPI_Type_get_true_extent(recv.type(b).type, &tlb, &textent));
    const MPI_Aint first = recv.displacement_of(b) + tlb;
    const MPI_Aint last = first + MPI_Aint(recv.count_of(b) - 1) * extent;
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
  b.send = &send_;
  b.recv = &recv_;
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

Memory ScheduledOperation::memory() const {
  Memory m;
  if (lowered_) m = lowered_->memory();
  auto vec = [](const auto& v) { return std::int64_t(v.capacity() * sizeof(v[0])); };
  m.bytes += sizeof(*this) + std::int64_t(shadow_bytes_) + vec(types_) + vec(made_);
  for (const BlockBuffer* b : {&send_, &recv_})
    m.bytes += vec(b->types) + vec(b->type_of) + vec(b->displacement) + vec(b->count);
  m.datatypes += std::int64_t(types_.size() + made_.size());
  return m;
}

bool ScheduledOperation::do_start() {
  if (shadow_bytes_ > 0) std::memcpy(shadow_.get(), shadow_source_, shadow_bytes_);
  return lowered_->start();
}

bool ScheduledOperation::do_progress(bool block) { return lowered_->progress(block); }

bool ScheduledOperation::do_run() {
  if (!lowered_->runs_blocking()) return false;
  if (shadow_bytes_ > 0) std::memcpy(shadow_.get(), shadow_source_, shadow_bytes_);
  lowered_->run_blocking();
  return true;
}

}  // namespace mpia
