// "Persistence that pays": once a request is initialised, Start and Wait allocate nothing.
// This binary replaces the global operator new, which also serves the library's own C++
// allocations (the shared library resolves operator new to the executable's definition), and
// counts allocations made between Start and the end of Wait for every scheduled algorithm.
// The MPI library's own malloc calls are not ours and are not counted.
#include "mpi_advance.h"

#include <gtest/gtest.h>

#include <atomic>
#include <cstdlib>
#include <new>
#include <string>
#include <vector>

namespace {
std::atomic<long> g_allocations{0};
}

void* operator new(std::size_t n) {
  ++g_allocations;
  if (void* p = std::malloc(n ? n : 1)) return p;
  throw std::bad_alloc();
}
void* operator new[](std::size_t n) {
  ++g_allocations;
  if (void* p = std::malloc(n ? n : 1)) return p;
  throw std::bad_alloc();
}
// The nothrow forms too (std::stable_sort's temporary buffer uses them): every new/delete pair
// must come from these replacements, or a sanitizer sees its own new freed by our delete.
void* operator new(std::size_t n, const std::nothrow_t&) noexcept {
  ++g_allocations;
  return std::malloc(n ? n : 1);
}
void* operator new[](std::size_t n, const std::nothrow_t&) noexcept {
  ++g_allocations;
  return std::malloc(n ? n : 1);
}
void operator delete(void* p, const std::nothrow_t&) noexcept { std::free(p); }
void operator delete[](void* p, const std::nothrow_t&) noexcept { std::free(p); }
void operator delete(void* p) noexcept { std::free(p); }
void operator delete[](void* p) noexcept { std::free(p); }
void operator delete(void* p, std::size_t) noexcept { std::free(p); }
void operator delete[](void* p, std::size_t) noexcept { std::free(p); }

namespace {

std::vector<std::string> scheduled_algorithms(int P) {
  std::vector<std::string> out;
  const char *name, *desc;
  for (int i = 0; MPIX_Algorithm_get("alltoall", i, &name, &desc) == MPI_SUCCESS; ++i) {
    const std::string n = name;
    if (n == "system" || n == "auto") continue;  // MPI's or a choice among the others
    if (n == "tra") {
      for (int r = 2; r <= std::max(2, P); r += (P > 8 ? 3 : 1))
        out.push_back("tra:radix=" + std::to_string(r));
    } else {
      out.push_back(n);
    }
  }
  return out;
}

void check_no_allocation(bool in_place, MPI_Datatype type, int count) {
  int rank, P;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &P);
  MPI_Aint lb, extent;
  MPI_Type_get_extent(type, &lb, &extent);
  std::vector<char> send(std::size_t(P) * count * extent + 64), recv(send.size());
  for (const std::string& algo : scheduled_algorithms(P)) {
    MPI_Info info;
    MPI_Info_create(&info);
    MPI_Info_set(info, MPIX_INFO_KEY_ALGORITHM, algo.c_str());
    MPIX_Request req = MPIX_REQUEST_NULL;
    ASSERT_EQ(MPIX_Alltoall_init(in_place ? MPI_IN_PLACE : send.data(), count, type, recv.data(),
                                 count, type, MPI_COMM_WORLD, info, &req),
              MPI_SUCCESS)
        << algo;
    MPI_Info_free(&info);
    const long before = g_allocations.load();
    for (int i = 0; i < 3; ++i) {
      ASSERT_EQ(MPIX_Start(&req), MPI_SUCCESS);
      ASSERT_EQ(MPIX_Wait(&req, MPI_STATUS_IGNORE), MPI_SUCCESS);
    }
    EXPECT_EQ(g_allocations.load() - before, 0) << algo << (in_place ? " in place" : "");
    MPIX_Request_free(&req);
  }
}

TEST(NoAllocation, StartAndWaitAllocateNothing) { check_no_allocation(false, MPI_INT, 3); }

