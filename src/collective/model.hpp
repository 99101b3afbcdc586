// The cost model behind "auto": what an algorithm costs on a machine of N nodes of Q ranks,
// from the schedule's structure (round count K and block count D of the radix-r exchange, seed
// 003 Props. 1-4; the two-level K1/D1 within a node and K2/D2 between nodes) and ten machine
// constants: per-message overhead at the sender and at the receiver, latency and bandwidth,
// each within a node and between nodes (a node's NIC shared by its ranks' concurrent flows),
// the bandwidth of local copies, and what each message in flight through a node's NIC beyond
// one exchange per rank costs (the all-at-once exchanges: linear, the direct alltoallv and
// neighbor exchanges).
//
// A prediction is linear in the constants: predicted_terms() returns the coefficient of each
// (messages sent and received, latencies, bytes per link, bytes copied, messages in flight),
// and the time is their dot product with the model. The calibration (scripts/calibrate.py)
// fits the constants to measured times with the same terms, printed by the mpia_model tool.
//
// Every input (P, nodes, ranks per node, placement, the block's packed size) is a value all
// ranks agree on, so every rank makes the same choice without communicating.
#pragma once

#include "collective/registry.hpp"

#include <array>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace mpia {

struct NodeMap;

struct CostModel {
  // Built-in defaults: the simulated cluster of scripts/smpi/platform.env (an InfiniBand
  // HDR-class machine: 100 Gb/s NIC per node, shared memory within a node).
  double o_intra = 5.0e-7;    // s of CPU per message sent within a node (all of it, when
                              // o_recv_intra is 0: the simulation charges it to the sender)
  double o_inter = 5.0e-7;    // s of CPU per message sent between nodes
  double lat_intra = 2.0e-7;  // s of latency within a node
  double lat_inter = 1.0e-6;  // s of latency between nodes (NIC, switch, NIC)
  double bw_intra = 40e9;     // bytes/s of one flow within a node
  double bw_inter = 12.5e9;   // bytes/s of a node's NIC, shared by the node's concurrent flows
  double bw_copy = 0;         // bytes/s of local pack/unpack copies (0: free, as in SMPI)
  double o_recv_intra = 0;    // s of CPU per message received within a node
  double o_recv_inter = 0;    // s of CPU per message received from another node
  double g_inflight = 0;      // s per message in flight through a node's NIC at once beyond one
                              // send and one receive per rank (a node's Q ranks with k off-node
                              // exchanges each outstanding: 2Q(k-1) messages; linear: k = P-Q)
};

// The constants' names ("o_intra", ..., "g_inflight"), in CostModel's order (kModelTerms of
// them, cost.hpp), the keys of MPIX_COST_MODEL and of a "model" line.
const char* cost_model_key(int i);
// Constant i (0 <= i < kModelTerms) of a model, in cost_model_key's order.
double& cost_model_value(CostModel& m, int i);
double cost_model_value(const CostModel& m, int i);

// Overrides the model's constants from text "key=value,key=value" (the syntax of
// MPIX_COST_MODEL and of a tuning file's "model" line). Unknown keys and bad values are
// appended to *warnings (when given) and ignored.
void apply_cost_model(CostModel& m, std::string_view text, std::string* warnings = nullptr);
CostModel parse_cost_model(std::string_view text);
std::string to_string(const CostModel& m);

// Machine, Stats and Terms: collective/cost.hpp.
Machine machine_of(const NodeMap& map);

// A selection's terms: its record's cost (none for a single rank, or for a record without a
// cost: system, auto).
Terms predicted_terms(const Selection& s, const Machine& m, const Stats& st);
Terms predicted_terms(const Selection& s, const Machine& m, std::int64_t block_bytes);
double predicted_seconds(const CostModel& model, const Terms& t);
// The coefficients that hold under this model's constants (c plus the larger of cpu and wire):
// what a calibration fits, iterating until the branch no longer changes.
TermArray effective_terms(const CostModel& model, const Terms& t);
double predicted_seconds(const CostModel& model, const Selection& s, const Machine& m,
                         std::int64_t block_bytes);

// The search. The candidates of collective c: every record's candidates(m, st), records in
// their search order (ties go to the earlier: the simpler algorithm, the smaller radix).
std::vector<Selection> candidates(Collective c, const Machine& m, const Stats& st);

// A candidate with its predicted time.
struct Ranked {
  Selection selection;
  double seconds = 0;
};
// Every candidate with its predicted time: the pick (the first of least time) first, then the
// others by predicted time: what a measured trial shortlists (collective/shortlist.hpp).
std::vector<Ranked> rank(Collective c, const CostModel& model, const Machine& m, const Stats& st);
// The pick: rank(...).front(), or no algorithm when there is no candidate.
Selection choose(Collective c, const CostModel& model, const Machine& m, const Stats& st);

// The alltoall candidates (linear, pairwise, tra at every radix of the ladder, tra2 at every
// pair on several nodes, the Bruck variants, as their records say).
std::vector<Selection> alltoall_candidates(const Machine& m);
Selection choose_alltoall(const CostModel& model, const Machine& m, std::int64_t block_bytes);

// Alltoallv statistics, each the maximum over ranks (the slowest rank sets the pace).
struct AlltoallvStats {
  std::int64_t max_block = 0;      // largest block any rank sends
  std::int64_t rank_bytes = 0;     // most bytes one rank sends
  std::int64_t rank_messages = 0;  // most non-empty blocks one rank sends
  std::int64_t remote_nodes = 0;   // most distinct other nodes one rank's non-empty blocks
                                   // reach (0: not known or none, priced as every other node)
};
Stats stats_of(const AlltoallvStats& st);
Selection choose_alltoallv(const CostModel& model, const Machine& m, const AlltoallvStats& st);
std::vector<Ranked> rank_alltoallv(const CostModel& model, const Machine& m,
                                   const AlltoallvStats& st);

// Neighbor alltoallv statistics, each the maximum over ranks.
struct NeighborStats {
  std::int64_t max_message = 0;   // largest message on any edge
  std::int64_t remote_edges = 0;  // most out-edges of one rank that leave its node
  std::int64_t remote_nodes = 0;  // most distinct other nodes one rank's out-edges reach
};
Stats stats_of(const NeighborStats& st);
Selection choose_neighbor(const CostModel& model, const Machine& m, const NeighborStats& st);
std::vector<Ranked> rank_neighbor(const CostModel& model, const Machine& m,
                                  const NeighborStats& st);

}  // namespace mpia
