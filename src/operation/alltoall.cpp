// MPIX_Alltoall / MPIX_Alltoall_init: argument checks, agreement and building the operation a
// request runs; its entry points are declared with the other collectives' (entry_points.hpp).
#include "operation/entry_points.hpp"
#include "operation/pipeline.hpp"
#include "util/error.hpp"

#include <algorithm>
#include <functional>
#include <utility>
#include <cstdint>
#include <string>
#include <vector>

namespace mpia {

namespace {

// Local argument checks (throw mpia::Error); returns the packed bytes of one block.
std::int64_t check_alltoall(const AlltoallArgs& a, int P, MPI_Comm comm) {
  if (a.recvbuf == MPI_IN_PLACE) fail(MPI_ERR_BUFFER, "mpi-advance: recvbuf is MPI_IN_PLACE");
  // The bytes of count x type, all P blocks of them addressable. The names are literals: no
  // string is built on a call that passes (a blocking call checks on every call).
  auto block_bytes = [&](std::int64_t count, MPI_Datatype type, const char* count_name,
                         const char* type_name) {
    if (count < 0) fail(MPI_ERR_COUNT, std::string("mpi-advance: negative ") + count_name);
    check_type(type, comm, type_name);
    const std::int64_t size = type_size(type);
    if (size > 0 && count > INT64_MAX / size / std::max(P, 1))
      fail(MPI_ERR_COUNT, std::string("mpi-advance: ") + count_name +
                              " x the number of ranks is more than 2^63 bytes");
    return count * size;
  };
  const std::int64_t rbytes = block_bytes(a.recvcount, a.recvtype, "recvcount", "recvtype");
  check_buffer(a.recvbuf, rbytes, a.recvtype, "recvbuf");
  if (a.in_place()) return rbytes;
  const std::int64_t sbytes = block_bytes(a.sendcount, a.sendtype, "sendcount", "sendtype");
  check_buffer(a.sendbuf, sbytes, a.sendtype, "sendbuf");
  if (sbytes != rbytes)
    fail(MPI_ERR_TRUNCATE, "mpi-advance: send block (" + std::to_string(sbytes) +
                               " bytes) and receive block (" + std::to_string(rbytes) +
                               " bytes) differ: type signatures must match");
  return rbytes;
}

// The schedule of a record's builder for blocks of `bytes`: local.
std::shared_ptr<const Schedule> build_schedule(const Selection& sel, int rank, int size,
                                               std::int64_t bytes, const NodeMap* nodes) {
  if (!sel.algorithm->build_alltoall)
    fail(MPI_ERR_INTERN, "mpi-advance: unresolved algorithm selection");
  AlltoallShape shape{rank, size, bytes};
  if (sel.algorithm->needs_locality) shape.nodes = nodes;
  return std::make_shared<const Schedule>(sel.algorithm->build_alltoall(shape, sel.values));
}

// The pipeline's adapter for alltoall (pipeline.hpp): one block size, the same on every rank, so
// auto resolves from what every rank has, blocking calls too.
struct AlltoallCall : CallBase {
  static constexpr Collective kCollective = Collective::Alltoall;
  static constexpr bool kAgreedCache = false;
  const AlltoallArgs& a;
  std::int64_t bytes = 0;  // one block, packed

  AlltoallCall(CommState& state, const AlltoallArgs& args) : CallBase(state), a(args) {}
  void check() { bytes = check_alltoall(a, st.size, st.comm->get()); }
  void clear() { bytes = 0; }
  void compare(Proposal& p) const { p.same = bytes; }
  Stats stats(const Agreement&) const { return stats_of_block(); }
  bool blocking_stats(Stats& s) const {
    s = stats_of_block();
    return true;
  }
  std::int64_t memo_key() const { return bytes; }
  std::int64_t same() const { return bytes; }

  std::shared_ptr<const Schedule> schedule(const Selection& sel, int, bool) {
    return build_schedule(sel, st.rank, st.size, bytes,
                          sel.algorithm->needs_locality ? &comm_locality(st).map : nullptr);
  }

