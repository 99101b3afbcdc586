/*
 * bench_core.hpp -- the shared core of the benchmark drivers (mpia_bench, mpia_bench_overlap):
 * option parsing, the hang watchdog, the data pattern, result checking, statistics, and the
 * workload interface that mpia_bench's collectives (workload_*.cpp) implement.
 *
 * mpia_bench runs one collective's workload (--collective): for every configuration (pattern x
 * size) the workload builds a Case -- the communicator, the send buffer, the receive buffer every
 * rank expects (computed independently of any MPI library, gaps between blocks included) and the
 * four kinds of calls (the MPI library's blocking and persistent ones, mpi-advance's blocking and
 * persistent ones) -- and run_bench (bench_core.cpp) times every variant on it: the variants come
 * from mpi-advance's registry (MPIX_Algorithm_get) x the parameter sweeps.
 */
#ifndef MPIA_BENCH_CORE_HPP
#define MPIA_BENCH_CORE_HPP

#include "mpi_advance.h"

#include <mpi.h>

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

namespace mpia_bench {

// ---------------------------------------------------------------------------------------------
// Small helpers

std::vector<std::string> split(const std::string& s, char sep);  // empty items dropped
// Unsigned decimal with an optional k/K (1024) or m/M (1024^2) suffix.
bool parse_u64(const std::string& tok, unsigned long long& value);
// 64-bit mixer (splitmix64 finalizer): the source of every pseudo-random choice, so that the
// same seed gives the same numbers on every rank, run and MPI library.
std::uint64_t mix64(std::uint64_t h);
// The byte a correct all-to-all delivers at index i of the block from src to dst.
unsigned char pattern(unsigned src, unsigned dst, std::size_t i);
// A uniform all-to-all send buffer (block d holds pattern(rank, d, i)), the receive buffer a
// correct all-to-all leaves (block s holds pattern(s, rank, i)), and one with every byte wrong.
void fill_send(std::vector<unsigned char>& buf, int rank, int nprocs, std::size_t block);
void fill_expected(std::vector<unsigned char>& buf, int rank, int nprocs, std::size_t block);
void poison_recv(std::vector<unsigned char>& buf, int rank, int nprocs, std::size_t block);
std::string mpi_error_string(int rc);
std::string csv_quote(const std::string& s);
std::string first_line_of_library_version();
double median(std::vector<double> v);  // 0 for an empty vector
std::string fmt(const char* format, double v);
std::string fmt_ratio(double num, double den, const char* format = "%.3f");  // "-" if den <= 0
// The block (index into counts/displs) that holds element i of a v-collective's buffer; -1
// when i lies in a gap between blocks.
int block_at(const std::vector<int>& counts, const std::vector<int>& displs, std::size_t i);
// The selection a request runs, every parameter resolved (MPIX_Request_get_algorithm).
int request_algorithm(MPIX_Request req, std::string& out);

// A thread (making no MPI calls) that ends the process when an iteration makes no progress.
struct Watchdog {
  std::atomic<long long> stamp_ns{0};
  std::mutex mu;
  std::condition_variable cv;
  bool stop = false;
  std::string phase = "startup";
  std::mutex phase_mu;
  std::thread th;
  double limit_s = 0;
  int rank = 0;
  std::string prog;

  void set_phase(const std::string& p);
  void poke();
  void start(double limit, int r, const std::string& program);
  void finish();
};
extern Watchdog g_watchdog;

// ---------------------------------------------------------------------------------------------
// Option parsing: one loop over argv shared by every driver.

class Args {
 public:
  Args(int argc, char** argv, int rank, std::string prog, std::string usage);
  bool next();  // the next option; false at the end
  bool is(const char* name) const { return opt_ == name; }
  const std::string& option() const { return opt_; }
  std::string value();  // the option's value ("--x=v" or the next argument)
  unsigned long long count(unsigned long long lo, unsigned long long hi);
  double number(double lo, double hi = 1e12);
  // Comma list of sizes with k/M suffixes, each in [1, hi].
  std::vector<long long> sizes(long long hi);
  // Comma list of integers and ranges ("2,4,8" or "2-6"), each >= lo; "none" is empty.
  std::vector<long long> int_list(long long lo);
  [[noreturn]] void help();
  [[noreturn]] void error(const std::string& msg);
  [[noreturn]] void unknown() { error("unknown argument '" + opt_ + "'"); }

