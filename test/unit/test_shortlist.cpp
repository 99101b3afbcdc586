// The model's rankings and the shortlist a measured trial runs (collective/shortlist.hpp): the
// first entry is exactly the model's pick, entries are distinct and within the margin, one per
// algorithm before any second parameter of one, at most max.
#include "collective/resolve.hpp"
#include "collective/shortlist.hpp"
#include "collective/trial_rule.hpp"

#include <gtest/gtest.h>

#include <cstdio>
#include <fstream>
#include <iterator>
#include <set>
#include <string>
#include <vector>

namespace mpia {
namespace {

void expect_well_formed(const std::vector<Ranked>& ranked, const ShortlistPolicy& policy,
                        const std::string& where) {
  SCOPED_TRACE(where);
  const Shortlist sl = shortlist(ranked, policy);
  ASSERT_FALSE(sl.entries.empty());
  ASSERT_EQ(sl.refines.size(), sl.entries.size());
  std::vector<Selection> list;  // the first round
  std::set<std::string> names;
  for (std::size_t i = 0; i < sl.entries.size(); ++i) {
    const Selection& s = sl.entries[i];
    EXPECT_TRUE(names.insert(s.to_string()).second) << "twice: " << s.to_string();
    double t = -1;
    for (const Ranked& r : ranked)
      if (r.selection == s) t = r.seconds;
    EXPECT_LE(t, ranked[0].seconds * policy.margin) << s.to_string();
    const int e = sl.refines[i];
    if (e < 0) {
      EXPECT_EQ(list.size(), i) << "first-round entries come first";
      list.push_back(s);
      continue;
    }
    // A refinement: one step from a first-round entry of its family (one parameter moved, or
    // a copying variant with the same values).
    ASSERT_LT(std::size_t(e), list.size());
    const Selection& of = list[std::size_t(e)];
    EXPECT_STREQ(s.algorithm->family_name(), of.algorithm->family_name());
    ASSERT_EQ(s.values.size(), of.values.size()) << s.to_string();
    std::size_t differ = 0;
    for (std::size_t j = 0; j < s.values.size(); ++j) differ += s.values[j] != of.values[j];
    EXPECT_EQ(differ, s.algorithm == of.algorithm ? 1u : 0u)
        << s.to_string() << " refining " << of.to_string();
  }
  EXPECT_LE(list.size(), policy.max);
  EXPECT_TRUE(list[0] == ranked[0].selection);
  std::set<std::string> algorithms;
  bool repeated = false;
  for (const Selection& s : list)
    // Once a family repeats, every family within the margin is already in.
    if (!algorithms.insert(s.algorithm->family_name()).second) repeated = true;
  if (repeated)
    for (const Ranked& r : ranked)
      if (r.seconds <= ranked[0].seconds * policy.margin)
        EXPECT_EQ(algorithms.count(r.selection.algorithm->family_name()), 1u)
            << r.selection.to_string();
}

TEST(Shortlist, AlltoallPickIsTheModelsChoice) {
  const CostModel model;
  for (const Machine m : {Machine::flat(4), Machine::flat(7), Machine{64, 4, 16, true},
                          Machine{256, 16, 16, true}, Machine{96, 6, 16, false}})
    for (std::int64_t bytes : {1, 8, 64, 512, 4096, 1 << 16}) {
      const std::vector<Ranked> ranked = rank_alltoall(model, m, bytes);
      const std::string where = "P=" + std::to_string(m.nranks) + " N=" + std::to_string(m.nnodes) +
                                " B=" + std::to_string(bytes);
      EXPECT_TRUE(ranked[0].selection == choose_alltoall(model, m, bytes)) << where;
      for (std::size_t i = 2; i < ranked.size(); ++i)
        EXPECT_LE(ranked[i - 1].seconds, ranked[i].seconds) << where;
      expect_well_formed(ranked, ShortlistPolicy{}, where);
      expect_well_formed(ranked, ShortlistPolicy{1.5, 2}, where);
    }
}

TEST(Shortlist, AlltoallvAndNeighborPickIsTheModelsChoice) {
  const CostModel model;
  for (const Machine m : {Machine::flat(5), Machine{64, 4, 16, true}, Machine{256, 16, 16, true}})
    for (std::int64_t block : {0, 8, 512, 8192}) {
      const AlltoallvStats st{block, block * m.nranks / 2, m.nranks / 2};
      const std::vector<Ranked> ranked = rank_alltoallv(model, m, st);
      const std::string where = "v P=" + std::to_string(m.nranks) + " B=" + std::to_string(block);
      EXPECT_TRUE(ranked[0].selection == choose_alltoallv(model, m, st)) << where;
      expect_well_formed(ranked, ShortlistPolicy{}, where);
      const NeighborStats ns{block, 6, 3};
      const std::vector<Ranked> nr = rank_neighbor(model, m, ns);
      EXPECT_TRUE(nr[0].selection == choose_neighbor(model, m, ns)) << where;
      expect_well_formed(nr, ShortlistPolicy{}, "neighbor " + where);
    }
}

// The trial is there for the model's misses: where a machine makes linear cost what it does not
// predict, the faster two-level exchange must still be on the list (the case of issue 18: P = 64
// on 16-rank nodes, 512 B, where the model picks linear and tra2 measured 1.9x faster).
TEST(Shortlist, KeepsTheOtherFamiliesWhenTheyAreClose) {
  const CostModel model;
  const Machine m{64, 4, 16, true};
  const Shortlist sl = shortlist(rank_alltoall(model, m, 512));
  std::set<std::string> algorithms;
  std::size_t first = 0;
  for (std::size_t i = 0; i < sl.entries.size(); ++i)
    if (sl.refines[i] < 0) algorithms.insert(sl.entries[i].algorithm->family_name()), ++first;
  ASSERT_GE(first, 2u);
  EXPECT_EQ(algorithms.size(), first) << "one entry per family first";
  EXPECT_EQ(algorithms.count("tra2") + algorithms.count("linear"), 2u);
}

// Issue 19's lab, simgrid_net P = 64 (4 nodes of 16), hotspot counts at a mean of 512 B (blocks
// of 5577 B to every 16th rank, 174 B to the others): linear measured 45.6 us, the windowed
// exchange the model ranks first 66.8, and the trial never tried linear -- it was no candidate
// where a rank has more than 8 messages. Every family the model ranks close must be tried.
TEST(Shortlist, DenseAlltoallvTriesTheAllAtOnceExchange) {
  const CostModel model;
  const Machine m{64, 4, 16, true};
  for (const AlltoallvStats st :
       {AlltoallvStats{5577, 64 * 512, 63}, AlltoallvStats{512, 64 * 512, 63},
        AlltoallvStats{64, 64 * 64, 63}}) {
    const Shortlist sl = shortlist(rank_alltoallv(model, m, st));
    bool tried = false;
    for (std::size_t i = 0; i < sl.entries.size(); ++i)
      tried |= sl.entries[i].algorithm->name == std::string("linear");
    EXPECT_TRUE(tried) << sl.to_string() << " (max block " << st.max_block << ")";
  }
}

// ci.sh's alltoallv simulation, platform P = 32 (2 nodes of 16), power-law counts at a mean of
// 64 B (floor(320 x^4): the largest block 300 B, a quarter of the blocks empty, about 2.6 KB per
// rank): bruck radix 2 measured 8.2 us, the trial settled on locality at 10.1 (1.23x) after
// locality, linear, the window of 8 and hybrid -- bruck, priced as if every block it forwards
// were the largest, ranked behind all four and never ran. A few large blocks do not make every
// forwarded block large: the first round must hold it.
TEST(Shortlist, PowerLawCountsTryTheLogRoundExchange) {
  const CostModel model;
  const Machine m{32, 2, 16, true};
  const AlltoallvStats st{300, 2600, 28};
  const Shortlist sl = shortlist(rank_alltoallv(model, m, st));
  bool tried = false;
  for (std::size_t i = 0; i < sl.entries.size(); ++i)
    tried |= sl.refines[i] < 0 && sl.entries[i].algorithm->name == std::string("bruck");
  EXPECT_TRUE(tried) << sl.to_string();
}

// The lab's platform P = 1024 sparse counts at a mean of 8 B (rank s's 32 peers the ranks of its
// group of 32: 256 B blocks on its own node and one other): locality measured 14.5 us, linear
// 16.9, the window of 8 39.9, hybrid 27.1, locality_radix radix 8 21.2; priced with a message to
// every other node locality was fifth and the trial settled on linear (1.17x).
TEST(Shortlist, SparseCountsOnFewNodesTryTheNodeAwareExchange) {
  const CostModel model;
  const Machine m{1024, 64, 16, true};
  const Shortlist sl = shortlist(rank_alltoallv(model, m, AlltoallvStats{256, 8192, 32, 1}));
  bool tried = false;
  for (std::size_t i = 0; i < sl.entries.size(); ++i)
    tried |= sl.refines[i] < 0 && sl.entries[i].algorithm->name == std::string("locality");
  EXPECT_TRUE(tried) << sl.to_string();
}

// The lab's simgrid_net P = 64 hot-spot counts at a mean of 4 KiB (blocks of 44620 B to every
// 16th rank): locality measured 324 us, linear 510; pricing forwarded blocks at the hot
// destinations' mean put locality out of the first round and the trial settled on linear.
TEST(Shortlist, HotSpotCountsTryTheNodeAwareExchange) {
  const CostModel model;
  const Machine m{64, 4, 16, true};
  const Shortlist sl = shortlist(rank_alltoallv(model, m, AlltoallvStats{44620, 64 * 4096, 63}));
  bool tried = false;
  for (std::size_t i = 0; i < sl.entries.size(); ++i)
    tried |= sl.refines[i] < 0 && std::string(sl.entries[i].algorithm->family_name()) == "locality";
  EXPECT_TRUE(tried) << sl.to_string();
}

// The lab's simgrid_net P = 256 (16 nodes of 16) fft_yz counts at a mean of 64 B: each rank
// sends 16 blocks of 977-1527 B (19857 B in all), one to each node. locality_radix radix 3
// measured 52.2 us, bruck radix 4 63.9; linear, the window, hybrid and locality 75-79. Hybrid
// priced every block direct, as linear, and those four filled the first round: the trial
// settled on linear (1.44x). A candidate that is linear by its own cost must not take a slot.
TEST(Shortlist, BlocksToManyNodesTryALogRoundExchange) {
  const CostModel model;
  const Machine m{256, 16, 16, true};
  const AlltoallvStats st{1527, 19857, 16, 15};
  const Shortlist sl = shortlist(rank_alltoallv(model, m, st));
  bool tried = false;
  for (std::size_t i = 0; i < sl.entries.size(); ++i) {
    const std::string f = sl.entries[i].algorithm->family_name();
    tried |= sl.refines[i] < 0 && (f == "bruck" || f == "locality_radix");
  }
  EXPECT_TRUE(tried) << sl.to_string();
}

TEST(Shortlist, OneEntryWhenNothingIsClose) {
  std::vector<Ranked> ranked;
  Selection a, b;
  a.algorithm = find_algorithm(Collective::Alltoall, "linear");
  b.algorithm = find_algorithm(Collective::Alltoall, "pairwise");
  ranked.push_back({a, 1.0});
  ranked.push_back({b, 3.5});
  EXPECT_EQ(shortlist(ranked).entries.size(), 1u);
  ranked[1].seconds = 2.9;
  EXPECT_EQ(shortlist(ranked).entries.size(), 2u);
}

// The case of issue 18 on fat_nodes_net (P = 64 on 32-rank nodes, 512 B): the model ranks tra
// radix 8 first and radix 4 measured 7 % faster; every first-round entry with parameters brings
// its parameter neighbours, which a trial runs if that entry wins the first round or comes
// close to the winner.
TEST(Shortlist, RefinesEachFamilyWithItsNextCandidates) {
  std::vector<Ranked> ranked;
  auto add = [&](const char* name, std::vector<std::int64_t> values, double t) {
    Selection s;
    s.algorithm = find_algorithm(Collective::Alltoall, name);
    ASSERT_NE(s.algorithm, nullptr) << name;
    s.values = std::move(values);
    ranked.push_back({s, t});
  };
  add("tra", {8}, 1.0);
  add("tra", {7}, 1.05);
  add("tra", {9}, 1.06);
  add("linear", {}, 1.1);
  add("tra", {16}, 1.2);
  add("tra", {4}, 1.3);
  add("pairwise", {}, 2.0);
  add("tra", {2}, 2.5);
  add("tra", {32}, 4.0);  // beyond the margin
  // First round: one per family within the margin, then the next best (tra radix 7). Then the
  // neighbours a factor of two away not on the list: tra radix 8's 16 and 4 (not 7 and 9: one
  // apart they cost about the same), tra radix 7's 2 (its 14 and up is 16, taken).
  const Shortlist sl = shortlist(ranked);
  EXPECT_EQ(sl.to_string(),
            "tra:radix=8;linear;pairwise;tra:radix=7;0~tra:radix=16;0~tra:radix=4;3~tra:radix=2;");
  EXPECT_EQ(shortlist(ranked, ShortlistPolicy{3.0, 4, 0}).entries.size(), 4u);
}

// MPIX_TRIAL_SKIP leaves an algorithm out of both rounds of a trial, the refinements too (issue
// 51: the lab's trial ran zero_copy_bruck, a copying variant of bruck, in its second round,
// where SMPI delivered it stale bytes). Somewhere on these points the list holds it without the
// skip -- else this test could not fail.
TEST(Shortlist, ASkippedAlgorithmIsInNoRound) {
  Tuning tuning;
  const std::vector<std::string> skip{"zero_copy_bruck"};
  const Selection automatic{find_kind(Collective::Alltoall, AlgorithmKind::Auto), {}};
  auto holds = [&](const Shortlist& sl, bool& refinement) {
    for (std::size_t i = 0; i < sl.entries.size(); ++i)
      if (std::string(sl.entries[i].algorithm->name) == skip[0]) {
        refinement = refinement || sl.refines[i] >= 0;
        return true;
      }
    return false;
  };
  int without = 0;
  bool refinement = false;
  for (const Machine m : {Machine{64, 4, 16, true}, Machine{128, 8, 16, true},
                          Machine{256, 16, 16, true}, Machine::flat(48)})
    for (std::int64_t bytes : {8, 16, 32, 64, 128, 256, 512}) {
      Resolving in;
      in.tuning = &tuning;
      in.machine = m;
      in.stats.max_block = bytes;
      in.measure = true;
      without += holds(resolve(automatic, in), refinement);
      in.skip = &skip;
      bool ignored = false;
      EXPECT_FALSE(holds(resolve(automatic, in), ignored))
          << "P = " << m.nranks << ", " << bytes << " B";
    }
  EXPECT_GT(without, 0) << "no point lists it even without the skip";
  EXPECT_TRUE(refinement) << "no point lists it as a refinement";
}

// A document's text with comment leaders (" * ") and line breaks as single spaces.
std::string flat_text(const std::string& path) {
  std::ifstream in(path);
  EXPECT_TRUE(in) << "cannot read " << path;
  std::string raw((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>()), out;
  for (std::size_t at; (at = raw.find("\n * ")) != std::string::npos;) raw.replace(at, 4, " ");
  for (char c : raw) {
    const bool space = c == ' ' || c == '\n' || c == '\t';
    if (!space || (!out.empty() && out.back() != ' ')) out += space ? ' ' : c;
  }
  return out;
}

std::string num(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%g", v);
  return buf;
}

// The longest trial: the shortlist's entries of ours and the MPI library's call, then the most
// refinements a second round takes.
TrialRule longest_trial() {
  const TrialLimits lim;
  const ShortlistPolicy pol;
  std::vector<int> refines(pol.max + 1, -1);
  refines.insert(refines.end(), lim.refine_entries, 0);
  return TrialRule(refines, int(pol.max), lim);
}

void expect_says(const std::string& text, const std::string& what,
                 const std::vector<std::string>& fragments) {
  for (const std::string& says : fragments)
    EXPECT_NE(text.find(says), std::string::npos) << what << " no longer says \"" << says << "\"";
}

// The header, the first document a user reads, and the guide state the trial's limits in words:
// they are these constants, so changing one fails here until the documents say so too.
TEST(Header, StatesTheTrialsLimits) {
  const TrialLimits lim;
  const ShortlistPolicy pol;
  const std::string ordinal[] = {"0th", "1st", "2nd", "3rd", "4th", "5th"};
  ASSERT_LT(lim.min_samples, 6);
  const std::string gain = num(lim.min_gain * 100);
  expect_says(flat_text(MPIA_SOURCE_DIR "/include/mpi_advance.h.in"), "include/mpi_advance.h.in",
              {"at most " + std::to_string(pol.max) + " of ours",
               "From the " + ordinal[lim.min_samples] + " batch on",
               "at least " + gain + " % faster", "within " + gain + " % of each other",
               "after " + std::to_string(lim.max_samples) + " batches",
               "at most " + std::to_string(lim.refine_entries) + ")",
               "takes at most " + std::to_string(longest_trial().bound()) + " starts",
               "(" + std::to_string(lim.min_samples) + " batches a round when nothing is noisy)",
               "each block size, at most " + std::to_string(longest_trial().bound())});
}

TEST(Guide, StatesTheTrialsLimits) {
  const TrialLimits lim;
  const ShortlistPolicy pol;
  const int first = lim.max_samples * int(pol.max + 1);
  const std::string max = std::to_string(lim.max_samples);
  expect_says(
      flat_text(MPIA_SOURCE_DIR "/docs/guide.md"), "docs/guide.md",
      {"at most " + std::to_string(pol.max) + " of ours",
       "After " + std::to_string(lim.min_samples) + " batches",
       "beyond " + num(lim.z) + " standard errors",
       "`system` leaves only beyond " + num(lim.z_incumbent) + " (" + num(lim.z_final) +
           " at the round's last look, the " + max + "th batch",
       "looking up to " + std::to_string(lim.max_samples - lim.min_samples + 1) + " times",
       "at least " + num(lim.min_gain * 100) + " % faster", "or after " + max + " batches",
       "runner-up within " + num(lim.refine_margin * 100) + " %",
       "(noiseless simulation) " + std::to_string(lim.min_samples) + " batches a round",
       "At most " + max + " batches a round: with " + std::to_string(pol.max) +
           " of ours and `system`, at most " + std::to_string(first) + " starts, and " +
           std::to_string(longest_trial().bound() - first) + " more for a second round of " +
           std::to_string(lim.refine_entries) + " neighbours"});
}

}  // namespace
}  // namespace mpia
