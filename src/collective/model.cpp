#include "collective/model.hpp"

#include "collective/selection.hpp"

#include <cstdio>
#include <cstdlib>
#include <string>

namespace mpia {

CostModel parse_cost_model(std::string_view text) {
  CostModel m;
  const std::string s(text);
  std::size_t at = 0;
  while (at < s.size()) {
    std::size_t comma = s.find(',', at);
    if (comma == std::string::npos) comma = s.size();
    const std::string kv = s.substr(at, comma - at);
    const std::size_t eq = kv.find('=');
    const double v = eq == std::string::npos ? -1 : std::atof(kv.c_str() + eq + 1);
    const std::string k = kv.substr(0, eq);
    if (v < 0) std::fprintf(stderr, "mpi-advance: MPIX_COST_MODEL: ignoring '%s'\n", kv.c_str());
    else if (k == "alpha") m.alpha = v;
    else if (k == "alpha_overlap") m.alpha_overlap = v;
    else if (k == "beta") m.beta = v;
    else if (k == "gamma") m.gamma = v;
    else std::fprintf(stderr, "mpi-advance: MPIX_COST_MODEL: unknown key '%s'\n", k.c_str());
    at = comma + 1;
  }
  return m;
}

double predicted_seconds(const CostModel& m, const Selection& s, int P, std::int64_t n) {
  const std::string name = s.algorithm->name;
  const double bytes = double(n);
  if (name == "linear") return (P - 1) * (m.alpha_overlap + bytes * m.beta);
  if (name == "pairwise") return (P - 1) * (m.alpha + bytes * m.beta);
  std::int64_t r = 2;
  if (name == "tra") r = s.value("radix");
  const double K = double(tra_rounds_K(P, r)), D = double(tra_blocks_D(P, r));
  // Every forwarded block is packed once on the way out; the published (basic) variant also
  // rotates twice and unpacks every round.
  double copies = D * bytes;
  if (name == "bruck") copies += 2.0 * P * bytes + D * bytes;
  if (name == "modified_bruck") copies += P * bytes + D * bytes;
  if (name == "zero_copy_bruck") copies = 0.5 * D * bytes;  // datatype engine, no staging
  return K * m.alpha + D * bytes * m.beta + copies * m.gamma;
}

Selection choose_alltoall(const CostModel& m, int P, std::int64_t n) {
  Selection best = parse_selection(Collective::Alltoall, "linear", P, true);
  double best_t = predicted_seconds(m, best, P, n);
  for (int r = 2; r <= P; ++r) {
    Selection s = parse_selection(Collective::Alltoall, "tra:radix=" + std::to_string(r), P, true);
    const double t = predicted_seconds(m, s, P, n);
    if (t < best_t) best = s, best_t = t;
  }
  return best;
}

}  // namespace mpia

namespace mpia {

// Direct exchange (a window of 8, which bounds outstanding requests and absorbs late arrivals)
// unless the blocks are small and near-uniform and P is small enough for the P x P size
// matrix: then the radix exchange trades messages for forwarded bytes as for alltoall.
Selection choose_alltoallv(const CostModel& m, int P, const AlltoallvStats& st) {
  Selection direct = parse_selection(Collective::Alltoallv, "multipair_waitany", P, true);
  if (st.rank_messages <= direct.values[0])
    direct = parse_selection(Collective::Alltoallv, "linear", P, true);
  const double t_direct = st.rank_messages * m.alpha_overlap + st.rank_bytes * m.beta;
  const double avg = st.rank_messages > 0 ? double(st.rank_bytes) / st.rank_messages : 0.0;
  const bool near_uniform = st.rank_messages >= P - 1 && st.max_block <= 2 * avg + 8;
  if (P < 4 || P > 1024 || !near_uniform) return direct;
  Selection best = direct;
  double best_t = t_direct;
  for (int r = 2; r <= P; ++r) {
    const double K = double(tra_rounds_K(P, r)), D = double(tra_blocks_D(P, r));
    const double t = K * m.alpha + D * st.max_block * (m.beta + m.gamma);
    if (t < best_t) {
      best = parse_selection(Collective::Alltoallv, "bruck:radix=" + std::to_string(r), P, true);
      best_t = t;
    }
  }
  return best;
}

}  // namespace mpia
