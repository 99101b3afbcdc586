#include "schedule/engine.hpp"

#include "util/error.hpp"
#include "util/platform.hpp"

#include <algorithm>
#include <climits>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <string>

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
// staged and scratch data as MPI_PACKED, so where the bug may be, a receive that touches a
// derived-type region lands in staging and is unpacked by MPI_Unpack after it completes: one
// copy more, which MPICH's own receive of a non-contiguous type makes anyway. Found by the
// neighbor locality tests; reproduced standalone with MPI_Send/MPI_Recv between two processes
// (not with a message to self, so it cannot be probed locally); covered by
// AlltoallEdge.LargeDerivedBlocks in test/mpi/test_alltoall.cpp.
//
// Where: MPICH itself (its library version string starts "MPICH Version:"; derivatives such as
// Intel MPI, MVAPICH or Cray MPICH say otherwise and are not affected by this choice) from 3.4,
// the first release on yaksa, through 4.0.x, where it was seen. Decided from the library that
// runs, not the headers we were compiled with.
// Bytes travel as MPI_PACKED: a message sent with any type may be received as MPI_PACKED and
// packed data may be received with any type of the same signature, so raw bytes on one side
// and the user's datatype on the other is legal MPI. Beyond INT_MAX bytes, count_type's type
// keeps the count an int.
MPI_Datatype packed_type(std::int64_t bytes, int& count, std::vector<MPI_Datatype>& owned) {
  return count_type(bytes, MPI_PACKED, count, owned);
}

bool stage_derived_receives() {
  static const bool on = [] {
    char text[MPI_MAX_LIBRARY_VERSION_STRING];
    int len = 0;
    if (MPI_Get_library_version(text, &len) != MPI_SUCCESS) return false;
    const std::string v(text, std::size_t(len));
    const std::string key = "MPICH Version:";
    if (v.compare(0, key.size(), key) != 0) return false;
    std::size_t at = key.size();
    while (at < v.size() && (v[at] == ' ' || v[at] == '\t')) ++at;
    int major = 0, minor = 0;
    if (std::sscanf(v.c_str() + at, "%d.%d", &major, &minor) != 2) return false;
    const int version = major * 100 + minor;
    return version >= 304 && version < 401;
  }();
  return on;
}

}  // namespace

MPI_Datatype count_type(std::int64_t count, MPI_Datatype type, int& n,
                        std::vector<MPI_Datatype>& owned) {
  if (count <= INT_MAX) {
    n = int(count);
    return type;
  }
  // Runs of 2^30 elements, then the rest.
  const std::int64_t run = std::int64_t(1) << 30, runs = count / run, rest = count % run;
  if (runs > INT_MAX) fail(MPI_ERR_COUNT, "mpi-advance: count " + std::to_string(count));
  MPI_Aint lb, extent;
  MPIA_CHECK(MPI_Type_get_extent(type, &lb, &extent));
  MPI_Datatype piece, whole, sized;
  MPIA_CHECK(MPI_Type_contiguous(int(run), type, &piece));
  owned.push_back(piece);
  int lens[2] = {int(runs), int(rest)};
  MPI_Aint displs[2] = {0, MPI_Aint(runs * run) * extent};
  MPI_Datatype types[2] = {piece, type};
  MPIA_CHECK(MPI_Type_create_struct(rest > 0 ? 2 : 1, lens, displs, types, &whole));
  owned.push_back(whole);
  // A struct's extent may be padded for alignment: set it to what count elements span.
  MPIA_CHECK(MPI_Type_create_resized(whole, lb, MPI_Aint(count) * extent, &sized));
  owned.push_back(sized);
  MPIA_CHECK(MPI_Type_commit(&sized));
  n = 1;
  return sized;
}

