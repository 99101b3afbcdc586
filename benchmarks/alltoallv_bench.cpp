/*
 * mpia_bench_v -- all-to-all-v latency benchmark for mpi-advance.
 *
 * For every count pattern and average block size it times, in one run and on the same buffers:
 *   MPI_Alltoallv       the system MPI's blocking all-to-all-v (the baseline of the ratios)
 *   MPI_Alltoallv_init  the system MPI's persistent all-to-all-v (MPI-4 MPI_Alltoallv_init, or
 *                       Open MPI 4's MPIX_Alltoallv_init extension), when the library has one
 *   MPIX_Alltoallv      mpi-advance's blocking all-to-all-v ("auto" / $MPIX_ALLTOALLV)
 *   <name>              every alltoallv algorithm of mpi-advance's registry, as a persistent
 *                       request (MPIX_Alltoallv_init once, then MPIX_Start + MPIX_Wait)
 *   multipair_*:window=w   the three windowed multi-pair algorithms for w in --windows
 *   bruck:radix=r       the radix-r Bruck exchange for r in --radices (2..P)
 *
 * Count patterns (bytes from rank s to rank d; every rank computes the whole P x P matrix from
 * the pattern, the average block size B and --seed; the matrix is scaled so that its mean is
 * B, i.e. P*P*B bytes move in all, rounding down):
 *   uniform  every block B bytes (an alltoall through the v interface)
 *   random   independent uniform weights in [0,2) per (s,d), seeded
 *   skewed   power law over senders: rank s sends in proportion to 1/(s+1), so rank 0 is the
 *            one heavy sender (H_P times the mean) and high ranks send little
 *   sparse   each rank talks only to the k = ceil(sqrt(P)) ranks of its row of a k-wide
 *            process grid (s/k == d/k), as in a pencil-to-pencil FFT reshape (HeFFTe)
 * Blocks lie in the buffers in reverse rank order with 8-byte gaps between them, so wrong
 * displacements show up; the gaps of the receive buffer must come back untouched.
 *
 * Method (as mpia_bench): per pattern and size, 50 untimed MPI_Alltoallv calls settle the
 * buffers and the library; the timed iterations are split into --rounds rounds; in each round
 * every variant, in an order rotating from round to round, is set up (the *_init call, timed),
 * run once with every received byte (and every gap) checked, warmed up, timed (MPI_Barrier
 * before every iteration, MPI_Wtime), checked again and freed. ratio = avg / avg(MPI_Alltoallv),
 * ratio_med = med_max / med_max(MPI_Alltoallv), in the same run.
 *
 * Imbalance mode (--imbalance MAXUS): after the barrier of each timed iteration every rank
 * busy-waits a delay in [0, MAXUS] us drawn from (seed, rank, iteration number), the same for
 * every variant and every run, then calls the collective. The barrier exit is each rank's zero
 * (MPI_WTIME_IS_GLOBAL may be false); after the timed loop one MPI_Allreduce(MAX) of the stored
 * arrival times gives the last arrival of each iteration, and each rank's figure is its
 * completion time minus that last arrival ("after_last"). The table reports the mean over
 * ranks and the max over ranks of each rank's mean after_last, and their ratios against
 * pairwise and against MPI_Alltoallv. (Barrier exits are not simultaneous, which blurs the
 * zero by a few microseconds; with the sparse pattern a rank can complete before an unrelated
 * rank arrives, so a rank's after_last can be negative.)
 *
 * A wrong result, an error code or a hang (--watchdog) aborts the run with a message.
 */
#include "mpi_advance.h"
#include "bench_common.hpp"
#include "system_pcoll.h"

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
#include <map>
#include <string>
#include <vector>

