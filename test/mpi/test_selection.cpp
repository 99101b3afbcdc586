// The algorithm registry, the tunable-radix algorithm at every radix 2..P, and selection:
// info key "mpix_algorithm", MPIX_Comm_set_algorithm (per communicator, strict and
// collective; that blocking calls really run what it chose is checked on the sends they start,
// see "What a call sends" below), the environment variable MPIX_ALLTOALL (SelectionEnv: run
// by test/mpi/environment.cmake with the variable set before the process starts), the
// precedence between them, and what MPIX_Request_get_algorithm reports.
#include <gtest/gtest.h>

#include <dlfcn.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <map>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "test_support.hpp"

using namespace mpia_test;

namespace {

MPIX_Request init_with(MPI_Comm comm, const char* spec, int* buf_send, int* buf_recv, int n,
                       int* rc_out) {
  MPI_Info info = MPI_INFO_NULL;
  if (spec) {
    MPI_Info_create(&info);
    MPI_Info_set(info, MPIX_INFO_KEY_ALGORITHM, spec);
  }
  MPIX_Request req = MPIX_REQUEST_NULL;
  *rc_out = MPIX_Alltoall_init(buf_send, n, MPI_INT, buf_recv, n, MPI_INT, comm, info, &req);
  if (info != MPI_INFO_NULL) MPI_Info_free(&info);
  return req;
}

std::string reported(MPIX_Request req) {
  char name[MPIX_MAX_ALGORITHM_STRING];
  int len = 0;
  if (MPIX_Request_get_algorithm(req, name, &len) != MPI_SUCCESS) return "<error>";
  return name;
}

// ------------------------------------------------------------------------------------------
// Registry.
// ------------------------------------------------------------------------------------------
TEST(Registry, ListsTheDocumentedAlgorithms) {
  const std::vector<std::string> names = registered_algorithms();
  std::set<std::string> unique(names.begin(), names.end());
  EXPECT_EQ(unique.size(), names.size()) << "duplicate names in the registry";
  for (const char* want : {"pairwise", "linear", "bruck", "modified_bruck", "zero_copy_bruck",
                           "tra", "system", "auto"}) {
    EXPECT_EQ(unique.count(want), 1u) << want << " is not registered";
  }
  ScopedErrhandler eh(MPI_COMM_SELF, MPI_ERRORS_RETURN);
  for (std::size_t i = 0; i < names.size(); ++i) {
    const char* name = nullptr;
    const char* desc = nullptr;
    ASSERT_EQ(MPIX_Algorithm_get("alltoall", static_cast<int>(i), &name, &desc), MPI_SUCCESS);
    ASSERT_NE(name, nullptr);
    ASSERT_NE(desc, nullptr);
    EXPECT_GT(std::strlen(name), 0u);
    EXPECT_GT(std::strlen(desc), 0u) << name << " has no description";
    EXPECT_EQ(std::strpbrk(name, ":,= "), nullptr) << "name '" << name << "'";
  }
}

TEST(Registry, OutOfRangeIsErrArg) {
  ScopedErrhandler eh(MPI_COMM_SELF, MPI_ERRORS_RETURN);
  const int n = static_cast<int>(registered_algorithms().size());
  const char* name = nullptr;
  const char* desc = nullptr;
  EXPECT_EQ(error_class(MPIX_Algorithm_get("alltoall", n, &name, &desc)), MPI_ERR_ARG);
  EXPECT_EQ(error_class(MPIX_Algorithm_get("alltoall", n + 100, &name, &desc)), MPI_ERR_ARG);
  EXPECT_EQ(error_class(MPIX_Algorithm_get("alltoall", -1, &name, &desc)), MPI_ERR_ARG);
  EXPECT_NE(MPIX_Algorithm_get("no_such_collective", 0, &name, &desc), MPI_SUCCESS);
  EXPECT_NE(MPIX_Algorithm_get(nullptr, 0, &name, &desc), MPI_SUCCESS);
}

// ------------------------------------------------------------------------------------------
// TRA: every radix 2..P, persistent and blocking, with the radix reported back.
// ------------------------------------------------------------------------------------------
TEST(Tra, EveryRadix) {
  const MPI_Comm comm = MPI_COMM_WORLD;
  const int nprocs = comm_size(comm);
  const int max_radix = std::max(2, nprocs);
  // The persistent int run at every radix always happens; the rest is sampled.
  const int stride = sample_stride(static_cast<long>(max_radix - 1) * 5, 10.0);
  Layout lint = layout_int();
  Layout lvec = layout_vector_gaps();
  Layout lstruct = layout_struct_char_double();
  Layout lpacked = layout_packed_char_double();
  RunOptions opt;
  RunOptions in_place;
  in_place.in_place = true;
  for (int radix = 2; radix <= max_radix; ++radix) {
    const std::string spec = "tra:radix=" + std::to_string(radix);
    // Persistent at every radix, always (5 cycles, new data each).
    run_persistent(comm, spec, lint, 3, lint, 3, opt);
    if (stride == 1 || radix % stride == 0 || radix == 2 || radix == max_radix) {
      run_blocking(comm, spec, lint, 3, lint, 3, false);
    }
    if (stride == 1 || radix % stride == 1) {
      run_persistent(comm, spec, lvec, 2, lint, 12, opt);
      run_persistent(comm, spec, lstruct, 5, lpacked, 5, opt);
      run_persistent(comm, spec, lstruct, 2, lstruct, 2, in_place);
      run_blocking(comm, spec, lvec, 1, lvec, 1, true);
    }
  }
  // Large blocks at the extreme radices.
  run_persistent(comm, "tra:radix=2", lint, 250, lint, 250, opt);
  run_persistent(comm, "tra:radix=" + std::to_string(max_radix), lint, 250, lint, 250, opt);
  run_blocking(comm, "tra:radix=" + std::to_string(max_radix), lstruct, 100, lstruct, 100, false);
}

// "tra" without a radix reports ceil(sqrt(P)) (at least 2), for every communicator size.
TEST(Tra, DefaultRadixForEverySize) {
  const int me = comm_rank(MPI_COMM_WORLD);
  const int nprocs = comm_size(MPI_COMM_WORLD);
  const int stride = sample_stride(nprocs, 3.0);
  for (int k = 1; k <= nprocs; ++k) {
    if (stride > 1 && k != 1 && k != nprocs && k % stride != 0) continue;
    MPI_Comm sub;
    MPI_Comm_split(MPI_COMM_WORLD, me < k ? 0 : MPI_UNDEFINED, me, &sub);
    if (sub == MPI_COMM_NULL) continue;
    SCOPED_TRACE("communicator of size " + std::to_string(k));
    std::vector<int> s(static_cast<std::size_t>(k) * 2), r(s.size());
    for (int i = 0; i < 2 * k; ++i) s[static_cast<std::size_t>(i)] = me * 1000 + i;
    int rc = 0;
    MPIX_Request req = init_with(sub, "tra", s.data(), r.data(), 2, &rc);
    EXPECT_EQ(rc, MPI_SUCCESS) << error_string(rc);
    if (rc == MPI_SUCCESS) {
      EXPECT_EQ(reported(req), "tra:radix=" + std::to_string(default_tra_radix(k)));
      EXPECT_EQ(MPIX_Start(&req), MPI_SUCCESS);
      EXPECT_EQ(MPIX_Wait(&req, MPI_STATUS_IGNORE), MPI_SUCCESS);
      for (int src = 0; src < k; ++src) {
        for (int j = 0; j < 2; ++j) {
          EXPECT_EQ(r[static_cast<std::size_t>(src * 2 + j)], src * 1000 + me * 2 + j)
              << "from " << src << " element " << j;
        }
      }
      EXPECT_EQ(MPIX_Request_free(&req), MPI_SUCCESS);
    }
    MPI_Comm_free(&sub);
  }
}

// ------------------------------------------------------------------------------------------
// Selection by info and environment.
// ------------------------------------------------------------------------------------------
TEST(Selection, ReportedMatchesRequestForEveryAlgorithm) {
  const int nprocs = comm_size(MPI_COMM_WORLD);
  const std::vector<std::string> names = registered_algorithms();
  std::vector<int> s(static_cast<std::size_t>(nprocs)), r(s.size());
  for (const std::string& name : names) {
    int rc = 0;
    MPIX_Request req = init_with(MPI_COMM_WORLD, name.c_str(), s.data(), r.data(), 1, &rc);
    EXPECT_EQ(rc, MPI_SUCCESS) << name << ": " << error_string(rc);
    if (rc != MPI_SUCCESS) continue;
    expect_reported_algorithm(req, name, nprocs, names);
    EXPECT_EQ(MPIX_Request_free(&req), MPI_SUCCESS);
  }
  // No info at all: "auto", which reports a concrete registered algorithm.
  int rc = 0;
  MPIX_Request req = init_with(MPI_COMM_WORLD, nullptr, s.data(), r.data(), 1, &rc);
  EXPECT_EQ(rc, MPI_SUCCESS) << error_string(rc);
  if (rc == MPI_SUCCESS) {
    expect_reported_algorithm(req, "", nprocs, names);
    EXPECT_EQ(MPIX_Request_free(&req), MPI_SUCCESS);
  }
}

TEST(Selection, InfoWithOtherKeysAndEmptyInfo) {
  const int nprocs = comm_size(MPI_COMM_WORLD);
  std::vector<int> s(static_cast<std::size_t>(nprocs)), r(s.size());
  MPI_Info info;
  MPI_Info_create(&info);  // empty info: same as MPI_INFO_NULL
  MPIX_Request req = MPIX_REQUEST_NULL;
  int rc =
      MPIX_Alltoall_init(s.data(), 1, MPI_INT, r.data(), 1, MPI_INT, MPI_COMM_WORLD, info, &req);
  EXPECT_EQ(rc, MPI_SUCCESS) << error_string(rc);
  if (rc == MPI_SUCCESS) {
    expect_reported_algorithm(req, "", nprocs, registered_algorithms());
    EXPECT_EQ(MPIX_Request_free(&req), MPI_SUCCESS);
  }
  MPI_Info_set(info, "some_other_key", "some value");
  MPI_Info_set(info, MPIX_INFO_KEY_ALGORITHM, "bruck");
  rc = MPIX_Alltoall_init(s.data(), 1, MPI_INT, r.data(), 1, MPI_INT, MPI_COMM_WORLD, info, &req);
  EXPECT_EQ(rc, MPI_SUCCESS) << error_string(rc);
  if (rc == MPI_SUCCESS) {
    EXPECT_EQ(reported(req), "bruck");
    EXPECT_EQ(MPIX_Request_free(&req), MPI_SUCCESS);
  }
  MPI_Info_free(&info);
}

// ------------------------------------------------------------------------------------------
// MPIX_Comm_set_algorithm: the communicator's choice for blocking calls and for persistent
// inits without the info key.
// ------------------------------------------------------------------------------------------
// Every algorithm chosen for the communicator is what an init without info reports; info still
// wins; "" (and NULL) return to the default; another communicator keeps its own choice.
TEST(CommAlgorithm, AppliesToInitWithoutInfo) {
  const int nprocs = comm_size(MPI_COMM_WORLD);
  const std::vector<std::string> names = registered_algorithms();
  std::vector<int> s(static_cast<std::size_t>(nprocs)), r(s.size());
  std::vector<std::string> specs = names;
  specs.push_back("tra:radix=" + std::to_string(std::max(2, nprocs)));
  specs.push_back("tra:radix=2");
  for (const std::string& spec : specs) {
    SCOPED_TRACE("MPIX_Comm_set_algorithm(alltoall, '" + spec + "')");
    ScopedCommAlgorithm sel(MPI_COMM_WORLD, "alltoall", spec);
    int rc = 0;
    MPIX_Request req = init_with(MPI_COMM_WORLD, nullptr, s.data(), r.data(), 1, &rc);
    EXPECT_EQ(rc, MPI_SUCCESS) << error_string(rc);
    if (rc == MPI_SUCCESS) {
      expect_reported_algorithm(req, spec, nprocs, names);
      EXPECT_EQ(MPIX_Request_free(&req), MPI_SUCCESS);
    }
    const char* other = spec == "pairwise" ? "linear" : "pairwise";
    req = init_with(MPI_COMM_WORLD, other, s.data(), r.data(), 1, &rc);
    EXPECT_EQ(rc, MPI_SUCCESS) << error_string(rc);
    if (rc == MPI_SUCCESS) {
      EXPECT_EQ(reported(req), other) << "info must win over the communicator's choice";
      EXPECT_EQ(MPIX_Request_free(&req), MPI_SUCCESS);
    }
  }
  // Back to the default: what auto chooses for these arguments (the same every time), which
  // must not be what was chosen before the reset.
  for (const char* reset : {"", static_cast<const char*>(nullptr)}) {
    SCOPED_TRACE(reset ? "reset with \"\"" : "reset with NULL");
    int rc = 0;
    MPIX_Request req = init_with(MPI_COMM_WORLD, nullptr, s.data(), r.data(), 1, &rc);
    EXPECT_EQ(rc, MPI_SUCCESS) << error_string(rc);
    if (rc != MPI_SUCCESS) continue;
    expect_reported_algorithm(req, "", nprocs, names);
    const std::string auto_choice = reported(req);
    EXPECT_EQ(MPIX_Request_free(&req), MPI_SUCCESS);
    Spec spec;
    ASSERT_TRUE(parse_spec(auto_choice, &spec));
    const std::string chosen = spec.name == "pairwise" ? "linear" : "pairwise";
    ScopedCommAlgorithm sel(MPI_COMM_WORLD, "alltoall", chosen);
    req = init_with(MPI_COMM_WORLD, nullptr, s.data(), r.data(), 1, &rc);
    EXPECT_EQ(rc, MPI_SUCCESS) << error_string(rc);
    if (rc == MPI_SUCCESS) {
      EXPECT_EQ(reported(req), chosen);
      EXPECT_EQ(MPIX_Request_free(&req), MPI_SUCCESS);
    }
    EXPECT_EQ(set_comm_algorithm(MPI_COMM_WORLD, "alltoall", reset), MPI_SUCCESS);
    req = init_with(MPI_COMM_WORLD, nullptr, s.data(), r.data(), 1, &rc);
    EXPECT_EQ(rc, MPI_SUCCESS) << error_string(rc);
    if (rc == MPI_SUCCESS) {
      EXPECT_EQ(reported(req), auto_choice) << "after the reset, auto's choice again";
      EXPECT_EQ(MPIX_Request_free(&req), MPI_SUCCESS);
    }
  }
  // Per communicator: a duplicate and the original keep their own choices, and a choice for
  // one collective leaves the others alone.
  MPI_Comm dup;
  MPI_Comm_dup(MPI_COMM_WORLD, &dup);
  {
    ScopedCommAlgorithm a(MPI_COMM_WORLD, "alltoall", "bruck");
    ScopedCommAlgorithm b(dup, "alltoall", "modified_bruck");
    ScopedCommAlgorithm v(MPI_COMM_WORLD, "alltoallv", "linear");
    int rc = 0;
    MPIX_Request req = init_with(MPI_COMM_WORLD, nullptr, s.data(), r.data(), 1, &rc);
    EXPECT_EQ(rc, MPI_SUCCESS) << error_string(rc);
    if (rc == MPI_SUCCESS) {
      EXPECT_EQ(reported(req), "bruck") << "MPI_COMM_WORLD";
      EXPECT_EQ(MPIX_Request_free(&req), MPI_SUCCESS);
    }
    req = init_with(dup, nullptr, s.data(), r.data(), 1, &rc);
    EXPECT_EQ(rc, MPI_SUCCESS) << error_string(rc);
    if (rc == MPI_SUCCESS) {
      EXPECT_EQ(reported(req), "modified_bruck") << "the duplicate";
      EXPECT_EQ(MPIX_Request_free(&req), MPI_SUCCESS);
    }
    std::vector<int> ones(static_cast<std::size_t>(nprocs), 1), displs(ones.size());
    for (int p = 0; p < nprocs; ++p) displs[static_cast<std::size_t>(p)] = p;
    req = MPIX_REQUEST_NULL;
    rc = MPIX_Alltoallv_init(s.data(), ones.data(), displs.data(), MPI_INT, r.data(), ones.data(),
                             displs.data(), MPI_INT, MPI_COMM_WORLD, MPI_INFO_NULL, &req);
    EXPECT_EQ(rc, MPI_SUCCESS) << error_string(rc);
    if (rc == MPI_SUCCESS) {
      EXPECT_EQ(reported(req), "linear") << "alltoallv on MPI_COMM_WORLD";
      EXPECT_EQ(MPIX_Request_free(&req), MPI_SUCCESS);
    }
  }
  MPI_Comm_free(&dup);
}

// Strict and collective: a bad selection on any rank is MPI_ERR_INFO_VALUE on every rank, an
// unknown collective MPI_ERR_ARG, different valid values MPI_ERR_ARG on every rank; after any
// failure the previous choice stays.
TEST(CommAlgorithm, ErrorsOnEveryRankKeepThePreviousChoice) {
  const int me = comm_rank(MPI_COMM_WORLD);
  const int nprocs = comm_size(MPI_COMM_WORLD);
  std::vector<int> s(static_cast<std::size_t>(nprocs)), r(s.size());
  ScopedCommAlgorithm previous(MPI_COMM_WORLD, "alltoall", "modified_bruck");
  auto expect_previous = [&](const std::string& after) {
    int rc = 0;
    MPIX_Request req = init_with(MPI_COMM_WORLD, nullptr, s.data(), r.data(), 1, &rc);
    EXPECT_EQ(rc, MPI_SUCCESS) << error_string(rc);
    if (rc == MPI_SUCCESS) {
      EXPECT_EQ(reported(req), "modified_bruck") << "the previous choice must stay after " << after;
      EXPECT_EQ(MPIX_Request_free(&req), MPI_SUCCESS);
    }
  };
  const std::string too_big = "tra:radix=" + std::to_string(std::max(2, nprocs) + 1);
  for (const std::string& bad :
       {std::string("no_such_algorithm"), std::string("tra:radix=1"), too_big,
        std::string("tra:radix=abc"), std::string("tra:radix=2,radix=2"),
        std::string("pairwise:radix=2"), std::string(":radix=2"), std::string("tra:radix"),
        std::string("multipair_waitall")}) {  // an alltoallv algorithm, not an alltoall one
    SCOPED_TRACE("selection '" + bad + "' on every rank");
    const int rc = set_comm_algorithm(MPI_COMM_WORLD, "alltoall", bad.c_str());
    EXPECT_EQ(error_class(rc), MPI_ERR_INFO_VALUE) << error_string(rc);
    expect_previous("'" + bad + "'");
  }
  for (const int culprit : {0, nprocs - 1}) {
    SCOPED_TRACE("a bad selection on rank " + std::to_string(culprit) + " only");
    const int rc =
        set_comm_algorithm(MPI_COMM_WORLD, "alltoall", me == culprit ? "tra:radix=0" : "pairwise");
    EXPECT_EQ(error_class(rc), MPI_ERR_INFO_VALUE) << error_string(rc);
    expect_previous("a bad value on one rank");
  }
  if (nprocs > 1) {
    const int rc = set_comm_algorithm(MPI_COMM_WORLD, "alltoall", me == 0 ? "pairwise" : "linear");
    EXPECT_EQ(error_class(rc), MPI_ERR_ARG)
        << "different values on different ranks: " << error_string(rc);
    expect_previous("different values");
  }
  for (const char* collective : {"no_such_collective", "Alltoall", ""}) {
    SCOPED_TRACE(std::string("collective '") + collective + "'");
    const int rc = set_comm_algorithm(MPI_COMM_WORLD, collective, "pairwise");
    EXPECT_EQ(error_class(rc), MPI_ERR_ARG) << error_string(rc);
  }
  EXPECT_EQ(error_class(set_comm_algorithm(MPI_COMM_WORLD, nullptr, "pairwise")), MPI_ERR_ARG);
  expect_previous("unknown collectives");
  {
    ScopedErrhandler eh(MPI_COMM_SELF, MPI_ERRORS_RETURN);  // MPI_COMM_NULL's errors go there
    EXPECT_EQ(error_class(MPIX_Comm_set_algorithm(MPI_COMM_NULL, "alltoall", "pairwise")),
              MPI_ERR_COMM);
  }
}

// ------------------------------------------------------------------------------------------
// What a call sends. This program interposes a few MPI functions (each forwards to its PMPI_
// twin): MPI_Send_init remembers every persistent send request's peer and byte count,
// MPI_Start/MPI_Startall note the ones started while a recording is on, MPI_Isend notes its
// own (the engine posts sends of at most 256 B that way), and the MPI library's all-to-all
// collectives count their calls. mpi-advance lowers every scheduled algorithm into
// point-to-point messages, so the sends a blocking call starts can be compared with
// those a persistent request of the algorithm starts on the same arguments: equal when the
// blocking call runs the algorithm MPIX_Comm_set_algorithm named.
// ------------------------------------------------------------------------------------------
using Sends = std::vector<std::pair<int, long long>>;  // (peer, bytes), sorted

struct SendTrace {
  std::map<MPI_Request, std::pair<int, long long>> live;  // persistent send requests
  bool recording = false;
  Sends started;
  long system_calls = 0;
};

SendTrace& trace() {
  static SendTrace t;
  return t;
}

void note_start(MPI_Request r) {
  SendTrace& t = trace();
  if (!t.recording) return;
  const auto it = t.live.find(r);
  if (it != t.live.end()) t.started.push_back(it->second);
}

void note_system_call() {
  if (trace().recording) ++trace().system_calls;
}

struct Recorded {
  Sends sends;
  long system_calls = 0;
};

Recorded record(const std::function<void()>& call) {
  SendTrace& t = trace();
  t.started.clear();
  t.system_calls = 0;
  t.recording = true;
  call();
  t.recording = false;
  Recorded out{t.started, t.system_calls};
  std::sort(out.sends.begin(), out.sends.end());
  return out;
}

std::string show(const Sends& sends) {
  std::string text = "{";
  for (const auto& x : sends) {
    text += " " + std::to_string(x.second) + "B->" + std::to_string(x.first);
  }
  return text + " }";
}

int value(int src, int dst, int j, int iter) { return ((iter * 97 + src) * 131 + dst) * 7 + j; }

// One collective on int buffers whose every received element is known: fill() writes new send
// data and poisons the receive buffer, check() compares every received element.
class IntCall {
 public:
  virtual ~IntCall() = default;
  virtual const char* collective() const = 0;  // MPIX_Comm_set_algorithm's name for it
  virtual MPI_Comm comm() const = 0;
  virtual void fill(int iter) = 0;
  virtual void check(int iter, const std::string& what) const = 0;
  // The algorithm the calls run now, when the test knows it (expect_blocking_runs), else "".
  std::string algorithm;
  // Persistent init with info "mpix_algorithm" = spec (no info when spec is null).
  virtual int init(const char* spec, MPIX_Request* req) = 0;
  virtual int blocking() = 0;

