/*
 * mpia_bench_nonblocking -- what a nonblocking call costs: MPIX_Ialltoall + MPIX_Wait against
 * the same plan as a persistent request (MPIX_Start + MPIX_Wait; info mpix_auto=model, so that
 * auto picks what the nonblocking call picks) and against the MPI library's MPI_Ialltoall +
 * MPI_Wait, side by side on the same buffers, iteration by iteration interleaved (which goes
 * first rotates). Each iteration starts after an MPI_Barrier; its time is the slowest rank's; a
 * column is the median over iterations. Every received byte is checked after each variant's
 * last iteration.
 *
 *   mpiexec -n 2 mpia_bench_nonblocking [--sizes 8,64,512,4096] [--iters 2000] [--warmup 50]
 *                                        [--algorithm S]
 *
 * --algorithm S: the communicator's choice for both of ours (MPIX_Comm_set_algorithm), e.g.
 * linear; default auto.
 */
#include "bench_core.hpp"

#include <algorithm>
#include <cstdio>
#include <string>
#include <vector>

namespace {

using namespace mpia_bench;

const char* const kUsage =
    "usage: mpia_bench_nonblocking [options]\n"
    "  --sizes LIST     block sizes in bytes per destination (default 8,64,512,4096)\n"
    "  --iters N        timed iterations of each variant (default 2000)\n"
    "  --warmup N       untimed iterations of each variant first (default 50)\n"
    "  --algorithm S    the communicator's algorithm for ours (default auto)\n"
    "  --help           this text\n";

struct NbOptions {
  std::vector<long long> sizes{8, 64, 512, 4096};
  int iters = 2000, warmup = 50;
  std::string algorithm;
};

}  // namespace

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  Ctx c;
  c.prog = "mpia_bench_nonblocking";
  MPI_Comm_rank(MPI_COMM_WORLD, &c.rank);
  MPI_Comm_size(MPI_COMM_WORLD, &c.nprocs);
  NbOptions o;
  Args a(argc, argv, c.rank, c.prog, kUsage);
  while (a.next()) {
    if (a.is("--help") || a.is("-h"))
      a.help();
    else if (a.is("--sizes"))
      o.sizes = a.sizes(1 << 24);
    else if (a.is("--iters"))
      o.iters = int(a.count(1, 100000000));
    else if (a.is("--warmup"))
      o.warmup = int(a.count(0, 100000000));
    else if (a.is("--algorithm"))
      o.algorithm = a.value();
    else
      a.unknown();
  }
  MPI_Comm_dup(MPI_COMM_WORLD, &c.comm);
  MPI_Comm_set_errhandler(c.comm, MPI_ERRORS_RETURN);
  if (!o.algorithm.empty())
    check_rc(c, MPIX_Comm_set_algorithm(c.comm, "alltoall", o.algorithm.c_str()),
             "MPIX_Comm_set_algorithm", o.algorithm);
  const int P = c.nprocs;
  if (c.rank == 0) {
    std::printf("# mpia_bench_nonblocking  P=%d  MPI: %s  algorithm: %s\n", P,
                first_line_of_library_version().c_str(),
                o.algorithm.empty() ? "auto" : o.algorithm.c_str());
    std::printf(
        "# us, median over %d iterations of the slowest rank; ratios: MPIX_Ialltoall over "
        "the others\n",
        o.iters);
    std::printf("%8s %-24s %14s %14s %14s %10s %10s\n", "bytes", "runs", "MPIX_Ialltoall",
                "persistent", "MPI_Ialltoall", "/persist", "/MPI");
  }
  for (long long B : o.sizes) {
    const std::size_t n = std::size_t(B) * std::size_t(P);
    std::vector<unsigned char> send(n), recv(n), expected(n);
    fill_send(send, c.rank, P, std::size_t(B));
    fill_expected(expected, c.rank, P, std::size_t(B));
    MPI_Info info;
    MPI_Info_create(&info);
    MPI_Info_set(info, "mpix_auto", "model");
    MPIX_Request persistent = MPIX_REQUEST_NULL;
    check_rc(c,
             MPIX_Alltoall_init(send.data(), int(B), MPI_BYTE, recv.data(), int(B), MPI_BYTE,
                                c.comm, info, &persistent),
             "MPIX_Alltoall_init", "");
    MPI_Info_free(&info);
    char runs[MPIX_MAX_ALGORITHM_STRING];
    int len = 0;
    MPIX_Request_get_algorithm(persistent, runs, &len);
    // 0: MPIX_Ialltoall, 1: persistent, 2: MPI_Ialltoall.
    auto once = [&](int v) {
      int rc;
      if (v == 0) {
        MPIX_Request r;
        rc = MPIX_Ialltoall(send.data(), int(B), MPI_BYTE, recv.data(), int(B), MPI_BYTE, c.comm,
                            &r);
        if (rc == MPI_SUCCESS) rc = MPIX_Wait(&r, MPI_STATUS_IGNORE);
      } else if (v == 1) {
        rc = MPIX_Start(&persistent);
        if (rc == MPI_SUCCESS) rc = MPIX_Wait(&persistent, MPI_STATUS_IGNORE);
      } else {
        MPI_Request r;
        rc =
            MPI_Ialltoall(send.data(), int(B), MPI_BYTE, recv.data(), int(B), MPI_BYTE, c.comm, &r);
        if (rc == MPI_SUCCESS) rc = MPI_Wait(&r, MPI_STATUS_IGNORE);
      }
      check_rc(c, rc, v == 0 ? "MPIX_Ialltoall" : v == 1 ? "MPIX_Start" : "MPI_Ialltoall", "");
    };
    for (int v = 0; v < 3; ++v)
      for (int i = 0; i < o.warmup; ++i) once(v);
    std::vector<double> t[3];
    std::vector<double> mine(3 * std::size_t(o.iters)), slowest(mine.size());
    for (int i = 0; i < o.iters; ++i)
      for (int k = 0; k < 3; ++k) {
        const int v = (i + k) % 3;
        MPI_Barrier(c.comm);
        const double t0 = MPI_Wtime();
        once(v);
        mine[std::size_t(3 * i + v)] = MPI_Wtime() - t0;
      }
    MPI_Reduce(mine.data(), slowest.data(), int(mine.size()), MPI_DOUBLE, MPI_MAX, 0, c.comm);
    for (int i = 0; i < o.iters; ++i)
      for (int v = 0; v < 3; ++v) t[v].push_back(slowest[std::size_t(3 * i + v)] * 1e6);
    // Every byte of one more call of each, on a poisoned receive buffer.
    for (int v = 0; v < 3; ++v) {
      poison_recv(recv, c.rank, P, std::size_t(B));
      once(v);
      long long wrong = 0;
      for (std::size_t i = 0; i < n; ++i) wrong += recv[i] != expected[i];
      MPI_Allreduce(MPI_IN_PLACE, &wrong, 1, MPI_LONG_LONG, MPI_SUM, c.comm);
      if (wrong)
        fail_collectively(c, "WRONG RESULT: " + std::to_string(wrong) + " bytes at " +
                                 std::to_string(B) + " B (variant " + std::to_string(v) + ")");
    }
    MPIX_Request_free(&persistent);
    if (c.rank == 0) {
      const double ib = median(t[0]), pb = median(t[1]), mb = median(t[2]);
      std::printf("%8lld %-24s %14.2f %14.2f %14.2f %10s %10s\n", B, runs, ib, pb, mb,
                  fmt_ratio(ib, pb, "%.3f").c_str(), fmt_ratio(ib, mb, "%.3f").c_str());
    }
  }
  MPI_Comm_free(&c.comm);
  MPI_Finalize();
  return 0;
}