namespace {

using mpia_bench::csv_quote;
using mpia_bench::mix64;
using mpia_bench::mpi_error_string;
using mpia_bench::parse_u64;
using mpia_bench::pattern;
using mpia_bench::split;

const char *const kProg = "mpia_bench_v";

// ---------------------------------------------------------------------------------------------
// Options

struct Options {
    std::vector<std::size_t> sizes{8, 512, 8192};
    std::vector<std::string> patterns{"uniform", "random", "skewed", "sparse"};
    int iters = 0;  // 0: adapt to the message size
    int warmup = 10;
    int rounds = 1;
    std::vector<std::string> variant_patterns;  // empty: all
    std::string csv;
    std::vector<int> windows{1, 2, 4, 8, 16};
    bool radices_given = false;
    std::vector<int> radices;
    unsigned long long seed = 20240601ull;
    double imbalance_us = 0;  // 0: off
    double watchdog_s = 120.0;
    bool list_only = false;
};

const char *const kUsage =
    "usage: mpia_bench_v [options]\n"
    "  --patterns LIST  count patterns: uniform,random,skewed,sparse (default all)\n"
    "  --sizes LIST     average block sizes in bytes, e.g. 8,512,8k (default 8,512,8192)\n"
    "  --iters N        timed iterations per variant, pattern and size (default: 100 when a\n"
    "                   rank sends <= 64 KiB on average, 50 up to 1 MiB, 20 above)\n"
    "  --warmup N       untimed iterations before timing, per round (default 10)\n"
    "  --rounds R       split the timed iterations into R rounds with a rotating variant order\n"
    "                   (default 1)\n"
    "  --variants LIST  comma list of variant names or shell patterns, e.g.\n"
    "                   'pairwise,multipair_*' (MPI_Alltoallv, the baseline, always runs;\n"
    "                   in imbalance mode pairwise too)\n"
    "  --windows LIST   windows of the multipair sweep (default 1,2,4,8,16; 'none')\n"
    "  --radices LIST   radices of the bruck sweep, 2..P, e.g. 3,4 or 2-6\n"
    "                   (default 3,4,8 and P, those <= P; 'none')\n"
    "  --seed N         seed of the random pattern and of the imbalance delays (default 20240601)\n"
    "  --imbalance US   imbalance mode: each rank busy-waits a seeded delay in [0,US] us before\n"
    "                   each timed iteration; report the time from the last arrival\n"
    "  --csv FILE       also write the results as CSV (written by rank 0)\n"
    "  --watchdog SEC   abort when one iteration makes no progress for SEC seconds\n"
    "                   (default 120, 0 disables)\n"
    "  --list           print the variants and exit\n"
    "  --help           this text\n";

[[noreturn]] void usage_error(int rank, const std::string &msg)
{
    if (rank == 0) std::fprintf(stderr, "%s: %s\n%s", kProg, msg.c_str(), kUsage);
    MPI_Finalize();
    std::exit(2);
}

std::vector<int> parse_int_list(int rank, const std::string &list, int lo_min, const char *what)
{
    std::vector<int> out;
    if (list == "none") return out;
    for (const auto &tok : split(list, ',')) {
        auto dash = tok.find('-');
        unsigned long long lo = 0, hi = 0;
        bool ok = dash == std::string::npos
                      ? (parse_u64(tok, lo) && (hi = lo, true))
                      : (parse_u64(tok.substr(0, dash), lo) && parse_u64(tok.substr(dash + 1), hi));
        if (!ok || lo < static_cast<unsigned long long>(lo_min) || hi < lo || hi > 1000000ull)
            usage_error(rank, std::string("bad ") + what + " '" + tok + "'");
        for (unsigned long long r = lo; r <= hi; ++r) out.push_back(static_cast<int>(r));
    }
    return out;
}

Options parse_options(int argc, char **argv, int rank, int nprocs)
{
    Options o;
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
        } else if (arg == "--sizes") {
            o.sizes.clear();
            for (const auto &tok : split(need(), ',')) {
                unsigned long long v = 0;
                if (!parse_u64(tok, v) || v == 0 || v > (1ull << 24))
                    usage_error(rank, "bad block size '" + tok + "' (1..16M)");
                o.sizes.push_back(static_cast<std::size_t>(v));
            }
            if (o.sizes.empty()) usage_error(rank, "--sizes is empty");
        } else if (arg == "--patterns") {
            o.patterns = split(need(), ',');
            for (const auto &p : o.patterns)
                if (p != "uniform" && p != "random" && p != "skewed" && p != "sparse")
                    usage_error(rank, "unknown pattern '" + p + "'");
            if (o.patterns.empty()) usage_error(rank, "--patterns is empty");
        } else if (arg == "--iters" || arg == "--warmup" || arg == "--rounds") {
            std::string tok = need();
            unsigned long long v = 0;
            if (!parse_u64(tok, v) || v > 100000000ull) usage_error(rank, "bad count '" + tok + "'");
            if (arg == "--iters" || arg == "--rounds") {
                if (v == 0) usage_error(rank, arg + " must be at least 1");
                (arg == "--iters" ? o.iters : o.rounds) = static_cast<int>(v);
            } else {
                o.warmup = static_cast<int>(v);
            }
        } else if (arg == "--variants") {
            o.variant_patterns = split(need(), ',');
        } else if (arg == "--csv") {
            o.csv = need();
        } else if (arg == "--seed") {
            std::string tok = need();
            if (!parse_u64(tok, o.seed)) usage_error(rank, "bad --seed '" + tok + "'");
        } else if (arg == "--watchdog" || arg == "--imbalance") {
            std::string tok = need();
            char *end = nullptr;
            double v = std::strtod(tok.c_str(), &end);
            if (end == tok.c_str() || *end != '\0' || !(v >= 0) || v > 1e9)
                usage_error(rank, "bad " + arg + " '" + tok + "'");
            (arg == "--watchdog" ? o.watchdog_s : o.imbalance_us) = v;
        } else if (arg == "--windows") {
            o.windows = parse_int_list(rank, need(), 1, "window");
        } else if (arg == "--radices") {
            o.radices_given = true;
            o.radices = parse_int_list(rank, need(), 2, "radix (radices are >= 2)");
        } else {
            usage_error(rank, "unknown argument '" + std::string(argv[i]) + "'");
        }
    }
    if (!o.radices_given) {
        for (int r : {3, 4, 8})
            if (r <= nprocs) o.radices.push_back(r);
        if (nprocs > 2 && std::find(o.radices.begin(), o.radices.end(), nprocs) == o.radices.end())
            o.radices.push_back(nprocs);
    }
    return o;
}

// ---------------------------------------------------------------------------------------------
// Variants

enum class Kind { SystemBlocking, SystemPersistent, OursBlocking, OursPersistent };

struct Variant {
    std::string name;
    Kind kind;
    std::string selection;  // OursPersistent: the "mpix_algorithm" info value
    std::string description;
};

bool selected(const Options &o, const std::string &name)
{
    if (o.variant_patterns.empty()) return true;
    for (const auto &p : o.variant_patterns)
        if (p == name || fnmatch(p.c_str(), name.c_str(), 0) == 0) return true;
    return false;
}

