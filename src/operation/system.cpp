// The System records: the MPI library's own collectives, run on the private communicator. This
// translation unit deliberately does not include mpi_advance.h: it includes Open MPI's
// <mpi-ext.h>, whose MPIX_Alltoall_init is Open MPI's, not ours. Every collective here is
// called by its PMPI_ name (as the library's waits and tests are): the drop-in library
// (src/preload/) defines MPI_Alltoall, MPI_Ialltoall, MPI_Alltoall_init & co. and must never see
// the library's own calls, from whichever thread (the progress thread included) they come.
//
// How a call is handed over (SystemCall). A call of an int form goes to MPI's int function; a
// large-count call (_c) to MPI's _c function where MPI has them (MPI-4). Without them, it goes to
// the int function when every count and displacement fits an int, else with each block narrowed
// to one element of count_type's datatype (MPI's counts are ints: never truncated): MPI_Alltoall
// and MPI_Neighbor_alltoall keep their shape (the type's extent is the block's), the v and w
// forms go to a w function -- MPI_Neighbor_alltoallw (MPI_Aint byte displacements) or
// MPI_Alltoallw (int displacements: each block's goes inside its datatype).
#include <mpi.h>
#if defined(OPEN_MPI) && OPEN_MPI
#include <mpi-ext.h>
#endif

#include "operation/datatypes.hpp"
#include "util/mpi_features.h"
#include "operation/system.hpp"
#include "schedule/engine.hpp"
#include "util/error.hpp"
#include "util/platform.hpp"

#include <algorithm>
#include <climits>
#include <cstdint>
#include <memory>
#include <vector>

namespace mpia {

namespace {

#if MPIA_HAVE_LARGE_COUNT
constexpr bool kHaveLargeCount = true;
#else
constexpr bool kHaveLargeCount = false;
#endif

bool fits_int(std::int64_t v) { return v >= INT_MIN && v <= INT_MAX; }

// The form of the MPI function called: one count and type per side, arrays and one type, arrays
// with a type per block.
enum class Shape : std::uint8_t { Regular, V, W };

// One side in the forms MPI's functions take. The arrays have one element more than the
// blocks, so that they are never empty (MPI wants arrays even for a zero degree).
struct Side {
  void* buf = nullptr;                    // const for the send side
  int count = 0;                          // Regular
  MPI_Count ccount = 0;                   // Regular, _c
  MPI_Datatype type = MPI_DATATYPE_NULL;  // Regular and V
  std::vector<int> counts, displs;        // V, W (W: displs of MPI_Alltoallw)
  std::vector<MPI_Count> ccounts;         // _c
  std::vector<MPI_Aint> adispls;          // _c, and MPI_Neighbor_alltoallw
  std::vector<MPI_Datatype> types;        // W
};

// The MPI library's functions of one form, one typed slot each as Open MPI's coll.h keeps them
// (a null persistent slot: the MPI has no persistent form), and the forms of every collective of
// calls.txt, int ([0]) and large-count ([1]): kSystemForms, generated (src/bindings/).
using SystemFn = int (*)(const Side& s, const Side& r, MPI_Comm comm, MPI_Request* request);
struct SystemSlots {
  SystemFn blocking, nonblocking, persistent;
};
struct SystemForms {
  Collective collective;
  Shape shape;
  SystemSlots slots[2];
};
#include "system_forms.inc"

const SystemSlots* slots_of(Collective c, Shape shape, bool large) {
  for (const SystemForms& f : kSystemForms)
    if (f.collective == c && f.shape == shape) return &f.slots[large];
  fail(MPI_ERR_INTERN, "no MPI function for this call's form");
}

// The arguments of one call to the MPI library, in the form its function takes them.
class SystemCall {
 public:
  // keep: the call outlives the caller's arguments (a persistent request): the arrays are
  // copies (as always) and the datatypes duplicates.
  SystemCall(const AlltoallArgs& a, bool keep) : collective_(Collective::Alltoall), keep_(keep) {
    in_place_ = a.in_place();
    large_ = a.large && kHaveLargeCount;
    slots_ = slots_of(collective_, shape_, large_);  // before any datatype is made
    regular(recv_, a.recvbuf, a.recvcount, a.recvtype);
    if (in_place_)
      send_.buf = MPI_IN_PLACE;
    else
      regular(send_, a.sendbuf, a.sendcount, a.sendtype);
  }