TEST(NoAllocation, InPlaceStartAndWaitAllocateNothing) { check_no_allocation(true, MPI_DOUBLE, 2); }

TEST(NoAllocation, DerivedTypeStartAndWaitAllocateNothing) {
  MPI_Datatype vec;
  MPI_Type_vector(2, 1, 3, MPI_INT, &vec);
  MPI_Type_commit(&vec);
  check_no_allocation(false, vec, 2);
  MPI_Type_free(&vec);
}

// MPIX_Startall's checks (null, active, the same request twice) and MPIX_Waitall allocate
// nothing either, at the small counts a program starts together.
TEST(NoAllocation, StartallAndWaitallAllocateNothing) {
  int P;
  MPI_Comm_size(MPI_COMM_WORLD, &P);
  const char* algos[] = {"pairwise", "bruck", "linear", "zero_copy_bruck"};
  constexpr int n = 4;
  std::vector<int> send(std::size_t(P) * 2), recv[n];
  MPIX_Request reqs[n];
  for (int i = 0; i < n; ++i) {
    recv[i].resize(send.size());
    MPI_Info info;
    MPI_Info_create(&info);
    MPI_Info_set(info, MPIX_INFO_KEY_ALGORITHM, algos[i]);
    reqs[i] = MPIX_REQUEST_NULL;
    ASSERT_EQ(MPIX_Alltoall_init(send.data(), 2, MPI_INT, recv[i].data(), 2, MPI_INT,
                                 MPI_COMM_WORLD, info, &reqs[i]),
              MPI_SUCCESS)
        << algos[i];
    MPI_Info_free(&info);
  }
  const long before = g_allocations.load();
  for (int k = 0; k < 3; ++k) {
    ASSERT_EQ(MPIX_Startall(n, reqs), MPI_SUCCESS);
    ASSERT_EQ(MPIX_Waitall(n, reqs, MPI_STATUSES_IGNORE), MPI_SUCCESS);
  }
  EXPECT_EQ(g_allocations.load() - before, 0) << "MPIX_Startall + MPIX_Waitall of " << n;
  for (MPIX_Request& r : reqs) MPIX_Request_free(&r);
}

// Neighbor all-to-all on a periodic 2-D grid (both neighbors of a size-2 or size-1 dimension
// are one rank) and on a ring: the same engine, so the same guarantee.
TEST(NoAllocation, NeighborStartAndWaitAllocateNothing) {
  int P;
  MPI_Comm_size(MPI_COMM_WORLD, &P);
  int dims[2] = {0, 0}, periods[2] = {1, 1};
  MPI_Dims_create(P, 2, dims);
  MPI_Comm cart;
  MPI_Cart_create(MPI_COMM_WORLD, 2, dims, periods, 0, &cart);
  std::vector<int> send(4 * 3), recv(4 * 3);
  for (const char* algo : {"direct", "locality"}) {
    MPI_Info info;
    MPI_Info_create(&info);
    MPI_Info_set(info, MPIX_INFO_KEY_ALGORITHM, algo);
    MPIX_Request req = MPIX_REQUEST_NULL;
    ASSERT_EQ(MPIX_Neighbor_alltoall_init(send.data(), 3, MPI_INT, recv.data(), 3, MPI_INT, cart,
                                          info, &req),
              MPI_SUCCESS)
        << algo;
    MPI_Info_free(&info);
    const long before = g_allocations.load();
    for (int i = 0; i < 3; ++i) {
      ASSERT_EQ(MPIX_Start(&req), MPI_SUCCESS);
      ASSERT_EQ(MPIX_Wait(&req, MPI_STATUS_IGNORE), MPI_SUCCESS);
    }
    EXPECT_EQ(g_allocations.load() - before, 0) << "neighbor " << algo;
    MPIX_Request_free(&req);
  }
  MPI_Comm_free(&cart);
}

}  // namespace
