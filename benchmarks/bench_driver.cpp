/*
 * bench_driver.cpp -- mpia_bench: one latency benchmark over mpi-advance's registry, for every
 * collective (--collective alltoall | alltoallv | neighbor; the workloads: workload_*.cpp).
 *
 * Variants, timed side by side in one run on the same buffers:
 *   MPI_<Call>        the MPI library's blocking call (the baseline of the ratios; runs unless
 *                     --no-baseline)
 *   MPI_<Call>_init   the MPI library's persistent call (MPI-4, or Open MPI's MPIX_*_init
 *                     extension), when it has one
 *   MPIX_<Call>       mpi-advance's blocking call, with the environment's selection (auto)
 *   blk:<name>        mpi-advance's blocking call on a duplicate of the communicator whose
 *                     algorithm MPIX_Comm_set_algorithm sets to <name> (one per registry entry;
 *                     default for the neighbor collective, on request for the others)
 *   <name>            every algorithm of the registry (MPIX_Algorithm_get), persistent
 *   <name>:<p>=<v>..  the parameter sweeps: for each algorithm, the product of the values given
 *                     for its parameters (--radices, --windows, --sweep NAME=LIST); parameter
 *                     names are learnt from MPIX_Request_get_algorithm of a probe request, and a
 *                     value the library rejects at init is skipped with a note
 *
 * Method: per configuration (pattern x size) the workload builds the buffers and the receive
 * buffer every rank must end with; 50 untimed MPI_<Call> settle buffers and library. The timed
 * iterations are split into --rounds rounds; in each round every variant, in an order rotating
 * from round to round, is set up (the *_init call, timed), run once with every received byte
 * (and every gap between blocks) checked, warmed up (--warmup), timed (MPI_Barrier before every
 * iteration, MPI_Wtime), checked again and freed. Each rank averages its per-iteration times;
 * the table gives min/avg/max over ranks of that average, the median over iterations of the
 * slowest rank's time (med_max), ratio = avg / avg(MPI_<Call>) and ratio_med = med_max /
 * med_max(MPI_<Call>). A wrong result, an error code or a hang (--watchdog) aborts the run.
 *
 * Imbalance mode (--imbalance MAXUS): after the barrier of each timed iteration every rank
 * busy-waits a delay in [0, MAXUS] us drawn from (seed, rank, iteration), the same for every
 * variant, then calls. after_last = completion - last arrival (one MPI_Allreduce(MAX) of the
 * arrival times after the loop); pairwise (when the registry has it) always runs as a second
 * reference.
 *
 * Time limit (--time-limit SEC, like IMB's -time): where the rest of the run would not fit in SEC
 * seconds, fewer timed iterations run (then fewer warm-up starts, then fewer rounds), by costs
 * measured in this run and agreed by every rank (struct Budget); each cut is noted.
 */
#include "bench_core.hpp"

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <fnmatch.h>
#include <memory>
#include <new>
#include <random>
#if defined(SMPI_H)
#include <simgrid/kernel/resource/NetworkModelIntf.hpp>
#include <simgrid/s4u/Engine.hpp>
#include <simgrid/s4u/NetZone.hpp>

#include <unordered_set>
#include <vector>
#endif

