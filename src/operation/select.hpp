// A call's algorithm selection: the info key "mpix_algorithm", the communicator's default or the
// environment's, parsed and its parameters resolved against the communicator's extent.
#pragma once

#include "collective/registry.hpp"
#include "collective/selection.hpp"
#include "operation/comm_state.hpp"

#include <mpi.h>

#include <functional>
#include <string>
#include <string_view>

namespace mpia {

// The extent an algorithm's parameters are resolved against: asked only once the algorithm is
// known, so that locality (a collective the first time) is computed only for algorithms that
// need it.
using ExtentOf = std::function<Extent(const AlgorithmSpec&)>;

// Parameters resolved against the communicator: its size, and for the locality-aware
// algorithms its node map (computed the first time: collective).
ExtentOf extent_of(CommState& st);

// parse_selection against extent(the algorithm text names), asked only when that algorithm has
// parameters.
Selection parse_for(Collective c, std::string_view text, const ExtentOf& extent, bool strict);

// The selection of a call: the per-call info key "mpix_algorithm" (strict: a bad value is
// MPI_ERR_INFO_VALUE), else fallback, the communicator's default -- set with
// MPIX_Comm_set_algorithm (checked strictly when set), or the collective's environment variable
// (lenient: a bad value is reported once on stderr and "auto" runs; an out-of-range parameter
// is clamped to this communicator's range, with a note) -- else auto (still unresolved: its
// record resolves it, collective/resolve.hpp).
Selection select_algorithm(Collective c, MPI_Info info, const std::string& fallback,
                           const ExtentOf& extent);

}  // namespace mpia
