#include "operation/trial.hpp"

#include "collective/model.hpp"
#include "operation/settings.hpp"
#include "util/error.hpp"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <limits>
#include <map>
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
  std::size_t at = 0;
  while (at < spec.size()) {
    std::size_t comma = spec.find(',', at);
    if (comma == std::string::npos) comma = spec.size();
    const std::string item = spec.substr(at, comma - at);
    at = comma + 1;
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

std::string micros(double s) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.3g", s * 1e6);
  return buf;
}

}  // namespace

TrialOperation::TrialOperation(std::unique_ptr<ScheduledOperation> exec,
                               std::vector<TrialEntry> entries, std::shared_ptr<PrivateComm> comm,
                               int tag, const TrialPoint& point, std::shared_ptr<TrialState> state)
    : exec_(std::move(exec)),
      entries_(std::move(entries)),
      comm_(std::move(comm)),
      tag_(tag),
      point_(point),
      state_(std::move(state)) {
  MPIA_CHECK(MPI_Comm_rank(comm_->get(), &rank_));
  MPIA_CHECK(MPI_Comm_size(comm_->get(), &size_));
  if (!state_) state_ = std::make_shared<TrialState>();
  if (state_->fastest.empty()) {
    state_->fastest.assign(entries_.size(), std::numeric_limits<double>::infinity());
    state_->shown = "trying";
    for (int i : round()) state_->shown += " " + entries_[std::size_t(i)].selection.to_string();
  }
  algorithm_ = entries_[0].selection.to_string();
  traffic_ = entries_[0].traffic;
  shown_algorithm_ = algorithm_;
  shown_traffic_ = traffic_;
}

TrialOperation::~TrialOperation() = default;

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
  if (state_->winner < 0 || active() || !exec_) return nullptr;
  use(state_->winner);
  exec_->set_trial(trial());
  exec_->tag = std::move(tag);
  exec_->threaded = threaded;
  return std::move(exec_);
}

void TrialOperation::use(int entry) {
  if (entry == current_) return;
  TrialEntry& e = entries_[std::size_t(entry)];
  std::shared_ptr<const Schedule> schedule = e.schedule;
  if (!schedule) {
    schedule = e.build(e.traffic);  // the lowered plan keeps what it needs: it goes after
  }
  exec_->relower(*schedule, e.selection.to_string(), e.traffic);
  current_ = entry;
  std::lock_guard<std::mutex> lock(shown_mutex_);
  shown_algorithm_ = e.selection.to_string();
  shown_traffic_ = e.traffic;
}

double TrialOperation::measured(int entry, double seconds) const {
  const std::string& spec = settings().trial_times;
  if (spec.empty()) return seconds;
  return fake_time(spec, entries_[std::size_t(entry)].selection.to_string(), rank_, seconds);
}

std::vector<int> TrialOperation::round() const {
  std::vector<int> out;
  if (state_->refining >= 0) {
    out.push_back(state_->refining);
    out.insert(out.end(), state_->second.begin(), state_->second.end());
    return out;
  }
  for (int i = 0; i < int(entries_.size()); ++i)
    if (entries_[std::size_t(i)].refines < 0) out.push_back(i);
  return out;
}

int TrialOperation::first_round() const {
  int n = 0;
  for (const TrialEntry& e : entries_) n += e.refines < 0;
  return n;
}

int TrialOperation::entry_for(int n) const {
  const int first = first_round();
  if (n < first * kTrialStarts) return n / kTrialStarts;
  return state_->second[std::size_t((n - first * kTrialStarts) / kRefineStarts)];
}

bool TrialOperation::do_start() {
  // Settled: the entry's own start, nothing timed (a settled request costs what its entry does).
  timing_ = state_->winner < 0;
  if (!timing_) {
    use(state_->winner);
    return start_part(*exec_);
  }
  use(entry_for(state_->starts));
  t0_ = MPI_Wtime();
  return start_part(*exec_) && data_done();
}

