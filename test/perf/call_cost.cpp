// perf.call_cost's program: one call of each variant at a time under callgrind, on rank 0 of
// two (rank 0 runs under valgrind --collect-atstart=no, rank 1 natively; run_call_cost.sh
// launches both). Variants, at blocks of 1, 8 and 256 bytes:
//   MPIX_Alltoall   a blocking call on MPI_BYTE (the default algorithm: auto)
//   linear, auto    MPIX_Start + MPIX_Wait of a persistent request of that algorithm
// Each variant first runs 40 calls (past any measured trial: at most 20 calls), then `reps`
// measured calls, each after a barrier and a pause that lets rank 1's message arrive, so the
// count is this rank's local work for one call whose peer is on time. Every measured call is
// one callgrind dump named "<variant>@<block>#<n>". Results are checked after the calls.
//
//   mpia_test_call_cost [reps]
#include "mpi_advance.h"

#include <mpi.h>
#include <unistd.h>
#include <valgrind/callgrind.h>

#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

namespace {

int g_rank = 0, g_size = 1;

void check(int rc, const char* what) {
  if (rc == MPI_SUCCESS) return;
  std::fprintf(stderr, "call_cost: rank %d: %s failed (%d)\n", g_rank, what, rc);
  MPI_Abort(MPI_COMM_WORLD, 3);
}

unsigned char value(int src, int dst, int i) {
  return static_cast<unsigned char>((src * 131 + dst * 31 + i * 7 + 1) & 0xff);
}

}  // namespace

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  MPI_Comm comm;
  MPI_Comm_dup(MPI_COMM_WORLD, &comm);
  MPI_Comm_rank(comm, &g_rank);
  MPI_Comm_size(comm, &g_size);
  const int reps = argc > 1 ? std::atoi(argv[1]) : 3, warm = 40;
  for (int block : {1, 8, 256}) {
    std::vector<unsigned char> send(std::size_t(block * g_size)), recv(send.size());
    for (int d = 0; d < g_size; ++d)
      for (int i = 0; i < block; ++i) send[std::size_t(d * block + i)] = value(g_rank, d, i);
    for (const std::string variant : {"MPIX_Alltoall", "linear", "auto"}) {
      const bool blocking = variant == "MPIX_Alltoall";
      MPIX_Request q = MPIX_REQUEST_NULL;
      if (!blocking) {
        MPI_Info info;
        MPI_Info_create(&info);
        MPI_Info_set(info, MPIX_INFO_KEY_ALGORITHM, variant.c_str());
        check(MPIX_Alltoall_init(send.data(), block, MPI_BYTE, recv.data(), block, MPI_BYTE, comm,
                                 info, &q),
              "MPIX_Alltoall_init");
        MPI_Info_free(&info);
      }
      auto run = [&] {
        if (blocking) {
          check(MPIX_Alltoall(send.data(), block, MPI_BYTE, recv.data(), block, MPI_BYTE, comm),
                "MPIX_Alltoall");
        } else {
          check(MPIX_Start(&q), "MPIX_Start");
          check(MPIX_Wait(&q, MPI_STATUS_IGNORE), "MPIX_Wait");
        }
      };
      for (int n = 0; n < warm; ++n) run();
      for (int n = 0; n < reps; ++n) {
        MPI_Barrier(comm);
        if (g_rank == 0) {
          usleep(30000);  // rank 1's message is in by now: no polling for it
          const std::string name = variant + "@" + std::to_string(block) + "#" + std::to_string(n);
          CALLGRIND_TOGGLE_COLLECT;
          run();
          CALLGRIND_TOGGLE_COLLECT;
          CALLGRIND_DUMP_STATS_AT(name.c_str());
        } else {
          run();
        }
      }
      for (int s = 0; s < g_size; ++s)
        for (int i = 0; i < block; ++i)
          if (recv[std::size_t(s * block + i)] != value(s, g_rank, i)) {
            std::fprintf(stderr, "call_cost: rank %d: %s@%d: wrong byte from %d at %d\n", g_rank,
                         variant.c_str(), block, s, i);
            MPI_Abort(MPI_COMM_WORLD, 4);
          }
      if (q != MPIX_REQUEST_NULL) check(MPIX_Request_free(&q), "MPIX_Request_free");
    }
  }
  MPI_Comm_free(&comm);
  MPI_Finalize();
  return 0;
}
