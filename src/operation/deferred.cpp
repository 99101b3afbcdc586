#include "operation/deferred.hpp"

#include "operation/nonblocking.hpp"

namespace mpia {

DeferredOperation::DeferredOperation(std::shared_ptr<PendingAttach> attach, std::uint64_t ticket,
                                     Make make, std::shared_ptr<void> keep)
    : attach_(std::move(attach)), ticket_(ticket), make_(std::move(make)), keep_(std::move(keep)) {
  algorithm_ = "(attaching)";
}

Memory DeferredOperation::memory() const {
  Memory m = inner_ ? inner_->memory() : Memory{};
  m.bytes += sizeof(*this);
  return m;
}

void DeferredOperation::finish() {
  if (auto* nb = dynamic_cast<NonblockingOperation*>(inner_.get())) nb->finish();
}

bool DeferredOperation::do_progress(bool /*block*/) {
  if (!inner_) {
    CommState* st = attach_progress(*attach_);
    if (!st || !take_turn(*attach_, ticket_))
      return false;  // (block: the waiter drives the others)
    try {
      inner_ = make_(*st);
    } catch (const Error& e) {
      errors_.note(e);
      make_ = nullptr;
      return true;
    }
    make_ = nullptr;
  }
  // The call's operation was started by make and runs on its own (the running list drives it):
  // this one completes with it, with its error.
  try {
    return inner_->test();
  } catch (const Error& e) {
    errors_.note(e);
    return true;
  }
}

}  // namespace mpia