bool TrialOperation::data_done() {
  const double t = MPI_Wtime() - t0_;
  TrialState& s = *state_;
  const int n = s.starts++;
  double& f = s.fastest[std::size_t(current_)];
  f = std::min(f, measured(current_, t));
  // The starts of the trial up to the end of this round.
  const int last = first_round() * kTrialStarts + int(s.second.size()) * kRefineStarts;
  if (n + 1 < last) return true;
  agreed_ = s.fastest;
  if (size_ == 1) {
    settle();
    return true;
  }
  reducing_ = true;
  distance_ = 1;
  post_round();
  return false;
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
    int flag = 1;
    if (block)
      errors_.note(MPI_Waitall(2, reqs_, MPI_STATUSES_IGNORE), "MPI_Waitall (trial)");
    else
      errors_.note(MPI_Testall(2, reqs_, &flag, MPI_STATUSES_IGNORE), "MPI_Testall (trial)");
    if (!flag) return false;
    for (std::size_t i = 0; i < agreed_.size(); ++i)
      agreed_[i] = std::max(agreed_[i], incoming_[i]);
    distance_ *= 2;
    if (distance_ >= size_) break;
    post_round();
  }
  reducing_ = false;
  settle();
  return true;
}

void TrialOperation::settle() {
  // The round's entries, the one to beat first (the model's pick, or the first round's winner).
  const std::vector<int> r = round();
  int best = r[0];
  for (int i : r)
    if (agreed_[std::size_t(i)] < agreed_[std::size_t(best)]) best = i;
  // The model's pick stays unless beaten by the margin (in the second round too, when it won
  // the first); a measured winner is no better than what beats it by a little.
  if (r[0] == 0 && agreed_[std::size_t(best)] > (1 - kKeepMargin) * agreed_[0]) best = 0;
  std::string times;
  for (std::size_t i = 0; i < entries_.size(); ++i)
    if (agreed_[i] < std::numeric_limits<double>::infinity())
      times += (times.empty() ? " " : ", ") + entries_[i].selection.to_string() + "=" +
               micros(agreed_[i]) + "us";
  if (state_->refining < 0) {
    // A second round: best's refinements, and the runner-up's when it came within the margin.
    int runner = -1;
    for (int i : r)
      if (i != best && (runner < 0 || agreed_[std::size_t(i)] < agreed_[std::size_t(runner)]))
        runner = i;
    const bool close = runner >= 0 && agreed_[std::size_t(runner)] <=
                                          (1 + kRefineMargin) * agreed_[std::size_t(best)];
    std::vector<int> second;
    for (int of : {best, close ? runner : -1})
      for (int i = 0; i < int(entries_.size()) && of >= 0; ++i)
        if (entries_[std::size_t(i)].refines == of && int(second.size()) < kRefineEntries)
          second.push_back(i);
    if (!second.empty()) {
      std::string text = "refining " + entries_[std::size_t(best)].selection.to_string() + " with";
      for (int i : second) text += " " + entries_[std::size_t(i)].selection.to_string();
      std::lock_guard<std::mutex> lock(shown_mutex_);
      state_->refining = best;
      state_->second = std::move(second);
      state_->shown = text + " after" + times;
      return;
    }
  }
  state_->winner = best;
  const std::string text =
      "chose " + entries_[std::size_t(best)].selection.to_string() + " after" + times;
  const bool report = settings().report && rank_ == 0;
  {
    std::lock_guard<std::mutex> lock(shown_mutex_);
    state_->shown = text;
    shown_algorithm_ = entries_[std::size_t(best)].selection.to_string();
    shown_traffic_ = entries_[std::size_t(best)].traffic;
  }
  if (report)
    std::fprintf(stderr, "mpi-advance: auto %s P=%d bytes=%lld: %s\n",
                 collective_name(point_.collective), point_.nranks,
                 static_cast<long long>(point_.bytes), text.c_str());
  if (!settings().tuning_out.empty()) {
    Settled& s = settled();
    std::lock_guard<std::mutex> lock(s.mutex);
    s.rules[{int(point_.collective), point_.nranks, point_.nnodes, point_.bytes}] =
        entries_[std::size_t(best)].selection.to_string();
  }
}

bool TrialOperation::do_progress(bool block) {
  if (!reducing_) {
    if (!progress_part(*exec_, block)) return false;
    if (!timing_ || data_done()) return true;
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
