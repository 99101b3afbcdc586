#include "collective/tuning.hpp"

#include <cstdlib>
#include <sstream>

namespace mpia {

namespace {

bool parse_count(const std::string& s, std::int64_t& v) {
  if (s.empty()) return false;
  char* end = nullptr;
  const long long x = std::strtoll(s.c_str(), &end, 10);
  if (*end != '\0' || x < 0) return false;
  v = x;
  return true;
}

// "lo-hi", "lo-", "-hi" or "v".
bool parse_range(const std::string& s, std::int64_t out[2]) {
  const std::size_t dash = s.find('-');
  if (dash == std::string::npos) return parse_count(s, out[0]) && (out[1] = out[0], true);
  const std::string lo = s.substr(0, dash), hi = s.substr(dash + 1);
  if (!lo.empty() && !parse_count(lo, out[0])) return false;
  if (!hi.empty() && !parse_count(hi, out[1])) return false;
  return out[0] <= out[1];
}

bool in(const std::int64_t range[2], std::int64_t v) { return v >= range[0] && v <= range[1]; }

}  // namespace

void parse_tuning(std::string_view text, Tuning& t, std::string& warnings) {
  std::istringstream lines{std::string(text)};
  std::string line;
  for (int n = 1; std::getline(lines, line); ++n) {
    const std::size_t hash = line.find('#');
    if (hash != std::string::npos) line.resize(hash);
    std::istringstream words(line);
    std::vector<std::string> w;
    for (std::string x; words >> x;) w.push_back(x);
    if (w.empty()) continue;
    const std::string where = "line " + std::to_string(n) + ": ";
    if (w[0] == "model") {
      if (w.size() != 2) {
        warnings += where + "expected 'model key=value,...'\n";
        continue;
      }
      std::string bad;
      apply_cost_model(t.model, w[1], &bad);
      if (!bad.empty()) warnings += where + bad;
      continue;
    }
    TuningRule r;
    if (!collective_from_name(w[0], r.collective)) {
      warnings += where + "unknown collective or keyword '" + w[0] + "'\n";
      continue;
    }
    bool ok = w.size() >= 2;
    for (std::size_t i = 1; ok && i + 1 < w.size(); ++i) {
      const std::size_t eq = w[i].find('=');
      const std::string key = w[i].substr(0, eq == std::string::npos ? w[i].size() : eq);
      const std::string value = eq == std::string::npos ? "" : w[i].substr(eq + 1);
      std::int64_t* range = key == "nranks"  ? r.nranks
                            : key == "bytes" ? r.bytes
                            : key == "nodes" ? r.nodes
                                             : nullptr;
      ok = range && parse_range(value, range);
      if (!ok)
        warnings += where + "bad condition '" + w[i] + "' (nranks=, bytes=, nodes= with lo-hi)\n";
    }
    if (!ok) {
      if (w.size() < 2) warnings += where + "a rule needs a selection\n";
      continue;
    }
    r.selection = w.back();
    const std::string name = r.selection.substr(0, r.selection.find(':'));
    if (!find_algorithm(r.collective, name)) {
      warnings += where + "no " + w[0] + " algorithm '" + name + "'\n";
      continue;
    }
    t.rules.push_back(std::move(r));
  }
}

const TuningRule* find_rule(const Tuning& t, Collective c, std::int64_t nranks, std::int64_t nodes,
                            std::int64_t bytes) {
  for (const TuningRule& r : t.rules)
    if (r.collective == c && in(r.nranks, nranks) && in(r.nodes, nodes) &&
        (bytes < 0 ? r.bytes[0] == 0 && r.bytes[1] == INT64_MAX : in(r.bytes, bytes)))
      return &r;
  return nullptr;
}

}  // namespace mpia