namespace mpia_bench {
namespace {

const char* const kUsage =
    "usage: mpia_bench [--collective alltoall|alltoallv|neighbor] [options]\n"
    "  --collective C   the collective (default alltoall)\n"
    "  --sizes LIST     alltoall: block bytes per destination (default OSU's: 1, 2, 4, ... 1M,\n"
    "                   those where a rank sends at most 64 MiB in all); alltoallv: average\n"
    "                   block bytes (default 8,512,8192); neighbor: n of every pattern (default\n"
    "                   8,32,128); k/M suffixes, e.g. 1,8,4k\n"
    "  --patterns LIST  alltoallv (block s->d in proportion to a weight, mean --sizes;\n"
    "                   benchmarks/workload_alltoallv.cpp has the details): uniform; random\n"
    "                   (uniform in [0,2)); skewed (1/(s+1)); sparse (the ceil(sqrt P) ranks of\n"
    "                   a grid row); power_law (x^4, x uniform in (0,1] per pair); hotspot\n"
    "                   (every 2 ceil(sqrt P)-th rank receives 32x); fft_xy, fft_yz (HeFFTe-like\n"
    "                   pencil transposes of an n x (n+1) x (n+2) grid on a p1 x p2 grid); tuna\n"
    "                   (rank s sends 0.99^pi_s(d), pi_s a permutation per rank); default\n"
    "                   uniform,random,skewed,sparse. neighbor: stencil2d,stencil3d,lap2d,\n"
    "                   lap3d,powerlaw (default all); on request random (through MPIX_Topo;\n"
    "                   --sizes are its block bytes, rounded up to doubles), stencil27 (3-D\n"
    "                   halo with all 26 neighbours, through MPIX_Topo), spmv (n^2 rows\n"
    "                   per rank: band |i-j| <= 3, one random column per 8 rows) and mixed\n"
    "                   (through MPIX_Topo: n bytes to every rank of the next node, 32 KiB\n"
    "                   to 2 ranks on other nodes)\n"
    "  --degree K       neighbor random: expected neighbours per rank (default 16)\n"
    "  --placement P    neighbor stencil*: block (grid position i is rank i, default) or\n"
    "                   scattered (consecutive positions on different nodes, round robin;\n"
    "                   through MPIX_Topo)\n"
    "  --iters N        timed iterations per variant and configuration (default OSU's\n"
    "                   osu_alltoall: 1000 for messages up to 8 KiB, 100 above; a message is\n"
    "                   a block (alltoallv: the mean block; neighbor: the largest of the\n"
    "                   ranks' mean message))\n"
    "  --warmup N       untimed starts before timing, per round and variant (default OSU's:\n"
    "                   200 for messages up to 8 KiB, 10 above)\n"
    "  --trial-warmup N after the warm-up, a persistent request of ours whose measured trial\n"
    "                   (auto) has not settled keeps starting, untimed, until it has: at most N\n"
    "                   more starts (default 241, the trial's bound), so that the timed\n"
    "                   iterations run the settled plan; 0: they may run the trial\n"
    "  --warmup-until-settled  simulations: --warmup N only bounds the warm-up of a\n"
    "                   persistent request of ours, which ends at the start after its trial\n"
    "                   settled (at once without a trial); the MPI library's calls and the\n"
    "                   blocking variants still warm up N starts; no --trial-warmup\n"
    "  --warmup-others N  with --warmup-until-settled: the MPI library's calls and the\n"
    "                   blocking variants warm up N starts instead (a simulation repeats\n"
    "                   the same start: nothing warms; default --warmup's N)\n"
    "  --settle N       calls of MPI_<Call> at each size before the first variant (default\n"
    "                   max(50, 2 x warmup); 0 in a simulation, where nothing needs settling)\n"
    "  --rounds R       split the timed iterations into R rounds; each round sets up, checks,\n"
    "                   warms up and times every variant, in an order rotating from round to\n"
    "                   round (default 1)\n"
    "  --variants LIST  comma list of variant names or shell patterns, e.g.\n"
    "                   'MPI_Alltoall_init,pairwise,tra:*' (MPI_<Call>, the baseline, always\n"
    "                   runs unless --no-baseline); default: all but the blk:* variants\n"
    "                   (alltoall, alltoallv) or all but MPIX_<Call> (neighbor)\n"
    "  --no-baseline    MPI_<Call> does not run (no ratios; no settling calls): a simulation\n"
    "                   that needs only our variants' times\n"
    "  --radices LIST   values of every algorithm's 'radix' parameter, e.g. 2,4,8 or 2-6\n"
    "                   ('none': no sweep; default alltoall 2..P, alltoallv 3,4,8,P)\n"
    "  --windows LIST   values of the 'window' parameter (default alltoallv 1,2,4,8,16)\n"
    "  --sweep P=LIST   values of parameter P, e.g. --sweep radix_intra=2,4 (repeatable)\n"
    "  --imbalance US   each rank busy-waits a seeded delay in [0,US] us before each timed\n"
    "                   iteration; report the time from the last arrival\n"
    "  --noise US       arrival noise: before every start of every variant (warm-up and a\n"
    "                   measured trial included) each rank waits a seeded heavy-tailed delay\n"
    "                   of mean US us (exponential; one delay in ten ten times longer)\n"
    "  --jitter J       simulated (SMPI) runs: every message's latency times 1 + a seeded\n"
    "                   heavy-tailed draw of mean J (exponential; one in ten ten times longer),\n"
    "                   SMPI's own collectives' messages included (per-message noise)\n"
    "  --noise-rel F    the same, of mean F x the time of MPI_<Call> at each size (measured\n"
    "                   first: the median of 5 calls' slowest rank)\n"
    "  --lat-factor S   with --jitter: the latency factors it multiplies, in smpi/lat-factor's\n"
    "                   syntax (default 0:1; smpirun must not set smpi/lat-factor then)\n"
    "  --check-ends     check the result of the first run and after the timed iterations only,\n"
    "                   with fixed send data (default: new send data before every start and\n"
    "                   every received byte checked after it, untimed)\n"
    "  --timing-only    check no result: one receive buffer for every variant, which under\n"
    "                   SimGrid's SMPI every simulated rank shares (SMPI_SHARED_MALLOC), for\n"
    "                   lab points whose buffers do not fit in memory; the times only\n"
    "  --seed N         seed of the random patterns and delays (default 20240601)\n"
    "  --periodic MODE  neighbor: Cartesian periodicity auto (dimensions of >= 3 ranks),\n"
    "                   all, none (default auto)\n"
    "  --quick          a very short run (CI smoke): small sizes, --iters 2 --warmup 1 unless\n"
    "                   given\n"
    "  --csv FILE       also write the results as CSV (rank 0)\n"
    "  --watchdog SEC   abort when one step makes no progress for SEC s (default 120; 0: off)\n"
    "  --time-limit SEC the whole run aims to end within SEC s (default 0: no limit): where a\n"
    "                   variant's planned iterations (then its warm-up starts beyond 1) would\n"
    "                   not fit its share of the time left, it runs fewer (at least 1), by the\n"
    "                   cost of a start measured in this run; every such row is noted\n"
    "  --list           print the variants and exit\n"
    "  --help           this text\n";

// ---------------------------------------------------------------------------------------------
// Options

// OSU Micro-Benchmarks' defaults (osu_alltoall): messages up to 8 KiB get 1000 timed
// iterations after 200 warm-up ones, larger ones 100 after 10.
constexpr long long kOsuLargeMessage = 8192;

int iterations_for(const Options& o, const Case& k) {
  if (o.iters > 0) return o.iters;
  return k.msg_bytes <= kOsuLargeMessage ? 1000 : 100;
}

int warmup_for(const Options& o, const Case& k) {
  if (o.warmup >= 0) return o.warmup;
  return k.msg_bytes <= kOsuLargeMessage ? 200 : 10;
}

// The workload's default sizes; where they are block bytes (alltoall, alltoallv), those with
// which a rank sends at most 64 MiB in all (osu_alltoall, too, bounds its largest message by
// the memory it may use; mpia_bench holds several copies of the buffers).
std::vector<long long> default_sizes(const Workload& w, int nprocs) {
  constexpr long long kMaxBytesPerRank = 64LL << 20;
  if (std::string(w.collective) == "neighbor") return w.default_sizes;
  std::vector<long long> out;
  for (long long s : w.default_sizes)
    if (s * nprocs <= kMaxBytesPerRank) out.push_back(s);
  if (out.empty()) out.push_back(w.default_sizes.front());
  return out;
}

Options parse_options(int argc, char** argv, int rank, int nprocs, const Workload*& w) {
  Options o;
  bool sizes_given = false, radix_given = false, window_given = false;
  Args a(argc, argv, rank, "mpia_bench", kUsage);
  while (a.next()) {
    if (a.is("--help") || a.is("-h"))
      a.help();
    else if (a.is("--list"))
      o.list_only = true;
    else if (a.is("--quick"))
      o.quick = true;
    else if (a.is("--no-baseline"))
      o.no_baseline = true;
    else if (a.is("--collective"))
      o.collective = a.value();
    else if (a.is("--sizes"))
      o.sizes = a.sizes(INT32_MAX), sizes_given = true;
    else if (a.is("--patterns"))
      o.patterns = split(a.value(), ',');
    else if (a.is("--iters"))
      o.iters = int(a.count(1, 100000000)), o.iters_given = true;
    else if (a.is("--warmup"))
      o.warmup = int(a.count(0, 100000000)), o.warmup_given = true;
    else if (a.is("--warmup-until-settled"))
      o.warmup_until_settled = true;
    else if (a.is("--warmup-others"))
      o.warmup_others = int(a.count(0, 1000000));
    else if (a.is("--trial-warmup"))
      o.trial_warmup = int(a.count(0, 100000000));
    else if (a.is("--settle"))
      o.settle = int(a.count(0, 100000000));
    else if (a.is("--rounds"))
      o.rounds = int(a.count(1, 100000000));
    else if (a.is("--variants"))
      o.variant_patterns = split(a.value(), ',');
    else if (a.is("--radices"))
      o.sweeps["radix"] = a.int_list(2), radix_given = true;
    else if (a.is("--windows"))
      o.sweeps["window"] = a.int_list(1), window_given = true;
    else if (a.is("--sweep")) {
      std::string v = a.value();
      auto eq = v.find('=');
      if (eq == std::string::npos || eq == 0) a.error("--sweep wants NAME=LIST");
      std::vector<long long> vals;
      for (const auto& tok : split(v.substr(eq + 1), ',')) {
        auto dash = tok.find('-', 1);
        char* end = nullptr;
        long long lo = std::strtoll(tok.c_str(), &end, 10), hi = lo;
        if (dash != std::string::npos) hi = std::strtoll(tok.c_str() + dash + 1, &end, 10);
        if (*end != '\0' || hi < lo || hi - lo > 1000000) a.error("bad --sweep '" + v + "'");
        for (long long x = lo; x <= hi; ++x) vals.push_back(x);
      }
      const std::string name = v.substr(0, eq);
      o.sweeps[name] = vals;
      radix_given |= name == "radix";
      window_given |= name == "window";
    } else if (a.is("--csv"))
      o.csv = a.value();
    else if (a.is("--watchdog"))
      o.watchdog_s = a.number(0, 1e9);
    else if (a.is("--time-limit"))
      o.time_limit_s = a.number(0, 1e9);
    else if (a.is("--imbalance"))
      o.imbalance_us = a.number(0, 1e9);
    else if (a.is("--noise"))
      o.noise_us = a.number(0, 1e9);
    else if (a.is("--noise-rel"))
      o.noise_rel = a.number(0, 1e3);
    else if (a.is("--jitter"))
      o.jitter = a.number(0, 1e6);
    else if (a.is("--lat-factor"))
      o.lat_factor = a.value();
    else if (a.is("--check-ends"))
      o.check_every = false;
    else if (a.is("--timing-only"))
      o.timing_only = true, o.check_every = false;
    else if (a.is("--seed"))
      o.seed = a.count(0, ~0ull);
    else if (a.is("--periodic"))
      o.periodic = a.value();
    else if (a.is("--degree"))
      o.degree = int(a.count(0, 1000000));
    else if (a.is("--placement"))
      o.placement = a.value();
    else
      a.unknown();
  }
  if (o.collective == "alltoall")
    w = &alltoall_workload();
  else if (o.collective == "alltoallv")
    w = &alltoallv_workload();
  else if (o.collective == "neighbor" || o.collective == "neighbor_alltoallv")
    w = &neighbor_workload();
  else
    a.error("unknown collective '" + o.collective + "' (alltoall, alltoallv or neighbor)");
  for (const auto& s : o.sizes)
    if (s > w->max_size)
      a.error("size " + std::to_string(s) + " above " + std::to_string(w->max_size) + " for " +
              o.collective);
  if (o.patterns.empty()) o.patterns = w->default_patterns;
  for (const auto& p : o.patterns)
    if (std::find(w->all_patterns.begin(), w->all_patterns.end(), p) == w->all_patterns.end())
      a.error("unknown pattern '" + p + "' for " + o.collective);
  if (o.patterns.empty()) o.patterns.push_back("");
  if (o.periodic != "auto" && o.periodic != "all" && o.periodic != "none")
    a.error("bad --periodic '" + o.periodic + "' (auto, all or none)");
  if (o.placement != "block" && o.placement != "scattered")
    a.error("bad --placement '" + o.placement + "' (block or scattered)");
  if (!sizes_given) o.sizes = o.quick ? w->quick_sizes : default_sizes(*w, nprocs);
  if (o.quick) {
    if (!o.iters_given) o.iters = 2;
    if (!o.warmup_given) o.warmup = 1;
  }
  auto defaults = w->default_sweeps(nprocs);
  if (!radix_given && defaults.count("radix")) o.sweeps["radix"] = defaults["radix"];
  if (!window_given && defaults.count("window")) o.sweeps["window"] = defaults["window"];
  return o;
}

// ---------------------------------------------------------------------------------------------
// Variants

enum class Kind { SystemBlocking, SystemPersistent, OursBlocking, OursPersistent };

struct Variant {
  std::string name;
  Kind kind;
  std::string selection;  // ours: info "mpix_algorithm" / MPIX_Comm_set_algorithm ("": env)
  std::string description;
};

bool matches(const Options& o, const std::string& name) {
  for (const auto& p : o.variant_patterns)
    if (p == name || fnmatch(p.c_str(), name.c_str(), 0) == 0) return true;
  return false;
}

// Whether --variants may name a parameter sweep of algorithm `alg` ("bruck:radix=*", "tra2:*",
// "*"): the part of a pattern before its ':' matches the name, or a pattern without ':' has a
// wildcard that may span one. Only those algorithms are probed (an init each: at P = 1024 a
// simulation spent most of its time probing algorithms no pattern named).
bool may_sweep(const Options& o, const std::string& alg) {
  if (o.variant_patterns.empty()) return true;
  for (const auto& p : o.variant_patterns) {
    const std::size_t colon = p.find(':');
    const std::string head = p.substr(0, colon);
    if (fnmatch(head.c_str(), alg.c_str(), 0) == 0) return true;
    if (colon == std::string::npos && head.find_first_of("*?[") != std::string::npos) return true;
  }
  return false;
}

// Collective: an init of `selection` on a small case; the resolved selection, or "" when the
// library rejects it (on every rank: argument errors of inits are agreed).
std::string probe(const Ctx& c, Case& k, const std::string& selection, int& rc) {
  std::vector<unsigned char> recv = k.poison;
  MPI_Info info;
  MPI_Info_create(&info);
  MPI_Info_set(info, MPIX_INFO_KEY_ALGORITHM, selection.c_str());
  MPIX_Request req = MPIX_REQUEST_NULL;
  rc = k.ours_init(k.recv_of(recv), k.comm, info, &req);
  MPI_Info_free(&info);
  int failed = rc != MPI_SUCCESS, any = 0;
  MPI_Allreduce(&failed, &any, 1, MPI_INT, MPI_MAX, c.comm);
  std::string out;
  if (!failed) {
    check_rc(c, request_algorithm(req, out), "MPIX_Request_get_algorithm", selection);
    check_rc(c, MPIX_Request_free(&req), "MPIX_Request_free", selection);
  }
  if (any) {
    if (rc == MPI_SUCCESS) rc = MPI_ERR_OTHER;
    return "";
  }
  return out;
}

// "tra:radix=4,x=2" -> {radix, x} when it names `name` itself.
std::vector<std::string> param_names(const std::string& resolved, const std::string& name) {
  std::vector<std::string> out;
  if (resolved.rfind(name + ":", 0) != 0) return out;
  for (const auto& kv : split(resolved.substr(name.size() + 1), ','))
    out.push_back(kv.substr(0, kv.find('=')));
  return out;
}

std::vector<Variant> build_variants(const Ctx& c, const Options& o, const Workload& w) {
  const bool all = o.variant_patterns.empty();
  const std::string call = w.call;
  std::vector<Variant> v;
  if (!o.no_baseline)
    v.push_back({"MPI_" + call, Kind::SystemBlocking, "", "the MPI library's MPI_" + call});
  const std::string sys_init = "MPI_" + call + "_init";
  if (w.system_init_name() && (all || matches(o, sys_init)))
    v.push_back({sys_init, Kind::SystemPersistent, "",
                 std::string("the MPI library's persistent call, ") + w.system_init_name()});
  if (all ? !w.blocking_per_algorithm : matches(o, "MPIX_" + call))
    v.push_back({"MPIX_" + call, Kind::OursBlocking, "",
                 "mpi-advance's blocking MPIX_" + call + " (the environment's selection)"});

  // The registry raises out-of-range errors through MPI_COMM_SELF's handler: make it return.
  std::vector<std::pair<std::string, std::string>> algs;
  MPI_Errhandler saved;
  MPI_Comm_get_errhandler(MPI_COMM_SELF, &saved);
  MPI_Comm_set_errhandler(MPI_COMM_SELF, MPI_ERRORS_RETURN);
  for (int i = 0; i <= 1000; ++i) {
    const char *name = nullptr, *desc = nullptr;
    if (MPIX_Algorithm_get(w.registry, i, &name, &desc) != MPI_SUCCESS || !name) break;
    algs.emplace_back(name, desc ? desc : "");
  }
  MPI_Comm_set_errhandler(MPI_COMM_SELF, saved);
  MPI_Errhandler_free(&saved);

  for (const auto& a : algs)
    if (all || matches(o, a.first) || (o.imbalance_us > 0 && a.first == "pairwise"))
      v.push_back({a.first, Kind::OursPersistent, a.first, "persistent: " + a.second});
  for (const auto& a : algs)
    if (all ? w.blocking_per_algorithm : matches(o, "blk:" + a.first))
      v.push_back({"blk:" + a.first, Kind::OursBlocking, a.first,
                   "blocking MPIX_" + call + ", MPIX_Comm_set_algorithm " + a.first +
                       " on its own duplicate of the communicator"});

  // Parameter sweeps: the parameters of each algorithm from a probe request's resolved
  // selection, then every combination of the values given for them, validated by an init.
  bool any_sweep = false;
  for (const auto& s : o.sweeps) any_sweep |= !s.second.empty();
  if (!any_sweep) return v;
  std::unique_ptr<Case> k = w.make_case(c, o, o.patterns.front(), 1);
  std::vector<std::string> rejected;
  int rc_rejected = MPI_SUCCESS;
  for (const auto& a : algs) {
    if (!may_sweep(o, a.first)) continue;
    int rc = 0;
    std::vector<std::string> params;
    for (const auto& p : param_names(probe(c, *k, a.first, rc), a.first))
      if (o.sweeps.count(p) && !o.sweeps.at(p).empty()) params.push_back(p);
    if (params.empty()) continue;
    std::vector<std::size_t> at(params.size(), 0);  // odometer over the value lists
    for (;;) {
      std::string sel = a.first;
      for (std::size_t i = 0; i < params.size(); ++i)
        sel += (i ? "," : ":") + params[i] + "=" + std::to_string(o.sweeps.at(params[i])[at[i]]);
      if (all || matches(o, sel)) {
        if (!probe(c, *k, sel, rc).empty())
          v.push_back({sel, Kind::OursPersistent, sel, "persistent: " + sel});
        else
          rejected.push_back(sel), rc_rejected = rc;
      }
      std::size_t i = 0;
      while (i < params.size() && ++at[i] == o.sweeps.at(params[i]).size()) at[i++] = 0;
      if (i == params.size()) break;
    }
  }
  if (!rejected.empty() && c.rank == 0) {
    std::string list;
    for (std::size_t i = 0; i < rejected.size() && i < 8; ++i) list += " " + rejected[i];
    std::fprintf(stderr,
                 "mpia_bench: skipping %zu selection(s) the library rejects at P=%d "
                 "(%s):%s%s\n",
                 rejected.size(), c.nprocs, mpi_error_string(rc_rejected).c_str(), list.c_str(),
                 rejected.size() > 8 ? " ..." : "");
  }
  return v;
}

// ---------------------------------------------------------------------------------------------
// Running one variant for one round

// Everything one rank collected for one variant in one configuration, over all rounds.
struct Samples {
  std::string algorithm, chosen, chosen_by;
  std::string ran;  // persistent variants: what the timed iterations ran, each round's ('|')
  bool skipped = false, deviates = false;
  // A persistent request of ours: the most starts --trial-warmup added in a round, and whether
  // the trial had not settled when the timed iterations began, in some round.
  int trial_warmup = 0;
  bool timed_trial = false;
  // --time-limit: the timed iterations planned (every round's, set by the caller), the warm-up
  // planned per round and the fewest a round ran (-1: none cut), and whether the budget ended a
  // trial's warm-up before it settled.
  int planned_iters = 0, warmup_planned = 0, warmup_fewest = -1;
  bool trial_cut = false;
  std::vector<double> t;       // own call -> own completion, seconds, per timed iteration
  std::vector<double> arrive;  // imbalance mode: barrier exit -> call
  std::vector<double> done;    // imbalance mode: barrier exit -> completion
  double init_sum = 0;
  int init_count = 0;
  long long traffic[4] = {-1, -1, -1, -1};  // messages, bytes, inter-node messages, bytes
};

struct Run {
  const Ctx& c;
  const Options& o;
  const Workload& w;
  std::string locality_env;
};

// --time-limit: the run's time budget. A slot is one (case, variant, round). Before a slot's
// warm-up and before its timed iterations (and before each round after a case's first) the ranks
// agree (MPI_Allreduce MAX) on the time elapsed and on the measured costs; every count is
// computed from those agreed figures alone, so that every rank runs the same number of starts
// (ranks that disagree would deadlock). A slot's share is the time left, less what the slots and
// cases still to come cost beyond their cuttable starts, divided evenly among the slots left: a
// slot that needs less leaves the rest to the later ones (the larger sizes, as a rule). Those
// fixed costs are taken from the latest case (sizes grow: the mean over all would fall short). A
// round after a case's first costs a slot's fixed part (init, first run, checks) again for every
// variant: where the budget cannot give every case left as many rounds with at least that much
// timing per slot, the case runs fewer rounds.
struct Budget {
  double limit = 0;  // seconds; 0: none
  MPI_Comm comm = MPI_COMM_NULL;
  double t0 = 0;             // this rank's MPI_Wtime at the start of the run
  long long variants = 0;    // slots per round
  int rounds = 1;            // --rounds
  long long cases_left = 0;  // cases not yet built
  int round = 0;             // the current slot's round and place in it
  long long slot = 0;
  // Measured: the fixed cost (build, settle) of the last case built, and that (init, first run,
  // last check, free: all but the cuttable starts) of the current case's slots run so far and
  // the mean of the previous case's (-1: none yet).
  double case_last = 0, slot_sum = 0, prev_slot_mean = -1;
  long long slots_seen = 0;
  double mark = 0;  // agreed elapsed time at the end of the last slot or case build
  // The current slot: the seconds its cuttable starts may take, the agreed elapsed time and this
  // rank's clock at plan(), the agreed cost of a start then, the time of plan()'s MPI_Allreduce
  // (a barrier's cost, which every timed iteration adds) and, for slot_done(), how long this
  // rank spent from plan() to the end of the timed iterations; the agreed time of its trial's
  // warm-up.
  double share = 0, at_plan = 0, local_plan = 0, start_s = 0, sync_local = 0, cut_local = 0;
  double trial_s = 0;

