// Shared helpers of the MPI tests: datatypes with independently known type maps, guarded
// buffers filled from a formula of (source rank, destination rank, element index, iteration),
// the algorithm registry, and runners for the persistent and blocking all-to-all.
#pragma once

#include <mpi.h>

#include "mpi_advance.h"

#include <cstddef>
#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <vector>

namespace mpia_test {

// ------------------------------------------------------------------------------------------
// Primitive elements and the reference value formula.
// ------------------------------------------------------------------------------------------
enum class Prim : unsigned char { Int, Double, Byte, Char };
std::size_t prim_size(Prim p);
const char* prim_name(Prim p);

// The value every test expects at element `elem` of the block that rank `src` sends to rank
// `dst` in iteration `iter` (elements counted over the primitive type map of the whole block,
// so that send and receive types with equal signatures but different layouts agree).
std::uint64_t value_hash(int src, int dst, long elem, int iter);
// Writes the encoding of hash h as primitive p (prim_size(p) bytes).
void encode_value(Prim p, std::uint64_t h, unsigned char* out);
std::string format_value(Prim p, const unsigned char* bytes);

// ------------------------------------------------------------------------------------------
// A committed datatype with the type map the test expects it to have.
// ------------------------------------------------------------------------------------------
struct PrimAt {
  MPI_Aint offset;  // relative to the start of one element (the buffer address), may be < 0
  Prim kind;
};

class Layout {
 public:
  Layout() = default;
  Layout(std::string name, MPI_Datatype type, bool owned, std::vector<PrimAt> map);
  ~Layout();
  Layout(Layout&& other) noexcept;
  Layout& operator=(Layout&& other) noexcept;
  Layout(const Layout&) = delete;
  Layout& operator=(const Layout&) = delete;

  const std::string& name() const { return name_; }
  MPI_Datatype type() const { return type_; }
  MPI_Aint extent() const { return extent_; }
  const std::vector<PrimAt>& map() const { return map_; }

 private:
  void reset();
  std::string name_;
  MPI_Datatype type_ = MPI_DATATYPE_NULL;
  bool owned_ = false;
  MPI_Aint extent_ = 0;
  std::vector<PrimAt> map_;
};

using LayoutFactory = Layout (*)();

Layout layout_int();
Layout layout_double();
Layout layout_byte();
Layout layout_char();
Layout layout_contig2_int();         // contiguous(2, MPI_INT)
Layout layout_contig4_int();         // contiguous(4, MPI_INT)
Layout layout_vector_gaps();         // vector(3 blocks of 2 ints, stride 3): gaps inside
Layout layout_vector_trailing();     // vector(2 x 1 int, stride 2) resized to 16: gaps after too
Layout layout_struct_char_double();  // {char; double} with natural padding, extent sizeof
Layout layout_packed_char_double();  // char at 0, double at 1 (unaligned), extent 9
Layout layout_resized_lb();          // 2 ints at +8, resized to lb = 4, extent = 20
Layout layout_negative_stride();     // vector(2, 1, -1, MPI_DOUBLE): lb = -8, extent 16

// A send/receive datatype pair with equal signatures. For `units` u the send side is
// (u * send_mult) elements of send(), the receive side (u * recv_mult) elements of recv().
struct TypeCase {
  const char* name;
  LayoutFactory send;
  int send_mult;
  LayoutFactory recv;
  int recv_mult;
};

// ------------------------------------------------------------------------------------------
// A guarded buffer of nblocks blocks of `count` elements of a layout. Bytes outside the type
// map (gaps, padding, guards before and after) hold a sentinel that must never change.
// ------------------------------------------------------------------------------------------
class Buffer {
 public:
  Buffer(const Layout& layout, int count, int nblocks, unsigned char sentinel);
  void* ptr() { return base_ + origin_; }
  std::size_t size_bytes() const { return storage_.size(); }
  // Writes the reference values: block b holds what rank `me` sends to rank b
  // (as_sender) or what rank b sends to rank `me` (!as_sender).
  void fill(int me, int iter, bool as_sender);
  // Overwrites every type-map byte with `poison` (sentinel bytes are left alone).
  void poison(unsigned char poison);
  // Checks the reference values of `fill(me, iter, as_sender)` and the sentinel bytes.
  // Returns the number of wrong bytes and records (a few) gtest failures mentioning `what`.
  long check(int me, int iter, bool as_sender, const std::string& what) const;
  // Byte-exact snapshot comparison (the send buffer must not change).
  std::vector<unsigned char> snapshot() const { return storage_; }
  long compare(const std::vector<unsigned char>& snap, const std::string& what) const;

