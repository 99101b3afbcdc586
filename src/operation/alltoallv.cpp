#include "operation/alltoallv.hpp"

#include "operation/pipeline.hpp"
#include "util/error.hpp"

#include <algorithm>
#include <climits>
#include <cstdint>
#include <functional>
#include <string>
#include <utility>

namespace mpia {

void check_blocks(const BlockSide& s, int P, const char* side, std::vector<std::int64_t>& bytes,
                  MPI_Comm comm) {
  if (P > 0 && (s.counts.null() || s.displs.null() || (s.w && !s.types)))
    fail(MPI_ERR_ARG,
         std::string("mpi-advance: null ") + side + " count, displacement or type array");
  const std::string type_name = std::string(side) + "type", buf_name = std::string(side) + "buf";
  if (!s.w) check_type(s.type, comm, type_name.c_str());
  bytes.resize(P);
  MPI_Datatype last = MPI_DATATYPE_NULL;  // the last type checked (w form)
  std::int64_t size = s.w ? 0 : type_size(s.type);
  for (int i = 0; i < P; ++i) {
    const MPI_Datatype t = s.type_at(std::size_t(i));
    if (s.w && (i == 0 || t != last)) {
      check_type(t, comm, (std::string(side) + "types[" + std::to_string(i) + "]").c_str());
      size = type_size(t);
      last = t;
    }
    const std::int64_t count = s.counts[std::size_t(i)];
    if (count < 0)
      fail(MPI_ERR_COUNT,
           std::string("mpi-advance: negative ") + side + " count for block " + std::to_string(i));
    if (size > 0 && count > INT64_MAX / size)
      fail(MPI_ERR_COUNT, std::string("mpi-advance: ") + side + " block " + std::to_string(i) +
                              " has more than 2^63 bytes");
    bytes[i] = count * size;
    check_buffer(s.buf, bytes[i], t, buf_name.c_str());
  }
}

namespace {

AlltoallvSizes check_alltoallv(const AlltoallvArgs& a, int P, MPI_Comm comm) {
  AlltoallvSizes s;
  if (a.recv.buf == MPI_IN_PLACE) fail(MPI_ERR_BUFFER, "mpi-advance: recvbuf is MPI_IN_PLACE");
  check_blocks(a.recv, P, "recv", s.recv_bytes, comm);
  if (a.in_place())
    s.send_bytes = s.recv_bytes;  // MPI_IN_PLACE: block to j has the layout of block from j
  else
    check_blocks(a.send, P, "send", s.send_bytes, comm);
  for (std::int64_t b : s.send_bytes) {
    s.local.max_block = std::max(s.local.max_block, b);
    s.local.rank_bytes += b;
    s.local.rank_messages += b > 0;
  }
  return s;
}

// The pipeline's adapter for alltoallv (pipeline.hpp): sizes differ across ranks, so every pair
// agrees on its block's size at init, auto resolves from agreed statistics, and a blocking call
// under auto takes the agreed plan cache.
struct AlltoallvCall : CallBase {
  static constexpr Collective kCollective = Collective::Alltoallv;
  static constexpr bool kAgreedCache = true;
  const AlltoallvArgs& a;
  AlltoallvSizes sizes;

  AlltoallvCall(CommState& state, const AlltoallvArgs& args) : CallBase(state), a(args) {}
  void check() { sizes = check_alltoallv(a, st.size, st.comm->get()); }
  void clear() {
    sizes = AlltoallvSizes{};
    sizes.send_bytes.assign(st.size, 0);
    sizes.recv_bytes.assign(st.size, 0);
  }