  // One persistent cycle with new data, checked; false when init failed (on every rank).
  bool run_persistent(const char* spec, int iter) {
    fill(iter);
    MPIX_Request req = MPIX_REQUEST_NULL;
    const int rc = init(spec, &req);
    EXPECT_EQ(rc, MPI_SUCCESS) << collective() << " init: " << error_string(rc);
    if (rc != MPI_SUCCESS) return false;
    EXPECT_EQ(MPIX_Start(&req), MPI_SUCCESS);
    EXPECT_EQ(MPIX_Wait(&req, MPI_STATUS_IGNORE), MPI_SUCCESS);
    EXPECT_EQ(MPIX_Request_free(&req), MPI_SUCCESS);
    check(iter, std::string("persistent ") + collective());
    return true;
  }
  // One blocking call with new data, checked.
  void run_blocking(int iter) {
    fill(iter);
    const int rc = blocking();
    EXPECT_EQ(rc, MPI_SUCCESS) << "blocking " << collective() << ": " << error_string(rc);
    check(iter, std::string("blocking ") + collective());
  }
  // What an init without info reports.
  std::string reported_without_info() {
    MPIX_Request req = MPIX_REQUEST_NULL;
    const int rc = init(nullptr, &req);
    EXPECT_EQ(rc, MPI_SUCCESS) << collective() << " init without info: " << error_string(rc);
    if (rc != MPI_SUCCESS) return "<init failed>";
    const std::string name = reported(req);
    EXPECT_EQ(MPIX_Request_free(&req), MPI_SUCCESS);
    return name;
  }
};

// n ints to and from every rank.
class AlltoallCall : public IntCall {
 public:
  explicit AlltoallCall(MPI_Comm comm, int n = 3)
      : comm_(comm),
        me_(comm_rank(comm)),
        P_(comm_size(comm)),
        n_(n),
        sb_(static_cast<std::size_t>(P_ * n)),
        rb_(sb_.size()) {}
  const char* collective() const override { return "alltoall"; }
  MPI_Comm comm() const override { return comm_; }
  void fill(int iter) override {
    for (int d = 0; d < P_; ++d)
      for (int j = 0; j < n_; ++j)
        sb_[static_cast<std::size_t>(d * n_ + j)] = value(me_, d, j, iter);
    std::fill(rb_.begin(), rb_.end(), -1);
  }
  void check(int iter, const std::string& what) const override {
    long bad = 0;
    for (int src = 0; src < P_; ++src)
      for (int j = 0; j < n_; ++j)
        bad += rb_[static_cast<std::size_t>(src * n_ + j)] != value(src, me_, j, iter);
    EXPECT_EQ(bad, 0) << what << ": wrong ints on rank " << me_;
  }
  int init(const char* spec, MPIX_Request* req) override {
    int rc = 0;
    *req = init_with(comm_, spec, sb_.data(), rb_.data(), n_, &rc);
    return rc;
  }
  int blocking() override {
    return MPIX_Alltoall(sb_.data(), n_, MPI_INT, rb_.data(), n_, MPI_INT, comm_);
  }