  // Alltoallv (nsend = nrecv = P) or the three neighbor calls (outdegree, indegree).
  SystemCall(Collective c, const AlltoallvArgs& a, int nsend, int nrecv, bool keep)
      : collective_(c), keep_(keep) {
    in_place_ = a.in_place();
    large_ = a.large && kHaveLargeCount;
    if (a.regular) {
      slots_ = slots_of(collective_, shape_, large_);
      regular(recv_, a.recv.buf, a.recvcount, a.recv.type);
      regular(send_, a.send.buf, a.sendcount, a.send.type);
      return;
    }
    shape_ = a.recv.w ? Shape::W : Shape::V;
    // Without _c functions, a v call with a count or displacement beyond an int is a w call.
    if (!large_ && shape_ == Shape::V) {
      bool fit = true;
      for (const auto& [s, n] : {std::make_pair(&a.recv, nrecv), std::make_pair(&a.send, nsend)})
        for (int i = 0; i < n && fit && !(s == &a.send && in_place_); ++i)
          fit = fits_int(s->counts[std::size_t(i)]) && fits_int(s->displs[std::size_t(i)]);
      if (!fit) shape_ = Shape::W;
    }
    slots_ = slots_of(collective_, shape_, large_);
    blocks(recv_, a.recv, nrecv);
    if (in_place_)
      send_ = recv_, send_.buf = MPI_IN_PLACE;  // MPI reads the arrays all the same
    else
      blocks(send_, a.send, nsend);
  }

  ~SystemCall() {
    int finalized = 0;
    MPI_Finalized(&finalized);
    if (!finalized)
      for (MPI_Datatype& t : made_) MPI_Type_free(&t);
  }
  SystemCall(const SystemCall&) = delete;
  SystemCall& operator=(const SystemCall&) = delete;

  // The arrays and datatypes it holds (what the MPI library keeps for the call is its own).
  Memory memory() const {
    Memory m;
    m.bytes = sizeof(*this);
    for (const Side* side : {&send_, &recv_}) {
      auto vec = [](const auto& v) { return std::int64_t(v.capacity() * sizeof(v[0])); };
      m.bytes += vec(side->counts) + vec(side->displs) + vec(side->ccounts) + vec(side->adispls) +
                 vec(side->types);
    }
    m.datatypes = std::int64_t(made_.size() + kept_.size());
    return m;
  }

  int blocking(MPI_Comm comm) const { return slots_->blocking(send_, recv_, comm, nullptr); }

  int nonblocking(MPI_Comm comm, MPI_Request* q) const {
    return slots_->nonblocking(send_, recv_, comm, q);
  }

  // The persistent form, when MPI has one (MPI-4's, Open MPI 5's under the same names, or Open
  // MPI 4.1's pcollreq extension for alltoall(v,w)): creates *q and returns true; else false.
  bool persistent(MPI_Comm comm, MPI_Request* q) const {
    if (!slots_->persistent) return false;
    MPIA_CHECK(slots_->persistent(send_, recv_, comm, q));
    return true;
  }

 private:
  // The datatype the call uses for the caller's t: a duplicate when the call is kept, unless
  // predefined (it cannot go away; and a derived type keeps the MPI library's request holding
  // it, which Open MPI 4.1 releases at completion by asking the communicator's neighbors --
  // after a free of a topology communicator, a segfault).
  MPI_Datatype own(MPI_Datatype t) {
    if (!keep_ || predefined(t)) return t;
    for (std::size_t i = 0; i < users_.size(); ++i)
      if (users_[i] == t) return kept_[i]->get();
    kept_.push_back(std::make_unique<TypeHandle>(t));
    users_.push_back(t);
    return kept_.back()->get();
  }

  void regular(Side& s, const void* buf, std::int64_t count, MPI_Datatype type) {
    s.buf = const_cast<void*>(buf);
    s.type = own(type);
    s.ccount = MPI_Count(count);
    if (!large_) s.type = count_type(count, s.type, s.count, made_);
  }

