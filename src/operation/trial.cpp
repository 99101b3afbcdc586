#include "operation/trial.hpp"

#include "collective/model.hpp"
#include "operation/settings.hpp"
#include "util/error.hpp"
#include "util/strings.hpp"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <limits>
#include <map>
#include <random>
#include <tuple>

namespace mpia {

namespace {

// The settled trials of this process, for MPIX_TUNING_OUT: the last settled winner per point.
struct Settled {
  std::mutex mutex;
  std::map<std::tuple<int, int, int, std::int64_t>, std::string> rules;
};
Settled& settled() {
  static Settled s;
  return s;
}

// MPIX_TRIAL_TIMES="prefix=us,prefix@rank=us,*=us": the time a start of an entry whose
// selection text begins with prefix takes, in microseconds (on every rank, or on that rank of
// the communicator); the longest matching prefix wins, a rank-specific one over a general one
// of the same length; "*" matches every entry. No match: the measured time.
double fake_time(const std::string& spec, const std::string& name, int rank, double measured) {
  std::size_t best_len = 0;
  bool best_ranked = false, found = false;
  double value = measured;
  for (const std::string& item : split(spec, ',')) {
    const std::size_t eq = item.rfind('=');
    if (eq == std::string::npos) continue;
    std::string prefix = item.substr(0, eq);
    bool ranked = false;
    const std::size_t atsign = prefix.find('@');
    if (atsign != std::string::npos) {
      if (std::atoi(prefix.c_str() + atsign + 1) != rank) continue;
      prefix.resize(atsign);
      ranked = true;
    }
    const bool any = prefix == "*";
    if (!any && name.compare(0, prefix.size(), prefix) != 0) continue;
    const std::size_t len = any ? 0 : prefix.size();
    if (found && (len < best_len || (len == best_len && best_ranked && !ranked))) continue;
    found = true;
    best_len = len;
    best_ranked = ranked;
    value = std::strtod(item.c_str() + eq + 1, nullptr) * 1e-6;
  }
  return value;
}

// MPIX_TRIAL_NOISE="mean[:seed]" (for tests): each measured time times 1 + an exponential draw
// of that mean, from a generator of this process's own (seeded with seed and the rank in
// MPI_COMM_WORLD): ranks see different noise, as on a real machine. 1 when unset.
double trial_noise() {
  const std::string& spec = settings().trial_noise;
  if (spec.empty()) return 1;
  static std::mutex mutex;
  static std::mt19937_64 rng = [&] {
    int world = 0;
    MPI_Comm_rank(MPI_COMM_WORLD, &world);
    const std::size_t colon = spec.find(':');
    const unsigned long long seed =
        colon == std::string::npos ? 1 : std::strtoull(spec.c_str() + colon + 1, nullptr, 10);
    return std::mt19937_64(seed * 1000003ULL + unsigned(world));
  }();
  const double mean = std::strtod(spec.c_str(), nullptr);
  if (!(mean > 0)) return 1;
  std::lock_guard<std::mutex> lock(mutex);
  return 1 + std::exponential_distribution<double>(1 / mean)(rng);
}

std::string micros(double s) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.3g", s * 1e6);
  return buf;
}

}  // namespace

TrialOperation::TrialOperation(std::unique_ptr<ScheduledOperation> exec,
                               std::vector<TrialEntry> entries, std::shared_ptr<PrivateComm> comm,
                               int tag, const TrialPoint& point, std::shared_ptr<TrialState> state,
                               const SystemMaker& system)
    : exec_(std::move(exec)),
      entries_(std::move(entries)),
      comm_(std::move(comm)),
      tag_(tag),
      point_(point),
      state_(std::move(state)) {
  MPIA_CHECK(MPI_Comm_rank(comm_->get(), &rank_));
  MPIA_CHECK(MPI_Comm_size(comm_->get(), &size_));
  std::vector<int> refines;
  for (int i = 0; i < int(entries_.size()); ++i) {
    refines.push_back(entries_[std::size_t(i)].refines);
    if (!entries_[std::size_t(i)].scheduled()) system_entry_ = i;
  }
  if (system_entry_ >= 0) system_ = system();
  if (!state_) state_ = std::make_shared<TrialState>();
  if (!state_->rule) {
    TrialLimits limits;
    limits.pick_incumbent = size_ == 2;
    state_->rule = std::make_unique<TrialRule>(std::move(refines), system_entry_, limits);
    show_round();
  }
  algorithm_ = name(0);
  traffic_ = entries_[0].traffic;
  shown_algorithm_ = algorithm_;
  shown_traffic_ = traffic_;
}