  // For a trial of several entries: what builds a second-round entry when it runs, with its own
  // copy of what schedule() reads (the request may outlive the communicator's state).
  std::function<LaterBuild(const Selection&)> later(const Shortlist& list) const {
    if (list.entries.size() < 2) return nullptr;
    const int rank = st.rank, size = st.size;
    const std::int64_t b = bytes;
    auto nodes = std::make_shared<const NodeMap>(comm_locality(st).map);
    return [=](const Selection& sel) -> LaterBuild {
      if (sel.algorithm->build_operation) return nullptr;
      return [=](Traffic& traffic) {
        auto s = build_schedule(sel, rank, size, b, nodes.get());
        traffic = traffic_of(*s, rank, nodes.get());
        return s;
      };
    };
  }

  // Block i at i x count elements.
  std::pair<BlockBuffer, BlockBuffer> bind(ScheduledOperation& op) const {
    const int P = st.size;
    std::vector<std::int64_t> counts, displs;
    auto side = [&](const void* buf, std::int64_t count, MPI_Datatype type) {
      counts.assign(std::size_t(P), count);
      displs.resize(std::size_t(P));
      for (int i = 0; i < P; ++i) displs[std::size_t(i)] = i * count;
      return v_side(buf, counts.data(), displs.data(), type);
    };
    const BlockBuffer recv = op.bind(side(a.recvbuf, a.recvcount, a.recvtype), P);
    if (a.in_place()) return {op.shadow_of(recv), recv};
    return {op.bind(side(a.sendbuf, a.sendcount, a.sendtype), P), recv};
  }

  LibraryCall library(bool blocking) const {
    LibraryCall l;
    l.collective = kCollective;
    l.regular = &a;
    l.comm = st.comm;
    l.blocking = blocking;
    return l;
  }

  bool predefined_types() const {
    return predefined(a.recvtype) && (a.in_place() || predefined(a.sendtype));
  }
  void words(std::vector<std::int64_t>& key, bool buffers) const {
    key.push_back(a.in_place() + 2 * a.large);
    if (buffers) key.push_back(word(a.sendbuf)), key.push_back(word(a.recvbuf));
    key.push_back(a.sendcount);
    key.push_back(a.recvcount);
    push_type_identity(key, a.recvtype);
    if (!a.in_place()) push_type_identity(key, a.sendtype);
  }
  std::pair<const void*, const void*> buffers() const { return {a.sendbuf, a.recvbuf}; }

  // A blocking alltoall repeated with the same arguments runs the cached plan at once
  // (CommState::Repeat).
  bool repeat() {
    if (!st.blocking) return false;
    BlockingCache& bc = *st.blocking;
    const BlockingCache::Repeat& r = bc.repeat;
    if (!r.valid || r.memo_serial != bc.memo_serial ||
        bc.memo.collective != int(Collective::Alltoall) || !same_args(r.args, a))
      return false;
    bc.cached->run();
    note_call(st, kCollective, *r.selection, true);
    return true;
  }
  void remember(const Selection* sel) {
    BlockingCache& bc = blocking_cache(st);
    bc.repeat = BlockingCache::Repeat{true, bc.memo_serial, a, sel};
  }

 private:
  Stats stats_of_block() const {
    Stats s;
    s.max_block = bytes;
    return s;
  }
  static bool same_args(const AlltoallArgs& r, const AlltoallArgs& a) {
    return r.sendbuf == a.sendbuf && r.recvbuf == a.recvbuf && r.sendcount == a.sendcount &&
           r.recvcount == a.recvcount && r.sendtype == a.sendtype && r.recvtype == a.recvtype &&
           r.large == a.large;
  }
};

}  // namespace

template <>
struct CallOf<Collective::Alltoall> : CallIs<AlltoallCall> {};
template struct EntryPoints<Collective::Alltoall>;

}  // namespace mpia
