#include "simulate.hpp"

#include <algorithm>
#include <deque>
#include <map>
#include <sstream>

namespace mpia {
namespace {

struct Token {
  std::int32_t rank = -1;  // -1: never written
  std::int32_t block = -1;
  std::int64_t index = -1;
  bool operator==(const Token& o) const {
    return rank == o.rank && block == o.block && index == o.index;
  }
};

struct RankMemory {
  std::vector<std::vector<Token>> send, recv;
  std::vector<Token> scratch;
};

struct Sim {
  int nranks;
  std::vector<Schedule> sched;
  std::vector<SimLayout> lay;
  std::vector<RankMemory> mem;
  std::string error;

  bool fail(const std::string& msg) {
    if (error.empty()) error = msg;
    return false;
  }

  // Resolves a piece to a span of tokens; checks its bounds.
  Token* span(int rank, const Piece& p, const char* what) {
    RankMemory& m = mem[rank];
    std::ostringstream where;
    where << "rank " << rank << ": " << what << " piece (slot " << int(p.slot) << ", block "
          << p.block << ", offset " << p.offset << ", bytes " << p.bytes << ")";
    if (p.bytes < 0) return fail(where.str() + " has negative length"), nullptr;
    if (p.slot == Slot::Scratch) {
      if (p.offset < 0 || p.offset + p.bytes > std::int64_t(m.scratch.size()))
        return fail(where.str() + " is outside scratch"), nullptr;
      return m.scratch.data() + p.offset;
    }
    auto& blocks = p.slot == Slot::Send ? m.send : m.recv;
    if (p.block < 0 || p.block >= int(blocks.size()))
      return fail(where.str() + " names a block that does not exist"), nullptr;
    if (p.offset != 0 || p.bytes != std::int64_t(blocks[p.block].size()))
      return fail(where.str() + " is not a whole user block"), nullptr;
    return blocks[p.block].data();
  }

  // Interval bookkeeping for the per-round conflict rules.
  struct Interval {
    Slot slot;
    int block;
    std::int64_t lo, hi;
  };
  static bool overlap(const Interval& a, const Interval& b) {
    return a.slot == b.slot && a.block == b.block && a.lo < b.hi && b.lo < a.hi;
  }
  static Interval interval(const Piece& p) {
    return {p.slot, p.slot == Slot::Scratch ? -1 : p.block, p.offset, p.offset + p.bytes};
  }