TrialOperation::~TrialOperation() = default;

Memory TrialOperation::memory() const {
  Memory m;
  if (exec_) m += exec_->memory();
  if (system_) m += system_->memory();
  m.bytes += sizeof(*this) + std::int64_t(entries_.capacity() * sizeof(TrialEntry));
  for (const TrialEntry& e : entries_)
    if (e.schedule) m.bytes += e.schedule->memory_bytes();
  return m;
}

std::string TrialOperation::algorithm() const {
  std::lock_guard<std::mutex> lock(shown_mutex_);
  return shown_algorithm_;
}

Traffic TrialOperation::traffic() const {
  std::lock_guard<std::mutex> lock(shown_mutex_);
  return shown_traffic_;
}

std::string TrialOperation::trial() const {
  std::lock_guard<std::mutex> lock(shown_mutex_);
  return state_->shown;
}

std::unique_ptr<Operation> TrialOperation::settled_part() {
  const int w = state_->winner;
  if (w < 0 || active() || (w == system_entry_ ? !system_ : !exec_)) return nullptr;
  std::unique_ptr<Operation> out;
  if (w == system_entry_) {
    out = std::move(system_);
  } else {
    use(w);
    out = std::move(exec_);
  }
  out->set_trial(trial());
  out->tag = std::move(tag);
  out->threaded = threaded;
  return out;
}

Operation& TrialOperation::part() {
  if (current_ == system_entry_) return *system_;
  return *exec_;
}

void TrialOperation::use(int entry) {
  current_ = entry;
  TrialEntry& e = entries_[std::size_t(entry)];
  if (entry != system_entry_ && entry != lowered_) {
    std::shared_ptr<const Schedule> schedule = e.schedule;
    if (!schedule) schedule = e.build(e.traffic);  // the lowered plan keeps what it needs
    exec_->relower(*schedule, e.selection.to_string(), e.traffic);
    lowered_ = entry;
  }
  std::lock_guard<std::mutex> lock(shown_mutex_);
  shown_algorithm_ = e.selection.to_string();
  shown_traffic_ = e.traffic;
}

double TrialOperation::measured(int entry, double seconds) {
  const Settings& s = settings();
  if (!s.trial_times.empty()) seconds = fake_time(s.trial_times, name(entry), rank_, seconds);
  return seconds * trial_noise();
}

// "trying a b c" (the round's entries still in), "refining W with a b" in the second round.
void TrialOperation::show_round() {
  const TrialRule& r = *state_->rule;
  std::string text;
  for (int i : r.entries()) {
    if (r.round() == 1 && text.empty()) {
      text = "refining " + name(i) + " with";
      continue;
    }
    text += (text.empty() ? "trying " : " ") + name(i);
  }
  std::lock_guard<std::mutex> lock(shown_mutex_);
  state_->shown = text;
}