bool is_dense(MPI_Datatype t) {
  const std::int64_t size = type_size(t);
  MPI_Aint lb, extent, tlb, textent;
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
    : policy_(s.policy),
      lowering_(s.lowering),
      send_(b.send),
      recv_(b.recv),
      comm_(b.comm),
      tag_(b.tag),
      errors_(b.errors) {
  if (!errors_) fail(MPI_ERR_INTERN, "mpi-advance: schedule lowered without an error record");
  MPIA_CHECK(MPI_Comm_rank(comm_, &me_));
  try {
    if (s.scratch_bytes > 0) scratch_.reset(new char[s.scratch_bytes]);
    scratch_bytes_ = s.scratch_bytes;
    // Staging: sized in a first pass so that regions can point into one allocation. Rounds
    // run one after another (a round's unpacking is done before the next round packs), so
    // they share it: as large as the round that stages most, not the sum over rounds.
    std::int64_t staging_bytes = 0;
    for (const Round& r : s.rounds) {
      std::int64_t round_bytes = 0;
      for (const Exchange& x : r.exchanges)
        for (const Transfer* t : {&x.send, &x.recv})
          if (t->active() && staged(regions(t->pieces), t == &x.send)) round_bytes += t->bytes();
      staging_bytes = std::max(staging_bytes, round_bytes);
    }
    if (staging_bytes > 0) staging_.reset(new char[staging_bytes]);
    staging_bytes_ = staging_bytes;
    std::size_t widest = 0;
    rounds_.reserve(s.rounds.size());
    for (const Round& r : s.rounds) {
      std::int64_t staging_at = 0;
      rounds_.emplace_back();  // owned before any request is created: free_all sees them all
      LoweredRound& lr = rounds_.back();
      for (const Copy& c : r.copies) {
        if (c.from.bytes == 0) continue;
        LocalStep step{resolve(c.from), resolve(c.to)};
        if (!step.from.dense && !step.to.dense)
          bounce_bytes_ = std::max(bounce_bytes_, c.from.bytes);
        append(lr.before, step);
      }
      for (const Exchange& x : r.exchanges) {
        lr.send.push_back(MPI_REQUEST_NULL);
        lr.recv.push_back(MPI_REQUEST_NULL);
        lr.send_recipe.emplace_back();
        lr.recv_recipe.emplace_back();
        if (x.send.active() && x.send.bytes() > 0) lower_transfer(x.send, true, lr, staging_at);
        if (x.recv.active() && x.recv.bytes() > 0) lower_transfer(x.recv, false, lr, staging_at);
      }
      widest = std::max(widest, r.exchanges.size());
      lr.before.shrink_to_fit();
      lr.after.shrink_to_fit();
    }
    send_ = recv_ = nullptr;  // the caller's, valid while lowering only
    if (bounce_bytes_ > 0) bounce_.reset(new char[bounce_bytes_]);
    std::size_t slots = policy_.window > 0 ? std::min<std::size_t>(policy_.window, widest) : widest;
    window_.assign(2 * slots, MPI_REQUEST_NULL);
    pending_.assign(slots, 0);
    exchange_.assign(slots, 0);
    direct_ = rounds_.size() == 1 &&
              (policy_.window <= 0 || std::size_t(policy_.window) >= rounds_[0].send.size());
  } catch (...) {
    free_all();
    throw;
  }
}

LoweredSchedule::~LoweredSchedule() { free_all(); }

Memory LoweredSchedule::memory() const {
  Memory m;
  auto vec = [](const auto& v) { return std::int64_t(v.capacity() * sizeof(v[0])); };
  m.bytes = sizeof(*this) + scratch_bytes_ + staging_bytes_ + bounce_bytes_ + vec(rounds_) +
            vec(owned_types_) + vec(window_) + vec(pending_) + vec(exchange_);
  for (const LoweredRound& r : rounds_) {
    m.bytes += vec(r.before) + vec(r.after) + vec(r.send) + vec(r.recv) + vec(r.send_recipe) +
               vec(r.recv_recipe);
    // Persistent requests: every receive and every send not posted with MPI_Isend at each start.
    for (std::size_t e = 0; e < r.send.size(); ++e) {
      m.mpi_requests += r.recv_recipe[e].peer != MPI_PROC_NULL;
      m.mpi_requests += r.send_recipe[e].peer != MPI_PROC_NULL && !r.send_recipe[e].isend;
    }
  }
  m.datatypes = std::int64_t(owned_types_.size());
  return m;
}

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
  const BlockBuffer& b = p.slot == Slot::Send ? *send_ : *recv_;
  const BlockType& t = b.type(std::size_t(p.block));
  r.addr = b.base + b.displacement_of(std::size_t(p.block));
  r.dense = t.dense;
  if (r.dense) {
    r.addr += t.true_lb;
  } else {
    r.count = int(b.count_of(std::size_t(p.block)));  // an int for a type that is not dense
    r.type = t.type;
  }
  return r;
}