 private:
  MPI_Comm comm_;
  int me_, P_, n_;
  std::vector<int> sb_, rb_;
};

MPI_Info info_for(const char* spec) {
  MPI_Info info = MPI_INFO_NULL;
  if (spec) {
    MPI_Info_create(&info);
    MPI_Info_set(info, MPIX_INFO_KEY_ALGORITHM, spec);
  }
  return info;
}

// 1..3 ints from s to d (a formula both sides know), send blocks in reverse order.
class AlltoallvCall : public IntCall {
 public:
  explicit AlltoallvCall(MPI_Comm comm) : comm_(comm), me_(comm_rank(comm)), P_(comm_size(comm)) {
    const std::size_t n = static_cast<std::size_t>(P_);
    sc_.resize(n), sd_.resize(n), rc_.resize(n), rd_.resize(n);
    int stotal = 0, rtotal = 0;
    for (int p = P_ - 1; p >= 0; --p) {
      sc_[static_cast<std::size_t>(p)] = units(me_, p);
      sd_[static_cast<std::size_t>(p)] = stotal;
      stotal += units(me_, p);
    }
    for (int p = 0; p < P_; ++p) {
      rc_[static_cast<std::size_t>(p)] = units(p, me_);
      rd_[static_cast<std::size_t>(p)] = rtotal;
      rtotal += units(p, me_);
    }
    sb_.resize(static_cast<std::size_t>(stotal));
    rb_.resize(static_cast<std::size_t>(rtotal));
  }
  const char* collective() const override { return "alltoallv"; }
  MPI_Comm comm() const override { return comm_; }
  void fill(int iter) override {
    for (int d = 0; d < P_; ++d)
      for (int j = 0; j < sc_[static_cast<std::size_t>(d)]; ++j)
        sb_[static_cast<std::size_t>(sd_[static_cast<std::size_t>(d)] + j)] =
            value(me_, d, j, iter);
    std::fill(rb_.begin(), rb_.end(), -1);
  }
  void check(int iter, const std::string& what) const override {
    long bad = 0;
    for (int src = 0; src < P_; ++src)
      for (int j = 0; j < rc_[static_cast<std::size_t>(src)]; ++j)
        bad += rb_[static_cast<std::size_t>(rd_[static_cast<std::size_t>(src)] + j)] !=
               value(src, me_, j, iter);
    EXPECT_EQ(bad, 0) << what << ": wrong ints on rank " << me_;
  }
  int init(const char* spec, MPIX_Request* req) override {
    MPI_Info info = info_for(spec);
    *req = MPIX_REQUEST_NULL;
    const int rc = MPIX_Alltoallv_init(sb_.data(), sc_.data(), sd_.data(), MPI_INT, rb_.data(),
                                       rc_.data(), rd_.data(), MPI_INT, comm_, info, req);
    if (info != MPI_INFO_NULL) MPI_Info_free(&info);
    return rc;
  }
  int blocking() override {
    return MPIX_Alltoallv(sb_.data(), sc_.data(), sd_.data(), MPI_INT, rb_.data(), rc_.data(),
                          rd_.data(), MPI_INT, comm_);
  }

