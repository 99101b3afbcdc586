#include "operation/settings.hpp"

#include "util/hash.hpp"

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <sstream>

namespace mpia {

namespace {

std::string env(const char* name) {
  const char* v = std::getenv(name);
  return v ? std::string(v) : std::string();
}

// A setting with two values: true when var is `other`; false when it is `usual` or unset. Any
// other value is ignored, with a note on stderr (and what holds instead, when given).
bool other_value(const char* var, const char* usual, const char* other, const char* instead) {
  const std::string v = env(var);
  if (v == other) return true;
  if (!v.empty() && v != usual)
    std::fprintf(stderr, "mpi-advance: %s='%s' ignored (expected %s or %s)%s%s\n", var, v.c_str(),
                 usual, other, *instead ? ": " : "", instead);
  return false;
}

Settings read_settings() {
  Settings s;
  for (Collective c : {Collective::Alltoall, Collective::Alltoallv, Collective::NeighborAlltoallv})
    s.algorithm[int(c)] = env(collective_env(c));
  s.cost_model = env("MPIX_COST_MODEL");
  s.tuning_path = env("MPIX_TUNING");
  if (!s.tuning_path.empty()) {
    std::ifstream in(s.tuning_path);
    std::ostringstream text;
    text << in.rdbuf();
    if (!in) {
      std::fprintf(stderr, "mpi-advance: MPIX_TUNING='%s' cannot be read: built-in model\n",
                   s.tuning_path.c_str());
      s.tuning_text = "(unreadable)";
    } else {
      s.tuning_text = text.str();
      std::string warnings;
      parse_tuning(s.tuning_text, s.tuning, warnings);
      if (!warnings.empty())
        std::fprintf(stderr, "mpi-advance: MPIX_TUNING='%s': skipped:\n%s", s.tuning_path.c_str(),
                     warnings.c_str());
    }
  }
  std::string bad;
  apply_cost_model(s.tuning.model, s.cost_model, &bad);
  if (!bad.empty()) std::fprintf(stderr, "mpi-advance: MPIX_COST_MODEL: %s", bad.c_str());
  s.locality = env("MPIX_LOCALITY");
  const std::string debug = env("MPIX_DEBUG");
  s.debug = !debug.empty() && debug != "0";
  const std::string ub = env("MPIX_TAG_UB");
  if (!ub.empty()) {
    char* end = nullptr;
    const long v = std::strtol(ub.c_str(), &end, 10);
    if (*end != '\0' || v < 1 || v > 1L << 30)
      std::fprintf(stderr, "mpi-advance: MPIX_TAG_UB='%s' ignored (expected an integer >= 1)\n",
                   ub.c_str());
    else
      s.tag_ub = int(v);
  }
  const std::string cache = env("MPIX_PLAN_CACHE_BYTES");
  if (!cache.empty()) {
    char* end = nullptr;
    const long long v = std::strtoll(cache.c_str(), &end, 10);
    int shift = 0;
    if (*end == 'K' || *end == 'k') shift = 10;
    if (*end == 'M' || *end == 'm') shift = 20;
    if (*end == 'G' || *end == 'g') shift = 30;
    if (shift) ++end;
    if (end == cache.c_str() || *end != '\0' || v < 0 || v > (1LL << 50) >> shift)
      std::fprintf(stderr,
                   "mpi-advance: MPIX_PLAN_CACHE_BYTES='%s' ignored (expected an integer >= 0, "
                   "optionally followed by K, M or G)\n",
                   cache.c_str());
    else
      s.plan_cache_bytes = std::int64_t(v) << shift;
  }
  s.auto_measure = !other_value("MPIX_AUTO", "measure", "model",
                                "persistent auto requests measure their shortlist");
  s.tuning_out = env("MPIX_TUNING_OUT");
  s.trial_times = env("MPIX_TRIAL_TIMES");
  s.trial_noise = env("MPIX_TRIAL_NOISE");
  s.trial_skew = env("MPIX_TRIAL_SKEW");
  const std::string skip = env("MPIX_TRIAL_SKIP");
  for (std::size_t at = 0; at < skip.size();) {
    std::size_t comma = skip.find(',', at);
    if (comma == std::string::npos) comma = skip.size();
    if (comma > at) s.trial_skip.push_back(skip.substr(at, comma - at));
    at = comma + 1;
  }
  // "none" is the first name of "arrival" (it was not the default then).
  s.trial_barrier =
      other_value("MPIX_TRIAL_SYNC", env("MPIX_TRIAL_SYNC") == "none" ? "none" : "arrival",
                  "barrier", "trial starts timed from the last rank's arrival");
  const std::string report = env("MPIX_REPORT");
  s.report = !report.empty() && report != "0";
  if (other_value("MPIX_PROGRESS", "calls", "thread", "")) s.progress = ProgressMode::Thread;
  // What ranks must share. Raw values, so that a value one rank rejects and another accepts
  // differs too.
  for (Collective c : {Collective::Alltoall, Collective::Alltoallv, Collective::NeighborAlltoallv})
    s.text += std::string(collective_env(c)) + "=" + s.algorithm[int(c)] + ";";
  s.text += "MPIX_COST_MODEL=" + s.cost_model + ";MPIX_TUNING=<" +
            std::to_string(hash63(s.tuning_text)) + ">;MPIX_LOCALITY=" + s.locality +
            ";MPIX_DEBUG=" + (s.debug ? "1" : "0") + ";MPIX_TAG_UB=" + std::to_string(s.tag_ub) +
            ";MPIX_AUTO=" + (s.auto_measure ? "measure" : "model") + ";MPIX_TRIAL_SKIP=" + skip +
            ";MPIX_TRIAL_SYNC=" + (s.trial_barrier ? "barrier" : "arrival") +
            ";MPIX_PLAN_CACHE_BYTES=" + std::to_string(s.plan_cache_bytes);
  s.fingerprint = hash63(s.text);
  return s;
}

}  // namespace

const Settings& settings() {
  static const Settings s = read_settings();  // thread-safe initialisation
  return s;
}

}  // namespace mpia