  // Every pair must agree on its block's size: what each peer will send me must be what I
  // expect to receive. The library's blocking alltoall after a barrier that drives progress
  // (run_system): MPIs run their blocking form in log rounds at these sizes, where some
  // nonblocking forms post P - 1 messages each way (SMPI's: at P = 1024 a simulation of 21 inits
  // spent its time here).
  void compare(Proposal& p) const {
    const MPI_Comm lib = st.comm->get();
    std::vector<std::int64_t> incoming(st.size);
    run_system(lib, [&] {
      return MPI_Alltoall(sizes.send_bytes.data(), 1, MPI_INT64_T, incoming.data(), 1, MPI_INT64_T,
                          lib);
    });
    if (!p.error)
      for (int i = 0; i < st.size; ++i)
        if (incoming[i] != sizes.recv_bytes[i]) {
          p.derived = true;
          p.error = std::make_unique<Error>(
              MPI_ERR_TRUNCATE, "mpi-advance: rank " + std::to_string(i) + " sends " +
                                    std::to_string(incoming[i]) + " bytes, this rank expects " +
                                    std::to_string(sizes.recv_bytes[i]));
          break;
        }
    p.maxima[0] = sizes.local.max_block;
    p.maxima[1] = sizes.local.rank_bytes;
    p.maxima[2] = sizes.local.rank_messages;
    // The other nodes this rank's non-empty blocks reach (what node-aware exchanges send).
    p.maxima[3] = off_node(comm_locality(st).map, st.rank, nullptr, sizes.send_bytes).nodes;
  }
  Stats stats(const Agreement& ag) const {
    Stats s;
    s.max_block = ag.maxima[0];
    s.rank_bytes = ag.maxima[1];
    s.rank_messages = ag.maxima[2];
    s.remote_nodes = ag.maxima[3];
    return s;
  }

  // The record's builder (learning its peers' sizes when it needs them: collective, on tag).
  std::shared_ptr<const Schedule> schedule(const Selection& sel, int tag, bool last) {
    if (!sel.algorithm->build_alltoallv)
      fail(MPI_ERR_INTERN, "mpi-advance: unresolved algorithm selection");
    AlltoallvShape shape;
    shape.rank = st.rank;
    shape.size = st.size;
    if (sel.algorithm->needs_locality) shape.nodes = &comm_locality(st).map;
    shape.send_bytes = last ? std::move(sizes.send_bytes) : sizes.send_bytes;
    shape.recv_bytes = last ? std::move(sizes.recv_bytes) : sizes.recv_bytes;
    return learnt_schedule(st, tag, "the size exchange", shape, sel.algorithm->learn_alltoallv,
                           sel.algorithm->build_alltoallv, sel.values);
  }

  std::pair<BlockBuffer, BlockBuffer> bind(ScheduledOperation& op) const {
    const BlockBuffer recv = op.bind(a.recv, st.size);
    return {a.in_place() ? op.shadow_of(recv) : op.bind(a.send, st.size), recv};
  }

  LibraryCall library(bool blocking) const {
    LibraryCall l;
    l.collective = kCollective;
    l.blocks = &a;
    l.nsend = l.nrecv = st.size;
    l.comm = st.comm;
    l.blocking = blocking;
    return l;
  }

  // MPIX_Alltoallw's sides have a type per block (BlockSide::w).
  bool predefined_types() const {
    for (const BlockSide* side : {&a.recv, &a.send}) {
      if (side == &a.send && a.in_place()) continue;
      if (!side->w && !predefined(side->type)) return false;
      for (int i = 0; i < st.size && side->w; ++i)
        if (!predefined(side->types[i])) return false;
    }
    return true;
  }
  void words(std::vector<std::int64_t>& key, bool buffers) const {
    key.push_back(a.in_place() + 2 * a.large + 4 * a.recv.w);
    if (buffers) key.push_back(word(a.send.buf)), key.push_back(word(a.recv.buf));
    auto identity = [&key](MPI_Datatype t) { push_type_identity(key, t); };
    if (!a.recv.w) identity(a.recv.type);
    if (!a.recv.w && !a.in_place()) identity(a.send.type);
    push_side_words(key, a.recv, st.size, identity);
    if (!a.in_place()) push_side_words(key, a.send, st.size, identity);
  }
  std::pair<const void*, const void*> buffers() const { return {a.send.buf, a.recv.buf}; }
};

}  // namespace

template <>
struct CallOf<Collective::Alltoallv> : CallIs<AlltoallvCall> {};
template struct EntryPoints<Collective::Alltoallv>;

}  // namespace mpia