std::vector<Variant> build_variants(const Options &o, int rank, int nprocs)
{
    std::vector<Variant> v;
    v.push_back({"MPI_Alltoallv", Kind::SystemBlocking, "", "the MPI library's MPI_Alltoallv"});
    if (mpia_bench_system_pcoll_v_name() && selected(o, "MPI_Alltoallv_init"))
        v.push_back({"MPI_Alltoallv_init", Kind::SystemPersistent, "",
                     std::string("the MPI library's persistent all-to-all-v, ") +
                         mpia_bench_system_pcoll_v_name()});
    if (selected(o, "MPIX_Alltoallv"))
        v.push_back({"MPIX_Alltoallv", Kind::OursBlocking, "",
                     "mpi-advance's blocking MPIX_Alltoallv (auto, or $MPIX_ALLTOALLV)"});

    std::vector<std::string> names;
    MPI_Errhandler saved;
    MPI_Comm_get_errhandler(MPI_COMM_SELF, &saved);
    MPI_Comm_set_errhandler(MPI_COMM_SELF, MPI_ERRORS_RETURN);
    for (int i = 0; i <= 1000; ++i) {
        const char *name = nullptr, *desc = nullptr;
        if (MPIX_Algorithm_get("alltoallv", i, &name, &desc) != MPI_SUCCESS || !name) break;
        names.push_back(name);
        // In imbalance mode pairwise is a baseline of the ratios: it always runs.
        if (selected(o, name) || (o.imbalance_us > 0 && std::string(name) == "pairwise"))
            v.push_back({name, Kind::OursPersistent, name,
                         std::string("persistent: ") + (desc ? desc : "")});
    }
    MPI_Comm_set_errhandler(MPI_COMM_SELF, saved);
    MPI_Errhandler_free(&saved);

    auto in_registry = [&](const char *n) {
        return std::find(names.begin(), names.end(), n) != names.end();
    };
    for (const char *mp : {"multipair_waitall", "multipair_waitany", "multipair_testany"}) {
        if (!in_registry(mp)) continue;
        for (int w : o.windows) {
            std::string sel = std::string(mp) + ":window=" + std::to_string(w);
            if (selected(o, sel))
                v.push_back({sel, Kind::OursPersistent, sel,
                             "persistent: " + std::string(mp) + " with window " + std::to_string(w)});
        }
    }
    if (in_registry("bruck")) {
        const int max_radix = std::max(2, nprocs);
        int skipped = 0;
        for (int r : o.radices) {
            if (r > max_radix) {
                ++skipped;
                continue;
            }
            std::string sel = "bruck:radix=" + std::to_string(r);
            if (selected(o, sel))
                v.push_back({sel, Kind::OursPersistent, sel,
                             "persistent: bruck with radix " + std::to_string(r)});
        }
        if (skipped > 0 && rank == 0)
            std::fprintf(stderr, "%s: skipping %d bruck radices above %d (valid: 2..%d at P=%d)\n",
                         kProg, skipped, max_radix, max_radix, nprocs);
    }
    return v;
}

mpia_bench::Watchdog g_watchdog;

// ---------------------------------------------------------------------------------------------
// Count patterns and buffers

constexpr std::size_t kGap = 8;             // bytes between two blocks in both buffers
constexpr unsigned char kGapByte = 0xA5;    // what the receive buffer's gaps hold and keep

// counts[s * P + d]: bytes from s to d.
std::vector<int> make_matrix(const std::string &pat, int P, std::size_t block,
                             unsigned long long seed)
{
    std::vector<double> w(static_cast<std::size_t>(P) * P, 1.0);
    const int k = static_cast<int>(std::ceil(std::sqrt(static_cast<double>(P)) - 1e-9));
    for (int s = 0; s < P; ++s)
        for (int d = 0; d < P; ++d) {
            double &x = w[static_cast<std::size_t>(s) * P + d];
            if (pat == "random") {
                std::uint64_t h = mix64(seed * 0x9E3779B97F4A7C15ull ^
                                        mix64((static_cast<std::uint64_t>(s) << 32) | unsigned(d)));
                x = 2.0 * static_cast<double>(h >> 11) * (1.0 / 9007199254740992.0);
            } else if (pat == "skewed") {
                x = 1.0 / (s + 1.0);
            } else if (pat == "sparse") {
                x = (s / k == d / k) ? 1.0 : 0.0;
            }
        }
    double sum = 0;
    for (double x : w) sum += x;
    const double total = static_cast<double>(block) * P * P;
    std::vector<int> c(w.size());
    for (std::size_t i = 0; i < w.size(); ++i) {
        double v = std::floor(w[i] * total / sum);
        if (v > static_cast<double>(INT_MAX) / 2) v = static_cast<double>(INT_MAX) / 2;
        c[i] = static_cast<int>(v);
    }
    return c;
}

struct Buffers {
    std::vector<int> matrix;
    std::vector<int> scounts, sdispls, rcounts, rdispls;
    std::vector<unsigned char> send, recv, expected, poison;
    std::size_t send_bytes = 0, recv_bytes = 0;
};

// Blocks in reverse rank order, a gap before each.
void layout(const std::vector<int> &counts, std::vector<int> &displs, std::size_t &total)
{
    const int P = static_cast<int>(counts.size());
    displs.assign(P, 0);
    std::size_t off = 0;
    for (int r = P - 1; r >= 0; --r) {
        off += kGap;
        if (off > static_cast<std::size_t>(INT_MAX)) off = INT_MAX;  // checked by the caller
        displs[r] = static_cast<int>(off);
        off += static_cast<std::size_t>(counts[r]);
    }
    total = off + kGap;
}

