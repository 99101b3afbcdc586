#include "locality/node_map.hpp"

#include "util/error.hpp"

#include <mpi.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <map>
#include <string>

namespace mpia {

int NodeMap::max_local() const {
  std::size_t m = 0;
  for (const auto& n : members) m = std::max(m, n.size());
  return int(m);
}

OffNode off_node(const NodeMap& map, int rank, const std::vector<int>* dest,
                 const std::vector<std::int64_t>& bytes) {
  OffNode out;
  std::vector<char> seen(std::size_t(map.nnodes()), 0);
  const int mine = map.node_of[std::size_t(rank)];
  for (std::size_t i = 0; i < bytes.size(); ++i) {
    const int d = dest ? (*dest)[i] : int(i);
    if (d < 0 || bytes[i] == 0) continue;
    const int n = map.node_of[std::size_t(d)];
    if (n == mine) continue;
    ++out.sends;
    if (!seen[std::size_t(n)]) seen[std::size_t(n)] = 1, ++out.nodes;
  }
  return out;
}

bool NodeMap::uniform() const {
  for (const auto& n : members)
    if (n.size() != members.front().size()) return false;
  return true;
}

NodeMap make_node_map(const std::vector<int>& labels) {
  NodeMap m;
  const int P = int(labels.size());
  m.node_of.resize(P);
  m.local_of.resize(P);
  std::map<int, int> index;  // label -> node number, in order of first appearance
  for (int r = 0; r < P; ++r) {
    const auto it = index.emplace(labels[r], int(index.size())).first;
    const int node = it->second;
    if (node == int(m.members.size())) m.members.emplace_back();
    m.node_of[r] = node;
    m.local_of[r] = int(m.members[node].size());
    m.members[node].push_back(r);
  }
  return m;
}

NodeMap single_node_map(int nranks) { return make_node_map(std::vector<int>(nranks, 0)); }

namespace {

[[noreturn]] void bad(std::string_view text, const std::string& why) {
  fail(MPI_ERR_ARG, "mpi-advance: MPIX_LOCALITY='" + std::string(text) + "': " + why +
                        " (expected ppn:K, ppn:K,roundrobin or nodes:ID,ID,...)");
}

bool parse_nonneg(std::string_view s, long& out) {
  if (s.empty() || s.size() > 9) return false;
  for (char c : s)
    if (c < '0' || c > '9') return false;
  out = std::strtol(std::string(s).c_str(), nullptr, 10);
  return true;
}

}  // namespace

std::vector<int> parse_locality_spec(std::string_view text, int world_size) {
  std::vector<int> labels(std::size_t(world_size > 0 ? world_size : 0));
  if (text.rfind("ppn:", 0) == 0) {
    std::string_view rest = text.substr(4);
    bool roundrobin = false;
    if (const std::size_t comma = rest.find(','); comma != std::string_view::npos) {
      if (rest.substr(comma + 1) != "roundrobin")
        bad(text, "the only option after ppn:K is ',roundrobin'");
      roundrobin = true;
      rest = rest.substr(0, comma);
    }
    long k = 0;
    if (!parse_nonneg(rest, k) || k < 1) bad(text, "K must be a whole number >= 1");
    const long nodes = (world_size + k - 1) / k;
    for (int r = 0; r < world_size; ++r) labels[r] = int(roundrobin ? r % nodes : r / k);
    return labels;
  }
  if (text.rfind("nodes:", 0) == 0) {
    std::string_view rest = text.substr(6);
    int n = 0;
    while (true) {
      const std::size_t comma = rest.find(',');
      long id = 0;
      if (!parse_nonneg(rest.substr(0, comma), id))
        bad(text, "node ids must be whole numbers >= 0, separated by commas");
      if (n < world_size) labels[n] = int(id);
      ++n;
      if (comma == std::string_view::npos) break;
      rest = rest.substr(comma + 1);
    }
    if (n != world_size)
      bad(text, std::to_string(n) + " node ids given for " + std::to_string(world_size) +
                    " ranks of MPI_COMM_WORLD");
    return labels;
  }
  bad(text, "unknown form");
}

}  // namespace mpia
