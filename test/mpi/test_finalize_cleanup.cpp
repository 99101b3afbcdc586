// At MPI_Finalize the library frees what it keeps for every communicator still alive, not only
// MPI_COMM_WORLD's (issue 9, item 9). This program uses the library on MPI_COMM_WORLD, on two
// duplicates and on a Cartesian communicator that it never frees (its persistent requests it
// does free: those are the user's), then finalizes.
//
// It watches the library through the MPI profiling interface: the communicators, reduction
// operations and attribute keyvals (communicator and datatype) the library creates (every
// MPI_Comm_* constructor, MPI_Op_create and MPI_*_create_keyval called while the program
// itself is not inside one of its own MPI calls) must all be freed by the time MPI_Finalize
// returns. Under the ASan build, LeakSanitizer additionally checks the library's
// own memory. Plain main (no GoogleTest): the check runs after MPI_Finalize; exit status 1 on
// any failure, on the failing rank.
#include <mpi.h>

#include "mpi_advance.h"

#include <cstdio>
#include <cstdlib>
#include <set>
#include <vector>

namespace {

bool g_user = false;  // inside a communicator constructor the program itself calls
int g_rank = -1;
std::set<MPI_Comm> g_lib_comms;
std::set<MPI_Op> g_lib_ops;
std::set<int> g_lib_comm_keyvals, g_lib_type_keyvals;
long g_lib_type_keyvals_created = 0;
long g_lib_comms_created = 0;
int g_failures = 0;

void note_comm(MPI_Comm c) {
  if (!g_user && c != MPI_COMM_NULL) {
    g_lib_comms.insert(c);
    ++g_lib_comms_created;
  }
}

struct UserCall {
  UserCall() { g_user = true; }
  ~UserCall() { g_user = false; }
};

void fail(const char* what) {
  std::fprintf(stderr, "[rank %d] FAILED: %s\n", g_rank, what);
  ++g_failures;
}

}  // namespace

// --- The profiling layer ----------------------------------------------------------------------
extern "C" {
int MPI_Comm_dup(MPI_Comm comm, MPI_Comm* newcomm) {
  const int rc = PMPI_Comm_dup(comm, newcomm);
  if (rc == MPI_SUCCESS) note_comm(*newcomm);
  return rc;
}
int MPI_Comm_idup(MPI_Comm comm, MPI_Comm* newcomm, MPI_Request* request) {
  const int rc = PMPI_Comm_idup(comm, newcomm, request);
  if (rc == MPI_SUCCESS) note_comm(*newcomm);
  return rc;
}
int MPI_Comm_dup_with_info(MPI_Comm comm, MPI_Info info, MPI_Comm* newcomm) {
  const int rc = PMPI_Comm_dup_with_info(comm, info, newcomm);
  if (rc == MPI_SUCCESS) note_comm(*newcomm);
  return rc;
}
int MPI_Comm_split(MPI_Comm comm, int color, int key, MPI_Comm* newcomm) {
  const int rc = PMPI_Comm_split(comm, color, key, newcomm);
  if (rc == MPI_SUCCESS) note_comm(*newcomm);
  return rc;
}
int MPI_Comm_split_type(MPI_Comm comm, int type, int key, MPI_Info info, MPI_Comm* newcomm) {
  const int rc = PMPI_Comm_split_type(comm, type, key, info, newcomm);
  if (rc == MPI_SUCCESS) note_comm(*newcomm);
  return rc;
}
int MPI_Comm_create(MPI_Comm comm, MPI_Group group, MPI_Comm* newcomm) {
  const int rc = PMPI_Comm_create(comm, group, newcomm);
  if (rc == MPI_SUCCESS) note_comm(*newcomm);
  return rc;
}
int MPI_Comm_create_group(MPI_Comm comm, MPI_Group group, int tag, MPI_Comm* newcomm) {
  const int rc = PMPI_Comm_create_group(comm, group, tag, newcomm);
  if (rc == MPI_SUCCESS) note_comm(*newcomm);
  return rc;
}
int MPI_Dist_graph_create_adjacent(MPI_Comm comm, int indegree, const int sources[],
                                   const int sourceweights[], int outdegree,
                                   const int destinations[], const int destweights[], MPI_Info info,
                                   int reorder, MPI_Comm* newcomm) {
  const int rc = PMPI_Dist_graph_create_adjacent(comm, indegree, sources, sourceweights, outdegree,
                                                 destinations, destweights, info, reorder, newcomm);
  if (rc == MPI_SUCCESS) note_comm(*newcomm);
  return rc;
}
int MPI_Comm_free(MPI_Comm* comm) {
  const MPI_Comm c = comm ? *comm : MPI_COMM_NULL;
  const int rc = PMPI_Comm_free(comm);
  if (rc == MPI_SUCCESS) g_lib_comms.erase(c);
  return rc;
}
int MPI_Op_create(MPI_User_function* fn, int commute, MPI_Op* op) {
  const int rc = PMPI_Op_create(fn, commute, op);
  if (rc == MPI_SUCCESS && !g_user) g_lib_ops.insert(*op);
  return rc;
}
int MPI_Op_free(MPI_Op* op) {
  const MPI_Op o = op ? *op : MPI_OP_NULL;
  const int rc = PMPI_Op_free(op);
  if (rc == MPI_SUCCESS) g_lib_ops.erase(o);
  return rc;
}
int MPI_Comm_create_keyval(MPI_Comm_copy_attr_function* copy, MPI_Comm_delete_attr_function* del,
                           int* keyval, void* extra) {
  const int rc = PMPI_Comm_create_keyval(copy, del, keyval, extra);
  if (rc == MPI_SUCCESS && !g_user) g_lib_comm_keyvals.insert(*keyval);
  return rc;
}
int MPI_Comm_free_keyval(int* keyval) {
  const int k = keyval ? *keyval : MPI_KEYVAL_INVALID;
  const int rc = PMPI_Comm_free_keyval(keyval);
  if (rc == MPI_SUCCESS) g_lib_comm_keyvals.erase(k);
  return rc;
}
int MPI_Type_create_keyval(MPI_Type_copy_attr_function* copy, MPI_Type_delete_attr_function* del,
                           int* keyval, void* extra) {
  const int rc = PMPI_Type_create_keyval(copy, del, keyval, extra);
  if (rc == MPI_SUCCESS && !g_user) {
    g_lib_type_keyvals.insert(*keyval);
    ++g_lib_type_keyvals_created;
  }
  return rc;
}
int MPI_Type_free_keyval(int* keyval) {
  const int k = keyval ? *keyval : MPI_KEYVAL_INVALID;
  const int rc = PMPI_Type_free_keyval(keyval);
  if (rc == MPI_SUCCESS) g_lib_type_keyvals.erase(k);
  return rc;
}
}  // extern "C"

