/*
 * workload_alltoall.cpp -- mpia_bench --collective alltoall: uniform blocks of `size` bytes to
 * every rank; block d of rank s holds pattern(s, d, i) (bench_core.hpp), so every rank knows
 * every byte it must receive.
 */
#include "bench_core.hpp"
#include "system_coll.h"

namespace mpia_bench {
namespace {

class AlltoallCase : public Case {
 public:
  int count = 0;
  int nprocs = 1;
  int sys_blocking(void* recv, MPI_Comm cm) override {
    return MPI_Alltoall(send.data(), count, MPI_BYTE, recv, count, MPI_BYTE, cm);
  }
  int sys_init(void* recv, MPI_Comm cm, MPI_Request* req) override {
    return mpia_bench_system_alltoall_init(send.data(), count, MPI_BYTE, recv, count, MPI_BYTE, cm,
                                           MPI_INFO_NULL, req);
  }
  int ours_blocking(void* recv, MPI_Comm cm) override {
    return MPIX_Alltoall(send.data(), count, MPI_BYTE, recv, count, MPI_BYTE, cm);
  }
  int ours_init(void* recv, MPI_Comm cm, MPI_Info info, MPIX_Request* req) override {
    return MPIX_Alltoall_init(send.data(), count, MPI_BYTE, recv, count, MPI_BYTE, cm, info, req);
  }
  std::string locate(std::size_t i) const override {
    return "block from rank " + std::to_string(i / count) + ", byte " + std::to_string(i % count);
  }
};

std::unique_ptr<Case> make(const Ctx& c, const Options&, const std::string&, long long size) {
  auto k = std::make_unique<AlltoallCase>();
  const std::size_t block = static_cast<std::size_t>(size);
  k->comm = c.comm;
  k->size = size;
  k->count = static_cast<int>(size);
  k->nprocs = c.nprocs;
  fill_send(k->send, c.rank, c.nprocs, block);
  fill_expected(k->expected, c.rank, c.nprocs, block);
  poison_recv(k->poison, c.rank, c.nprocs, block);
  k->msg_bytes = size;
  k->load_bytes = size * c.nprocs;
  k->reproduce = "--sizes " + std::to_string(size);
  return k;
}

std::map<std::string, std::vector<long long>> sweeps(int nprocs) {
  std::vector<long long> radices;
  for (int r = 2; r <= std::max(2, nprocs); ++r) radices.push_back(r);
  return {{"radix", radices}};
}

// The default sizes, OSU's osu_alltoall's: 1 B to 1 MiB, powers of two.
std::vector<long long> osu_sizes() {
  std::vector<long long> out;
  for (long long s = 1; s <= (1 << 20); s *= 2) out.push_back(s);
  return out;
}

}  // namespace

const Workload& alltoall_workload() {
  static const Workload w{"alltoall",
                          "alltoall",
                          "Alltoall",
                          "a2a",
                          "MPIX_ALLTOALL",
                          mpia_bench_system_pcoll_name,
                          osu_sizes(),
                          {1, 1024},
                          INT32_MAX,
                          {},
                          {},
                          false,
                          sweeps,
                          make};
  return w;
}

}  // namespace mpia_bench