 private:
  struct Slot {
    std::size_t pos;  // index into storage_
    Prim kind;
    int block;
    long elem;
  };
  std::vector<unsigned char> storage_;
  unsigned char* base_ = nullptr;
  std::size_t origin_ = 0;
  std::vector<Slot> slots_;
  std::vector<unsigned char> covered_;
  unsigned char sentinel_;
};

// ------------------------------------------------------------------------------------------
// Algorithms.
// ------------------------------------------------------------------------------------------
// All names of the registry for `collective`, by MPIX_Algorithm_get from index 0 until it
// fails (MPI_COMM_SELF's error handler is MPI_ERRORS_RETURN meanwhile).
std::vector<std::string> registered_algorithms(const char* collective = "alltoall");

// The parameters MPIX_Algorithm_get lists for an algorithm (its description's
// "; key: meaning, min..max, default value" entries), evaluated for P ranks on N nodes of at most
// Q ranks. A listing this cannot read fails the test.
struct ListedParam {
  std::string key;
  long long min = 0, max = 0, default_value = 0;
};
std::vector<ListedParam> listed_params(const char* collective, const std::string& name, int P,
                                       int N, int Q);
// Every algorithm of the registry at values spanning each parameter's listed range: its ends,
// its default, the value above the low end and one geometrically between (every value when the
// range holds no more than 5), all combinations, grouped by algorithm; algorithms without
// parameters by name alone.
std::vector<std::string> param_specs(const char* collective, int P, int N, int Q);
// Whether specs[i] (a param_specs list) is its algorithm's first or last: the ends of its ranges.
bool at_range_end(const std::vector<std::string>& specs, std::size_t i);
// comm's size, its nodes (MPIX_Comm_locality) and the most ranks on one of them; collective.
void comm_extent(MPI_Comm comm, int* P, int* N, int* Q);

struct Spec {
  std::string name;
  std::map<std::string, std::string> params;
};
// Parses "name[:key=value[,key=value...]]".
bool parse_spec(const std::string& text, Spec* out);

int ceil_sqrt(int n);
// The radix "tra" must report without an explicit radix: ceil(sqrt(P)) clamped to 2..max(2,P).
int default_tra_radix(int nprocs);

// Checks MPIX_Request_get_algorithm against what was requested ("" = no info).
void expect_reported_algorithm(MPIX_Request req, const std::string& requested, int nprocs,
                               const std::vector<std::string>& registry);

// ------------------------------------------------------------------------------------------
// Runners. Every rank must call them with the same arguments.
// ------------------------------------------------------------------------------------------
struct RunOptions {
  int iterations = 5;          // persistent: Start/complete cycles, data changed every time
  bool in_place = false;       // sendbuf = MPI_IN_PLACE, data from recvbuf
  bool check_reported = true;  // compare MPIX_Request_get_algorithm with the request
  // >= 0: stop this many cycles after the request's trial settled (MPIX_Request_get_trial says
  // "chose ..." or nothing: agreed, so every rank stops at the same cycle); at most iterations.
  int after_settled = -1;
};

// Whether r's measured trial has settled, or r has none: MPIX_Request_get_trial says "chose ..."
// or nothing (the text is agreed: the same on every rank after the same start).
bool trial_settled(MPIX_Request r);

// Persistent: MPIX_Alltoall_init with info "mpix_algorithm" = spec (MPI_INFO_NULL when spec
// is empty), then `iterations` cycles alternating Start/Startall and Wait/Waitall/Test, each
// with new send data and a full check of both buffers, then MPIX_Request_free.
void run_persistent(MPI_Comm comm, const std::string& spec, const TypeCase& tc, int units,
                    const RunOptions& opt);
void run_persistent(MPI_Comm comm, const std::string& spec, const Layout& send, int scount,
                    const Layout& recv, int rcount, const RunOptions& opt);

// Blocking: MPIX_Alltoall with comm's alltoall algorithm set to spec for the call
// (ScopedCommAlgorithm; nothing is set when spec is empty: the default runs), with new data.
void run_blocking(MPI_Comm comm, const std::string& spec, const Layout& send, int scount,
                  const Layout& recv, int rcount, bool in_place);

// MPIX_Comm_set_algorithm(comm, collective, selection) under MPI_ERRORS_RETURN (comm's own
// handler is restored afterwards); returns its code. selection nullptr is passed as NULL.
int set_comm_algorithm(MPI_Comm comm, const char* collective, const char* selection);

// Chooses comm's algorithm for `collective` ("alltoall", "alltoallv" or "neighbor_alltoallv")
// with MPIX_Comm_set_algorithm for the lifetime of the object: it applies to the blocking calls
// on comm and to persistent inits without the info key. The destructor returns to the
// environment's choice (selection ""). Both are collective: every rank of comm constructs and
// destroys the object in the same order, with the same selection. An empty selection sets
// nothing (no call: the default stays). Every failure (a wrong name, a parameter out of range,
// ranks that disagree) is a test failure.
class ScopedCommAlgorithm {
 public:
  ScopedCommAlgorithm(MPI_Comm comm, const char* collective, const std::string& selection);
  ~ScopedCommAlgorithm();
  ScopedCommAlgorithm(const ScopedCommAlgorithm&) = delete;
  ScopedCommAlgorithm& operator=(const ScopedCommAlgorithm&) = delete;
  // Whether the selection is in force (set successfully, or empty).
  bool ok() const { return ok_; }

