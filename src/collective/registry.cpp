#include "collective/registry.hpp"

#include "collective/record.hpp"
#include "util/error.hpp"

#include <mpi.h>

#include <algorithm>
#include <cmath>
#include <string>

namespace mpia {

// The record files' functions, from the list the build generates (src/CMakeLists.txt).
#define MPIA_ALGORITHM_FILE(id) MPIA_ALGORITHMS(id);
#include "algorithm_files.inc"
#undef MPIA_ALGORITHM_FILE

namespace {

// A record that contradicts itself is a bug in its file: reported as one, at the first use of
// the table, whatever the caller.
void check_records(const std::vector<AlgorithmSpec>& table) {
  auto bad = [](const AlgorithmSpec& a, const char* why) {
    fail(MPI_ERR_INTERN, std::string("mpi-advance: algorithm record ") +
                             collective_name(a.collective) + " " + a.name + ": " + why);
  };
  for (std::size_t i = 0; i < table.size(); ++i) {
    const AlgorithmSpec& a = table[i];
    const bool scheduled = a.kind == AlgorithmKind::Scheduled;
    const void* builder = a.collective == Collective::Alltoall    ? (const void*)a.build_alltoall
                          : a.collective == Collective::Alltoallv ? (const void*)a.build_alltoallv
                                                                  : (const void*)a.build_neighbor;
    if (scheduled != (builder != nullptr)) bad(a, "a scheduled algorithm has a builder");
    if ((a.kind == AlgorithmKind::System) != (a.build_operation != nullptr))
      bad(a, "the MPI library's call, and only it, builds an operation");
    if ((a.kind == AlgorithmKind::Auto) != (a.resolve != nullptr))
      bad(a, "auto, and only it, resolves");
    const bool learns = a.collective == Collective::Alltoallv ? a.learn_alltoallv != nullptr
                        : a.collective == Collective::NeighborAlltoallv
                            ? a.learn_neighbor != nullptr
                            : false;
    if (a.needs_peer_sizes != learns) bad(a, "needs_peer_sizes exactly when it learns them");
    if (a.candidates && !a.cost) bad(a, "a candidate has a cost");
    // Every default within its range, on communicators of every shape the tests run and more.
    for (const ParamSpec& p : a.params)
      for (const Extent e : {Extent(1), Extent(2), Extent(7), Extent(64, 4, 16), Extent(9, 3, 4),
                             Extent(1 << 20, 1 << 14, 64)}) {
        const std::int64_t lo = p.min_value.at(e), hi = p.max_value.at(e);
        const std::int64_t d = p.default_value.at(e);
        if (lo > hi || d < lo || d > hi) bad(a, "a parameter's default lies in its range");
      }
    for (std::size_t j = 0; j < i; ++j) {
      const AlgorithmSpec& b = table[j];
      if (b.collective != a.collective) continue;
      if (std::string_view(a.name) == b.name) bad(a, "the name is taken");
      if (a.listing == b.listing) bad(a, "the listing position is taken");
      if (a.candidates && b.candidates && a.search == b.search)
        bad(a, "the search position is taken");
      if (a.blocking_auto && b.blocking_auto) bad(a, "a second blocking_auto algorithm");
    }
  }
}

std::vector<AlgorithmSpec> assemble() {
  std::vector<AlgorithmSpec> table;
  auto add = [&table](std::vector<AlgorithmSpec> records) {
    for (AlgorithmSpec& a : records) table.push_back(std::move(a));
  };
#define MPIA_ALGORITHM_FILE(id) add(algorithms_##id());
#include "algorithm_files.inc"
#undef MPIA_ALGORITHM_FILE
  std::stable_sort(table.begin(), table.end(), [](const AlgorithmSpec& a, const AlgorithmSpec& b) {
    return a.collective != b.collective ? a.collective < b.collective : a.listing < b.listing;
  });
  check_records(table);
  for (AlgorithmSpec& a : table) {
    a.summary = a.description;
    for (const ParamSpec& p : a.params)
      a.summary += std::string("; ") + p.name + ": " + p.description + ", " + p.range_text();
  }
  return table;
}

// A collective's name and the environment variable that sets its algorithm.
struct Names {
  const char* name;
  const char* env;
};
Names names_of(Collective c) {
  switch (c) {
    case Collective::Alltoall:
      return {"alltoall", "MPIX_ALLTOALL"};
    case Collective::Alltoallv:
      return {"alltoallv", "MPIX_ALLTOALLV"};
    default:
      return {"neighbor_alltoallv", "MPIX_NEIGHBOR_ALLTOALLV"};
  }
}

}  // namespace

const char* collective_name(Collective c) { return names_of(c).name; }
const char* collective_env(Collective c) { return names_of(c).env; }
bool collective_from_name(std::string_view name, Collective& c) {
  for (Collective k : {Collective::Alltoall, Collective::Alltoallv, Collective::NeighborAlltoallv})
    if (name == collective_name(k)) return c = k, true;
  return false;
}

const std::vector<AlgorithmSpec>& registry() {
  static const std::vector<AlgorithmSpec> table = assemble();
  return table;
}

const AlgorithmSpec* find_algorithm(Collective c, std::string_view name) {
  for (const AlgorithmSpec& a : registry())
    if (a.collective == c && name == a.name) return &a;
  return nullptr;
}

const AlgorithmSpec* algorithm_at(Collective c, int index) {
  if (index < 0) return nullptr;
  for (const AlgorithmSpec& a : registry())
    if (a.collective == c && index-- == 0) return &a;
  return nullptr;
}

const AlgorithmSpec* find_kind(Collective c, AlgorithmKind kind) {
  for (const AlgorithmSpec& a : registry())
    if (a.collective == c && a.kind == kind) return &a;
  return nullptr;
}

const AlgorithmSpec* blocking_auto_algorithm(Collective c) {
  for (const AlgorithmSpec& a : registry())
    if (a.collective == c && a.blocking_auto) return &a;
  return nullptr;
}

std::int64_t Bound::at(const Extent& e) const {
  if (of == Of::Constant) return value;
  const std::int64_t x = of == Of::Ranks ? e.nranks : of == Of::Nodes ? e.nnodes : e.max_local;
  return std::max(value, times * (sqrt ? detail::isqrt_ceil(x) : x));
}

std::string Bound::to_string() const {
  if (of == Of::Constant) {
    // 2^k for the large powers of two that mean "no limit" (a window of 2^30 messages).
    for (int k = 20; k < 63; ++k)
      if (value == std::int64_t(1) << k) return "2^" + std::to_string(k);
    return std::to_string(value);
  }
  const char* x = of == Of::Ranks ? "P" : of == Of::Nodes ? "N" : "Q";
  const std::string f = (times != 1 ? std::to_string(times) : std::string()) +
                        (sqrt ? std::string("ceil(sqrt(") + x + "))" : std::string(x));
  return value > 0 ? "max(" + std::to_string(value) + "," + f + ")" : f;
}

std::string ParamSpec::range_text() const {
  return min_value.to_string() + ".." + max_value.to_string() + ", default " +
         default_value.to_string();
}

std::vector<std::int64_t> param_values(const ParamSpec& p, const Extent& e, std::size_t at_most) {
  at_most = std::max<std::size_t>(at_most, 3);
  const std::int64_t lo = p.min_value.at(e), hi = p.max_value.at(e), def = p.default_value.at(e);
  std::vector<std::int64_t> v;
  if (std::uint64_t(hi - lo) < at_most) {
    for (std::int64_t x = lo; x <= hi; ++x) v.push_back(x);
    return v;
  }
  for (std::int64_t x = lo; x <= lo + 3; ++x) v.push_back(x);
  // Powers of two above that, below hi (no doubling past hi: it could overflow).
  for (std::int64_t x = 1; x < hi; x *= 2) {
    if (x > lo + 3) v.push_back(x);
    if (x > hi / 2) break;
  }
  v.push_back(def);
  v.push_back(hi);
  std::sort(v.begin(), v.end());
  v.erase(std::unique(v.begin(), v.end()), v.end());
  if (v.size() <= at_most) return v;
  // Too many: the ends and the default, then the low end (where the edge cases are: radix 2
  // and 3, a window of 1), then powers of two evenly spaced among the rest.
  std::vector<std::int64_t> kept{lo, hi};
  auto keep = [&kept](std::int64_t x) {
    if (std::find(kept.begin(), kept.end(), x) == kept.end()) kept.push_back(x);
  };
  for (std::int64_t x : {def, lo + 1, lo + 2, lo + 3})
    if (kept.size() < at_most) keep(x);
  std::vector<std::int64_t> rest;
  for (std::int64_t x : v)
    if (std::find(kept.begin(), kept.end(), x) == kept.end()) rest.push_back(x);
  const std::size_t more = at_most - kept.size();
  for (std::size_t k = 0; k < more && !rest.empty(); ++k)
    keep(rest[(2 * k + 1) * rest.size() / (2 * more)]);
  std::sort(kept.begin(), kept.end());
  return kept;
}

std::vector<ParamValues> param_grid(const AlgorithmSpec& a, const Extent& e, std::size_t at_most) {
  std::vector<ParamValues> grid{ParamValues{}};
  if (a.params.empty()) return grid;
  const std::size_t share = std::size_t(std::floor(
      std::pow(double(std::max<std::size_t>(at_most, 1)), 1.0 / double(a.params.size()))));
  for (const ParamSpec& p : a.params) {
    std::vector<ParamValues> next;
    for (const ParamValues& head : grid)
      for (std::int64_t x : param_values(p, e, share)) {
        next.push_back(head);
        next.back().push_back(x);
      }
    grid = std::move(next);
  }
  return grid;
}

std::string Selection::to_string() const {
  std::string s = algorithm ? algorithm->name : "none";
  for (std::size_t i = 0; algorithm && i < algorithm->params.size(); ++i)
    s += (i == 0 ? ":" : ",") + std::string(algorithm->params[i].name) + "=" +
         std::to_string(values[i]);
  return s;
}

std::int64_t Selection::value(std::string_view param) const {
  for (std::size_t i = 0; i < algorithm->params.size(); ++i)
    if (param == algorithm->params[i].name) return values[i];
  return 0;
}

}  // namespace mpia