  void blocks(Side& s, const BlockSide& b, int n) {
    s.buf = const_cast<void*>(b.buf);
    const std::size_t m = std::size_t(n) + 1;
    if (shape_ == Shape::V) s.type = own(b.type);
    MPI_Aint lb = 0, extent = 0;
    if (shape_ != Shape::W || !b.w) MPIA_CHECK(MPI_Type_get_extent(b.type, &lb, &extent));
    if (large_) {
      s.ccounts.assign(m, 0);
      s.adispls.assign(m, 0);
      if (shape_ == Shape::W) s.types.assign(m, MPI_BYTE);
      for (int i = 0; i < n; ++i) {
        s.ccounts[std::size_t(i)] = MPI_Count(b.counts[std::size_t(i)]);
        s.adispls[std::size_t(i)] = MPI_Aint(b.displs[std::size_t(i)]);
        if (shape_ == Shape::W) s.types[std::size_t(i)] = own(b.types[std::size_t(i)]);
      }
      return;
    }
    s.counts.assign(m, 0);
    s.displs.assign(m, 0);
    if (shape_ == Shape::V) {
      for (int i = 0; i < n; ++i) {
        s.counts[std::size_t(i)] = int(b.counts[std::size_t(i)]);
        s.displs[std::size_t(i)] = int(b.displs[std::size_t(i)]);
      }
      return;
    }
    // W: each block narrowed to what an int counts; displacements in bytes (MPI_Aint), or, for
    // MPI_Alltoallw, inside the block's datatype.
    s.adispls.assign(m, 0);
    s.types.assign(m, MPI_BYTE);
    for (int i = 0; i < n; ++i) {
      const std::size_t k = std::size_t(i);
      const std::int64_t count = b.counts[k];
      MPI_Aint displ = MPI_Aint(b.displs[k]);
      if (!b.w) displ *= extent;
      if (collective_ == Collective::Alltoallv && b.w && (in_place_ || n > 1) && fits_int(count) &&
          fits_int(displ)) {
        // MPIX_Alltoallw's own block, as MPI_Alltoallw takes it (int byte displacements), with
        // no datatype made per call; and in place always: MPICH 4.0's in-place MPI_Ialltoallw
        // mishandles a block placed inside its type (true lower bound above 0). Placed below
        // only on one rank out of place: Open MPI 4.1's MPI_Alltoallw there (coll/self) scales
        // byte displacements by the extent, which a type placed at displacement 0 is immune to.
        s.counts[k] = int(count);
        s.displs[k] = int(displ);
        s.types[k] = own(b.types[k]);
        continue;
      }
      MPI_Datatype t = count_type(count, own(b.type_at(k)), s.counts[k], made_);
      if (collective_ == Collective::Alltoallv && s.counts[k] > 0) {
        MPI_Datatype placed;
        MPIA_CHECK(MPI_Type_create_struct(1, &s.counts[k], &displ, &t, &placed));
        made_.push_back(placed);
        MPIA_CHECK(MPI_Type_commit(&placed));
        t = placed;
        s.counts[k] = 1;
        displ = 0;
      }
      s.types[k] = t;
      s.adispls[k] = displ;
    }
  }

  Collective collective_;
  const SystemSlots* slots_ = nullptr;
  Shape shape_ = Shape::Regular;
  bool large_ = false;  // the _c functions
  bool in_place_ = false;
  bool keep_;
  Side send_, recv_;
  std::vector<MPI_Datatype> users_;
  std::vector<std::unique_ptr<TypeHandle>> kept_;  // duplicates of users_
  std::vector<MPI_Datatype> made_;                 // count_type's and MPI_Alltoallw's
};

// A call handed to the MPI library: its persistent form when it has one (SystemCall::persistent),
// else the nonblocking call at each start. (Not a barrier and then the blocking call, though
// where the nonblocking form is wrong that would be right: two such requests of one
// communicator, driven in different orders on different ranks, would enter their blocking calls
// in different orders.)
class SystemOperation : public Operation {
 public:
  // Named as its record is (collective/all/system.cpp).
  // blocking: each start is as run_system (system.hpp): a nonblocking barrier, completed while
  // the running operations are driven, then the blocking call -- for the plans of blocking calls,
  // which every rank starts in the same call. Otherwise the persistent request is made here:
  // collective, so never where ranks lower plans alone.
  SystemOperation(std::unique_ptr<SystemCall> call, std::shared_ptr<PrivateComm> comm,
                  bool blocking, bool once)
      : comm_(std::move(comm)), call_(std::move(call)), blocking_(blocking) {
    algorithm_ = "system";
    if (!blocking_ && !once) persistent_ = call_->persistent(comm_->get(), &request_);
  }
  // Charged at each start of the MPI library's persistent or nonblocking call.
  void charge_at_start(double seconds) { unpaid_ = seconds; }
  ~SystemOperation() override {
    int finalized = 0;
    MPI_Finalized(&finalized);
    if (!finalized && persistent_ && request_ != MPI_REQUEST_NULL) MPI_Request_free(&request_);
  }

