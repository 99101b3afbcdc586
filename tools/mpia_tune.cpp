// mpia_tune: calibrate auto on this machine. Run inside an allocation, as the application's jobs
// run (same ranks, same placement):
//
//   mpiexec -n 64 mpia_tune [--sizes 8,512,4096] [--output mpia_tuning.txt]
//   export MPIX_TUNING=$PWD/mpia_tuning.txt
//
// It times a set of alltoall selections (and the MPI library's MPI_Alltoall) at each block size,
// every received byte checked, fits the cost model's constants to the times
// (collective/calibrate.hpp), writes a tuning file (the fitted model, the points as comments,
// and rules pinning the best measured selection where the fitted model's pick is more than 10 %
// slower), and prints the prediction against the measurement at every point and auto before and
// after against the MPI library's call.
//
// Exit status: 0; 1 on a run-time error (a wrong result, an unwritable file); 2 on a usage error.
#include "collective/calibrate.hpp"
#include "collective/model.hpp"
#include "collective/selection.hpp"
#include "collective/tuning.hpp"
#include "locality/node_map.hpp"
#include "mpi_advance.h"
#include "operation/settings.hpp"
#include "util/error.hpp"
#include "util/strings.hpp"

#include <mpi.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <map>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

namespace {

using namespace mpia;

const char* const kHelp =
    "usage: mpiexec -n P mpia_tune [--sizes B,...] [--variants S;S;...] [--iters N] [--rounds N]\n"
    "                 [--warmup N] [--output FILE] [--csv FILE] [--also CSV,...] [--fix K=V,...]\n"
    "                 [--no-rules]\n"
    "\n"
    "Times alltoall selections at each block size (every byte checked), fits auto's cost model,\n"
    "writes a tuning file, and prints predicted against measured per point and what auto picks\n"
    "before and after against MPI_Alltoall. Use the file with MPIX_TUNING=FILE.\n"
    "\n"
    "  --sizes LIST     block bytes per destination (default 8,512,4096)\n"
    "  --variants LIST  ';'-separated selections (default: linear, pairwise, bruck, tra at radix\n"
    "                   2, 4 and 8 (up to P), and on several nodes tra2 at its default radices "
    "and\n"
    "                   at 2,2)\n"
    "  --iters N        timed calls per selection and round (default: 100, fewer for large\n"
    "                   exchanges)\n"
    "  --rounds N       rounds over all selections, interleaved (default 3)\n"
    "  --warmup N       untimed calls per selection before its first round (default 5)\n"
    "  --output FILE    the tuning file (default mpia_tuning.txt)\n"
    "  --csv FILE       also write the measured times (nranks,ppn,nodes,bytes,selection,time_us)\n"
    "  --also CSV,...   earlier measurements in that form (another P) fitted together with these\n"
    "  --fix K=V,...    hold these constants (model keys as in MPIX_COST_MODEL) and fit the rest\n"
    "  --no-rules       the fitted model only, no rules\n"
    "  --help           this text\n"
    "\n"
    "exit status: 0; 1 on a run-time error; 2 on a usage error\n";

struct Options {
  std::vector<std::int64_t> sizes{8, 512, 4096};
  std::vector<std::string> variants;
  int iters = 0, rounds = 3, warmup = 5;
  std::string output = "mpia_tuning.txt", csv;
  std::vector<std::string> also;
  std::string fix;
  bool rules = true;
};

int g_rank = 0;

[[noreturn]] void usage(const std::string& why) {
  if (g_rank == 0) std::fprintf(stderr, "mpia_tune: %s\n%s", why.c_str(), kHelp);
  MPI_Finalize();
  std::exit(2);
}

// Rank 0 says why; every rank stops with status 1 (ranks agree before calling this).
[[noreturn]] void fail(const std::string& why) {
  if (g_rank == 0) std::fprintf(stderr, "mpia_tune: %s\n", why.c_str());
  MPI_Finalize();
  std::exit(1);
}

long long number(const std::string& opt, const std::string& v, long long lo) {
  char* end = nullptr;
  const long long x = std::strtoll(v.c_str(), &end, 10);
  if (v.empty() || *end != '\0' || x < lo)
    usage(opt + ": expected an integer >= " + std::to_string(lo));
  return x;
}

Options parse(int argc, char** argv) {
  Options o;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    auto value = [&]() -> std::string {
      if (i + 1 >= argc) usage("missing value after " + a);
      return argv[++i];
    };
    if (a == "--help" || a == "-h") {
      if (g_rank == 0) std::fputs(kHelp, stdout);
      MPI_Finalize();
      std::exit(0);
    } else if (a == "--sizes") {
      o.sizes.clear();
      for (const std::string& s : split(value(), ',')) o.sizes.push_back(number(a, s, 1));
      if (o.sizes.empty()) usage("--sizes: no size");
    } else if (a == "--variants") {
      o.variants = split(value(), ';');
    } else if (a == "--iters") {
      o.iters = int(number(a, value(), 1));
    } else if (a == "--rounds") {
      o.rounds = int(number(a, value(), 1));
    } else if (a == "--warmup") {
      o.warmup = int(number(a, value(), 0));
    } else if (a == "--output") {
      o.output = value();
    } else if (a == "--csv") {
      o.csv = value();
    } else if (a == "--also") {
      o.also = split(value(), ',');
    } else if (a == "--fix") {
      o.fix = value();
    } else if (a == "--no-rules") {
      o.rules = false;
    } else {
      usage("unknown option " + a);
    }
  }
  return o;
}

