// The operation layer's entry points of the three collectives (api/c_api.cpp's adapters): a
// persistent init, the blocking call and a nonblocking call of each, declared once. Each is
// pipeline.hpp's init, blocking or nonblocking over the collective's adapter (its Call), which
// alltoall.cpp, alltoallv.cpp and neighbor.cpp name and instantiate EntryPoints for (CallOf).
#pragma once

#include "collective/registry.hpp"
#include "operation/args.hpp"
#include "operation/comm_state.hpp"
#include "operation/operation.hpp"

#include <mpi.h>

#include <memory>
#include <type_traits>

namespace mpia {

template <Collective C>
struct EntryPoints {
  // The call's arguments: a neighbor call's are the v form's (api/c_api.cpp carries a regular
  // one as that).
  using Args = std::conditional_t<C == Collective::Alltoall, AlltoallArgs, AlltoallvArgs>;
  // Persistent init (collective): the operation, agreed on by every rank, holding its tag.
  // request_given: whether the caller gave somewhere to put the request (an argument error to
  // agree on, like the others).
  static std::unique_ptr<Operation> init(CommState& st, const Args& a, MPI_Info info,
                                         bool request_given);
  // The blocking call.
  static void blocking(CommState& st, const Args& a);
  // A nonblocking call (MPIX_Ialltoall & co.): its plan, started (nonblocking.hpp).
  static std::unique_ptr<Operation> nonblocking(CommState& st, const Args& a);
};
// Each instantiated once, by its collective's .cpp.
extern template struct EntryPoints<Collective::Alltoall>;
extern template struct EntryPoints<Collective::Alltoallv>;
extern template struct EntryPoints<Collective::NeighborAlltoallv>;

// The names the callers use.
inline constexpr auto& alltoall_init = EntryPoints<Collective::Alltoall>::init;
inline constexpr auto& alltoall_blocking = EntryPoints<Collective::Alltoall>::blocking;
inline constexpr auto& alltoall_nonblocking = EntryPoints<Collective::Alltoall>::nonblocking;
inline constexpr auto& alltoallv_init = EntryPoints<Collective::Alltoallv>::init;
inline constexpr auto& alltoallv_blocking = EntryPoints<Collective::Alltoallv>::blocking;
inline constexpr auto& alltoallv_nonblocking = EntryPoints<Collective::Alltoallv>::nonblocking;
inline constexpr auto& neighbor_init = EntryPoints<Collective::NeighborAlltoallv>::init;
inline constexpr auto& neighbor_blocking = EntryPoints<Collective::NeighborAlltoallv>::blocking;
inline constexpr auto& neighbor_nonblocking =
    EntryPoints<Collective::NeighborAlltoallv>::nonblocking;

}  // namespace mpia
