#include "operation/deferred.hpp"

#include "operation/neighbor_topology.hpp"
#include "operation/nonblocking.hpp"
#include "util/error.hpp"

#include <algorithm>
#include <vector>

namespace mpia {

namespace {

// Copies of the derived datatypes a deferred call reads (DeferredOperation): the user may free
// theirs as soon as the call returned. Freed with the call's operation.
struct KeptTypes {
  std::vector<MPI_Datatype> owned;
  std::vector<MPI_Datatype> arrays[2];  // a w call's per-block types: send, receive
  KeptTypes() = default;
  KeptTypes(const KeptTypes&) = delete;
  KeptTypes& operator=(const KeptTypes&) = delete;
  ~KeptTypes() {
    int finalized = 0;
    MPI_Finalized(&finalized);
    if (!finalized)
      for (MPI_Datatype& t : owned) MPI_Type_free(&t);
  }
  MPI_Datatype keep(MPI_Datatype t) {
    if (t == MPI_DATATYPE_NULL) return t;
    int ni = 0, na = 0, nd = 0, combiner = 0;
    if (MPI_Type_get_envelope(t, &ni, &na, &nd, &combiner) != MPI_SUCCESS ||
        combiner == MPI_COMBINER_NAMED)
      return t;
    MPI_Datatype copy = MPI_DATATYPE_NULL;
    if (MPI_Type_dup(t, &copy) != MPI_SUCCESS) return t;  // then the plan reports it
    owned.push_back(copy);
    return copy;
  }
  void keep(AlltoallArgs& a) {
    if (!a.in_place()) a.sendtype = keep(a.sendtype);
    a.recvtype = keep(a.recvtype);
  }
  // n[0], n[1]: the send and receive sides' blocks (a w call's type arrays).
  void keep(AlltoallvArgs& a, const int n[2]) {
    BlockSide* sides[2] = {&a.send, &a.recv};
    for (int k = 0; k < 2; ++k) {
      BlockSide& side = *sides[k];
      if (k == 0 && a.in_place()) continue;
      if (!side.w) {
        side.type = keep(side.type);
      } else if (side.types) {
        arrays[k].resize(std::size_t(std::max(n[k], 0)));
        for (std::size_t i = 0; i < arrays[k].size(); ++i) arrays[k][i] = keep(side.types[i]);
        side.types = arrays[k].data();
      }
    }
  }
};

}  // namespace

std::shared_ptr<void> keep_datatypes(AlltoallArgs& args, MPI_Comm, Collective) {
  auto kept = std::make_shared<KeptTypes>();
  kept->keep(args);
  return kept;
}

std::shared_ptr<void> keep_datatypes(AlltoallvArgs& args, MPI_Comm comm, Collective c) {
  auto kept = std::make_shared<KeptTypes>();
  // A w call has a type per block: the communicator's size, or its topology's degrees (asked
  // only here).
  int blocks[2] = {0, 0};
  if (args.recv.w && c == Collective::NeighborAlltoallv) {
    const NeighborTopology t = neighbor_topology(comm);
    blocks[0] = int(t.destinations.size());
    blocks[1] = int(t.sources.size());
  } else if (args.recv.w) {
    MPIA_CHECK(MPI_Comm_size(comm, &blocks[0]));
    blocks[1] = blocks[0];
  }
  kept->keep(args, blocks);
  return kept;
}

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