 private:
  static int units(int s, int d) { return 1 + (s + 2 * d) % 3; }
  MPI_Comm comm_;
  int me_, P_;
  std::vector<int> sc_, sd_, rc_, rd_, sb_, rb_;
};

// On a distributed graph of its own: every rank sends to rank+1 and rank+2 (mod P), edge k
// carrying 1..3 ints; receive edge k comes from rank-k-1, whose edge k leads here.
class NeighborCall : public IntCall {
 public:
  NeighborCall() : me_(comm_rank(MPI_COMM_WORLD)), P_(comm_size(MPI_COMM_WORLD)) {
    const int dst[2] = {(me_ + 1) % P_, (me_ + 2) % P_};
    for (int k = 0; k < 2; ++k) src_[k] = ((me_ - k - 1) % P_ + P_) % P_;
    MPI_Dist_graph_create_adjacent(MPI_COMM_WORLD, 2, src_, MPI_UNWEIGHTED, 2, dst, MPI_UNWEIGHTED,
                                   MPI_INFO_NULL, 0, &graph_);
    for (int k = 0; k < 2; ++k) {
      sc_[k] = units(me_, k);
      rc_[k] = units(src_[k], k);
    }
    sd_[1] = 0, sd_[0] = sc_[1];  // reverse order
    rd_[0] = 0, rd_[1] = rc_[0];
    sb_.resize(static_cast<std::size_t>(sc_[0] + sc_[1]));
    rb_.resize(static_cast<std::size_t>(rc_[0] + rc_[1]));
  }
  ~NeighborCall() override { MPI_Comm_free(&graph_); }
  NeighborCall(const NeighborCall&) = delete;
  NeighborCall& operator=(const NeighborCall&) = delete;
  const char* collective() const override { return "neighbor_alltoallv"; }
  MPI_Comm comm() const override { return graph_; }
  void fill(int iter) override {
    for (int k = 0; k < 2; ++k)
      for (int j = 0; j < sc_[k]; ++j)
        sb_[static_cast<std::size_t>(sd_[k] + j)] = value(me_, k, j, iter);
    std::fill(rb_.begin(), rb_.end(), -1);
  }
  void check(int iter, const std::string& what) const override {
    // On 1 rank both edges lead to self: "system" inherits how the MPI library pairs duplicate
    // edges, which differs between versions (MPICH 4.3.2: in reverse; test_neighbor.cpp's
    // runnable), so its data is checked from 2 ranks on; the sends and calls still are.
    if (P_ == 1 && algorithm == "system") return;
    long bad = 0;
    for (int k = 0; k < 2; ++k)
      for (int j = 0; j < rc_[k]; ++j)
        bad += rb_[static_cast<std::size_t>(rd_[k] + j)] != value(src_[k], k, j, iter);
    EXPECT_EQ(bad, 0) << what << ": wrong ints on rank " << me_;
  }
  int init(const char* spec, MPIX_Request* req) override {
    MPI_Info info = info_for(spec);
    *req = MPIX_REQUEST_NULL;
    const int rc = MPIX_Neighbor_alltoallv_init(sb_.data(), sc_, sd_, MPI_INT, rb_.data(), rc_, rd_,
                                                MPI_INT, graph_, info, req);
    if (info != MPI_INFO_NULL) MPI_Info_free(&info);
    return rc;
  }
  int blocking() override {
    return MPIX_Neighbor_alltoallv(sb_.data(), sc_, sd_, MPI_INT, rb_.data(), rc_, rd_, MPI_INT,
                                   graph_);
  }