  bool on() const { return limit > 0; }
  // Collective: the largest elapsed time over ranks; x[0..n) (n <= 3) become their max over ranks.
  double agree(double* x = nullptr, int n = 0) const {
    double v[4] = {MPI_Wtime() - t0, 0, 0, 0}, m[4] = {0, 0, 0, 0};
    for (int i = 0; i < n; ++i) v[1 + i] = x[i];
    MPI_Allreduce(v, m, 1 + n, MPI_DOUBLE, MPI_MAX, comm);
    for (int i = 0; i < n; ++i) x[i] = m[1 + i];
    return m[0];
  }
  // A slot's fixed cost: the current case's slots run so far, the previous case's mean standing
  // in for the rest of a round; partial (the current slot's so far) before any has run.
  double slot_fixed(double partial) const {
    const long long missing = prev_slot_mean >= 0 ? std::max(0LL, variants - slots_seen) : 0;
    if (slots_seen + missing == 0) return partial;
    return (slot_sum + prev_slot_mean * double(missing)) / double(slots_seen + missing);
  }
  // The rounds every case left can run, this one's from round k on (rounds before k are spent),
  // when each slot times for at least as long as its fixed cost slot_fixed: at least 1.
  int rounds_fit(double now, double slot_fixed, int k) const {
    const double per_round = 2 * double(variants) * std::max(slot_fixed, 1e-9);
    const double left = limit - now - double(cases_left) * case_last;
    const double r = std::floor((left / per_round + k) / double(cases_left + 1));
    return static_cast<int>(std::max(1.0, std::min<double>(rounds, r)));
  }
  // Collective, once a case is built and settled.
  void case_built() {
    const double now = agree();
    case_last = now - mark;
    --cases_left;
    mark = now;
    if (slots_seen > 0) prev_slot_mean = slot_sum / double(slots_seen);
    slot_sum = 0;
    slots_seen = 0;
  }
  // Collective, before round k > 0 of a case: whether it runs.
  bool round_fits(int k) const { return k < rounds_fit(agree(), slot_fixed(0), k); }
  // Collective, after a slot's first warm-up start (a start took first_s on this rank): its
  // share, and the warm-up starts it runs. The warm-up is cut only where it and the timed
  // iterations would not fit, then to half the share (at least 1 start): the timed iterations
  // keep the rest.
  int plan(double first_s, int warmup, int iters) {
    const double t = MPI_Wtime();
    at_plan = agree(&first_s, 1);
    local_plan = MPI_Wtime();
    sync_local = local_plan - t;
    start_s = std::max(first_s, 1e-9);
    const double slot_mean = slot_fixed(at_plan - mark);
    const int r = rounds_fit(at_plan, slot_mean, round);
    const double slots_left =
        double(variants - slot) + double(variants) * (std::max(0, r - round - 1) + cases_left * r);
    const double reserve = (slots_left - 1) * slot_mean + double(cases_left) * case_last;
    share = std::max(0.0, (limit - at_plan - reserve) / slots_left);
    if (warmup <= 1 || double(warmup + iters) * start_s <= share) return warmup;
    return static_cast<int>(std::max(1.0, std::min<double>(warmup, share / (2 * start_s))));
  }
  // This rank alone (the trial's warm-up agrees on it): would one more trial start of cost s,
  // the trial having run since trial_t0, still fit? A trial may take up to kTrialShares shares
  // on top of the slot's own (the later slots' shares shrink to make up for it): a trial cut
  // short makes the timed iterations time trial starts, in the row (auto's) the verdict reads.
  static constexpr double kTrialShares = 4;
  bool room_for(double s, double trial_t0) const {
    return MPI_Wtime() - trial_t0 + s <= kTrialShares * share;
  }
  // Collective, before the timed iterations (a start costing start_local on this rank, measured
  // in the warm-up; trial_local: this rank's trial warm-up, not counted against the share): how
  // many of the planned iters fit what is left of the share (at least 1).
  int timed(double start_local, double trial_local, int iters) {
    double x[3] = {start_local, sync_local, trial_local};
    const double now = agree(x, 3);
    trial_s = x[2];
    const double per = std::max(x[0] + x[1], 1e-9), left = share - (now - at_plan - x[2]);
    if (double(iters) * per <= left) return iters;
    return static_cast<int>(std::max(1.0, std::floor(left / per)));
  }
  // Collective, between timed iterations: whether the share is spent on some rank (the
  // estimate was short: a loaded machine's iterations cost more than its warm-up's).
  bool spent() const {
    int mine = MPI_Wtime() - local_plan - trial_s > share ? 1 : 0, any = 0;
    MPI_Allreduce(&mine, &any, 1, MPI_INT, MPI_MAX, comm);
    return any != 0;
  }
  // Collective, after every slot (run or skipped).
  void slot_done() {
    double cut = cut_local;
    const double now = agree(&cut, 1);
    slot_sum += std::max(0.0, now - mark - cut);
    ++slots_seen;
    mark = now;
    cut_local = 0;
  }
};

bool system_like(const Variant& v) {
  return v.kind == Kind::SystemBlocking || v.kind == Kind::SystemPersistent ||
         v.selection == "system";
}

// The imbalance delay of `rank` before timed iteration `iter`, in seconds.
double delay_s(const Options& o, int rank, int iter) {
  if (o.imbalance_us <= 0) return 0;
  std::uint64_t h = mix64(mix64(o.seed ^ 0xD1B54A32D192ED03ull) ^
                          mix64((static_cast<std::uint64_t>(rank) << 32) | unsigned(iter)));
  double u = static_cast<double>(h >> 11) * (1.0 / 9007199254740992.0);  // [0,1)
  return u * o.imbalance_us * 1e-6 * (1.0 + 1e-12);
}

// The arrival noise of `rank` before its start number `n` of a variant, in seconds: mean
// noise_us, exponential, one draw in ten from an exponential ten times longer (heavy-tailed).
double noise_s(const Options& o, const Case& k, int rank, long long n) {
  if (k.noise_us <= 0) return 0;
  std::uint64_t h = mix64(mix64(o.seed ^ 0x6A09E667F3BCC909ull) ^
                          mix64((static_cast<std::uint64_t>(rank) << 40) ^ std::uint64_t(n)));
  const double u = (static_cast<double>(h >> 11) + 0.5) * (1.0 / 9007199254740992.0);  // (0,1)
  const bool tail = (mix64(h) & 0xFF) < 26;                                            // ~1 in 10
  return -std::log(u) * (tail ? 10.0 : 1.0) / 1.9 * k.noise_us * 1e-6;
}

// --jitter: SimGrid's latency factor of every communication (SMPI's own collectives' too), a
// seeded draw per message; set by rank 0 before the first case (one simulation: every rank's
// messages go through the one network model). The lab's smpi/lat-factor is 1 (platform.env),
// which this replaces.
#if defined(SMPI_H)
void set_jitter(const Options& o) {
  auto rng = std::make_shared<std::mt19937_64>(o.seed ^ 0xBB67AE8584CAA73Bull);
  const double mean = o.jitter;
  std::vector<std::pair<double, double>> base;  // (bound, factor), bounds descending
  for (const std::string& item : split(o.lat_factor, ';')) {
    const std::size_t colon = item.find(':');
    if (colon == std::string::npos) continue;
    base.emplace_back(std::atof(item.substr(0, colon).c_str()),
                      std::atof(item.c_str() + colon + 1));
  }
  std::sort(base.begin(), base.end(),
            [](const auto& x, const auto& y) { return x.first > y.first; });
  simgrid::s4u::Engine::get_instance()->get_netzone_root()->get_network_model()->set_lat_factor_cb(
      [rng, mean, base](double size, const simgrid::s4u::Host*, const simgrid::s4u::Host*,
                        const std::vector<simgrid::s4u::Link*>&,
                        const std::unordered_set<simgrid::s4u::NetZone*>&) {
        double factor = 1;
        for (const auto& b : base)
          if (size >= b.first) {
            factor = b.second;
            break;
          }
        const double x = std::exponential_distribution<double>(1.0)(*rng);
        const bool tail = std::uniform_real_distribution<double>(0, 1)(*rng) < 0.1;
        return factor * (1 + mean * x * (tail ? 10.0 : 1.0) / 1.9);
      });
}
#else
void set_jitter(const Options&) {}
#endif

// Waits s seconds: simulated time under SMPI (its nanosleep), a busy wait elsewhere (sleeping
// is far coarser than the delays wanted).
void pause_for(double s) {
  if (s <= 0) return;
#if defined(SMPI_H)
  struct timespec ts;
  ts.tv_sec = static_cast<time_t>(s);
  ts.tv_nsec = static_cast<long>((s - double(ts.tv_sec)) * 1e9);
  nanosleep(&ts, nullptr);
#else
  const double t0 = MPI_Wtime();
  while (MPI_Wtime() - t0 < s) {
  }
#endif
}

std::string where_str(const Run& r, const Case& k, const Variant& v) {
  std::string s = "variant '" + v.name + "', ";
  if (!k.pattern.empty()) s += "pattern " + k.pattern + ", ";
  return s + "size " + std::to_string(k.size) + ", P=" + std::to_string(r.c.nprocs);
}

void get_traffic(const Run& r, MPIX_Request req, Samples& s, const std::string& where) {
  MPI_Count m = -1, b = -1, im = -1, ib = -1;
  check_rc(r.c, MPIX_Request_get_traffic(req, &m, &b, &im, &ib), "MPIX_Request_get_traffic", where);
  const MPI_Count t[4] = {m, b, im, ib};
  for (int i = 0; i < 4; ++i) s.traffic[i] = static_cast<long long>(t[i]);
}

// --timing-only: a receive buffer nobody reads. Under SimGrid's SMPI, SMPI_SHARED_MALLOC maps
// the same few pages into it for every simulated rank however large it is (SMPI's default
// smpi/shared-malloc:global), so the receive side costs no memory per rank.
struct TimingBuffer {
  unsigned char* p = nullptr;
  explicit TimingBuffer(std::size_t n) {
    if (n == 0) return;
#if defined(SMPI_H)
    p = static_cast<unsigned char*>(SMPI_SHARED_MALLOC(n));
#else
    p = static_cast<unsigned char*>(std::malloc(n));
#endif
    if (p == nullptr) throw std::bad_alloc();
  }
  ~TimingBuffer() {
#if defined(SMPI_H)
    if (p != nullptr) SMPI_SHARED_FREE(p);
#else
    std::free(p);
#endif
  }
  TimingBuffer(const TimingBuffer&) = delete;
  TimingBuffer& operator=(const TimingBuffer&) = delete;
};

void run_round(const Run& r, Case& k, const Variant& v, int iters, int first_iter, Samples& out,
               Budget& b) {
  const Ctx& c = r.c;
  if (out.skipped) return;
  const std::string where = where_str(r, k, v);
  g_watchdog.set_phase(where);
  std::vector<unsigned char> recv = k.poison;
  unsigned char* const rb = k.recv_of(recv);  // reassigning recv (same size) keeps its storage
  MPI_Comm comm = k.comm;
  MPIX_Request ours = MPIX_REQUEST_NULL;
  MPI_Request sys = MPI_REQUEST_NULL;
  std::string algorithm, chosen, chosen_by;

  auto dup = [&]() {
    check_rc(c, MPI_Comm_dup(k.comm, &comm), "MPI_Comm_dup", where);
    MPI_Comm_set_errhandler(comm, MPI_ERRORS_RETURN);
  };
  switch (v.kind) {
    case Kind::SystemBlocking:
      algorithm = v.name;
      break;
    case Kind::SystemPersistent: {
      algorithm = r.w.system_init_name();
      // On its own duplicate: Open MPI 4.1's MPIX_Neighbor_alltoallv_init fails on a rank
      // without neighbours after the others have advanced the communicator's collective tag,
      // and a later collective on that communicator would then hang.
      dup();
      MPI_Barrier(c.comm);
      double t0 = MPI_Wtime();
      int rc = k.sys_init(rb, comm, &sys);
      double t1 = MPI_Wtime();
      // Not ours to fix: a failure of the system's persistent call drops the variant from
      // this configuration, on every rank.
      int failed = rc != MPI_SUCCESS, any = 0;
      MPI_Allreduce(&failed, &any, 1, MPI_INT, MPI_MAX, c.comm);
      if (any) {
        if (rc == MPI_SUCCESS)
          check_rc(c, MPI_Request_free(&sys), "MPI_Request_free", where);
        else
          std::fprintf(stderr, "mpia_bench: rank %d: %s failed (%s): %s; variant skipped\n", c.rank,
                       algorithm.c_str(), where.c_str(), mpi_error_string(rc).c_str());
        k.release(comm);
        MPI_Comm_free(&comm);
        out.skipped = true;
        out.algorithm = "(init failed: skipped)";
        return;
      }
      out.init_sum += t1 - t0;
      out.init_count++;
      break;
    }
    case Kind::OursBlocking: {
      if (!v.selection.empty()) {
        // Its own duplicate, whose algorithm is chosen once (the library keeps a blocking
        // plan per communicator, which variants sharing one would rebuild at every call).
        dup();
        check_rc(c, MPIX_Comm_set_algorithm(comm, r.w.registry, v.selection.c_str()),
                 "MPIX_Comm_set_algorithm", where);
      }
      // A blocking call cannot be asked what it runs: report what a persistent request with
      // the same selection (no info key: the communicator's or the environment's) resolves to.
      MPIX_Request p = MPIX_REQUEST_NULL;
      check_rc(c, k.ours_init(rb, comm, MPI_INFO_NULL, &p), "init (probe)", where);
      check_rc(c, request_algorithm(p, chosen), "MPIX_Request_get_algorithm", where);
      get_traffic(r, p, out, where);
      check_rc(c, MPIX_Request_free(&p), "MPIX_Request_free", where);
      algorithm = chosen + " (as init)";
      chosen_by = "init";
      break;
    }
    case Kind::OursPersistent: {
      MPI_Info info;
      MPI_Info_create(&info);
      MPI_Info_set(info, MPIX_INFO_KEY_ALGORITHM, v.selection.c_str());
      MPI_Barrier(c.comm);
      double t0 = MPI_Wtime();
      check_rc(c, k.ours_init(rb, comm, info, &ours), "MPIX init", where);
      out.init_sum += MPI_Wtime() - t0;
      out.init_count++;
      MPI_Info_free(&info);
      check_rc(c, request_algorithm(ours, chosen), "MPIX_Request_get_algorithm", where);
      get_traffic(r, ours, out, where);
      algorithm = chosen;
      chosen_by = "request";
      break;
    }
  }
  if (!out.algorithm.empty() && out.algorithm != algorithm)
    die(c, where + " resolved to '" + out.algorithm + "' and then to '" + algorithm + "'");
  out.algorithm = algorithm;
  out.chosen = chosen;
  out.chosen_by = chosen_by;

  // --check-every: start n sends the case's data with every byte xor (1 + n mod 255), and the
  // elements of the receive buffer that carry data (those where expected and poison differ:
  // not the gaps) expect the same; restored at the end of the round.
  const std::vector<unsigned char> base_send =
      r.o.check_every ? k.send : std::vector<unsigned char>();
  const std::vector<unsigned char> base_expected =
      r.o.check_every ? k.expected : std::vector<unsigned char>();
  long long starts = 0;
  auto vary = [&](long long n) {
    const unsigned char m = static_cast<unsigned char>(1 + n % 255);
    for (std::size_t j = 0; j < base_send.size(); ++j) k.send[j] = base_send[j] ^ m;
    for (std::size_t e = 0; e + k.elem <= base_expected.size(); e += k.elem) {
      if (std::memcmp(&base_expected[e], &k.poison[e], k.elem) == 0) continue;
      for (std::size_t j = e; j < e + k.elem; ++j) k.expected[j] = base_expected[j] ^ m;
    }
    recv = k.poison;
  };
  // noise: the index of the arrival-noise draw -- a timed iteration's own index, so that every
  // variant's timed iteration i waits the same delays (a paired comparison), and numbers past
  // them for the untimed starts (first run, warm-up, a trial).
  auto op = [&](long long noise) {
    pause_for(noise_s(r.o, k, c.rank, noise));
    ++starts;
    switch (v.kind) {
      case Kind::SystemBlocking:
        check_rc(c, k.sys_blocking(rb, comm), v.name, where);
        break;
      case Kind::SystemPersistent:
        check_rc(c, MPI_Start(&sys), "MPI_Start", where);
        check_rc(c, MPI_Wait(&sys, MPI_STATUS_IGNORE), "MPI_Wait", where);
        break;
      case Kind::OursBlocking:
        check_rc(c, k.ours_blocking(rb, comm), "MPIX_" + std::string(r.w.call), where);
        break;
      case Kind::OursPersistent:
        check_rc(c, MPIX_Start(&ours), "MPIX_Start", where);
        check_rc(c, MPIX_Wait(&ours, MPI_STATUS_IGNORE), "MPIX_Wait", where);
        break;
    }
  };
  // Every element of every rank against the expected buffer. The MPI library's results on a
  // degenerate topology (where libraries have differed) are only noted.
  auto check = [&](const char* when) {
    if (r.o.timing_only) return;
    const bool note_only = k.degenerate && system_like(v);
    long long bad = compare(c, k, recv, v.name + ", " + when, note_only);
    if (bad == 0) return;
    if (note_only) {
      out.deviates = true;
      return;
    }
    std::string repro = "mpirun -n " + std::to_string(c.nprocs) + " " +
                        (r.locality_env.empty() ? "" : "-x MPIX_LOCALITY=" + r.locality_env + " ") +
                        "mpia_bench --collective " + r.o.collective + " " + k.reproduce +
                        " --variants '" + v.name + "'";
    fail_collectively(c, "WRONG RESULT: " + where + " (algorithm '" + algorithm + "'), " + when +
                             ": " + std::to_string(bad) +
                             " wrong elements over all ranks (checked against " + k.reference +
                             ").\n  reproduce: " + repro);
  };

  // 1. Correctness of the first run (its time, checking included, is --time-limit's first
  // estimate of a start's).
  if (r.o.check_every) vary(starts);
  MPI_Barrier(c.comm);
  const double t_first = MPI_Wtime();
  op((1LL << 40) + starts);
  g_watchdog.poke();
  check("first run");
  const double first_s = MPI_Wtime() - t_first;
  // 2. Warm-up (no imbalance): --warmup starts, then, for a persistent request of ours whose
  // measured trial has not settled, more until it has (--trial-warmup at most). Under
  // --warmup-until-settled a persistent request of ours ends its warm-up once it runs no trial.
  // Whether the trial has settled is read after each start on every rank; the trial's
  // decisions are agreed, but the loops' lengths are agreed here too.
  auto settled_here = [&]() {
    char text[MPIX_MAX_TRIAL_STRING];
    int len = 0;
    check_rc(c, MPIX_Request_get_trial(ours, text, &len), "MPIX_Request_get_trial", where);
    return len == 0 || std::strncmp(text, "chose", 5) == 0;
  };
  auto settled_everywhere = [&]() {
    int mine = settled_here(), all = 0;
    MPI_Allreduce(&mine, &all, 1, MPI_INT, MPI_MIN, c.comm);
    return all != 0;
  };
  auto warm = [&](const std::string& what) {
    if (r.o.check_every) vary(starts);
    op((1LL << 40) + starts);
    g_watchdog.poke();
    if (r.o.check_every) check(what.c_str());
  };
  const bool until = r.o.warmup_until_settled && ours != MPIX_REQUEST_NULL;
  const int planned_warmup = r.o.warmup_until_settled && !until && r.o.warmup_others >= 0
                                 ? r.o.warmup_others
                                 : warmup_for(r.o, k);
  // --time-limit plans the slot after the first warm-up start (which always runs), by the
  // cheaper of it and the first run (a single start may hit a hiccup); the ranks agree on the
  // loop's length, so all of them plan at the same point.
  int warmup = planned_warmup;
  bool planned = false;
  auto plan = [&](double start_s) {
    planned = true;
    warmup = b.plan(start_s, planned_warmup, iters);
    out.warmup_planned = planned_warmup;
    if (warmup < planned_warmup)
      out.warmup_fewest = out.warmup_fewest < 0 ? warmup : std::min(out.warmup_fewest, warmup);
  };
  const double t_warm = MPI_Wtime();
  int warmed = 0;
  for (int i = 0; i < warmup && !(until && settled_everywhere()); ++i, ++warmed) {
    warm("warm-up start " + std::to_string(i));
    if (i == 0 && b.on()) plan(std::min(first_s, MPI_Wtime() - t_warm));
  }
  if (b.on() && !planned) plan(first_s);
  // This rank's cost of a start (the warm-up's mean): --time-limit's estimate of an iteration.
  const double start_local = warmed > 0 ? (MPI_Wtime() - t_warm) / warmed : first_s;
  double t_trial = 0, trial_s = 0;  // --time-limit: when the trial's warm-up began, its time
  if (ours != MPIX_REQUEST_NULL && !r.o.warmup_until_settled) {
    // Under --time-limit the ranks also agree whether one more start fits what the budget
    // allows a trial (Budget::room_for); a trial it stops is noted.
    bool stopped = false;
    t_trial = MPI_Wtime();
    auto goes_on = [&]() {
      if (!b.on()) return !settled_everywhere();
      int mine[2] = {settled_here() ? 1 : 0, b.room_for(start_local, t_trial) ? 1 : 0};
      int all[2] = {0, 0};
      MPI_Allreduce(mine, all, 2, MPI_INT, MPI_MIN, c.comm);
      stopped = all[0] == 0 && all[1] == 0;
      return all[0] == 0 && all[1] != 0;
    };
    int more = 0;
    while (more < r.o.trial_warmup && goes_on())
      warm("trial warm-up start " + std::to_string(more++));
    out.trial_warmup = std::max(out.trial_warmup, more);
    out.trial_cut |= stopped;
    trial_s = MPI_Wtime() - t_trial;
  }
  if (ours != MPIX_REQUEST_NULL && !settled_here()) {
    out.timed_trial = true;
    // --warmup-until-settled: a warm-up the budget cut short of the trial's end.
    if (until && warmup < planned_warmup) out.trial_cut = true;
  }
  // --time-limit: the iterations that fit, and a check every tenth of them whether they still
  // do, between iterations (untimed).
  int recheck = 0;
  if (b.on()) {
    iters = b.timed(start_local, trial_s, iters);
    recheck = std::max(1, iters / 10);
  }
  // 3. Timed iterations; the result must be rewritten in full: poison it first.
  recv = k.poison;
  const bool imb = r.o.imbalance_us > 0;
  for (int i = 0; i < iters; ++i) {
    const double d = delay_s(r.o, c.rank, first_iter + i);
    if (r.o.check_every) vary(starts);
    MPI_Barrier(c.comm);
    const double t0 = MPI_Wtime();
    double ta = t0;
    if (imb)
      while ((ta = MPI_Wtime()) - t0 < d) {
      }
    op(first_iter + i);
    const double t1 = MPI_Wtime();
    out.t.push_back(t1 - ta);
    if (imb) {
      out.arrive.push_back(ta - t0);
      out.done.push_back(t1 - t0);
    }
    g_watchdog.poke();
    if (r.o.check_every && i + 1 < iters) check(("timed iteration " + std::to_string(i)).c_str());
    if (recheck > 0 && i + 1 < iters && (i + 1) % recheck == 0 && b.spent()) iters = i + 1;
  }
  if (b.on()) b.cut_local = MPI_Wtime() - b.local_plan;
  check("after the timed iterations");
  if (r.o.check_every) {
    k.send = base_send;
    k.expected = base_expected;
  }

  // What a persistent request ran in the timed iterations: an auto request's trial has settled
  // by now (or is still trying, with a short warm-up), so ask again; each round's request
  // settles on its own, so every distinct choice is kept, in the order first seen.
  if (ours != MPIX_REQUEST_NULL) {
    std::string ran;
    check_rc(c, request_algorithm(ours, ran), "MPIX_Request_get_algorithm", where);
    char text[MPIX_MAX_TRIAL_STRING];
    int len = 0;
    check_rc(c, MPIX_Request_get_trial(ours, text, &len), "MPIX_Request_get_trial", where);
    if (len > 0) out.chosen_by = "trial";
    if (out.ran.empty()) {
      out.ran = ran;
    } else if (("|" + out.ran + "|").find("|" + ran + "|") == std::string::npos) {
      out.ran += "|" + ran;
    }
    out.chosen = out.ran;
  }
  if (ours != MPIX_REQUEST_NULL) check_rc(c, MPIX_Request_free(&ours), "MPIX_Request_free", where);
  if (sys != MPI_REQUEST_NULL) check_rc(c, MPI_Request_free(&sys), "MPI_Request_free", where);
  if (comm != k.comm) {
    k.release(comm);
    MPI_Comm_free(&comm);
  }
}

// ---------------------------------------------------------------------------------------------
// Statistics

struct Result {
  std::string variant, selection, algorithm, chosen, chosen_by;
  Kind kind = Kind::SystemBlocking;
  bool skipped = false, deviates = false;
  int iters = 0, trial_warmup = 0;
  bool timed_trial = false;
  int planned_iters = 0, warmup_planned = 0, warmup_fewest = -1;  // --time-limit (Samples)
  bool trial_cut = false;
  double min_us = 0, avg_us = 0, max_us = 0, med_us = 0, init_us = -1;
  double after_mean_us = 0, after_max_us = 0, after_med_us = 0;  // imbalance mode
  long long msgs_sum = -1, bytes_sum = -1, imsg_max = -1, imsg_sum = -1, ibytes_max = -1,
            ibytes_sum = -1;
};

// Collective: the statistics of one variant (meaningful on rank 0).
Result summarize(const Run& r, const Variant& v, const Samples& s) {
  const Ctx& c = r.c;
  Result res;
  res.variant = v.name;
  res.selection = v.selection;
  res.kind = v.kind;
  res.algorithm = s.algorithm;
  res.chosen = s.chosen;
  res.chosen_by = s.chosen_by;
  res.skipped = s.skipped;
  res.deviates = s.deviates;
  res.trial_warmup = s.trial_warmup;
  res.timed_trial = s.timed_trial;
  res.planned_iters = s.planned_iters;
  res.warmup_planned = s.warmup_planned;
  res.warmup_fewest = s.warmup_fewest;
  res.trial_cut = s.trial_cut;
  res.iters = static_cast<int>(s.t.size());
  double sum = 0;
  for (double x : s.t) sum += x;
  double avg_local = res.iters > 0 ? sum / res.iters : 0;
  double init_local = s.init_count > 0 ? s.init_sum / s.init_count : -1;
  double mn = 0, mx = 0, total = 0, init_max = 0;
  MPI_Reduce(&avg_local, &mn, 1, MPI_DOUBLE, MPI_MIN, 0, c.comm);
  MPI_Reduce(&avg_local, &mx, 1, MPI_DOUBLE, MPI_MAX, 0, c.comm);
  MPI_Reduce(&avg_local, &total, 1, MPI_DOUBLE, MPI_SUM, 0, c.comm);
  MPI_Reduce(&init_local, &init_max, 1, MPI_DOUBLE, MPI_MAX, 0, c.comm);
  std::vector<double> tmax(s.t.size());
  MPI_Reduce(s.t.data(), tmax.data(), res.iters, MPI_DOUBLE, MPI_MAX, 0, c.comm);
  // Traffic: -1 (unknown) on any rank makes the figure unknown.
  long long tmin[4], tsum[4], tmx[4];
  MPI_Reduce(s.traffic, tmin, 4, MPI_LONG_LONG, MPI_MIN, 0, c.comm);
  MPI_Reduce(s.traffic, tsum, 4, MPI_LONG_LONG, MPI_SUM, 0, c.comm);
  MPI_Reduce(s.traffic, tmx, 4, MPI_LONG_LONG, MPI_MAX, 0, c.comm);
  if (c.rank == 0) {
    res.min_us = mn * 1e6;
    res.max_us = mx * 1e6;
    res.avg_us = total / c.nprocs * 1e6;
    res.med_us = median(tmax) * 1e6;
    res.init_us = init_max < 0 ? -1 : init_max * 1e6;
    if (tmin[0] >= 0) res.msgs_sum = tsum[0];
    if (tmin[1] >= 0) res.bytes_sum = tsum[1];
    if (tmin[2] >= 0) res.imsg_max = tmx[2], res.imsg_sum = tsum[2];
    if (tmin[3] >= 0) res.ibytes_max = tmx[3], res.ibytes_sum = tsum[3];
  }
  if (r.o.imbalance_us > 0) {
    // The last arrival of every iteration, then each rank's completion after it.
    std::vector<double> last(s.arrive.size()), after(s.done.size());
    MPI_Allreduce(s.arrive.data(), last.data(), res.iters, MPI_DOUBLE, MPI_MAX, c.comm);
    double asum = 0;
    for (std::size_t i = 0; i < after.size(); ++i) asum += after[i] = s.done[i] - last[i];
    double amean = res.iters > 0 ? asum / res.iters : 0, amean_sum = 0, amean_max = 0;
    MPI_Reduce(&amean, &amean_sum, 1, MPI_DOUBLE, MPI_SUM, 0, c.comm);
    MPI_Reduce(&amean, &amean_max, 1, MPI_DOUBLE, MPI_MAX, 0, c.comm);
    std::vector<double> amax(after.size());
    MPI_Reduce(after.data(), amax.data(), res.iters, MPI_DOUBLE, MPI_MAX, 0, c.comm);
    if (c.rank == 0) {
      res.after_mean_us = amean_sum / c.nprocs * 1e6;
      res.after_max_us = amean_max * 1e6;
      res.after_med_us = median(amax) * 1e6;
    }
  }
  return res;
}

// ---------------------------------------------------------------------------------------------
// Output (rank 0)

struct CaseResults {
  std::string pattern;
  long long size = 0;
  std::vector<Result> rs;
  int rounds_run = 0;  // fewer than --rounds: cut by --time-limit
};

const Result* find(const std::vector<Result>& rs, const std::string& name) {
  for (const auto& x : rs)
    if (x.variant == name) return &x;
  return nullptr;
}

struct Printer {
  const Run& r;
  int vw = 18;  // width of the variant column
  bool keyed() const { return !r.w.all_patterns.empty(); }
  bool imb() const { return r.o.imbalance_us > 0; }
  std::string key(const std::string& pat, const std::string& size) const {
    char b[64];
    if (keyed())
      std::snprintf(b, sizeof b, "%-9s %8s", pat.c_str(), size.c_str());
    else
      std::snprintf(b, sizeof b, "%8s", size.c_str());
    return b;
  }

