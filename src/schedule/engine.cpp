#include "schedule/engine.hpp"

#include "util/error.hpp"

#include <algorithm>
#include <climits>
#include <cstring>

namespace mpia {

namespace {

bool is_predefined(MPI_Datatype t) {
  int ni, na, nd, combiner;
  MPIA_CHECK(MPI_Type_get_envelope(t, &ni, &na, &nd, &combiner));
  return combiner == MPI_COMBINER_NAMED;
}

// The one base type of a dup/contiguous type, or MPI_DATATYPE_NULL.
MPI_Datatype single_base(MPI_Datatype t, int& combiner) {
  int ni, na, nd;
  MPIA_CHECK(MPI_Type_get_envelope(t, &ni, &na, &nd, &combiner));
  if ((combiner != MPI_COMBINER_DUP && combiner != MPI_COMBINER_CONTIGUOUS) || nd != 1)
    return MPI_DATATYPE_NULL;
  std::vector<int> ints(ni);
  std::vector<MPI_Aint> addrs(na);
  MPI_Datatype base;
  MPIA_CHECK(MPI_Type_get_contents(t, ni, na, nd, ints.data(), addrs.data(), &base));
  return base;
}

// MPICH 4.0.2 (ch4 with yaksa, Debian's build) fails a receive into a derived type of mixed
// basic types (struct {char; double}) with MPI_ERR_TRUNCATE when the message was sent as
// contiguous bytes and is larger than about 8 KB; the same transfer between two derived types,
// or into a vector of doubles, works, and Open MPI gets all of them right. Our schedules send
// staged and scratch data as MPI_PACKED, so under MPICH a receive that touches a derived-type
// region lands in staging and is unpacked by MPI_Unpack after it completes: one copy more,
// which MPICH's own receive of a non-contiguous type makes anyway. Found by the neighbor
// locality tests; reproduced standalone with MPI_Send/MPI_Recv; covered by
// AlltoallEdge.LargeDerivedBlocks in test/mpi/test_alltoall.cpp.
#if defined(MPICH_VERSION)
constexpr bool kStageDerivedReceives = true;
#else
constexpr bool kStageDerivedReceives = false;
#endif

}  // namespace

bool is_dense(MPI_Datatype t) {
  int size;
  MPI_Aint lb, extent, tlb, textent;
  MPIA_CHECK(MPI_Type_size(t, &size));
  MPIA_CHECK(MPI_Type_get_extent(t, &lb, &extent));
  MPIA_CHECK(MPI_Type_get_true_extent(t, &tlb, &textent));
  if (MPI_Aint(size) != extent || extent != textent || lb != tlb) return false;
  // Same footprint as its bytes: dense if the type map is in address order. Predefined types
  // are; dup and contiguous inherit it from their base; anything else we do not assume.
  int combiner;
  if (is_predefined(t)) return true;
  MPI_Datatype base = single_base(t, combiner);
  if (base == MPI_DATATYPE_NULL) return false;
  const bool dense = is_dense(base);
  if (!is_predefined(base)) MPI_Type_free(&base);
  return dense;
}

LoweredSchedule::LoweredSchedule(const Schedule& s, const Bindings& b)
    : policy_(s.policy), lowering_(s.lowering), send_(b.send), recv_(b.recv), comm_(b.comm), tag_(b.tag) {
  try {
    if (s.scratch_bytes > 0) scratch_.reset(new char[s.scratch_bytes]);
    // Staging: sized in a first pass so that regions can point into one allocation.
    std::int64_t staging_bytes = 0;
    {
      for (const Round& r : s.rounds)
        for (const Exchange& x : r.exchanges)
          for (const Transfer* t : {&x.send, &x.recv})
            if (t->active() && staged(regions(t->pieces), t == &x.send)) staging_bytes += t->bytes();
    }
    if (staging_bytes > 0) staging_.reset(new char[staging_bytes]);
    std::int64_t staging_at = 0;
    std::size_t widest = 0;
    for (const Round& r : s.rounds) {
      rounds_.emplace_back();  // owned before any request is created: free_all sees them all
      LoweredRound& lr = rounds_.back();
      for (const Copy& c : r.copies) {
        if (c.from.bytes == 0) continue;
        LocalStep step{resolve(c.from), resolve(c.to)};
        if (!step.from.dense && !step.to.dense)
          bounce_bytes_ = std::max(bounce_bytes_, c.from.bytes);
        // Coalesce runs of contiguous memcpy copies (rotations of dense blocks).
        if (!lr.before.empty() && step.from.dense && step.to.dense) {
          LocalStep& last = lr.before.back();
          if (last.from.dense && last.to.dense &&
              last.from.addr + last.from.bytes == step.from.addr &&
              last.to.addr + last.to.bytes == step.to.addr) {
            last.from.bytes += step.from.bytes;
            last.to.bytes += step.to.bytes;
            continue;
          }
        }
        lr.before.push_back(step);
      }
      for (const Exchange& x : r.exchanges) {
        lr.send.push_back(MPI_REQUEST_NULL);
        lr.recv.push_back(MPI_REQUEST_NULL);
        if (x.send.active() && x.send.bytes() > 0) lower_transfer(x.send, true, lr, staging_at);
        if (x.recv.active() && x.recv.bytes() > 0) lower_transfer(x.recv, false, lr, staging_at);
      }
      widest = std::max(widest, r.exchanges.size());
    }
    if (bounce_bytes_ > 0) bounce_.reset(new char[bounce_bytes_]);
    std::size_t slots = policy_.window > 0 ? std::min<std::size_t>(policy_.window, widest) : widest;
    window_.assign(2 * slots, MPI_REQUEST_NULL);
    pending_.assign(slots, 0);
  } catch (...) {
    free_all();
    throw;
  }
}

LoweredSchedule::~LoweredSchedule() { free_all(); }

void LoweredSchedule::free_all() noexcept {
  int finalized = 0;
  MPI_Finalized(&finalized);
  if (finalized) return;
  for (LoweredRound& r : rounds_)
    for (auto* reqs : {&r.send, &r.recv})
      for (MPI_Request& q : *reqs)
        if (q != MPI_REQUEST_NULL) MPI_Request_free(&q);
  for (MPI_Datatype& t : owned_types_) MPI_Type_free(&t);
  owned_types_.clear();
  rounds_.clear();
}

LoweredSchedule::Region LoweredSchedule::resolve(const Piece& p) const {
  Region r;
  r.bytes = p.bytes;
  if (p.slot == Slot::Scratch) {
    r.addr = scratch_.get() + p.offset;
    return r;
  }
  const BlockBuffer& b = p.slot == Slot::Send ? send_ : recv_;
  r.addr = b.base + b.displacement[p.block];
  r.dense = b.dense;
  if (r.dense) {
    r.addr += b.true_lb;
  } else {
    r.count = b.count[p.block];
    r.type = b.type;
  }
  return r;
}

std::vector<LoweredSchedule::Region> LoweredSchedule::regions(const std::vector<Piece>& pieces) const {
  std::vector<Region> out;
  for (const Piece& p : pieces) {
    if (p.bytes == 0) continue;
    Region r = resolve(p);
    if (!out.empty() && r.dense && out.back().dense && out.back().addr + out.back().bytes == r.addr) {
      out.back().bytes += r.bytes;
      continue;
    }
    out.push_back(r);
  }
  return out;
}

// Whether a transfer moves through staging: several regions under the Pack lowering, or (see
// kStageDerivedReceives) a receive into any derived-type region.
bool LoweredSchedule::staged(const std::vector<Region>& rs, bool is_send) const {
  if (rs.size() > 1 && lowering_ == Lowering::Pack) return true;
  if (!is_send && kStageDerivedReceives)
    for (const Region& r : rs)
      if (!r.dense) return true;
  return false;
}

// Bytes travel as MPI_PACKED: a message sent with any type may be received as MPI_PACKED and
// packed data may be received with any type of the same signature, so raw bytes on one side
// and the user's datatype on the other is legal MPI. Beyond INT_MAX bytes, a derived type of
// 1 GiB chunks keeps the count an int.
MPI_Datatype LoweredSchedule::byte_type(std::int64_t bytes, int& count) {
  if (bytes <= INT_MAX) {
    count = int(bytes);
    return MPI_PACKED;
  }
  const std::int64_t chunk = std::int64_t(1) << 30;
  MPI_Datatype gib, whole;
  MPIA_CHECK(MPI_Type_contiguous(int(chunk), MPI_PACKED, &gib));
  owned_types_.push_back(gib);
  const int n = int(bytes / chunk), rest = int(bytes % chunk);
  int lens[2] = {n, rest};
  MPI_Aint displs[2] = {0, MPI_Aint(n) * MPI_Aint(chunk)};
  MPI_Datatype types[2] = {gib, MPI_PACKED};
  MPIA_CHECK(MPI_Type_create_struct(rest > 0 ? 2 : 1, lens, displs, types, &whole));
  owned_types_.push_back(whole);
  MPIA_CHECK(MPI_Type_commit(&whole));
  count = 1;
  return whole;
}

void LoweredSchedule::lower_transfer(const Transfer& t, bool is_send, LoweredRound& round,
                                     std::int64_t& staging_at) {
  std::vector<Region> rs = regions(t.pieces);
  void* addr = nullptr;
  int count = 0;
  MPI_Datatype type = MPI_DATATYPE_NULL;
  if (staged(rs, is_send)) {
    char* stage = staging_.get() + staging_at;
    std::int64_t at = 0;
    for (const Region& r : rs) {
      Region s;
      s.addr = stage + at;
      s.bytes = r.bytes;
      if (is_send)
        round.before.push_back({r, s});
      else
        round.after.push_back({s, r});
      at += r.bytes;
    }
    staging_at += at;
    addr = stage;
    type = byte_type(at, count);
  } else if (rs.size() == 1) {
    addr = rs[0].addr;
    if (rs[0].dense) {
      type = byte_type(rs[0].bytes, count);
    } else {
      count = rs[0].count;
      type = rs[0].type;
    }
  } else {
    // One struct datatype over absolute addresses: the transfer touches user, receive and
    // scratch memory directly, with no copy (zero-copy Bruck, seed 000 section 3.3).
    std::vector<int> lens;
    std::vector<MPI_Aint> displs;
    std::vector<MPI_Datatype> types;
    for (const Region& r : rs) {
      MPI_Aint a;
      MPIA_CHECK(MPI_Get_address(r.addr, &a));
      int n;
      MPI_Datatype ty = r.dense ? byte_type(r.bytes, n) : r.type;
      if (!r.dense) n = r.count;
      lens.push_back(n);
      displs.push_back(a);
      types.push_back(ty);
    }
    MPIA_CHECK(MPI_Type_create_struct(int(lens.size()), lens.data(), displs.data(), types.data(),
                                      &type));
    owned_types_.push_back(type);
    MPIA_CHECK(MPI_Type_commit(&type));
    addr = MPI_BOTTOM;
    count = 1;
  }
  MPI_Request& req = is_send ? round.send.back() : round.recv.back();
  if (is_send)
    MPIA_CHECK(MPI_Send_init(addr, count, type, t.peer, tag_, comm_, &req));
  else
    MPIA_CHECK(MPI_Recv_init(addr, count, type, t.peer, tag_, comm_, &req));
}

void LoweredSchedule::run(const std::vector<LocalStep>& steps) {
  for (const LocalStep& s : steps) {
    if (s.from.dense && s.to.dense) {
      std::memcpy(s.to.addr, s.from.addr, std::size_t(s.from.bytes));
      continue;
    }
    if (s.from.bytes <= INT_MAX) {
      const int n = int(s.from.bytes);
      int pos = 0;
      if (s.from.dense) {
        MPIA_CHECK(MPI_Unpack(s.from.addr, n, &pos, s.to.addr, s.to.count, s.to.type, comm_));
      } else if (s.to.dense) {
        MPIA_CHECK(MPI_Pack(s.from.addr, s.from.count, s.from.type, s.to.addr, n, &pos, comm_));
      } else {
        MPIA_CHECK(MPI_Pack(s.from.addr, s.from.count, s.from.type, bounce_.get(), n, &pos, comm_));
        pos = 0;
        MPIA_CHECK(MPI_Unpack(bounce_.get(), n, &pos, s.to.addr, s.to.count, s.to.type, comm_));
      }
    } else {
      run_large(s);
    }
  }
}

// A typed block above 2 GiB: MPI_Pack and MPI_Unpack take int sizes, so move it in runs of
// whole elements below that. (Typed on both ends: through the bounce buffer, which is as
// large as the block, packed in runs of the source's elements, unpacked in the target's.)
void LoweredSchedule::run_large(const LocalStep& s) {
  auto in_runs = [&](const Region& typed, auto&& move) {
    const std::int64_t elem = s.from.bytes / std::max(typed.count, 1);
    if (elem > INT_MAX) fail(MPI_ERR_COUNT, "mpi-advance: one datatype element above 2 GiB");
    MPI_Aint lb, extent;
    MPIA_CHECK(MPI_Type_get_extent(typed.type, &lb, &extent));
    const std::int64_t per_run = INT_MAX / std::max<std::int64_t>(elem, 1);
    for (std::int64_t done = 0; done < typed.count;) {
      const int k = int(std::min<std::int64_t>(per_run, typed.count - done));
      move(typed.addr + MPI_Aint(done) * extent, k, done * elem, int(k * elem));
      done += k;
    }
  };
  char* packed = s.from.dense ? s.from.addr : s.to.dense ? s.to.addr : bounce_.get();
  if (!s.from.dense)
    in_runs(s.from, [&](char* at, int k, std::int64_t offset, int n) {
      int pos = 0;
      MPIA_CHECK(MPI_Pack(at, k, s.from.type, packed + offset, n, &pos, comm_));
    });
  if (!s.to.dense)
    in_runs(s.to, [&](char* at, int k, std::int64_t offset, int n) {
      int pos = 0;
      MPIA_CHECK(MPI_Unpack(packed + offset, n, &pos, at, k, s.to.type, comm_));
    });
}

void LoweredSchedule::start() {
  round_ = 0;
  active_ = true;
  enter_round();
}

void LoweredSchedule::enter_round() {
  while (round_ < rounds_.size()) {
    LoweredRound& r = rounds_[round_];
    run(r.before);
    next_ = 0;
    inflight_ = 0;
    std::fill(window_.begin(), window_.end(), MPI_REQUEST_NULL);
    std::fill(pending_.begin(), pending_.end(), 0);
    fill_window();
    if (inflight_ > 0) return;
    run(r.after);
    ++round_;
  }
  active_ = false;
}

// Puts the next exchanges that have anything to move into a free window slot.
void LoweredSchedule::fill(std::size_t slot) {
  LoweredRound& r = rounds_[round_];
  while (next_ < r.send.size()) {
    const std::size_t e = next_++;
    window_[2 * slot] = r.send[e];
    window_[2 * slot + 1] = r.recv[e];
    pending_[slot] = 0;
    // Receive first so that an eager message finds its buffer posted.
    for (std::size_t k : {std::size_t(1), std::size_t(0)}) {
      MPI_Request& q = window_[2 * slot + k];
      if (q == MPI_REQUEST_NULL) continue;
      MPIA_CHECK(MPI_Start(&q));
      ++pending_[slot];
    }
    if (pending_[slot] > 0) {
      ++inflight_;
      return;
    }
  }
}

void LoweredSchedule::fill_window() {
  for (std::size_t s = 0; s < pending_.size() && next_ < rounds_[round_].send.size(); ++s)
    if (pending_[s] == 0) fill(s);
}

// Completes at least one request (or, without block, as many as are done now) and refills the
// window per the policy. Returns false when nothing completed.
bool LoweredSchedule::complete_some(bool block) {
  const int n = int(window_.size());
  if (policy_.completion == Completion::Waitall) {
    if (block) {
      MPIA_CHECK(MPI_Waitall(n, window_.data(), MPI_STATUSES_IGNORE));
    } else {
      int flag = 0;
      MPIA_CHECK(MPI_Testall(n, window_.data(), &flag, MPI_STATUSES_IGNORE));
      if (!flag) return false;
    }
    std::fill(window_.begin(), window_.end(), MPI_REQUEST_NULL);
    std::fill(pending_.begin(), pending_.end(), 0);
    inflight_ = 0;
    fill_window();
    return true;
  }
  int index = MPI_UNDEFINED, flag = 0;
  if (policy_.completion == Completion::Waitany && block) {
    MPIA_CHECK(MPI_Waitany(n, window_.data(), &index, MPI_STATUS_IGNORE));
    flag = 1;
  } else {
    // Testany never blocks inside MPI: with block it polls until something completes.
    do {
      MPIA_CHECK(MPI_Testany(n, window_.data(), &index, &flag, MPI_STATUS_IGNORE));
    } while (block && !flag);
    if (!flag) return false;
  }
  if (index == MPI_UNDEFINED) fail(MPI_ERR_INTERN, "mpi-advance: engine lost track of requests");
  window_[index] = MPI_REQUEST_NULL;  // persistent: the handle stays valid in rounds_
  const std::size_t slot = std::size_t(index) / 2;
  if (--pending_[slot] == 0) {
    --inflight_;
    fill(slot);
  }
  return true;
}

bool LoweredSchedule::progress(bool block) {
  while (active_) {
    if (inflight_ == 0) {
      run(rounds_[round_].after);
      ++round_;
      enter_round();
      continue;
    }
    if (!complete_some(block)) return false;
  }
  return true;
}

}  // namespace mpia
