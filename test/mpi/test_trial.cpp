// The measured trial of persistent auto requests (src/operation/trial.hpp): every start of the
// trial delivers the right data, every rank settles on the same entry even when ranks measure
// differently, the choice follows the (injected) times, several requests in trial at once
// complete in any order, and the trial is off where it must be.
//
// Injected times: MPIX_TRIAL_TIMES (read once per process, so each value is a registration of
// its own in trial.cmake) replaces what a start measures; MPIA_TEST_TRIAL_WINNER names what the
// trial must then settle on: "pick" (the model's pick, the shortlist's first entry) or a prefix
// of an entry's selection (that entry, which the shortlist must hold), or "!prefix" (the first
// entry not starting with prefix).
#include "test_support.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <regex>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

using namespace mpia_test;

namespace {

// The trial ends within this many starts: TrialRule::bound() for the longest shortlist (4 of
// ours and the MPI library's call, 20 batches; 6 refinements and their incumbent, 20 batches),
// and the start that learns the winner.
constexpr int kTrialBound = 20 * 5 + 20 * 7 + 1;

// A settled trial's text (MPIX_Request_get_trial in include/mpi_advance.h); m[1]: its starts.
const std::regex kChoseText(
    R"(^chose \S+ after \S+=[0-9.e+-]+us(?:, \S+=[0-9.e+-]+us)*; ([0-9]+) starts, )");

std::string trial_text(MPIX_Request r) {
  char buf[MPIX_MAX_TRIAL_STRING];
  int len = -1;
  EXPECT_EQ(MPIX_Request_get_trial(r, buf, &len), MPI_SUCCESS);
  EXPECT_EQ(len, int(std::strlen(buf)));
  return buf;
}

std::string algorithm_of(MPIX_Request r) {
  char buf[MPIX_MAX_ALGORITHM_STRING];
  int len = 0;
  EXPECT_EQ(MPIX_Request_get_algorithm(r, buf, &len), MPI_SUCCESS);
  return buf;
}

// "trying a b c" -> {a, b, c}; "refining w with a b" -> {w, a, b}; else {}.
std::vector<std::string> entries_of(const std::string& text) {
  std::istringstream in(text);
  std::string word;
  std::vector<std::string> out;
  in >> word;
  if (word != "trying" && word != "refining") return out;
  while (in >> word)
    if (word != "with") out.push_back(word);
  return out;
}

// Whether every rank of comm holds the same string.
bool same_everywhere(MPI_Comm comm, const std::string& s) {
  const int n = int(s.size());
  int lo = n, hi = n;
  MPI_Allreduce(MPI_IN_PLACE, &lo, 1, MPI_INT, MPI_MIN, comm);
  MPI_Allreduce(MPI_IN_PLACE, &hi, 1, MPI_INT, MPI_MAX, comm);
  if (lo != hi) return false;
  std::vector<unsigned char> mine(s.begin(), s.end()), low(mine), high(mine);
  if (n == 0) return true;
  MPI_Allreduce(mine.data(), low.data(), n, MPI_UNSIGNED_CHAR, MPI_MIN, comm);
  MPI_Allreduce(mine.data(), high.data(), n, MPI_UNSIGNED_CHAR, MPI_MAX, comm);
  return low == high;
}

// What the trial must settle on, from MPIA_TEST_TRIAL_WINNER and the shortlist ("" = no rule):
// "pick", "!prefix" (the first entry not starting with prefix), or "prefix" (see above).
std::string expected_winner(const std::vector<std::string>& entries) {
  const char* w = std::getenv("MPIA_TEST_TRIAL_WINNER");
  if (!w || entries.empty()) return "";
  const std::string want(w);
  if (want == "pick") return entries[0];
  // "tie": the entries tie but for slow ones; the MPI library's call stays, except on two ranks,
  // where the model's pick does (TrialLimits::pick_incumbent).
  if (want == "tie") return comm_size(MPI_COMM_WORLD) == 2 ? entries[0] : entries.back();
  if (want[0] == '!') {
    for (const std::string& e : entries)
      if (e.compare(0, want.size() - 1, want, 1, std::string::npos) != 0) return e;
    return entries[0];
  }
  for (const std::string& e : entries)
    if (e.compare(0, want.size(), want) == 0) return e;
  ADD_FAILURE() << "the injected winner '" << want << "' is not on the shortlist: the test "
                << "would show nothing";
  return entries[0];
}

// An int alltoall of `count` per block, checked at every start with new data.
struct IntAlltoall {
  Layout layout = layout_int();
  Buffer send, recv;
  IntAlltoall(int count, int P) : send(layout, count, P, 0xA5), recv(layout, count, P, 0x5A) {}
};

MPIX_Request init_auto(MPI_Comm comm, IntAlltoall& b, int count, MPI_Info info = MPI_INFO_NULL) {
  MPIX_Request r = MPIX_REQUEST_NULL;
  EXPECT_EQ(MPIX_Alltoall_init(b.send.ptr(), count, MPI_INT, b.recv.ptr(), count, MPI_INT, comm,
                               info, &r),
            MPI_SUCCESS);
  return r;
}

// ------------------------------------------------------------------------------------------

// Every start of the trial and after it moves the right bytes, for derived types with holes and
// negative lower bounds and in place (the runner changes the data at every start).
TEST(TrialData, EveryStartIsRight) {
  const TypeCase cases[] = {
      {"int", layout_int, 1, layout_int, 1},
      {"vector_gaps/int", layout_vector_gaps, 1, layout_int, 6},
      {"negative_stride/double", layout_negative_stride, 1, layout_double, 2},
  };
  RunOptions opt;
  opt.iterations = kTrialBound + 3;
  opt.after_settled = 3;
  for (const TypeCase& tc : cases)
    for (int units : {1, 40}) {
      SCOPED_TRACE(std::string(tc.name) + " x" + std::to_string(units));
      run_persistent(MPI_COMM_WORLD, "", tc, units, opt);
    }
  opt.in_place = true;
  run_persistent(MPI_COMM_WORLD, "", layout_int(), 16, layout_int(), 16, opt);
}

// The trial's life: "trying <first round>" with the model's pick first and the MPI library's
// call (system) last; each start runs one of the entries the text names, the same entry on every
// rank; the text is the same on every rank at every step; a second round is "refining <winner>
// with <refinements>"; then "chose <entry> after <medians>; ..." and that entry for good, within
// kTrialBound starts; the data right at every start.
TEST(TrialAgreement, SettlesOnOneEntryEverywhere) {
  const int P = comm_size(MPI_COMM_WORLD), me = comm_rank(MPI_COMM_WORLD);
  const int count = 8;
  IntAlltoall b(count, P);
  MPIX_Request r = init_auto(MPI_COMM_WORLD, b, count);
  ASSERT_NE(r, MPIX_REQUEST_NULL);
  const std::string first = trial_text(r);
  const std::vector<std::string> entries = entries_of(first);
  EXPECT_TRUE(same_everywhere(MPI_COMM_WORLD, first)) << first;
  if (P == 1) EXPECT_EQ(first, "") << "nothing to measure on one rank";
  if (P > 1) {
    ASSERT_GE(entries.size(), 2u) << "expected a shortlist at P = " << P << ": '" << first << "'";
    EXPECT_LE(entries.size(), 5u);
    EXPECT_EQ(entries.back(), "system") << "the MPI library's call is always tried: " << first;
    EXPECT_EQ(algorithm_of(r), entries[0]) << "before the trial: the model's pick";
  }
  std::vector<std::string> tried = entries, before = entries;  // before: the text's entries
  std::string settled, refined;                                // before this start
  int after_settled = 0;
  // MPIA_TEST_TRIAL_LATE_MS: rank 0 enters every start that much after the others.
  const char* late = std::getenv("MPIA_TEST_TRIAL_LATE_MS");
  const int late_ms = late ? std::atoi(late) : 0;
  for (int it = 0; it < kTrialBound + 4; ++it) {
    b.send.fill(me, it, true);
    b.recv.poison(0xEE);
    if (me == 0 && late_ms > 0) std::this_thread::sleep_for(std::chrono::milliseconds(late_ms));
    ASSERT_EQ(MPIX_Start(&r), MPI_SUCCESS);
    ASSERT_EQ(MPIX_Wait(&r, MPI_STATUS_IGNORE), MPI_SUCCESS);
    EXPECT_EQ(b.recv.check(me, it, false, "start " + std::to_string(it)), 0);
    const std::string text = trial_text(r), ran = algorithm_of(r);
    if (entries.empty()) continue;
    EXPECT_TRUE(same_everywhere(MPI_COMM_WORLD, text)) << "start " << it << ": " << text;
    EXPECT_TRUE(same_everywhere(MPI_COMM_WORLD, ran)) << "start " << it << ": " << ran;
    if (!settled.empty()) {  // after the trial: its winner, for good (4 starts show it)
      EXPECT_EQ(text, settled) << "start " << it;
      EXPECT_EQ(ran, settled.substr(6, settled.find(' ', 6) - 6)) << "start " << it;
      if (++after_settled == 4) break;
      continue;
    }
    // MPIX_Request_get_algorithm reports the entry the last start ran: the first batch runs
    // the first round's entries in the text's order, one start each.
    if (it < int(entries.size()))
      EXPECT_EQ(ran, entries[std::size_t(it)]) << "start " << it << " of the first batch";
    // The entry that ran was in the round when the start began (its agreement, at the end of
    // the start, may have dropped it since).
    EXPECT_NE(std::find(before.begin(), before.end(), ran), before.end())
        << "start " << it << " ran " << ran << ", not in the round before it";
    if (text.rfind("chose ", 0) == 0) {
      EXPECT_LE(it + 1, kTrialBound) << text;
      EXPECT_EQ(text.compare(6, ran.size() + 1, ran + " "), 0) << text << " vs " << ran;
      // The header's "chose <entry> after <entry>=<us>us, ...; <n> starts, ...": n counts the
      // trial's starts, at least 3 batches of the first round's entries (nothing is decided
      // before), and every start so far was one.
      std::smatch m;
      ASSERT_TRUE(std::regex_search(text, m, kChoseText)) << text;
      const int n = std::stoi(m[1].str());
      EXPECT_GE(n, 3 * int(entries.size())) << text;
      EXPECT_EQ(n, it + 1) << text << ": every start of a request's trial is one of its starts";
      EXPECT_NE(std::find(tried.begin(), tried.end(), ran), tried.end()) << ran;
      const std::string want = expected_winner(tried);
      if (!want.empty()) EXPECT_EQ(ran, want) << text;
      if (std::getenv("MPIA_TEST_TRIAL_REFINED"))  // the winner was a refinement
        EXPECT_FALSE(refined.empty()) << "no second round: " << text;
      settled = text;
      continue;
    }
    const std::vector<std::string> now = entries_of(text);
    ASSERT_FALSE(now.empty()) << "start " << it << ": " << text;
    before = now;
    if (text.rfind("refining ", 0) == 0) {
      if (refined.empty()) {
        refined = now[0];
        EXPECT_NE(std::find(entries.begin(), entries.end(), refined), entries.end()) << text;
        EXPECT_LE(now.size(), 7u) << text;
      }
      for (const std::string& e : now)
        if (std::find(tried.begin(), tried.end(), e) == tried.end()) tried.push_back(e);
    }
  }
  if (P > 1) EXPECT_FALSE(settled.empty()) << "never settled";
  ASSERT_EQ(MPIX_Request_free(&r), MPI_SUCCESS);
}

// Requests in turn on one communicator, each measured to its end: the later ones take the
// communicator's clock estimate (trial.hpp: within a second of it, rank 0 says so down the tree)
// instead of making their own, and must settle as the first did -- under MPIX_TRIAL_SKEW
// (mpi.env.trial_sync_skew) only a right offset on every rank keeps rank 0's slow entry slow.
TEST(TrialAgreement, LaterRequestsShareTheClockEstimate) {
  const int P = comm_size(MPI_COMM_WORLD), me = comm_rank(MPI_COMM_WORLD);
  if (P == 1) GTEST_SKIP() << "no trial on one rank";
  const int count = 8;
  for (int k = 0; k < 3; ++k) {
    IntAlltoall b(count, P);
    MPIX_Request r = init_auto(MPI_COMM_WORLD, b, count);
    ASSERT_NE(r, MPIX_REQUEST_NULL);
    const std::vector<std::string> entries = entries_of(trial_text(r));
    std::string text;
    for (int it = 0; it < kTrialBound && text.rfind("chose ", 0) != 0; ++it) {
      b.send.fill(me, it + 100 * k, true);
      b.recv.poison(0xEE);
      ASSERT_EQ(MPIX_Start(&r), MPI_SUCCESS);
      ASSERT_EQ(MPIX_Wait(&r, MPI_STATUS_IGNORE), MPI_SUCCESS);
      EXPECT_EQ(b.recv.check(me, it + 100 * k, false, "request " + std::to_string(k)), 0);
      text = trial_text(r);
    }
    EXPECT_EQ(text.rfind("chose ", 0), 0u) << "request " << k << " never settled: " << text;
    EXPECT_TRUE(same_everywhere(MPI_COMM_WORLD, text)) << text;
    const std::string want = expected_winner(entries);
    if (!want.empty()) EXPECT_EQ(algorithm_of(r), want) << "request " << k << ": " << text;
    ASSERT_EQ(MPIX_Request_free(&r), MPI_SUCCESS);
  }
}

// Three requests in trial at once (different block sizes, so different shortlists), started
// together and completed in an order that differs by rank, until all three settled (at most
// kTrialBound starts): no hang, right data, and each settles on the same entry on every rank.
TEST(TrialAgreement, ManyRequestsAnyCompletionOrder) {
  const int P = comm_size(MPI_COMM_WORLD), me = comm_rank(MPI_COMM_WORLD);
  const int counts[3] = {1, 64, 1024};
  std::vector<IntAlltoall> bufs;
  bufs.reserve(3);
  MPIX_Request reqs[3];
  for (int i = 0; i < 3; ++i) {
    bufs.emplace_back(counts[i], P);
    reqs[i] = init_auto(MPI_COMM_WORLD, bufs[std::size_t(i)], counts[i]);
  }
  int after_settled = 0;
  for (int it = 0; it < kTrialBound + 1; ++it) {
    for (int i = 0; i < 3; ++i) {
      bufs[std::size_t(i)].send.fill(me, it + 7 * i, true);
      bufs[std::size_t(i)].recv.poison(0xEE);
    }
    ASSERT_EQ(MPIX_Startall(3, reqs), MPI_SUCCESS);
    if (me % 3 == 0) {
      for (int i = 2; i >= 0; --i) ASSERT_EQ(MPIX_Wait(&reqs[i], MPI_STATUS_IGNORE), MPI_SUCCESS);
    } else if (me % 3 == 1) {
      int done = 0;
      bool finished[3] = {false, false, false};
      while (done < 3)
        for (int i = 0; i < 3; ++i) {
          if (finished[i]) continue;
          int flag = 0;
          ASSERT_EQ(MPIX_Test(&reqs[i], &flag, MPI_STATUS_IGNORE), MPI_SUCCESS);
          if (flag) finished[i] = true, ++done;
        }
    } else {
      ASSERT_EQ(MPIX_Waitall(3, reqs, MPI_STATUSES_IGNORE), MPI_SUCCESS);
    }
    for (int i = 0; i < 3; ++i)
      EXPECT_EQ(bufs[std::size_t(i)].recv.check(
                    me, it + 7 * i, false,
                    "request " + std::to_string(i) + " start " + std::to_string(it)),
                0);
    // Three more starts once all three have settled (the texts are agreed: every rank stops
    // at the same start).
    if (trial_settled(reqs[0]) && trial_settled(reqs[1]) && trial_settled(reqs[2]) &&
        ++after_settled == 3)
      break;
  }
  for (int i = 0; i < 3; ++i) {
    const std::string text = trial_text(reqs[i]);
    if (P > 1) EXPECT_EQ(text.rfind("chose ", 0), 0u) << "request " << i << ": " << text;
    EXPECT_TRUE(same_everywhere(MPI_COMM_WORLD, text)) << text;
    EXPECT_TRUE(same_everywhere(MPI_COMM_WORLD, algorithm_of(reqs[i])));
    ASSERT_EQ(MPIX_Request_free(&reqs[i]), MPI_SUCCESS);
  }
}

// No trial for an explicit algorithm, info mpix_auto=model, or under MPIX_AUTO=model; a bad
// mpix_auto value is MPI_ERR_INFO_VALUE, and ranks that disagree on it fail alike.
TEST(TrialOff, WhereItMustBe) {
  const int P = comm_size(MPI_COMM_WORLD), me = comm_rank(MPI_COMM_WORLD);
  const int count = 8;
  IntAlltoall b(count, P);
  const char* env = std::getenv("MPIX_AUTO");
  const bool env_model = env && std::string(env) == "model";

  MPIX_Request r = init_auto(MPI_COMM_WORLD, b, count);
  const bool measured = !trial_text(r).empty();
  if (env_model)
    EXPECT_FALSE(measured) << "MPIX_AUTO=model";
  else if (P > 1)
    EXPECT_TRUE(measured);
  MPIX_Request_free(&r);

  MPI_Info info;
  MPI_Info_create(&info);
  MPI_Info_set(info, MPIX_INFO_KEY_ALGORITHM, "pairwise");
  r = init_auto(MPI_COMM_WORLD, b, count, info);
  EXPECT_EQ(trial_text(r), "") << "explicit algorithm";
  EXPECT_EQ(algorithm_of(r), "pairwise");
  MPIX_Request_free(&r);
  MPI_Info_free(&info);

  MPI_Info_create(&info);
  MPI_Info_set(info, MPIX_INFO_KEY_AUTO, "model");
  r = init_auto(MPI_COMM_WORLD, b, count, info);
  EXPECT_EQ(trial_text(r), "") << "info mpix_auto=model";
  for (int it = 0; it < 20; ++it) {
    b.send.fill(me, it, true);
    ASSERT_EQ(MPIX_Start(&r), MPI_SUCCESS);
    ASSERT_EQ(MPIX_Wait(&r, MPI_STATUS_IGNORE), MPI_SUCCESS);
    EXPECT_EQ(b.recv.check(me, it, false, "model start " + std::to_string(it)), 0);
    EXPECT_EQ(trial_text(r), "");
  }
  MPIX_Request_free(&r);
  MPI_Info_free(&info);

  ScopedErrhandler eh(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
  MPI_Info_create(&info);
  MPI_Info_set(info, MPIX_INFO_KEY_AUTO, "sometimes");
  r = MPIX_REQUEST_NULL;
  int rc = MPIX_Alltoall_init(b.send.ptr(), count, MPI_INT, b.recv.ptr(), count, MPI_INT,
                              MPI_COMM_WORLD, info, &r);
  EXPECT_EQ(error_class(rc), MPI_ERR_INFO_VALUE);
  EXPECT_EQ(r, MPIX_REQUEST_NULL);
  MPI_Info_free(&info);

  // Rank 0 turns the trial off, the others do not: the same class on every rank.
  if (P > 1 && measured) {
    MPI_Info_create(&info);
    MPI_Info_set(info, MPIX_INFO_KEY_AUTO, me == 0 ? "model" : "measure");
    rc = MPIX_Alltoall_init(b.send.ptr(), count, MPI_INT, b.recv.ptr(), count, MPI_INT,
                            MPI_COMM_WORLD, info, &r);
    EXPECT_EQ(error_class(rc), MPI_ERR_ARG);
    EXPECT_EQ(r, MPIX_REQUEST_NULL);
    MPI_Info_free(&info);
  }
}

// Under MPIX_REPORT (trial.cmake's trial_blocking), rank 0 says what a blocking trial of
// collective settled on; with the injected times, the entry named by MPIA_TEST_TRIAL_WINNER
// when it was tried.
void expect_settled(const std::string& said, const std::string& collective) {
  const int P = comm_size(MPI_COMM_WORLD);
  if (!std::getenv("MPIX_REPORT") || comm_rank(MPI_COMM_WORLD) != 0) return;
  const std::string head = "mpi-advance: auto " + collective + " P=" + std::to_string(P) + " ";
  const std::size_t at = said.find(head);
  ASSERT_NE(at, std::string::npos) << "no settled trial reported:\n" << said;
  const std::string line = said.substr(at, said.find('\n', at) - at);
  const char* want = std::getenv("MPIA_TEST_TRIAL_WINNER");
  if (want && line.find(" " + std::string(want)) != std::string::npos)
    EXPECT_NE(line.find("chose " + std::string(want)), std::string::npos) << line;
}

// Blocking alltoallv under auto: a pattern that keeps coming back gets an agreed plan of the
// cache, which measures its shortlist over the calls that hit it, the data right at every call,
// while the buffers move between calls (the entry is lowered anew and its trial goes on) -- on
// rank 0 at every call, elsewhere every third: ranks lower plans at different calls, which
// must stay local (the MPI library's entry among them: a persistent collective made there
// would put the ranks' collectives out of step), so the collectives after it still match.
TEST(TrialBlocking, AgreedPlanSettles) {
  const int P = comm_size(MPI_COMM_WORLD), me = comm_rank(MPI_COMM_WORLD);
  const int count = 16;
  Layout layout = layout_int();
  Buffer send[2] = {Buffer(layout, count, P, 0xA5), Buffer(layout, count, P, 0xA6)};
  Buffer recv[2] = {Buffer(layout, count, P, 0x5A), Buffer(layout, count, P, 0x5B)};
  std::vector<int> counts(std::size_t(P), count);
  std::vector<int> displs(static_cast<std::size_t>(P));
  for (int i = 0; i < P; ++i) displs[std::size_t(i)] = i * count;
  const std::string said = capture_stderr([&] {
    for (int it = 0; it < 60; ++it) {
      const int k = me == 0 ? it % 2 : (it / 3) % 2;  // the buffers move
      send[k].fill(me, it, true);
      recv[k].poison(0xEE);
      ASSERT_EQ(MPIX_Alltoallv(send[k].ptr(), counts.data(), displs.data(), MPI_INT, recv[k].ptr(),
                               counts.data(), displs.data(), MPI_INT, MPI_COMM_WORLD),
                MPI_SUCCESS);
      EXPECT_EQ(recv[k].check(me, it, false, "call " + std::to_string(it)), 0);
    }
  });
  expect_settled(said, "alltoallv");
  // The communicator's collectives still match on every rank.
  int one = 1, sum = 0;
  ASSERT_EQ(MPI_Allreduce(&one, &sum, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD), MPI_SUCCESS);
  EXPECT_EQ(sum, P);
  MPIX_Request r = MPIX_REQUEST_NULL;
  send[0].fill(me, 99, true);
  recv[0].poison(0xEE);
  ASSERT_EQ(
      MPIX_Alltoallv_init(send[0].ptr(), counts.data(), displs.data(), MPI_INT, recv[0].ptr(),
                          counts.data(), displs.data(), MPI_INT, MPI_COMM_WORLD, MPI_INFO_NULL, &r),
      MPI_SUCCESS);
  ASSERT_EQ(MPIX_Start(&r), MPI_SUCCESS);
  ASSERT_EQ(MPIX_Wait(&r, MPI_STATUS_IGNORE), MPI_SUCCESS);
  EXPECT_EQ(recv[0].check(me, 99, false, "persistent after the blocking calls"), 0);
  MPIX_Request_free(&r);
}

// Blocking alltoall under auto: the calls of one block size try the size's shortlist and then
// run the winner, the data right at every call, while the buffers move (a rank's plan cache
// misses; the trial goes on where it was), a call of another size between two calls (its own
// trial, interleaved), and half of the calls with a derived type (never cached: a plan per call).
TEST(TrialBlocking, AlltoallSettles) {
  const int P = comm_size(MPI_COMM_WORLD), me = comm_rank(MPI_COMM_WORLD);
  const int count = 16, other = 3;
  // Holes and a lower bound of 4: 2 ints per element, so 8 elements are count ints' bytes.
  Layout layout = layout_int(), holes = layout_resized_lb();
  Buffer send[2] = {Buffer(layout, count, P, 0xA5), Buffer(layout, count, P, 0xA6)};
  Buffer recv[2] = {Buffer(layout, count, P, 0x5A), Buffer(layout, count, P, 0x5B)};
  Buffer hsend(holes, count / 2, P, 0xA7), hrecv(holes, count / 2, P, 0x5C);
  Buffer osend(layout, other, P, 0xA8), orecv(layout, other, P, 0x5D);
  const std::string said = capture_stderr([&] {
    for (int it = 0; it < 80; ++it) {
      const int k = (it / 3) % 2;  // the buffers move every third call
      const bool h = it % 2 == 1;
      Buffer& s = h ? hsend : send[k];
      Buffer& r = h ? hrecv : recv[k];
      const MPI_Datatype t = h ? holes.type() : layout.type();
      const int n = h ? count / 2 : count;
      s.fill(me, it, true);
      r.poison(0xEE);
      ASSERT_EQ(MPIX_Alltoall(s.ptr(), n, t, r.ptr(), n, t, MPI_COMM_WORLD), MPI_SUCCESS);
      EXPECT_EQ(r.check(me, it, false, "call " + std::to_string(it)), 0);
      if (it % 5 == 0) {
        osend.fill(me, it, true);
        orecv.poison(0xEE);
        ASSERT_EQ(
            MPIX_Alltoall(osend.ptr(), other, MPI_INT, orecv.ptr(), other, MPI_INT, MPI_COMM_WORLD),
            MPI_SUCCESS);
        EXPECT_EQ(orecv.check(me, it, false, "other call " + std::to_string(it)), 0);
      }
    }
  });
  expect_settled(said, "alltoall");
}

// A persistent neighbor alltoallv under auto on a periodic ring of emulated 2-rank nodes
// (trial.cmake's trial_neighbor: direct and locality are both candidates): every start of the
// trial and after it delivers the right data, and every rank settles alike.
TEST(TrialNeighbor, EveryStartIsRight) {
  const int P = comm_size(MPI_COMM_WORLD), me = comm_rank(MPI_COMM_WORLD);
  if (P < 3) GTEST_SKIP() << "a ring of distinct neighbours needs 3 ranks";
  MPI_Comm ring;
  int dims[1] = {P}, periods[1] = {1};
  ASSERT_EQ(MPI_Cart_create(MPI_COMM_WORLD, 1, dims, periods, 0, &ring), MPI_SUCCESS);
  const int n = 64;
  std::vector<int> send(2 * n), recv(2 * n), counts{n, n}, displs{0, n};
  MPIX_Request r = MPIX_REQUEST_NULL;
  ASSERT_EQ(
      MPIX_Neighbor_alltoallv_init(send.data(), counts.data(), displs.data(), MPI_INT, recv.data(),
                                   counts.data(), displs.data(), MPI_INT, ring, MPI_INFO_NULL, &r),
      MPI_SUCCESS);
  const int left = (me + P - 1) % P, right = (me + 1) % P;
  // Block 0 goes to (comes from) the -1 neighbour, block 1 to (from) the +1 neighbour.
  auto value = [](int src, int block, int it, int j) {
    return src * 100000 + block * 10000 + it * 100 + j;
  };
  int after_settled = 0;
  for (int it = 0; it < kTrialBound + 4; ++it) {
    for (int b = 0; b < 2; ++b)
      for (int j = 0; j < n; ++j) send[std::size_t(b * n + j)] = value(me, b, it, j);
    std::fill(recv.begin(), recv.end(), -1);
    ASSERT_EQ(MPIX_Start(&r), MPI_SUCCESS);
    ASSERT_EQ(MPIX_Wait(&r, MPI_STATUS_IGNORE), MPI_SUCCESS);
    long wrong = 0;
    for (int j = 0; j < n; ++j) {
      wrong += recv[std::size_t(j)] != value(left, 1, it, j);
      wrong += recv[std::size_t(n + j)] != value(right, 0, it, j);
    }
    EXPECT_EQ(wrong, 0) << "start " << it << " (" << algorithm_of(r) << ")";
    if (trial_settled(r) && ++after_settled == 4) break;
  }
  const std::string text = trial_text(r);
  EXPECT_TRUE(same_everywhere(MPI_COMM_WORLD, text)) << text;
  if (!text.empty()) EXPECT_EQ(text.rfind("chose ", 0), 0u) << text;
  MPIX_Request_free(&r);
  MPI_Comm_free(&ring);
}

// Under MPIX_TUNING=<a file MPIX_TUNING_OUT wrote> (trial.cmake's trial_tuning_in): the file
// has the rule of the point TrialAgreement.SettlesOnOneEntryEverywhere settled (int blocks of
// 8, every rank's node alone or not as it is here), and a request at that point runs it without
// a trial.
TEST(TrialTuningFile, StartsSettled) {
  const char* path = std::getenv("MPIX_TUNING");
  if (!path) GTEST_SKIP() << "MPIX_TUNING not set";
  const int P = comm_size(MPI_COMM_WORLD);
  std::ifstream in(path);
  ASSERT_TRUE(in) << path;
  std::string line, rule;
  const std::string head = "alltoall nranks=" + std::to_string(P) + " ";
  while (std::getline(in, line))
    if (line.rfind(head, 0) == 0 && line.find(" bytes=32 ") != std::string::npos)
      rule = line.substr(line.rfind(' ') + 1);
  ASSERT_FALSE(rule.empty()) << "no rule for P = " << P << ", 32 B in " << path;
  EXPECT_EQ(rule.rfind("bruck", 0), 0u) << "the injected winner was bruck: " << rule;
  IntAlltoall b(8, P);
  MPIX_Request r = init_auto(MPI_COMM_WORLD, b, 8);
  EXPECT_EQ(trial_text(r), "") << "a tuning rule: nothing to measure";
  EXPECT_EQ(algorithm_of(r), rule);
  const int me = comm_rank(MPI_COMM_WORLD);
  for (int it = 0; it < 3; ++it) {
    b.send.fill(me, it, true);
    ASSERT_EQ(MPIX_Start(&r), MPI_SUCCESS);
    ASSERT_EQ(MPIX_Wait(&r, MPI_STATUS_IGNORE), MPI_SUCCESS);
    EXPECT_EQ(b.recv.check(me, it, false, "start " + std::to_string(it)), 0);
  }
  MPIX_Request_free(&r);
}

}  // namespace