bool TrialOperation::do_start() {
  TrialState& s = *state_;
  timing_ = s.winner < 0;
  // The entry is known here: the MPI library's call of a blocking collective's plan is made
  // inside the same blocking call on every rank, a persistent request's on a communicator of its
  // own (a PrivateComm made at init): either way after the barrier, in the same order everywhere.
  use(timing_ ? s.rule->batch_entry(s.batch_at) : s.winner);
  part_done_ = false;
  if (!timing_) return start_part(part()) && data_done();
  // One rank, or MPIX_TRIAL_SYNC=arrival (the default) once the ranks' clocks are related: no
  // barrier.
  if (size_ == 1 || (!settings().trial_barrier && s.clocked)) return begin_data();
  if (!settings().trial_barrier) {
    begin_sync();
    return do_progress(false);
  }
  // The opening barrier: the entry begins once every rank has entered this start, and its time
  // is counted from there.
  barrier_ = true;
  distance_ = 1;
  post_barrier();
  return do_progress(false);
}

// This start's time begins, and so does the entry's exchange. Returns whether the start is
// complete.
bool TrialOperation::begin_data() {
  t0_ = clock();
  part_done_ = start_part(part());
  return part_done_ && data_done();
}

double TrialOperation::clock() const {
  double t = MPI_Wtime();
  // MPIX_TRIAL_SKEW="rank=us,..." (for tests): that rank's clock reads that much ahead.
  const std::string& spec = settings().trial_skew;
  for (std::size_t at = 0; at < spec.size();) {
    std::size_t comma = spec.find(',', at);
    if (comma == std::string::npos) comma = spec.size();
    if (std::atoi(spec.c_str() + at) == rank_) {
      const std::size_t eq = spec.find('=', at);
      if (eq < comma) t += std::strtod(spec.c_str() + eq + 1, nullptr) * 1e-6;
    }
    at = comma + 1;
  }
  return t;
}

// The clock estimate's steps for this rank (binomial tree over the ranks, rank 0 its root):
// rank r > 0 first learns its offset from its parent r - 2^k (2^k the largest power of two not
// above r), then, like rank 0, gives their offsets to its children r + 2^j for every larger
// power of two 2^j (while r + 2^j < P). A parent sends a ping, its child answers with its clock
// as it saw the ping; kSyncPings times; then the parent sends the child its offset from rank 0.
constexpr int kSyncPings = 8;
// How long (rank 0's clock) a communicator's estimate serves later trials: clocks of different
// hosts drift apart by up to tens of microseconds per second without NTP, well under one with it.
constexpr double kClockReuse = 1.0;

void TrialOperation::begin_sync() {
  sync_steps_.clear();
  int d = 1;
  if (rank_ > 0) {
    while (2 * d <= rank_) d *= 2;
    sync_steps_.push_back({rank_ - d, true});
    d *= 2;
  }
  for (; rank_ + d < size_; d *= 2) sync_steps_.push_back({rank_ + d, false});
  state_->offset = 0;
  sync_step_ = 0;
  sync_ping_ = 0;
  sync_phase_ = 0;
  sync_reuse_ = 0;
  if (rank_ == 0) {  // the root decides, for every rank
    PrivateComm::TrialClock& tc = comm_->trial_clock;
    std::lock_guard<std::mutex> lock(tc.mutex);
    if (tc.generation > 0 && clock() - tc.when < kClockReuse) sync_reuse_ = tc.generation;
  }
  syncing_ = true;
}

// With reuse: the communicator's estimate of generation sync_reuse_ (or a later one) is this
// rank's offset, once this rank completed it. Otherwise the estimate just made becomes the
// communicator's next generation.
bool TrialOperation::clock_from_communicator() {
  PrivateComm::TrialClock& tc = comm_->trial_clock;
  std::lock_guard<std::mutex> lock(tc.mutex);
  if (tc.generation < sync_reuse_) return false;
  state_->offset = tc.offset;
  return true;
}

