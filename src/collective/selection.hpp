// Algorithm selection: name[:key=value[,key=value...]] from the per-call MPI_Info key
// "mpix_algorithm" (strict: a bad value is MPI_ERR_INFO_VALUE), else from the communicator's
// default -- set with MPIX_Comm_set_algorithm (checked strictly when set), or the collective's
// environment variable (lenient: a bad value is reported once on stderr and "auto" runs; an
// out-of-range parameter is clamped to this communicator's range, with a note) -- else "auto".
#pragma once

#include "collective/registry.hpp"

#include <mpi.h>

#include <functional>
#include <string>
#include <string_view>

namespace mpia {

// Parses text for a communicator of nranks ranks. Throws mpia::Error(MPI_ERR_INFO_VALUE) when
// strict; otherwise clamps out-of-range values and throws only for what cannot be repaired.
Selection parse_selection(Collective c, std::string_view text, const Extent& extent, bool strict);

// The extent an algorithm's parameters are resolved against: asked only once the algorithm is
// known, so that locality (a collective the first time) is computed only for algorithms that
// need it.
using ExtentOf = std::function<Extent(const AlgorithmSpec&)>;
Selection parse_selection(Collective c, std::string_view text, const ExtentOf& extent, bool strict);

// Per-call info, then fallback (the communicator's default text, "" for none; lenient), then
// auto (still unresolved: kind Auto).
Selection select_algorithm(Collective c, MPI_Info info, const std::string& fallback,
                           const ExtentOf& extent);

}  // namespace mpia