 private:
  MPI_Comm comm_;
  std::string collective_;
  std::string selection_;
  bool set_ = false;
  bool ok_ = true;
};

// Runs `call` with the process's stderr (file descriptor 2) redirected into a temporary file
// and returns what was written there; the text is copied to the real stderr afterwards.
std::string capture_stderr(const std::function<void()>& call);

// Sets an error handler on a communicator for the lifetime of the object.
class ScopedErrhandler {
 public:
  ScopedErrhandler(MPI_Comm comm, MPI_Errhandler eh);
  ~ScopedErrhandler();
  ScopedErrhandler(const ScopedErrhandler&) = delete;
  ScopedErrhandler& operator=(const ScopedErrhandler&) = delete;

 private:
  MPI_Comm comm_;
  MPI_Errhandler old_ = MPI_ERRHANDLER_NULL;
};

// MPI_Error_class of an error code, or -1 for MPI_SUCCESS.
int error_class(int code);
std::string error_string(int code);

// ------------------------------------------------------------------------------------------
// Test intensity. Oversubscribed MPICH busy-polls: at 16 ranks on 2 cores one collective
// round costs tens of milliseconds, against well under a millisecond for Open MPI with
// mpi_yield_when_idle. So each test states how many runs (one persistent init + cycles, or
// one blocking call) its full matrix has and the seconds it may take; when the projected time
// (runs x ~10 collectives x the measured cost of one MPI_Alltoall) exceeds that budget, it
// runs a deterministic 1-in-stride sample of its combinations. MPIA_TEST_FULL=1 runs all.
// The cost is measured once (max over ranks), so every rank computes the same stride.
// ------------------------------------------------------------------------------------------
double collective_seconds();
int sample_stride(long planned_runs, double budget_seconds);
// Whether combination `key` belongs to the 1-in-stride sample (a fixed mix of the key, so
// that samples spread over every dimension of a matrix).
bool sampled(long key, int stride);

int comm_rank(MPI_Comm comm);
int comm_size(MPI_Comm comm);

}  // namespace mpia_test
