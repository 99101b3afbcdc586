// An in-process simulator: "runs" the schedules of all P ranks at once on symbolic data and
// checks that every receive-buffer byte ends up holding exactly the right source byte, that
// the builder rules of schedule.hpp hold, and that every send is matched by a receive of the
// same length. No MPI: this is how every builder is tested for any P in one process.
#pragma once

#include "schedule/schedule.hpp"

#include <cstdint>
#include <functional>
#include <string>
#include <utility>
#include <vector>

namespace mpia {

struct SimLayout {
  std::vector<std::int64_t> send_bytes;  // per send block
  std::vector<std::int64_t> recv_bytes;  // per receive block
};

struct SimStats {
  int communication_rounds = 0;
  std::int64_t bytes_sent = 0;
  std::int64_t messages_sent = 0;
};

struct SimResult {
  bool ok = true;
  std::string error;            // first problem found, empty when ok
  std::vector<SimStats> ranks;  // per rank
};

// expected(rank, recv_block) -> (source rank, source send block) whose bytes that receive
// block must hold at the end; a negative source rank means an empty block (MPI_PROC_NULL).
using SimExpected = std::function<std::pair<int, int>(int rank, int recv_block)>;

SimResult simulate(int nranks, const std::function<Schedule(int rank)>& build,
                   const std::function<SimLayout(int rank)>& layout, const SimExpected& expected);

// The alltoall case: every rank sends block_bytes to every rank.
SimResult simulate_alltoall(int nranks, std::int64_t block_bytes,
                            const std::function<Schedule(int rank)>& build);

}  // namespace mpia