  void header() const {
    std::printf("%s  %-*s %-30s %5s %11s %11s %11s %11s %7s %9s %10s",
                key("pattern", "size").c_str(), vw, "variant", "algorithm", "iters", "min_us",
                "avg_us", "max_us", "med_max_us", "ratio", "ratio_med", "init_us");
    if (r.w.blocking_per_algorithm)
      std::printf(" %6s %9s %6s %7s %10s %11s", "msgs", "bytes", "im_max", "im_sum", "ib_max",
                  "ib_sum");
    if (imb())
      std::printf(" %10s %10s %10s %7s %7s %7s %7s", "after_mean", "after_max", "after_mmax",
                  "r_pw", "r_sys", "r_pw_mx", "r_sys_mx");
    std::printf("\n");
  }

  void rows(const CaseResults& k, std::FILE* csv) const {
    const Result* base = find(k.rs, "MPI_" + std::string(r.w.call));
    const Result* pw = find(k.rs, "pairwise");
    const double b_avg = base ? base->avg_us : 0, b_med = base ? base->med_us : 0;
    auto cell = [](long long v) { return v < 0 ? std::string("-") : std::to_string(v); };
    auto csv_cell = [](long long v) { return v < 0 ? std::string() : std::to_string(v); };
    for (const Result& x : k.rs) {
      const std::string init = x.init_us >= 0 ? fmt("%.1f", x.init_us) : "-";
      const std::string ratio = x.skipped ? "-" : fmt_ratio(x.avg_us, b_avg);
      const std::string ratio_med = x.skipped ? "-" : fmt_ratio(x.med_us, b_med);
      const double pw_mean = pw ? pw->after_mean_us : 0, pw_max = pw ? pw->after_max_us : 0;
      const double b_mean = base ? base->after_mean_us : 0, b_max = base ? base->after_max_us : 0;
      std::printf("%s  %-*s %-30s %5d %11.2f %11.2f %11.2f %11.2f %7s %9s %10s",
                  key(k.pattern, std::to_string(k.size)).c_str(), vw, x.variant.c_str(),
                  x.algorithm.c_str(), x.iters, x.min_us, x.avg_us, x.max_us, x.med_us,
                  ratio.c_str(), ratio_med.c_str(), init.c_str());
      if (r.w.blocking_per_algorithm)
        std::printf(" %6s %9s %6s %7s %10s %11s", cell(x.msgs_sum).c_str(),
                    cell(x.bytes_sum).c_str(), cell(x.imsg_max).c_str(), cell(x.imsg_sum).c_str(),
                    cell(x.ibytes_max).c_str(), cell(x.ibytes_sum).c_str());
      if (imb())
        std::printf(" %10.2f %10.2f %10.2f %7s %7s %7s %7s", x.after_mean_us, x.after_max_us,
                    x.after_med_us, fmt_ratio(x.after_mean_us, pw_mean).c_str(),
                    fmt_ratio(x.after_mean_us, b_mean).c_str(),
                    fmt_ratio(x.after_max_us, pw_max).c_str(),
                    fmt_ratio(x.after_max_us, b_max).c_str());
      std::printf("\n");
      if (!csv) continue;
      // The first 13 columns are mpia_bench's (alltoall) since before the merge.
      std::fprintf(csv, "%d,%s,%lld,%s,%s,%d,%.3f,%.3f,%.3f,%.3f,%s,%s,%s,", r.c.nprocs,
                   csv_quote(r.c.mpi_library).c_str(), k.size, csv_quote(x.variant).c_str(),
                   csv_quote(x.algorithm).c_str(), x.iters, x.min_us, x.avg_us, x.max_us, x.med_us,
                   x.skipped ? "" : fmt_ratio(x.avg_us, b_avg, "%.4f").c_str(),
                   x.skipped ? "" : fmt_ratio(x.med_us, b_med, "%.4f").c_str(),
                   x.init_us >= 0 ? fmt("%.3f", x.init_us).c_str() : "");
      std::fprintf(csv, "%s,%s,%s,%s,%d,%s,%s,%s,%s,%s,%s,", csv_quote(x.chosen).c_str(),
                   x.chosen_by.c_str(), r.o.collective.c_str(), k.pattern.c_str(), r.c.nnodes,
                   csv_cell(x.msgs_sum).c_str(), csv_cell(x.bytes_sum).c_str(),
                   csv_cell(x.imsg_max).c_str(), csv_cell(x.imsg_sum).c_str(),
                   csv_cell(x.ibytes_max).c_str(), csv_cell(x.ibytes_sum).c_str());
      std::fprintf(csv, "%s,", csv_quote(x.deviates ? "deviates (not checked)" : "").c_str());
      if (imb())
        std::fprintf(csv, "%g,%.3f,%.3f,%.3f,%s,%s,%s,%s\n", r.o.imbalance_us, x.after_mean_us,
                     x.after_max_us, x.after_med_us,
                     fmt_ratio(x.after_mean_us, pw_mean, "%.4f").c_str(),
                     fmt_ratio(x.after_mean_us, b_mean, "%.4f").c_str(),
                     fmt_ratio(x.after_max_us, pw_max, "%.4f").c_str(),
                     fmt_ratio(x.after_max_us, b_max, "%.4f").c_str());
      else
        std::fprintf(csv, "0,,,,,,,\n");
    }
    for (const Result& x : k.rs) {
      if (x.timed_trial)
        std::printf(
            "# note: %s's measured trial had not settled when its timed iterations began: "
            "its times include trial starts (raise --trial-warmup, or --warmup under "
            "--warmup-until-settled)\n",
            x.variant.c_str());
      else if (x.trial_warmup > 0)
        std::printf("# %s: its trial settled within %d more warm-up starts (--trial-warmup)\n",
                    x.variant.c_str(), x.trial_warmup);
    }
    // --time-limit: a line for every row the budget cut (and for the case's rounds).
    const bool n = std::string(r.w.collective) == "neighbor";  // sizes are n, not bytes
    const std::string at = std::string(r.w.collective) + " " + k.pattern +
                           (k.pattern.empty() ? "" : " ") + (n ? "n=" : "") +
                           std::to_string(k.size) + (n ? "" : " B");
    if (r.o.time_limit_s > 0 && k.rounds_run < r.o.rounds)
      std::printf("# time limit: %s: %d of %d rounds\n", at.c_str(), k.rounds_run, r.o.rounds);
    for (const Result& x : k.rs) {
      if (r.o.time_limit_s <= 0 || x.skipped) continue;
      std::string what;
      if (x.iters < x.planned_iters)
        what = std::to_string(x.planned_iters) + " -> " + std::to_string(x.iters) + " iterations";
      if (x.warmup_fewest >= 0)
        what += (what.empty() ? "" : ", ") + std::string("warm-up ") +
                std::to_string(x.warmup_planned) + " -> " + std::to_string(x.warmup_fewest) +
                " starts" + (r.o.rounds > 1 ? " (fewest in a round)" : "");
      if (x.trial_cut)
        what += (what.empty() ? "" : ", ") +
                std::string("its trial had not settled when the budget ended its warm-up");
      if (what.empty()) continue;
      std::printf("# time limit: %s %s: %s\n", at.c_str(), x.variant.c_str(), what.c_str());
    }
    std::string deviating;
    for (const Result& x : k.rs)
      if (x.deviates) deviating += (deviating.empty() ? "" : ", ") + x.variant;
    if (!deviating.empty())
      std::printf(
          "# note: the MPI library's result deviates from the MPI-4.1 definition on "
          "this degenerate topology in: %s (not checked)\n",
          deviating.c_str());
    std::printf("\n");
    std::fflush(stdout);
    if (csv) std::fflush(csv);
  }

