/*
 * mpia_bench_overlap -- what the progress thread buys: a Start / compute / Wait loop with and
 * without it.
 *
 * For every algorithm (--algorithms, default bruck,tra) and block size (--sizes, bytes per
 * destination) it creates, side by side in one run, two persistent all-to-all requests with the
 * same algorithm on the same communicator: "plain" (info mpix_algorithm only: it moves only
 * inside mpi-advance calls) and "thread" (plus info mpix_progress=thread: the library's
 * progress thread drives it while the rank computes). Then:
 *   1. both are checked (every received byte against a formula of source, destination, index);
 *   2. coll:    the collective alone, Start + Wait, for each request (interleaved);
 *   3. compute: a busy loop (a fixed amount of arithmetic, no MPI call) calibrated on each rank
 *               to last --compute-factor times the plain collective (the slowest rank's
 *               median), timed alone; with --compute sleep, a sleep of that length instead
 *               (the core is free meanwhile: an accelerator or I/O wait);
 *   4. loop:    Start; compute; Wait -- for each request, interleaved iteration by iteration
 *               (which one goes first alternates); wait: the final Wait alone, i.e. the part of
 *               the collective still left after the compute (the most direct measure of what
 *               the thread did meanwhile);
 *   5. both are checked again.
 * Each iteration starts after an MPI_Barrier; the time of an iteration is the slowest rank's;
 * every column is the median over iterations. ratio = loop(plain) / loop(thread): above 1 the
 * thread helps. Perfect overlap would make loop = max(coll, compute); no overlap, coll +
 * compute.
 *
 * The compute loop is work, not a clock: when the progress thread competes for the core, the
 * compute takes longer, and the table shows it (comp_thr: the compute part of the loop,
 * measured inside the threaded loop). A progress thread can only help when it gets a core:
 * with as many busy ranks as cores (P=2 on a 2-core machine) it runs only when a rank yields
 * (Open MPI's mpi_yield_when_idle) or sleeps (--compute sleep).
 *
 * Needs MPI_THREAD_MULTIPLE for the thread (the library warns and starts none otherwise; the
 * run then compares two plain requests).
 */
#include "bench_core.hpp"

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <sys/prctl.h>
#include <time.h>
#include <vector>