// Advances the clock estimate; true once this rank's steps are done. Phases of a step, as a
// child: 0 post the ping's receive, 1 wait for it (then answer), 2 wait for the answer's send, 3
// wait for the offset; as a parent: 0 send the ping and post the answer's receive, 1 wait for
// both, 2 wait for the offset's send.
//
// The first ping of a step says whether the communicator's estimate serves: -(generation + 1),
// else 0. Reuse: as a child, 1 wait for the ping (then, phase 4, for this rank's own completion
// of that generation), and the step is done; as a parent, the ping's send alone.
bool TrialOperation::sync(bool block) {
  const MPI_Comm c = comm_->get();
  while (sync_step_ < sync_steps_.size()) {
    const auto [peer, parent] = sync_steps_[sync_step_];
    if (sync_phase_ == 0) {
      if (parent) {
        errors_.note(MPI_Irecv(&sync_in_, 1, MPI_DOUBLE, peer, tag_, c, &reqs_[0]),
                     "MPI_Irecv (trial clock)");
      } else {
        if (sync_ping_ == 0) sync_rtt_ = -1;
        if (!sync_reuse_)
          errors_.note(MPI_Irecv(&sync_in_, 1, MPI_DOUBLE, peer, tag_, c, &reqs_[0]),
                       "MPI_Irecv (trial clock)");
        sync_sent_ = clock();
        sync_out_ = sync_reuse_ ? -double(sync_reuse_) - 1 : 0.0;
        errors_.note(MPI_Isend(&sync_out_, 1, MPI_DOUBLE, peer, tag_, c, &reqs_[1]),
                     "MPI_Isend (trial clock)");
      }
      sync_phase_ = 1;
    }
    if (sync_phase_ == 4) {  // reuse: this rank's own estimate of that generation
      // Not yet: the trial making it runs (its own first start), and is driven meanwhile.
      if (!clock_from_communicator()) return false;
    } else if (!rounds_done(block)) {
      return false;
    } else if (parent && sync_phase_ == 1 && sync_ping_ == 0 && sync_in_ < 0) {
      sync_reuse_ = int(-sync_in_ - 1);  // the parent says: the estimate of this generation
      sync_phase_ = 4;
      continue;
    }
    if (sync_reuse_) {
      // (phase 4 done, or, as a parent, the ping sent)
    } else if (parent) {
      if (sync_phase_ == 1) {  // the ping came: answer with this rank's clock
        sync_out_ = clock();
        errors_.note(MPI_Isend(&sync_out_, 1, MPI_DOUBLE, peer, tag_, c, &reqs_[1]),
                     "MPI_Isend (trial clock)");
        sync_phase_ = 2;
        continue;
      }
      if (sync_phase_ == 2) {
        if (++sync_ping_ < kSyncPings) {
          sync_phase_ = 0;
          continue;
        }
        errors_.note(MPI_Irecv(&sync_in_, 1, MPI_DOUBLE, peer, tag_, c, &reqs_[0]),
                     "MPI_Irecv (trial clock)");
        sync_phase_ = 3;
        continue;
      }
      state_->offset = sync_in_;  // phase 3: the offset came
    } else {
      if (sync_phase_ == 1) {  // the answer came
        const double now = clock(), rtt = now - sync_sent_;
        if (sync_rtt_ < 0 || rtt < sync_rtt_) {
          sync_rtt_ = rtt;
          sync_est_ = sync_in_ - (sync_sent_ + now) / 2;  // the child's clock less this rank's
        }
        if (++sync_ping_ < kSyncPings) {
          sync_phase_ = 0;
          continue;
        }
        sync_out_ = state_->offset + sync_est_;
        errors_.note(MPI_Isend(&sync_out_, 1, MPI_DOUBLE, peer, tag_, c, &reqs_[1]),
                     "MPI_Isend (trial clock)");
        sync_phase_ = 2;
        continue;
      }
      // phase 2: the offset was sent
    }
    ++sync_step_;
    sync_ping_ = 0;
    sync_phase_ = 0;
  }
  syncing_ = false;
  state_->clocked = true;
  if (!sync_reuse_) {  // a new estimate: the communicator's next generation
    PrivateComm::TrialClock& tc = comm_->trial_clock;
    std::lock_guard<std::mutex> lock(tc.mutex);
    ++tc.generation;
    tc.offset = state_->offset;
    tc.when = clock();
  }
  return true;
}

