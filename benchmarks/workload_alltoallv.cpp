/*
 * workload_alltoallv.cpp -- mpia_bench --collective alltoallv: count patterns.
 *
 * Bytes from rank s to rank d: every pattern is a weight w(s, d) >= 0, scaled so that the P x P
 * blocks have mean B (--sizes), i.e. P*P*B bytes move in all, rounding each block down:
 * bytes(s, d) = floor(w(s, d) * P*P*B / sum of all weights). A rank computes only its own row and
 * column (O(P) memory and time); the sum of the weights is each rank's row sum, added up by
 * MPI_Allreduce and taken from rank 0 (MPI_Bcast), so both ends of a pair compute the same count.
 * Pseudo-random choices hash (--seed, s, d) with splitmix64:
 *   uniform    w = 1: every block B bytes (an alltoall through the v interface)
 *   random     w uniform in [0, 2) per (s, d)
 *   skewed     w = 1/(s+1): rank 0 the one heavy sender (H_P times the mean), high ranks send
 * little sparse     w = 1 when s/k == d/k, k = ceil(sqrt(P)): each rank talks only to the k ranks
 * of its row of a k-wide process grid power_law  w = x^4, x uniform in (0, 1] per (s, d) (issue 19:
 * floor(S x^4)): a few large blocks per rank, most of them small (the largest about 5 B) hotspot w
 * = 32 for the destinations d = 0 mod m, m = 2 ceil(sqrt(P)) (about sqrt(P)/2 "hot" ranks), 1 for
 * the others: a few ranks receive much more fft_xy     a HeFFTe-like pencil transpose: an nx x ny x
 * nz grid, (n, n+1, n+2) with n = round(cbrt(B P^2 / 16)) (16-byte complex values, mean block about
 * B), on a p1 x p2 process grid (p1 the largest divisor of P not above sqrt(P), p2 = P/p1);
 *              x-pencils (rank j + p1 k: all x, y part j of p1, z part k of p2) to y-pencils
 *              (rank i + p1 k: x part i of p1, all y, z part k): w = |x_i| |y_j| |z_k| within
 *              a group of p1 consecutive ranks (same k), 0 elsewhere; parts as even as integers
 *              allow, so blocks differ by a few per cent
 *   fft_yz     the next transpose: y-pencils (rank i + p1 k) to z-pencils (rank i + p1 j: x
 *              part i of p1, y part j of p2, all z): w = |x_i| |y_j| |z_k| within a group of p2
 *              ranks p1 apart (same i), so on many nodes every group spans nodes
 *   tuna       TuNA's inputs: rank s sends 0.99^pi_s(d) (times a common maximum) to d, pi_s a
 *              permutation of 0..P-1 per rank (pi_s(d) = (a_s d + b_s) mod P, a_s coprime to P,
 *              a_s and b_s from a hash of (seed, s))
 * Blocks lie in the buffers in reverse rank order with 8-byte gaps between them, so wrong
 * displacements show up; the gaps of the receive buffer must come back untouched.
 */
#include "bench_core.hpp"
#include "system_coll.h"

#include <climits>
#include <cmath>
#include <numeric>

namespace mpia_bench {
namespace {

constexpr std::size_t kGap = 8;           // bytes between two blocks in both buffers
constexpr unsigned char kGapByte = 0xA5;  // what the receive buffer's gaps hold and keep

std::uint64_t pair_hash(unsigned long long seed, int s, int d, std::uint64_t salt) {
  return mix64((seed + salt) * 0x9E3779B97F4A7C15ull ^
               mix64((static_cast<std::uint64_t>(unsigned(s)) << 32) | unsigned(d)));
}

// A uniform number in (0, 1] from a hash.
double unit(std::uint64_t h) {
  return static_cast<double>((h >> 11) + 1) * (1.0 / 9007199254740992.0);
}

// Part i of n split into p parts as evenly as integers allow.
long long part(long long n, long long p, long long i) { return n * (i + 1) / p - n * i / p; }

// The weights w(s, d) of one pattern on P ranks (see the header).
class Weights {
 public:
  Weights(const std::string& pat, int P, long long block, unsigned long long seed)
      : pat_(pat), P_(P), seed_(seed) {
    k_ = static_cast<int>(std::ceil(std::sqrt(static_cast<double>(P)) - 1e-9));
    for (int q = 1; q * q <= P; ++q)
      if (P % q == 0) p1_ = q;
    p2_ = P / p1_;
    const double cube = static_cast<double>(block) * P * P / 16.0;
    n_ = std::max<long long>(p2_, std::llround(std::cbrt(cube)));
  }