std::vector<LoweredSchedule::Region> LoweredSchedule::regions(
    const std::vector<Piece>& pieces) const {
  std::vector<Region> out;
  for (const Piece& p : pieces) {
    if (p.bytes == 0) continue;
    Region r = resolve(p);
    if (!out.empty() && r.dense && out.back().dense &&
        out.back().addr + out.back().bytes == r.addr) {
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
  if (!is_send && stage_derived_receives())
    for (const Region& r : rs)
      if (!r.dense) return true;
  return false;
}

MPI_Datatype LoweredSchedule::byte_type(std::int64_t bytes, int& count) {
  return packed_type(bytes, count, owned_types_);
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
        append(round.before, {r, s});
      else
        append(round.after, {s, r});
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
    MPIA_CHECK(
        MPI_Type_create_struct(int(lens.size()), lens.data(), displs.data(), types.data(), &type));
    owned_types_.push_back(type);
    MPIA_CHECK(MPI_Type_commit(&type));
    addr = MPI_BOTTOM;
    count = 1;
  }
  MPI_Request& req = is_send ? round.send.back() : round.recv.back();
  Recipe& recipe = is_send ? round.send_recipe.back() : round.recv_recipe.back();
  recipe = Recipe{addr, count, type, t.peer};
  const bool small = platform::posts_with_isend(t.bytes());
  // Derived: any type but the byte types of a dense region or the staging area.
  const bool derived = !staged(rs, is_send) && !(rs.size() == 1 && rs[0].dense);
  if (is_send && small) small_sends_ = true;
  if (is_send && (small || (derived && platform::isends_derived_types())))
    recipe.isend = true;  // req stays MPI_REQUEST_NULL: fill() posts it
  else if (is_send)
    MPIA_CHECK(MPI_Send_init(addr, count, type, t.peer, tag_, comm_, &req));
  else
    MPIA_CHECK(MPI_Recv_init(addr, count, type, t.peer, tag_, comm_, &req));
}

void LoweredSchedule::append(std::vector<LocalStep>& steps, const LocalStep& s) {
  if (!steps.empty() && s.from.dense && s.to.dense && steps.back().from.dense &&
      steps.back().to.dense) {
    LocalStep& last = steps.back();
    if (last.repeat == 1 && last.from.addr + last.from.bytes == s.from.addr &&
        last.to.addr + last.to.bytes == s.to.addr) {
      last.from.bytes += s.from.bytes;  // contiguous on both ends: one larger copy
      last.to.bytes += s.to.bytes;
      return;
    }
    if (last.from.bytes == s.from.bytes && last.to.bytes == s.to.bytes) {
      auto gap = [](const char* a, const char* b) {
        return std::int64_t(reinterpret_cast<std::uintptr_t>(b) -
                            reinterpret_cast<std::uintptr_t>(a));
      };
      const std::int64_t fs = gap(last.from.addr, s.from.addr), ts = gap(last.to.addr, s.to.addr);
      if (last.repeat == 1) {
        last.from_stride = fs, last.to_stride = ts, last.repeat = 2;
        return;
      }
      if (fs == last.repeat * last.from_stride && ts == last.repeat * last.to_stride) {
        ++last.repeat;
        return;
      }
    }
  }
  steps.push_back(s);
}

void LoweredSchedule::run(const std::vector<LocalStep>& steps) {
  for (const LocalStep& s : steps) {
    if (s.from.dense && s.to.dense) {
      for (std::int64_t i = 0; i < s.repeat; ++i)
        std::memcpy(s.to.addr + i * s.to_stride, s.from.addr + i * s.from_stride,
                    std::size_t(s.from.bytes));
      continue;
    }
    if (s.from.bytes > INT_MAX) {
      run_large(s);
      continue;
    }
    const int n = int(s.from.bytes);
    int pos = 0;
    if (s.from.dense) {
      errors_->note(MPI_Unpack(s.from.addr, n, &pos, s.to.addr, s.to.count, s.to.type, comm_),
                    "MPI_Unpack");
    } else if (s.to.dense) {
      errors_->note(MPI_Pack(s.from.addr, s.from.count, s.from.type, s.to.addr, n, &pos, comm_),
                    "MPI_Pack");
    } else if (errors_->note(
                   MPI_Pack(s.from.addr, s.from.count, s.from.type, bounce_.get(), n, &pos, comm_),
                   "MPI_Pack")) {
      pos = 0;
      errors_->note(MPI_Unpack(bounce_.get(), n, &pos, s.to.addr, s.to.count, s.to.type, comm_),
                    "MPI_Unpack");
    }
  }
}

// A typed block above 2 GiB: MPI_Pack and MPI_Unpack take int sizes, so move it in runs of
// whole elements below that. (Typed on both ends: through the bounce buffer, which is as
// large as the block, packed in runs of the source's elements, unpacked in the target's.) An
// element above 2 GiB cannot be packed at all: such a block moves as one message to self.
void LoweredSchedule::run_large(const LocalStep& s) {
  for (const Region* typed : {&s.from, &s.to})
    if (!typed->dense && s.from.bytes / std::max(typed->count, 1) > INT_MAX) return run_self(s);
  auto in_runs = [&](const Region& typed, auto&& move) {
    const std::int64_t elem = s.from.bytes / std::max(typed.count, 1);
    MPI_Aint lb, extent;
    if (!errors_->note(MPI_Type_get_extent(typed.type, &lb, &extent), "MPI_Type_get_extent"))
      return;
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
      errors_->note(MPI_Pack(at, k, s.from.type, packed + offset, n, &pos, comm_), "MPI_Pack");
    });
  if (!s.to.dense)
    in_runs(s.to, [&](char* at, int k, std::int64_t offset, int n) {
      int pos = 0;
      errors_->note(MPI_Unpack(packed + offset, n, &pos, at, k, s.to.type, comm_), "MPI_Unpack");
    });
}

