#include "collective/selection.hpp"

#include "util/error.hpp"

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <mutex>
#include <set>
#include <string>

namespace mpia {

namespace {

[[noreturn]] void bad(std::string_view text, const std::string& why) {
  fail(MPI_ERR_INFO_VALUE,
       "mpi-advance: bad algorithm selection '" + std::string(text) + "': " + why);
}

bool parse_int(std::string_view s, std::int64_t& out) {
  if (s.empty()) return false;
  std::string str(s);
  char* end = nullptr;
  errno = 0;
  const long long v = std::strtoll(str.c_str(), &end, 10);
  if (errno != 0 || *end != '\0') return false;
  out = v;
  return true;
}

}  // namespace

namespace {

// The name and the key=value pairs (no range checks: they need the communicator's extent).
Selection parse_names(Collective c, std::string_view text, std::vector<bool>& given) {
  const std::size_t colon = text.find(':');
  const std::string_view name = text.substr(0, colon);
  Selection sel;
  sel.algorithm = find_algorithm(c, name);
  if (!sel.algorithm) {
    std::string known;
    for (int i = 0; const AlgorithmSpec* a = algorithm_at(c, i); ++i)
      known += std::string(i ? ", " : "") + a->name;
    bad(text, "unknown " + std::string(collective_name(c)) + " algorithm '" + std::string(name) +
                  "' (known: " + known + ")");
  }
  const auto& specs = sel.algorithm->params;
  sel.values.resize(specs.size());
  given.assign(specs.size(), false);
  if (colon != std::string_view::npos) {
    std::string_view rest = text.substr(colon + 1);
    while (true) {
      const std::size_t comma = rest.find(',');
      const std::string_view kv = rest.substr(0, comma);
      const std::size_t eq = kv.find('=');
      if (eq == std::string_view::npos)
        bad(text, "expected key=value, got '" + std::string(kv) + "'");
      const std::string_view key = kv.substr(0, eq);
      std::size_t i = 0;
      while (i < specs.size() && key != specs[i].name) ++i;
      if (i == specs.size())
        bad(text,
            "algorithm '" + std::string(name) + "' has no parameter '" + std::string(key) + "'");
      if (given[i]) bad(text, "parameter '" + std::string(key) + "' given twice");
      if (!parse_int(kv.substr(eq + 1), sel.values[i]))
        bad(text, "parameter '" + std::string(key) + "' needs an integer");
      given[i] = true;
      if (comma == std::string_view::npos) break;
      rest = rest.substr(comma + 1);
    }
  }
  return sel;
}

}  // namespace

void warn_once(const std::string& msg) {
  static std::mutex m;
  static std::set<std::string> said;
  std::lock_guard<std::mutex> lock(m);
  if (said.insert(msg).second) std::fprintf(stderr, "%s\n", msg.c_str());
}

const AlgorithmSpec& parse_algorithm(Collective c, std::string_view text) {
  std::vector<bool> given;
  return *parse_names(c, text, given).algorithm;
}

Selection parse_selection(Collective c, std::string_view text, const Extent& extent, bool strict) {
  std::vector<bool> given;
  Selection sel = parse_names(c, text, given);
  const auto& specs = sel.algorithm->params;
  const int nranks = extent.nranks;
  for (std::size_t i = 0; i < specs.size(); ++i) {
    if (!given[i]) {
      sel.values[i] = specs[i].default_value.at(extent);
      continue;
    }
    const std::int64_t lo = specs[i].min_value.at(extent), hi = specs[i].max_value.at(extent);
    if (sel.values[i] >= lo && sel.values[i] <= hi) continue;
    const std::string range = std::string(specs[i].name) + "=" + std::to_string(sel.values[i]) +
                              " outside " + std::to_string(lo) + ".." + std::to_string(hi) +
                              " for " + std::to_string(nranks) + " ranks" +
                              (extent.nnodes > 1 || sel.algorithm->needs_locality
                                   ? " on " + std::to_string(extent.nnodes) + " nodes (at most " +
                                         std::to_string(extent.max_local) + " per node)"
                                   : "");
    if (strict) bad(text, range);
    warn_once("mpi-advance: " + std::string(collective_env(c)) + "='" + std::string(text) +
              "': " + range + "; clamped");
    sel.values[i] = sel.values[i] < lo ? lo : hi;
  }
  return sel;
}

}  // namespace mpia
