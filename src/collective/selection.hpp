// Algorithm selection: name[:key=value[,key=value...]] from the per-call MPI_Info key
// "mpix_algorithm" (strict: a bad value is MPI_ERR_INFO_VALUE), else from the collective's
// environment variable (lenient: a bad value is reported once on stderr and "auto" runs; an
// out-of-range parameter is clamped to this communicator's range, with a note), else "auto".
#pragma once

#include "collective/registry.hpp"

#include <mpi.h>

#include <string_view>

namespace mpia {

// Parses text for a communicator of nranks ranks. Throws mpia::Error(MPI_ERR_INFO_VALUE) when
// strict; otherwise clamps out-of-range values and throws only for what cannot be repaired.
Selection parse_selection(Collective c, std::string_view text, int nranks, bool strict);

// Per-call info, then environment, then auto (still unresolved: kind Auto).
Selection select_algorithm(Collective c, MPI_Info info, int nranks);

}  // namespace mpia
