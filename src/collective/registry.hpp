// The one table of algorithms. The C API, MPI_Info keys, the environment, the benchmark driver,
// the cost model's search and the tests all iterate it; nothing else names an algorithm.
//
// Each algorithm (or family of algorithms) is one record in one file named after it under
// collective/<collective>/ (collective/all/ for the records every collective has), which
// defines its records with MPIA_ALGORITHMS(id) { ... } at the start of a line. The build scans
// those files for that line and generates the list registry() assembles (no self-registering
// static objects: they would vanish from the static library). Adding an algorithm touches its
// file and its tests, nothing else.
#pragma once

#include "collective/alltoall/builders.hpp"
#include "collective/cost.hpp"
#include "collective/exchange.hpp"
#include "collective/neighbor/builders.hpp"
#include "schedule/schedule.hpp"

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace mpia {

enum class Collective : std::uint8_t { Alltoall, Alltoallv, NeighborAlltoallv };
constexpr int kCollectives = 3;

const char* collective_name(Collective c);
// The collective named name ("alltoall", "alltoallv"); false if there is none.
bool collective_from_name(std::string_view name, Collective& c);
// The environment variable holding the process-wide choice for a collective (MPIX_ALLTOALL).
const char* collective_env(Collective c);

// What a record is, as its hooks say: a builder (run by the engine), build_operation (the MPI
// library's own call) or resolve (auto: resolved into other records before anything is built).
// The pipeline (operation/pipeline.hpp) looks at the hooks, never at the kind; the kind names
// the record for the listings and tests (find_kind), and the table checks they agree.
enum class AlgorithmKind : std::uint8_t {
  Scheduled,  // a builder + the engine
  System,     // handed to the MPI library
  Auto,       // resolved by the cost model (collective/model.cpp) before building
};

class Operation;
struct LibraryCall;  // operation/system.hpp: a call's arguments as the MPI library takes them
struct Resolving;    // collective/resolve.hpp: what auto is resolved from
struct Shortlist;    // collective/shortlist.hpp

// What parameter defaults and ranges depend on: the communicator's size and, for the
// locality-aware algorithms, its number of nodes and the most ranks on one node.
struct Extent {
  int nranks = 1;
  int nnodes = 1;
  int max_local = 1;
  Extent(int p = 1) : nranks(p), nnodes(1), max_local(p) {}  // NOLINT: implicit on purpose
  Extent(int p, int n, int q) : nranks(p), nnodes(n), max_local(q) {}
};

// A parameter's default or bound, as data (MPICH's coll_algorithms.txt keeps its restrictions
// the same way): a constant, or max(at_least, X) where X is the communicator's ranks P, its
// nodes N, the most ranks on one node Q, ceil(sqrt()) of one of them, or a multiple of one. The
// listing prints it (to_string), selection checks against it (at), tests walk the range it spans.
struct Bound {
  enum class Of : std::uint8_t { Constant, Ranks, Nodes, MaxLocal };
  Of of = Of::Constant;
  std::int64_t value = 0;  // the constant; for the others, the least it may be (at_least)
  bool sqrt = false;       // ceil(sqrt(X)) instead of X
  std::int64_t times = 1;  // times * X instead of X

  static constexpr Bound constant(std::int64_t v) { return {Of::Constant, v, false}; }
  // max(at_least, X) and max(at_least, ceil(sqrt(X))).
  static constexpr Bound of_size(Of x, std::int64_t at_least) { return {x, at_least, false}; }
  static constexpr Bound sqrt_of(Of x, std::int64_t at_least) { return {x, at_least, true}; }
  static constexpr Bound multiple_of(Of x, std::int64_t times) { return {x, 0, false, times}; }

  std::int64_t at(const Extent& e) const;
  std::string to_string() const;  // "2", "max(2,P)", "max(2,ceil(sqrt(Q)))", "2Q", "2^30"
};

// A radix: 2..P by default; tra and the two-level ones bound it by Q or N instead.
constexpr Bound kRadixMin = Bound::constant(2);
constexpr Bound kRadixMax = Bound::of_size(Bound::Of::Ranks, 2);

struct ParamSpec {
  const char* name;
  const char* description;  // what it means; its range and default are printed from the data
  Bound default_value, min_value, max_value;
  // "2..max(2,P), default max(2,ceil(sqrt(P)))": the range and default for any communicator.
  std::string range_text() const;
};

// Resolved parameter values, one per ParamSpec, in the spec's order.
using ParamValues = std::vector<std::int64_t>;

// Values of one parameter that span its range on a communicator of extent e, ascending, at most
// at_most (>= 3) of them: every value when there are no more; else the ends, the default, the
// three values above the low end and then powers of two spread evenly between, as many as fit.
// What the test matrix walks.
std::vector<std::int64_t> param_values(const ParamSpec& p, const Extent& e, std::size_t at_most);

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
  LaneBytes lane_bytes;  // other nodes' bundles, for the two-level builders that forward them
  const NodeMap* nodes = nullptr;  // set for algorithms that need_locality
};
using AlltoallvBuilder = Schedule (*)(const AlltoallvShape& shape, const ParamValues& values);
using NeighborBuilder = Schedule (*)(const NeighborShape& shape, const ParamValues& values);

