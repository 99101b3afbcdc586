#include "collective/model.hpp"

#include "collective/selection.hpp"
#include "locality/node_map.hpp"
#include "util/strings.hpp"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

namespace mpia {

namespace {

struct Key {
  const char* name;
  double CostModel::*field;
};
// In the order of the terms (enum Term): a prediction is the dot product of the two.
constexpr Key kKeys[] = {
    {"o_intra", &CostModel::o_intra},           {"o_inter", &CostModel::o_inter},
    {"lat_intra", &CostModel::lat_intra},       {"lat_inter", &CostModel::lat_inter},
    {"bw_intra", &CostModel::bw_intra},         {"bw_inter", &CostModel::bw_inter},
    {"bw_copy", &CostModel::bw_copy},           {"o_recv_intra", &CostModel::o_recv_intra},
    {"o_recv_inter", &CostModel::o_recv_inter}, {"g_inflight", &CostModel::g_inflight},
};
static_assert(sizeof kKeys / sizeof kKeys[0] == kModelTerms, "one key per term");

double inverse(double bw) { return bw > 0 ? 1.0 / bw : 0.0; }

using namespace detail;

// The constants whose term is bytes: the model holds a bandwidth, the term its inverse.
constexpr bool is_bandwidth(int i) { return i == kBytesIntra || i == kBytesNic || i == kBytesCopy; }

}  // namespace

void apply_cost_model(CostModel& m, std::string_view text, std::string* warnings) {
  for (const std::string& kv : split(std::string(text), ',')) {
    const std::size_t eq = kv.find('=');
    const Key* key = nullptr;
    for (const Key& k : kKeys)
      if (eq != std::string::npos && kv.compare(0, eq, k.name) == 0 && eq == std::strlen(k.name))
        key = &k;
    char* end = nullptr;
    const double v = eq == std::string::npos ? -1 : std::strtod(kv.c_str() + eq + 1, &end);
    if (!key || v < 0 || !end || *end != '\0' || end == kv.c_str() + eq + 1) {
      if (warnings) {
        *warnings += "ignoring '" + kv + "' (expected key=value, value >= 0, key one of";
        for (const Key& k : kKeys) *warnings += std::string(&k == kKeys ? " " : ", ") + k.name;
        *warnings += ")\n";
      }
      continue;
    }
    m.*(key->field) = v;
  }
}

const char* cost_model_key(int i) { return i >= 0 && i < kModelTerms ? kKeys[i].name : ""; }

double& cost_model_value(CostModel& m, int i) { return m.*(kKeys[i].field); }
double cost_model_value(const CostModel& m, int i) { return m.*(kKeys[i].field); }

CostModel parse_cost_model(std::string_view text) {
  CostModel m;
  apply_cost_model(m, text);
  return m;
}

std::string to_string(const CostModel& m) {
  std::string s;
  char buf[64];
  for (const Key& k : kKeys) {
    std::snprintf(buf, sizeof buf, "%s%s=%.6g", s.empty() ? "" : ",", k.name, m.*(k.field));
    s += buf;
  }
  return s;
}

Machine machine_of(const NodeMap& map) {
  Machine m;
  m.nranks = map.size();
  m.nnodes = std::max(1, map.nnodes());
  m.ppn = std::max(1, map.max_local());
  m.blocked = map.uniform();
  for (int p = 0; p < map.size() && m.blocked; ++p) m.blocked = map.node_of[p] == p / m.ppn;
  return m;
}

Terms predicted_terms(const Selection& s, const Machine& m, const Stats& st) {
  if (m.nranks <= 1 || !s.algorithm->cost) return Terms{};
  return s.algorithm->cost(m, st, s.values);
}

Terms predicted_terms(const Selection& s, const Machine& m, std::int64_t block_bytes) {
  Stats st;
  st.max_block = block_bytes;
  return predicted_terms(s, m, st);
}

namespace {

double dot(const CostModel& model, const TermArray& c) {
  double s = 0;
  for (int i = 0; i < kModelTerms; ++i) {
    const double v = model.*(kKeys[i].field);
    s += c[std::size_t(i)] * (is_bandwidth(i) ? inverse(v) : v);
  }
  return s;
}

}  // namespace

double predicted_seconds(const CostModel& model, const Terms& t) {
  return dot(model, t.c) + std::max(dot(model, t.cpu), dot(model, t.wire));
}

TermArray effective_terms(const CostModel& model, const Terms& t) {
  const TermArray& more = dot(model, t.cpu) >= dot(model, t.wire) ? t.cpu : t.wire;
  TermArray e = t.c;
  for (std::size_t i = 0; i < e.size(); ++i) e[i] += more[i];
  return e;
}

double predicted_seconds(const CostModel& model, const Selection& s, const Machine& m,
                         std::int64_t block_bytes) {
  return predicted_seconds(model, predicted_terms(s, m, block_bytes));
}

std::vector<Selection> candidates(Collective c, const Machine& m, const Stats& st) {
  std::vector<const AlgorithmSpec*> records;
  for (const AlgorithmSpec& a : registry())
    if (a.collective == c && a.candidates) records.push_back(&a);
  std::stable_sort(
      records.begin(), records.end(),
      [](const AlgorithmSpec* a, const AlgorithmSpec* b) { return a->search < b->search; });
  std::vector<Selection> out;
  for (const AlgorithmSpec* a : records)
    for (ParamValues& v : a->candidates(m, st)) {
      Selection s;
      s.algorithm = a;
      s.values = std::move(v);  // in range by construction
      out.push_back(std::move(s));
    }
  return out;
}

std::vector<Ranked> rank(Collective c, const CostModel& model, const Machine& m, const Stats& st) {
  std::vector<Ranked> out;
  for (Selection& s : candidates(c, m, st)) {
    const double t = predicted_seconds(model, predicted_terms(s, m, st));
    out.push_back({std::move(s), t});
  }
  if (out.empty()) return out;
  // The pick: a later candidate replaces an earlier one only when faster -- for alltoall by
  // more than a rounding error (its many radices tie in exact arithmetic), for the others at
  // all (as their searches always have).
  const double tie = c == Collective::Alltoall ? 1e-9 : 0.0;
  std::size_t best = 0;
  for (std::size_t i = 1; i < out.size(); ++i)
    if (out[i].seconds < out[best].seconds * (1 - tie)) best = i;
  std::rotate(out.begin(), out.begin() + best, out.begin() + best + 1);
  std::stable_sort(out.begin() + 1, out.end(),
                   [](const Ranked& a, const Ranked& b) { return a.seconds < b.seconds; });
  return out;
}

Selection choose(Collective c, const CostModel& model, const Machine& m, const Stats& st) {
  std::vector<Ranked> ranked = rank(c, model, m, st);
  return ranked.empty() ? Selection{} : std::move(ranked.front().selection);
}

std::vector<Selection> alltoall_candidates(const Machine& m) {
  return candidates(Collective::Alltoall, m, Stats{});
}

Selection choose_alltoall(const CostModel& model, const Machine& m, std::int64_t block_bytes) {
  Stats st;
  st.max_block = block_bytes;
  return choose(Collective::Alltoall, model, m, st);
}

Stats stats_of(const AlltoallvStats& v) {
  Stats st;
  st.max_block = v.max_block;
  st.rank_bytes = v.rank_bytes;
  st.rank_messages = v.rank_messages;
  st.remote_nodes = v.remote_nodes;
  return st;
}

Stats stats_of(const NeighborStats& n) {
  Stats st;
  st.max_block = n.max_message;
  st.remote_edges = n.remote_edges;
  st.remote_nodes = n.remote_nodes;
  return st;
}

Selection choose_alltoallv(const CostModel& model, const Machine& m, const AlltoallvStats& st) {
  return choose(Collective::Alltoallv, model, m, stats_of(st));
}

std::vector<Ranked> rank_alltoallv(const CostModel& model, const Machine& m,
                                   const AlltoallvStats& st) {
  return rank(Collective::Alltoallv, model, m, stats_of(st));
}

Selection choose_neighbor(const CostModel& model, const Machine& m, const NeighborStats& st) {
  return choose(Collective::NeighborAlltoallv, model, m, stats_of(st));
}

std::vector<Ranked> rank_neighbor(const CostModel& model, const Machine& m,
                                  const NeighborStats& st) {
  return rank(Collective::NeighborAlltoallv, model, m, stats_of(st));
}

}  // namespace mpia
