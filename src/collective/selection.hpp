// Parsing an algorithm selection: name[:key=value[,key=value...]]. Pure: no MPI call, nothing
// learnt from a communicator here -- the caller passes the extent the parameters are resolved
// against (operation/select.hpp: select_algorithm, which reads the per-call info and the
// communicator's default, and computes a node map only for an algorithm that needs one).
#pragma once

#include "collective/registry.hpp"

#include <string_view>

namespace mpia {

// The algorithm text names, its key=value pairs checked for syntax and names (not ranges).
// Throws mpia::Error(MPI_ERR_INFO_VALUE) for a text that names none.
const AlgorithmSpec& parse_algorithm(Collective c, std::string_view text);

// Parses text for a communicator of that extent. Throws mpia::Error(MPI_ERR_INFO_VALUE) when
// strict; otherwise clamps out-of-range values (with a note on stderr, once) and throws only for
// what cannot be repaired.
Selection parse_selection(Collective c, std::string_view text, const Extent& extent, bool strict);

// Once per distinct message, on stderr.
void warn_once(const std::string& msg);

}  // namespace mpia
