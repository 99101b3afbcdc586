/* A probe of the MPI library, not of mpi-advance (src/operation/attach.hpp relies on what it
 * shows): does MPI_Comm_idup survive other nonblocking collectives the program starts on the
 * same communicator while the duplicate is being made, as MPI allows? Open MPI 4.1's does not
 * (it agrees on the new communicator's context id by rounds of MPI_Iallreduce on the parent,
 * posted from its progress engine: a rank that progressed the idup before starting the other
 * collectives orders them differently from one that did not), so the library never begins an
 * attach inside a nonblocking call there. ctest expects this program to fail under Open MPI (a
 * hang, cut by the alarm: exit 3) and to pass elsewhere: when a new Open MPI passes it, the
 * workaround can go.
 *
 * 200 rounds on MPI_COMM_WORLD: MPI_Comm_idup, ranks going different ways (even ranks drive the
 * idup with MPI_Test, odd ones sleep), then MPI_Iallreduce and MPI_Ibcast, all three completed
 * by MPI_Waitall; the results are checked. */
#include <mpi.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

static void on_alarm(int sig) {
  (void)sig;
  static const char msg[] = "idup_overlap: not done in 10 s (a hang)\n";
  if (write(2, msg, sizeof msg - 1) < 0) _exit(4);
  _exit(3);
}

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  int rank, size;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  signal(SIGALRM, on_alarm);
  alarm(10);
  int errors = 0;
  for (int round = 0; round < 200; ++round) {
    MPI_Comm dup;
    MPI_Request r[3];
    int mine = rank, sum = -1, b = rank == 0 ? round : -1, flag = 0;
    MPI_Comm_idup(MPI_COMM_WORLD, &dup, &r[0]);
    if ((rank + round) % 2) {
      usleep(1000);
    } else {
      MPI_Test(&r[0], &flag, MPI_STATUS_IGNORE);
      usleep(500);
      if (!flag) MPI_Test(&r[0], &flag, MPI_STATUS_IGNORE);
    }
    MPI_Iallreduce(&mine, &sum, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD, &r[1]);
    MPI_Ibcast(&b, 1, MPI_INT, 0, MPI_COMM_WORLD, &r[2]);
    MPI_Status st[3];
    MPI_Waitall(3, r, st);
    errors += sum != size * (size - 1) / 2 || b != round;
    MPI_Comm_free(&dup);
  }
  alarm(0);
  int total = 0;
  MPI_Allreduce(&errors, &total, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
  if (rank == 0) printf(total ? "idup_overlap: %d wrong results\n" : "PASS\n", total);
  MPI_Finalize();
  return total ? 1 : 0;
}
