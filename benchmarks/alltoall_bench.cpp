/*
 * mpia_bench -- all-to-all latency benchmark for mpi-advance.
 *
 * For every block size (bytes sent to each destination) it times, in one run and on the same
 * buffers:
 *   MPI_Alltoall       the system MPI's blocking all-to-all (the baseline of the ratio column)
 *   MPI_Alltoall_init  the system MPI's persistent all-to-all (MPI-4 MPI_Alltoall_init, or
 *                      Open MPI's MPIX_Alltoall_init extension), when the library has one
 *   MPIX_Alltoall      mpi-advance's blocking all-to-all (algorithm "auto" / $MPIX_ALLTOALL)
 *   <name>             every alltoall algorithm of mpi-advance's registry, as a persistent
 *                      request (MPIX_Alltoall_init once, then MPIX_Start + MPIX_Wait)
 *   tra:radix=<r>      the tunable-radix algorithm for r = 2..P (or --radices), persistent
 *
 * Method: at each size, 50 untimed MPI_Alltoall calls first settle the buffers and the MPI
 * library (otherwise whichever variant comes first pays for it). The timed iterations are split
 * into --rounds rounds; in each round every variant, in an order rotating from round to round,
 * is set up (the *_init call, timed separately), run once with every received byte checked
 * against a formula of (source, destination, index), warmed up (--warmup), timed (each
 * iteration preceded by MPI_Barrier and timed with MPI_Wtime), checked again and freed. Each
 * rank averages its per-iteration times; the table reports min/avg/max over ranks of that
 * average, the median over iterations of the slowest rank's time (med_max), and
 * ratio = avg(variant) / avg(MPI_Alltoall), ratio_med = med_max(variant) / med_max(MPI_Alltoall).
 * A wrong result, an error code or a hang (--watchdog) aborts the run with a message.
 */
#include "mpi_advance.h"
#include "bench_common.hpp"
#include "system_pcoll.h"

#include <mpi.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fnmatch.h>
#include <mutex>
#include <string>
#include <thread>
#include <unistd.h>
#include <vector>