// Round k of the opening barrier: an empty message to rank + 2^k, one from rank - 2^k; after
// ceil(log2 P) rounds every rank has heard, through some path, from every other.
void TrialOperation::post_barrier() {
  const MPI_Comm c = comm_->get();
  errors_.note(MPI_Irecv(nullptr, 0, MPI_BYTE, (rank_ - distance_ % size_ + size_) % size_, tag_, c,
                         &reqs_[0]),
               "MPI_Irecv (trial barrier)");
  errors_.note(MPI_Isend(nullptr, 0, MPI_BYTE, (rank_ + distance_) % size_, tag_, c, &reqs_[1]),
               "MPI_Isend (trial barrier)");
}

bool TrialOperation::barrier(bool block) {
  for (;;) {
    if (!rounds_done(block)) return false;
    distance_ *= 2;
    if (distance_ >= size_) break;
    post_barrier();
  }
  barrier_ = false;
  return true;
}

bool TrialOperation::rounds_done(bool block) {
  int flag = 1;
  if (block)
    errors_.note(PMPI_Waitall(2, reqs_, MPI_STATUSES_IGNORE), "MPI_Waitall (trial)");
  else
    errors_.note(PMPI_Testall(2, reqs_, &flag, MPI_STATUSES_IGNORE), "MPI_Testall (trial)");
  return flag != 0;
}

// This start's data exchange is complete: its time goes to the agreement (the start completes
// with it), or, settled, nothing is timed.
//
// MPIX_TRIAL_SYNC=arrival: the start's time is from the last rank's start call to the last rank's
// completion (each rank's times on rank 0's clock, as estimated; the maxima agreed), what an
// application whose ranks arrive apart waits for beyond its own imbalance. A rank's own elapsed
// time would add the wait for the late ranks, the same for every entry, to every sample.
bool TrialOperation::data_done() {
  if (!timing_) return true;
  TrialState& s = *state_;
  const double seconds = measured(current_, clock() - t0_);
  if (settings().trial_barrier || size_ == 1) {
    s.batch.push_back(seconds);
  } else {
    s.batch.push_back(t0_ - s.offset + seconds);
    s.batch.push_back(t0_ - s.offset);
  }
  if (++s.batch_at < s.rule->batch_size()) return true;  // the batch goes on: nothing to agree
  agreed_.swap(s.batch);
  s.batch.clear();
  s.batch_at = 0;
  if (size_ == 1) {
    agreed();
    return true;
  }
  reducing_ = true;
  distance_ = 1;
  post_round();
  return false;
}

// The agreed (slowest rank's) times of the batch's starts, in its order: to the rule, which
// names the next batch's entries, or the winner.
void TrialOperation::agreed() {
  TrialRule& r = *state_->rule;
  const int before = r.round();
  const bool pairs = !settings().trial_barrier && size_ > 1;
  for (std::size_t i = 0; i < agreed_.size(); i += pairs ? 2 : 1)
    r.record(pairs ? agreed_[i] - agreed_[i + 1] : agreed_[i]);
  if (r.winner() >= 0)
    settle();
  else if (r.round() != before || r.starts() % int(r.entries().size()) == 0)
    show_round();
}

// Round k of the max-reduction: this rank's vector to rank + 2^k, its peer's from rank - 2^k;
// after ceil(log2 P) rounds every rank holds the maximum over all (the maximum is idempotent:
// the overlap of the last round changes nothing).
void TrialOperation::post_round() {
  const int n = int(agreed_.size());
  incoming_.assign(agreed_.size(), 0.0);
  const MPI_Comm c = comm_->get();
  errors_.note(MPI_Irecv(incoming_.data(), n, MPI_DOUBLE,
                         (rank_ - distance_ % size_ + size_) % size_, tag_, c, &reqs_[0]),
               "MPI_Irecv (trial)");
  errors_.note(
      MPI_Isend(agreed_.data(), n, MPI_DOUBLE, (rank_ + distance_) % size_, tag_, c, &reqs_[1]),
      "MPI_Isend (trial)");
}

