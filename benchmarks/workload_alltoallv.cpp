/*
 * workload_alltoallv.cpp -- mpia_bench --collective alltoallv: count patterns.
 *
 * Bytes from rank s to rank d; every rank computes the whole P x P matrix from the pattern, the
 * average block size B (--sizes) and --seed; the matrix is scaled so that its mean is B, i.e.
 * P*P*B bytes move in all, rounding down:
 *   uniform  every block B bytes (an alltoall through the v interface)
 *   random   independent uniform weights in [0,2) per (s,d), seeded
 *   skewed   power law over senders: rank s sends in proportion to 1/(s+1), so rank 0 is the
 *            one heavy sender (H_P times the mean) and high ranks send little
 *   sparse   each rank talks only to the k = ceil(sqrt(P)) ranks of its row of a k-wide
 *            process grid (s/k == d/k), as in a pencil-to-pencil FFT reshape (HeFFTe)
 * Blocks lie in the buffers in reverse rank order with 8-byte gaps between them, so wrong
 * displacements show up; the gaps of the receive buffer must come back untouched.
 */
#include "bench_core.hpp"
#include "system_coll.h"

#include <climits>
#include <cmath>

namespace mpia_bench {
namespace {

constexpr std::size_t kGap = 8;           // bytes between two blocks in both buffers
constexpr unsigned char kGapByte = 0xA5;  // what the receive buffer's gaps hold and keep

// counts[s * P + d]: bytes from s to d.
std::vector<int> make_matrix(const std::string& pat, int P, long long block,
                             unsigned long long seed) {
  std::vector<double> w(static_cast<std::size_t>(P) * P, 1.0);
  const int k = static_cast<int>(std::ceil(std::sqrt(static_cast<double>(P)) - 1e-9));
  for (int s = 0; s < P; ++s)
    for (int d = 0; d < P; ++d) {
      double& x = w[static_cast<std::size_t>(s) * P + d];
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
  const std::vector<int> matrix = make_matrix(pat, P, size, o.seed);
  k->scounts.resize(P);
  k->rcounts.resize(P);
  for (int r = 0; r < P; ++r) {
    k->scounts[r] = matrix[static_cast<std::size_t>(rank) * P + r];
    k->rcounts[r] = matrix[static_cast<std::size_t>(r) * P + rank];
  }
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
  static const Workload w{"alltoallv",
                          "alltoallv",
                          "Alltoallv",
                          "a2av",
                          "MPIX_ALLTOALLV",
                          mpia_bench_system_pcoll_v_name,
                          {8, 512, 8192},
                          {8, 512},
                          1LL << 24,
                          {"uniform", "random", "skewed", "sparse"},
                          {"uniform", "random", "skewed", "sparse"},
                          false,
                          sweeps,
                          make};
  return w;
}

}  // namespace mpia_bench