namespace {

using mpia_bench::csv_quote;
using mpia_bench::fill_send;
using mpia_bench::first_line_of_library_version;
using mpia_bench::mpi_error_string;
using mpia_bench::parse_u64;
using mpia_bench::pattern;
using mpia_bench::poison_recv;
using mpia_bench::split;

// ---------------------------------------------------------------------------------------------
// Options

struct Options {
    std::vector<std::size_t> sizes{1, 8, 64, 512, 4096, 32768};
    int iters = 0;  // 0: adapt to the message size
    int warmup = 10;
    int rounds = 1;
    std::vector<std::string> variant_patterns;  // empty: all
    std::string csv;
    bool radices_given = false;
    std::vector<int> radices;
    double watchdog_s = 120.0;
    bool list_only = false;
};

const char *const kUsage =
    "usage: mpia_bench [options]\n"
    "  --sizes LIST     block sizes in bytes per destination, e.g. 1,8,64,4k,32k\n"
    "                   (default 1,8,64,512,4096,32768)\n"
    "  --iters N        timed iterations per variant and size (default: 100 when a rank sends\n"
    "                   <= 64 KiB in all, 50 up to 1 MiB, 20 above)\n"
    "  --warmup N       untimed iterations before timing, per round (default 10)\n"
    "  --rounds R       split the timed iterations into R rounds; each round runs every variant\n"
    "                   once (set-up, check, warm-up, timing), in an order rotating from round\n"
    "                   to round, so that drifts of a noisy machine hit all variants (default 1)\n"
    "  --variants LIST  comma list of variant names or shell patterns to run, e.g.\n"
    "                   'MPI_Alltoall_init,pairwise,tra:*' (MPI_Alltoall, the baseline of the\n"
    "                   ratio, always runs)\n"
    "  --radices LIST   radices of the tra sweep, e.g. 2,4,8 or 2-6 (default 2..P; 'none')\n"
    "  --csv FILE       also write the results as CSV (written by rank 0)\n"
    "  --watchdog SEC   abort when one iteration makes no progress for SEC seconds\n"
    "                   (default 120, 0 disables)\n"
    "  --list           print the variants and exit\n"
    "  --help           this text\n";

[[noreturn]] void usage_error(int rank, const std::string &msg)
{
    if (rank == 0) std::fprintf(stderr, "mpia_bench: %s\n%s", msg.c_str(), kUsage);
    MPI_Finalize();
    std::exit(2);
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
                if (!parse_u64(tok, v) || v == 0 || v > static_cast<unsigned long long>(INT32_MAX))
                    usage_error(rank, "bad block size '" + tok + "'");
                o.sizes.push_back(static_cast<std::size_t>(v));
            }
            if (o.sizes.empty()) usage_error(rank, "--sizes is empty");
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
        } else if (arg == "--watchdog") {
            std::string tok = need();
            char *end = nullptr;
            double v = std::strtod(tok.c_str(), &end);
            if (end == tok.c_str() || *end != '\0' || v < 0) usage_error(rank, "bad --watchdog");
            o.watchdog_s = v;
        } else if (arg == "--radices") {
            o.radices_given = true;
            o.radices.clear();
            std::string list = need();
            if (list == "none") continue;
            for (const auto &tok : split(list, ',')) {
                auto dash = tok.find('-');
                unsigned long long lo = 0, hi = 0;
                bool ok = dash == std::string::npos
                              ? (parse_u64(tok, lo) && (hi = lo, true))
                              : (parse_u64(tok.substr(0, dash), lo) &&
                                 parse_u64(tok.substr(dash + 1), hi));
                if (!ok || lo < 2 || hi < lo || hi > 1000000ull)
                    usage_error(rank, "bad radix '" + tok + "' (radices are >= 2)");
                for (unsigned long long r = lo; r <= hi; ++r) o.radices.push_back(static_cast<int>(r));
            }
        } else {
            usage_error(rank, "unknown argument '" + std::string(argv[i]) + "'");
        }
    }
    if (!o.radices_given) {
        for (int r = 2; r <= std::max(2, nprocs); ++r) o.radices.push_back(r);
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
    // The baseline of the ratio columns: always runs.
    v.push_back({"MPI_Alltoall", Kind::SystemBlocking, "", "the MPI library's MPI_Alltoall"});
    if (mpia_bench_system_pcoll_name() && selected(o, "MPI_Alltoall_init"))
        v.push_back({"MPI_Alltoall_init", Kind::SystemPersistent, "",
                     std::string("the MPI library's persistent all-to-all, ") +
                         mpia_bench_system_pcoll_name()});
    if (selected(o, "MPIX_Alltoall"))
        v.push_back({"MPIX_Alltoall", Kind::OursBlocking, "",
                     "mpi-advance's blocking MPIX_Alltoall (auto, or $MPIX_ALLTOALL)"});

    // The registry raises out-of-range errors through MPI_COMM_SELF's handler: make it return.
    MPI_Errhandler saved;
    MPI_Comm_get_errhandler(MPI_COMM_SELF, &saved);
    MPI_Comm_set_errhandler(MPI_COMM_SELF, MPI_ERRORS_RETURN);
    for (int i = 0;; ++i) {
        const char *name = nullptr, *desc = nullptr;
        if (MPIX_Algorithm_get("alltoall", i, &name, &desc) != MPI_SUCCESS) break;
        if (!name) break;
        if (i > 1000) break;  // a registry never that long: guard against a broken iterator
        if (selected(o, name))
            v.push_back({name, Kind::OursPersistent, name,
                         std::string("persistent: ") + (desc ? desc : "")});
    }
    MPI_Comm_set_errhandler(MPI_COMM_SELF, saved);
    MPI_Errhandler_free(&saved);

    const int max_radix = std::max(2, nprocs);
    int skipped = 0;
    for (int r : o.radices) {
        if (r > max_radix) {
            ++skipped;
            continue;
        }
        std::string sel = "tra:radix=" + std::to_string(r);
        if (selected(o, sel))
            v.push_back({sel, Kind::OursPersistent, sel, "persistent: tra with radix " +
                                                             std::to_string(r)});
    }
    if (skipped > 0 && rank == 0)
        std::fprintf(stderr, "mpia_bench: skipping %d tra radices above %d (valid: 2..%d at P=%d)\n",
                     skipped, max_radix, max_radix, nprocs);
    return v;
}

