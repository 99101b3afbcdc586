/*
 * mpia_bench_neighbor -- neighborhood all-to-all-v latency benchmark for mpi-advance.
 *
 * Patterns (--patterns; the size n comes from --sizes; all exchanges move doubles):
 *   stencil2d  halo exchange on a 2-D Cartesian communicator (MPI_Dims_create +
 *              MPI_Cart_create): every rank owns an n x n box and exchanges its 4 faces of n
 *              doubles with its face neighbours
 *   stencil3d  the same in 3-D: an n^3 box, 6 faces of n^2 doubles
 *   lap2d      sparse matrix-vector product halo of the 5-point Laplacian on an n x n grid
 *              (n^2 rows, lexicographic order, Dirichlet boundary)
 *   lap3d      the same for the 7-point Laplacian on an n^3 grid
 *   powerlaw   a random sparse matrix of n^2 rows with power-law row lengths: row i holds the
 *              diagonal and k_i off-diagonal entries, k_i = min(kmax, floor(2 u^(-2/3))) for a
 *              seeded uniform u (a discrete Pareto tail, P(k) ~ k^-2.5 as for a Zipf law;
 *              mean about 6, kmax = min(n^2-1, 1000)); each entry lies at a log-uniform distance
 *              d in [1, n^2) left or right of the diagonal (column (i +- d) mod n^2), so most
 *              couplings are local with a heavy tail of far ones
 * The matrices are partitioned by rows into P contiguous blocks (rank p owns rows
 * [p*N/P, (p+1)*N/P)); rank p receives from the owner q of every column it needs the distinct
 * needed entries of x owned by q (ascending), on a communicator made by
 * MPI_Dist_graph_create_adjacent (sources: the owners, ascending; destinations: the ranks that
 * need entries of p, ascending).
 *
 * Cartesian periodicity (--periodic): "auto" (default) makes a dimension periodic when it has
 * at least 3 ranks; dimensions of 1 or 2 ranks are then not periodic (MPI_PROC_NULL
 * neighbours, whose blocks are left alone), so every topology is non-degenerate and every
 * result is checked against the system MPI. "all" makes every dimension periodic: dimensions of
 * 1 or 2 ranks then have the same rank as both neighbours, where MPI libraries have differed;
 * such a configuration is checked against the MPI-4.1 definition (receive block 2d holds what
 * the -1 neighbour sent in its block 2d+1) instead of the system's result. "none": no
 * dimension is periodic.
 *
 * Variants, timed side by side in one run on the same topology communicator:
 *   MPI_Neighbor_alltoallv       the system MPI's blocking call (the baseline of the ratios)
 *   MPI_Neighbor_alltoallv_init  the system's persistent one (MPI-4, or Open MPI 4's
 *                                MPIX_Neighbor_alltoallv_init extension), when it has one
 *   <name>                       every algorithm of mpi-advance's "neighbor_alltoallv"
 *                                registry as a persistent request (init once, Start + Wait)
 *   blk:<name>                   the same algorithm through the blocking
 *                                MPIX_Neighbor_alltoallv (each on its own duplicate of the
 *                                topology communicator, whose algorithm MPIX_Comm_set_algorithm
 *                                sets to <name>, so that each keeps its cached blocking plan)
 *
 * Method: per pattern and size the topology is built, MPIX_Comm_locality is called on it (so
 * that the requests know the inter-node traffic), the system blocking call runs once and its
 * result is compared with the data every rank computes it must receive (blocks and the gaps
 * between them); then every request is created (init time measured), every variant runs once
 * with its result compared with the system's (an abort with a reproducing command on any
 * difference), and the timed loop runs: in every iteration each variant, in an order rotating
 * from iteration to iteration, runs once after an MPI_Barrier, timed with MPI_Wtime (the first
 * --warmup iterations are not recorded). Every variant has its own receive buffer, which is
 * checked again after the loop. med_us = median over iterations of the slowest rank's time;
 * ratio = med_us / med_us(MPI_Neighbor_alltoallv). msgs/bytes: what one start makes each rank
 * send, from MPIX_Request_get_traffic, summed over ranks; inter_*: the inter-node part, max
 * over ranks and sum over ranks (MPIX_LOCALITY=ppn:K emulates nodes of K ranks on one host).
 */
#include "mpi_advance.h"
#include "bench_common.hpp"
#include "system_neighbor.h"

#include <mpi.h>

#include <algorithm>
#include <cerrno>
#include <climits>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fnmatch.h>
#include <string>
#include <vector>