 private:
  int argc_;
  char** argv_;
  int rank_;
  int i_ = 0;
  std::string prog_, usage_, opt_, value_;
  bool has_value_ = false;
};

// ---------------------------------------------------------------------------------------------
// Context, failures, checking

struct Ctx {
  MPI_Comm comm = MPI_COMM_NULL;  // duplicate of MPI_COMM_WORLD, errors return
  int rank = 0;
  int nprocs = 1;
  int nnodes = 1;
  std::string prog;
  std::string mpi_library;
};

[[noreturn]] void die(const Ctx& c, const std::string& msg);  // this rank alone: abort all
void check_rc(const Ctx& c, int rc, const std::string& call, const std::string& where);
// Collective: rank 0 prints msg and aborts everybody.
[[noreturn]] void fail_collectively(const Ctx& c, const std::string& msg);

// One configuration of a workload. Buffers are bytes; a workload that moves doubles sets elem.
class Case {
 public:
  virtual ~Case();
  MPI_Comm comm = MPI_COMM_NULL;  // the communicator of the calls (freed by the destructor
                                  // when owns_comm)
  bool owns_comm = false;
  std::string pattern;                      // "" when the collective has one pattern
  long long size = 0;                       // block bytes (average for alltoallv) or n (neighbor)
  std::string header;                       // printed (rank 0) before the case's rows, if any
  std::string reference = "expected data";  // what every result is checked against
  bool degenerate = false;                  // system results only noted when they deviate
  std::size_t elem = 1;                     // bytes per element of the calls' datatype
  std::vector<unsigned char> send, expected, poison;
  // --timing-only: the receive buffer of every call (the driver's; expected and poison empty).
  unsigned char* timing_recv = nullptr;
  // The receive buffer of a call: own (a copy of poison), or timing_recv.
  unsigned char* recv_of(std::vector<unsigned char>& own) const {
    return timing_recv != nullptr ? timing_recv : own.data();
  }
  long long load_bytes = 0;  // the most bytes a rank sends (same on every rank)
  // The message size of OSU's defaults (Options::iters, warmup): a block's bytes (alltoall;
  // alltoallv: the mean block), the largest of the ranks' mean message (neighbor)
  long long msg_bytes = 0;
  std::string reproduce;  // options that rebuild this case
  double noise_us = 0;    // the arrival noise's mean at this case (--noise, --noise-rel)