  // One line per configuration: the baseline, the system persistent call, the blocking call,
  // auto and the fastest mpi-advance variant ("system", the pass-through, is not a
  // candidate), with what auto and the blocking call chose. In imbalance mode every time is
  // after_last (mean over ranks; median of the slowest rank).
  void summary(const std::vector<CaseResults>& all) const {
    const std::string call = r.w.call, ab = r.w.abbrev;
    const std::string blocking = r.w.blocking_per_algorithm ? "blk:auto" : "MPIX_" + call;
    std::printf(
        "# summary, P=%d%s: each cell is ratio / ratio_med against MPI_%s; best = the "
        "mpi-advance variant with the lowest avg (best_med: lowest med_max)%s; "
        "chose = what auto and %s ran\n",
        r.c.nprocs, r.c.nnodes > 1 ? (", " + std::to_string(r.c.nnodes) + " nodes").c_str() : "",
        call.c_str(), imb() ? "; times after the last arrival" : "", blocking.c_str());
    const int bw = std::max<int>(13, static_cast<int>(blocking.size()));
    const int vw16 = std::max(16, vw);
    std::printf("%s %10s %10s %13s %*s %13s  %-*s %6s  %-*s %6s  %-24s %s\n",
                key("pattern", "size").c_str(), ("MPI_" + ab + "_us").c_str(), "med_us",
                ("MPI_" + ab + "_init").c_str(), bw, blocking.c_str(), "auto", vw16, "best",
                "ratio", vw16, "best_med", "r_med", "auto_chose", "blocking_chose");
    for (const CaseResults& k : all) {
      auto avg = [&](const Result& x) { return imb() ? x.after_mean_us : x.avg_us; };
      auto med = [&](const Result& x) { return imb() ? x.after_med_us : x.med_us; };
      const Result* base = find(k.rs, "MPI_" + call);
      const Result *best = nullptr, *best_med = nullptr;
      for (const auto& x : k.rs) {
        if (x.kind != Kind::OursBlocking && x.kind != Kind::OursPersistent) continue;
        if (x.selection == "system" || x.skipped) continue;
        if (!best || avg(x) < avg(*best)) best = &x;
        if (!best_med || med(x) < med(*best_med)) best_med = &x;
      }
      const double b_avg = base ? avg(*base) : 0, b_med = base ? med(*base) : 0;
      auto cell = [&](const std::string& name) -> std::string {
        const Result* x = find(k.rs, name);
        if (!x || x->skipped || !(b_avg > 0) || !(b_med > 0)) return "-";
        return fmt("%.2f", avg(*x) / b_avg) + "/" + fmt("%.2f", med(*x) / b_med);
      };
      auto chose = [&](const std::string& name) {
        const Result* x = find(k.rs, name);
        return x && !x->chosen.empty() ? x->chosen : std::string("-");
      };
      std::printf("%s %10.2f %10.2f %13s %*s %13s  %-*s %6s  %-*s %6s  %-24s %s\n",
                  key(k.pattern, std::to_string(k.size)).c_str(), b_avg, b_med,
                  cell("MPI_" + call + "_init").c_str(), bw, cell(blocking).c_str(),
                  cell("auto").c_str(), vw16, best ? best->variant.c_str() : "-",
                  best ? fmt_ratio(avg(*best), b_avg, "%.2f").c_str() : "-", vw16,
                  best_med ? best_med->variant.c_str() : "-",
                  best_med ? fmt_ratio(med(*best_med), b_med, "%.2f").c_str() : "-",
                  chose("auto").c_str(), chose(blocking).c_str());
    }
    std::fflush(stdout);
  }
};

const char* const kCsvHeader =
    "P,mpi_library,size,variant,algorithm,iters,min_us,avg_us,max_us,median_max_us,ratio,"
    "ratio_median,init_us,chosen,chosen_by,collective,pattern,nodes,messages_sum,bytes_sum,"
    "internode_messages_max,internode_messages_sum,internode_bytes_max,internode_bytes_sum,"
    "system_result,imbalance_us,after_mean_us,after_max_us,after_median_max_us,ratio_pairwise,"
    "ratio_system,ratio_pairwise_max,ratio_system_max\n";

}  // namespace

int run_bench(int argc, char** argv) {
  Ctx c;
  c.prog = "mpia_bench";
  MPI_Comm_rank(MPI_COMM_WORLD, &c.rank);
  MPI_Comm_size(MPI_COMM_WORLD, &c.nprocs);
  const Workload* wp = nullptr;
  const Options o = parse_options(argc, argv, c.rank, c.nprocs, wp);
  const Workload& w = *wp;
#if !defined(SMPI_H)
  if (o.jitter > 0) {
    if (c.rank == 0) std::fprintf(stderr, "mpia_bench: --jitter needs a SimGrid SMPI build\n");
    return 2;
  }
#endif
  MPI_Barrier(MPI_COMM_WORLD);
  const double t_start = MPI_Wtime();  // --time-limit counts from here
  if (o.jitter > 0 && c.rank == 0) set_jitter(o);
  MPI_Barrier(MPI_COMM_WORLD);
  c.mpi_library = first_line_of_library_version();
  MPI_Comm_dup(MPI_COMM_WORLD, &c.comm);
  MPI_Comm_set_errhandler(c.comm, MPI_ERRORS_RETURN);
  {
    int node = 0, lrank = 0, lsize = 0;
    check_rc(c, MPIX_Comm_locality(c.comm, &node, &c.nnodes, &lrank, &lsize), "MPIX_Comm_locality",
             "MPI_COMM_WORLD");
  }
  Run r{c, o, w, ""};
  if (const char* e = std::getenv("MPIX_LOCALITY")) r.locality_env = e;

  g_watchdog.start(o.watchdog_s, c.rank, c.prog);
  g_watchdog.set_phase("building the variant list");
  const std::vector<Variant> variants = build_variants(c, o, w);
  Printer pr{r};
  for (const auto& v : variants) pr.vw = std::max<int>(pr.vw, static_cast<int>(v.name.size()));

  if (o.list_only) {
    if (c.rank == 0)
      for (const auto& v : variants)
        std::printf("%-*s %s\n", pr.vw, v.name.c_str(), v.description.c_str());
    g_watchdog.finish();
    MPI_Comm_free(&c.comm);
    return 0;
  }

  std::FILE* csv = nullptr;
  if (c.rank == 0 && !o.csv.empty()) {
    csv = std::fopen(o.csv.c_str(), "w");
    if (!csv) die(c, "cannot open CSV file '" + o.csv + "': " + std::strerror(errno));
    std::fputs(kCsvHeader, csv);
  }
  if (c.rank == 0) {
    const std::string env_name = w.env;
    const char* env = std::getenv(w.env);
    std::printf("# mpia_bench --collective %s (mpi-advance %d.%d.%d)  P=%d  nodes=%d%s  MPI: %s\n",
                o.collective.c_str(), MPIA_VERSION_MAJOR, MPIA_VERSION_MINOR, MPIA_VERSION_PATCH,
                c.nprocs, c.nnodes,
                r.locality_env.empty() ? "" : (" (MPIX_LOCALITY=" + r.locality_env + ")").c_str(),
                c.mpi_library.c_str());
    const std::string warm =
        (o.warmup >= 0 ? std::to_string(o.warmup) : std::string("200|10")) +
        (o.warmup_until_settled
             ? " (until settled" +
                   (o.warmup_others >= 0 ? "; others " + std::to_string(o.warmup_others) : "") + ")"
             : " trial-warmup=" + std::to_string(o.trial_warmup));
    std::printf("# warmup=%s iters=%s rounds=%d seed=%llu  %s=%s  system persistent: %s\n",
                warm.c_str(), o.iters > 0 ? std::to_string(o.iters).c_str() : "1000|100", o.rounds,
                o.seed, env_name.c_str(), env ? env : "(unset)",
                w.system_init_name() ? w.system_init_name() : "none");
    if (o.time_limit_s > 0)
      std::printf(
          "# time limit: %g s for the whole run (--time-limit): where a variant's planned "
          "iterations (then warm-up starts) would not fit its share of the time left, fewer run; "
          "every such row is noted ('# time limit: ...')\n",
          o.time_limit_s);
    if (o.timing_only)
      std::printf("# --timing-only: no result is checked%s\n",
#if defined(SMPI_H)
                  " (one receive buffer, shared by every simulated rank)"
#else
                  ""
#endif
      );
    if (o.warmup < 0 || o.iters <= 0)
      std::printf("# %s%s%s: OSU's defaults, the first up to 8 KiB messages, the second above\n",
                  o.warmup < 0 ? "warmup" : "", o.warmup < 0 && o.iters <= 0 ? " and " : "",
                  o.iters <= 0 ? "iters" : "");
    std::printf(
        "# times in us: per-rank mean over iterations, min/avg/max over ranks; "
        "med_max = median over iterations of the slowest rank;\n"
        "# ratio = avg / avg(MPI_%s) at the same size (< 1: faster than the system "
        "MPI); ratio_med = med_max / med_max(MPI_%s); init_us = slowest rank's "
        "*_init\n",
        w.call, w.call);
    if (w.blocking_per_algorithm)
      std::printf(
          "# msgs/bytes = what one start sends, sum over ranks; im_/ib_ = "
          "inter-node messages/bytes, max|sum over ranks\n");
    if (o.imbalance_us > 0)
      std::printf(
          "# imbalance mode: each rank waits a seeded delay in [0, %g] us before "
          "each call; after_last = completion - last arrival (us), mean/max over "
          "ranks of each rank's mean, after_mmax = median of the slowest rank;\n"
          "# r_pw / r_sys = after_mean vs pairwise / MPI_%s, r_*_mx the same for "
          "after_max\n",
          o.imbalance_us, w.call);
    pr.header();
    std::fflush(stdout);
  }

  Budget b;
  if (o.time_limit_s > 0) {
    b.limit = o.time_limit_s;
    b.comm = c.comm;
    b.t0 = t_start;
    b.cases_left = static_cast<long long>(o.patterns.size() * o.sizes.size());
    b.variants = static_cast<long long>(variants.size());
    b.rounds = o.rounds;
    b.mark = b.agree();
  }
  std::vector<CaseResults> all;
  for (const std::string& pat : o.patterns)
    for (long long size : o.sizes) {
      g_watchdog.set_phase("building " + (pat.empty() ? "" : pat + " ") + "size " +
                           std::to_string(size));
      std::unique_ptr<Case> k = w.make_case(c, o, pat, size);
      TimingBuffer timing(o.timing_only ? k->poison.size() : 0);
      if (o.timing_only) {
        k->timing_recv = timing.p;
        k->expected = std::vector<unsigned char>();
        k->poison = std::vector<unsigned char>();
      }
      if (c.rank == 0 && !k->header.empty()) std::printf("# %s\n", k->header.c_str());
      // Settle the system at this size before the first variant (the baseline) runs:
      // fresh buffers and a new message size otherwise penalize whichever comes first.
      g_watchdog.set_phase("settling with MPI_" + std::string(w.call) + ", size " +
                           std::to_string(size));
      const int settle = o.no_baseline   ? 0
                         : o.settle >= 0 ? o.settle
                                         : std::max(50, 2 * warmup_for(o, *k));
      std::vector<unsigned char> scratch = settle > 0 ? k->poison : std::vector<unsigned char>();
      for (int i = 0; i < settle; ++i) {
        check_rc(c, k->sys_blocking(k->recv_of(scratch), k->comm), "MPI_" + std::string(w.call),
                 "settling");
        g_watchdog.poke();
      }
      k->noise_us = o.noise_us;
      if (o.noise_rel > 0) {
        std::vector<double> ts;
        std::vector<unsigned char> buf = k->poison;
        for (int i = 0; i < 5; ++i) {
          MPI_Barrier(c.comm);
          const double t0 = MPI_Wtime();
          check_rc(c, k->sys_blocking(k->recv_of(buf), k->comm), "MPI_" + std::string(w.call),
                   "timing the noise's reference");
          double t = MPI_Wtime() - t0, slowest = 0;
          MPI_Allreduce(&t, &slowest, 1, MPI_DOUBLE, MPI_MAX, c.comm);
          ts.push_back(slowest);
        }
        k->noise_us = o.noise_rel * median(ts) * 1e6;
        if (c.rank == 0)
          std::printf("# arrival noise at size %lld: mean %.3g us (%g x MPI_%s's %.3g us)\n", size,
                      k->noise_us, o.noise_rel, w.call, median(ts) * 1e6);
      }
      if (b.on()) b.case_built();
      const int per_round = (iterations_for(o, *k) + o.rounds - 1) / o.rounds;
      std::vector<Samples> samples(variants.size());
      for (Samples& s : samples) s.planned_iters = per_round * o.rounds;
      int rounds_run = o.rounds;
      for (int round = 0; round < o.rounds; ++round) {
        // --time-limit: a later round runs only where the budget affords it (and so many for
        // every case left); once one does not, no later one does.
        if (round > 0 && b.on() && !b.round_fits(round)) {
          rounds_run = round;
          break;
        }
        for (std::size_t j = 0; j < variants.size(); ++j) {
          std::size_t idx = (j + static_cast<std::size_t>(round)) % variants.size();
          b.round = round;
          b.slot = static_cast<long long>(j);
          run_round(r, *k, variants[idx], per_round, round * per_round, samples[idx], b);
          if (b.on()) b.slot_done();
        }
      }
      CaseResults cr{pat, size, {}, rounds_run};
      for (std::size_t idx = 0; idx < variants.size(); ++idx)
        cr.rs.push_back(summarize(r, variants[idx], samples[idx]));
      if (c.rank == 0) pr.rows(cr, csv);
      all.push_back(std::move(cr));
    }
  g_watchdog.finish();
  const double used = b.on() ? b.agree() : 0;
  if (c.rank == 0) pr.summary(all);
  if (b.on() && c.rank == 0) {
    int rows = 0, cut = 0, warm_cut = 0, rounds_cut = 0;
    for (const CaseResults& k : all) {
      rounds_cut += k.rounds_run < o.rounds;
      for (const Result& x : k.rs) {
        ++rows;
        cut += !x.skipped && x.iters < x.planned_iters;
        warm_cut += !x.skipped && x.warmup_fewest >= 0;
      }
    }
    std::string more;
    if (warm_cut > 0) more += ", " + std::to_string(warm_cut) + " fewer warm-up starts";
    if (rounds_cut > 0)
      more += ", " + std::to_string(rounds_cut) + " of " + std::to_string(all.size()) +
              " configurations fewer rounds";
    std::printf("# time limit %g s: %d of %d rows ran fewer iterations%s (used %.1f s)\n",
                o.time_limit_s, cut, rows, more.c_str(), used);
    std::fflush(stdout);
  }
  if (csv) std::fclose(csv);
  MPI_Comm_free(&c.comm);
  return 0;
}

}  // namespace mpia_bench

namespace {
// MPIA_BENCH_QUICK_EXIT (scripts/smpi/paper_point.sh, SMPI_MMAP=1): the process ends at exit
// without running its exit handlers. Under SimGrid's mmap privatization every simulated rank has
// its own copy of the executable's globals but all share libc's one list of exit handlers, where
// each rank registers the destructors of its function-local statics (the library's registry,
// settings, ...): at exit they all run on one copy, a double free. Every rank registers this
// handler after those, so it runs first; a rank that failed says so in the environment, which
// the ranks share.
const char* const kQuickExit = "MPIA_BENCH_QUICK_EXIT";
void quick_exit_now() {
  std::fflush(nullptr);
  const char* v = std::getenv(kQuickExit);
  std::_Exit(v != nullptr && std::strcmp(v, "failed") == 0 ? 1 : 0);
}
}  // namespace

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  int rc = mpia_bench::run_bench(argc, argv);
  MPI_Finalize();
  if (std::getenv(kQuickExit) != nullptr) {
    if (rc != 0) setenv(kQuickExit, "failed", 1);
    std::atexit(quick_exit_now);
  }
  return rc;
}
