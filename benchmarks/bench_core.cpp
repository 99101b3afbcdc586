/*
 * bench_core.cpp -- helpers, option parsing, the watchdog and result checking shared by the
 * benchmark drivers (see bench_core.hpp).
 */
#include "bench_core.hpp"

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <unistd.h>

namespace mpia_bench {

std::vector<std::string> split(const std::string& s, char sep) {
  std::vector<std::string> out;
  std::size_t start = 0;
  while (start <= s.size()) {
    std::size_t end = s.find(sep, start);
    if (end == std::string::npos) end = s.size();
    if (end > start) out.push_back(s.substr(start, end - start));
    start = end + 1;
  }
  return out;
}

bool parse_u64(const std::string& tok, unsigned long long& value) {
  if (tok.empty() || tok[0] == '-' || tok[0] == '+') return false;
  char* end = nullptr;
  errno = 0;
  unsigned long long v = std::strtoull(tok.c_str(), &end, 10);
  if (errno != 0 || end == tok.c_str()) return false;
  std::string suffix(end);
  if (suffix == "k" || suffix == "K")
    v *= 1024ull;
  else if (suffix == "m" || suffix == "M")
    v *= 1024ull * 1024ull;
  else if (!suffix.empty())
    return false;
  value = v;
  return true;
}

std::uint64_t mix64(std::uint64_t h) {
  h ^= h >> 30;
  h *= 0xBF58476D1CE4E5B9ull;
  h ^= h >> 27;
  h *= 0x94D049BB133111EBull;
  h ^= h >> 31;
  return h;
}

unsigned char pattern(unsigned src, unsigned dst, std::size_t i) {
  std::uint64_t h = (src + 1ull) * 0x9E3779B97F4A7C15ull ^ (dst + 1ull) * 0xC2B2AE3D27D4EB4Full ^
                    (i + 1ull) * 0x165667B19E3779F9ull;
  h ^= h >> 29;
  h *= 0xBF58476D1CE4E5B9ull;
  h ^= h >> 32;
  return static_cast<unsigned char>(h);
}

// Block p of buf (blocks of `block` bytes) from pattern(from(p), to(p), i), optionally inverted.
template <class F>
static void fill_blocks(std::vector<unsigned char>& buf, int nprocs, std::size_t block, F byte) {
  buf.resize(block * static_cast<std::size_t>(nprocs));
  for (int p = 0; p < nprocs; ++p)
    for (std::size_t i = 0; i < block; ++i) buf[p * block + i] = byte(unsigned(p), i);
}

void fill_send(std::vector<unsigned char>& buf, int rank, int nprocs, std::size_t block) {
  fill_blocks(buf, nprocs, block, [&](unsigned d, std::size_t i) { return pattern(rank, d, i); });
}

void fill_expected(std::vector<unsigned char>& buf, int rank, int nprocs, std::size_t block) {
  fill_blocks(buf, nprocs, block, [&](unsigned s, std::size_t i) { return pattern(s, rank, i); });
}

void poison_recv(std::vector<unsigned char>& buf, int rank, int nprocs, std::size_t block) {
  fill_blocks(buf, nprocs, block, [&](unsigned s, std::size_t i) {
    return static_cast<unsigned char>(~pattern(s, rank, i));
  });
}

std::string mpi_error_string(int rc) {
  char buf[MPI_MAX_ERROR_STRING];
  int len = 0;
  if (MPI_Error_string(rc, buf, &len) != MPI_SUCCESS) return "error " + std::to_string(rc);
  return std::string(buf, static_cast<std::size_t>(len)) + " (" + std::to_string(rc) + ")";
}

std::string csv_quote(const std::string& s) {
  std::string out = "\"";
  for (char ch : s) {
    if (ch == '"')
      out += "\"\"";
    else
      out += ch;
  }
  return out + "\"";
}

std::string first_line_of_library_version() {
  char buf[MPI_MAX_LIBRARY_VERSION_STRING];
  int len = 0;
  MPI_Get_library_version(buf, &len);
  buf[MPI_MAX_LIBRARY_VERSION_STRING - 1] = '\0';
  std::string s(buf, strnlen(buf, static_cast<std::size_t>(std::max(0, len))));
  auto nl = s.find('\n');
  if (nl != std::string::npos) s.resize(nl);
  for (char& ch : s)
    if (ch == '\t' || ch == '\r') ch = ' ';
  while (!s.empty() && s.back() == ' ') s.pop_back();
  std::string out;
  for (char ch : s)
    if (!(ch == ' ' && !out.empty() && out.back() == ' ')) out += ch;
  return out;
}

double median(std::vector<double> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  std::size_t n = v.size();
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

std::string fmt(const char* format, double v) {
  char b[64];
  std::snprintf(b, sizeof b, format, v);
  return b;
}

std::string fmt_ratio(double num, double den, const char* format) {
  return den > 0 ? fmt(format, num / den) : "-";
}

int block_at(const std::vector<int>& counts, const std::vector<int>& displs, std::size_t i) {
  for (std::size_t b = 0; b < counts.size(); ++b)
    if (i >= static_cast<std::size_t>(displs[b]) &&
        i < static_cast<std::size_t>(displs[b]) + static_cast<std::size_t>(counts[b]))
      return static_cast<int>(b);
  return -1;
}

int request_algorithm(MPIX_Request req, std::string& out) {
  char name[MPIX_MAX_ALGORITHM_STRING];
  int len = 0;
  int rc = MPIX_Request_get_algorithm(req, name, &len);
  if (rc != MPI_SUCCESS) return rc;
  name[MPIX_MAX_ALGORITHM_STRING - 1] = '\0';
  std::size_t n = std::min<std::size_t>(static_cast<std::size_t>(std::max(0, len)),
                                        MPIX_MAX_ALGORITHM_STRING - 1);
  out.assign(name, strnlen(name, n));
  return MPI_SUCCESS;
}

// ---------------------------------------------------------------------------------------------
// Watchdog

Watchdog g_watchdog;

static long long now_ns() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

void Watchdog::set_phase(const std::string& p) {
  {
    std::lock_guard<std::mutex> lk(phase_mu);
    phase = p;
  }
  poke();
}

void Watchdog::poke() { stamp_ns.store(now_ns(), std::memory_order_relaxed); }

void Watchdog::start(double limit, int r, const std::string& program) {
  limit_s = limit;
  rank = r;
  prog = program;
  poke();
  if (limit <= 0) return;
  th = std::thread([this] {
    std::unique_lock<std::mutex> lk(mu);
    while (!stop) {
      cv.wait_for(lk, std::chrono::seconds(1));
      if (stop) break;
      double idle = (now_ns() - stamp_ns.load(std::memory_order_relaxed)) * 1e-9;
      if (idle > limit_s) {
        std::lock_guard<std::mutex> plk(phase_mu);
        std::fprintf(stderr,
                     "%s: FATAL: rank %d made no progress for %.0f s in %s (hang?); "
                     "aborting\n",
                     prog.c_str(), rank, idle, phase.c_str());
        std::fflush(stderr);
        _exit(124);
      }
    }
  });
}

void Watchdog::finish() {
  {
    std::lock_guard<std::mutex> lk(mu);
    stop = true;
  }
  cv.notify_all();
  if (th.joinable()) th.join();
}

// ---------------------------------------------------------------------------------------------
// Args

Args::Args(int argc, char** argv, int rank, std::string prog, std::string usage)
    : argc_(argc), argv_(argv), rank_(rank), prog_(std::move(prog)), usage_(std::move(usage)) {}

bool Args::next() {
  if (++i_ >= argc_) return false;
  opt_ = argv_[i_];
  has_value_ = false;
  auto eq = opt_.find('=');
  if (opt_.rfind("--", 0) == 0 && eq != std::string::npos) {
    value_ = opt_.substr(eq + 1);
    opt_.resize(eq);
    has_value_ = true;
  }
  return true;
}

std::string Args::value() {
  if (has_value_) return value_;
  if (i_ + 1 >= argc_) error("option " + opt_ + " needs a value");
  return argv_[++i_];
}

unsigned long long Args::count(unsigned long long lo, unsigned long long hi) {
  std::string tok = value();
  unsigned long long v = 0;
  if (!parse_u64(tok, v) || v < lo || v > hi)
    error("bad value '" + tok + "' for " + opt_ + " (" + std::to_string(lo) + ".." +
          std::to_string(hi) + ")");
  return v;
}

double Args::number(double lo, double hi) {
  std::string tok = value();
  char* end = nullptr;
  double v = std::strtod(tok.c_str(), &end);
  if (end == tok.c_str() || *end != '\0' || !(v >= lo) || v > hi)
    error("bad value '" + tok + "' for " + opt_);
  return v;
}

std::vector<long long> Args::sizes(long long hi) {
  std::vector<long long> out;
  for (const auto& tok : split(value(), ',')) {
    unsigned long long v = 0;
    if (!parse_u64(tok, v) || v == 0 || v > static_cast<unsigned long long>(hi))
      error("bad size '" + tok + "' (1.." + std::to_string(hi) + ")");
    out.push_back(static_cast<long long>(v));
  }
  if (out.empty()) error(opt_ + " is empty");
  return out;
}

std::vector<long long> Args::int_list(long long lo) {
  std::vector<long long> out;
  std::string list = value();
  if (list == "none") return out;
  for (const auto& tok : split(list, ',')) {
    auto dash = tok.find('-');
    unsigned long long a = 0, b = 0;
    bool ok = dash == std::string::npos
                  ? (parse_u64(tok, a) && (b = a, true))
                  : (parse_u64(tok.substr(0, dash), a) && parse_u64(tok.substr(dash + 1), b));
    if (!ok || a < static_cast<unsigned long long>(lo) || b < a || b > 1000000ull)
      error("bad value '" + tok + "' for " + opt_ + " (at least " + std::to_string(lo) + ")");
    for (unsigned long long r = a; r <= b; ++r) out.push_back(static_cast<long long>(r));
  }
  return out;
}

void Args::help() {
  if (rank_ == 0) std::fputs(usage_.c_str(), stdout);
  MPI_Finalize();
  std::exit(0);
}

void Args::error(const std::string& msg) {
  if (rank_ == 0) std::fprintf(stderr, "%s: %s\n%s", prog_.c_str(), msg.c_str(), usage_.c_str());
  MPI_Finalize();
  std::exit(2);
}

// ---------------------------------------------------------------------------------------------
// Failures and checking

void die(const Ctx& c, const std::string& msg) {
  std::fprintf(stderr, "%s: FATAL (rank %d): %s\n", c.prog.c_str(), c.rank, msg.c_str());
  std::fflush(stderr);
  MPI_Abort(MPI_COMM_WORLD, 3);
  std::exit(3);
}

void check_rc(const Ctx& c, int rc, const std::string& call, const std::string& where) {
  if (rc != MPI_SUCCESS) die(c, call + " failed (" + where + "): " + mpi_error_string(rc));
}

void fail_collectively(const Ctx& c, const std::string& msg) {
  MPI_Barrier(c.comm);  // let every rank's own report reach stderr first
  if (c.rank == 0) {
    std::fprintf(stderr, "%s: FATAL: %s\n", c.prog.c_str(), msg.c_str());
    std::fflush(stderr);
    MPI_Abort(MPI_COMM_WORLD, 4);
  }
  MPI_Barrier(c.comm);  // rank 0 aborts everybody
  std::exit(4);
}

Case::~Case() {
  if (owns_comm && comm != MPI_COMM_NULL) MPI_Comm_free(&comm);
}

std::string Case::show(const unsigned char* p) const {
  std::string s = "0x";
  char b[4];
  for (std::size_t i = 0; i < elem; ++i) {
    std::snprintf(b, sizeof b, "%02x", static_cast<unsigned>(p[i]));
    s += b;
  }
  return s;
}

long long compare(const Ctx& c, const Case& k, const std::vector<unsigned char>& got,
                  const std::string& what, bool quiet) {
  long long bad = 0;
  std::size_t first = 0;
  const std::size_t n = std::min(got.size(), k.expected.size()) / k.elem;
  if (got.size() != k.expected.size()) bad = 1;
  for (std::size_t i = 0; i < n; ++i)
    if (std::memcmp(&got[i * k.elem], &k.expected[i * k.elem], k.elem) != 0) {
      if (bad == 0) first = i;
      ++bad;
    }
  long long total = 0;
  MPI_Allreduce(&bad, &total, 1, MPI_LONG_LONG, MPI_SUM, c.comm);
  if (bad > 0 && !quiet) {
    std::fprintf(stderr,
                 "%s: rank %d: %s: %lld wrong elements of %zu bytes; first: %s: got %s, "
                 "expected %s\n",
                 c.prog.c_str(), c.rank, what.c_str(), bad, k.elem, k.locate(first).c_str(),
                 k.show(&got[first * k.elem]).c_str(), k.show(&k.expected[first * k.elem]).c_str());
    std::fflush(stderr);
  }
  return total;
}

}  // namespace mpia_bench