  virtual int sys_blocking(void* recv, MPI_Comm cm) = 0;
  virtual int sys_init(void* recv, MPI_Comm cm, MPI_Request* req) = 0;
  virtual int ours_blocking(void* recv, MPI_Comm cm) = 0;
  virtual int ours_init(void* recv, MPI_Comm cm, MPI_Info info, MPIX_Request* req) = 0;
  // Where element index i of the receive buffer lies ("block from rank 3, byte 5 of 8").
  virtual std::string locate(std::size_t i) const = 0;
  // An element of a buffer, printed.
  virtual std::string show(const unsigned char* p) const;
  // cm, a duplicate of comm that a variant used, is about to be freed.
  virtual void release(MPI_Comm) {}
};

// Collective: compare got with the case's expected buffer on every rank; returns the number of
// wrong elements over all ranks. Unless quiet, each rank with a difference describes its first.
long long compare(const Ctx& c, const Case& k, const std::vector<unsigned char>& got,
                  const std::string& what, bool quiet = false);

// ---------------------------------------------------------------------------------------------
// mpia_bench: options, workloads, the run

struct Options {
  std::string collective = "alltoall";
  std::vector<long long> sizes;       // empty: the workload's default
  std::vector<std::string> patterns;  // empty: the workload's default
  // --iters, --warmup; 0 / -1: OSU Micro-Benchmarks' defaults (osu_alltoall), by the case's
  // message size (Case::msg_bytes): up to 8 KiB 1000 timed iterations after 200 warm-up
  // starts, above 100 after 10.
  int iters = 0;
  int warmup = -1;
  int settle = -1;  // --settle N; -1: max(50, 2 * warmup)
  int rounds = 1;
  bool iters_given = false, warmup_given = false;
  // --trial-warmup N: after its --warmup starts, a persistent request of ours whose measured
  // trial (auto) has not settled keeps starting, untimed, until it has (at most N more): the
  // timed iterations run the settled plan. 0: they may run the trial.
  int trial_warmup = 241;
  // --warmup-until-settled (simulations): --warmup only bounds the warm-up of a persistent
  // request of ours, which ends at the start after its trial settled (at once without a
  // trial); the MPI library's calls and the blocking variants still warm up --warmup starts. A
  // simulation then times the settled plan without simulating --warmup starts of every
  // algorithm. No --trial-warmup then.
  bool warmup_until_settled = false;
  // --warmup-others N (with --warmup-until-settled): the warm-up of the MPI library's calls and
  // the blocking variants instead of --warmup's (-1: --warmup's). In a simulation nothing warms
  // up; --warmup must stay large enough for a trial to settle.
  int warmup_others = -1;
  std::vector<std::string> variant_patterns;             // empty: the default set
  std::map<std::string, std::vector<long long>> sweeps;  // parameter -> values
  std::string csv;
  double watchdog_s = 120.0;
  // --time-limit SEC: the whole run aims to end within SEC seconds (like IMB's -time): where the
  // planned timed iterations (then warm-up starts beyond 1) of a (case, variant, round) would not
  // fit its share of the time left, fewer run, and the output says which; 0: no limit.
  double time_limit_s = 0;
  double imbalance_us = 0;
  // --noise US: before every start of every variant (its first run, warm-up, timed iterations),
  // each rank waits a seeded heavy-tailed delay of mean US (arrival noise); 0: none.
  double noise_us = 0;
  // --noise-rel F: the same, of mean F x the time of MPI_<Call> at the case (measured: the
  // median over 5 barrier-separated calls of the slowest rank's time, noise-free).
  double noise_rel = 0;
  // --check-every (default): the send data change before every start and every received byte
  // is checked after it (a stale-data bug shows); --check-ends: the first run and the timed
  // iterations' last result only, the send data fixed.
  bool check_every = true;
  // --timing-only: no result is checked and one receive buffer serves every variant; under
  // SimGrid's SMPI every simulated rank shares it (SMPI_SHARED_MALLOC), so that the lab can run
  // points whose buffers do not fit in one process's memory.
  bool timing_only = false;
  // --jitter J (SimGrid SMPI builds only): every message's latency, the MPI library's own
  // collectives' included, times 1 + a seeded heavy-tailed draw of mean J; 0: none.
  double jitter = 0;
  // --lat-factor SPEC: the latency factors the jitter multiplies, SimGrid's smpi/lat-factor
  // syntax ("bound:factor;..."; a message of size >= bound takes the first such factor from the
  // right) -- the callback replaces SimGrid's own, which smpirun must then not set.
  std::string lat_factor = "0:1";
  unsigned long long seed = 20240601ull;
  std::string periodic = "auto";
  int degree = 16;                  // neighbor "random": neighbours per rank (expected)
  std::string placement = "block";  // neighbor stencils: grid position -> rank (block, scattered)
  bool quick = false;
  bool list_only = false;
  // --no-baseline: MPI_<Call> does not run (a simulation that keeps no baseline row: at P = 1024
  // the library's own alltoall(v) posts P^2 messages per call, most of such a simulation's time)
  bool no_baseline = false;
};

struct Workload {
  const char* collective;  // --collective and the registry's name ("neighbor_alltoallv")
  const char* registry;
  const char* call;                   // "Alltoall": MPI_<call>, MPI_<call>_init, MPIX_<call>
  const char* abbrev;                 // "a2a": column names of the summary
  const char* env;                    // the environment variable of the selection (MPIX_ALLTOALL)
  const char* (*system_init_name)();  // the system persistent call this build has, or null
  std::vector<long long> default_sizes, quick_sizes;
  long long max_size;
  std::vector<std::string> all_patterns;  // empty: one unnamed pattern
  std::vector<std::string> default_patterns;
  bool blocking_per_algorithm;  // default set: blk:<name> instead of MPIX_<call>
  // Default values of the parameter sweeps (radix, window, ...), for P ranks.
  std::map<std::string, std::vector<long long>> (*default_sweeps)(int nprocs);
  std::unique_ptr<Case> (*make_case)(const Ctx& c, const Options& o, const std::string& pattern,
                                     long long size);
};

const Workload& alltoall_workload();
const Workload& alltoallv_workload();
const Workload& neighbor_workload();

// mpia_bench's whole run (between MPI_Init and MPI_Finalize); returns the exit code.
int run_bench(int argc, char** argv);

}  // namespace mpia_bench

#endif
