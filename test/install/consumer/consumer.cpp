// Installed-package consumer test, C++. Built against an *installed* mpi-advance (CMake
// package or pkg-config) and run at 2 ranks. Exits non-zero on any wrong result.
#include <mpi_advance.h>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

namespace {

int errors = 0;

void expect(bool ok, const std::string& what) {
  if (!ok) {
    if (errors < 10) std::fprintf(stderr, "C++ consumer: %s\n", what.c_str());
    ++errors;
  }
}

// RAII over the C request, as a C++ user would write it.
class PersistentAlltoall {
 public:
  PersistentAlltoall(const std::vector<double>& send, std::vector<double>& recv, int count,
                     MPI_Comm comm, const char* algorithm) {
    MPI_Info info;
    MPI_Info_create(&info);
    MPI_Info_set(info, MPIX_INFO_KEY_ALGORITHM, algorithm);
    rc_ = MPIX_Alltoall_init(send.data(), count, MPI_DOUBLE, recv.data(), count, MPI_DOUBLE, comm,
                             info, &req_);
    MPI_Info_free(&info);
  }
  ~PersistentAlltoall() { MPIX_Request_free(&req_); }
  PersistentAlltoall(const PersistentAlltoall&) = delete;
  PersistentAlltoall& operator=(const PersistentAlltoall&) = delete;

  int init_rc() const { return rc_; }
  int run() {
    int rc = MPIX_Start(&req_);
    return rc != MPI_SUCCESS ? rc : MPIX_Wait(&req_, MPI_STATUS_IGNORE);
  }
  std::string algorithm() const {
    char name[MPIX_MAX_ALGORITHM_STRING];
    int len = 0;
    if (MPIX_Request_get_algorithm(req_, name, &len) != MPI_SUCCESS) return "?";
    return std::string(name, static_cast<std::size_t>(len));
  }

 private:
  MPIX_Request req_ = MPIX_REQUEST_NULL;
  int rc_ = MPI_SUCCESS;
};

}  // namespace

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  int rank = 0, size = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);

  const int count = 5;
  std::vector<double> send(static_cast<std::size_t>(count * size));
  std::vector<double> recv(send.size());
  for (int dst = 0; dst < size; ++dst)
    for (int k = 0; k < count; ++k)
      send[static_cast<std::size_t>(dst * count + k)] = rank + 0.5 * dst + 0.001 * k;

  auto verify = [&](const std::string& what) {
    for (int src = 0; src < size; ++src)
      for (int k = 0; k < count; ++k) {
        double want = src + 0.5 * rank + 0.001 * k;
        double got = recv[static_cast<std::size_t>(src * count + k)];
        expect(got == want, what + ": block " + std::to_string(src) + " elem " + std::to_string(k) +
                                " = " + std::to_string(got) + ", want " + std::to_string(want));
      }
  };

  // The MPIA_ names are the link-level symbols; calling them directly must work too.
  std::fill(recv.begin(), recv.end(), -1.0);
  expect(MPIA_Alltoall(send.data(), count, MPI_DOUBLE, recv.data(), count, MPI_DOUBLE,
                       MPI_COMM_WORLD) == MPI_SUCCESS,
         "MPIA_Alltoall failed");
  verify("MPIA_Alltoall");

  for (const char* algorithm : {"linear", "modified_bruck", "zero_copy_bruck", "tra", "auto"}) {
    PersistentAlltoall a2a(send, recv, count, MPI_COMM_WORLD, algorithm);
    expect(a2a.init_rc() == MPI_SUCCESS, std::string("init ") + algorithm);
    if (a2a.init_rc() != MPI_SUCCESS) continue;
    for (int iter = 0; iter < 3; ++iter) {
      std::fill(recv.begin(), recv.end(), -1.0);
      expect(a2a.run() == MPI_SUCCESS, std::string("start/wait ") + algorithm);
      verify(algorithm);
    }
    if (rank == 0) std::printf("C++ consumer: %-16s -> %s\n", algorithm, a2a.algorithm().c_str());
  }

  int total = 0;
  MPI_Allreduce(&errors, &total, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
  if (rank == 0) std::printf("C++ consumer: %d ranks: %s\n", size, total == 0 ? "PASS" : "FAIL");
  MPI_Finalize();
  return total == 0 ? 0 : 1;
}