  Memory memory() const override {
    Memory m = call_->memory();
    m.bytes += sizeof(*this);
    m.mpi_requests += persistent_;
    return m;
  }

 protected:
  // A failure to start or complete is the request's error; a failed MPI request counts as
  // complete.
  bool do_start() override {
    if (blocking_) {
      if (!errors_.note(MPI_Ibarrier(comm_->get(), &request_), "MPI_Ibarrier")) return true;
      return do_progress(false);
    }
    platform::charge(unpaid_);
    const int rc = persistent_ ? MPI_Start(&request_) : call_->nonblocking(comm_->get(), &request_);
    return !errors_.note(rc, persistent_ ? "MPI_Start" : "the MPI library's collective");
  }

  bool do_progress(bool block) override {
    if (blocking_) {
      int flag = 1;
      if (block)
        errors_.note(PMPI_Wait(&request_, MPI_STATUS_IGNORE), "MPI_Wait (barrier)");
      else if (!errors_.note(PMPI_Test(&request_, &flag, MPI_STATUS_IGNORE), "MPI_Test (barrier)"))
        return true;  // a failed barrier counts as complete
      if (!flag) return false;
      errors_.note(call_->blocking(comm_->get()), "the MPI library's collective");
      return true;
    }
    if (block) {
      errors_.note(PMPI_Wait(&request_, MPI_STATUS_IGNORE), "MPI_Wait");
      return true;
    }
    int flag = 0;
    const int rc = PMPI_Test(&request_, &flag, MPI_STATUS_IGNORE);
    return !errors_.note(rc, "MPI_Test") || flag != 0;
  }

 private:
  std::shared_ptr<PrivateComm> comm_;
  std::unique_ptr<SystemCall> call_;
  MPI_Request request_ = MPI_REQUEST_NULL;
  bool blocking_ = false, persistent_ = false;
  double unpaid_ = 0;  // seconds (platform::unpaid_receive_seconds)
};

// What the engine's receives would be charged for the messages of this call that the MPI
// library's own collective does not pay for (platform::unpaid_receive_seconds): one from every
// other rank, as SMPI's nonblocking alltoall and alltoallv post them (zero-byte ones too: its
// sparse alltoallv costs what its dense one does). Not for the neighbor calls: SMPI's stand-ins
// for them (smpi/compat.cpp) charge their own receives. Nor for a blocking call's operation,
// SMPI's blocking collective, whose receives depend on the algorithm SMPI selects: the lab's
// baselines pay none (scripts/smpi/README.md).
double unpaid_seconds(const LibraryCall& c) {
  if (c.blocking || c.collective == Collective::NeighborAlltoallv || !platform::receives_unpaid())
    return 0;
  int rank = 0, size = 1;
  MPIA_CHECK(MPI_Comm_rank(c.comm->get(), &rank));
  MPIA_CHECK(MPI_Comm_size(c.comm->get(), &size));
  if (c.regular)
    return (size - 1) *
           platform::unpaid_receive_seconds(c.regular->recvcount * type_size(c.regular->recvtype));
  const AlltoallvArgs& a = *c.blocks;
  if (a.regular)
    return (size - 1) * platform::unpaid_receive_seconds(a.recvcount * type_size(a.recv.type));
  double seconds = 0;
  for (int i = 0; i < size; ++i)
    if (i != rank)
      seconds += platform::unpaid_receive_seconds(a.recv.counts[std::size_t(i)] *
                                                  type_size(a.recv.type_at(std::size_t(i))));
  return seconds;
}

}  // namespace

std::unique_ptr<Operation> library_operation(const LibraryCall& c) {
  // A blocking call's operation is run and dropped within the call, or kept by the cache of
  // blocking calls only for predefined datatypes: it need not duplicate them.
  const bool keep = !c.blocking;
  std::unique_ptr<SystemCall> call =
      c.collective == Collective::Alltoall
          ? std::make_unique<SystemCall>(*c.regular, keep)
          : std::make_unique<SystemCall>(c.collective, *c.blocks, c.nsend, c.nrecv, keep);
  auto op = std::make_unique<SystemOperation>(std::move(call), c.comm, c.blocking, c.once);
  op->charge_at_start(unpaid_seconds(c));
  return op;
}

}  // namespace mpia