// The machine as auto sees it: the library's node map (MPI_Comm_split_type or MPIX_LOCALITY).
Machine machine_of_comm(MPI_Comm comm, int size) {
  int node = 0, nnodes = 1, lrank = 0, lsize = 1;
  if (MPIX_Comm_locality(comm, &node, &nnodes, &lrank, &lsize) != MPI_SUCCESS)
    fail("MPIX_Comm_locality failed");
  std::vector<int> labels(size);
  MPI_Allgather(&node, 1, MPI_INT, labels.data(), 1, MPI_INT, comm);
  return machine_of(make_node_map(labels));
}

std::vector<std::string> default_variants(const Machine& m) {
  std::vector<std::string> v = {"linear", "pairwise", "bruck"};
  for (int r : {2, 4, 8})
    if (r <= m.nranks) v.push_back("tra:radix=" + std::to_string(r));
  if (m.nnodes >= 2) {
    v.push_back("tra2");
    v.push_back("tra2:radix_intra=2,radix_inter=2");
  }
  return v;
}

// The byte a correct alltoall delivers at index i of the block from src to dst.
unsigned char pattern(int src, int dst, std::int64_t i) {
  return static_cast<unsigned char>((src * 131 + dst * 29 + i * 7 + (i >> 8)) & 0xff);
}

struct Variant {
  std::string text;     // as given
  Selection selection;  // parsed for this machine (no algorithm: MPI_Alltoall)
  MPIX_Request req = MPIX_REQUEST_NULL;
  std::vector<double> times;  // per timed call: the slowest rank's seconds (rank 0)
};

