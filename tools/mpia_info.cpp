// mpia_info: what this installation of mpi-advance is and what it would do, without MPI ranks
// (as ompi_info and ucc_info -A are for their libraries).
//
//   mpia_info                          version and build configuration
//   mpia_info --algorithms [--collective C] [--markdown]
//                                      every algorithm: parameters, ranges, defaults,
//                                      restrictions, reference and cost formula
//   mpia_info --rank --collective C --nranks P [--ppn Q] [--roundrobin] --bytes B
//             [--stats K=V,...] [--tuning FILE] [--model K=V,...]
//                                      what auto picks for that machine and block size, and the
//                                      model's predicted time of every candidate, fastest first
//   --json                             any of them as JSON, for scripts
//
// Exit status: 0, 1 on a run-time error (an unreadable tuning file), 2 on a usage error.
#include "collective/model.hpp"
#include "collective/registry.hpp"
#include "collective/selection.hpp"
#include "collective/tuning.hpp"
#include "mpia_config.h"
#include "util/error.hpp"
#include "util/strings.hpp"

#include <mpi.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <iostream>
#include <sstream>
#include <string>
#include <vector>

namespace {

using namespace mpia;

const char* const kHelp =
    "usage: mpia_info [--json]\n"
    "       mpia_info --algorithms [--collective C] [--markdown | --json]\n"
    "       mpia_info --rank --collective C --nranks P [--ppn Q] [--roundrobin] --bytes B\n"
    "                 [--stats K=V,...] [--tuning FILE] [--model K=V,...] [--json]\n"
    "\n"
    "  (no mode)      version and build configuration: the MPI library it was built against,\n"
    "                 hwloc, Fortran, the drop-in library\n"
    "  --algorithms   every algorithm of every collective (or of --collective C: alltoall,\n"
    "                 alltoallv, neighbor_alltoallv) with its parameters, their ranges and\n"
    "                 defaults, its restrictions, its reference and the cost model's formula\n"
    "                 for it (and their notation); --markdown prints docs/algorithms.md\n"
    "  --rank         what auto runs for collective C on P ranks, Q per node (block placement;\n"
    "                 --roundrobin for the other), blocks of B bytes: a tuning file's rule, else\n"
    "                 the cost model's pick, and every candidate with its predicted time\n"
    "  --stats        the other statistics of a v or neighbor call (rank_bytes, rank_messages,\n"
    "                 remote_edges, remote_nodes; default: every rank sends B to every peer)\n"
    "  --tuning FILE  a tuning file (MPIX_TUNING); --model K=V,... constants (MPIX_COST_MODEL)\n"
    "  --json         JSON instead of text\n"
    "  --help         this text\n"
    "\n"
    "exit status: 0; 1 on a run-time error; 2 on a usage error (an option of another mode\n"
    "included: --collective alone, --bytes with --algorithms)\n";

[[noreturn]] void usage(const std::string& why) {
  std::fprintf(stderr, "mpia_info: %s\n%s", why.c_str(), kHelp);
  std::exit(2);
}

// A JSON string literal.
std::string quoted(const std::string& s) {
  std::string out = "\"";
  for (char c : s) {
    if (c == '"' || c == '\\')
      out += '\\', out += c;
    else if (c == '\n')
      out += "\\n";
    else if (static_cast<unsigned char>(c) < 0x20) {
      char buf[8];
      std::snprintf(buf, sizeof buf, "\\u%04x", c);
      out += buf;
    } else
      out += c;
  }
  return out + "\"";
}

const char* kind_name(AlgorithmKind k) {
  switch (k) {
    case AlgorithmKind::Scheduled:
      return "scheduled";
    case AlgorithmKind::System:
      return "system";
    case AlgorithmKind::Auto:
      return "auto";
  }
  return "?";
}

// What limits an algorithm, in words.
std::vector<std::string> restrictions(const AlgorithmSpec& a) {
  std::vector<std::string> out;
  if (a.needs_locality) out.push_back("needs the node map (computed once per communicator)");
  if (a.needs_peer_sizes) out.push_back("learns other ranks' sizes at init (collective)");
  if (a.blocking_auto) out.push_back("what a blocking auto call runs without agreement");
  if (a.kind == AlgorithmKind::Scheduled && !a.candidates) out.push_back("never chosen by auto");
  if (a.family) out.push_back(std::string("family ") + a.family + " (a trial tries one of it)");
  return out;
}

// --- Version and configuration ------------------------------------------------------------

int print_configuration(bool json) {
  char lib[MPI_MAX_LIBRARY_VERSION_STRING] = {};
  int len = 0, major = 0, minor = 0;
  MPI_Get_library_version(lib, &len);
  MPI_Get_version(&major, &minor);
  std::string library(lib, std::size_t(std::max(len, 0)));
  while (!library.empty() && (library.back() == '\n' || library.back() == ' ')) library.pop_back();
  const std::string first_line = library.substr(0, library.find('\n'));
  struct Item {
    const char* key;
    std::string value;
  };
  const std::vector<Item> items = {
      {"version", MPIA_VERSION_STRING},
      {"mpi_library", first_line},
      {"mpi_standard", std::to_string(major) + "." + std::to_string(minor)},
      {"hwloc", MPIA_HAVE_HWLOC ? "yes" : "no"},
      {"fortran_module", MPIA_INFO_FORTRAN ? "yes" : "no"},
      {"preload_library", MPIA_INFO_PRELOAD ? "yes" : "no"},
      {"build_type", MPIA_INFO_BUILD_TYPE},
      {"compiler", MPIA_INFO_COMPILER},
  };
  if (json) {
    std::printf("{");
    for (std::size_t i = 0; i < items.size(); ++i)
      std::printf("%s%s: %s", i ? ", " : "", quoted(items[i].key).c_str(),
                  quoted(items[i].value).c_str());
    std::printf("}\n");
    return 0;
  }
  std::printf("mpi-advance %s\n", MPIA_VERSION_STRING);
  for (std::size_t i = 1; i < items.size(); ++i)
    std::printf("  %-16s %s\n", items[i].key, items[i].value.c_str());
  std::printf(
      "algorithms: mpia_info --algorithms; what auto picks: mpia_info --rank ...; "
      "mpia_info --help\n");
  return 0;
}

// --- Algorithms ---------------------------------------------------------------------------

int print_algorithms(const std::vector<Collective>& collectives, bool json, bool markdown) {
  std::vector<const AlgorithmSpec*> list;
  for (Collective c : collectives)
    for (int i = 0;; ++i) {
      const AlgorithmSpec* a = algorithm_at(c, i);
      if (!a) break;
      list.push_back(a);
    }
  if (json) {
    std::printf("[\n");
    for (std::size_t k = 0; k < list.size(); ++k) {
      const AlgorithmSpec& a = *list[k];
      std::printf("  {\"collective\": %s, \"name\": %s, \"kind\": %s, \"description\": %s, ",
                  quoted(collective_name(a.collective)).c_str(), quoted(a.name).c_str(),
                  quoted(kind_name(a.kind)).c_str(), quoted(a.description).c_str());
      std::printf("\"reference\": %s, \"cost_formula\": %s, ", quoted(a.reference).c_str(),
                  quoted(a.cost_formula).c_str());
      std::printf("\"parameters\": [");
      for (std::size_t i = 0; i < a.params.size(); ++i) {
        const ParamSpec& p = a.params[i];
        std::printf(
            "%s{\"name\": %s, \"description\": %s, \"range\": %s, \"min\": %s, \"max\": "
            "%s, \"default\": %s}",
            i ? ", " : "", quoted(p.name).c_str(), quoted(p.description).c_str(),
            quoted(p.range_text()).c_str(), quoted(p.min_value.to_string()).c_str(),
            quoted(p.max_value.to_string()).c_str(), quoted(p.default_value.to_string()).c_str());
      }
      std::printf(
          "], \"needs_locality\": %s, \"needs_peer_sizes\": %s, \"auto_candidate\": %s, "
          "\"blocking_auto\": %s, \"family\": %s}%s\n",
          a.needs_locality ? "true" : "false", a.needs_peer_sizes ? "true" : "false",
          a.candidates ? "true" : "false", a.blocking_auto ? "true" : "false",
          quoted(a.family_name()).c_str(), k + 1 < list.size() ? "," : "");
    }
    std::printf("]\n");
    return 0;
  }
  if (markdown) {
    std::printf(
        "# Algorithms\n\n"
        "Generated from the algorithm records by `mpia_info --algorithms --markdown`; do not "
        "edit (`ctest -R docs.algorithms` fails when this page differs from what the records "
        "say). Select one with the `mpix_algorithm` info key, `MPIX_Comm_set_algorithm` or the "
        "collective's environment variable (`MPIX_ALLTOALL`, `MPIX_ALLTOALLV`, "
        "`MPIX_NEIGHBOR_ALLTOALLV`), as `name` or `name:param=value,...`. In the ranges, P is "
        "the communicator's size, N its number of nodes and Q the most ranks on one node. Below "
        "each table, every algorithm's reference (seed NNN: the project's copy of the paper, "
        "`shared/seeds/NNN_*.txt`) and the formula of the time the cost model predicts for it, "
        "in the notation of [Cost formulas](#cost-formulas); each record's file "
        "(`src/collective/<collective>/`) says more in its header.\n");
  }
  // Markdown: a table per collective, then the reference and cost formula of each of its
  // algorithms (too long for a table's cells), then the formulas' notation.
  for (std::size_t begin = 0, end = 0; begin < list.size(); begin = end) {
    const Collective c = list[begin]->collective;
    while (end < list.size() && list[end]->collective == c) ++end;
    if (markdown)
      std::printf(
          "\n## %s\n\n| algorithm | what it does | parameters | restrictions |\n"
          "|---|---|---|---|\n",
          collective_name(c));
    else
      std::printf("%s:\n", collective_name(c));
    for (std::size_t k = begin; k < end; ++k) {
      const AlgorithmSpec& a = *list[k];
      const std::vector<std::string> r = restrictions(a);
      if (markdown) {
        std::string params, limits;
        for (const ParamSpec& p : a.params)
          params += std::string(params.empty() ? "" : "<br>") + "`" + p.name +
                    "`: " + p.description + "; " + p.range_text();
        for (const std::string& s : r) limits += (limits.empty() ? "" : "; ") + s;
        std::printf("| `%s` | %s | %s | %s |\n", a.name, a.description,
                    params.empty() ? "-" : params.c_str(), limits.empty() ? "-" : limits.c_str());
        continue;
      }
      std::printf("  %-20s %s\n", a.name, a.description);
      for (const ParamSpec& p : a.params)
        std::printf("  %-20s   %s: %s; %s\n", "", p.name, p.description, p.range_text().c_str());
      for (const std::string& s : r) std::printf("  %-20s   (%s)\n", "", s.c_str());
      std::printf("  %-20s   reference: %s\n", "", a.reference);
      std::printf("  %-20s   cost: %s\n", "", a.cost_formula);
    }
    if (markdown) {
      std::printf("\nReferences and cost formulas:\n\n");
      for (std::size_t k = begin; k < end; ++k)
        std::printf("- `%s`\n  - reference: %s\n  - cost: %s\n", list[k]->name, list[k]->reference,
                    list[k]->cost_formula);
    }
  }
  if (markdown)
    std::printf("\n## Cost formulas\n\n%s The notation:\n\n", kCostFormulas);
  else
    std::printf("cost formulas:\n  %s The notation:\n", kCostFormulas);
  for (const CostSymbol& n : kCostNotation)
    std::printf(markdown ? "- `%s`: %s\n" : "  %s: %s\n", n.symbol, n.meaning);
  return 0;
}

// --- What auto picks ----------------------------------------------------------------------

struct RankRequest {
  Collective collective = Collective::Alltoall;
  int nranks = 0, ppn = 0;
  bool roundrobin = false;
  std::int64_t bytes = -1;
  std::string stats_text, model_text, tuning_path;
};

int print_ranking(const RankRequest& q, bool json) {
  Tuning tuning;
  if (!q.tuning_path.empty()) {
    std::ifstream in(q.tuning_path);
    std::stringstream text;
    text << in.rdbuf();
    if (!in) {
      std::fprintf(stderr, "mpia_info: cannot read %s\n", q.tuning_path.c_str());
      return 1;
    }
    std::string warnings;
    parse_tuning(text.str(), tuning, warnings);
    if (!warnings.empty())
      std::fprintf(stderr, "mpia_info: %s: skipped:\n%s", q.tuning_path.c_str(), warnings.c_str());
  }
  std::string bad;
  apply_cost_model(tuning.model, q.model_text, &bad);
  if (!bad.empty()) usage(bad);
  const int P = q.nranks, Q = q.ppn < 1 || q.ppn > P ? P : q.ppn;
  if (P % Q != 0) usage("--nranks must be a multiple of --ppn");
  const Machine m{P, P / Q, Q, !q.roundrobin || P == Q};
  // The statistics: every rank sends bytes to every peer, unless --stats says otherwise.
  Stats st;
  st.max_block = q.bytes;
  if (q.collective == Collective::Alltoallv) {
    st.rank_bytes = q.bytes * P;
    st.rank_messages = P;
  }
  for (const std::string& kv : split(q.stats_text, ',')) {
    const std::size_t eq = kv.find('=');
    if (eq == std::string::npos) usage("--stats wants K=V pairs");
    const std::string k = kv.substr(0, eq);
    const std::int64_t v = std::atoll(kv.c_str() + eq + 1);
    if (k == "rank_bytes")
      st.rank_bytes = v;
    else if (k == "rank_messages")
      st.rank_messages = v;
    else if (k == "remote_edges")
      st.remote_edges = v;
    else if (k == "remote_nodes")
      st.remote_nodes = v;
    else
      usage("unknown statistic " + k);
  }
  std::vector<Ranked> ranked;
  Selection pick;
  std::string why = "the cost model's pick";
  if (P > 1) ranked = rank(q.collective, tuning.model, m, st);
  if (const TuningRule* rule = find_rule(tuning, q.collective, P, m.nnodes, q.bytes)) {
    pick = parse_selection(q.collective, rule->selection, Extent(P, m.nnodes, Q), false);
    why = "the tuning file's rule";
  }
  if (!pick.algorithm || pick.algorithm->resolve) {
    why = "the cost model's pick";
    pick = ranked.empty() ? parse_selection(q.collective, "linear", Extent(P, m.nnodes, Q), false)
                          : ranked.front().selection;
    if (ranked.empty()) why = "one rank: nothing to weigh";
  }
  if (json) {
    std::printf(
        "{\"collective\": %s, \"nranks\": %d, \"ppn\": %d, \"nodes\": %d, \"bytes\": %lld, "
        "\"auto\": %s, \"because\": %s, \"candidates\": [",
        quoted(collective_name(q.collective)).c_str(), P, Q, m.nnodes, (long long)q.bytes,
        quoted(pick.to_string()).c_str(), quoted(why).c_str());
    for (std::size_t i = 0; i < ranked.size(); ++i)
      std::printf("%s{\"selection\": %s, \"predicted_us\": %.4f}", i ? ", " : "",
                  quoted(ranked[i].selection.to_string()).c_str(), ranked[i].seconds * 1e6);
    std::printf("]}\n");
    return 0;
  }
  std::printf("%s on %d ranks (%d node%s of %d, %s), blocks of %lld B:\n  auto: %s (%s)\n",
              collective_name(q.collective), P, m.nnodes, m.nnodes == 1 ? "" : "s", Q,
              q.roundrobin ? "round robin" : "block placement", (long long)q.bytes,
              pick.to_string().c_str(), why.c_str());
  if (!ranked.empty()) std::printf("  the model's ranking (predicted time of one call):\n");
  for (const Ranked& r : ranked)
    std::printf("  %12.3f us  %s\n", r.seconds * 1e6, r.selection.to_string().c_str());
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  enum class Mode { Configuration, Algorithms, Rank } mode = Mode::Configuration;
  bool json = false, markdown = false, have_collective = false;
  RankRequest q;
  // The first option given that belongs to --rank only, and to --algorithms or --rank: a mode
  // that does not take an option fails on it rather than ignoring it.
  std::string rank_only, algorithms_only, needs_mode;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (rank_only.empty() &&
        (a == "--nranks" || a == "--ppn" || a == "--roundrobin" || a == "--bytes" ||
         a == "--stats" || a == "--model" || a == "--tuning"))
      rank_only = a;
    if (algorithms_only.empty() && a == "--markdown") algorithms_only = a;
    if (needs_mode.empty() && a == "--collective") needs_mode = a;
    auto next = [&]() -> std::string {
      if (i + 1 >= argc) usage("missing value after " + a);
      return argv[++i];
    };
    if (a == "--help" || a == "-h") {
      std::printf("%s", kHelp);
      return 0;
    } else if (a == "--json")
      json = true;
    else if (a == "--markdown")
      markdown = true;
    else if (a == "--algorithms")
      mode = Mode::Algorithms;
    else if (a == "--rank")
      mode = Mode::Rank;
    else if (a == "--collective") {
      const std::string name = next();
      if (name == "neighbor")
        q.collective = Collective::NeighborAlltoallv;
      else if (!collective_from_name(name, q.collective))
        usage("unknown collective " + name + " (alltoall, alltoallv, neighbor_alltoallv)");
      have_collective = true;
    } else if (a == "--nranks")
      q.nranks = std::atoi(next().c_str());
    else if (a == "--ppn")
      q.ppn = std::atoi(next().c_str());
    else if (a == "--roundrobin")
      q.roundrobin = true;
    else if (a == "--bytes")
      q.bytes = std::atoll(next().c_str());
    else if (a == "--stats")
      q.stats_text = next();
    else if (a == "--model")
      q.model_text = next();
    else if (a == "--tuning")
      q.tuning_path = next();
    else
      usage("unknown option " + a);
  }
  if (json && markdown) usage("--json or --markdown, not both");
  if (mode != Mode::Rank && !rank_only.empty()) usage(rank_only + " needs --rank");
  if (mode != Mode::Algorithms && !algorithms_only.empty())
    usage(algorithms_only + " needs --algorithms");
  if (mode == Mode::Configuration && !needs_mode.empty())
    usage(needs_mode + " needs --algorithms or --rank");
  try {
    switch (mode) {
      case Mode::Configuration:
        return print_configuration(json);
      case Mode::Algorithms: {
        std::vector<Collective> cs = {Collective::Alltoall, Collective::Alltoallv,
                                      Collective::NeighborAlltoallv};
        if (have_collective) cs = {q.collective};
        return print_algorithms(cs, json, markdown);
      }
      case Mode::Rank:
        if (!have_collective) usage("--rank needs --collective");
        if (q.nranks < 1 || q.bytes < 0) usage("--rank needs --nranks P >= 1 and --bytes B >= 0");
        return print_ranking(q, json);
    }
  } catch (const mpia::Error& e) {
    std::fprintf(stderr, "mpia_info: %s\n", e.what());
    return 1;
  }
  return 0;
}