 private:
  static int units(int s, int edge) { return 1 + (s + edge) % 3; }
  int me_, P_;
  int src_[2] = {0, 0};
  MPI_Comm graph_ = MPI_COMM_NULL;
  int sc_[2] = {0, 0}, sd_[2] = {0, 0}, rc_[2] = {0, 0}, rd_[2] = {0, 0};
  std::vector<int> sb_, rb_;
};

// The sends a blocking call of the communicator's current choice starts are those of a
// persistent request of algorithm `name` on the same arguments; "system" calls the MPI
// library's collective and starts none of ours, the others never call it. Returns the sends.
Sends expect_blocking_runs(IntCall& call, const std::string& name, int iter) {
  SCOPED_TRACE(std::string("blocking ") + call.collective() + " must run '" + name + "'");
  call.algorithm = name;
  bool ok = true;
  const Recorded pers = record([&] { ok = call.run_persistent(name.c_str(), iter); });
  const Recorded blk = record([&] { call.run_blocking(iter + 1); });
  if (ok) {
    EXPECT_EQ(show(blk.sends), show(pers.sends))
        << "the blocking call did not start the sends of a persistent '" << name << "' request";
  }
  call.algorithm.clear();
  Spec spec;
  EXPECT_TRUE(parse_spec(name, &spec));
  if (spec.name == "system") {
    EXPECT_GE(blk.system_calls, 1) << "blocking 'system' must call the MPI library's collective";
    EXPECT_TRUE(blk.sends.empty())
        << "blocking 'system' started sends of ours: " << show(blk.sends);
  } else {
    EXPECT_EQ(blk.system_calls, 0)
        << "blocking '" << name << "' called the MPI library's collective";
  }
  return pers.sends;
}

// For every registered algorithm but auto (resolved per call from the arguments: nothing
// fixed to compare with): chosen with MPIX_Comm_set_algorithm, the blocking call runs it.
std::map<std::string, Sends> expect_every_choice_reaches_blocking(IntCall& call) {
  std::map<std::string, Sends> seen;
  int iter = 10;
  for (const std::string& name : registered_algorithms(call.collective())) {
    if (name == "auto") continue;
    ScopedCommAlgorithm sel(call.comm(), call.collective(), name);
    if (!sel.ok()) continue;  // failed on every rank: MPIX_Comm_set_algorithm agrees
    seen[name] = expect_blocking_runs(call, name, iter += 2);
  }
  return seen;
}

TEST(CommAlgorithm, ReachesBlockingAlltoall) {
  AlltoallCall call(MPI_COMM_WORLD);
  std::map<std::string, Sends> seen = expect_every_choice_reaches_blocking(call);
  // The comparison tells algorithms apart: from 4 ranks on, Bruck sends P/2 blocks to rank+1
  // in one message where linear sends one block.
  if (comm_size(MPI_COMM_WORLD) >= 4) {
    ASSERT_EQ(seen.count("linear") + seen.count("bruck"), 2u);
    EXPECT_NE(show(seen["linear"]), show(seen["bruck"]));
  }
}

TEST(CommAlgorithm, ReachesBlockingAlltoallv) {
  AlltoallvCall call(MPI_COMM_WORLD);
  expect_every_choice_reaches_blocking(call);
}

TEST(CommAlgorithm, ReachesBlockingNeighborAlltoallv) {
  NeighborCall call;
  expect_every_choice_reaches_blocking(call);
}

// ------------------------------------------------------------------------------------------
// The environment. test/mpi/environment.cmake runs these with MPIX_ALLTOALL / MPIX_ALLTOALLV
// set before the process starts (the library reads them once per process), and says what each
// must resolve to: MPIA_TEST_EXPECT_ALLTOALL / _ALLTOALLV ("auto" for a bad value, ignored), and
// MPIA_TEST_WARN_ALLTOALL / _ALLTOALLV=1 when the library must complain on stderr (a bad or
// clamped value). A test whose variable is not set skips, on every rank alike.
// ------------------------------------------------------------------------------------------
void expect_environment(IntCall& call, const char* suffix) {
  const std::string var = std::string("MPIX_") + suffix;
  const char* env = std::getenv(var.c_str());
  if (env == nullptr) GTEST_SKIP() << var << " is not set (see environment.cmake)";
  const char* expect_env = std::getenv((std::string("MPIA_TEST_EXPECT_") + suffix).c_str());
  ASSERT_NE(expect_env, nullptr) << "registration bug: MPIA_TEST_EXPECT_" << suffix << " unset";
  const std::string expected = expect_env;
  const char* warn_env = std::getenv((std::string("MPIA_TEST_WARN_") + suffix).c_str());
  const bool expect_warning = warn_env && std::strcmp(warn_env, "1") == 0;
  SCOPED_TRACE(var + "='" + env + "', expected '" + expected + "'" +
               (expect_warning ? " with a warning" : ""));
  const std::vector<std::string> names = registered_algorithms(call.collective());
  // Whether `got` is what the environment must give.
  auto expect_env_choice = [&](const std::string& got, const std::string& where) {
    if (expected == "auto") {
      Spec spec;
      EXPECT_TRUE(parse_spec(got, &spec)) << where << ": '" << got << "'";
      EXPECT_NE(spec.name, "auto") << where << ": auto reports what it chose";
      EXPECT_NE(std::find(names.begin(), names.end(), spec.name), names.end())
          << where << ": '" << got << "' is not registered";
    } else {
      EXPECT_EQ(got, expected) << where;
    }
  };

  // No info: the environment's choice. This is the first selection of the process for this
  // collective: a bad value is reported on stderr now, a good one is not.
  std::string got;
  const std::string said = capture_stderr([&] { got = call.reported_without_info(); });
  if (expect_warning) {
    EXPECT_NE(said.find(var), std::string::npos)
        << "a bad " << var << " must be reported on stderr; stderr had '" << said << "'";
  } else {
    EXPECT_EQ(said.find("mpi-advance"), std::string::npos)
        << "nothing to complain about in " << var << ", but stderr had '" << said << "'";
  }
  expect_env_choice(got, "init without info");
  // Info wins.
  const std::string other = expected == "pairwise" ? "linear" : "pairwise";
  {
    MPIX_Request req = MPIX_REQUEST_NULL;
    const int rc = call.init(other.c_str(), &req);
    EXPECT_EQ(rc, MPI_SUCCESS) << error_string(rc);
    if (rc == MPI_SUCCESS) {
      EXPECT_EQ(reported(req), other) << "info must win over the environment";
      EXPECT_EQ(MPIX_Request_free(&req), MPI_SUCCESS);
    }
  }
  // The communicator's choice wins until it is reset with "".
  {
    ScopedCommAlgorithm sel(call.comm(), call.collective(), other);
    EXPECT_EQ(call.reported_without_info(), other) << "MPIX_Comm_set_algorithm must win";
  }
  expect_env_choice(call.reported_without_info(), "after the reset");
  // The blocking call runs the environment's choice (what a persistent request of it sends).
  if (expected == "auto") {
    call.run_blocking(3);
  } else {
    expect_blocking_runs(call, expected, 3);
  }
}

TEST(SelectionEnv, Alltoall) {
  AlltoallCall call(MPI_COMM_WORLD);
  expect_environment(call, "ALLTOALL");
  if (std::getenv("MPIX_ALLTOALL") == nullptr) return;
  // A new communicator gets the environment's choice too, and the matrix's blocking runner
  // works on a derived type.
  MPI_Comm dup;
  MPI_Comm_dup(MPI_COMM_WORLD, &dup);
  {
    AlltoallCall on_dup(dup, 2);
    const std::string want = std::getenv("MPIA_TEST_EXPECT_ALLTOALL");
    const std::string got = on_dup.reported_without_info();
    if (want != "auto") {
      EXPECT_EQ(got, want) << "a new communicator";
    }
    on_dup.run_blocking(40);
  }
  MPI_Comm_free(&dup);
  Layout lvec = layout_vector_gaps();
  run_blocking(MPI_COMM_WORLD, "", lvec, 2, lvec, 2, false);
}

TEST(SelectionEnv, Alltoallv) {
  AlltoallvCall call(MPI_COMM_WORLD);
  expect_environment(call, "ALLTOALLV");
}

}  // namespace