Buffers make_buffers(const std::string &pat, int rank, int P, std::size_t block,
                     unsigned long long seed)
{
    Buffers b;
    b.matrix = make_matrix(pat, P, block, seed);
    b.scounts.resize(P);
    b.rcounts.resize(P);
    for (int r = 0; r < P; ++r) {
        b.scounts[r] = b.matrix[static_cast<std::size_t>(rank) * P + r];
        b.rcounts[r] = b.matrix[static_cast<std::size_t>(r) * P + rank];
    }
    layout(b.scounts, b.sdispls, b.send_bytes);
    layout(b.rcounts, b.rdispls, b.recv_bytes);
    b.send.assign(b.send_bytes, 0x3C);
    b.expected.assign(b.recv_bytes, kGapByte);
    b.poison.assign(b.recv_bytes, kGapByte);
    for (int r = 0; r < P; ++r) {
        for (int i = 0; i < b.scounts[r]; ++i)
            b.send[b.sdispls[r] + i] = pattern(unsigned(rank), unsigned(r), std::size_t(i));
        for (int i = 0; i < b.rcounts[r]; ++i) {
            unsigned char e = pattern(unsigned(r), unsigned(rank), std::size_t(i));
            b.expected[b.rdispls[r] + i] = e;
            b.poison[b.rdispls[r] + i] = static_cast<unsigned char>(~e);
        }
    }
    b.recv = b.poison;
    return b;
}

struct Ctx {
    MPI_Comm comm;  // duplicate of MPI_COMM_WORLD, errors return
    int rank;
    int nprocs;
    std::string mpi_library;
    Options opt;
};

[[noreturn]] void die(const Ctx &c, const std::string &msg)
{
    std::fprintf(stderr, "%s: FATAL (rank %d): %s\n", kProg, c.rank, msg.c_str());
    std::fflush(stderr);
    MPI_Abort(MPI_COMM_WORLD, 3);
    std::exit(3);
}

struct Where {
    const Variant &v;
    const std::string &pat;
    std::size_t block;
};

std::string where_str(const Ctx &c, const Where &w)
{
    return "variant '" + w.v.name + "', pattern " + w.pat + ", average block " +
           std::to_string(w.block) + " B, P=" + std::to_string(c.nprocs);
}

void check_rc(const Ctx &c, int rc, const char *call, const Where &w)
{
    if (rc == MPI_SUCCESS) return;
    die(c, std::string(call) + " failed for " + where_str(c, w) + ": " + mpi_error_string(rc));
}

// Collective: every rank compares its receive buffer (blocks and gaps) with the expected one.
void verify(const Ctx &c, const Buffers &b, const Where &w, const std::string &algorithm,
            const char *when)
{
    long long bad = 0;
    std::size_t first = 0;
    for (std::size_t i = 0; i < b.recv_bytes; ++i)
        if (b.recv[i] != b.expected[i]) {
            if (bad == 0) first = i;
            ++bad;
        }
    long long total = 0;
    MPI_Allreduce(&bad, &total, 1, MPI_LONG_LONG, MPI_SUM, c.comm);
    if (total == 0) return;
    if (bad > 0) {
        int src = -1;
        for (int r = 0; r < c.nprocs; ++r)
            if (first >= static_cast<std::size_t>(b.rdispls[r]) &&
                first < static_cast<std::size_t>(b.rdispls[r]) + b.rcounts[r])
                src = r;
        std::string loc = src >= 0 ? "block from rank " + std::to_string(src) + ", byte " +
                                         std::to_string(first - b.rdispls[src]) + " of " +
                                         std::to_string(b.rcounts[src])
                                   : "a gap between blocks (offset " + std::to_string(first) +
                                         ", must stay untouched)";
        std::fprintf(stderr, "%s: rank %d: %lld wrong bytes; first: %s: got 0x%02x, expected 0x%02x\n",
                     kProg, c.rank, bad, loc.c_str(), b.recv[first], b.expected[first]);
        std::fflush(stderr);
    }
    MPI_Barrier(c.comm);
    if (c.rank == 0) {
        std::fprintf(stderr,
                     "%s: FATAL: WRONG RESULT: %s (algorithm '%s'), %s: %lld wrong bytes over all "
                     "ranks.\n  reproduce: mpirun -n %d mpia_bench_v --patterns %s --sizes %zu "
                     "--seed %llu --variants '%s'\n",
                     kProg, where_str(c, w).c_str(), algorithm.c_str(), when, total, c.nprocs,
                     w.pat.c_str(), w.block, c.opt.seed, w.v.name.c_str());
        std::fflush(stderr);
        MPI_Abort(MPI_COMM_WORLD, 4);
    }
    MPI_Barrier(c.comm);
    std::exit(4);
}

// ---------------------------------------------------------------------------------------------
// Running one variant

int iterations_for(const Ctx &c, std::size_t block)
{
    if (c.opt.iters > 0) return c.opt.iters;
    double bytes = static_cast<double>(block) * c.nprocs;
    if (bytes <= 64.0 * 1024) return 100;
    if (bytes <= 1024.0 * 1024) return 50;
    return 20;
}

// The imbalance delay of `rank` before timed iteration `iter`, in seconds: the same for every
// variant, pattern, size and run with the same seed.
double delay_s(const Options &o, int rank, int iter)
{
    if (o.imbalance_us <= 0) return 0;
    std::uint64_t h = mix64(mix64(o.seed ^ 0xD1B54A32D192ED03ull) ^
                            mix64((static_cast<std::uint64_t>(rank) << 32) | unsigned(iter)));
    double u = static_cast<double>(h >> 11) * (1.0 / 9007199254740992.0);  // [0,1)
    return u * o.imbalance_us * 1e-6 * (1.0 + 1e-12);
}

std::string resolved_algorithm(const Ctx &c, MPIX_Request req, const Where &w)
{
    char name[MPIX_MAX_ALGORITHM_STRING];
    int len = 0;
    check_rc(c, MPIX_Request_get_algorithm(req, name, &len), "MPIX_Request_get_algorithm", w);
    name[MPIX_MAX_ALGORITHM_STRING - 1] = '\0';
    std::size_t n = std::min<std::size_t>(static_cast<std::size_t>(std::max(0, len)),
                                           MPIX_MAX_ALGORITHM_STRING - 1);
    return std::string(name, strnlen(name, n));
}