mpia_bench::Watchdog g_watchdog;

// ---------------------------------------------------------------------------------------------
// Data pattern and verification (fill_send, poison_recv: bench_common.hpp)

struct Ctx {
    MPI_Comm comm;  // duplicate of MPI_COMM_WORLD, errors return
    int rank;
    int nprocs;
    std::string mpi_library;
    Options opt;
};

[[noreturn]] void die(const Ctx &c, const std::string &msg)
{
    std::fprintf(stderr, "mpia_bench: FATAL (rank %d): %s\n", c.rank, msg.c_str());
    std::fflush(stderr);
    MPI_Abort(MPI_COMM_WORLD, 3);
    std::exit(3);
}

void check_rc(const Ctx &c, int rc, const char *call, const Variant &v, std::size_t block)
{
    if (rc == MPI_SUCCESS) return;
    die(c, std::string(call) + " failed for variant '" + v.name + "' at block size " +
               std::to_string(block) + ", P=" + std::to_string(c.nprocs) + ": " +
               mpi_error_string(rc));
}

// Collective: every rank checks its receive buffer; any wrong byte anywhere aborts the run.
void verify(const Ctx &c, const std::vector<unsigned char> &recv, std::size_t block,
            const Variant &v, const std::string &algorithm, const char *when)
{
    long long bad = 0;
    int first_src = -1;
    std::size_t first_idx = 0;
    unsigned got = 0, want = 0;
    for (int s = 0; s < c.nprocs; ++s) {
        for (std::size_t i = 0; i < block; ++i) {
            unsigned char e = pattern(static_cast<unsigned>(s), static_cast<unsigned>(c.rank), i);
            unsigned char g = recv[s * block + i];
            if (g != e) {
                if (bad == 0) {
                    first_src = s;
                    first_idx = i;
                    got = g;
                    want = e;
                }
                ++bad;
            }
        }
    }
    long long total = 0;
    MPI_Allreduce(&bad, &total, 1, MPI_LONG_LONG, MPI_SUM, c.comm);
    if (total == 0) return;
    if (bad > 0) {
        std::fprintf(stderr,
                     "mpia_bench: rank %d: %lld wrong bytes; first: block from rank %d, byte %zu: "
                     "got 0x%02x, expected 0x%02x\n",
                     c.rank, bad, first_src, first_idx, got, want);
        std::fflush(stderr);
    }
    MPI_Barrier(c.comm);
    if (c.rank == 0) {
        std::fprintf(stderr,
                     "mpia_bench: FATAL: WRONG RESULT: variant '%s' (algorithm '%s') at block size "
                     "%zu bytes, P=%d, %s: %lld wrong bytes over all ranks.\n"
                     "  reproduce: mpirun -n %d mpia_bench --sizes %zu --variants '%s'\n",
                     v.name.c_str(), algorithm.c_str(), block, c.nprocs, when, total, c.nprocs,
                     block, v.name.c_str());
        std::fflush(stderr);
        MPI_Abort(MPI_COMM_WORLD, 4);
    }
    MPI_Barrier(c.comm);  // rank 0 aborts everybody
    std::exit(4);
}

// ---------------------------------------------------------------------------------------------
// Running one variant at one size

struct Result {
    std::string variant;
    Kind kind = Kind::SystemBlocking;
    std::string algorithm;
    int iters = 0;
    double min_us = 0, avg_us = 0, max_us = 0, median_max_us = 0;
    double init_us = -1;  // slowest rank's setup time; -1: not a persistent variant
};

int iterations_for(const Ctx &c, std::size_t block)
{
    if (c.opt.iters > 0) return c.opt.iters;
    double bytes = static_cast<double>(block) * c.nprocs;
    if (bytes <= 64.0 * 1024) return 100;
    if (bytes <= 1024.0 * 1024) return 50;
    return 20;
}

