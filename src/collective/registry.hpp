// The one table of algorithms. The C API, MPI_Info keys, the environment, the benchmark driver
// and the tests all iterate it; nothing else lists algorithm names.
#pragma once

#include "collective/alltoall/builders.hpp"
#include "collective/neighbor/builders.hpp"
#include "schedule/schedule.hpp"

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace mpia {

enum class Collective : std::uint8_t { Alltoall, Alltoallv, NeighborAlltoallv };

const char* collective_name(Collective c);
// The collective named name ("alltoall", "alltoallv"); false if there is none.
bool collective_from_name(std::string_view name, Collective& c);
// The environment variable holding the process-wide choice for a collective (MPIX_ALLTOALL).
const char* collective_env(Collective c);

enum class AlgorithmKind : std::uint8_t {
  Scheduled,  // a builder + the engine
  System,     // handed to the MPI library
  Auto,       // resolved by the cost model (collective/model.cpp) before building
};

// What parameter defaults and ranges depend on: the communicator's size and, for the
// locality-aware algorithms, its number of nodes and the most ranks on one node.
struct Extent {
  int nranks = 1;
  int nnodes = 1;
  int max_local = 1;
  Extent(int p = 1) : nranks(p), nnodes(1), max_local(p) {}  // NOLINT: implicit on purpose
  Extent(int p, int n, int q) : nranks(p), nnodes(n), max_local(q) {}
};

struct ParamSpec {
  const char* name;
  const char* description;
  // Default and allowed range for a communicator of this extent.
  std::int64_t (*default_value)(const Extent& e);
  std::int64_t (*min_value)(const Extent& e);
  std::int64_t (*max_value)(const Extent& e);
};

// Resolved parameter values, one per ParamSpec, in the spec's order.
using ParamValues = std::vector<std::int64_t>;

using AlltoallBuilder = Schedule (*)(const AlltoallShape& shape, const ParamValues& values);

// What an alltoallv builder knows: this rank's packed bytes to and from every peer, and for
// algorithms that forward blocks (needs_peer_sizes) the sizes of other pairs, as a function
// answering the pairs that builder says it asks for (its comment in builders.hpp), learnt at
// init from the ranks that know them. (For neighbor algorithms, needs_peer_sizes means the
// edges that pass through this rank.)
struct AlltoallvShape {
  int rank = 0;
  int size = 1;
  std::vector<std::int64_t> send_bytes, recv_bytes;
  PairBytes pair_bytes;
  const NodeMap* nodes = nullptr;  // set for algorithms that need_locality
};
using AlltoallvBuilder = Schedule (*)(const AlltoallvShape& shape, const ParamValues& values);
using NeighborBuilder = Schedule (*)(const NeighborShape& shape, const ParamValues& values);

struct AlgorithmSpec {
  Collective collective;
  const char* name;
  const char* description;
  AlgorithmKind kind;
  std::vector<ParamSpec> params;
  AlltoallBuilder build_alltoall = nullptr;
  AlltoallvBuilder build_alltoallv = nullptr;
  bool needs_peer_sizes = false;
  bool needs_locality = false;  // builds on the node map (collective once per communicator)
  NeighborBuilder build_neighbor = nullptr;
  // Algorithms that differ only in how they copy (the published Bruck variants) share a family:
  // a measured trial tries one per family first (collective/shortlist.hpp). nullptr: the name.
  const char* family = nullptr;
  const char* family_name() const { return family ? family : name; }
};

const std::vector<AlgorithmSpec>& registry();
const AlgorithmSpec* find_algorithm(Collective c, std::string_view name);
// The index-th algorithm of a collective, or nullptr.
const AlgorithmSpec* algorithm_at(Collective c, int index);

// An algorithm with every parameter resolved.
struct Selection {
  const AlgorithmSpec* algorithm = nullptr;
  ParamValues values;
  std::string to_string() const;  // "tra:radix=4"
  std::int64_t value(std::string_view param) const;
  bool operator==(const Selection& o) const {
    return algorithm == o.algorithm && values == o.values;
  }
};

}  // namespace mpia