// Init-time exchange hooks of the algorithms that forward blocks (needs_peer_sizes):
// collective over the communicator, talking through the channel only. The alltoallv hook sets
// shape.pair_bytes to answer every pair its builder asks for; the neighbor hook fills
// shape.edges. The shape's other fields (own sizes, node map, topology) are set when called.
using AlltoallvLearn = void (*)(AlltoallvShape& shape, const ParamValues& values,
                                SizeChannel& channel);
using NeighborLearn = void (*)(NeighborShape& shape, const ParamValues& values,
                               SizeChannel& channel);

// The cost model's view of an algorithm (collective/model.hpp): the coefficients of the
// model's constants its schedule incurs on machine m for a call with statistics st, and the
// parameter values auto's search weighs there (none: not a candidate there). Both are pure
// functions of values every rank agrees on. Only called for m.nranks > 1.
// The "system" record's builder: the MPI library's own collective over a call's arguments, as an
// operation (operation/system.cpp).
using OperationBuilder = std::unique_ptr<Operation> (*)(const LibraryCall& call);
// The "auto" record's hook: the records (with parameters) a call of the record's collective runs,
// the first of them the pick, several when a trial measures them (collective/resolve.hpp).
struct Selection;
using Resolver = Shortlist (*)(const Selection& chosen, const Resolving& in);

using CostFunction = Terms (*)(const Machine& m, const Stats& st, const ParamValues& values);
using CandidatesFunction = std::vector<ParamValues> (*)(const Machine& m, const Stats& st);

struct AlgorithmSpec {
  Collective collective = Collective::Alltoall;
  const char* name = "";
  const char* description = "";
  // Where the algorithm comes from (the paper, with its seed file where the project has one,
  // or who designed it) and the formula its cost function computes, in the notation of
  // kCostNotation (cost.hpp), or why it has none ("not modelled..."): what the listings print
  // (mpia_info, docs/algorithms.md). Every record sets both (record.hpp's About).
  const char* reference = "";
  const char* cost_formula = "";
  // The description followed by every parameter's meaning, range and default (set by the
  // table from the records: what MPIX_Algorithm_get and the listings show).
  std::string summary;
  AlgorithmKind kind = AlgorithmKind::Scheduled;
  // Where the algorithm stands in its collective's listing (MPIX_Algorithm_get's index, the
  // order of every listing and test matrix): ascending, unique within a collective.
  int listing = 0;
  std::vector<ParamSpec> params;
  AlltoallBuilder build_alltoall = nullptr;
  AlltoallvBuilder build_alltoallv = nullptr;
  NeighborBuilder build_neighbor = nullptr;
  // Whether the builder needs other ranks' sizes, learnt at init by learn_alltoallv or
  // learn_neighbor (set exactly when one of them is).
  bool needs_peer_sizes = false;
  AlltoallvLearn learn_alltoallv = nullptr;
  NeighborLearn learn_neighbor = nullptr;
  bool needs_locality = false;  // builds on the node map (collective once per communicator)
  // Instead of a builder: the MPI library's call ("system"), or auto's resolution ("auto").
  OperationBuilder build_operation = nullptr;
  Resolver resolve = nullptr;
  // Algorithms that differ only in how they copy (the published Bruck variants) share a family:
  // a measured trial tries one per family first (collective/shortlist.hpp). nullptr: the name.
  const char* family = nullptr;
  const char* family_name() const { return family ? family : name; }
  // The cost model (candidates need a cost; a cost alone predicts a selection auto never
  // weighs, for the tools). search orders the candidates of a collective (ascending):
  // at equal predicted time the earlier candidate wins, so simpler algorithms come first.
  CostFunction cost = nullptr;
  CandidatesFunction candidates = nullptr;
  int search = 0;
  // What a blocking auto call runs when its ranks have not agreed on anything: a direct
  // exchange, which interoperates with every other direct exchange (at most one per collective).
  bool blocking_auto = false;
};

// The records of one algorithm file: MPIA_ALGORITHMS(id) { return {...}; } inside namespace
// mpia, id unique (conventionally <collective>_<file name>).
#define MPIA_ALGORITHMS(id) std::vector<::mpia::AlgorithmSpec> algorithms_##id()

const std::vector<AlgorithmSpec>& registry();
const AlgorithmSpec* find_algorithm(Collective c, std::string_view name);
// The index-th algorithm of a collective, or nullptr.
const AlgorithmSpec* algorithm_at(Collective c, int index);
// The first algorithm of collective c of this kind (System, Auto), or nullptr.
const AlgorithmSpec* find_kind(Collective c, AlgorithmKind kind);
// The algorithm a blocking auto call of c runs without agreement (blocking_auto), or nullptr.
const AlgorithmSpec* blocking_auto_algorithm(Collective c);

// Every combination of the param_values of an algorithm's parameters, at most about at_most in
// all (each parameter gets an equal share); one empty ParamValues for an algorithm without any.
std::vector<ParamValues> param_grid(const AlgorithmSpec& a, const Extent& e, std::size_t at_most);

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