std::string resolved_algorithm(const Ctx &c, MPIX_Request req, const Variant &v, std::size_t block)
{
    char name[MPIX_MAX_ALGORITHM_STRING];
    int len = 0;
    check_rc(c, MPIX_Request_get_algorithm(req, name, &len), "MPIX_Request_get_algorithm", v, block);
    name[MPIX_MAX_ALGORITHM_STRING - 1] = '\0';
    std::size_t n = std::min<std::size_t>(static_cast<std::size_t>(std::max(0, len)),
                                           MPIX_MAX_ALGORITHM_STRING - 1);
    return std::string(name, strnlen(name, n));
}

// Everything one rank collected for one variant at one size, over all rounds.
struct Samples {
    std::string algorithm;
    std::vector<double> t;  // seconds, one per timed iteration, in the same order on every rank
    double init_sum = 0;    // seconds spent in the *_init calls
    int init_count = 0;
};

// One round of one variant: set up, check the first result, warm up, time `iters` iterations,
// check again, tear down.
void run_round(const Ctx &c, const Variant &v, std::size_t block, int iters,
               std::vector<unsigned char> &send, std::vector<unsigned char> &recv, Samples &out)
{
    const int count = static_cast<int>(block);
    std::string algorithm;

    g_watchdog.set_phase("variant '" + v.name + "', block size " + std::to_string(block) +
                         ", P=" + std::to_string(c.nprocs));

    MPIX_Request ours = MPIX_REQUEST_NULL;
    MPI_Request sys = MPI_REQUEST_NULL;

    switch (v.kind) {
    case Kind::SystemBlocking:
        algorithm = "MPI_Alltoall";
        break;
    case Kind::SystemPersistent: {
        algorithm = mpia_bench_system_pcoll_name();
        MPI_Barrier(c.comm);
        double t0 = MPI_Wtime();
        check_rc(c,
                 mpia_bench_system_alltoall_init(send.data(), count, MPI_BYTE, recv.data(), count,
                                                 MPI_BYTE, c.comm, MPI_INFO_NULL, &sys),
                 algorithm.c_str(), v, block);
        out.init_sum += MPI_Wtime() - t0;
        out.init_count++;
        break;
    }
    case Kind::OursBlocking: {
        // MPIX_Alltoall cannot be asked what it runs; report what a persistent request with the
        // same selection (the environment's, or auto) resolves to.
        MPIX_Request probe = MPIX_REQUEST_NULL;
        check_rc(c,
                 MPIX_Alltoall_init(send.data(), count, MPI_BYTE, recv.data(), count, MPI_BYTE,
                                    c.comm, MPI_INFO_NULL, &probe),
                 "MPIX_Alltoall_init (probe)", v, block);
        algorithm = resolved_algorithm(c, probe, v, block) + " (as init)";
        check_rc(c, MPIX_Request_free(&probe), "MPIX_Request_free", v, block);
        break;
    }
    case Kind::OursPersistent: {
        MPI_Info info;
        MPI_Info_create(&info);
        MPI_Info_set(info, MPIX_INFO_KEY_ALGORITHM, v.selection.c_str());
        MPI_Barrier(c.comm);
        double t0 = MPI_Wtime();
        check_rc(c,
                 MPIX_Alltoall_init(send.data(), count, MPI_BYTE, recv.data(), count, MPI_BYTE,
                                    c.comm, info, &ours),
                 "MPIX_Alltoall_init", v, block);
        out.init_sum += MPI_Wtime() - t0;
        out.init_count++;
        MPI_Info_free(&info);
        algorithm = resolved_algorithm(c, ours, v, block);
        break;
    }
    }
    if (!out.algorithm.empty() && out.algorithm != algorithm)
        die(c, "variant '" + v.name + "' resolved to '" + out.algorithm + "' and then to '" +
                   algorithm + "' at block size " + std::to_string(block));
    out.algorithm = algorithm;

    auto op = [&]() {
        switch (v.kind) {
        case Kind::SystemBlocking:
            check_rc(c,
                     MPI_Alltoall(send.data(), count, MPI_BYTE, recv.data(), count, MPI_BYTE, c.comm),
                     "MPI_Alltoall", v, block);
            break;
        case Kind::SystemPersistent:
            check_rc(c, MPI_Start(&sys), "MPI_Start", v, block);
            check_rc(c, MPI_Wait(&sys, MPI_STATUS_IGNORE), "MPI_Wait", v, block);
            break;
        case Kind::OursBlocking:
            check_rc(c,
                     MPIX_Alltoall(send.data(), count, MPI_BYTE, recv.data(), count, MPI_BYTE,
                                   c.comm),
                     "MPIX_Alltoall", v, block);
            break;
        case Kind::OursPersistent:
            check_rc(c, MPIX_Start(&ours), "MPIX_Start", v, block);
            check_rc(c, MPIX_Wait(&ours, MPI_STATUS_IGNORE), "MPIX_Wait", v, block);
            break;
        }
    };

    // 1. Correctness of the first run.
    poison_recv(recv, c.rank, c.nprocs, block);
    MPI_Barrier(c.comm);
    op();
    g_watchdog.poke();
    verify(c, recv, block, v, algorithm, "first run");

    // 2. Warm-up.
    for (int i = 0; i < c.opt.warmup; ++i) {
        op();
        g_watchdog.poke();
    }

    // 3. Timed iterations (the result must be rewritten in full: poison it first).
    poison_recv(recv, c.rank, c.nprocs, block);
    for (int i = 0; i < iters; ++i) {
        MPI_Barrier(c.comm);
        double t0 = MPI_Wtime();
        op();
        out.t.push_back(MPI_Wtime() - t0);
        g_watchdog.poke();
    }
    verify(c, recv, block, v, algorithm, "after the timed iterations");

    if (ours != MPIX_REQUEST_NULL) check_rc(c, MPIX_Request_free(&ours), "MPIX_Request_free", v, block);
    if (sys != MPI_REQUEST_NULL) check_rc(c, MPI_Request_free(&sys), "MPI_Request_free", v, block);
}

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
        std::sort(tmax.begin(), tmax.end());
        std::size_t n = tmax.size();
        double med = n == 0 ? 0 : n % 2 ? tmax[n / 2] : 0.5 * (tmax[n / 2 - 1] + tmax[n / 2]);
        res.median_max_us = med * 1e6;
        res.init_us = init_max < 0 ? -1 : init_max * 1e6;
    }
    return res;
}