namespace {

using namespace mpia_bench;

struct OverlapOptions {
  std::vector<std::string> algorithms{"bruck", "tra"};
  std::vector<long long> sizes{4096, 65536, 524288};
  int iters = 50;
  int warmup = 5;
  double factor = 1.0;
  bool sleep = false;  // --compute sleep
  std::string csv;
  double watchdog_s = 120.0;
};

const char* const kUsage =
    "usage: mpia_bench_overlap [options]\n"
    "  --algorithms LIST  alltoall algorithms (selection syntax), comma separated\n"
    "                     (default bruck,tra)\n"
    "  --sizes LIST       block sizes in bytes per destination, e.g. 4k,64k,512k\n"
    "                     (default 4096,65536,524288)\n"
    "  --iters N          timed iterations of each measurement (default 50)\n"
    "  --warmup N         untimed iterations before each measurement (default 5)\n"
    "  --compute-factor F the compute lasts F times the plain collective (default 1)\n"
    "  --compute MODE     busy (arithmetic, default) or sleep (the core is free meanwhile)\n"
    "  --csv FILE         also write the results as CSV (rank 0)\n"
    "  --watchdog SEC     abort when an iteration makes no progress for SEC s (default 120;\n"
    "                     0 disables)\n"
    "  --help             this text\n";

OverlapOptions parse_options(int argc, char** argv, int rank) {
  OverlapOptions o;
  Args a(argc, argv, rank, "mpia_bench_overlap", kUsage);
  while (a.next()) {
    if (a.is("--help") || a.is("-h"))
      a.help();
    else if (a.is("--algorithms")) {
      o.algorithms = split(a.value(), ',');
      if (o.algorithms.empty()) a.error("--algorithms is empty");
    } else if (a.is("--sizes"))
      o.sizes = a.sizes(INT32_MAX);
    else if (a.is("--iters"))
      o.iters = static_cast<int>(a.count(1, 100000000));
    else if (a.is("--warmup"))
      o.warmup = static_cast<int>(a.count(0, 100000000));
    else if (a.is("--compute-factor"))
      o.factor = a.number(0);
    else if (a.is("--compute")) {
      const std::string m = a.value();
      if (m != "busy" && m != "sleep") a.error("--compute is busy or sleep");
      o.sleep = m == "sleep";
    } else if (a.is("--csv"))
      o.csv = a.value();
    else if (a.is("--watchdog"))
      o.watchdog_s = a.number(0);
    else
      a.unknown();
  }
  return o;
}

// ---------------------------------------------------------------------------------------------
// The compute: dependent floating-point work the compiler cannot remove or shorten.

volatile double g_sink = 0;

bool g_sleep = false;  // --compute sleep: compute(n) sleeps n nanoseconds

void compute(long n) {
  if (g_sleep) {
    struct timespec ts;
    ts.tv_sec = n / 1000000000L;
    ts.tv_nsec = n % 1000000000L;
    while (nanosleep(&ts, &ts) != 0 && errno == EINTR) {
    }
    return;
  }
  double x = 1.0, y = 0.5;
  for (long i = 0; i < n; ++i) {
    x = x * 1.0000001 + y;
    y = y * 0.9999999 - 1e-9 * x;
  }
  g_sink = x + y;
}

double now() { return MPI_Wtime(); }

// Units of compute per second on this rank (median of a few timings of a ~5 ms run).
double calibrate() {
  if (g_sleep) return 1e9;  // units are nanoseconds
  long n = 1000;
  for (;;) {
    const double t0 = now();
    compute(n);
    if (now() - t0 > 0.005) break;
    n *= 2;
  }
  std::vector<double> rates;
  for (int k = 0; k < 5; ++k) {
    const double t0 = now();
    compute(n);
    rates.push_back(static_cast<double>(n) / (now() - t0));
  }
  return median(rates);
}

// ---------------------------------------------------------------------------------------------
// One request with its receive buffer, on the alltoall workload's case (bench_core.hpp).

struct Req {
  explicit Req(const char* l) : label(l) {}
  const char* label;
  MPIX_Request req = MPIX_REQUEST_NULL;
  std::vector<unsigned char> recv;
};

// Collective: every byte of every rank's receive buffer; a wrong one anywhere aborts.
void verify(const Ctx& c, const Case& k, const Req& r, const std::string& what) {
  const long long bad = compare(c, k, r.recv, std::string(r.label) + " request, " + what);
  if (bad)
    fail_collectively(c, "WRONG RESULT (" + std::string(r.label) + " request, " + what +
                             "): " + std::to_string(bad) + " wrong bytes over all ranks");
}

void start_wait(const Ctx& c, Req& r) {
  check_rc(c, MPIX_Start(&r.req), "MPIX_Start", r.label);
  check_rc(c, MPIX_Wait(&r.req, MPI_STATUS_IGNORE), "MPIX_Wait", r.label);
}

// Median over iterations of the slowest rank's time, in microseconds (meaningful on rank 0).
double med_max_us(const Ctx& c, const std::vector<double>& t) {
  std::vector<double> mx(t.size());
  MPI_Reduce(t.data(), mx.data(), static_cast<int>(t.size()), MPI_DOUBLE, MPI_MAX, 0, c.comm);
  return median(mx) * 1e6;
}

struct Row {
  std::string algorithm;
  long long size = 0;
  double coll = 0, coll_thr = 0, comp = 0, comp_thr = 0, loop = 0, loop_thr = 0;
  double wait = 0, wait_thr = 0;  // the Wait after the compute: what was left to do
};

Row run(const Ctx& c, const OverlapOptions& o, const std::string& alg, long long block,
        double rate) {
  mpia_bench::Options wo;
  std::unique_ptr<Case> k = alltoall_workload().make_case(c, wo, "", block);
  const std::string where = "'" + alg + "' at " + std::to_string(block) + " bytes";
  Req plain("plain"), thr("thread");
  for (Req* r : {&plain, &thr}) {
    r->recv = k->poison;
    MPI_Info info;
    MPI_Info_create(&info);
    MPI_Info_set(info, MPIX_INFO_KEY_ALGORITHM, alg.c_str());
    if (r == &thr) MPI_Info_set(info, "mpix_progress", "thread");
    check_rc(c, k->ours_init(r->recv.data(), c.comm, info, &r->req), "MPIX_Alltoall_init", where);
    MPI_Info_free(&info);
  }
  g_watchdog.set_phase("check " + where);
  for (Req* r : {&plain, &thr}) {
    MPI_Barrier(c.comm);
    start_wait(c, *r);
    verify(c, *k, *r, "first run, " + where);
  }
  const int iters = o.iters, warm = o.warmup;
  Row row;
  row.algorithm = alg;
  row.size = block;

  // 2. The collective alone.
  g_watchdog.set_phase("collective alone, " + where);
  std::vector<double> tp, tt;
  for (int i = 0; i < warm + iters; ++i)
    for (int k = 0; k < 2; ++k) {
      Req& r = (k + i) % 2 ? thr : plain;
      MPI_Barrier(c.comm);
      const double t0 = now();
      start_wait(c, r);
      if (i >= warm) (&r == &plain ? tp : tt).push_back(now() - t0);
      g_watchdog.poke();
    }
  row.coll = med_max_us(c, tp);
  row.coll_thr = med_max_us(c, tt);
  double target = row.coll * 1e-6 * o.factor;
  MPI_Bcast(&target, 1, MPI_DOUBLE, 0, c.comm);
  long units = std::max(1L, static_cast<long>(target * rate));
  // The start-up calibration may have run at another speed (both ranks calibrating at once,
  // the machine's other load): rescale on the spot, twice, from the median of a few runs.
  for (int pass = 0; pass < 2 && target > 0; ++pass) {
    std::vector<double> t;
    for (int k = 0; k < 7; ++k) {
      const double t0 = now();
      compute(units);
      t.push_back(now() - t0);
    }
    const double m = median(t);
    if (m > 0) units = std::max(1L, static_cast<long>(static_cast<double>(units) * target / m));
  }

  // 3. The compute alone.
  g_watchdog.set_phase("compute alone, " + where);
  std::vector<double> tc;
  for (int i = 0; i < warm + iters; ++i) {
    MPI_Barrier(c.comm);
    const double t0 = now();
    compute(units);
    if (i >= warm) tc.push_back(now() - t0);
    g_watchdog.poke();
  }
  row.comp = med_max_us(c, tc);

  // 4. Start / compute / Wait, the two requests interleaved.
  g_watchdog.set_phase("Start / compute / Wait, " + where);
  plain.recv = k->poison;
  thr.recv = k->poison;
  std::vector<double> lp, lt, ct, wp, wt;
  for (int i = 0; i < warm + iters; ++i)
    for (int k = 0; k < 2; ++k) {
      Req& r = (k + i) % 2 ? thr : plain;
      MPI_Barrier(c.comm);
      const double t0 = now();
      check_rc(c, MPIX_Start(&r.req), "MPIX_Start", r.label);
      const double t1 = now();
      compute(units);
      const double t2 = now();
      check_rc(c, MPIX_Wait(&r.req, MPI_STATUS_IGNORE), "MPIX_Wait", r.label);
      const double t3 = now();
      if (i >= warm) {
        (&r == &plain ? lp : lt).push_back(t3 - t0);
        (&r == &plain ? wp : wt).push_back(t3 - t2);
        if (&r == &thr) ct.push_back(t2 - t1);
      }
      g_watchdog.poke();
    }
  row.loop = med_max_us(c, lp);
  row.loop_thr = med_max_us(c, lt);
  row.comp_thr = med_max_us(c, ct);
  row.wait = med_max_us(c, wp);
  row.wait_thr = med_max_us(c, wt);
  g_watchdog.set_phase("final check, " + where);
  verify(c, *k, plain, "after the loops, " + where);
  verify(c, *k, thr, "after the loops, " + where);
  check_rc(c, MPIX_Request_free(&plain.req), "MPIX_Request_free", where);
  check_rc(c, MPIX_Request_free(&thr.req), "MPIX_Request_free", where);
  return row;
}

}  // namespace

