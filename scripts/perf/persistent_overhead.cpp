// perf_persistent: the per-call cost of a persistent all-to-all (MPIX_Start + MPIX_Wait) of
// mpi-advance's algorithms against the MPI library's own persistent all-to-all (Open MPI's
// MPIX_Alltoall_init from <mpi-ext.h>, MPI-4's MPI_Alltoall_init), the blocking calls, and what a
// plan costs to set up. Built and run by scripts/perf_persistent.sh; see there.
//
//   perf_persistent time [sizes rounds batch iters]   interleaved timing, medians over rounds
//   perf_persistent init [sizes rounds]               init / free / plan-cache-miss costs
//   perf_persistent callgrind [sizes reps]            one rank under callgrind: one dump per
//                                                     measured call, reps per variant
//
// Timing: every round runs every variant, in an order that rotates from round to round, as a
// warm-up then `batch` back-to-back calls timed together (the column "batch": mean per call of
// the slower rank) and `iters` calls each after a barrier (the column "iter": the slower rank's
// time of one call, OSU style). Tables give the median over rounds (batch) and over all timed
// calls (iter). Every variant's result is checked before timing.
//
// Callgrind: rank 0 runs under valgrind --collect-atstart=no, rank 1 natively. Before each
// measured call rank 0 waits (barrier, then 50 ms) so that rank 1's message has arrived:
// the count is then this rank's local work for one call whose peer is on time -- the MPI calls
// it makes plus everything around them -- and does not depend on timing. Each variant first
// runs 40 calls, so that auto's trial (blocking and persistent) has settled.
#include "mpi_advance.h"

#include <mpi.h>
#include <valgrind/callgrind.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <unistd.h>
#include <vector>

const char* sys_alltoall_init_name();
int sys_alltoall_init(const void* s, int n, MPI_Datatype t, void* r, MPI_Comm comm, MPI_Request* q);

