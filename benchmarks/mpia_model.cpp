// mpia_model: what auto's cost model predicts, without running anything. For a machine of
// --nranks P ranks, --ppn Q per node (block placement; --roundrobin for the other), and block
// sizes, prints one CSV line per (size, selection): the predicted time and the coefficients of
// the model's ten constants that hold under the given constants (the terms calibrate.py
// fits; a bandwidth's column, inv_bw_*, is the bytes its inverse multiplies), and which
// selection auto takes.
//
//   mpia_model --nranks 1024 --ppn 16 --bytes 8,512 [--select
//   tra:radix=4,tra2:radix_intra=2,radix_inter=8]
//              [--all] [--model o_inter=1e-6,...] [--tuning FILE]
//
// --select: ';'-separated selections (default: auto only); --all: every candidate auto
// searches; --model / --tuning: as MPIX_COST_MODEL / MPIX_TUNING (the file's rules included).
#include "collective/model.hpp"
#include "collective/selection.hpp"
#include "collective/tuning.hpp"
#include "util/error.hpp"
#include "util/strings.hpp"

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <iostream>
#include <sstream>
#include <string>
#include <vector>

namespace {

[[noreturn]] void usage(const char* why) {
  std::fprintf(stderr,
               "mpia_model: %s\nusage: mpia_model --nranks P [--ppn Q] [--roundrobin] "
               "--bytes B[,B...] [--select S[;S...]] [--all] [--model K=V,...] [--tuning FILE]\n",
               why);
  std::exit(2);
}

}  // namespace

int main(int argc, char** argv) {
  using namespace mpia;
  int P = 0, Q = 0;
  bool roundrobin = false, all = false;
  std::vector<std::int64_t> sizes;
  std::vector<std::string> selections;
  Tuning tuning;
  std::string model_text;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    auto next = [&]() -> std::string {
      if (i + 1 >= argc) usage(("missing value after " + a).c_str());
      return argv[++i];
    };
    if (a == "--nranks")
      P = std::atoi(next().c_str());
    else if (a == "--ppn")
      Q = std::atoi(next().c_str());
    else if (a == "--roundrobin")
      roundrobin = true;
    else if (a == "--all")
      all = true;
    else if (a == "--bytes")
      for (const std::string& s : split(next(), ',')) sizes.push_back(std::atoll(s.c_str()));
    else if (a == "--select")
      selections = split(next(), ';');
    else if (a == "--model")
      model_text = next();
    else if (a == "--tuning") {
      const std::string path = next();
      std::ifstream in(path);
      std::stringstream text;
      text << in.rdbuf();
      if (!in) usage(("cannot read " + path).c_str());
      std::string warnings;
      parse_tuning(text.str(), tuning, warnings);
      if (!warnings.empty())
        std::fprintf(stderr, "mpia_model: %s: skipped:\n%s", path.c_str(), warnings.c_str());
    } else
      usage(("unknown option " + a).c_str());
  }
  if (P < 1 || sizes.empty()) usage("--nranks and --bytes are required");
  if (Q < 1 || Q > P) Q = P;
  if (P % Q != 0) usage("--nranks must be a multiple of --ppn");
  std::string bad;
  apply_cost_model(tuning.model, model_text, &bad);
  if (!bad.empty()) usage(bad.c_str());
  Machine m{P, P / Q, Q, !roundrobin || P == Q};
  std::printf("# model %s\n", to_string(tuning.model).c_str());
  std::printf("nranks,ppn,nodes,bytes,selection,predicted_us,auto");
  for (int i = 0; i < kModelTerms; ++i) {
    const std::string key = cost_model_key(i);
    std::printf(",%s%s", key.compare(0, 3, "bw_") == 0 ? "inv_" : "", key.c_str());
  }
  std::printf(",rounds,blocks,messages\n");
  try {
    for (std::int64_t B : sizes) {
      const Selection chosen = resolve_auto(tuning, Collective::Alltoall, m, B,
                                            [&] { return choose_alltoall(tuning.model, m, B); });
      std::vector<Selection> rows;
      if (all) rows = alltoall_candidates(m);
      for (const std::string& s : selections)
        rows.push_back(parse_selection(Collective::Alltoall, s, Extent(P, m.nnodes, Q), true));
      if (!all && selections.empty()) rows.push_back(chosen);
      for (const Selection& s : rows) {
        const Terms t = predicted_terms(s, m, B);
        std::printf("%d,%d,%d,%lld,\"%s\",%.4f,%d", P, Q, m.nnodes, (long long)B,
                    s.to_string().c_str(), predicted_seconds(tuning.model, t) * 1e6,
                    int(s == chosen));
        for (double c : effective_terms(tuning.model, t)) std::printf(",%.9g", c);
        std::printf(",%lld,%lld,%lld\n", (long long)t.rounds, (long long)t.blocks,
                    (long long)t.messages);
      }
    }
  } catch (const Error& e) {
    std::fprintf(stderr, "mpia_model: %s\n", e.what());
    return 1;
  }
  return 0;
}