// The interposed MPI functions (see "What a call sends"): each forwards to its PMPI_ twin. The
// MPI library's collectives are interposed under their PMPI_ names, which is how the library's
// "system" algorithm calls them (so that the drop-in library, which defines the MPI_ names, never
// sees its calls): each forwards to the next definition, the MPI library's.
template <class F>
F next_definition(F, const char* name) {
  return reinterpret_cast<F>(dlsym(RTLD_NEXT, name));
}
#define MPIA_NEXT(name) next_definition(&name, #name)

extern "C" {

int MPI_Send_init(const void* buf, int count, MPI_Datatype datatype, int dest, int tag,
                  MPI_Comm comm, MPI_Request* request) {
  const int rc = PMPI_Send_init(buf, count, datatype, dest, tag, comm, request);
  if (rc == MPI_SUCCESS) {
    int size = 0;
    PMPI_Type_size(datatype, &size);
    trace().live[*request] = {dest, static_cast<long long>(count) * size};
  }
  return rc;
}

int MPI_Isend(const void* buf, int count, MPI_Datatype datatype, int dest, int tag, MPI_Comm comm,
              MPI_Request* request) {
  // The size exchanges of an init (neighbor, alltoallv) send MPI_INT64_T: not the call's data.
  if (trace().recording && datatype != MPI_INT64_T) {
    int size = 0;
    PMPI_Type_size(datatype, &size);
    trace().started.push_back({dest, static_cast<long long>(count) * size});
  }
  return PMPI_Isend(buf, count, datatype, dest, tag, comm, request);
}

int MPI_Start(MPI_Request* request) {
  note_start(*request);
  return PMPI_Start(request);
}

int MPI_Startall(int count, MPI_Request array_of_requests[]) {
  for (int i = 0; i < count; ++i) note_start(array_of_requests[i]);
  return PMPI_Startall(count, array_of_requests);
}

int MPI_Request_free(MPI_Request* request) {
  trace().live.erase(*request);
  return PMPI_Request_free(request);
}

int PMPI_Alltoall(const void* sendbuf, int sendcount, MPI_Datatype sendtype, void* recvbuf,
                  int recvcount, MPI_Datatype recvtype, MPI_Comm comm) {
  note_system_call();
  static const auto next = MPIA_NEXT(PMPI_Alltoall);
  return next(sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype, comm);
}

int PMPI_Ialltoall(const void* sendbuf, int sendcount, MPI_Datatype sendtype, void* recvbuf,
                   int recvcount, MPI_Datatype recvtype, MPI_Comm comm, MPI_Request* request) {
  // mpi-advance's own size exchange (an agreed alltoallv plan: persistent init, or the blocking
  // call's plan cache) is an MPI_Ialltoall of MPI_INT64_T: not the MPI library running the call.
  if (sendtype != MPI_INT64_T) note_system_call();
  static const auto next = MPIA_NEXT(PMPI_Ialltoall);
  return next(sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype, comm, request);
}

int PMPI_Alltoallv(const void* sendbuf, const int sendcounts[], const int sdispls[],
                   MPI_Datatype sendtype, void* recvbuf, const int recvcounts[],
                   const int rdispls[], MPI_Datatype recvtype, MPI_Comm comm) {
  note_system_call();
  static const auto next = MPIA_NEXT(PMPI_Alltoallv);
  return next(sendbuf, sendcounts, sdispls, sendtype, recvbuf, recvcounts, rdispls, recvtype, comm);
}

int PMPI_Ialltoallv(const void* sendbuf, const int sendcounts[], const int sdispls[],
                    MPI_Datatype sendtype, void* recvbuf, const int recvcounts[],
                    const int rdispls[], MPI_Datatype recvtype, MPI_Comm comm,
                    MPI_Request* request) {
  note_system_call();
  static const auto next = MPIA_NEXT(PMPI_Ialltoallv);
  return next(sendbuf, sendcounts, sdispls, sendtype, recvbuf, recvcounts, rdispls, recvtype, comm,
              request);
}

int PMPI_Neighbor_alltoallv(const void* sendbuf, const int sendcounts[], const int sdispls[],
                            MPI_Datatype sendtype, void* recvbuf, const int recvcounts[],
                            const int rdispls[], MPI_Datatype recvtype, MPI_Comm comm) {
  note_system_call();
  static const auto next = MPIA_NEXT(PMPI_Neighbor_alltoallv);
  return next(sendbuf, sendcounts, sdispls, sendtype, recvbuf, recvcounts, rdispls, recvtype, comm);
}

int PMPI_Ineighbor_alltoallv(const void* sendbuf, const int sendcounts[], const int sdispls[],
                             MPI_Datatype sendtype, void* recvbuf, const int recvcounts[],
                             const int rdispls[], MPI_Datatype recvtype, MPI_Comm comm,
                             MPI_Request* request) {
  note_system_call();
  static const auto next = MPIA_NEXT(PMPI_Ineighbor_alltoallv);
  return next(sendbuf, sendcounts, sdispls, sendtype, recvbuf, recvcounts, rdispls, recvtype, comm,
              request);
}

}  // extern "C"
