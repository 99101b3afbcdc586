// The algorithm registry, the tunable-radix algorithm at every radix 2..P, and selection:
// info key "mpix_algorithm", environment variable MPIX_ALLTOALL, the precedence between them,
// and what MPIX_Request_get_algorithm reports.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <set>
#include <string>
#include <vector>

#include "test_support.hpp"

using namespace mpia_test;

namespace {

MPIX_Request init_with(MPI_Comm comm, const char *spec, int *buf_send, int *buf_recv, int n,
                       int *rc_out) {
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
  for (const char *want : {"pairwise", "linear", "bruck", "modified_bruck", "zero_copy_bruck",
                           "tra", "system", "auto"}) {
    EXPECT_EQ(unique.count(want), 1u) << want << " is not registered";
  }
  ScopedErrhandler eh(MPI_COMM_SELF, MPI_ERRORS_RETURN);
  for (std::size_t i = 0; i < names.size(); ++i) {
    const char *name = nullptr;
    const char *desc = nullptr;
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
  const char *name = nullptr;
  const char *desc = nullptr;
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
  run_blocking(comm, "tra:radix=" + std::to_string(max_radix), lstruct, 100, lstruct, 100,
               false);
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
  ScopedAlgorithmEnv no_env("");
  for (const std::string &name : names) {
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
  ScopedAlgorithmEnv no_env("");
  MPI_Info info;
  MPI_Info_create(&info);  // empty info: same as MPI_INFO_NULL
  MPIX_Request req = MPIX_REQUEST_NULL;
  int rc = MPIX_Alltoall_init(s.data(), 1, MPI_INT, r.data(), 1, MPI_INT, MPI_COMM_WORLD, info,
                              &req);
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

// MPIX_ALLTOALL is the process-wide selection: it applies to MPIX_Alltoall_init without the
// info key, and the info key wins over it.
TEST(Selection, EnvironmentAndPrecedence) {
  const int nprocs = comm_size(MPI_COMM_WORLD);
  std::vector<int> s(static_cast<std::size_t>(nprocs)), r(s.size());
  {
    ScopedAlgorithmEnv env("bruck");
    int rc = 0;
    MPIX_Request req = init_with(MPI_COMM_WORLD, nullptr, s.data(), r.data(), 1, &rc);
    EXPECT_EQ(rc, MPI_SUCCESS) << error_string(rc);
    if (rc == MPI_SUCCESS) {
      EXPECT_EQ(reported(req), "bruck") << "MPIX_ALLTOALL=bruck, no info";
      EXPECT_EQ(MPIX_Request_free(&req), MPI_SUCCESS);
    }
    req = init_with(MPI_COMM_WORLD, "pairwise", s.data(), r.data(), 1, &rc);
    EXPECT_EQ(rc, MPI_SUCCESS) << error_string(rc);
    if (rc == MPI_SUCCESS) {
      EXPECT_EQ(reported(req), "pairwise") << "MPIX_ALLTOALL=bruck, info pairwise";
      EXPECT_EQ(MPIX_Request_free(&req), MPI_SUCCESS);
    }
  }
  {
    const std::string spec = "tra:radix=" + std::to_string(std::max(2, nprocs));
    ScopedAlgorithmEnv env(spec);
    int rc = 0;
    MPIX_Request req = init_with(MPI_COMM_WORLD, nullptr, s.data(), r.data(), 1, &rc);
    EXPECT_EQ(rc, MPI_SUCCESS) << error_string(rc);
    if (rc == MPI_SUCCESS) {
      EXPECT_EQ(reported(req), spec) << "MPIX_ALLTOALL=" << spec << ", no info";
      EXPECT_EQ(MPIX_Request_free(&req), MPI_SUCCESS);
    }
  }
}

// A bad MPIX_ALLTOALL is reported on stderr and ignored: calls succeed and run "auto".
TEST(Selection, BadEnvironmentValueIsIgnored) {
  const int nprocs = comm_size(MPI_COMM_WORLD);
  const std::vector<std::string> names = registered_algorithms();
  Layout lint = layout_int();
  for (const char *bad : {"no_such_algorithm", "tra:radix=1", "tra:radix=abc"}) {
    SCOPED_TRACE(std::string("MPIX_ALLTOALL=") + bad);
    std::vector<int> s(static_cast<std::size_t>(nprocs)), r(s.size());
    {
      ScopedAlgorithmEnv env(bad);
      int rc = 0;
      MPIX_Request req = init_with(MPI_COMM_WORLD, nullptr, s.data(), r.data(), 1, &rc);
      EXPECT_EQ(rc, MPI_SUCCESS) << error_string(rc);
      if (rc == MPI_SUCCESS) {
        expect_reported_algorithm(req, "auto", nprocs, names);
        EXPECT_EQ(MPIX_Request_free(&req), MPI_SUCCESS);
      }
    }
    run_blocking(MPI_COMM_WORLD, bad, lint, 2, lint, 2, false);
  }
}

}  // namespace
