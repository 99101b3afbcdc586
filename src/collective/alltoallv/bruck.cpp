// Alltoallv bruck: the zero-copy radix-r exchange (collective/alltoall/bruck_family.cpp) for
// blocks of different sizes, for near-uniform small blocks. A rank forwards blocks of other
// pairs, so it must know their sizes: at init it runs the same rounds on the sizes themselves
// (8 bytes per block), after which slot j holds the size of the block the data exchange will
// then have there -- exactly what the builder asks for. K rounds of one message each way;
// O(P) memory for the slots plus O(D) entries (D: blocks this rank forwards, O(P log P)); no
// P x P matrix anywhere.
//   time ~ K alpha + D n beta (n: the heaviest sender's mean block, at most the largest:
//   collective/cost.hpp's forwarded_block; skewed sizes make it pay)
// Restrictions: none. Parameter radix: 2..P, default 2 (Bruck).
#include "collective/alltoall/builders.hpp"
#include "collective/alltoallv/peer_sizes.hpp"
#include "collective/record.hpp"

#include <limits>

namespace mpia {

namespace {

using namespace detail;

Schedule bruck(const AlltoallvShape& s, const ParamValues& v) {
  return with(build_radix_bruck_v(s.rank, s.size, int(v[0]), s.pair_bytes), kRoundByRound,
              Lowering::Pack);
}

void learn(AlltoallvShape& shape, const ParamValues& v, SizeChannel& channel) {
  learn_radix_v(shape, int(v[0]), std::numeric_limits<std::int64_t>::max(), channel);
}

Terms cost(const Machine& m, const Stats& st, const ParamValues& v) {
  Terms t;
  add_radix(t, m.nranks, v[0], forwarded_block(m, st), 1,
            [&m](std::int64_t d) { return flat_flows(m, d); });
  return t;
}
constexpr const char* kCost = "radix(P, r, b, f)";

// Every radix of the ladder. The size exchange costs O(P log P) work and memory per rank at
// init: beyond 1024 ranks the direct exchange is taken.
std::vector<ParamValues> candidates(const Machine& m, const Stats& st) {
  std::vector<ParamValues> out;
  if (m.nranks < 4 || m.nranks > 1024 || st.max_block == 0) return out;
  for (std::int64_t r : radix_ladder(m.nranks)) out.push_back({r});
  return out;
}

}  // namespace

MPIA_ALGORITHMS(alltoallv_bruck) {
  return {
      record("bruck", 200,
             "zero-copy radix-r exchange for near-uniform small blocks; the sizes of the "
             "blocks a rank forwards are learnt at init by running the same rounds on the sizes",
             {MPIA_SEED_000 ", section 3.5 (zero-copy Bruck for irregular all-to-all), at radix r "
                            "as in seed 003 (TRA)",
              kCost},
             {{"radix", "base of the exchange (2: Bruck)", kRadixMin, kRadixMin, kRadixMax}}, bruck,
             learn, {cost, candidates, 20})};
}

}  // namespace mpia