struct Samples {
    std::string algorithm;
    std::vector<double> t;       // own call -> own completion, seconds, per timed iteration
    std::vector<double> arrive;  // imbalance mode: barrier exit -> call
    std::vector<double> done;    // imbalance mode: barrier exit -> completion
    double init_sum = 0;
    int init_count = 0;
};

void run_round(const Ctx &c, const Variant &v, const std::string &pat, std::size_t block,
               int iters, int first_iter, Buffers &b, Samples &out)
{
    const Where w{v, pat, block};
    std::string algorithm;
    g_watchdog.set_phase(where_str(c, w));

    MPIX_Request ours = MPIX_REQUEST_NULL;
    MPI_Request sys = MPI_REQUEST_NULL;
    const void *sb = b.send.data();
    void *rb = b.recv.data();

    switch (v.kind) {
    case Kind::SystemBlocking:
        algorithm = "MPI_Alltoallv";
        break;
    case Kind::SystemPersistent: {
        algorithm = mpia_bench_system_pcoll_v_name();
        MPI_Barrier(c.comm);
        double t0 = MPI_Wtime();
        check_rc(c,
                 mpia_bench_system_alltoallv_init(sb, b.scounts.data(), b.sdispls.data(), MPI_BYTE,
                                                  rb, b.rcounts.data(), b.rdispls.data(),
                                                  MPI_BYTE, c.comm, MPI_INFO_NULL, &sys),
                 algorithm.c_str(), w);
        out.init_sum += MPI_Wtime() - t0;
        out.init_count++;
        break;
    }
    case Kind::OursBlocking: {
        MPIX_Request probe = MPIX_REQUEST_NULL;
        check_rc(c,
                 MPIX_Alltoallv_init(sb, b.scounts.data(), b.sdispls.data(), MPI_BYTE, rb,
                                     b.rcounts.data(), b.rdispls.data(), MPI_BYTE, c.comm,
                                     MPI_INFO_NULL, &probe),
                 "MPIX_Alltoallv_init (probe)", w);
        algorithm = resolved_algorithm(c, probe, w) + " (as init)";
        check_rc(c, MPIX_Request_free(&probe), "MPIX_Request_free", w);
        break;
    }
    case Kind::OursPersistent: {
        MPI_Info info;
        MPI_Info_create(&info);
        MPI_Info_set(info, MPIX_INFO_KEY_ALGORITHM, v.selection.c_str());
        MPI_Barrier(c.comm);
        double t0 = MPI_Wtime();
        check_rc(c,
                 MPIX_Alltoallv_init(sb, b.scounts.data(), b.sdispls.data(), MPI_BYTE, rb,
                                     b.rcounts.data(), b.rdispls.data(), MPI_BYTE, c.comm, info,
                                     &ours),
                 "MPIX_Alltoallv_init", w);
        out.init_sum += MPI_Wtime() - t0;
        out.init_count++;
        MPI_Info_free(&info);
        algorithm = resolved_algorithm(c, ours, w);
        break;
    }
    }
    if (!out.algorithm.empty() && out.algorithm != algorithm)
        die(c, where_str(c, w) + " resolved to '" + out.algorithm + "' and then to '" + algorithm +
                   "'");
    out.algorithm = algorithm;

    auto op = [&]() {
        switch (v.kind) {
        case Kind::SystemBlocking:
            check_rc(c,
                     MPI_Alltoallv(sb, b.scounts.data(), b.sdispls.data(), MPI_BYTE, rb,
                                   b.rcounts.data(), b.rdispls.data(), MPI_BYTE, c.comm),
                     "MPI_Alltoallv", w);
            break;
        case Kind::SystemPersistent:
            check_rc(c, MPI_Start(&sys), "MPI_Start", w);
            check_rc(c, MPI_Wait(&sys, MPI_STATUS_IGNORE), "MPI_Wait", w);
            break;
        case Kind::OursBlocking:
            check_rc(c,
                     MPIX_Alltoallv(sb, b.scounts.data(), b.sdispls.data(), MPI_BYTE, rb,
                                    b.rcounts.data(), b.rdispls.data(), MPI_BYTE, c.comm),
                     "MPIX_Alltoallv", w);
            break;
        case Kind::OursPersistent:
            check_rc(c, MPIX_Start(&ours), "MPIX_Start", w);
            check_rc(c, MPIX_Wait(&ours, MPI_STATUS_IGNORE), "MPIX_Wait", w);
            break;
        }
    };

    // 1. Correctness of the first run.
    b.recv = b.poison;
    MPI_Barrier(c.comm);
    op();
    g_watchdog.poke();
    verify(c, b, w, algorithm, "first run");

    // 2. Warm-up (no imbalance).
    for (int i = 0; i < c.opt.warmup; ++i) {
        op();
        g_watchdog.poke();
    }

    // 3. Timed iterations; the result must be rewritten in full: poison it first.
    b.recv = b.poison;
    const bool imb = c.opt.imbalance_us > 0;
    for (int i = 0; i < iters; ++i) {
        const double d = delay_s(c.opt, c.rank, first_iter + i);
        MPI_Barrier(c.comm);
        const double t0 = MPI_Wtime();
        double ta = t0;
        if (imb)
            while ((ta = MPI_Wtime()) - t0 < d) {
            }
        op();
        const double t1 = MPI_Wtime();
        out.t.push_back(t1 - ta);
        if (imb) {
            out.arrive.push_back(ta - t0);
            out.done.push_back(t1 - t0);
        }
        g_watchdog.poke();
    }
    verify(c, b, w, algorithm, "after the timed iterations");

    if (ours != MPIX_REQUEST_NULL) check_rc(c, MPIX_Request_free(&ours), "MPIX_Request_free", w);
    if (sys != MPI_REQUEST_NULL) check_rc(c, MPI_Request_free(&sys), "MPI_Request_free", w);
}