bool TrialOperation::reduce(bool block) {
  for (;;) {
    if (!rounds_done(block)) return false;
    for (std::size_t i = 0; i < agreed_.size(); ++i)
      agreed_[i] = std::max(agreed_[i], incoming_[i]);
    distance_ *= 2;
    if (distance_ >= size_) break;
    post_round();
  }
  reducing_ = false;
  agreed();
  return true;
}

void TrialOperation::settle() {
  TrialState& s = *state_;
  const TrialRule& r = *s.rule;
  const int best = r.winner();
  s.winner = best;
  std::string times;
  for (int i = 0; i < int(entries_.size()); ++i)
    if (r.median(i) >= 0)
      times += (times.empty() ? " " : ", ") + name(i) + "=" + micros(r.median(i)) + "us";
  std::string text = "chose " + name(best) + " after" + times + "; " + std::to_string(r.starts()) +
                     " starts, " + micros(r.cost()) + "us over the choice's";
  const int sys = r.system();
  if (sys >= 0 && best != sys && r.median(sys) > 0 && r.median(best) > 0) {
    char ratio[32];
    std::snprintf(ratio, sizeof ratio, "%.2f", r.median(best) / r.median(sys));
    text += std::string("; ") + ratio + "x " + name(sys);
  } else if (sys >= 0 && best == sys)
    text += "; none of ours faster beyond the noise";
  const bool report = settings().report && rank_ == 0;
  {
    std::lock_guard<std::mutex> lock(shown_mutex_);
    s.shown = text;
    shown_algorithm_ = name(best);
    shown_traffic_ = entries_[std::size_t(best)].traffic;
  }
  if (report)
    std::fprintf(stderr, "mpi-advance: auto %s P=%d bytes=%lld: %s\n",
                 collective_name(point_.collective), point_.nranks,
                 static_cast<long long>(point_.bytes), text.c_str());
  if (!settings().tuning_out.empty()) {
    Settled& st = settled();
    std::lock_guard<std::mutex> lock(st.mutex);
    st.rules[{int(point_.collective), point_.nranks, point_.nnodes, point_.bytes}] = name(best);
  }
}

bool TrialOperation::do_progress(bool block) {
  if (syncing_) {
    if (!sync(block)) return false;
    if (begin_data()) return true;
  }
  if (barrier_) {
    if (!barrier(block)) return false;
    if (begin_data()) return true;
  }
  if (!reducing_) {
    if (!part_done_ && !(part_done_ = progress_part(part(), block))) return false;
    if (data_done()) return true;
  }
  return reduce(block);
}

void write_tuning_out() {
  const std::string& path = settings().tuning_out;
  if (path.empty()) return;
  int rank = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  if (rank != 0) return;
  Settled& s = settled();
  std::lock_guard<std::mutex> lock(s.mutex);
  std::ofstream out(path);
  out << "# mpi-advance: what persistent auto requests measured and settled on (MPIX_TUNING_OUT);\n"
         "# use it as MPIX_TUNING=<this file> to start settled. Rules: collective, ranks, nodes,\n"
         "# bytes (alltoall: the block; alltoallv: the largest block; neighbor: the largest "
         "message).\n";
  out << "model " << to_string(settings().tuning.model) << "\n";
  for (const auto& [k, sel] : s.rules) {
    const auto& [c, p, n, b] = k;
    out << collective_name(Collective(c)) << " nranks=" << p << " nodes=" << n << " bytes=" << b
        << " " << sel << "\n";
  }
  if (!out)
    std::fprintf(stderr, "mpi-advance: MPIX_TUNING_OUT='%s' could not be written\n", path.c_str());
}

}  // namespace mpia