namespace {

int g_rank = 0, g_size = 1;

void die(const char* what, int rc) {
  std::fprintf(stderr, "perf_persistent: rank %d: %s failed (%d)\n", g_rank, what, rc);
  MPI_Abort(MPI_COMM_WORLD, 3);
}
#define CHECK(call)                          \
  do {                                       \
    const int rc_ = (call);                  \
    if (rc_ != MPI_SUCCESS) die(#call, rc_); \
  } while (0)

unsigned char pattern(int src, int dst, std::size_t i) {
  return static_cast<unsigned char>((src * 131 + dst * 31 + int(i) * 7 + 1) & 0xff);
}

// RawP2P: the point-to-point calls a direct schedule makes, with nothing around them: persistent
// receives and sends to every peer (receives started first, then sends; waited one by one with
// MPI_Wait, sends first, as the engine does) and a memcpy of the block to self -- the floor of what
// our Start+Wait can cost on this MPI. RawSend: the calls a repeated blocking call of a direct
// schedule makes (LoweredSchedule::run_blocking), with nothing around them: persistent receives
// started, a blocking MPI_Send to every peer, the block to self, MPI_Wait on each receive -- the
// floor of our MPIX_Alltoall.
enum class Kind { SysBlocking, SysPersistent, OursBlocking, OursPersistent, RawP2P, RawSend };

struct Variant {
  std::string name;
  Kind kind;
  std::string algorithm;  // OursPersistent
  MPI_Request sys = MPI_REQUEST_NULL;
  MPIX_Request ours = MPIX_REQUEST_NULL;
  std::vector<MPI_Request> raw;  // RawP2P: receives, then sends; RawSend: receives
};

struct Buffers {
  std::size_t block;
  std::vector<unsigned char> send, recv;
  explicit Buffers(std::size_t b)
      : block(b), send(b * std::size_t(g_size)), recv(b * std::size_t(g_size)) {
    for (int d = 0; d < g_size; ++d)
      for (std::size_t i = 0; i < b; ++i) send[std::size_t(d) * b + i] = pattern(g_rank, d, i);
  }
  void check(const std::string& who) {
    for (int s = 0; s < g_size; ++s)
      for (std::size_t i = 0; i < block; ++i)
        if (recv[std::size_t(s) * block + i] != pattern(s, g_rank, i)) {
          std::fprintf(stderr, "perf_persistent: rank %d: %s: wrong byte from %d at %zu\n", g_rank,
                       who.c_str(), s, i);
          MPI_Abort(MPI_COMM_WORLD, 4);
        }
    std::fill(recv.begin(), recv.end(), 0xee);
  }
};

std::vector<Variant> variants(bool with_system_persistent) {
  std::vector<Variant> v;
  v.push_back({"MPI_Alltoall", Kind::SysBlocking, ""});
  if (with_system_persistent && sys_alltoall_init_name())
    v.push_back({sys_alltoall_init_name(), Kind::SysPersistent, ""});
  v.push_back({"MPIX_Alltoall", Kind::OursBlocking, ""});
  for (const char* a : {"linear", "pairwise", "tra", "system", "auto"})
    v.push_back({a, Kind::OursPersistent, a});
  v.push_back({"raw_p2p", Kind::RawP2P, ""});
  v.push_back({"raw_send", Kind::RawSend, ""});
  return v;
}

void init(Variant& v, Buffers& b, MPI_Comm comm) {
  const int n = int(b.block);
  if (v.kind == Kind::SysPersistent) {
    CHECK(sys_alltoall_init(b.send.data(), n, MPI_BYTE, b.recv.data(), comm, &v.sys));
  } else if (v.kind == Kind::OursPersistent) {
    MPI_Info info;
    MPI_Info_create(&info);
    MPI_Info_set(info, MPIX_INFO_KEY_ALGORITHM, v.algorithm.c_str());
    CHECK(MPIX_Alltoall_init(b.send.data(), n, MPI_BYTE, b.recv.data(), n, MPI_BYTE, comm, info,
                             &v.ours));
    MPI_Info_free(&info);
  } else if (v.kind == Kind::RawP2P || v.kind == Kind::RawSend) {
    v.raw.clear();
    for (int k = 1; k < g_size; ++k) {
      const int from = (g_rank - k + g_size) % g_size;
      v.raw.emplace_back();
      CHECK(MPI_Recv_init(b.recv.data() + std::size_t(from) * b.block, n, MPI_BYTE, from, 99, comm,
                          &v.raw.back()));
    }
    for (int k = 1; k < g_size && v.kind == Kind::RawP2P; ++k) {
      const int to = (g_rank + k) % g_size;
      v.raw.emplace_back();
      CHECK(MPI_Send_init(b.send.data() + std::size_t(to) * b.block, n, MPI_BYTE, to, 99, comm,
                          &v.raw.back()));
    }
  }
}

void release(Variant& v) {
  if (v.sys != MPI_REQUEST_NULL) CHECK(MPI_Request_free(&v.sys));
  if (v.ours != MPIX_REQUEST_NULL) CHECK(MPIX_Request_free(&v.ours));
  for (MPI_Request& q : v.raw) CHECK(MPI_Request_free(&q));
  v.raw.clear();
}

inline void run(Variant& v, Buffers& b, MPI_Comm comm) {
  const int n = int(b.block);
  switch (v.kind) {
    case Kind::SysBlocking:
      CHECK(MPI_Alltoall(b.send.data(), n, MPI_BYTE, b.recv.data(), n, MPI_BYTE, comm));
      break;
    case Kind::SysPersistent:
      CHECK(MPI_Start(&v.sys));
      CHECK(MPI_Wait(&v.sys, MPI_STATUS_IGNORE));
      break;
    case Kind::OursBlocking:
      CHECK(MPIX_Alltoall(b.send.data(), n, MPI_BYTE, b.recv.data(), n, MPI_BYTE, comm));
      break;
    case Kind::OursPersistent:
      CHECK(MPIX_Start(&v.ours));
      CHECK(MPIX_Wait(&v.ours, MPI_STATUS_IGNORE));
      break;
    case Kind::RawP2P:
      std::memcpy(b.recv.data() + std::size_t(g_rank) * b.block,
                  b.send.data() + std::size_t(g_rank) * b.block, b.block);
      for (MPI_Request& q : v.raw) CHECK(MPI_Start(&q));
      for (std::size_t k = v.raw.size(); k-- > 0;) CHECK(MPI_Wait(&v.raw[k], MPI_STATUS_IGNORE));
      break;
    case Kind::RawSend:
      for (MPI_Request& q : v.raw) CHECK(MPI_Start(&q));
      for (int k = 1; k < g_size; ++k) {
        const int to = (g_rank + k) % g_size;
        CHECK(MPI_Send(b.send.data() + std::size_t(to) * b.block, n, MPI_BYTE, to, 99, comm));
      }
      std::memcpy(b.recv.data() + std::size_t(g_rank) * b.block,
                  b.send.data() + std::size_t(g_rank) * b.block, b.block);
      for (MPI_Request& q : v.raw) CHECK(MPI_Wait(&q, MPI_STATUS_IGNORE));
      break;
  }
}

double median(std::vector<double> x) {
  if (x.empty()) return 0;
  std::sort(x.begin(), x.end());
  const std::size_t n = x.size();
  return n % 2 ? x[n / 2] : 0.5 * (x[n / 2 - 1] + x[n / 2]);
}

double slowest(double t, MPI_Comm comm) {
  double m = 0;
  MPI_Allreduce(&t, &m, 1, MPI_DOUBLE, MPI_MAX, comm);
  return m;
}

std::vector<std::size_t> parse_sizes(const char* s) {
  std::vector<std::size_t> out;
  std::string text(s);
  std::size_t at = 0;
  while (at <= text.size()) {
    const std::size_t comma = text.find(',', at);
    const std::string tok =
        text.substr(at, comma == std::string::npos ? std::string::npos : comma - at);
    if (!tok.empty()) out.push_back(std::size_t(std::strtoull(tok.c_str(), nullptr, 10)));
    if (comma == std::string::npos) break;
    at = comma + 1;
  }
  return out;
}

void mode_time(MPI_Comm comm, const std::vector<std::size_t>& sizes, int rounds, int batch,
               int iters) {
  if (g_rank == 0)
    std::printf("%-22s %6s %10s %10s %9s %9s\n", "variant", "block", "batch_us", "iter_us",
                "batch/sys", "iter/sys");
  for (std::size_t block : sizes) {
    Buffers b(block);
    std::vector<Variant> vs = variants(true);
    for (Variant& v : vs) {
      init(v, b, comm);
      run(v, b, comm);
      b.check(v.name);
    }
    std::vector<std::vector<double>> bt(vs.size()), it(vs.size());
    for (int r = 0; r < rounds; ++r)
      for (std::size_t k = 0; k < vs.size(); ++k) {
        const std::size_t i = (k + std::size_t(r)) % vs.size();
        Variant& v = vs[i];
        for (int w = 0; w < 20; ++w) run(v, b, comm);
        MPI_Barrier(comm);
        const double t0 = MPI_Wtime();
        for (int n = 0; n < batch; ++n) run(v, b, comm);
        bt[i].push_back(slowest((MPI_Wtime() - t0) / batch, comm));
        std::vector<double> local(static_cast<std::size_t>(iters));
        for (int n = 0; n < iters; ++n) {
          MPI_Barrier(comm);
          const double s = MPI_Wtime();
          run(v, b, comm);
          local[std::size_t(n)] = MPI_Wtime() - s;
        }
        std::vector<double> worst(local.size());
        MPI_Allreduce(local.data(), worst.data(), iters, MPI_DOUBLE, MPI_MAX, comm);
        it[i].insert(it[i].end(), worst.begin(), worst.end());
      }
    b.check("after timing");  // the last variant's last result
    double sys_b = 0, sys_i = 0;
    for (std::size_t i = 0; i < vs.size(); ++i)
      if (vs[i].kind == Kind::SysPersistent) sys_b = median(bt[i]), sys_i = median(it[i]);
    if (g_rank == 0)
      for (std::size_t i = 0; i < vs.size(); ++i) {
        const double mb = median(bt[i]) * 1e6, mi = median(it[i]) * 1e6;
        std::printf("%-22s %6zu %10.3f %10.3f %9.3f %9.3f\n", vs[i].name.c_str(), block, mb, mi,
                    sys_b > 0 ? mb / (sys_b * 1e6) : 0.0, sys_i > 0 ? mi / (sys_i * 1e6) : 0.0);
      }
    for (Variant& v : vs) release(v);
  }
}

void mode_init(MPI_Comm comm, const std::vector<std::size_t>& sizes, int rounds) {
  if (g_rank == 0)
    std::printf("%-22s %6s %10s %10s %12s\n", "variant", "block", "init_us", "free_us",
                "first_run_us");
  for (std::size_t block : sizes) {
    Buffers b(block);
    std::vector<Variant> vs = variants(true);
    std::vector<std::vector<double>> ti(vs.size()), tf(vs.size()), tr(vs.size());
    for (int r = 0; r < rounds; ++r)
      for (std::size_t k = 0; k < vs.size(); ++k) {
        const std::size_t i = (k + std::size_t(r)) % vs.size();
        Variant& v = vs[i];
        if (v.kind != Kind::SysPersistent && v.kind != Kind::OursPersistent) continue;
        MPI_Barrier(comm);
        double t0 = MPI_Wtime();
        init(v, b, comm);
        ti[i].push_back(slowest(MPI_Wtime() - t0, comm));
        MPI_Barrier(comm);
        t0 = MPI_Wtime();
        run(v, b, comm);
        tr[i].push_back(slowest(MPI_Wtime() - t0, comm));
        MPI_Barrier(comm);
        t0 = MPI_Wtime();
        release(v);
        tf[i].push_back(slowest(MPI_Wtime() - t0, comm));
      }
    // A blocking MPIX_Alltoall whose plan cache misses on every call (the buffer alternates):
    // what a blocking call costs when it cannot reuse its plan.
    Buffers b2(block);
    std::vector<double> miss;
    for (int r = 0; r < rounds; ++r) {
      Buffers& x = r % 2 ? b2 : b;
      MPI_Barrier(comm);
      const double t0 = MPI_Wtime();
      CHECK(MPIX_Alltoall(x.send.data(), int(block), MPI_BYTE, x.recv.data(), int(block), MPI_BYTE,
                          comm));
      miss.push_back(slowest(MPI_Wtime() - t0, comm));
    }
    if (g_rank == 0) {
      for (std::size_t i = 0; i < vs.size(); ++i)
        if (!ti[i].empty())
          std::printf("%-22s %6zu %10.2f %10.2f %12.2f\n", vs[i].name.c_str(), block,
                      median(ti[i]) * 1e6, median(tf[i]) * 1e6, median(tr[i]) * 1e6);
      std::printf("%-22s %6zu %10s %10s %12.2f\n", "MPIX_Alltoall(miss)", block, "-", "-",
                  median(miss) * 1e6);
    }
  }
}

// Rank 0 under callgrind (collection off at start): one dump per measured call, named
// "<variant>@<block>#<n>", and for the persistent variants "init:..." and "free:..." dumps of
// the request's set-up and release.
void mode_callgrind(MPI_Comm comm, const std::vector<std::size_t>& sizes, int reps) {
  for (std::size_t block : sizes) {
    Buffers b(block);
    std::vector<Variant> vs = variants(true);
    for (Variant& v : vs) {
      // The plan's set-up: init (collective: rank 1 is in it already) and free.
      if (v.kind == Kind::SysPersistent || v.kind == Kind::OursPersistent)
        for (int n = 0; n < reps; ++n) {
          MPI_Barrier(comm);
          if (g_rank == 0) usleep(50000);
          // (Named strings: the client request reads the text after its argument expression.)
          const std::string tail = v.name + "@" + std::to_string(block) + "#" + std::to_string(n);
          const std::string init_name = "init:" + tail, free_name = "free:" + tail;
          if (g_rank == 0) CALLGRIND_TOGGLE_COLLECT;
          init(v, b, comm);
          if (g_rank == 0) {
            CALLGRIND_TOGGLE_COLLECT;
            CALLGRIND_DUMP_STATS_AT(init_name.c_str());
            CALLGRIND_TOGGLE_COLLECT;
          }
          release(v);
          if (g_rank == 0) {
            CALLGRIND_TOGGLE_COLLECT;
            CALLGRIND_DUMP_STATS_AT(free_name.c_str());
          }
        }
      init(v, b, comm);
      run(v, b, comm);
      b.check(v.name);
      // Past any measured trial (auto: at most 20 calls, trial.hpp): the calls counted are
      // the settled ones, not trial starts that lower an entry each.
      for (int w = 0; w < 40; ++w) run(v, b, comm);
      for (int n = 0; n < reps; ++n) {
        MPI_Barrier(comm);
        if (g_rank == 0) {
          usleep(50000);  // rank 1's message is in by now: no polling for it
          CALLGRIND_TOGGLE_COLLECT;
          run(v, b, comm);
          CALLGRIND_TOGGLE_COLLECT;
          const std::string name = v.name + "@" + std::to_string(block) + "#" + std::to_string(n);
          CALLGRIND_DUMP_STATS_AT(name.c_str());
        } else {
          run(v, b, comm);
        }
      }
      b.check(v.name + " under callgrind");
      release(v);
    }
  }
}

}  // namespace

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  MPI_Comm comm;
  MPI_Comm_dup(MPI_COMM_WORLD, &comm);
  MPI_Comm_rank(comm, &g_rank);
  MPI_Comm_size(comm, &g_size);
  const std::string mode = argc > 1 ? argv[1] : "time";
  const std::vector<std::size_t> sizes = parse_sizes(argc > 2 ? argv[2] : "1,8");
  auto arg = [&](int i, int dflt) { return argc > i ? std::atoi(argv[i]) : dflt; };
  if (mode == "time")
    mode_time(comm, sizes, arg(3, 100), arg(4, 200), arg(5, 20));
  else if (mode == "init")
    mode_init(comm, sizes, arg(3, 100));
  else if (mode == "callgrind")
    mode_callgrind(comm, sizes, arg(3, 10));
  else if (g_rank == 0)
    std::fprintf(stderr, "perf_persistent: unknown mode '%s' (time, init, callgrind)\n",
                 mode.c_str());
  MPI_Comm_free(&comm);
  MPI_Finalize();
  return 0;
}