int main(int argc, char** argv) {
  int provided = MPI_THREAD_SINGLE;
  MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided);
  Ctx c;
  c.prog = "mpia_bench_overlap";
  MPI_Comm_rank(MPI_COMM_WORLD, &c.rank);
  MPI_Comm_size(MPI_COMM_WORLD, &c.nprocs);
  const OverlapOptions o = parse_options(argc, argv, c.rank);
  MPI_Comm_dup(MPI_COMM_WORLD, &c.comm);
  MPI_Comm_set_errhandler(c.comm, MPI_ERRORS_RETURN);
  const std::string library = first_line_of_library_version();

  std::FILE* csv = nullptr;
  if (c.rank == 0 && !o.csv.empty()) {
    csv = std::fopen(o.csv.c_str(), "w");
    if (!csv) die(c, "cannot open CSV file '" + o.csv + "': " + std::strerror(errno));
    std::fprintf(csv,
                 "P,mpi_library,thread_level,compute,algorithm,size,iters,coll_us,"
                 "coll_thread_us,compute_us,compute_in_thread_loop_us,loop_plain_us,"
                 "loop_thread_us,wait_plain_us,wait_thread_us,ratio\n");
  }
  g_sleep = o.sleep;
  // Sleeps as short as tens of microseconds: no timer slack (50 us by default).
  if (g_sleep) prctl(PR_SET_TIMERSLACK, 1UL, 0UL, 0UL, 0UL);
  const double rate = calibrate();
  if (c.rank == 0) {
    std::printf("# mpia_bench_overlap (mpi-advance %d.%d.%d)  P=%d  MPI: %s\n", MPIA_VERSION_MAJOR,
                MPIA_VERSION_MINOR, MPIA_VERSION_PATCH, c.nprocs, library.c_str());
    std::printf("# thread level %s; iters=%d warmup=%d compute=%s compute-factor=%.2f\n",
                provided >= MPI_THREAD_MULTIPLE ? "MPI_THREAD_MULTIPLE"
                                                : "below MPI_THREAD_MULTIPLE (no progress thread)",
                o.iters, o.warmup, o.sleep ? "sleep" : "busy", o.factor);
    std::printf(
        "# times in us, median over iterations of the slowest rank. coll: Start+Wait "
        "alone; compute: the compute alone;\n# comp_thr: the same compute inside the "
        "threaded Start/compute/Wait; loop: Start+compute+Wait; wait: its final Wait "
        "(the\n# part of the collective not overlapped); ratio = loop_plain / "
        "loop_thread\n");
    std::printf("%-16s %8s %9s %9s %9s %9s %10s %10s %9s %9s %6s\n", "algorithm", "size", "coll",
                "coll_thr", "compute", "comp_thr", "loop_plain", "loop_thr", "wait_plain",
                "wait_thr", "ratio");
    std::fflush(stdout);
  }
  g_watchdog.start(o.watchdog_s, c.rank, c.prog);
  for (long long block : o.sizes) {
    for (const std::string& alg : o.algorithms) {
      const Row r = run(c, o, alg, block, rate);
      if (c.rank != 0) continue;
      const double ratio = r.loop_thr > 0 ? r.loop / r.loop_thr : 0;
      std::printf("%-16s %8lld %9.1f %9.1f %9.1f %9.1f %10.1f %10.1f %9.1f %9.1f %6.2f\n",
                  r.algorithm.c_str(), r.size, r.coll, r.coll_thr, r.comp, r.comp_thr, r.loop,
                  r.loop_thr, r.wait, r.wait_thr, ratio);
      std::fflush(stdout);
      if (csv) {
        std::fprintf(csv, "%d,%s,%d,%s,%s,%lld,%d,%.2f,%.2f,%.2f,%.2f,%.2f,%.2f,%.2f,%.2f,%.4f\n",
                     c.nprocs, csv_quote(library).c_str(), provided, o.sleep ? "sleep" : "busy",
                     csv_quote(r.algorithm).c_str(), r.size, o.iters, r.coll, r.coll_thr, r.comp,
                     r.comp_thr, r.loop, r.loop_thr, r.wait, r.wait_thr, ratio);
        std::fflush(csv);
      }
    }
  }
  g_watchdog.finish();
  if (csv) std::fclose(csv);
  MPI_Comm_free(&c.comm);
  MPI_Finalize();
  return 0;
}