double median(std::vector<double> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  const std::size_t n = v.size();
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

// Earlier measurements: the CSV this tool writes (header nranks,ppn,nodes,bytes,selection,time_us).
void read_also(const std::string& path, std::vector<MeasuredPoint>& out, std::string& error) {
  std::ifstream in(path);
  if (!in) {
    error = "cannot read " + path;
    return;
  }
  std::string line;
  std::getline(in, line);
  const std::vector<std::string> head = split(line, ',');
  auto col = [&](const char* name) {
    return int(std::find(head.begin(), head.end(), name) - head.begin());
  };
  const int cp = col("nranks"), cq = col("ppn"), cn = col("nodes"), cb = col("bytes"),
            cs = col("selection"), ct = col("time_us"), n = int(head.size());
  if (std::max({cp, cq, cn, cb, cs, ct}) >= n) {
    error = path + ": expected the columns nranks,ppn,nodes,bytes,selection,time_us";
    return;
  }
  while (std::getline(in, line)) {
    // The selection is quoted (it holds commas).
    std::vector<std::string> f;
    std::string cur;
    bool quoted = false;
    for (char ch : line) {
      if (ch == '"')
        quoted = !quoted;
      else if (ch == ',' && !quoted)
        f.push_back(cur), cur.clear();
      else
        cur += ch;
    }
    f.push_back(cur);
    if (int(f.size()) < n) continue;
    MeasuredPoint p;
    p.machine =
        Machine{std::atoi(f[cp].c_str()), std::atoi(f[cn].c_str()), std::atoi(f[cq].c_str()), true};
    p.bytes = std::atoll(f[cb].c_str());
    p.seconds = std::atof(f[ct].c_str()) * 1e-6;
    try {
      p.selection =
          parse_selection(Collective::Alltoall, f[cs],
                          Extent(p.machine.nranks, p.machine.nnodes, p.machine.ppn), true);
    } catch (const Error&) {
      continue;  // the MPI library's row, or a selection this build does not have
    }
    out.push_back(p);
  }
}

std::string ratio(double a, double b) {
  char s[32];
  std::snprintf(s, sizeof s, "%.2f", a / b);
  return s;
}

std::string fmt_us(double seconds) {
  char b[32];
  std::snprintf(b, sizeof b, "%.2f", seconds * 1e6);
  return b;
}

}  // namespace

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  MPI_Comm comm;
  MPI_Comm_dup(MPI_COMM_WORLD, &comm);
  MPI_Comm_set_errhandler(comm, MPI_ERRORS_RETURN);
  int rank = 0, P = 1;
  MPI_Comm_rank(comm, &rank);
  MPI_Comm_size(comm, &P);
  g_rank = rank;
  Options o = parse(argc, argv);
  const Machine m = machine_of_comm(comm, P);
  if (P < 2) fail("needs at least 2 ranks (there is nothing to calibrate on one)");
  if (o.variants.empty()) o.variants = default_variants(m);

  // Every selection parsed for this machine; one that cannot run here is dropped with a note
  // (the same on every rank: parsing depends on the machine alone).
  std::vector<Variant> vars;
  for (const std::string& t : o.variants) {
    Variant v;
    v.text = t;
    try {
      v.selection =
          parse_selection(Collective::Alltoall, t, Extent(m.nranks, m.nnodes, m.ppn), true);
    } catch (const Error& e) {
      if (rank == 0) std::fprintf(stderr, "mpia_tune: '%s' skipped: %s\n", t.c_str(), e.what());
      continue;
    }
    if (!v.selection.algorithm->cost) {
      if (rank == 0)
        std::fprintf(stderr, "mpia_tune: '%s' skipped: the model does not price it\n", t.c_str());
      continue;
    }
    const bool again = std::any_of(vars.begin(), vars.end(),
                                   [&](const Variant& w) { return w.selection == v.selection; });
    if (!again) vars.push_back(std::move(v));  // tra2 at its defaults may be tra2:2,2
  }
  if (vars.empty()) usage("no selection to measure");
  Variant library;
  library.text = "MPI_Alltoall";
  const Selection system =
      parse_selection(Collective::Alltoall, "system", Extent(m.nranks, m.nnodes, m.ppn), true);

  if (rank == 0)
    std::printf("mpia_tune: P = %d on %d node%s of %d%s; sizes", P, m.nnodes,
                m.nnodes > 1 ? "s" : "", m.ppn, m.blocked ? "" : " (not block placement)");
  if (rank == 0) {
    for (std::int64_t B : o.sizes) std::printf(" %lld", (long long)B);
    std::printf(" B; %zu selections and MPI_Alltoall, %d rounds\n", vars.size(), o.rounds);
    std::fflush(stdout);
  }

  std::vector<MeasuredPoint> points;
  std::vector<std::pair<std::int64_t, double>> library_times;  // (bytes, seconds)
  for (const std::int64_t B : o.sizes) {
    const std::size_t n = std::size_t(B) * std::size_t(P);
    std::vector<unsigned char> send(n), recv(n), expected(n);
    for (int d = 0; d < P; ++d)
      for (std::int64_t i = 0; i < B; ++i) {
        send[std::size_t(d) * B + i] = pattern(rank, d, i);
        expected[std::size_t(d) * B + i] = pattern(d, rank, i);
      }
    const int iters = o.iters > 0
                          ? o.iters
                          : int(std::clamp<long long>(
                                (64LL << 20) / std::max<long long>(1, (long long)n), 5, 100));
    // The requests, all on the same buffers (one runs at a time).
    int bad = 0;
    for (Variant& v : vars) {
      MPI_Info info;
      MPI_Info_create(&info);
      MPI_Info_set(info, MPIX_INFO_KEY_ALGORITHM, v.text.c_str());
      const int rc = MPIX_Alltoall_init(send.data(), int(B), MPI_BYTE, recv.data(), int(B),
                                        MPI_BYTE, comm, info, &v.req);
      MPI_Info_free(&info);
      if (rc != MPI_SUCCESS) bad = 1;
      v.times.clear();
    }
    MPI_Allreduce(MPI_IN_PLACE, &bad, 1, MPI_INT, MPI_MAX, comm);
    if (bad) fail("MPIX_Alltoall_init failed at " + std::to_string(B) + " B");
    library.times.clear();
    // One call of a variant (nullptr: the MPI library's), timed on this rank.
    auto call = [&](Variant* v) {
      if (!v)
        return MPI_Alltoall(send.data(), int(B), MPI_BYTE, recv.data(), int(B), MPI_BYTE, comm);
      int rc = MPIX_Start(&v->req);
      if (rc == MPI_SUCCESS) rc = MPIX_Wait(&v->req, MPI_STATUS_IGNORE);
      return rc;
    };
    std::vector<Variant*> order;
    for (Variant& v : vars) order.push_back(&v);
    order.push_back(nullptr);
    for (Variant* v : order)
      for (int w = 0; w < o.warmup; ++w)
        if (call(v) != MPI_SUCCESS) bad = 1;
    std::vector<double> t(iters), tmax(iters);
    for (int round = 0; round < o.rounds; ++round) {
      for (Variant* v : order) {
        for (int it = 0; it < iters; ++it) {
          MPI_Barrier(comm);
          const double t0 = MPI_Wtime();
          if (call(v) != MPI_SUCCESS) bad = 1;
          t[it] = MPI_Wtime() - t0;
        }
        MPI_Reduce(t.data(), tmax.data(), iters, MPI_DOUBLE, MPI_MAX, 0, comm);
        std::vector<double>& into = v ? v->times : library.times;
        into.insert(into.end(), tmax.begin(), tmax.end());
        // Every byte checked after one more call on a poisoned receive buffer.
        std::fill(recv.begin(), recv.end(), static_cast<unsigned char>(0xA5));
        if (call(v) != MPI_SUCCESS) bad = 1;
        long long wrong = 0;
        for (std::size_t i = 0; i < n; ++i) wrong += recv[i] != expected[i];
        MPI_Allreduce(MPI_IN_PLACE, &wrong, 1, MPI_LONG_LONG, MPI_SUM, comm);
        MPI_Allreduce(MPI_IN_PLACE, &bad, 1, MPI_INT, MPI_MAX, comm);
        const std::string name = v ? v->text : library.text;
        if (bad) fail(name + " at " + std::to_string(B) + " B: an MPI call failed");
        if (wrong)
          fail(name + " at " + std::to_string(B) + " B: " + std::to_string(wrong) + " wrong bytes");
      }
    }
    for (Variant& v : vars) {
      points.push_back(MeasuredPoint{m, B, v.selection, median(v.times)});
      MPIX_Request_free(&v.req);
    }
    library_times.emplace_back(B, median(library.times));
    // The MPI library's call as the selection that runs it: the model does not price it, but
    // a rule may pin it where it was the fastest.
    points.push_back(MeasuredPoint{m, B, system, median(library.times)});
    if (rank == 0) {
      std::printf("  %lld B: measured (%d calls x %d rounds each)\n", (long long)B, iters,
                  o.rounds);
      std::fflush(stdout);
    }
  }

  // Rank 0 fits and writes; the others wait for its verdict.
  int status = 0;
  std::string message;
  if (rank == 0) {
    std::vector<MeasuredPoint> all = points;
    for (const std::string& path : o.also) {
      std::string error;
      read_also(path, all, error);
      if (!error.empty()) {
        message = error, status = 1;
        break;
      }
    }
    std::vector<std::optional<double>> held(kModelTerms);
    if (status == 0 && !o.fix.empty()) {
      CostModel fixed;
      std::string warnings;
      apply_cost_model(fixed, o.fix, &warnings);
      if (!warnings.empty()) message = "--fix: " + warnings, status = 2;
      // The held constants: those --fix names, at the values it gives.
      for (const std::string& kv : split(o.fix, ','))
        for (int i = 0; i < kModelTerms; ++i)
          if (kv.rfind(std::string(cost_model_key(i)) + "=", 0) == 0)
            held[i] = cost_model_value(fixed, i);
    }
    if (status == 0) {
      try {
        const ModelFit fit = fit_cost_model(all, held, settings().tuning.model);
        const std::vector<std::string> rules =
            o.rules ? calibration_rules(fit.model, all) : std::vector<std::string>{};
        std::ostringstream file;
        file << "# mpi-advance tuning file written by mpia_tune (P = " << P << ", " << m.nnodes
             << " nodes of " << m.ppn << ")\n";
        char line[512];
        std::snprintf(line, sizeof line,
                      "# %zu points; relative error median %.1f %%, 90th percentile %.1f %%, "
                      "max %.1f %%\n",
                      size_t(fit.fitted), 100 * fit.median_error, 100 * fit.p90_error,
                      100 * fit.max_error);
        file << line;
        if (!o.fix.empty()) file << "# held: " << o.fix << "\n";
        std::string unmeasured;
        for (int i : fit.unmeasured)
          unmeasured += std::string(unmeasured.empty() ? "" : ", ") + cost_model_key(i);
        if (!unmeasured.empty())
          file << "# not measured here, kept from the model before: " << unmeasured << "\n";
        file << "model " << to_string(fit.model) << "\n";
        std::snprintf(line, sizeof line, "# %5s %5s %4s %8s  %-36s %11s %12s %7s\n", "P", "nodes",
                      "ppn", "bytes", "selection", "measured_us", "predicted_us", "error");
        std::string table = line;
        for (std::size_t k = 0; k < all.size(); ++k) {
          const MeasuredPoint& p = all[k];
          if (fit.predicted[k] > 0)
            std::snprintf(line, sizeof line, "# %5d %5d %4d %8lld  %-36s %11.2f %12.2f %+6.1f%%\n",
                          p.machine.nranks, p.machine.nnodes, p.machine.ppn, (long long)p.bytes,
                          p.selection.to_string().c_str(), p.seconds * 1e6, fit.predicted[k] * 1e6,
                          100 * (fit.predicted[k] / p.seconds - 1));
          else  // the MPI library's call: measured, not modelled
            std::snprintf(line, sizeof line, "# %5d %5d %4d %8lld  %-36s %11.2f %12s %7s\n",
                          p.machine.nranks, p.machine.nnodes, p.machine.ppn, (long long)p.bytes,
                          "system (MPI_Alltoall)", p.seconds * 1e6, "-", "-");
          table += line;
        }
        file << table;
        for (const std::string& r : rules) file << r << "\n";
        std::ofstream out(o.output);
        out << file.str();
        out.close();
        if (!out) throw Error(MPI_ERR_FILE, "cannot write " + o.output);
        if (!o.csv.empty()) {
          std::ofstream csv(o.csv);
          csv << "nranks,ppn,nodes,bytes,selection,time_us\n";
          // The MPI library's call is "MPI_Alltoall" there (calibrate.py's baseline).
          for (const MeasuredPoint& p : points)
            csv << p.machine.nranks << "," << p.machine.ppn << "," << p.machine.nnodes << ","
                << p.bytes << ",\""
                << (p.selection == system ? std::string("MPI_Alltoall") : p.selection.to_string())
                << "\"," << p.seconds * 1e6 << "\n";
          csv.close();
          if (!csv) throw Error(MPI_ERR_FILE, "cannot write " + o.csv);
        }

        std::printf(
            "\n== the fitted model against the measurement (error = predicted / measured - 1)\n");
        std::fputs(table.c_str(), stdout);
        std::printf("fit: %zu points, error median %.1f %%, 90th percentile %.1f %%, max %.1f %%\n",
                    size_t(fit.fitted), 100 * fit.median_error, 100 * fit.p90_error,
                    100 * fit.max_error);
        std::printf("model %s\n", to_string(fit.model).c_str());
        if (!unmeasured.empty())
          std::printf("not measured here, kept from the model before: %s\n", unmeasured.c_str());
        for (const std::string& r : rules) std::printf("rule: %s\n", r.c_str());

        // auto before (the tuning this process had) and after (the file just written).
        Tuning after;
        std::string warnings;
        parse_tuning(file.str(), after, warnings);
        const Tuning& before = settings().tuning;
        std::printf(
            "\n== auto before (%s) and after (this file), times measured here\n",
            settings().tuning_path.empty() ? "built-in model" : settings().tuning_path.c_str());
        std::printf("%8s  %-34s %9s  %-34s %9s  %-34s %9s %13s %10s\n", "bytes", "best measured",
                    "us", "auto before", "us", "auto after", "us", "MPI_Alltoall", "after/MPI");
        auto measured = [&](std::int64_t B, const Selection& s) -> double {
          for (const MeasuredPoint& p : points)
            if (p.bytes == B && p.selection == s) return p.seconds;
          return -1;
        };
        for (const auto& [B, lib] : library_times) {
          const MeasuredPoint* best = nullptr;
          for (const MeasuredPoint& p : points)
            if (p.bytes == B && (!best || p.seconds < best->seconds)) best = &p;
          const Selection b4 = resolve_auto(before, Collective::Alltoall, m, B,
                                            [&] { return choose_alltoall(before.model, m, B); });
          const Selection now = resolve_auto(after, Collective::Alltoall, m, B,
                                             [&] { return choose_alltoall(after.model, m, B); });
          const double tb = measured(B, b4), ta = measured(B, now);
          std::printf("%8lld  %-34s %9s  %-34s %9s  %-34s %9s %13s %10s\n", (long long)B,
                      best->selection == system ? "system (MPI_Alltoall)"
                                                : best->selection.to_string().c_str(),
                      fmt_us(best->seconds).c_str(), b4.to_string().c_str(),
                      tb < 0 ? "-" : fmt_us(tb).c_str(), now.to_string().c_str(),
                      ta < 0 ? "-" : fmt_us(ta).c_str(), fmt_us(lib).c_str(),
                      ta < 0 || lib <= 0 ? "-" : ratio(ta, lib).c_str());
        }
        std::printf(
            "(-: a pick this run did not measure)\n\ntuning file: %s\n  use it with: export "
            "MPIX_TUNING=%s\n",
            o.output.c_str(), o.output.c_str());
      } catch (const Error& e) {
        message = e.what(), status = 1;
      }
    }
  }
  MPI_Bcast(&status, 1, MPI_INT, 0, comm);
  if (status != 0) {
    if (rank == 0) std::fprintf(stderr, "mpia_tune: %s\n", message.c_str());
    MPI_Finalize();
    return status;
  }
  MPI_Comm_free(&comm);
  MPI_Finalize();
  return 0;
}