struct Result {
    std::string variant;
    Kind kind = Kind::SystemBlocking;
    std::string algorithm;
    int iters = 0;
    double min_us = 0, avg_us = 0, max_us = 0, median_max_us = 0;
    double init_us = -1;
    // imbalance mode
    double after_mean_us = 0, after_max_us = 0, after_med_max_us = 0;
};

// Collective: the statistics of one variant (meaningful on rank 0).
Result summarize(const Ctx &c, const Variant &v, const Samples &s)
{
    Result res;
    res.variant = v.name;
    res.kind = v.kind;
    res.algorithm = s.algorithm;
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
    if (c.rank == 0) {
        res.min_us = mn * 1e6;
        res.max_us = mx * 1e6;
        res.avg_us = total / c.nprocs * 1e6;
        res.median_max_us = mpia_bench::median(tmax) * 1e6;
        res.init_us = init_max < 0 ? -1 : init_max * 1e6;
    }
    if (c.opt.imbalance_us > 0) {
        // The last arrival of every iteration, then each rank's completion after it.
        std::vector<double> last(s.arrive.size());
        MPI_Allreduce(s.arrive.data(), last.data(), res.iters, MPI_DOUBLE, MPI_MAX, c.comm);
        std::vector<double> after(s.done.size());
        double asum = 0;
        for (std::size_t i = 0; i < after.size(); ++i) {
            after[i] = s.done[i] - last[i];
            asum += after[i];
        }
        double amean = res.iters > 0 ? asum / res.iters : 0, amean_sum = 0, amean_max = 0;
        MPI_Reduce(&amean, &amean_sum, 1, MPI_DOUBLE, MPI_SUM, 0, c.comm);
        MPI_Reduce(&amean, &amean_max, 1, MPI_DOUBLE, MPI_MAX, 0, c.comm);
        std::vector<double> amax(after.size());
        MPI_Reduce(after.data(), amax.data(), res.iters, MPI_DOUBLE, MPI_MAX, 0, c.comm);
        if (c.rank == 0) {
            res.after_mean_us = amean_sum / c.nprocs * 1e6;
            res.after_max_us = amean_max * 1e6;
            res.after_med_max_us = mpia_bench::median(amax) * 1e6;
        }
    }
    return res;
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

const Result *find(const std::vector<Result> &rs, const char *name)
{
    for (const auto &r : rs)
        if (r.variant == name) return &r;
    return nullptr;
}

struct Case {
    std::string pat;
    std::size_t block;
    std::vector<Result> rs;
};

void print_case(const Ctx &c, const Case &k, std::FILE *csv)
{
    const bool imb = c.opt.imbalance_us > 0;
    const Result *base = find(k.rs, "MPI_Alltoallv");
    const Result *pw = find(k.rs, "pairwise");
    const double b_avg = base ? base->avg_us : 0, b_med = base ? base->median_max_us : 0;
    for (const Result &r : k.rs) {
        std::string ratio = fmt_ratio(r.avg_us, b_avg), ratio_med = fmt_ratio(r.median_max_us, b_med);
        if (!imb) {
            std::printf("%-7s %6zu  %-26s %-30s %5d %10.2f %10.2f %10.2f %10.2f %7s %9s\n",
                        k.pat.c_str(), k.block, r.variant.c_str(), r.algorithm.c_str(), r.iters,
                        r.min_us, r.avg_us, r.max_us, r.median_max_us, ratio.c_str(),
                        ratio_med.c_str());
        } else {
            std::printf("%-7s %6zu  %-26s %-30s %5d %10.2f %10.2f %10.2f %10.2f %7s %7s %7s %7s\n",
                        k.pat.c_str(), k.block, r.variant.c_str(), r.algorithm.c_str(), r.iters,
                        r.avg_us, r.after_mean_us, r.after_max_us, r.after_med_max_us,
                        fmt_ratio(r.after_mean_us, pw ? pw->after_mean_us : 0).c_str(),
                        fmt_ratio(r.after_mean_us, base ? base->after_mean_us : 0).c_str(),
                        fmt_ratio(r.after_max_us, pw ? pw->after_max_us : 0).c_str(),
                        fmt_ratio(r.after_max_us, base ? base->after_max_us : 0).c_str());
        }
        if (csv) {
            std::fprintf(csv, "%d,%s,%s,%zu,%s,%s,%d,%.3f,%.3f,%.3f,%.3f,%s,%s,", c.nprocs,
                         csv_quote(c.mpi_library).c_str(), k.pat.c_str(), k.block,
                         csv_quote(r.variant).c_str(), csv_quote(r.algorithm).c_str(), r.iters,
                         r.min_us, r.avg_us, r.max_us, r.median_max_us,
                         fmt_ratio(r.avg_us, b_avg, "%.4f").c_str(),
                         fmt_ratio(r.median_max_us, b_med, "%.4f").c_str());
            if (r.init_us >= 0) std::fprintf(csv, "%.3f", r.init_us);
            if (imb) {
                std::fprintf(csv, ",%g,%.3f,%.3f,%.3f,%s,%s,%s,%s\n", c.opt.imbalance_us,
                             r.after_mean_us, r.after_max_us, r.after_med_max_us,
                             fmt_ratio(r.after_mean_us, pw ? pw->after_mean_us : 0, "%.4f").c_str(),
                             fmt_ratio(r.after_mean_us, base ? base->after_mean_us : 0, "%.4f").c_str(),
                             fmt_ratio(r.after_max_us, pw ? pw->after_max_us : 0, "%.4f").c_str(),
                             fmt_ratio(r.after_max_us, base ? base->after_max_us : 0, "%.4f").c_str());
            } else {
                std::fprintf(csv, ",0,,,,,,,\n");
            }
            std::fflush(csv);
        }
    }
    std::printf("\n");
    std::fflush(stdout);
}

// One line per (pattern, size): the baseline, the system persistent call, the blocking call,
// auto, and the fastest mpi-advance variant ("system", the pass-through, is not a candidate).
void print_summary(const Ctx &c, const std::vector<Case> &all)
{
    const bool imb = c.opt.imbalance_us > 0;
    if (!imb) {
        std::printf("# summary, P=%d: each cell is ratio / ratio_med against MPI_Alltoallv; best = "
                    "the mpi-advance variant with the lowest avg (best_med: lowest med_max)\n",
                    c.nprocs);
        std::printf("%-7s %6s %10s %10s %13s %13s %13s  %-26s %6s  %-26s %6s\n", "pattern", "size",
                    "MPI_a2av_us", "med_us", "MPI_a2av_init", "MPIX_a2av", "auto", "best", "ratio",
                    "best_med", "r_med");
    } else {
        std::printf("# summary, P=%d, imbalance up to %g us: after_last mean over ranks; cells are "
                    "ratios vs pairwise / vs MPI_Alltoallv; best = lowest after_last mean\n",
                    c.nprocs, c.opt.imbalance_us);
        std::printf("%-7s %6s %11s %11s %13s %13s %13s  %-26s %13s\n", "pattern", "size",
                    "MPI_a2av_us", "pairwise_us", "MPI_a2av_init", "MPIX_a2av", "auto", "best",
                    "best_ratio");
    }
    for (const Case &k : all) {
        const Result *base = find(k.rs, "MPI_Alltoallv");
        const Result *pw = find(k.rs, "pairwise");
        const Result *best = nullptr, *best_med = nullptr;
        for (const auto &r : k.rs) {
            if (r.kind != Kind::OursBlocking && r.kind != Kind::OursPersistent) continue;
            if (r.variant == "system") continue;
            double key = imb ? r.after_mean_us : r.avg_us;
            if (!best || key < (imb ? best->after_mean_us : best->avg_us)) best = &r;
            if (!best_med || r.median_max_us < best_med->median_max_us) best_med = &r;
        }
        if (!imb) {
            auto cell = [&](const char *name) -> std::string {
                const Result *r = find(k.rs, name);
                if (!r || !base) return "-";
                return fmt_ratio(r->avg_us, base->avg_us, "%.2f") + "/" +
                       fmt_ratio(r->median_max_us, base->median_max_us, "%.2f");
            };
            std::printf("%-7s %6zu %10.2f %10.2f %13s %13s %13s  %-26s %6s  %-26s %6s\n",
                        k.pat.c_str(), k.block, base ? base->avg_us : 0,
                        base ? base->median_max_us : 0, cell("MPI_Alltoallv_init").c_str(),
                        cell("MPIX_Alltoallv").c_str(), cell("auto").c_str(),
                        best ? best->variant.c_str() : "-",
                        best && base ? fmt_ratio(best->avg_us, base->avg_us, "%.2f").c_str() : "-",
                        best_med ? best_med->variant.c_str() : "-",
                        best_med && base
                            ? fmt_ratio(best_med->median_max_us, base->median_max_us, "%.2f").c_str()
                            : "-");
        } else {
            auto cell = [&](const Result *r) -> std::string {
                if (!r) return "-";
                return fmt_ratio(r->after_mean_us, pw ? pw->after_mean_us : 0, "%.2f") + "/" +
                       fmt_ratio(r->after_mean_us, base ? base->after_mean_us : 0, "%.2f");
            };
            std::printf("%-7s %6zu %11.2f %11.2f %13s %13s %13s  %-26s %13s\n", k.pat.c_str(),
                        k.block, base ? base->after_mean_us : 0, pw ? pw->after_mean_us : 0,
                        cell(find(k.rs, "MPI_Alltoallv_init")).c_str(),
                        cell(find(k.rs, "MPIX_Alltoallv")).c_str(), cell(find(k.rs, "auto")).c_str(),
                        best ? best->variant.c_str() : "-", cell(best).c_str());
        }
    }
    std::fflush(stdout);
}

}  // namespace

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    Ctx c{};
    MPI_Comm_rank(MPI_COMM_WORLD, &c.rank);
    MPI_Comm_size(MPI_COMM_WORLD, &c.nprocs);
    c.opt = parse_options(argc, argv, c.rank, c.nprocs);
    c.mpi_library = mpia_bench::first_line_of_library_version();
    MPI_Comm_dup(MPI_COMM_WORLD, &c.comm);
    MPI_Comm_set_errhandler(c.comm, MPI_ERRORS_RETURN);

    const std::vector<Variant> variants = build_variants(c.opt, c.rank, c.nprocs);
    const bool imb = c.opt.imbalance_us > 0;

    if (c.opt.list_only) {
        if (c.rank == 0)
            for (const auto &v : variants)
                std::printf("%-26s %s\n", v.name.c_str(), v.description.c_str());
        MPI_Comm_free(&c.comm);
        MPI_Finalize();
        return 0;
    }

    std::FILE *csv = nullptr;
    if (c.rank == 0 && !c.opt.csv.empty()) {
        csv = std::fopen(c.opt.csv.c_str(), "w");
        if (!csv) die(c, "cannot open CSV file '" + c.opt.csv + "': " + std::strerror(errno));
        std::fprintf(csv, "P,mpi_library,pattern,size,variant,algorithm,iters,min_us,avg_us,max_us,"
                          "median_max_us,ratio,ratio_median,init_us,imbalance_us,after_mean_us,"
                          "after_max_us,after_median_max_us,ratio_pairwise,ratio_system,"
                          "ratio_pairwise_max,ratio_system_max\n");
    }

    if (c.rank == 0) {
        const char *env = std::getenv("MPIX_ALLTOALLV");
        std::printf("# %s (mpi-advance %d.%d.%d)  P=%d  MPI: %s\n", kProg, MPIA_VERSION_MAJOR,
                    MPIA_VERSION_MINOR, MPIA_VERSION_PATCH, c.nprocs, c.mpi_library.c_str());
        std::printf("# warmup=%d iters=%s rounds=%d seed=%llu  MPIX_ALLTOALLV=%s  system "
                    "persistent: %s\n",
                    c.opt.warmup,
                    c.opt.iters > 0 ? std::to_string(c.opt.iters).c_str() : "adaptive",
                    c.opt.rounds, c.opt.seed, env ? env : "(unset)",
                    mpia_bench_system_pcoll_v_name() ? mpia_bench_system_pcoll_v_name() : "none");
        std::printf("# size = average block size in bytes (the P x P byte matrix of the pattern "
                    "has mean size)\n");
        if (!imb) {
            std::printf("# times in us: per-rank mean over iterations, min/avg/max over ranks; "
                        "med_max = median over iterations of the slowest rank;\n"
                        "# ratio = avg / avg(MPI_Alltoallv) (< 1: faster than the system MPI); "
                        "ratio_med = med_max / med_max(MPI_Alltoallv)\n");
            std::printf("%-7s %6s  %-26s %-30s %5s %10s %10s %10s %10s %7s %9s\n", "pattern",
                        "size", "variant", "algorithm", "iters", "min_us", "avg_us", "max_us",
                        "med_max_us", "ratio", "ratio_med");
        } else {
            std::printf("# imbalance mode: each rank waits a seeded delay in [0, %g] us before "
                        "each call; after_last = completion - last arrival (us),\n"
                        "# mean/max over ranks of each rank's mean, med_max = median over "
                        "iterations of the slowest rank; own_avg = own call to completion;\n"
                        "# r_pw / r_sys = after_mean vs pairwise / MPI_Alltoallv, "
                        "r_pw_mx / r_sys_mx = the same for after_max\n",
                        c.opt.imbalance_us);
            std::printf("%-7s %6s  %-26s %-30s %5s %10s %10s %10s %10s %7s %7s %7s %7s\n",
                        "pattern", "size", "variant", "algorithm", "iters", "own_avg",
                        "after_mean", "after_max", "after_mmax", "r_pw", "r_sys", "r_pw_mx",
                        "r_sys_mx");
        }
        std::fflush(stdout);
    }

    g_watchdog.start(c.opt.watchdog_s, c.rank, kProg);

    std::vector<Case> all;
    for (const std::string &pat : c.opt.patterns)
        for (std::size_t block : c.opt.sizes) {
            Buffers b = make_buffers(pat, c.rank, c.nprocs, block, c.opt.seed);
            int too_big = b.send_bytes > static_cast<std::size_t>(INT_MAX) ||
                          b.recv_bytes > static_cast<std::size_t>(INT_MAX);
            int any_too_big = 0;
            MPI_Allreduce(&too_big, &any_too_big, 1, MPI_INT, MPI_MAX, c.comm);
            if (any_too_big)
                die(c, "pattern " + pat + " at block size " + std::to_string(block) +
                           " needs buffers above INT_MAX bytes");

            g_watchdog.set_phase("warm-up with MPI_Alltoallv, pattern " + pat + ", block size " +
                                 std::to_string(block));
            const int settle = std::max(50, 2 * c.opt.warmup);
            for (int i = 0; i < settle; ++i) {
                int rc = MPI_Alltoallv(b.send.data(), b.scounts.data(), b.sdispls.data(), MPI_BYTE,
                                       b.recv.data(), b.rcounts.data(), b.rdispls.data(), MPI_BYTE,
                                       c.comm);
                if (rc != MPI_SUCCESS)
                    die(c, "MPI_Alltoallv (warm-up) failed: " + mpi_error_string(rc));
                g_watchdog.poke();
            }

            const int rounds = c.opt.rounds;
            const int per_round = (iterations_for(c, block) + rounds - 1) / rounds;
            std::vector<Samples> samples(variants.size());
            for (int round = 0; round < rounds; ++round)
                for (std::size_t k = 0; k < variants.size(); ++k) {
                    std::size_t idx = (k + static_cast<std::size_t>(round)) % variants.size();
                    run_round(c, variants[idx], pat, block, per_round, round * per_round, b,
                              samples[idx]);
                }

            Case cs{pat, block, {}};
            for (std::size_t idx = 0; idx < variants.size(); ++idx)
                cs.rs.push_back(summarize(c, variants[idx], samples[idx]));
            if (c.rank == 0) print_case(c, cs, csv);
            all.push_back(std::move(cs));
        }

    g_watchdog.finish();
    if (c.rank == 0) print_summary(c, all);
    if (csv) std::fclose(csv);
    MPI_Comm_free(&c.comm);
    MPI_Finalize();
    return 0;
}
