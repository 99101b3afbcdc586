// A tuning file (MPIX_TUNING=<path>): the cost model's constants for this machine and rules
// that pin auto's choice per (collective, P range, size range, node range). It is what
// scripts/calibrate.py writes, in the syntax a user writes by hand:
//
//   # comment
//   model
//   o_intra=3e-7,o_inter=1.1e-6,lat_intra=2e-7,lat_inter=1.5e-6,bw_intra=2e10,bw_inter=1.2e10,bw_copy=8e9,o_recv_intra=1e-7,o_recv_inter=2e-7,g_inflight=5e-9
//
// (the keys are CostModel's, model.hpp; one not given keeps its value)
//   alltoall  nranks=64-256 bytes=0-512 tra2:radix_intra=2,radix_inter=4
//   alltoallv bytes=8192-  multipair_waitany:window=16
//   neighbor_alltoallv nodes=2- direct
//
// A rule is a collective's name, any of nranks=, bytes=, nodes= (a range "lo-hi", "lo-" or a
// single value; inclusive), and a selection in the syntax of MPIX_ALLTOALL. The first rule that
// matches wins. "bytes" is the block's packed size for alltoall, the largest block for
// alltoallv, the largest message for neighbor_alltoallv.
//
// Precedence: the per-call MPI_Info key, then MPIX_Comm_set_algorithm / the environment
// (MPIX_ALLTOALL...), then the file's rules, then the cost model (whose constants come from
// MPIX_COST_MODEL, then the file's model line, then the built-in defaults).
#pragma once

#include "collective/model.hpp"
#include "collective/registry.hpp"

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace mpia {

struct TuningRule {
  Collective collective = Collective::Alltoall;
  std::int64_t nranks[2] = {0, INT64_MAX};
  std::int64_t bytes[2] = {0, INT64_MAX};
  std::int64_t nodes[2] = {0, INT64_MAX};
  std::string selection;  // "tra:radix=4", "auto"
};

struct Tuning {
  CostModel model;
  std::vector<TuningRule> rules;
};

// Parses a tuning file's text into t (its model line applied over t.model). What cannot be
// parsed is skipped with a line in *warnings ("line N: ...").
void parse_tuning(std::string_view text, Tuning& t, std::string& warnings);

// The first rule for collective c matching P ranks on `nodes` nodes and `bytes`, or nullptr.
// bytes < 0 (not agreed: the blocking alltoallv and neighbor calls) matches only rules without
// a bytes condition.
const TuningRule* find_rule(const Tuning& t, Collective c, std::int64_t nranks, std::int64_t nodes,
                            std::int64_t bytes);

}  // namespace mpia

namespace mpia {

// What auto runs for collective c on machine m: the tuning file's first matching rule, else
// model(). `bytes` as for find_rule.
template <class Model>
Selection resolve_auto(const Tuning& t, Collective c, const Machine& m, std::int64_t bytes,
                       Model&& model);

}  // namespace mpia

#include "collective/selection.hpp"

namespace mpia {

template <class Model>
Selection resolve_auto(const Tuning& t, Collective c, const Machine& m, std::int64_t bytes,
                       Model&& model) {
  if (const TuningRule* r = find_rule(t, c, m.nranks, m.nnodes, bytes)) {
    Selection s = parse_selection(c, r->selection, Extent(m.nranks, m.nnodes, m.ppn), false);
    if (s.algorithm->kind != AlgorithmKind::Auto) return s;
  }
  return model();
}

}  // namespace mpia