namespace {

using mpia_bench::csv_quote;
using mpia_bench::mix64;
using mpia_bench::mpi_error_string;
using mpia_bench::parse_u64;
using mpia_bench::split;

const char *const kProg = "mpia_bench_neighbor";
const char *const kAllPatterns[] = {"stencil2d", "stencil3d", "lap2d", "lap3d", "powerlaw"};

// ---------------------------------------------------------------------------------------------
// Options

struct Options {
    std::vector<std::string> patterns{std::begin(kAllPatterns), std::end(kAllPatterns)};
    std::vector<long long> sizes{8, 32, 128};
    bool sizes_given = false;
    int iters = 0;  // 0: adapt to the message size
    int warmup = 10;
    bool warmup_given = false;
    std::vector<std::string> variant_patterns;  // empty: all
    std::string csv;
    std::string periodic = "auto";
    unsigned long long seed = 20240601ull;
    double watchdog_s = 120.0;
    bool quick = false;
    bool list_only = false;
};

const char *const kUsage =
    "usage: mpia_bench_neighbor [options]\n"
    "  --patterns LIST  stencil2d,stencil3d,lap2d,lap3d,powerlaw (default all)\n"
    "  --sizes LIST     n of every pattern (default 8,32,128): stencil2d/3d: local n^2 / n^3\n"
    "                   box (faces of n / n^2 doubles); lap2d/lap3d: n^2 / n^3 grid;\n"
    "                   powerlaw: n^2 rows\n"
    "  --iters N        timed iterations per variant, pattern and size (default: 100 when a\n"
    "                   rank sends <= 64 KiB, 50 up to 1 MiB, 20 above)\n"
    "  --warmup N       untimed interleaved iterations before timing (default 10)\n"
    "  --quick          a very short run (CI smoke): --sizes 5,12 --iters 2 --warmup 1\n"
    "                   unless given\n"
    "  --periodic MODE  Cartesian periodicity: auto (dimensions of >= 3 ranks; default),\n"
    "                   all, none\n"
    "  --variants LIST  comma list of variant names or shell patterns, e.g. 'direct,loc*'\n"
    "                   (MPI_Neighbor_alltoallv, the baseline, always runs)\n"
    "  --seed N         seed of the powerlaw matrix and of the data (default 20240601)\n"
    "  --csv FILE       also write the results as CSV (written by rank 0)\n"
    "  --watchdog SEC   abort when one step makes no progress for SEC seconds\n"
    "                   (default 120, 0 disables)\n"
    "  --list           print the variants and exit\n"
    "  --help           this text\n";

[[noreturn]] void usage_error(int rank, const std::string &msg)
{
    if (rank == 0) std::fprintf(stderr, "%s: %s\n%s", kProg, msg.c_str(), kUsage);
    MPI_Finalize();
    std::exit(2);
}

Options parse_options(int argc, char **argv, int rank)
{
    Options o;
    bool iters_given = false;
    for (int i = 1; i < argc; ++i) {
        std::string arg = argv[i];
        std::string value;
        bool has_value = false;
        auto eq = arg.find('=');
        if (arg.rfind("--", 0) == 0 && eq != std::string::npos) {
            value = arg.substr(eq + 1);
            arg = arg.substr(0, eq);
            has_value = true;
        }
        auto need = [&]() -> std::string {
            if (has_value) return value;
            if (i + 1 >= argc) usage_error(rank, "option " + arg + " needs a value");
            return argv[++i];
        };
        if (arg == "--help" || arg == "-h") {
            if (rank == 0) std::fputs(kUsage, stdout);
            MPI_Finalize();
            std::exit(0);
        } else if (arg == "--list") {
            o.list_only = true;
        } else if (arg == "--quick") {
            o.quick = true;
        } else if (arg == "--sizes") {
            o.sizes.clear();
            o.sizes_given = true;
            for (const auto &tok : split(need(), ',')) {
                unsigned long long v = 0;
                if (!parse_u64(tok, v) || v == 0 || v > 1000000ull)
                    usage_error(rank, "bad size '" + tok + "' (1..1000000)");
                o.sizes.push_back(static_cast<long long>(v));
            }
            if (o.sizes.empty()) usage_error(rank, "--sizes is empty");
        } else if (arg == "--patterns") {
            o.patterns = split(need(), ',');
            for (const auto &p : o.patterns)
                if (std::find(std::begin(kAllPatterns), std::end(kAllPatterns), p) ==
                    std::end(kAllPatterns))
                    usage_error(rank, "unknown pattern '" + p + "'");
            if (o.patterns.empty()) usage_error(rank, "--patterns is empty");
        } else if (arg == "--iters" || arg == "--warmup") {
            std::string tok = need();
            unsigned long long v = 0;
            if (!parse_u64(tok, v) || v > 100000000ull) usage_error(rank, "bad count '" + tok + "'");
            if (arg == "--iters") {
                if (v == 0) usage_error(rank, "--iters must be at least 1");
                o.iters = static_cast<int>(v);
                iters_given = true;
            } else {
                o.warmup = static_cast<int>(v);
                o.warmup_given = true;
            }
        } else if (arg == "--periodic") {
            o.periodic = need();
            if (o.periodic != "auto" && o.periodic != "all" && o.periodic != "none")
                usage_error(rank, "bad --periodic '" + o.periodic + "' (auto, all or none)");
        } else if (arg == "--variants") {
            o.variant_patterns = split(need(), ',');
        } else if (arg == "--csv") {
            o.csv = need();
        } else if (arg == "--seed") {
            std::string tok = need();
            if (!parse_u64(tok, o.seed)) usage_error(rank, "bad --seed '" + tok + "'");
        } else if (arg == "--watchdog") {
            std::string tok = need();
            char *end = nullptr;
            double v = std::strtod(tok.c_str(), &end);
            if (end == tok.c_str() || *end != '\0' || !(v >= 0) || v > 1e9)
                usage_error(rank, "bad --watchdog '" + tok + "'");
            o.watchdog_s = v;
        } else {
            usage_error(rank, "unknown argument '" + std::string(argv[i]) + "'");
        }
    }
    if (o.quick) {
        if (!o.sizes_given) o.sizes = {5, 12};
        if (!iters_given) o.iters = 2;
        if (!o.warmup_given) o.warmup = 1;
    }
    return o;
}

// ---------------------------------------------------------------------------------------------
// Variants

enum class Kind { SystemBlocking, SystemPersistent, OursBlocking, OursPersistent };

struct Variant {
    std::string name;
    Kind kind;
    std::string selection;  // ours: info "mpix_algorithm" / MPIX_Comm_set_algorithm (blocking)
    std::string description;
};

const char *const kBaseline = "MPI_Neighbor_alltoallv";

bool selected(const Options &o, const std::string &name)
{
    if (o.variant_patterns.empty()) return true;
    for (const auto &p : o.variant_patterns)
        if (p == name || fnmatch(p.c_str(), name.c_str(), 0) == 0) return true;
    return false;
}

std::vector<Variant> build_variants(const Options &o)
{
    std::vector<Variant> v;
    v.push_back({kBaseline, Kind::SystemBlocking, "", "the MPI library's MPI_Neighbor_alltoallv"});
    if (mpia_bench_system_neighbor_name() && selected(o, "MPI_Neighbor_alltoallv_init"))
        v.push_back({"MPI_Neighbor_alltoallv_init", Kind::SystemPersistent, "",
                     std::string("the MPI library's persistent neighbor all-to-all-v, ") +
                         mpia_bench_system_neighbor_name()});
    std::vector<std::pair<std::string, std::string>> algs;  // registry: name, description
    MPI_Errhandler saved;
    MPI_Comm_get_errhandler(MPI_COMM_SELF, &saved);
    MPI_Comm_set_errhandler(MPI_COMM_SELF, MPI_ERRORS_RETURN);
    for (int i = 0; i <= 1000; ++i) {
        const char *name = nullptr, *desc = nullptr;
        if (MPIX_Algorithm_get("neighbor_alltoallv", i, &name, &desc) != MPI_SUCCESS || !name)
            break;
        algs.emplace_back(name, desc ? desc : "");
    }
    MPI_Comm_set_errhandler(MPI_COMM_SELF, saved);
    MPI_Errhandler_free(&saved);
    for (const auto &a : algs)
        if (selected(o, a.first))
            v.push_back({a.first, Kind::OursPersistent, a.first, "persistent: " + a.second});
    for (const auto &a : algs)
        if (selected(o, "blk:" + a.first))
            v.push_back({"blk:" + a.first, Kind::OursBlocking, a.first,
                         "blocking MPIX_Neighbor_alltoallv, MPIX_Comm_set_algorithm " +
                             a.first + " (on its own duplicate of the topology communicator)"});
    return v;
}

mpia_bench::Watchdog g_watchdog;

struct Ctx {
    MPI_Comm comm;  // duplicate of MPI_COMM_WORLD, errors return
    int rank;
    int nprocs;
    int nnodes;
    std::string mpi_library;
    std::string locality_env;
    Options opt;
};

[[noreturn]] void die(const Ctx &c, const std::string &msg)
{
    std::fprintf(stderr, "%s: FATAL (rank %d): %s\n", kProg, c.rank, msg.c_str());
    std::fflush(stderr);
    MPI_Abort(MPI_COMM_WORLD, 3);
    std::exit(3);
}

void check_rc(const Ctx &c, int rc, const std::string &call, const std::string &where)
{
    if (rc == MPI_SUCCESS) return;
    die(c, call + " failed (" + where + "): " + mpi_error_string(rc));
}

// ---------------------------------------------------------------------------------------------
// Topologies and their buffers. Blocks lie in the buffers in reverse neighbour order with a
// one-double gap before each, so that wrong displacements show up; the gaps of a receive
// buffer must come back untouched.

constexpr double kGapValue = -12345.5;  // what the receive buffers' gaps hold and keep

// A double in [0, 1) from a key, exactly representable: the data every rank can predict.
double value_of(std::uint64_t key)
{
    return static_cast<double>(mix64(key) >> 11) * (1.0 / 9007199254740992.0);
}

struct Topo {
    std::string pattern;
    long long n = 0;
    MPI_Comm comm = MPI_COMM_NULL;
    std::string shape;        // "cart 4x2x2 periods 1,0,0" / "dist graph, 1024 rows"
    bool degenerate = false;  // a periodic dimension of 1 or 2 ranks
    std::vector<int> sources, dests;  // neighbour ranks in MPI order (MPI_PROC_NULL possible)
    std::vector<int> scounts, sdispls, rcounts, rdispls;  // in doubles
    std::vector<double> send, expected, poison;
};

void layout(const std::vector<int> &counts, std::vector<int> &displs, std::size_t &total)
{
    const std::size_t k = counts.size();
    displs.assign(k, 0);
    std::size_t off = 0;
    for (std::size_t j = k; j-- > 0;) {
        off += 1;
        displs[j] = static_cast<int>(std::min<std::size_t>(off, INT_MAX));  // checked by caller
        off += static_cast<std::size_t>(counts[j]);
    }
    total = off + 1;
}

void alloc_buffers(const Ctx &c, Topo &t)
{
    std::size_t slen = 0, rlen = 0;
    layout(t.scounts, t.sdispls, slen);
    layout(t.rcounts, t.rdispls, rlen);
    if (slen > static_cast<std::size_t>(INT_MAX) || rlen > static_cast<std::size_t>(INT_MAX))
        die(c, t.pattern + " n=" + std::to_string(t.n) + ": buffers above INT_MAX doubles");
    t.send.assign(slen, kGapValue);
    t.expected.assign(rlen, kGapValue);
    t.poison.assign(rlen, kGapValue);
}

// Halo exchange of an n^ndims box on a Cartesian communicator.
Topo make_stencil(const Ctx &c, const std::string &pat, int ndims, long long n)
{
    Topo t;
    t.pattern = pat;
    t.n = n;
    long long face = 1;
    for (int d = 0; d < ndims - 1; ++d) face *= n;
    if (face > INT_MAX / 8) die(c, pat + " n=" + std::to_string(n) + ": faces too large");
    int dims[3] = {0, 0, 0}, periods[3] = {0, 0, 0};
    MPI_Dims_create(c.nprocs, ndims, dims);
    std::string dstr, pstr;
    for (int d = 0; d < ndims; ++d) {
        periods[d] = c.opt.periodic == "all" ? 1 : c.opt.periodic == "none" ? 0 : dims[d] >= 3;
        if (periods[d] && dims[d] <= 2) t.degenerate = true;
        dstr += (d ? "x" : "") + std::to_string(dims[d]);
        pstr += (d ? "," : "") + std::to_string(periods[d]);
    }
    t.shape = "cart " + dstr + " periods " + pstr;
    check_rc(c, MPI_Cart_create(c.comm, ndims, dims, periods, 0, &t.comm), "MPI_Cart_create", pat);
    MPI_Comm_set_errhandler(t.comm, MPI_ERRORS_RETURN);
    const int k = 2 * ndims;
    t.sources.resize(k);
    t.dests.resize(k);
    for (int d = 0; d < ndims; ++d) {
        int lo = MPI_PROC_NULL, hi = MPI_PROC_NULL;
        check_rc(c, MPI_Cart_shift(t.comm, d, 1, &lo, &hi), "MPI_Cart_shift", pat);
        t.sources[2 * d] = t.dests[2 * d] = lo;
        t.sources[2 * d + 1] = t.dests[2 * d + 1] = hi;
    }
    t.scounts.assign(k, static_cast<int>(face));
    t.rcounts.assign(k, static_cast<int>(face));
    alloc_buffers(c, t);
    auto key = [&](int src, int block, long long i) {
        return mix64(c.opt.seed ^ 0x5EED0F57E9C11ull) ^
               mix64((static_cast<std::uint64_t>(src) << 40) ^
                     (static_cast<std::uint64_t>(block) << 32) ^ static_cast<std::uint64_t>(i));
    };
    for (int b = 0; b < k; ++b)
        for (long long i = 0; i < face; ++i) t.send[t.sdispls[b] + i] = value_of(key(c.rank, b, i));
    // MPI-4.1 7.6: receive block 2d comes from the -1 neighbour, which sent it as its block
    // 2d+1; block 2d+1 from the +1 neighbour's block 2d. A MPI_PROC_NULL block stays untouched.
    for (int b = 0; b < k; ++b) {
        const int src = t.sources[b];
        for (long long i = 0; i < face; ++i) {
            const std::size_t at = static_cast<std::size_t>(t.rdispls[b] + i);
            const double e = src == MPI_PROC_NULL ? -2.0 : value_of(key(src, b ^ 1, i));
            t.expected[at] = e;
            t.poison[at] = src == MPI_PROC_NULL ? -2.0 : -1.0 - e;
        }
    }
    return t;
}

// The column indices of row i of a generated matrix (N rows; duplicates allowed).
void row_columns(const std::string &pat, long long n, long long N, long long i,
                 unsigned long long seed, std::vector<long long> &cols)
{
    cols.clear();
    cols.push_back(i);
    if (pat == "lap2d") {
        const long long x = i % n, y = i / n;
        if (x > 0) cols.push_back(i - 1);
        if (x + 1 < n) cols.push_back(i + 1);
        if (y > 0) cols.push_back(i - n);
        if (y + 1 < n) cols.push_back(i + n);
    } else if (pat == "lap3d") {
        const long long x = i % n, y = (i / n) % n, z = i / (n * n);
        if (x > 0) cols.push_back(i - 1);
        if (x + 1 < n) cols.push_back(i + 1);
        if (y > 0) cols.push_back(i - n);
        if (y + 1 < n) cols.push_back(i + n);
        if (z > 0) cols.push_back(i - n * n);
        if (z + 1 < n) cols.push_back(i + n * n);
    } else {  // powerlaw
        if (N < 2) return;
        const std::uint64_t h =
            mix64(mix64(seed ^ 0x9E3779B97F4A7C15ull) ^ static_cast<std::uint64_t>(i));
        const double u = 1.0 - static_cast<double>(h >> 11) * (1.0 / 9007199254740992.0);  // (0,1]
        const long long kmax = std::min<long long>(N - 1, 1000);
        const double kd = std::floor(2.0 * std::pow(u, -1.0 / 1.5));
        const long long k = kd >= static_cast<double>(kmax) ? kmax : static_cast<long long>(kd);
        const double logN = std::log(static_cast<double>(N));
        for (long long j = 0; j < k; ++j) {
            const std::uint64_t g = mix64(h ^ mix64(static_cast<std::uint64_t>(j) + 1));
            const double v = static_cast<double>(g >> 11) * (1.0 / 9007199254740992.0);
            long long d = static_cast<long long>(std::floor(std::exp(v * logN)));
            d = std::max(1LL, std::min(d, N - 1));
            long long col = (g & 1) ? i + d : i - d;
            col %= N;
            if (col < 0) col += N;
            cols.push_back(col);
        }
    }
}

// Sparse matrix-vector halo on a distributed graph.
Topo make_sparse(const Ctx &c, const std::string &pat, long long n)
{
    Topo t;
    t.pattern = pat;
    t.n = n;
    const long long N = pat == "lap3d" ? n * n * n : n * n;
    if (N > INT_MAX) die(c, pat + " n=" + std::to_string(n) + ": more than INT_MAX rows");
    const int P = c.nprocs;
    auto start = [&](int p) { return static_cast<long long>(p) * N / P; };
    auto owner = [&](long long col) {
        int lo = 0, hi = P - 1;  // the last p with start(p) <= col
        while (lo < hi) {
            int mid = (lo + hi + 1) / 2;
            if (start(mid) <= col) lo = mid;
            else hi = mid - 1;
        }
        return lo;
    };
    const long long r0 = start(c.rank), r1 = start(c.rank + 1);
    std::vector<long long> need, cols;
    for (long long i = r0; i < r1; ++i) {
        row_columns(pat, n, N, i, c.opt.seed, cols);
        for (long long col : cols)
            if (col < r0 || col >= r1) need.push_back(col);
    }
    std::sort(need.begin(), need.end());
    need.erase(std::unique(need.begin(), need.end()), need.end());
    if (need.size() > static_cast<std::size_t>(INT_MAX / 2))
        die(c, pat + " n=" + std::to_string(n) + ": too many needed entries");

    // Who needs what from whom: counts, then the index lists themselves.
    std::vector<int> needcnt(P, 0), theycnt(P, 0), ndis(P, 0), tdis(P, 0);
    for (long long col : need) needcnt[owner(col)]++;
    check_rc(c, MPI_Alltoall(needcnt.data(), 1, MPI_INT, theycnt.data(), 1, MPI_INT, c.comm),
             "MPI_Alltoall", pat + " setup");
    long long tot = 0;
    for (int q = 0; q < P; ++q) {
        tdis[q] = static_cast<int>(tot);
        tot += theycnt[q];
        if (tot > INT_MAX / 2) die(c, pat + " n=" + std::to_string(n) + ": too many requests");
    }
    for (int q = 1; q < P; ++q) ndis[q] = ndis[q - 1] + needcnt[q - 1];
    std::vector<long long> requested(static_cast<std::size_t>(tot));
    check_rc(c,
             MPI_Alltoallv(need.data(), needcnt.data(), ndis.data(), MPI_LONG_LONG,
                           requested.data(), theycnt.data(), tdis.data(), MPI_LONG_LONG, c.comm),
             "MPI_Alltoallv", pat + " setup");

    for (int q = 0; q < P; ++q) {
        if (needcnt[q] > 0) {
            t.sources.push_back(q);
            t.rcounts.push_back(needcnt[q]);
        }
        if (theycnt[q] > 0) {
            t.dests.push_back(q);
            t.scounts.push_back(theycnt[q]);
        }
    }
    check_rc(c,
             MPI_Dist_graph_create_adjacent(
                 c.comm, static_cast<int>(t.sources.size()), t.sources.data(), MPI_UNWEIGHTED,
                 static_cast<int>(t.dests.size()), t.dests.data(), MPI_UNWEIGHTED, MPI_INFO_NULL,
                 0, &t.comm),
             "MPI_Dist_graph_create_adjacent", pat);
    MPI_Comm_set_errhandler(t.comm, MPI_ERRORS_RETURN);
    t.shape = "dist graph, " + std::to_string(N) + " rows";
    alloc_buffers(c, t);
    const std::uint64_t vseed = mix64(c.opt.seed ^ 0xA24BAED4963EE407ull);
    auto val = [&](long long g) { return value_of(vseed ^ static_cast<std::uint64_t>(g)); };
    for (std::size_t j = 0; j < t.dests.size(); ++j) {
        const int q = t.dests[j];
        for (int i = 0; i < theycnt[q]; ++i) t.send[t.sdispls[j] + i] = val(requested[tdis[q] + i]);
    }
    for (std::size_t k = 0; k < t.sources.size(); ++k) {
        const int q = t.sources[k];
        for (int i = 0; i < needcnt[q]; ++i) {
            const double e = val(need[ndis[q] + i]);
            t.expected[t.rdispls[k] + i] = e;
            t.poison[t.rdispls[k] + i] = -1.0 - e;
        }
    }
    return t;
}

Topo make_topo(const Ctx &c, const std::string &pat, long long n)
{
    if (pat == "stencil2d") return make_stencil(c, pat, 2, n);
    if (pat == "stencil3d") return make_stencil(c, pat, 3, n);
    if (pat == "lap3d" && n > 1290) die(c, "lap3d n=" + std::to_string(n) + ": n^3 above INT_MAX");
    if (pat != "lap3d" && n > 46340)
        die(c, pat + " n=" + std::to_string(n) + ": n^2 above INT_MAX");
    return make_sparse(c, pat, n);
}

// ---------------------------------------------------------------------------------------------
// Running the variants of one configuration

struct Slot {
    const Variant *v = nullptr;
    MPI_Comm comm = MPI_COMM_NULL;  // the topology communicator, or (blk:) a duplicate of it
    MPIX_Request ours = MPIX_REQUEST_NULL;
    MPI_Request sys = MPI_REQUEST_NULL;
    std::vector<double> recv;
    std::string algorithm;
    bool skipped = false;  // the system's persistent call failed at init on some rank
    double init_s = -1;
    long long traffic[4] = {-1, -1, -1, -1};  // messages, bytes, inter-node messages, bytes
    std::vector<double> t;
};

std::string where_str(const Ctx &c, const Topo &t, const std::string &variant)
{
    return "variant '" + variant + "', pattern " + t.pattern + ", n=" + std::to_string(t.n) +
           ", P=" + std::to_string(c.nprocs);
}

std::string reproduce(const Ctx &c, const Topo &t, const std::string &variant)
{
    return "mpirun -n " + std::to_string(c.nprocs) + " " +
           (c.locality_env.empty() ? "" : "-x MPIX_LOCALITY=" + c.locality_env + " ") + kProg +
           " --patterns " + t.pattern + " --sizes " + std::to_string(t.n) + " --periodic " +
           c.opt.periodic + " --seed " + std::to_string(c.opt.seed) + " --variants '" + variant +
           "'";
}

// Collective: every rank compares got (blocks and gaps) with want. Returns true when equal on
// every rank; otherwise each differing rank describes its first difference on stderr.
bool compare(const Ctx &c, const Topo &t, const std::vector<double> &got,
             const std::vector<double> &want, const std::string &what, bool quiet = false)
{
    long long bad = 0;
    std::size_t first = 0;
    for (std::size_t i = 0; i < got.size(); ++i)
        if (std::memcmp(&got[i], &want[i], sizeof(double)) != 0) {
            if (bad == 0) first = i;
            ++bad;
        }
    long long total = 0;
    MPI_Allreduce(&bad, &total, 1, MPI_LONG_LONG, MPI_SUM, c.comm);
    if (total == 0) return true;
    if (bad > 0 && !quiet) {
        int blk = -1;
        for (std::size_t k = 0; k < t.rcounts.size(); ++k)
            if (first >= static_cast<std::size_t>(t.rdispls[k]) &&
                first < static_cast<std::size_t>(t.rdispls[k]) + t.rcounts[k])
                blk = static_cast<int>(k);
        std::string loc =
            blk >= 0 ? "receive block " + std::to_string(blk) + " (from " +
                           (t.sources[blk] == MPI_PROC_NULL
                                ? std::string("MPI_PROC_NULL: must stay untouched")
                                : "rank " + std::to_string(t.sources[blk])) +
                           "), element " +
                           std::to_string(first - t.rdispls[blk]) + " of " +
                           std::to_string(t.rcounts[blk])
                     : "a gap between blocks (offset " + std::to_string(first) +
                           ", must stay untouched)";
        std::fprintf(stderr, "%s: rank %d: %s: %lld wrong doubles; first: %s: got %.17g, "
                             "expected %.17g\n",
                     kProg, c.rank, what.c_str(), bad, loc.c_str(), got[first], want[first]);
        std::fflush(stderr);
    }
    MPI_Barrier(c.comm);
    return false;
}

[[noreturn]] void fail_collectively(const Ctx &c, const std::string &msg)
{
    if (c.rank == 0) {
        std::fprintf(stderr, "%s: FATAL: %s\n", kProg, msg.c_str());
        std::fflush(stderr);
        MPI_Abort(MPI_COMM_WORLD, 4);
    }
    MPI_Barrier(c.comm);
    std::exit(4);
}

std::string resolved_algorithm(const Ctx &c, MPIX_Request req, const std::string &where)
{
    char name[MPIX_MAX_ALGORITHM_STRING];
    int len = 0;
    check_rc(c, MPIX_Request_get_algorithm(req, name, &len), "MPIX_Request_get_algorithm", where);
    name[MPIX_MAX_ALGORITHM_STRING - 1] = '\0';
    std::size_t n = std::min<std::size_t>(static_cast<std::size_t>(std::max(0, len)),
                                          MPIX_MAX_ALGORITHM_STRING - 1);
    return std::string(name, strnlen(name, n));
}

void get_traffic(const Ctx &c, MPIX_Request req, Slot &s, const std::string &where)
{
    MPI_Count m = -1, b = -1, im = -1, ib = -1;
    check_rc(c, MPIX_Request_get_traffic(req, &m, &b, &im, &ib), "MPIX_Request_get_traffic",
             where);
    s.traffic[0] = static_cast<long long>(m);
    s.traffic[1] = static_cast<long long>(b);
    s.traffic[2] = static_cast<long long>(im);
    s.traffic[3] = static_cast<long long>(ib);
}

void setup_slot(const Ctx &c, Topo &t, Slot &s)
{
    const Variant &v = *s.v;
    const std::string where = where_str(c, t, v.name);
    g_watchdog.set_phase("init of " + where);
    s.comm = t.comm;
    s.recv = t.poison;
    const double *sb = t.send.data();
    double *rb = s.recv.data();
    switch (v.kind) {
    case Kind::SystemBlocking:
        s.algorithm = kBaseline;
        break;
    case Kind::SystemPersistent: {
        s.algorithm = mpia_bench_system_neighbor_name();
        // On its own duplicate: Open MPI 4.1's MPIX_Neighbor_alltoallv_init fails on a rank
        // without neighbours after the others have advanced the communicator's collective tag,
        // and a later nonblocking collective on that communicator (MPI_Comm_dup's CID
        // agreement, for one) then hangs.
        check_rc(c, MPI_Comm_dup(t.comm, &s.comm), "MPI_Comm_dup", where);
        MPI_Comm_set_errhandler(s.comm, MPI_ERRORS_RETURN);
        MPI_Barrier(c.comm);
        double t0 = MPI_Wtime();
        int rc = mpia_bench_system_neighbor_alltoallv_init(
            sb, t.scounts.data(), t.sdispls.data(), MPI_DOUBLE, rb, t.rcounts.data(),
            t.rdispls.data(), MPI_DOUBLE, s.comm, MPI_INFO_NULL, &s.sys);
        s.init_s = MPI_Wtime() - t0;
        // Not ours to fix: a failure of the system's persistent call drops the variant from this
        // configuration, on every rank.
        int failed = rc != MPI_SUCCESS, any = 0;
        MPI_Allreduce(&failed, &any, 1, MPI_INT, MPI_MAX, c.comm);
        if (any) {
            if (rc == MPI_SUCCESS) {
                check_rc(c, MPI_Request_free(&s.sys), "MPI_Request_free", where);
            } else {
                std::fprintf(stderr, "%s: rank %d: %s failed (%s): %s; variant skipped\n", kProg,
                             c.rank, s.algorithm.c_str(), where.c_str(),
                             mpi_error_string(rc).c_str());
                std::fflush(stderr);
            }
            s.sys = MPI_REQUEST_NULL;
            s.skipped = true;
            s.algorithm = "(init failed: skipped)";
            s.init_s = -1;
        }
        break;
    }
    case Kind::OursBlocking: {
        // Each blocking variant runs on its own duplicate of the topology communicator: the
        // library keeps one blocking plan per communicator, which interleaved variants sharing
        // one would rebuild at every call. The algorithm is the duplicate's own, chosen once
        // with MPIX_Comm_set_algorithm (collective; the environment is read once per process).
        check_rc(c, MPI_Comm_dup(t.comm, &s.comm), "MPI_Comm_dup", where);
        MPI_Comm_set_errhandler(s.comm, MPI_ERRORS_RETURN);
        check_rc(c, MPIX_Comm_set_algorithm(s.comm, "neighbor_alltoallv", v.selection.c_str()),
                 "MPIX_Comm_set_algorithm", where);
        int node = 0, nnodes = 0, lrank = 0, lsize = 0;
        check_rc(c, MPIX_Comm_locality(s.comm, &node, &nnodes, &lrank, &lsize),
                 "MPIX_Comm_locality", where);
        // What it runs and sends: an init of the same algorithm ("auto" of a blocking call is
        // "direct", as README.md says).
        MPI_Info info;
        MPI_Info_create(&info);
        MPI_Info_set(info, MPIX_INFO_KEY_ALGORITHM,
                     v.selection == "auto" ? "direct" : v.selection.c_str());
        MPIX_Request probe = MPIX_REQUEST_NULL;
        check_rc(c,
                 MPIX_Neighbor_alltoallv_init(sb, t.scounts.data(), t.sdispls.data(), MPI_DOUBLE,
                                              rb, t.rcounts.data(), t.rdispls.data(), MPI_DOUBLE,
                                              s.comm, info, &probe),
                 "MPIX_Neighbor_alltoallv_init (probe)", where);
        MPI_Info_free(&info);
        s.algorithm = resolved_algorithm(c, probe, where) + " (blocking)";
        get_traffic(c, probe, s, where);
        check_rc(c, MPIX_Request_free(&probe), "MPIX_Request_free", where);
        break;
    }
    case Kind::OursPersistent: {
        MPI_Info info;
        MPI_Info_create(&info);
        MPI_Info_set(info, MPIX_INFO_KEY_ALGORITHM, v.selection.c_str());
        MPI_Barrier(c.comm);
        double t0 = MPI_Wtime();
        check_rc(c,
                 MPIX_Neighbor_alltoallv_init(sb, t.scounts.data(), t.sdispls.data(), MPI_DOUBLE,
                                              rb, t.rcounts.data(), t.rdispls.data(), MPI_DOUBLE,
                                              t.comm, info, &s.ours),
                 "MPIX_Neighbor_alltoallv_init", where);
        s.init_s = MPI_Wtime() - t0;
        MPI_Info_free(&info);
        s.algorithm = resolved_algorithm(c, s.ours, where);
        get_traffic(c, s.ours, s, where);
        break;
    }
    }
}

void run_once(const Ctx &c, Topo &t, Slot &s)
{
    const double *sb = t.send.data();
    double *rb = s.recv.data();
    switch (s.v->kind) {
    case Kind::SystemBlocking:
        check_rc(c,
                 MPI_Neighbor_alltoallv(sb, t.scounts.data(), t.sdispls.data(), MPI_DOUBLE, rb,
                                        t.rcounts.data(), t.rdispls.data(), MPI_DOUBLE, t.comm),
                 kBaseline, where_str(c, t, s.v->name));
        break;
    case Kind::SystemPersistent:
        check_rc(c, MPI_Start(&s.sys), "MPI_Start", where_str(c, t, s.v->name));
        check_rc(c, MPI_Wait(&s.sys, MPI_STATUS_IGNORE), "MPI_Wait", where_str(c, t, s.v->name));
        break;
    case Kind::OursBlocking:
        check_rc(c,
                 MPIX_Neighbor_alltoallv(sb, t.scounts.data(), t.sdispls.data(), MPI_DOUBLE, rb,
                                         t.rcounts.data(), t.rdispls.data(), MPI_DOUBLE, s.comm),
                 "MPIX_Neighbor_alltoallv", where_str(c, t, s.v->name));
        break;
    case Kind::OursPersistent:
        check_rc(c, MPIX_Start(&s.ours), "MPIX_Start", where_str(c, t, s.v->name));
        check_rc(c, MPIX_Wait(&s.ours, MPI_STATUS_IGNORE), "MPIX_Wait",
                 where_str(c, t, s.v->name));
        break;
    }
}

struct Result {
    std::string variant;
    Kind kind = Kind::SystemBlocking;
    std::string algorithm;
    bool skipped = false;
    int iters = 0;
    double med_us = 0, avg_us = 0, min_us = 0, max_us = 0, init_us = -1;
    long long msgs_sum = -1, bytes_sum = -1, imsg_max = -1, imsg_sum = -1, ibytes_max = -1,
              ibytes_sum = -1;
};

// Collective: the statistics of one variant (meaningful on rank 0).
Result summarize(const Ctx &c, const Slot &s)
{
    Result r;
    r.variant = s.v->name;
    r.kind = s.v->kind;
    r.algorithm = s.algorithm;
    r.skipped = s.skipped;
    r.iters = static_cast<int>(s.t.size());
    double sum = 0;
    for (double x : s.t) sum += x;
    double avg_local = r.iters > 0 ? sum / r.iters : 0;
    double mn = 0, mx = 0, total = 0, init_max = 0;
    MPI_Reduce(&avg_local, &mn, 1, MPI_DOUBLE, MPI_MIN, 0, c.comm);
    MPI_Reduce(&avg_local, &mx, 1, MPI_DOUBLE, MPI_MAX, 0, c.comm);
    MPI_Reduce(&avg_local, &total, 1, MPI_DOUBLE, MPI_SUM, 0, c.comm);
    MPI_Reduce(&s.init_s, &init_max, 1, MPI_DOUBLE, MPI_MAX, 0, c.comm);
    std::vector<double> tmax(s.t.size());
    MPI_Reduce(s.t.data(), tmax.data(), r.iters, MPI_DOUBLE, MPI_MAX, 0, c.comm);
    // Traffic: -1 anywhere (unknown) makes the figure unknown.
    long long tmin[4], tsum[4], tmx[4];
    MPI_Reduce(s.traffic, tmin, 4, MPI_LONG_LONG, MPI_MIN, 0, c.comm);
    MPI_Reduce(s.traffic, tsum, 4, MPI_LONG_LONG, MPI_SUM, 0, c.comm);
    MPI_Reduce(s.traffic, tmx, 4, MPI_LONG_LONG, MPI_MAX, 0, c.comm);
    if (c.rank == 0) {
        r.min_us = mn * 1e6;
        r.max_us = mx * 1e6;
        r.avg_us = total / c.nprocs * 1e6;
        r.med_us = mpia_bench::median(tmax) * 1e6;
        r.init_us = init_max < 0 ? -1 : init_max * 1e6;
        if (tmin[0] >= 0) r.msgs_sum = tsum[0];
        if (tmin[1] >= 0) r.bytes_sum = tsum[1];
        if (tmin[2] >= 0) {
            r.imsg_max = tmx[2];
            r.imsg_sum = tsum[2];
        }
        if (tmin[3] >= 0) {
            r.ibytes_max = tmx[3];
            r.ibytes_sum = tsum[3];
        }
    }
    return r;
}

// Facts about a configuration for its header line (meaningful on rank 0).
struct TopoStats {
    int deg_min = 0, deg_max = 0;
    long long edges = 0, inter_edges = 0, inter_bytes = 0;
    long long send_max = 0, send_sum = 0;  // bytes
};

TopoStats topo_stats(const Ctx &c, const Topo &t)
{
    long long deg = 0, send = 0, iedges = 0, ibytes = 0;
    int my_node = 0, lr = 0;
    check_rc(c, MPIX_Comm_rank_locality(t.comm, c.rank, &my_node, &lr, nullptr, nullptr),
             "MPIX_Comm_rank_locality", t.pattern);
    for (std::size_t j = 0; j < t.dests.size(); ++j) {
        if (t.dests[j] == MPI_PROC_NULL) continue;
        ++deg;
        const long long b = static_cast<long long>(t.scounts[j]) * sizeof(double);
        send += b;
        int node = 0;
        check_rc(c, MPIX_Comm_rank_locality(t.comm, t.dests[j], &node, &lr, nullptr, nullptr),
                 "MPIX_Comm_rank_locality", t.pattern);
        if (node != my_node && b > 0) {
            ++iedges;
            ibytes += b;
        }
    }
    long long in[4] = {deg, send, iedges, ibytes}, sums[4], mins[1], maxs[2];
    MPI_Reduce(in, sums, 4, MPI_LONG_LONG, MPI_SUM, 0, c.comm);
    MPI_Reduce(in, mins, 1, MPI_LONG_LONG, MPI_MIN, 0, c.comm);
    MPI_Reduce(in, maxs, 2, MPI_LONG_LONG, MPI_MAX, 0, c.comm);
    TopoStats s;
    if (c.rank == 0) {
        s.deg_min = static_cast<int>(mins[0]);
        s.deg_max = static_cast<int>(maxs[0]);
        s.edges = sums[0];
        s.send_max = maxs[1];
        s.send_sum = sums[1];
        s.inter_edges = sums[2];
        s.inter_bytes = sums[3];
    }
    return s;
}

int iterations_for(const Ctx &c, long long send_max_bytes)
{
    if (c.opt.iters > 0) return c.opt.iters;
    if (send_max_bytes <= 64LL * 1024) return 100;
    if (send_max_bytes <= 1024LL * 1024) return 50;
    return 20;
}

// ---------------------------------------------------------------------------------------------
// Output

std::string fmt_ratio(double num, double den, const char *f = "%.3f")
{
    if (!(den > 0)) return "-";
    char b[32];
    std::snprintf(b, sizeof b, f, num / den);
    return b;
}

std::string fmt_ll(long long v) { return v < 0 ? "-" : std::to_string(v); }

struct Case {
    std::string pat;
    long long n;
    std::string checked;
    std::vector<Result> rs;
    std::vector<std::string> deviating;  // system calls off the MPI-4.1 definition (degenerate)
};

const Result *find(const std::vector<Result> &rs, const std::string &name)
{
    for (const auto &r : rs)
        if (r.variant == name) return &r;
    return nullptr;
}

const char *const kRowFmt = "%4d %-9s %5lld  %-27s %-38s %5d %10s %10s %7s %10s %7s %9s "
                            "%6s %7s %10s %11s\n";

void print_header_row()
{
    std::printf("%4s %-9s %5s  %-27s %-38s %5s %10s %10s %7s %10s %7s %9s %6s %7s %10s %11s\n",
                "P", "pattern", "n", "variant", "algorithm", "iters", "med_us", "avg_us", "ratio",
                "init_us", "msgs", "bytes", "im_max", "im_sum", "ib_max", "ib_sum");
}

void print_case(const Ctx &c, const Case &k, std::FILE *csv)
{
    const Result *base = find(k.rs, kBaseline);
    const double b_med = base ? base->med_us : 0;
    for (const Result &r : k.rs) {
        char init[32] = "-", med[32] = "-", avg[32] = "-";
        if (r.init_us >= 0) std::snprintf(init, sizeof init, "%.1f", r.init_us);
        if (!r.skipped) {
            std::snprintf(med, sizeof med, "%.2f", r.med_us);
            std::snprintf(avg, sizeof avg, "%.2f", r.avg_us);
        }
        std::printf(kRowFmt, c.nprocs, k.pat.c_str(), k.n, r.variant.c_str(), r.algorithm.c_str(),
                    r.iters, med, avg, r.skipped ? "-" : fmt_ratio(r.med_us, b_med).c_str(), init,
                    fmt_ll(r.msgs_sum).c_str(), fmt_ll(r.bytes_sum).c_str(),
                    fmt_ll(r.imsg_max).c_str(), fmt_ll(r.imsg_sum).c_str(),
                    fmt_ll(r.ibytes_max).c_str(), fmt_ll(r.ibytes_sum).c_str());
        if (csv) {
            std::fprintf(csv, "%d,%s,%d,%s,%lld,%s,%s,%d,%.3f,%.3f,%.3f,%.3f,%s,", c.nprocs,
                         csv_quote(c.mpi_library).c_str(), c.nnodes, k.pat.c_str(), k.n,
                         csv_quote(r.variant).c_str(), csv_quote(r.algorithm).c_str(), r.iters,
                         r.med_us, r.avg_us, r.min_us, r.max_us,
                         r.skipped ? "" : fmt_ratio(r.med_us, b_med, "%.4f").c_str());
            if (r.init_us >= 0) std::fprintf(csv, "%.3f", r.init_us);
            auto cell = [](long long v) { return v < 0 ? std::string() : std::to_string(v); };
            std::fprintf(csv, ",%s,%s,%s,%s,%s,%s,%s\n", cell(r.msgs_sum).c_str(),
                         cell(r.bytes_sum).c_str(), cell(r.imsg_max).c_str(),
                         cell(r.imsg_sum).c_str(), cell(r.ibytes_max).c_str(),
                         cell(r.ibytes_sum).c_str(), csv_quote(k.checked).c_str());
            std::fflush(csv);
        }
    }
    if (!k.deviating.empty()) {
        std::string list;
        for (const auto &d : k.deviating) list += (list.empty() ? "" : ", ") + d;
        std::printf("# note: the MPI library's result deviates from the MPI-4.1 definition on this "
                    "degenerate topology in: %s (not checked)\n", list.c_str());
    }
    std::printf("\n");
    std::fflush(stdout);
}

// One line per (pattern, n): the baseline's median and every other variant's ratio.
void print_summary(const Ctx &c, const std::vector<Case> &all)
{
    if (all.empty()) return;
    std::printf("# summary, P=%d, %d node(s): med_us of MPI_Neighbor_alltoallv, then ratio = "
                "med_us / med_us(MPI_Neighbor_alltoallv) per variant; best = the fastest "
                "mpi-advance variant\n",
                c.nprocs, c.nnodes);
    const std::vector<Result> &first = all.front().rs;
    auto short_name = [](const std::string &n) {
        if (n == "MPI_Neighbor_alltoallv_init") return std::string("MPI_init");
        return n.substr(0, 12);
    };
    std::printf("%-9s %5s %10s", "pattern", "n", "MPI_us");
    for (const auto &r : first)
        if (r.variant != kBaseline) std::printf(" %12s", short_name(r.variant).c_str());
    std::printf("  %-12s %6s\n", "best", "ratio");
    for (const Case &k : all) {
        const Result *base = find(k.rs, kBaseline);
        const Result *best = nullptr;
        for (const auto &r : k.rs) {
            if (r.kind != Kind::OursBlocking && r.kind != Kind::OursPersistent) continue;
            if (r.variant == "system" || r.variant == "blk:system") continue;  // pass-throughs
            if (!best || r.med_us < best->med_us) best = &r;
        }
        const double b_med = base ? base->med_us : 0;
        std::printf("%-9s %5lld %10.2f", k.pat.c_str(), k.n, b_med);
        for (const auto &r : k.rs)
            if (r.variant != kBaseline)
                std::printf(" %12s", r.skipped ? "-" : fmt_ratio(r.med_us, b_med, "%.2f").c_str());
        std::printf("  %-12s %6s\n", best ? short_name(best->variant).c_str() : "-",
                    best && base ? fmt_ratio(best->med_us, base->med_us, "%.2f").c_str() : "-");
    }
    std::fflush(stdout);
}

// One configuration, start to end (collective).
Case run_case(const Ctx &c, const std::vector<Variant> &variants, const std::string &pat,
              long long n)
{
    g_watchdog.set_phase("building the " + pat + " topology, n=" + std::to_string(n));
    Topo t = make_topo(c, pat, n);
    int node = 0, nnodes = 0, lrank = 0, lsize = 0;
    check_rc(c, MPIX_Comm_locality(t.comm, &node, &nnodes, &lrank, &lsize), "MPIX_Comm_locality",
             pat);
    const TopoStats st = topo_stats(c, t);
    long long send_max = 0;
    {
        long long mine = static_cast<long long>(t.send.size()) * sizeof(double);
        MPI_Allreduce(&mine, &send_max, 1, MPI_LONG_LONG, MPI_MAX, c.comm);
    }

    // 1. The system's result against the data every rank knows it must receive.
    g_watchdog.set_phase(where_str(c, t, kBaseline) + ", reference run");
    std::vector<double> sysres = t.poison;
    check_rc(c,
             MPI_Neighbor_alltoallv(t.send.data(), t.scounts.data(), t.sdispls.data(), MPI_DOUBLE,
                                    sysres.data(), t.rcounts.data(), t.rdispls.data(), MPI_DOUBLE,
                                    t.comm),
             kBaseline, where_str(c, t, kBaseline));
    const bool sys_ok = compare(c, t, sysres, t.expected, "MPI_Neighbor_alltoallv vs expected",
                                t.degenerate);
    if (!sys_ok && !t.degenerate)
        fail_collectively(c, "the system MPI_Neighbor_alltoallv's result differs from the "
                             "expected data (" + where_str(c, t, kBaseline) +
                             "): a bug of the benchmark or of the MPI library");
    // Reference of every variant: the system's result, or for a degenerate periodic topology
    // the MPI-4.1 definition.
    const std::vector<double> &ref = t.degenerate ? t.expected : sysres;
    Case k{pat, n, kBaseline, {}, {}};
    if (t.degenerate)
        k.checked = std::string("MPI-4.1 definition (MPI_Neighbor_alltoallv ") +
                    (sys_ok ? "agrees)" : "deviates)");
    if (c.rank == 0) {
        std::printf("# %s n=%lld: %s; neighbours/rank %d..%d, %lld edges (%lld inter-node, %lld "
                    "B); send/rank max %lld B, all %lld B; checked against %s\n",
                    pat.c_str(), n, t.shape.c_str(), st.deg_min, st.deg_max, st.edges,
                    st.inter_edges, st.inter_bytes, st.send_max, st.send_sum, k.checked.c_str());
        std::fflush(stdout);
    }

    // 2. Settle buffers and library with a few untimed system calls.
    for (int i = 0; i < std::max(10, c.opt.warmup); ++i) {
        check_rc(c,
                 MPI_Neighbor_alltoallv(t.send.data(), t.scounts.data(), t.sdispls.data(),
                                        MPI_DOUBLE, sysres.data(), t.rcounts.data(),
                                        t.rdispls.data(), MPI_DOUBLE, t.comm),
                 kBaseline, where_str(c, t, kBaseline));
        g_watchdog.poke();
    }

    // 3. Create every request, run every variant once and check it.
    std::vector<Slot> slots(variants.size());
    for (std::size_t i = 0; i < variants.size(); ++i) {
        slots[i].v = &variants[i];
        setup_slot(c, t, slots[i]);
    }
    // The MPI library's calls, and mpi-advance's "system" pass-through to them, are only noted
    // when they deviate from the MPI-4.1 definition on a degenerate topology.
    auto check = [&](Slot &s, const char *when) {
        const bool system = s.v->kind == Kind::SystemBlocking ||
                            s.v->kind == Kind::SystemPersistent || s.v->selection == "system";
        if (system && t.degenerate) {
            if (!compare(c, t, s.recv, ref, "", true) &&
                std::find(k.deviating.begin(), k.deviating.end(), s.v->name) == k.deviating.end())
                k.deviating.push_back(s.v->name);
            return;
        }
        if (compare(c, t, s.recv, ref, s.v->name + " " + when)) return;
        fail_collectively(c, "WRONG RESULT: " + where_str(c, t, s.v->name) + " (algorithm '" +
                                 s.algorithm + "'), " + when + ", differs from " + k.checked +
                                 "\n  reproduce: " + reproduce(c, t, s.v->name));
    };
    for (Slot &s : slots) {
        if (s.skipped) continue;
        g_watchdog.set_phase(where_str(c, t, s.v->name) + ", first run");
        MPI_Barrier(c.comm);
        run_once(c, t, s);
        g_watchdog.poke();
        check(s, "first run");
        s.recv = t.poison;  // the loop must rewrite everything
    }

    // 4. The interleaved loop.
    const int iters = iterations_for(c, send_max);
    const int nv = static_cast<int>(slots.size());
    g_watchdog.set_phase(pat + " n=" + std::to_string(n) + ", timed loop");
    for (int it = 0; it < c.opt.warmup + iters; ++it)
        for (int j = 0; j < nv; ++j) {
            Slot &s = slots[static_cast<std::size_t>((j + it) % nv)];
            if (s.skipped) continue;
            MPI_Barrier(c.comm);
            const double t0 = MPI_Wtime();
            run_once(c, t, s);
            const double t1 = MPI_Wtime();
            if (it >= c.opt.warmup) s.t.push_back(t1 - t0);
            g_watchdog.poke();
        }
    for (Slot &s : slots)
        if (!s.skipped) check(s, "after the timed iterations");

    for (Slot &s : slots) {
        k.rs.push_back(summarize(c, s));
        if (s.ours != MPIX_REQUEST_NULL)
            check_rc(c, MPIX_Request_free(&s.ours), "MPIX_Request_free", s.v->name);
        if (s.sys != MPI_REQUEST_NULL)
            check_rc(c, MPI_Request_free(&s.sys), "MPI_Request_free", s.v->name);
        if (s.comm != t.comm && s.comm != MPI_COMM_NULL) MPI_Comm_free(&s.comm);
    }
    MPI_Comm_free(&t.comm);
    return k;
}

}  // namespace

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    Ctx c{};
    MPI_Comm_rank(MPI_COMM_WORLD, &c.rank);
    MPI_Comm_size(MPI_COMM_WORLD, &c.nprocs);
    c.opt = parse_options(argc, argv, c.rank);
    c.mpi_library = mpia_bench::first_line_of_library_version();
    if (const char *e = std::getenv("MPIX_LOCALITY")) c.locality_env = e;
    MPI_Comm_dup(MPI_COMM_WORLD, &c.comm);
    MPI_Comm_set_errhandler(c.comm, MPI_ERRORS_RETURN);

    const std::vector<Variant> variants = build_variants(c.opt);
    if (c.opt.list_only) {
        if (c.rank == 0)
            for (const auto &v : variants)
                std::printf("%-27s %s\n", v.name.c_str(), v.description.c_str());
        MPI_Comm_free(&c.comm);
        MPI_Finalize();
        return 0;
    }
    {
        int node = 0, lrank = 0, lsize = 0;
        check_rc(c, MPIX_Comm_locality(c.comm, &node, &c.nnodes, &lrank, &lsize),
                 "MPIX_Comm_locality", "MPI_COMM_WORLD");
    }

    std::FILE *csv = nullptr;
    if (c.rank == 0 && !c.opt.csv.empty()) {
        csv = std::fopen(c.opt.csv.c_str(), "w");
        if (!csv) die(c, "cannot open CSV file '" + c.opt.csv + "': " + std::strerror(errno));
        std::fprintf(csv, "P,mpi_library,nodes,pattern,n,variant,algorithm,iters,median_us,avg_us,"
                          "min_us,max_us,ratio,init_us,messages_sum,bytes_sum,"
                          "internode_messages_max,internode_messages_sum,internode_bytes_max,"
                          "internode_bytes_sum,checked_against\n");
    }

    if (c.rank == 0) {
        std::printf("# %s (mpi-advance %d.%d.%d)  P=%d  MPI: %s\n", kProg, MPIA_VERSION_MAJOR,
                    MPIA_VERSION_MINOR, MPIA_VERSION_PATCH, c.nprocs, c.mpi_library.c_str());
        std::printf("# nodes=%d (MPIX_LOCALITY=%s)  warmup=%d iters=%s seed=%llu periodic=%s  "
                    "system persistent: %s\n",
                    c.nnodes, c.locality_env.empty() ? "(unset)" : c.locality_env.c_str(),
                    c.opt.warmup,
                    c.opt.iters > 0 ? std::to_string(c.opt.iters).c_str() : "adaptive",
                    c.opt.seed, c.opt.periodic.c_str(),
                    mpia_bench_system_neighbor_name() ? mpia_bench_system_neighbor_name()
                                                      : "none");
        std::printf("# n: stencil2d/3d: local n^2 / n^3 box of doubles (faces of n / n^2); "
                    "lap2d/lap3d: n^2 / n^3 grid, rows in P blocks; powerlaw: n^2 rows\n"
                    "# med_us = median over iterations of the slowest rank; avg_us = mean over "
                    "ranks and iterations; ratio = med_us / med_us(MPI_Neighbor_alltoallv);\n"
                    "# init_us = slowest rank's *_init; msgs/bytes = what one start sends, sum "
                    "over ranks; im_/ib_ = inter-node messages/bytes, max|sum over ranks\n");
        print_header_row();
        std::fflush(stdout);
    }

    g_watchdog.start(c.opt.watchdog_s, c.rank, kProg);
    std::vector<Case> all;
    for (const std::string &pat : c.opt.patterns)
        for (long long n : c.opt.sizes) {
            Case k = run_case(c, variants, pat, n);
            if (c.rank == 0) print_case(c, k, csv);
            all.push_back(std::move(k));
        }
    g_watchdog.finish();
    if (c.rank == 0) print_summary(c, all);
    if (csv) std::fclose(csv);
    MPI_Comm_free(&c.comm);
    MPI_Finalize();
    return 0;
}
