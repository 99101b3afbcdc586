#include "collective/registry.hpp"

#include "util/error.hpp"

#include <mpi.h>

#include <algorithm>
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
    const bool learns = a.collective == Collective::Alltoallv ? a.learn_alltoallv != nullptr
                        : a.collective == Collective::NeighborAlltoallv
                            ? a.learn_neighbor != nullptr
                            : false;
    if (a.needs_peer_sizes != learns) bad(a, "needs_peer_sizes exactly when it learns them");
    if (a.candidates && !a.cost) bad(a, "a candidate has a cost");
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
  return table;
}

}  // namespace

const char* collective_name(Collective c) {
  switch (c) {
    case Collective::Alltoall:
      return "alltoall";
    case Collective::Alltoallv:
      return "alltoallv";
    default:
      return "neighbor_alltoallv";
  }
}
const char* collective_env(Collective c) {
  switch (c) {
    case Collective::Alltoall:
      return "MPIX_ALLTOALL";
    case Collective::Alltoallv:
      return "MPIX_ALLTOALLV";
    default:
      return "MPIX_NEIGHBOR_ALLTOALLV";
  }
}
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