// ---------------------------------------------------------------------------------------------
// Output

void print_row(const Result &r, std::size_t block, double baseline_avg, double baseline_med)
{
    char ratio[32], ratio_med[32];
    if (baseline_avg > 0) std::snprintf(ratio, sizeof ratio, "%.3f", r.avg_us / baseline_avg);
    else std::snprintf(ratio, sizeof ratio, "-");
    if (baseline_med > 0)
        std::snprintf(ratio_med, sizeof ratio_med, "%.3f", r.median_max_us / baseline_med);
    else std::snprintf(ratio_med, sizeof ratio_med, "-");
    std::printf("%8zu  %-18s %-30s %5d %11.2f %11.2f %11.2f %11.2f %7s %9s\n", block,
                r.variant.c_str(), r.algorithm.c_str(), r.iters, r.min_us, r.avg_us, r.max_us,
                r.median_max_us, ratio, ratio_med);
    std::fflush(stdout);
}

// One line per size: the system's numbers, what auto and the blocking call achieve, and the
// fastest mpi-advance variant ("system", our pass-through to the MPI library, is not a
// candidate). Each ratio is given as avg-based / median-based (see the table's columns).
void print_summary(int nprocs, const std::vector<std::pair<std::size_t, std::vector<Result>>> &all)
{
    std::printf("# summary, P=%d: each cell is ratio / ratio_med against MPI_Alltoall; best = the "
                "mpi-advance variant with the lowest avg (best_med: lowest med_max)\n",
                nprocs);
    std::printf("%8s %10s %10s %13s %13s %13s  %-16s %6s  %-16s %6s\n", "size", "MPI_a2a_us",
                "med_us", "MPI_a2a_init", "MPIX_Alltoall", "auto", "best", "ratio", "best_med",
                "r_med");
    for (const auto &entry : all) {
        const std::vector<Result> &rs = entry.second;
        double base = 0, base_med = 0;
        const Result *best = nullptr, *best_med = nullptr;
        for (const auto &r : rs)
            if (r.kind == Kind::SystemBlocking) {
                base = r.avg_us;
                base_med = r.median_max_us;
            }
        auto ratios_of = [&](const char *name) -> std::string {
            for (const auto &r : rs)
                if (r.variant == name && base > 0 && base_med > 0) {
                    char b[64];
                    std::snprintf(b, sizeof b, "%.2f/%.2f", r.avg_us / base,
                                  r.median_max_us / base_med);
                    return b;
                }
            return "-";
        };
        for (const auto &r : rs) {
            if (r.kind != Kind::OursBlocking && r.kind != Kind::OursPersistent) continue;
            if (r.variant == "system") continue;
            if (!best || r.avg_us < best->avg_us) best = &r;
            if (!best_med || r.median_max_us < best_med->median_max_us) best_med = &r;
        }
        char br[32] = "-", bmr[32] = "-";
        if (best && base > 0) std::snprintf(br, sizeof br, "%.2f", best->avg_us / base);
        if (best_med && base_med > 0)
            std::snprintf(bmr, sizeof bmr, "%.2f", best_med->median_max_us / base_med);
        std::printf("%8zu %10.2f %10.2f %13s %13s %13s  %-16s %6s  %-16s %6s\n", entry.first, base,
                    base_med, ratios_of("MPI_Alltoall_init").c_str(),
                    ratios_of("MPIX_Alltoall").c_str(), ratios_of("auto").c_str(),
                    best ? best->variant.c_str() : "-", br,
                    best_med ? best_med->variant.c_str() : "-", bmr);
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
    c.mpi_library = first_line_of_library_version();
    MPI_Comm_dup(MPI_COMM_WORLD, &c.comm);
    MPI_Comm_set_errhandler(c.comm, MPI_ERRORS_RETURN);

    const std::vector<Variant> variants = build_variants(c.opt, c.rank, c.nprocs);

    if (c.opt.list_only) {
        if (c.rank == 0)
            for (const auto &v : variants)
                std::printf("%-18s %s\n", v.name.c_str(), v.description.c_str());
        MPI_Comm_free(&c.comm);
        MPI_Finalize();
        return 0;
    }

    std::FILE *csv = nullptr;
    if (c.rank == 0 && !c.opt.csv.empty()) {
        csv = std::fopen(c.opt.csv.c_str(), "w");
        if (!csv) die(c, "cannot open CSV file '" + c.opt.csv + "': " + std::strerror(errno));
        std::fprintf(csv, "P,mpi_library,size,variant,algorithm,iters,min_us,avg_us,max_us,"
                          "median_max_us,ratio,ratio_median,init_us\n");
    }

    if (c.rank == 0) {
        std::printf("# mpia_bench (mpi-advance %d.%d.%d)  P=%d  MPI: %s\n", MPIA_VERSION_MAJOR,
                    MPIA_VERSION_MINOR, MPIA_VERSION_PATCH, c.nprocs, c.mpi_library.c_str());
        const char *env = std::getenv("MPIX_ALLTOALL");
        std::printf("# warmup=%d iters=%s rounds=%d  MPIX_ALLTOALL=%s  system persistent: %s\n",
                    c.opt.warmup, c.opt.iters > 0 ? std::to_string(c.opt.iters).c_str() : "adaptive",
                    c.opt.rounds,
                    env ? env : "(unset)",
                    mpia_bench_system_pcoll_name() ? mpia_bench_system_pcoll_name() : "none");
        std::printf("# times in us: per-rank mean over iterations, min/avg/max over ranks; "
                    "med_max = median over iterations of the slowest rank;\n"
                    "# ratio = avg / avg(MPI_Alltoall) at the same size (< 1: faster than the "
                    "system MPI); ratio_med = med_max / med_max(MPI_Alltoall)\n");
        std::printf("%8s  %-18s %-30s %5s %11s %11s %11s %11s %7s %9s\n", "size", "variant",
                    "algorithm", "iters", "min_us", "avg_us", "max_us", "med_max_us", "ratio",
                    "ratio_med");
        std::fflush(stdout);
    }

    g_watchdog.start(c.opt.watchdog_s, c.rank);

    std::vector<std::pair<std::size_t, std::vector<Result>>> all;
    for (std::size_t block : c.opt.sizes) {
        all.emplace_back(block, std::vector<Result>{});
        const std::size_t total = block * static_cast<std::size_t>(c.nprocs);
        std::vector<unsigned char> send(total), recv(total);
        fill_send(send, c.rank, c.nprocs, block);
        // Settle the system at this size before the first variant (the baseline) runs: fresh
        // buffers and a new message size otherwise penalize whichever variant comes first.
        g_watchdog.set_phase("warm-up with MPI_Alltoall, block size " + std::to_string(block));
        const int settle = std::max(50, 2 * c.opt.warmup);
        for (int i = 0; i < settle; ++i) {
            int rc = MPI_Alltoall(send.data(), static_cast<int>(block), MPI_BYTE, recv.data(),
                                  static_cast<int>(block), MPI_BYTE, c.comm);
            if (rc != MPI_SUCCESS)
                die(c, "MPI_Alltoall (warm-up) failed at block size " + std::to_string(block) +
                           ": " + mpi_error_string(rc));
            g_watchdog.poke();
        }
        // Rounds: every variant runs once per round, the order rotating from round to round, so
        // that slow drifts of the machine spread over all variants instead of a few.
        const int rounds = c.opt.rounds;
        const int per_round = (iterations_for(c, block) + rounds - 1) / rounds;
        std::vector<Samples> samples(variants.size());
        for (auto &sm : samples) sm.t.reserve(static_cast<std::size_t>(per_round) * rounds);
        for (int round = 0; round < rounds; ++round)
            for (std::size_t k = 0; k < variants.size(); ++k) {
                std::size_t idx = (k + static_cast<std::size_t>(round)) % variants.size();
                run_round(c, variants[idx], block, per_round, send, recv, samples[idx]);
            }

        double baseline = 0, baseline_med = 0;
        for (std::size_t idx = 0; idx < variants.size(); ++idx) {
            const Variant &v = variants[idx];
            Result r = summarize(c, v, samples[idx]);
            if (c.rank != 0) continue;
            if (v.kind == Kind::SystemBlocking) {
                baseline = r.avg_us;
                baseline_med = r.median_max_us;
            }
            print_row(r, block, baseline, baseline_med);
            all.back().second.push_back(r);
            if (csv) {
                std::fprintf(csv, "%d,%s,%zu,%s,%s,%d,%.3f,%.3f,%.3f,%.3f,", c.nprocs,
                             csv_quote(c.mpi_library).c_str(), block, csv_quote(r.variant).c_str(),
                             csv_quote(r.algorithm).c_str(), r.iters, r.min_us, r.avg_us,
                             r.max_us, r.median_max_us);
                if (baseline > 0) std::fprintf(csv, "%.4f,", r.avg_us / baseline);
                else std::fprintf(csv, ",");
                if (baseline_med > 0) std::fprintf(csv, "%.4f,", r.median_max_us / baseline_med);
                else std::fprintf(csv, ",");
                if (r.init_us >= 0) std::fprintf(csv, "%.3f\n", r.init_us);
                else std::fprintf(csv, "\n");
                std::fflush(csv);
            }
        }
        if (c.rank == 0) {
            std::printf("\n");
            std::fflush(stdout);
        }
    }

    g_watchdog.finish();
    if (c.rank == 0) print_summary(c.nprocs, all);
    if (csv) std::fclose(csv);
    MPI_Comm_free(&c.comm);
    MPI_Finalize();
    return 0;
}