  double operator()(int s, int d) const {
    if (pat_ == "random")
      return 2.0 * static_cast<double>(pair_hash(seed_, s, d, 0) >> 11) / 9007199254740992.0;
    if (pat_ == "skewed") return 1.0 / (s + 1.0);
    if (pat_ == "sparse") return s / k_ == d / k_ ? 1.0 : 0.0;
    if (pat_ == "power_law") {
      const double x = unit(pair_hash(seed_, s, d, 1));
      return x * x * x * x;
    }
    if (pat_ == "hotspot") return d % (2 * k_) == 0 ? 32.0 : 1.0;
    if (pat_ == "fft_xy") {  // (j, k) -> (i, k)
      const int j = s % p1_, k = s / p1_, i = d % p1_;
      if (d / p1_ != k) return 0.0;
      return static_cast<double>(part(n_, p1_, i) * part(n_ + 1, p1_, j) * part(n_ + 2, p2_, k));
    }
    if (pat_ == "fft_yz") {  // (i, k) -> (i, j)
      const int i = s % p1_, k = s / p1_, j = d / p1_;
      if (d % p1_ != i) return 0.0;
      return static_cast<double>(part(n_, p1_, i) * part(n_ + 1, p2_, j) * part(n_ + 2, p2_, k));
    }
    if (pat_ == "tuna") return std::pow(0.99, static_cast<double>(tuna_rank(s, d)));
    return 1.0;
  }

 private:
  long long tuna_rank(int s, int d) const {
    const std::uint64_t h = pair_hash(seed_, s, -1, 2);
    long long a = 1 + static_cast<long long>(h % static_cast<std::uint64_t>(P_));
    while (std::gcd(a, static_cast<long long>(P_)) != 1) ++a;
    const long long b = static_cast<long long>((h >> 32) % static_cast<std::uint64_t>(P_));
    return (a * d + b) % P_;
  }