// Moves a local step as one message from this rank to itself on the plan's tag (schedules never
// send to self, so nothing else can match it): MPI's datatype engine handles any size.
void LoweredSchedule::run_self(const LocalStep& s) {
  std::vector<MPI_Datatype> made;  // the rare path of a >2 GiB element may allocate
  try {
    int scount = s.from.count, rcount = s.to.count;
    MPI_Datatype stype = s.from.dense ? packed_type(s.from.bytes, scount, made) : s.from.type;
    MPI_Datatype rtype = s.to.dense ? packed_type(s.to.bytes, rcount, made) : s.to.type;
    errors_->note(MPI_Sendrecv(s.from.addr, scount, stype, me_, tag_, s.to.addr, rcount, rtype, me_,
                               tag_, comm_, MPI_STATUS_IGNORE),
                  "MPI_Sendrecv");
  } catch (const Error& e) {
    errors_->note(e);
  }
  for (MPI_Datatype& t : made) MPI_Type_free(&t);
}

bool LoweredSchedule::start() {
  round_ = 0;
  active_ = true;
  if (direct_) return start_direct();
  enter_round();
  return !active_;
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

// Puts the next exchanges that have anything to move into a free window slot. A request MPI
// refuses to start is recorded and counted as complete.
void LoweredSchedule::fill(std::size_t slot) {
  LoweredRound& r = rounds_[round_];
  while (next_ < r.send.size()) {
    const std::size_t e = next_++;
    exchange_[slot] = e;
    pending_[slot] = 0;
    // Receive first so that an eager message finds its buffer posted.
    for (std::size_t k : {std::size_t(1), std::size_t(0)})
      if (post(window_[2 * slot + k], r, e, k == 0)) ++pending_[slot];
    if (pending_[slot] > 0) {
      ++inflight_;
      return;
    }
  }
}

// Posts exchange e's send or receive into q (a window entry): a send of at most kIsendBytes with
// MPI_Isend, else a copy of its persistent request, started. Returns whether anything is posted;
// a request MPI refuses to start is recorded and q left null.
bool LoweredSchedule::post(MPI_Request& q, const LoweredRound& r, std::size_t e, bool is_send) {
  const Recipe& c = is_send ? r.send_recipe[e] : r.recv_recipe[e];
  int rc;
  const char* what = "MPI_Start";
  if (is_send && c.isend) {
    rc = MPI_Isend(c.addr, c.count, c.type, c.peer, tag_, comm_, &q);
    what = "MPI_Isend";
  } else {
    q = is_send ? r.send[e] : r.recv[e];
    if (q == MPI_REQUEST_NULL) return false;
    rc = platform::start_request(&q, is_send, c.count, c.type);
  }
  if (errors_->note(rc, what)) return true;
  q = MPI_REQUEST_NULL;
  return false;
}

void LoweredSchedule::fill_window() {
  for (std::size_t s = 0; s < pending_.size() && next_ < rounds_[round_].send.size(); ++s)
    if (pending_[s] == 0) fill(s);
}

// Window entry index has completed (successfully or not).
void LoweredSchedule::complete(int index) {
  window_[std::size_t(index)] = MPI_REQUEST_NULL;  // persistent: the handle stays in rounds_
  const std::size_t slot = std::size_t(index) / 2;
  if (--pending_[slot] == 0) {
    --inflight_;
    // Waitall refills only once the whole window is done; the others refill the slot.
    if (policy_.completion != Completion::Waitall) fill(slot);
  }
}

// Window entry index completed with error (MPI_SUCCESS: without). A persistent request that
// failed may have been freed by MPI (Open MPI does, and nulls the handle it was completed
// through): then the copy in rounds_ is stale, and it is made again from its recipe, so that
// the next start and the final free see a live request.
void LoweredSchedule::finished(int index, int error) {
  if (error != MPI_SUCCESS) {
    errors_->note(error, "a transfer");
    const std::size_t slot = std::size_t(index) / 2;
    if (window_[std::size_t(index)] == MPI_REQUEST_NULL)
      remake(rounds_[round_], exchange_[slot], index % 2 == 0);
  }
  complete(index);
}

// Makes exchange e's persistent request again from its recipe when MPI freed it on an error.
void LoweredSchedule::remake(LoweredRound& r, std::size_t e, bool is_send) {
  const Recipe& c = is_send ? r.send_recipe[e] : r.recv_recipe[e];
  if (c.isend) return;
  MPI_Request& req = is_send ? r.send[e] : r.recv[e];
  const int rc = is_send ? MPI_Send_init(c.addr, c.count, c.type, c.peer, tag_, comm_, &req)
                         : MPI_Recv_init(c.addr, c.count, c.type, c.peer, tag_, comm_, &req);
  if (rc != MPI_SUCCESS) {
    errors_->note(rc, is_send ? "MPI_Send_init (again)" : "MPI_Recv_init (again)");
    req = MPI_REQUEST_NULL;
  }
}

// What enter_round and fill do for a one-round schedule with every exchange in the window, in
// the same order (exchange by exchange, its receive first), with window_ indexed by exchange.
bool LoweredSchedule::start_direct() {
  LoweredRound& r = rounds_[0];
  run(r.before);
  inflight_ = 0;
  for (std::size_t e = 0; e < r.send.size(); ++e)
    for (std::size_t k : {std::size_t(1), std::size_t(0)})
      if (post(window_[2 * e + k], r, e, k == 0)) ++inflight_;
  if (inflight_ > 0) return false;
  run(r.after);
  round_ = 1;
  active_ = false;
  return true;
}

// progress and complete_some for the direct mode, making the same MPI calls in the same order
// (which a simulator may charge for): passes over the pending requests, a pass that completes
// one followed by another; with block, a pass stops at its first completion, and passes go on
// until all are done.
bool LoweredSchedule::progress_direct(bool block) {
  const std::size_t n = window_.size();
  const bool wait = block && policy_.completion == Completion::Waitall;
  bool any = true;
  while (inflight_ > 0 && (block || any)) {
    any = false;
    for (std::size_t i = 0; i < n && !(any && block); ++i) {
      MPI_Request& q = window_[i];
      if (q == MPI_REQUEST_NULL) continue;
      int flag = 1;
      const int rc =
          wait ? PMPI_Wait(&q, MPI_STATUS_IGNORE) : PMPI_Test(&q, &flag, MPI_STATUS_IGNORE);
      if (!flag && rc == MPI_SUCCESS) continue;
      if (rc != MPI_SUCCESS) {
        errors_->note(rc, "a transfer");
        if (q == MPI_REQUEST_NULL) remake(rounds_[0], i / 2, i % 2 == 0);
      }
      q = MPI_REQUEST_NULL;
      --inflight_;
      any = true;
    }
  }
  if (inflight_ > 0) return false;
  run(rounds_[0].after);
  round_ = 1;
  active_ = false;
  return true;
}

bool LoweredSchedule::runs_blocking() const { return direct_ && small_sends_; }

void LoweredSchedule::run_blocking() {
  LoweredRound& r = rounds_[0];
  const std::size_t n = r.send.size();
  // Which requests this execution started, in the window's counters (one per exchange here):
  // bit 0 the send, bit 1 the receive (a start MPI refused is recorded and not waited for).
  std::vector<int>& started = pending_;
  round_ = 0;
  active_ = true;
  run(r.before);
  for (std::size_t e = 0; e < n; ++e) {
    started[e] = 0;
    MPI_Request& q = r.recv[e];
    if (q != MPI_REQUEST_NULL &&
        errors_->note(
            platform::start_request(&q, false, r.recv_recipe[e].count, r.recv_recipe[e].type),
            "MPI_Start"))
      started[e] |= 2;
  }
  for (std::size_t e = 0; e < n; ++e) {
    const Recipe& c = r.send_recipe[e];
    if (c.isend) {
      errors_->note(MPI_Send(c.addr, c.count, c.type, c.peer, tag_, comm_), "MPI_Send");
    } else if (r.send[e] != MPI_REQUEST_NULL &&
               errors_->note(platform::start_request(&r.send[e], true, c.count, c.type),
                             "MPI_Start")) {
      started[e] |= 1;
    }
  }
  for (std::size_t e = 0; e < n; ++e)
    for (int k : {1, 0})
      if (started[e] & (k == 1 ? 2 : 1)) {
        MPI_Request& q = k == 1 ? r.recv[e] : r.send[e];
        const int rc = PMPI_Wait(&q, MPI_STATUS_IGNORE);
        if (rc != MPI_SUCCESS) {
          errors_->note(rc, "a transfer");
          if (q == MPI_REQUEST_NULL) remake(r, e, k == 0);
        }
      }
  run(r.after);
  round_ = 1;
  active_ = false;
}

// Requests are completed one at a time (MPI_Test, MPI_Wait), never through a multiple-completion
// call, so that an error comes back with its real class, on the request that failed, and
// touches nothing else:
//  - MPICH (and the libraries built on it) raise an error of MPI_Waitsome, MPI_Testany, ... on
//    MPI_COMM_WORLD's error handler -- fatal by default -- not the request's communicator;
//  - Open MPI, when any request of the array failed, frees every request of the array whose
//    status holds an error -- and a pending request's status can still hold the error of an
//    earlier use of its (recycled) memory: a request that never failed is freed while posted,
//    and its handle, still in the plan, is dangling at the next start (a hang). Its MPI_Testany
//    also drops the error of a failed persistent request.
// With block and the waitall policy, waits for the first pending request; otherwise tests each
// pending one (polling until one completes, with block). Returns false when nothing completed.
bool LoweredSchedule::complete_some(bool block) {
  const int n = int(window_.size());
  bool any = false;
  for (;;) {
    for (int i = 0; i < n && !(any && block); ++i) {
      MPI_Request& q = window_[std::size_t(i)];
      if (q == MPI_REQUEST_NULL) continue;
      int flag = 1;
      const int rc = block && policy_.completion == Completion::Waitall
                         ? PMPI_Wait(&q, MPI_STATUS_IGNORE)
                         : PMPI_Test(&q, &flag, MPI_STATUS_IGNORE);
      if (!flag && rc == MPI_SUCCESS) continue;  // an error completes the request
      finished(i, rc);
      any = true;
    }
    if (any || !block) break;
  }
  if (inflight_ == 0) fill_window();
  return any;
}

bool LoweredSchedule::progress(bool block) {
  if (direct_) return !active_ || progress_direct(block);
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