  bool run_round(std::size_t r) {
    // 1. copies, in order, per rank
    for (int rank = 0; rank < nranks; ++rank) {
      if (r >= sched[rank].rounds.size()) continue;
      for (const Copy& c : sched[rank].rounds[r].copies) {
        if (c.to.slot == Slot::Send)
          return fail("rank " + std::to_string(rank) + " copies into the send buffer");
        if (c.from.bytes != c.to.bytes)
          return fail("rank " + std::to_string(rank) + " copy with different lengths");
        Token* from = span(rank, c.from, "copy source");
        Token* to = span(rank, c.to, "copy target");
        if (!from || !to) return false;
        std::vector<Token> tmp(from, from + c.from.bytes);
        std::copy(tmp.begin(), tmp.end(), to);
      }
    }
    // 2. conflict rules and payloads of all sends
    std::map<std::pair<int, int>, std::deque<std::vector<Token>>> wire;
    for (int rank = 0; rank < nranks; ++rank) {
      if (r >= sched[rank].rounds.size()) continue;
      std::vector<Interval> reads, writes;
      for (const Exchange& x : sched[rank].rounds[r].exchanges) {
        if (x.send.active()) {
          if (x.send.peer >= nranks) return fail("send to a rank that does not exist");
          if (x.send.bytes() == 0)
            return fail("rank " + std::to_string(rank) + " posts a zero-byte send");
          std::vector<Token> payload;
          for (const Piece& p : x.send.pieces) {
            Token* t = span(rank, p, "send");
            if (!t) return false;
            payload.insert(payload.end(), t, t + p.bytes);
            reads.push_back(interval(p));
          }
          wire[{rank, x.send.peer}].push_back(std::move(payload));
        }
        if (x.recv.active()) {
          if (x.recv.bytes() == 0)
            return fail("rank " + std::to_string(rank) + " posts a zero-byte receive");
          for (const Piece& p : x.recv.pieces) {
            if (p.slot == Slot::Send)
              return fail("rank " + std::to_string(rank) + " receives into the send buffer");
            writes.push_back(interval(p));
          }
        }
      }
      for (std::size_t i = 0; i < writes.size(); ++i) {
        for (std::size_t j = i + 1; j < writes.size(); ++j)
          if (overlap(writes[i], writes[j]))
            return fail("rank " + std::to_string(rank) + " round " + std::to_string(r) +
                        ": two receives write the same bytes");
        for (const Interval& rd : reads)
          if (overlap(writes[i], rd))
            return fail("rank " + std::to_string(rank) + " round " + std::to_string(r) +
                        ": a receive writes bytes a send of the same round reads");
      }
    }
    // 3. deliver
    for (int rank = 0; rank < nranks; ++rank) {
      if (r >= sched[rank].rounds.size()) continue;
      for (const Exchange& x : sched[rank].rounds[r].exchanges) {
        if (!x.recv.active()) continue;
        auto it = wire.find({x.recv.peer, rank});
        if (it == wire.end() || it->second.empty())
          return fail("rank " + std::to_string(rank) + " round " + std::to_string(r) +
                      " receives from " + std::to_string(x.recv.peer) + " which sends nothing");
        std::vector<Token> payload = std::move(it->second.front());
        it->second.pop_front();
        if (std::int64_t(payload.size()) != x.recv.bytes())
          return fail("rank " + std::to_string(rank) + " round " + std::to_string(r) +
                      ": message length " + std::to_string(payload.size()) + " != receive length " +
                      std::to_string(x.recv.bytes()));
        std::int64_t at = 0;
        for (const Piece& p : x.recv.pieces) {
          Token* t = span(rank, p, "receive");
          if (!t) return false;
          std::copy(payload.begin() + at, payload.begin() + at + p.bytes, t);
          at += p.bytes;
        }
      }
    }
    for (auto& [key, q] : wire)
      if (!q.empty())
        return fail("round " + std::to_string(r) + ": message " + std::to_string(key.first) +
                    " -> " + std::to_string(key.second) + " is never received");
    return true;
  }
};

}  // namespace

SimResult simulate(int nranks, const std::function<Schedule(int rank)>& build,
                   const std::function<SimLayout(int rank)>& layout, const SimExpected& expected) {
  Sim sim;
  sim.nranks = nranks;
  SimResult res;
  std::size_t nrounds = 0;
  for (int rank = 0; rank < nranks; ++rank) {
    sim.sched.push_back(build(rank));
    sim.lay.push_back(layout(rank));
    nrounds = std::max(nrounds, sim.sched.back().rounds.size());
    RankMemory m;
    const SimLayout& l = sim.lay.back();
    for (std::size_t b = 0; b < l.send_bytes.size(); ++b) {
      std::vector<Token> blk(l.send_bytes[b]);
      for (std::int64_t i = 0; i < l.send_bytes[b]; ++i) blk[i] = {rank, int(b), i};
      m.send.push_back(std::move(blk));
    }
    for (std::int64_t n : l.recv_bytes) m.recv.emplace_back(n);
    m.scratch.resize(sim.sched.back().scratch_bytes);
    sim.mem.push_back(std::move(m));
    SimStats st;
    st.communication_rounds = sim.sched.back().communication_rounds();
    st.bytes_sent = sim.sched.back().bytes_sent();
    st.messages_sent = sim.sched.back().messages_sent();
    res.ranks.push_back(st);
  }
  for (std::size_t r = 0; r < nrounds && sim.error.empty(); ++r) sim.run_round(r);
  if (sim.error.empty()) {
    for (int rank = 0; rank < nranks && sim.error.empty(); ++rank) {
      for (std::size_t b = 0; b < sim.mem[rank].recv.size(); ++b) {
        auto [src, sblk] = expected(rank, int(b));
        const auto& got = sim.mem[rank].recv[b];
        // A negative source (MPI_PROC_NULL): the block receives nothing.
        if (src < 0 && got.empty()) continue;
        bool ok = src >= 0 && src < nranks && sblk >= 0 && sblk < int(sim.mem[src].send.size()) &&
                  sim.mem[src].send[sblk].size() == got.size();
        for (std::size_t i = 0; ok && i < got.size(); ++i)
          ok = got[i] == Token{src, sblk, std::int64_t(i)};
        if (!ok) {
          std::ostringstream os;
          os << "rank " << rank << " receive block " << b << " does not hold block " << sblk
             << " of rank " << src;
          for (std::size_t i = 0; i < got.size(); ++i)
            if (!(got[i] == Token{src, sblk, std::int64_t(i)})) {
              os << " (byte " << i << " holds rank " << got[i].rank << " block " << got[i].block
                 << " byte " << got[i].index << ")";
              break;
            }
          sim.fail(os.str());
          break;
        }
      }
    }
  }
  res.ok = sim.error.empty();
  res.error = sim.error;
  return res;
}

SimResult simulate_alltoall(int nranks, std::int64_t block_bytes,
                            const std::function<Schedule(int rank)>& build) {
  SimLayout l;
  l.send_bytes.assign(nranks, block_bytes);
  l.recv_bytes.assign(nranks, block_bytes);
  return simulate(
      nranks, build, [&](int) { return l; },
      [](int rank, int block) { return std::make_pair(block, rank); });
}

}  // namespace mpia