namespace {

void value_fill(std::vector<int>& s, std::vector<int>& r, int me, int P, int n, int salt) {
  for (int d = 0; d < P; ++d)
    for (int j = 0; j < n; ++j) s[std::size_t(d * n + j)] = ((salt * 131 + me) * 137 + d) * 8 + j;
  for (int& x : r) x = -1;
}

void value_check(const std::vector<int>& r, int me, int P, int n, int salt, const char* what) {
  for (int s = 0; s < P; ++s)
    for (int j = 0; j < n; ++j)
      if (r[std::size_t(s * n + j)] != ((salt * 131 + s) * 137 + me) * 8 + j) {
        fail(what);
        return;
      }
}

// Uses the library on comm: blocking alltoall(v), a persistent request (freed), locality.
void use(MPI_Comm comm, int salt) {
  int me, P;
  MPI_Comm_rank(comm, &me);
  MPI_Comm_size(comm, &P);
  const int n = 2;
  std::vector<int> s(std::size_t(P * n)), r(std::size_t(P * n));
  value_fill(s, r, me, P, n, salt);
  if (MPIX_Alltoall(s.data(), n, MPI_INT, r.data(), n, MPI_INT, comm) != MPI_SUCCESS)
    fail("MPIX_Alltoall");
  value_check(r, me, P, n, salt, "MPIX_Alltoall data");
  std::vector<int> counts(std::size_t(P), n), displs(static_cast<std::size_t>(P));
  for (int k = 0; k < P; ++k) displs[std::size_t(k)] = k * n;
  value_fill(s, r, me, P, n, salt + 1);
  if (MPIX_Alltoallv(s.data(), counts.data(), displs.data(), MPI_INT, r.data(), counts.data(),
                     displs.data(), MPI_INT, comm) != MPI_SUCCESS)
    fail("MPIX_Alltoallv");
  value_check(r, me, P, n, salt + 1, "MPIX_Alltoallv data");
  // With a derived datatype: the plan cache of blocking alltoallv gives it an identity (an
  // attribute on the type, under a keyval of the library's).
  MPI_Datatype pair;
  {
    UserCall u;
    MPI_Type_contiguous(n, MPI_INT, &pair);
    MPI_Type_commit(&pair);
  }
  std::vector<int> ones(std::size_t(P), 1), at(static_cast<std::size_t>(P));
  for (int k = 0; k < P; ++k) at[std::size_t(k)] = k;
  value_fill(s, r, me, P, n, salt + 3);
  if (MPIX_Alltoallv(s.data(), ones.data(), at.data(), pair, r.data(), ones.data(), at.data(), pair,
                     comm) != MPI_SUCCESS)
    fail("MPIX_Alltoallv with a derived datatype");
  value_check(r, me, P, n, salt + 3, "MPIX_Alltoallv data with a derived datatype");
  MPI_Type_free(&pair);
  MPI_Info info;
  {
    UserCall u;
    MPI_Info_create(&info);
    MPI_Info_set(info, MPIX_INFO_KEY_ALGORITHM, "tra2");
  }
  MPIX_Request req = MPIX_REQUEST_NULL;
  if (MPIX_Alltoall_init(s.data(), n, MPI_INT, r.data(), n, MPI_INT, comm, info, &req) !=
      MPI_SUCCESS)
    fail("MPIX_Alltoall_init");
  MPI_Info_free(&info);
  value_fill(s, r, me, P, n, salt + 2);
  if (MPIX_Start(&req) != MPI_SUCCESS || MPIX_Wait(&req, MPI_STATUS_IGNORE) != MPI_SUCCESS)
    fail("persistent alltoall");
  value_check(r, me, P, n, salt + 2, "persistent alltoall data");
  if (MPIX_Request_free(&req) != MPI_SUCCESS) fail("MPIX_Request_free");
  int node, nnodes, lr, ls;
  if (MPIX_Comm_locality(comm, &node, &nnodes, &lr, &ls) != MPI_SUCCESS) fail("locality");
  MPI_Comm split = MPI_COMM_NULL;
  if (MPIX_Comm_locality_split(comm, MPIX_LOCALITY_CROSS, &split) != MPI_SUCCESS)
    fail("MPIX_Comm_locality_split");
  // The split communicator is the user's: the program frees it (it is not the library's).
  g_lib_comms.erase(split);
  if (split != MPI_COMM_NULL) MPI_Comm_free(&split);
}

}  // namespace

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  MPI_Comm_rank(MPI_COMM_WORLD, &g_rank);
  int P;
  MPI_Comm_size(MPI_COMM_WORLD, &P);
  MPI_Comm a, b;
  {
    UserCall u;
    MPI_Comm_dup(MPI_COMM_WORLD, &a);  // never freed
    MPI_Comm_dup(MPI_COMM_WORLD, &b);  // never freed
  }
  use(MPI_COMM_WORLD, 1);
  use(a, 10);
  use(b, 20);
  // A neighbor collective on a topology the program keeps too.
  MPI_Comm ring;
  {
    UserCall u;
    int dims[1] = {P}, periods[1] = {1};
    MPI_Cart_create(MPI_COMM_WORLD, 1, dims, periods, 0, &ring);  // never freed
  }
  int sbuf[2] = {g_rank, g_rank}, rbuf[2] = {-1, -1};
  if (MPIX_Neighbor_alltoall(sbuf, 1, MPI_INT, rbuf, 1, MPI_INT, ring) != MPI_SUCCESS)
    fail("MPIX_Neighbor_alltoall");
  if (rbuf[0] != (g_rank + P - 1) % P || rbuf[1] != (g_rank + 1) % P)
    fail("MPIX_Neighbor_alltoall data");

  const long created = g_lib_comms_created;
  const std::size_t alive_before = g_lib_comms.size();
  MPI_Finalize();
  if (created == 0) fail("the profiling layer saw no communicator created by the library");
  if (alive_before == 0)
    fail(
        "the library kept no communicator before MPI_Finalize (is the profiling layer seeing it?)");
  if (!g_lib_comms.empty()) {
    std::fprintf(stderr,
                 "[rank %d] %zu of the library's communicators were not freed by MPI_Finalize "
                 "(%ld created, %zu alive before MPI_Finalize)\n",
                 g_rank, g_lib_comms.size(), created, alive_before);
    fail("the library's communicators outlive MPI_Finalize");
  }
  if (!g_lib_ops.empty()) fail("the library's MPI_Op outlives MPI_Finalize");
  if (g_lib_type_keyvals_created == 0)
    fail(
        "the profiling layer saw no datatype keyval created by the library (is the derived "
        "datatype's identity still kept in an attribute?)");
  if (!g_lib_comm_keyvals.empty()) fail("the library's communicator keyvals outlive MPI_Finalize");
  if (!g_lib_type_keyvals.empty()) fail("the library's datatype keyval outlives MPI_Finalize");
  if (g_rank == 0 && g_failures == 0)
    std::printf(
        "finalize cleanup: passed (%ld library communicators created, %zu alive before "
        "MPI_Finalize, all freed)\n",
        created, alive_before);
  return g_failures ? 1 : 0;
}