  std::string pat_;
  int P_, k_ = 1, p1_ = 1, p2_ = 1;
  long long n_ = 1;
  unsigned long long seed_;
};

// This rank's counts: bytes to every rank (its row) and from every rank (its column).
// Collective (the sum of the weights).
void make_counts(const Ctx& c, const std::string& pat, long long block, unsigned long long seed,
                 std::vector<int>& scounts, std::vector<int>& rcounts) {
  const int P = c.nprocs, me = c.rank;
  const Weights w(pat, P, block, seed);
  std::vector<double> row(static_cast<std::size_t>(P)), col(row.size());
  double mine = 0;
  for (int q = 0; q < P; ++q) {
    row[static_cast<std::size_t>(q)] = w(me, q);
    col[static_cast<std::size_t>(q)] = w(q, me);
    mine += row[static_cast<std::size_t>(q)];
  }
  double sum = 0;
  MPI_Allreduce(&mine, &sum, 1, MPI_DOUBLE, MPI_SUM, c.comm);
  MPI_Bcast(&sum, 1, MPI_DOUBLE, 0, c.comm);  // the same value on every rank, bit for bit
  const double scale = sum > 0 ? static_cast<double>(block) * P * P / sum : 0.0;
  auto count = [scale](double x) {
    double v = std::floor(x * scale);
    if (v > static_cast<double>(INT_MAX) / 2) v = static_cast<double>(INT_MAX) / 2;
    return static_cast<int>(v);
  };
  scounts.resize(row.size());
  rcounts.resize(row.size());
  for (std::size_t q = 0; q < row.size(); ++q) {
    scounts[q] = count(row[q]);
    rcounts[q] = count(col[q]);
  }
}

// Blocks in reverse rank order, a gap before each; false when the buffer passes INT_MAX.
bool layout(const std::vector<int>& counts, std::vector<int>& displs, std::size_t& total) {
  const int P = static_cast<int>(counts.size());
  displs.assign(P, 0);
  std::size_t off = 0;
  for (int r = P - 1; r >= 0; --r) {
    off += kGap;
    if (off > static_cast<std::size_t>(INT_MAX)) return false;
    displs[r] = static_cast<int>(off);
    off += static_cast<std::size_t>(counts[r]);
  }
  total = off + kGap;
  return total <= static_cast<std::size_t>(INT_MAX);
}

class AlltoallvCase : public Case {
 public:
  std::vector<int> scounts, sdispls, rcounts, rdispls;
  int sys_blocking(void* recv, MPI_Comm cm) override {
    return MPI_Alltoallv(send.data(), scounts.data(), sdispls.data(), MPI_BYTE, recv,
                         rcounts.data(), rdispls.data(), MPI_BYTE, cm);
  }
  int sys_init(void* recv, MPI_Comm cm, MPI_Request* req) override {
    return mpia_bench_system_alltoallv_init(send.data(), scounts.data(), sdispls.data(), MPI_BYTE,
                                            recv, rcounts.data(), rdispls.data(), MPI_BYTE, cm,
                                            MPI_INFO_NULL, req);
  }
  int ours_blocking(void* recv, MPI_Comm cm) override {
    return MPIX_Alltoallv(send.data(), scounts.data(), sdispls.data(), MPI_BYTE, recv,
                          rcounts.data(), rdispls.data(), MPI_BYTE, cm);
  }
  int ours_init(void* recv, MPI_Comm cm, MPI_Info info, MPIX_Request* req) override {
    return MPIX_Alltoallv_init(send.data(), scounts.data(), sdispls.data(), MPI_BYTE, recv,
                               rcounts.data(), rdispls.data(), MPI_BYTE, cm, info, req);
  }
  std::string locate(std::size_t i) const override {
    const int r = block_at(rcounts, rdispls, i);
    if (r < 0)
      return "a gap between blocks (offset " + std::to_string(i) + ", must stay untouched)";
    return "block from rank " + std::to_string(r) + ", byte " + std::to_string(i - rdispls[r]) +
           " of " + std::to_string(rcounts[r]);
  }
};

std::unique_ptr<Case> make(const Ctx& c, const Options& o, const std::string& pat, long long size) {
  auto k = std::make_unique<AlltoallvCase>();
  const int P = c.nprocs, rank = c.rank;
  k->comm = c.comm;
  k->pattern = pat;
  k->size = size;
  make_counts(c, pat, size, o.seed, k->scounts, k->rcounts);
  std::size_t send_bytes = 0, recv_bytes = 0;
  int fits =
      layout(k->scounts, k->sdispls, send_bytes) && layout(k->rcounts, k->rdispls, recv_bytes);
  int all_fit = 0;
  MPI_Allreduce(&fits, &all_fit, 1, MPI_INT, MPI_MIN, c.comm);
  if (!all_fit)
    die(c, "pattern " + pat + " at block size " + std::to_string(size) +
               " needs buffers above INT_MAX bytes");
  k->send.assign(send_bytes, 0x3C);
  k->expected.assign(recv_bytes, kGapByte);
  k->poison.assign(recv_bytes, kGapByte);
  for (int r = 0; r < P; ++r) {
    for (int i = 0; i < k->scounts[r]; ++i)
      k->send[k->sdispls[r] + i] = pattern(unsigned(rank), unsigned(r), std::size_t(i));
    for (int i = 0; i < k->rcounts[r]; ++i) {
      unsigned char e = pattern(unsigned(r), unsigned(rank), std::size_t(i));
      k->expected[k->rdispls[r] + i] = e;
      k->poison[k->rdispls[r] + i] = static_cast<unsigned char>(~e);
    }
  }
  k->msg_bytes = size;
  k->load_bytes = size * P;
  k->reproduce = "--patterns " + pat + " --sizes " + std::to_string(size) + " --seed " +
                 std::to_string(o.seed);
  return k;
}

std::map<std::string, std::vector<long long>> sweeps(int nprocs) {
  std::vector<long long> radices;
  for (int r : {3, 4, 8})
    if (r <= nprocs) radices.push_back(r);
  if (nprocs > 2 && nprocs != 3 && nprocs != 4 && nprocs != 8) radices.push_back(nprocs);
  return {{"radix", radices}, {"window", {1, 2, 4, 8, 16}}};
}

}  // namespace

const Workload& alltoallv_workload() {
  static const Workload w{
      "alltoallv",
      "alltoallv",
      "Alltoallv",
      "a2av",
      "MPIX_ALLTOALLV",
      mpia_bench_system_pcoll_v_name,
      {8, 512, 8192},
      {8, 512},
      1LL << 24,
      {"uniform", "random", "skewed", "sparse", "power_law", "hotspot", "fft_xy", "fft_yz", "tuna"},
      {"uniform", "random", "skewed", "sparse"},
      false,
      sweeps,
      make};
  return w;
}

}  // namespace mpia_bench
