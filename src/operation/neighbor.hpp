// MPIX_Neighbor_alltoallv(_init): argument checks against the communicator's topology
// (neighbor_topology.hpp), size agreement along the edges, and building the operation a request
// runs (neighbor.cpp); its entry points are declared with the other collectives'.
#pragma once

#include "collective/neighbor/builders.hpp"
#include "operation/alltoallv.hpp"
#include "operation/entry_points.hpp"
