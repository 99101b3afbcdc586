// Locality queries: MPIX_Comm_locality, MPIX_Comm_rank_locality and MPIX_Comm_locality_split,
// on MPI_COMM_WORLD, MPI_COMM_SELF, a duplicate and sub-communicators (odd/even ranks in
// reversed order). The expected node of every rank is computed here, independently of the
// library: from MPIX_LOCALITY parsed by this test (ppn:K, ppn:K,roundrobin, nodes:ID,...), or,
// when it is unset, from MPI_Comm_split_type(MPI_COMM_TYPE_SHARED) (which MPICH splits into
// MPIR_CVAR_NUM_CLIQUES "nodes" when that is set). Nodes are numbered by their lowest rank in
// the communicator, local ranks in rank order.
//
// With MPIA_TEST_EXPECT_BAD_LOCALITY set, MPIX_LOCALITY is malformed on purpose: every call
// that needs locality must fail with MPI_ERR_ARG on every rank, through the communicator's
// error handler, and nothing may hang; the other tests are skipped.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "test_support.hpp"

using namespace mpia_test;

namespace {

bool expect_bad_locality() {
  const char* v = std::getenv("MPIA_TEST_EXPECT_BAD_LOCALITY");
  return v != nullptr && *v != '\0' && std::strcmp(v, "0") != 0;
}

#define SKIP_IF_BAD_LOCALITY()                                                          \
  do {                                                                                  \
    if (expect_bad_locality()) GTEST_SKIP() << "MPIX_LOCALITY is malformed on purpose"; \
  } while (0)

bool is_mpich() {
  char version[MPI_MAX_LIBRARY_VERSION_STRING];
  int len = 0;
  MPI_Get_library_version(version, &len);
  return std::string(version, static_cast<std::size_t>(len)).find("MPICH") != std::string::npos;
}

// ------------------------------------------------------------------------------------------
// The expected locality, computed without the library.
// ------------------------------------------------------------------------------------------

// Parses a whole decimal number >= 0; false on anything else.
bool parse_number(const std::string& s, long* out) {
  if (s.empty() || s.size() > 9) return false;
  for (char c : s)
    if (c < '0' || c > '9') return false;
  *out = std::strtol(s.c_str(), nullptr, 10);
  return true;
}

// Node label of every rank of MPI_COMM_WORLD from MPIX_LOCALITY (the labels are arbitrary
// numbers; only equality matters). False when the value is malformed for this world size.
bool labels_from_env(const std::string& text, int P, std::vector<long>* labels) {
  labels->assign(static_cast<std::size_t>(P), 0);
  if (text.rfind("ppn:", 0) == 0) {
    std::string k_text = text.substr(4);
    bool roundrobin = false;
    const std::size_t comma = k_text.find(',');
    if (comma != std::string::npos) {
      if (k_text.substr(comma + 1) != "roundrobin") return false;
      roundrobin = true;
      k_text = k_text.substr(0, comma);
    }
    long k = 0;
    if (!parse_number(k_text, &k) || k < 1) return false;
    const long nodes = (P + k - 1) / k;
    for (int r = 0; r < P; ++r)
      (*labels)[static_cast<std::size_t>(r)] = roundrobin ? r % nodes : r / k;
    return true;
  }
  if (text.rfind("nodes:", 0) == 0) {
    std::vector<long> ids;
    std::string rest = text.substr(6);
    while (true) {
      const std::size_t comma = rest.find(',');
      long id = 0;
      if (!parse_number(rest.substr(0, comma), &id)) return false;
      ids.push_back(id);
      if (comma == std::string::npos) break;
      rest = rest.substr(comma + 1);
    }
    if (static_cast<int>(ids.size()) != P) return false;
    *labels = ids;
    return true;
  }
  return false;
}

const char* locality_env() {
  const char* v = std::getenv("MPIX_LOCALITY");
  return v;
}

// The rank in MPI_COMM_WORLD of every rank of comm.
std::vector<int> world_ranks(MPI_Comm comm) {
  MPI_Group g, wg;
  MPI_Comm_group(comm, &g);
  MPI_Comm_group(MPI_COMM_WORLD, &wg);
  const int n = comm_size(comm);
  std::vector<int> in(static_cast<std::size_t>(n)), out(in.size());
  for (int i = 0; i < n; ++i) in[static_cast<std::size_t>(i)] = i;
  MPI_Group_translate_ranks(g, n, in.data(), wg, out.data());
  MPI_Group_free(&g);
  MPI_Group_free(&wg);
  return out;
}

// The ranks in `parent` of the members of `sub` (a communicator made from parent's ranks).
std::vector<int> ranks_in(MPI_Comm sub, MPI_Comm parent) {
  MPI_Group gs, gp;
  MPI_Comm_group(sub, &gs);
  MPI_Comm_group(parent, &gp);
  const int n = comm_size(sub);
  std::vector<int> in(static_cast<std::size_t>(n)), out(in.size());
  for (int i = 0; i < n; ++i) in[static_cast<std::size_t>(i)] = i;
  MPI_Group_translate_ranks(gs, n, in.data(), gp, out.data());
  MPI_Group_free(&gs);
  MPI_Group_free(&gp);
  return out;
}

struct Expected {
  std::vector<int> node;                  // per rank of the communicator
  std::vector<int> local;                 // per rank of the communicator
  std::vector<std::vector<int>> members;  // per node: its ranks, ascending
  int nnodes() const { return static_cast<int>(members.size()); }
};

// Raw label of every rank of comm: from MPIX_LOCALITY through MPI_COMM_WORLD ranks, or the
// lowest comm rank sharing memory with it (MPI_Comm_split_type on comm itself).
std::vector<long> raw_labels(MPI_Comm comm) {
  const int n = comm_size(comm);
  std::vector<long> labels(static_cast<std::size_t>(n), 0);
  if (const char* env = locality_env()) {
    std::vector<long> world;
    const bool ok = labels_from_env(env, comm_size(MPI_COMM_WORLD), &world);
    EXPECT_TRUE(ok) << "test bug or registration error: MPIX_LOCALITY='" << env
                    << "' is malformed for " << comm_size(MPI_COMM_WORLD) << " ranks";
    if (!ok) return labels;
    const std::vector<int> wr = world_ranks(comm);
    for (int i = 0; i < n; ++i)
      labels[static_cast<std::size_t>(i)] =
          world[static_cast<std::size_t>(wr[static_cast<std::size_t>(i)])];
    return labels;
  }
  MPI_Comm shm;
  MPI_Comm_split_type(comm, MPI_COMM_TYPE_SHARED, comm_rank(comm), MPI_INFO_NULL, &shm);
  const std::vector<int> in_comm = ranks_in(shm, comm);
  const int lowest = *std::min_element(in_comm.begin(), in_comm.end());
  MPI_Comm_free(&shm);
  std::vector<int> all(static_cast<std::size_t>(n));
  MPI_Allgather(&lowest, 1, MPI_INT, all.data(), 1, MPI_INT, comm);
  for (int i = 0; i < n; ++i)
    labels[static_cast<std::size_t>(i)] = all[static_cast<std::size_t>(i)];
  return labels;
}

Expected expected_locality(MPI_Comm comm) {
  const std::vector<long> labels = raw_labels(comm);
  Expected e;
  std::vector<long> seen;  // label of node k
  for (std::size_t r = 0; r < labels.size(); ++r) {
    const auto it = std::find(seen.begin(), seen.end(), labels[r]);
    const int node = static_cast<int>(it - seen.begin());
    if (it == seen.end()) {
      seen.push_back(labels[r]);
      e.members.emplace_back();
    }
    e.node.push_back(node);
    e.local.push_back(static_cast<int>(e.members[static_cast<std::size_t>(node)].size()));
    e.members[static_cast<std::size_t>(node)].push_back(static_cast<int>(r));
  }
  return e;
}

// ------------------------------------------------------------------------------------------
// The checks, on one communicator (collective over it).
// ------------------------------------------------------------------------------------------
void check_split(MPI_Comm comm, const Expected& e, int kind) {
  const int me = comm_rank(comm);
  const char* what = kind == MPIX_LOCALITY_NODE ? "MPIX_LOCALITY_NODE" : "MPIX_LOCALITY_CROSS";
  SCOPED_TRACE(what);
  MPI_Comm sub = MPI_COMM_NULL;
  const int rc = MPIX_Comm_locality_split(comm, kind, &sub);
  ASSERT_EQ(rc, MPI_SUCCESS) << "MPIX_Comm_locality_split: " << error_string(rc);
  ASSERT_NE(sub, MPI_COMM_NULL);
  const int my_node = e.node[static_cast<std::size_t>(me)];
  const int my_local = e.local[static_cast<std::size_t>(me)];
  std::vector<int> want;
  if (kind == MPIX_LOCALITY_NODE) {
    want = e.members[static_cast<std::size_t>(my_node)];
  } else {
    for (std::size_t r = 0; r < e.local.size(); ++r)
      if (e.local[r] == my_local) want.push_back(static_cast<int>(r));
  }
  const std::vector<int> got = ranks_in(sub, comm);
  EXPECT_EQ(got, want) << "members (as ranks of the parent communicator, in sub-communicator "
                          "rank order)";
  const int sub_rank = comm_rank(sub), sub_size = comm_size(sub);
  EXPECT_EQ(sub_size, static_cast<int>(want.size()));
  if (kind == MPIX_LOCALITY_NODE) {
    EXPECT_EQ(sub_size, static_cast<int>(e.members[static_cast<std::size_t>(my_node)].size()));
    EXPECT_EQ(sub_rank, my_local) << "rank in the node communicator is the local rank";
  }
  // The new communicator is an ordinary one whose locality follows from its parent's: all on
  // one node (NODE), or one rank per node (CROSS).
  int node = -1, nnodes = -1, local_rank = -1, local_size = -1;
  const int rc2 = MPIX_Comm_locality(sub, &node, &nnodes, &local_rank, &local_size);
  EXPECT_EQ(rc2, MPI_SUCCESS) << "MPIX_Comm_locality on the split: " << error_string(rc2);
  if (kind == MPIX_LOCALITY_NODE) {
    EXPECT_EQ(node, 0);
    EXPECT_EQ(nnodes, 1);
    EXPECT_EQ(local_rank, sub_rank);
    EXPECT_EQ(local_size, sub_size);
  } else {
    EXPECT_EQ(node, sub_rank);
    EXPECT_EQ(nnodes, sub_size);
    EXPECT_EQ(local_rank, 0);
    EXPECT_EQ(local_size, 1);
  }
  MPI_Comm_free(&sub);
}

void check_comm(MPI_Comm comm, const std::string& name) {
  SCOPED_TRACE("communicator " + name + ", MPIX_LOCALITY=" +
               (locality_env() ? std::string("'") + locality_env() + "'" : "<unset>"));
  const Expected e = expected_locality(comm);
  const int me = comm_rank(comm), P = comm_size(comm);
  const int my_node = e.node[static_cast<std::size_t>(me)];

  int node = -1, nnodes = -1, local_rank = -1, local_size = -1;
  int rc = MPIX_Comm_locality(comm, &node, &nnodes, &local_rank, &local_size);
  ASSERT_EQ(rc, MPI_SUCCESS) << "MPIX_Comm_locality: " << error_string(rc);
  EXPECT_EQ(nnodes, e.nnodes()) << "number of nodes";
  EXPECT_EQ(node, my_node) << "node of rank " << me;
  EXPECT_EQ(local_rank, e.local[static_cast<std::size_t>(me)]) << "local rank of rank " << me;
  EXPECT_EQ(local_size, static_cast<int>(e.members[static_cast<std::size_t>(my_node)].size()))
      << "ranks on the node of rank " << me;

  // Cached: the same answer again.
  int node2 = -1, nnodes2 = -1, local_rank2 = -1, local_size2 = -1;
  rc = MPIX_Comm_locality(comm, &node2, &nnodes2, &local_rank2, &local_size2);
  EXPECT_EQ(rc, MPI_SUCCESS) << "second MPIX_Comm_locality: " << error_string(rc);
  EXPECT_EQ(node2, node);
  EXPECT_EQ(nnodes2, nnodes);
  EXPECT_EQ(local_rank2, local_rank);
  EXPECT_EQ(local_size2, local_size);

  // Every rank's view of every rank, and the package / NUMA domain.
  std::vector<int> mine = {node, local_rank, 0, 0};
  for (int r = 0; r < P; ++r) {
    int rn = -7, rl = -7, pkg = -7, numa = -7;
    rc = MPIX_Comm_rank_locality(comm, r, &rn, &rl, &pkg, &numa);
    EXPECT_EQ(rc, MPI_SUCCESS) << "MPIX_Comm_rank_locality(rank " << r << "): " << error_string(rc);
    EXPECT_EQ(rn, e.node[static_cast<std::size_t>(r)]) << "node of rank " << r << " seen by " << me;
    EXPECT_EQ(rl, e.local[static_cast<std::size_t>(r)])
        << "local rank of rank " << r << " seen by " << me;
    EXPECT_TRUE(pkg == MPIX_LOCALITY_UNBOUND || pkg >= 0) << "package " << pkg;
    EXPECT_TRUE(numa == MPIX_LOCALITY_UNBOUND || numa >= 0) << "NUMA domain " << numa;
    if (r == me) {
      mine[2] = pkg;
      mine[3] = numa;
    }
    // package and numa may be NULL.
    int rn2 = -7, rl2 = -7;
    rc = MPIX_Comm_rank_locality(comm, r, &rn2, &rl2, nullptr, nullptr);
    EXPECT_EQ(rc, MPI_SUCCESS) << "MPIX_Comm_rank_locality(rank " << r
                               << ", NULL, NULL): " << error_string(rc);
    EXPECT_EQ(rn2, rn);
    EXPECT_EQ(rl2, rl);
  }
  // What rank r says about itself is what everybody says about rank r (package and NUMA
  // included: they describe rank r's binding, whoever asks).
  std::vector<int> all(static_cast<std::size_t>(4 * P));
  MPI_Allgather(mine.data(), 4, MPI_INT, all.data(), 4, MPI_INT, comm);
  for (int r = 0; r < P; ++r) {
    int pkg = -7, numa = -7, rn = -7, rl = -7;
    MPIX_Comm_rank_locality(comm, r, &rn, &rl, &pkg, &numa);
    const int* theirs = &all[static_cast<std::size_t>(4 * r)];
    EXPECT_EQ(theirs[0], rn) << "rank " << r << " reports node " << theirs[0];
    EXPECT_EQ(theirs[1], rl) << "rank " << r << " reports local rank " << theirs[1];
    EXPECT_EQ(theirs[2], pkg) << "package of rank " << r << ": its own view vs rank " << me;
    EXPECT_EQ(theirs[3], numa) << "NUMA domain of rank " << r << ": its own view vs rank " << me;
  }

  check_split(comm, e, MPIX_LOCALITY_NODE);
  check_split(comm, e, MPIX_LOCALITY_CROSS);
}

// ------------------------------------------------------------------------------------------
// Tests.
// ------------------------------------------------------------------------------------------
TEST(Locality, World) {
  SKIP_IF_BAD_LOCALITY();
  check_comm(MPI_COMM_WORLD, "MPI_COMM_WORLD");
}

TEST(Locality, Self) {
  SKIP_IF_BAD_LOCALITY();
  int node = -1, nnodes = -1, local_rank = -1, local_size = -1;
  const int rc = MPIX_Comm_locality(MPI_COMM_SELF, &node, &nnodes, &local_rank, &local_size);
  ASSERT_EQ(rc, MPI_SUCCESS) << error_string(rc);
  EXPECT_EQ(node, 0);
  EXPECT_EQ(nnodes, 1);
  EXPECT_EQ(local_rank, 0);
  EXPECT_EQ(local_size, 1);
  check_comm(MPI_COMM_SELF, "MPI_COMM_SELF");
}

// A duplicate has its own cache; its answer is the world's.
TEST(Locality, Duplicate) {
  SKIP_IF_BAD_LOCALITY();
  MPI_Comm dup;
  MPI_Comm_dup(MPI_COMM_WORLD, &dup);
  check_comm(dup, "dup(MPI_COMM_WORLD)");
  int n1 = -1, nn1 = -1, l1 = -1, s1 = -1, n2 = -2, nn2 = -2, l2 = -2, s2 = -2;
  EXPECT_EQ(MPIX_Comm_locality(dup, &n1, &nn1, &l1, &s1), MPI_SUCCESS);
  EXPECT_EQ(MPIX_Comm_locality(MPI_COMM_WORLD, &n2, &nn2, &l2, &s2), MPI_SUCCESS);
  EXPECT_EQ(n1, n2);
  EXPECT_EQ(nn1, nn2);
  EXPECT_EQ(l1, l2);
  EXPECT_EQ(s1, s2);
  MPI_Comm_free(&dup);
}

// Odd and even ranks, each half in reversed order (key = -rank): node numbers follow the
// sub-communicator's rank order, node identities the world's.
TEST(Locality, SubCommunicatorsReversed) {
  SKIP_IF_BAD_LOCALITY();
  const int me = comm_rank(MPI_COMM_WORLD);
  MPI_Comm half;
  MPI_Comm_split(MPI_COMM_WORLD, me % 2, -me, &half);
  check_comm(half, me % 2 ? "odd ranks, reversed" : "even ranks, reversed");
  MPI_Comm_free(&half);
  // Every third rank dropped, the rest in a rotated order.
  const int P = comm_size(MPI_COMM_WORLD);
  MPI_Comm some;
  MPI_Comm_split(MPI_COMM_WORLD, me % 3 == 2 ? MPI_UNDEFINED : 0, (me + P / 2) % P, &some);
  int take = some != MPI_COMM_NULL ? 1 : 0, all = 0;
  MPI_Allreduce(&take, &all, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
  if (some != MPI_COMM_NULL) {
    check_comm(some, "ranks not 2 mod 3, rotated");
    MPI_Comm_free(&some);
  }
}

// Locality computed on a communicator, which is then freed (the cache goes with it), over and
// over; and on a fresh communicator in between other collectives.
TEST(Locality, ManyCommunicators) {
  SKIP_IF_BAD_LOCALITY();
  const int me = comm_rank(MPI_COMM_WORLD);
  int want[4];
  ASSERT_EQ(MPIX_Comm_locality(MPI_COMM_WORLD, &want[0], &want[1], &want[2], &want[3]),
            MPI_SUCCESS);
  // Communicator creation is slow on oversubscribed MPICH: fewer rounds there.
  const int rounds = sample_stride(12, 0.5) > 1 ? 3 : 12;
  for (int i = 0; i < rounds; ++i) {
    MPI_Comm c;
    MPI_Comm_split(MPI_COMM_WORLD, 0, me, &c);  // same group and order as world
    int got[4] = {-1, -1, -1, -1};
    EXPECT_EQ(MPIX_Comm_locality(c, &got[0], &got[1], &got[2], &got[3]), MPI_SUCCESS);
    for (int k = 0; k < 4; ++k) EXPECT_EQ(got[k], want[k]) << "field " << k << ", round " << i;
    MPI_Comm node;
    EXPECT_EQ(MPIX_Comm_locality_split(c, i % 2 ? MPIX_LOCALITY_CROSS : MPIX_LOCALITY_NODE, &node),
              MPI_SUCCESS);
    if (node != MPI_COMM_NULL) MPI_Comm_free(&node);
    MPI_Comm_free(&c);
  }
}

// Without MPIX_LOCALITY: the library agrees with MPI_Comm_split_type (checked above); under
// MPICH with MPIR_CVAR_NUM_CLIQUES=k the machine looks like min(k, P) nodes.
TEST(Locality, Detection) {
  SKIP_IF_BAD_LOCALITY();
  if (locality_env()) GTEST_SKIP() << "MPIX_LOCALITY overrides detection";
  const int P = comm_size(MPI_COMM_WORLD);
  int node = -1, nnodes = -1, local_rank = -1, local_size = -1;
  ASSERT_EQ(MPIX_Comm_locality(MPI_COMM_WORLD, &node, &nnodes, &local_rank, &local_size),
            MPI_SUCCESS);
  const char* cliques = std::getenv("MPIR_CVAR_NUM_CLIQUES");
  long k = 0;
  if (cliques && is_mpich() && parse_number(cliques, &k) && k >= 1) {
    EXPECT_EQ(nnodes, static_cast<int>(std::min<long>(k, P)))
        << "MPICH with MPIR_CVAR_NUM_CLIQUES=" << cliques;
    const char* by_block = std::getenv("MPIR_CVAR_CLIQUES_BY_BLOCK");
    if (by_block && std::strcmp(by_block, "1") == 0) {
      // Blocks: the ranks of a node are consecutive.
      for (int r = 1; r < P; ++r) {
        int n0 = -1, n1 = -1, l = -1;
        MPIX_Comm_rank_locality(MPI_COMM_WORLD, r - 1, &n0, &l, nullptr, nullptr);
        MPIX_Comm_rank_locality(MPI_COMM_WORLD, r, &n1, &l, nullptr, nullptr);
        EXPECT_TRUE(n1 == n0 || n1 == n0 + 1) << "ranks " << r - 1 << ", " << r;
      }
    }
  } else if (!cliques) {
    // One machine: every rank of this test run shares memory with every other.
    EXPECT_EQ(nnodes, 1);
    EXPECT_EQ(local_rank, comm_rank(MPI_COMM_WORLD));
    EXPECT_EQ(local_size, P);
  }
}

// Arguments: a rank outside the communicator, an unknown split kind, MPI_COMM_NULL.
TEST(Locality, BadArguments) {
  SKIP_IF_BAD_LOCALITY();
  const int P = comm_size(MPI_COMM_WORLD);
  ScopedErrhandler eh(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
  ScopedErrhandler eh_self(MPI_COMM_SELF, MPI_ERRORS_RETURN);
  int n = 0, l = 0;
  for (int bad : {-1, P, P + 5}) {
    const int rc = MPIX_Comm_rank_locality(MPI_COMM_WORLD, bad, &n, &l, nullptr, nullptr);
    EXPECT_NE(rc, MPI_SUCCESS) << "MPIX_Comm_rank_locality(rank " << bad << ")";
    if (rc != MPI_SUCCESS) {
      const int cls = error_class(rc);
      EXPECT_TRUE(cls == MPI_ERR_RANK || cls == MPI_ERR_ARG) << error_string(rc);
    }
  }
  MPI_Comm out = MPI_COMM_WORLD;
  const int rc = MPIX_Comm_locality_split(MPI_COMM_WORLD, 7, &out);
  EXPECT_NE(rc, MPI_SUCCESS) << "MPIX_Comm_locality_split(kind 7)";
  if (rc != MPI_SUCCESS) {
    EXPECT_EQ(error_class(rc), MPI_ERR_ARG) << error_string(rc);
    EXPECT_EQ(out, MPI_COMM_NULL) << "the out-handle is nulled on failure";
  } else if (out != MPI_COMM_NULL && out != MPI_COMM_WORLD) {
    MPI_Comm_free(&out);
  }
  int a = 0, b = 0, c = 0, d = 0;
  EXPECT_NE(MPIX_Comm_locality(MPI_COMM_NULL, &a, &b, &c, &d), MPI_SUCCESS);
  // The communicator still works.
  EXPECT_EQ(MPIX_Comm_locality(MPI_COMM_WORLD, &a, &b, &c, &d), MPI_SUCCESS);
}

// ------------------------------------------------------------------------------------------
// A malformed MPIX_LOCALITY (registered with MPIA_TEST_EXPECT_BAD_LOCALITY=1).
// ------------------------------------------------------------------------------------------
int g_handler_calls = 0;
int g_handler_class = -1;

void counting_handler(MPI_Comm*, int* code, ...) {
  ++g_handler_calls;
  g_handler_class = error_class(*code);
}

// Every rank gets MPI_ERR_ARG (checked collectively: no rank may succeed).
void expect_err_arg_everywhere(int rc, MPI_Comm comm, const std::string& what) {
  EXPECT_NE(rc, MPI_SUCCESS) << what << " succeeded";
  if (rc != MPI_SUCCESS) {
    EXPECT_EQ(error_class(rc), MPI_ERR_ARG) << what << ": " << error_string(rc);
  }
  int ok = rc == MPI_SUCCESS ? 1 : 0, any = 0;
  MPI_Allreduce(&ok, &any, 1, MPI_INT, MPI_MAX, comm);
  EXPECT_EQ(any, 0) << what << " succeeded on some rank";
}

// The first blocking call under a malformed MPIX_LOCALITY with MPIX_ALLTOALL set (its own
// registrations in environment.cmake: warnings are said once per process, so this must be the
// process's first library call). stderr must blame MPIX_LOCALITY and say what happens (calls
// that need locality fail with MPI_ERR_ARG), and the call must do just that. It must blame
// MPIX_ALLTOALL only where MPIX_ALLTOALL itself is bad (MPIA_TEST_WARN_ALLTOALL=1): never
// "(from MPIX_ALLTOALL; using auto)" for a good value whose algorithm needs the locality.
TEST(BadLocalityWarning, FirstBlockingCallSaysWhatIsWrong) {
  const char* alg = std::getenv("MPIX_ALLTOALL");
  if (!expect_bad_locality() || !alg) GTEST_SKIP() << "needs a bad MPIX_LOCALITY and MPIX_ALLTOALL";
  const char* warn_env = std::getenv("MPIA_TEST_WARN_ALLTOALL");
  const bool alltoall_bad = warn_env && std::strcmp(warn_env, "1") == 0;
  SCOPED_TRACE(std::string("MPIX_LOCALITY='") + locality_env() + "' MPIX_ALLTOALL='" + alg + "'");
  const int me = comm_rank(MPI_COMM_WORLD), P = comm_size(MPI_COMM_WORLD);
  ScopedErrhandler eh(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
  std::vector<int> sbuf(static_cast<std::size_t>(2 * P), me), rbuf(sbuf.size(), -1);
  int rc = MPI_SUCCESS;
  const std::string said = capture_stderr([&] {
    rc = MPIX_Alltoall(sbuf.data(), 2, MPI_INT, rbuf.data(), 2, MPI_INT, MPI_COMM_WORLD);
  });
  // auto, like tra2, needs the locality: the call fails, on every rank.
  expect_err_arg_everywhere(rc, MPI_COMM_WORLD, "the first blocking MPIX_Alltoall");
  const std::string locality = std::string("MPIX_LOCALITY='") + locality_env() + "'";
  EXPECT_NE(said.find(locality), std::string::npos)
      << "stderr must name MPIX_LOCALITY and its value; it had '" << said << "'";
  EXPECT_NE(said.find("fails with MPI_ERR_ARG"), std::string::npos)
      << "stderr must say what happens next; it had '" << said << "'";
  // A warning blaming MPIX_ALLTOALL ("... (from MPIX_ALLTOALL; using auto)").
  const bool blames_alltoall = said.find("from MPIX_ALLTOALL") != std::string::npos;
  if (alltoall_bad) {
    EXPECT_TRUE(blames_alltoall) << "MPIX_ALLTOALL is bad too; stderr had '" << said << "'";
  } else {
    EXPECT_FALSE(blames_alltoall) << "MPIX_ALLTOALL is good; stderr had '" << said << "'";
    // The locality message is the only one, and it is not dressed as MPIX_ALLTOALL's.
    EXPECT_EQ(said.find("using auto"), std::string::npos) << "stderr had '" << said << "'";
  }
  // Said once: the same call again fails the same way, silently.
  const std::string again = capture_stderr([&] {
    rc = MPIX_Alltoall(sbuf.data(), 2, MPI_INT, rbuf.data(), 2, MPI_INT, MPI_COMM_WORLD);
  });
  expect_err_arg_everywhere(rc, MPI_COMM_WORLD, "the second blocking MPIX_Alltoall");
  EXPECT_EQ(again.find("mpi-advance:"), std::string::npos) << "said again: '" << again << "'";
}

TEST(BadLocality, EveryCallFailsWithErrArg) {
  if (!expect_bad_locality()) GTEST_SKIP() << "MPIX_LOCALITY is well formed";
  SCOPED_TRACE(std::string("MPIX_LOCALITY='") + (locality_env() ? locality_env() : "<unset>") +
               "'");
  ASSERT_NE(locality_env(), nullptr) << "registration error: the bad value is not set";
  const int me = comm_rank(MPI_COMM_WORLD), P = comm_size(MPI_COMM_WORLD);
  std::vector<long> labels;
  EXPECT_FALSE(labels_from_env(locality_env(), P, &labels))
      << "registration error: the test considers this value well formed";

  ScopedErrhandler eh(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
  int a = -5, b = -5, c = -5, d = -5;
  // Twice: the failure is not cached as a success, nor does a retry hang.
  for (int i = 0; i < 2; ++i) {
    expect_err_arg_everywhere(MPIX_Comm_locality(MPI_COMM_WORLD, &a, &b, &c, &d), MPI_COMM_WORLD,
                              "MPIX_Comm_locality, call " + std::to_string(i));
  }
  expect_err_arg_everywhere(MPIX_Comm_rank_locality(MPI_COMM_WORLD, 0, &a, &b, nullptr, nullptr),
                            MPI_COMM_WORLD, "MPIX_Comm_rank_locality");
  for (int kind : {MPIX_LOCALITY_NODE, MPIX_LOCALITY_CROSS}) {
    MPI_Comm out = MPI_COMM_WORLD;
    const int rc = MPIX_Comm_locality_split(MPI_COMM_WORLD, kind, &out);
    expect_err_arg_everywhere(rc, MPI_COMM_WORLD,
                              "MPIX_Comm_locality_split(" + std::to_string(kind) + ")");
    if (rc != MPI_SUCCESS) {
      EXPECT_EQ(out, MPI_COMM_NULL) << "the out-handle is nulled on failure";
    } else if (out != MPI_COMM_NULL && out != MPI_COMM_WORLD) {
      MPI_Comm_free(&out);
    }
  }

  // A sub-communicator inherits the world's (bad) node ids.
  MPI_Comm half;
  MPI_Comm_split(MPI_COMM_WORLD, me % 2, -me, &half);
  MPI_Comm_set_errhandler(half, MPI_ERRORS_RETURN);
  expect_err_arg_everywhere(MPIX_Comm_locality(half, &a, &b, &c, &d), half,
                            "MPIX_Comm_locality on a sub-communicator");
  MPI_Comm_free(&half);

  // The error goes through the communicator's error handler.
  MPI_Comm dup;
  MPI_Comm_dup(MPI_COMM_WORLD, &dup);
  MPI_Errhandler counting;
  MPI_Comm_create_errhandler(counting_handler, &counting);
  MPI_Comm_set_errhandler(dup, counting);
  g_handler_calls = 0;
  g_handler_class = -1;
  const int rc = MPIX_Comm_locality(dup, &a, &b, &c, &d);
  EXPECT_EQ(error_class(rc), MPI_ERR_ARG) << error_string(rc);
  EXPECT_EQ(g_handler_calls, 1) << "the communicator's error handler must be invoked once";
  EXPECT_EQ(g_handler_class, MPI_ERR_ARG);
  MPI_Errhandler_free(&counting);
  MPI_Comm_free(&dup);

  // Collectives that need locality fail the same way; those that do not still work.
  std::vector<int> sbuf(static_cast<std::size_t>(2 * P)), rbuf(sbuf.size(), -1);
  for (int p = 0; p < P; ++p) {
    sbuf[static_cast<std::size_t>(2 * p)] = 1000 * me + p;
    sbuf[static_cast<std::size_t>(2 * p + 1)] = -(1000 * me + p);
  }
  for (const char* spec : {"tra2", "tra2:radix_intra=2,radix_inter=2"}) {
    MPI_Info info;
    MPI_Info_create(&info);
    MPI_Info_set(info, MPIX_INFO_KEY_ALGORITHM, spec);
    MPIX_Request req = MPIX_REQUEST_NULL;
    const int rc2 = MPIX_Alltoall_init(sbuf.data(), 2, MPI_INT, rbuf.data(), 2, MPI_INT,
                                       MPI_COMM_WORLD, info, &req);
    MPI_Info_free(&info);
    expect_err_arg_everywhere(rc2, MPI_COMM_WORLD, std::string("MPIX_Alltoall_init ") + spec);
    EXPECT_EQ(req, MPIX_REQUEST_NULL);
    if (req != MPIX_REQUEST_NULL) MPIX_Request_free(&req);
  }
  // Chosen for the communicator (MPIX_Comm_set_algorithm, strict): MPI_ERR_ARG everywhere.
  for (const char* spec : {"tra2", "tra2:radix_intra=2,radix_inter=2"}) {
    const int rc2 = set_comm_algorithm(MPI_COMM_WORLD, "alltoall", spec);
    expect_err_arg_everywhere(rc2, MPI_COMM_WORLD,
                              std::string("MPIX_Comm_set_algorithm(alltoall, ") + spec + ")");
    if (rc2 == MPI_SUCCESS) set_comm_algorithm(MPI_COMM_WORLD, "alltoall", "");
  }
  // Through the environment (environment.cmake runs this test with MPIX_ALLTOALL set, too): a
  // locality-aware selection that cannot be honoured is a warning and the call runs "auto"
  // (mpi_advance.h), or fails with MPI_ERR_ARG; either way every rank does the same, and a
  // success delivers the data. One that needs no locality (pairwise) must work.
  if (const char* env = std::getenv("MPIX_ALLTOALL")) {
    SCOPED_TRACE(std::string("blocking MPIX_Alltoall with MPIX_ALLTOALL=") + env);
    const bool needs_locality = std::string(env).rfind("tra2", 0) == 0;
    std::fill(rbuf.begin(), rbuf.end(), -1);
    const int rc2 = MPIX_Alltoall(sbuf.data(), 2, MPI_INT, rbuf.data(), 2, MPI_INT, MPI_COMM_WORLD);
    int ok = rc2 == MPI_SUCCESS ? 1 : 0, lo = 0, hi = 0;
    MPI_Allreduce(&ok, &lo, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
    MPI_Allreduce(&ok, &hi, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
    EXPECT_EQ(lo, hi) << "some ranks succeeded, some failed";
    if (!needs_locality) {
      EXPECT_EQ(rc2, MPI_SUCCESS) << "blocking " << env
                                  << " needs no locality: " << error_string(rc2);
    }
    if (rc2 == MPI_SUCCESS) {
      for (int p = 0; p < P; ++p) {
        EXPECT_EQ(rbuf[static_cast<std::size_t>(2 * p)], 1000 * p + me) << "from rank " << p;
        EXPECT_EQ(rbuf[static_cast<std::size_t>(2 * p + 1)], -(1000 * p + me)) << "from rank " << p;
      }
    } else {
      EXPECT_EQ(error_class(rc2), MPI_ERR_ARG) << error_string(rc2);
    }
  }
  {
    std::vector<int> counts(static_cast<std::size_t>(P), 2), displs(counts.size());
    for (int p = 0; p < P; ++p) displs[static_cast<std::size_t>(p)] = 2 * p;
    MPI_Info info;
    MPI_Info_create(&info);
    MPI_Info_set(info, MPIX_INFO_KEY_ALGORITHM, "locality");
    MPIX_Request req = MPIX_REQUEST_NULL;
    const int rc2 =
        MPIX_Alltoallv_init(sbuf.data(), counts.data(), displs.data(), MPI_INT, rbuf.data(),
                            counts.data(), displs.data(), MPI_INT, MPI_COMM_WORLD, info, &req);
    MPI_Info_free(&info);
    expect_err_arg_everywhere(rc2, MPI_COMM_WORLD, "MPIX_Alltoallv_init locality");
    EXPECT_EQ(req, MPIX_REQUEST_NULL);
    if (req != MPIX_REQUEST_NULL) MPIX_Request_free(&req);
  }
  // pairwise does not need locality. The library's persistent init computes locality first
  // on every rank (so that no rank skips a collective its peers are in), so it may fail with
  // MPI_ERR_ARG too; either way identically on every rank.
  {
    MPI_Info info;
    MPI_Info_create(&info);
    MPI_Info_set(info, MPIX_INFO_KEY_ALGORITHM, "pairwise");
    MPIX_Request req = MPIX_REQUEST_NULL;
    const int rc2 = MPIX_Alltoall_init(sbuf.data(), 2, MPI_INT, rbuf.data(), 2, MPI_INT,
                                       MPI_COMM_WORLD, info, &req);
    MPI_Info_free(&info);
    int ok = rc2 == MPI_SUCCESS ? 1 : 0, lo = 0, hi = 0;
    MPI_Allreduce(&ok, &lo, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
    MPI_Allreduce(&ok, &hi, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
    EXPECT_EQ(lo, hi) << "pairwise init: some ranks succeeded, some failed";
    if (rc2 == MPI_SUCCESS) {
      std::fill(rbuf.begin(), rbuf.end(), -1);
      EXPECT_EQ(MPIX_Start(&req), MPI_SUCCESS);
      EXPECT_EQ(MPIX_Wait(&req, MPI_STATUS_IGNORE), MPI_SUCCESS);
      for (int p = 0; p < P; ++p) {
        EXPECT_EQ(rbuf[static_cast<std::size_t>(2 * p)], 1000 * p + me) << "from rank " << p;
        EXPECT_EQ(rbuf[static_cast<std::size_t>(2 * p + 1)], -(1000 * p + me)) << "from rank " << p;
      }
      MPI_Count m = 0, by = 0, im = 0, ib = 0;
      EXPECT_EQ(MPIX_Request_get_traffic(req, &m, &by, &im, &ib), MPI_SUCCESS);
      EXPECT_EQ(im, -1) << "no locality, so no inter-node count";
      EXPECT_EQ(ib, -1) << "no locality, so no inter-node count";
      EXPECT_EQ(MPIX_Request_free(&req), MPI_SUCCESS);
    } else {
      EXPECT_EQ(error_class(rc2), MPI_ERR_ARG) << "pairwise init: " << error_string(rc2);
      EXPECT_EQ(req, MPIX_REQUEST_NULL);
    }
    // Choosing pairwise for the communicator: MPIX_Comm_set_algorithm computes locality
    // first (on every rank, as persistent init does), so it may fail with MPI_ERR_ARG too;
    // either way identically on every rank. If it succeeds, the blocking pairwise call (which
    // needs no locality) must work. (The registration with MPIX_ALLTOALL=pairwise checks the
    // blocking call without MPIX_Comm_set_algorithm, above.)
    const int rc3 = set_comm_algorithm(MPI_COMM_WORLD, "alltoall", "pairwise");
    ok = rc3 == MPI_SUCCESS ? 1 : 0;
    MPI_Allreduce(&ok, &lo, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
    MPI_Allreduce(&ok, &hi, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
    EXPECT_EQ(lo, hi) << "MPIX_Comm_set_algorithm pairwise: some ranks succeeded, some failed";
    if (rc3 == MPI_SUCCESS) {
      std::fill(rbuf.begin(), rbuf.end(), -1);
      const int rc4 =
          MPIX_Alltoall(sbuf.data(), 2, MPI_INT, rbuf.data(), 2, MPI_INT, MPI_COMM_WORLD);
      EXPECT_EQ(rc4, MPI_SUCCESS) << "blocking pairwise needs no locality: " << error_string(rc4);
      if (rc4 == MPI_SUCCESS) {
        for (int p = 0; p < P; ++p) {
          EXPECT_EQ(rbuf[static_cast<std::size_t>(2 * p)], 1000 * p + me) << "from rank " << p;
        }
      }
      EXPECT_EQ(set_comm_algorithm(MPI_COMM_WORLD, "alltoall", ""), MPI_SUCCESS);
    } else {
      EXPECT_EQ(error_class(rc3), MPI_ERR_ARG)
          << "MPIX_Comm_set_algorithm pairwise: " << error_string(rc3);
    }
  }
  // Still failing afterwards, and MPI_COMM_WORLD still usable.
  expect_err_arg_everywhere(MPIX_Comm_locality(MPI_COMM_WORLD, &a, &b, &c, &d), MPI_COMM_WORLD,
                            "MPIX_Comm_locality at the end");
  MPI_Barrier(MPI_COMM_WORLD);
}

}  // namespace
