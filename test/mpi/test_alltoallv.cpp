// Correctness of every registered all-to-all-v algorithm: MPIX_Alltoallv_init (info
// "mpix_algorithm", >= 5 Start/complete cycles with new data each time) and MPIX_Alltoallv
// (algorithm chosen with MPIX_Comm_set_algorithm), over count patterns (uniform, random, zeros,
// silent ranks, one huge block, power laws, sparse, banded, hot spots, counts that differ by
// sender only), displacement orders (ascending, reverse
// with gaps, shuffled with gaps; negative ones, with the base pointer at the end or in the middle
// of the buffer, in a test of their own), datatypes (holes, non-zero lb, negative stride, different
// send and receive types with equal signatures) and MPI_IN_PLACE. Every rank computes every count
// from a formula of (source, destination), so both sides of a pair agree; every received element is
// compared with value_hash(source, destination, element, iteration), and every byte outside the
// received blocks must keep its sentinel.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <numeric>
#include <ostream>
#include <string>
#include <vector>

#include "test_support.hpp"

using namespace mpia_test;

namespace {

// ------------------------------------------------------------------------------------------
// Count patterns: units(src, dst) on a communicator of P ranks.
// ------------------------------------------------------------------------------------------
enum class Pattern {
  Uniform,    // 3 everywhere
  Random,     // seeded, 0..7, asymmetric
  SymRandom,  // seeded, 0..6, units(s,d) == units(d,s)
  Zeros,      // nothing at all
  Silent,     // rank 0 sends nothing, rank P-1 receives nothing
  Huge,       // one huge block 0 -> P-1 among tiny ones
  PowerLaw,   // 40 / (1 + cyclic distance)^2, symmetric
  Sparse,     // most pairs zero (symmetric)
  Banded,     // |s - d| <= 1 (tridiagonal, like a 1-D stencil / banded sparse matrix)
  PowerLaw4,  // floor(S x^4), x in (0, 1] from a hash of (s, d): a few large blocks per rank
  HotSpots,   // every fifth rank receives ten times more
  BySender,   // the same count to every destination, different on every rank
};

const char* pattern_name(Pattern p) {
  switch (p) {
    case Pattern::Uniform:
      return "uniform";
    case Pattern::Random:
      return "random";
    case Pattern::SymRandom:
      return "sym_random";
    case Pattern::Zeros:
      return "zeros";
    case Pattern::Silent:
      return "silent_ranks";
    case Pattern::Huge:
      return "huge";
    case Pattern::PowerLaw:
      return "power_law";
    case Pattern::Sparse:
      return "sparse";
    case Pattern::Banded:
      return "banded";
    case Pattern::PowerLaw4:
      return "power_law_x4";
    case Pattern::HotSpots:
      return "hot_spots";
    case Pattern::BySender:
      return "by_sender";
  }
  return "?";
}

bool symmetric(Pattern p) {
  return p == Pattern::Uniform || p == Pattern::SymRandom || p == Pattern::Zeros ||
         p == Pattern::PowerLaw || p == Pattern::Sparse || p == Pattern::Banded;
}

std::uint64_t pair_hash(int a, int b, int seed) { return value_hash(a, b, -12345, seed); }

// `huge` is the number of units of the huge block (depends on the datatype).
int units(Pattern p, int s, int d, int P, int huge) {
  switch (p) {
    case Pattern::Uniform:
      return 3;
    case Pattern::Random:
      return static_cast<int>(pair_hash(s, d, 77) % 8);
    case Pattern::SymRandom:
      return static_cast<int>(pair_hash(std::min(s, d), std::max(s, d), 91) % 7);
    case Pattern::Zeros:
      return 0;
    case Pattern::Silent:
      if (s == 0 || d == P - 1) return 0;
      return 1 + (s + 2 * d) % 4;
    case Pattern::Huge:
      if (s == 0 && d == P - 1) return huge;
      return (s + d) % 3;
    case Pattern::PowerLaw: {
      const int k = ((d - s) % P + P) % P;
      const int dist = std::min(k, P - k);
      return 40 / ((1 + dist) * (1 + dist));
    }
    case Pattern::Sparse: {
      const int a = std::min(s, d), b = std::max(s, d);
      if (a == b) return 1 + a % 3;
      return pair_hash(a, b, 5) % 5 == 0 ? 1 + static_cast<int>(pair_hash(a, b, 6) % 9) : 0;
    }
    case Pattern::Banded: {
      const int diff = s > d ? s - d : d - s;
      return diff <= 1 ? 2 + (s + d) % 3 : 0;
    }
    case Pattern::PowerLaw4: {
      const double x = static_cast<double>(pair_hash(s, d, 13) % 65536 + 1) / 65536.0;
      return static_cast<int>(24 * x * x * x * x);
    }
    case Pattern::HotSpots:
      return d % 5 == 0 ? 10 : 1;
    case Pattern::BySender:
      return 1 + 2 * (s % 4);
  }
  return 0;
}

// ------------------------------------------------------------------------------------------
// Displacements (in extents of the datatype) of the blocks of one buffer.
// ------------------------------------------------------------------------------------------
// The first three are the matrix's; the negative ones (legal MPI: the base pointer is not the
// start of the buffer) have a test of their own.
enum class Displ {
  Ascending,
  ReverseGaps,
  ShuffledGaps,
  NegativeEnd,     // reverse order with gaps, every displacement < 0: the base is the buffer's end
  NegativeMiddle,  // shuffled with gaps, the base in the middle: displacements of both signs
};

const char* displ_name(Displ d) {
  switch (d) {
    case Displ::Ascending:
      return "ascending";
    case Displ::ReverseGaps:
      return "reverse_gaps";
    case Displ::ShuffledGaps:
      return "shuffled_gaps";
    case Displ::NegativeEnd:
      return "negative_base_at_end";
    case Displ::NegativeMiddle:
      return "negative_base_in_middle";
  }
  return "?";
}

// The receive side's order for a send side's (a different one, of the same sign).
Displ other_displ(Displ d) {
  switch (d) {
    case Displ::NegativeEnd:
      return Displ::NegativeMiddle;
    case Displ::NegativeMiddle:
      return Displ::NegativeEnd;
    default:
      return static_cast<Displ>((static_cast<int>(d) + 1) % 3);
  }
}

std::vector<int> make_displs(const std::vector<int>& counts, Displ mode, int salt) {
  const int P = static_cast<int>(counts.size());
  std::vector<int> order(static_cast<std::size_t>(P));
  std::iota(order.begin(), order.end(), 0);
  if (mode == Displ::ReverseGaps || mode == Displ::NegativeEnd) {
    std::reverse(order.begin(), order.end());
  } else if (mode == Displ::ShuffledGaps || mode == Displ::NegativeMiddle) {
    std::stable_sort(order.begin(), order.end(), [salt](int a, int b) {
      return pair_hash(a, salt, 3) < pair_hash(b, salt, 3);
    });
  }
  std::vector<int> displs(static_cast<std::size_t>(P), 0);
  int pos = mode == Displ::Ascending ? 0 : 2;  // leading gap too
  for (int b : order) {
    displs[static_cast<std::size_t>(b)] = pos;
    pos += counts[static_cast<std::size_t>(b)];
    if (mode != Displ::Ascending) pos += 1 + b % 3;
  }
  // pos is now the end of the last block (plus its gap).
  if (mode == Displ::NegativeEnd || mode == Displ::NegativeMiddle) {
    const int base = mode == Displ::NegativeEnd ? pos : pos / 2;
    for (int& d : displs) d -= base;
  }
  return displs;
}

// ------------------------------------------------------------------------------------------
// A guarded buffer of P blocks with their own counts and displacements.
// ------------------------------------------------------------------------------------------
class VBuffer {
 public:
  VBuffer(const Layout& lay, std::vector<int> counts, std::vector<int> displs,
          unsigned char sentinel)
      : counts_(std::move(counts)), displs_(std::move(displs)), sentinel_(sentinel) {
    const MPI_Aint ext = lay.extent();
    MPI_Aint lo = 0, hi = 0;
    struct Raw {
      MPI_Aint off;
      Prim kind;
      int block;
      long elem;
    };
    std::vector<Raw> raw;
    const long per = static_cast<long>(lay.map().size());
    for (std::size_t b = 0; b < counts_.size(); ++b) {
      for (int e = 0; e < counts_[b]; ++e) {
        for (std::size_t k = 0; k < lay.map().size(); ++k) {
          const PrimAt& pa = lay.map()[k];
          const MPI_Aint off = (static_cast<MPI_Aint>(displs_[b]) + e) * ext + pa.offset;
          lo = std::min(lo, off);
          hi = std::max(hi, off + static_cast<MPI_Aint>(prim_size(pa.kind)));
          raw.push_back({off, pa.kind, static_cast<int>(b), e * per + static_cast<long>(k)});
        }
      }
    }
    const std::size_t guard = 48;
    origin_ = guard + static_cast<std::size_t>(-lo);
    storage_.assign(static_cast<std::size_t>(hi - lo) + 2 * guard, sentinel_);
    covered_.assign(storage_.size(), 0);
    slots_.reserve(raw.size());
    for (const Raw& r : raw) {
      const std::size_t pos = origin_ + static_cast<std::size_t>(r.off);
      slots_.push_back({pos, r.kind, r.block, r.elem});
      for (std::size_t i = 0; i < prim_size(r.kind); ++i) {
        if (covered_[pos + i]) {
          std::fprintf(stderr, "test bug: overlapping blocks in a VBuffer\n");
          std::abort();
        }
        covered_[pos + i] = 1;
      }
    }
  }

  void* ptr() { return storage_.data() + origin_; }
  const int* counts() const { return counts_.data(); }
  const int* displs() const { return displs_.data(); }

  void fill(int me, int iter, bool as_sender) {
    for (const Slot& s : slots_) {
      const int src = as_sender ? me : s.block, dst = as_sender ? s.block : me;
      encode_value(s.kind, value_hash(src, dst, s.elem, iter), &storage_[s.pos]);
    }
  }
  void poison(unsigned char p) {
    for (std::size_t i = 0; i < storage_.size(); ++i)
      if (covered_[i]) storage_[i] = p;
  }
  long check(int me, int iter, bool as_sender, const std::string& what) const {
    long bad = 0;
    int reported = 0;
    const int max_reports = 4;
    unsigned char want[8];
    for (const Slot& s : slots_) {
      const int src = as_sender ? me : s.block, dst = as_sender ? s.block : me;
      encode_value(s.kind, value_hash(src, dst, s.elem, iter), want);
      if (std::memcmp(want, &storage_[s.pos], prim_size(s.kind)) != 0) {
        ++bad;
        if (reported++ < max_reports) {
          ADD_FAILURE() << what << ": rank " << me << ", block of rank " << s.block << ", element "
                        << s.elem << " (" << prim_name(s.kind) << "): expected "
                        << format_value(s.kind, want) << ", got "
                        << format_value(s.kind, &storage_[s.pos]);
        }
      }
    }
    for (std::size_t i = 0; i < storage_.size(); ++i) {
      if (!covered_[i] && storage_[i] != sentinel_) {
        ++bad;
        if (reported++ < max_reports) {
          ADD_FAILURE() << what << ": rank " << me << ": byte at offset "
                        << static_cast<long>(i) - static_cast<long>(origin_)
                        << " outside every block was overwritten";
        }
      }
    }
    if (bad > max_reports) ADD_FAILURE() << what << ": rank " << me << ": " << bad << " wrong";
    return bad;
  }
  std::vector<unsigned char> snapshot() const { return storage_; }
  bool same_as(const std::vector<unsigned char>& snap) const { return snap == storage_; }

 private:
  struct Slot {
    std::size_t pos;
    Prim kind;
    int block;
    long elem;
  };
  std::vector<int> counts_, displs_;
  std::vector<unsigned char> storage_;
  std::vector<unsigned char> covered_;
  std::vector<Slot> slots_;
  std::size_t origin_ = 0;
  unsigned char sentinel_;
};

// ------------------------------------------------------------------------------------------
// Registry, specs.
// ------------------------------------------------------------------------------------------
const std::vector<std::string>& registry_v() {
  static const std::vector<std::string> names = registered_algorithms("alltoallv");
  return names;
}

bool is_multipair(const std::string& name) { return name.rfind("multipair_", 0) == 0; }

// Every algorithm by name alone, plus "" (no info / no MPIX_Comm_set_algorithm: the default).
std::vector<std::string> base_specs() {
  std::vector<std::string> specs = registry_v();
  specs.emplace_back("");
  return specs;
}

int next_iter() {
  static int it = 0;
  return it += 8;
}

void expect_reported_v(MPIX_Request req, const std::string& spec, int P) {
  expect_reported_algorithm(req, spec, P, registry_v());
  char name[MPIX_MAX_ALGORITHM_STRING];
  int len = 0;
  if (MPIX_Request_get_algorithm(req, name, &len) != MPI_SUCCESS) return;
  Spec got;
  if (!parse_spec(name, &got)) return;
  if (is_multipair(got.name)) {
    EXPECT_EQ(got.params.count("window"), 1u) << name << " must report its window";
    if (spec == got.name) {
      EXPECT_EQ(got.params["window"], "8") << "default window";
    }
  }
  if (got.name == "hybrid") {
    ASSERT_EQ(got.params.count("threshold"), 1u) << name << " must report its threshold";
    if (spec == "hybrid") {
      EXPECT_EQ(got.params["threshold"], "256") << "default threshold";
    }
  }
  if (got.name == "bruck" || got.name == "hybrid") {
    ASSERT_EQ(got.params.count("radix"), 1u) << name << " must report its radix";
    const int r = std::atoi(got.params["radix"].c_str());
    EXPECT_GE(r, 2);
    EXPECT_LE(r, std::max(2, P));
    if (spec == got.name) {
      EXPECT_EQ(r, 2) << "default radix";
    }
  }
}

bool all_ok(MPI_Comm comm, bool local) {
  int in = local ? 1 : 0, out = 0;
  MPI_Allreduce(&in, &out, 1, MPI_INT, MPI_MIN, comm);
  return out != 0;
}

// ------------------------------------------------------------------------------------------
// One configuration and its runners.
// ------------------------------------------------------------------------------------------
struct Config {
  const TypeCase* tc;
  Pattern pattern;
  Displ displ;
  bool in_place;
};

std::string describe(const char* mode, const std::string& spec, const Config& c) {
  return std::string(mode) + " alltoallv, algorithm '" + (spec.empty() ? "<none>" : spec) + "', " +
         c.tc->name + ", counts " + pattern_name(c.pattern) + ", displacements " +
         displ_name(c.displ) + (c.in_place ? ", MPI_IN_PLACE" : "");
}

// The buffers of one configuration on rank `me` of P.
struct Buffers {
  Layout slay, rlay;
  VBuffer* sbuf = nullptr;
  VBuffer* rbuf = nullptr;
  std::vector<VBuffer> store;
};

void make_buffers(const Config& c, int me, int P, Buffers* out) {
  const TypeCase& tc = *c.tc;
  out->slay = tc.send();
  out->rlay = tc.recv();
  const long prims_per_unit =
      static_cast<long>(out->slay.map().size()) * static_cast<long>(tc.send_mult);
  const int huge = static_cast<int>(std::max(1L, 100000L / prims_per_unit));
  std::vector<int> sc(static_cast<std::size_t>(P)), rc(static_cast<std::size_t>(P));
  for (int p = 0; p < P; ++p) {
    sc[static_cast<std::size_t>(p)] = units(c.pattern, me, p, P, huge) * tc.send_mult;
    rc[static_cast<std::size_t>(p)] = units(c.pattern, p, me, P, huge) * tc.recv_mult;
  }
  const Displ rmode = c.in_place ? c.displ : other_displ(c.displ);
  out->store.reserve(2);
  out->store.emplace_back(out->rlay, rc, make_displs(rc, rmode, me + 17), 0xA5);
  out->rbuf = &out->store.back();
  if (!c.in_place) {
    out->store.emplace_back(out->slay, sc, make_displs(sc, c.displ, me), 0xC3);
    out->sbuf = &out->store.back();
  }
}

void complete(MPIX_Request* req, int how, const std::string& label) {
  int rc;
  switch (how % 3) {
    case 0:
      rc = MPIX_Start(req);
      EXPECT_EQ(rc, MPI_SUCCESS) << label << " MPIX_Start: " << error_string(rc);
      rc = MPIX_Wait(req, MPI_STATUS_IGNORE);
      EXPECT_EQ(rc, MPI_SUCCESS) << label << " MPIX_Wait: " << error_string(rc);
      break;
    case 1:
      rc = MPIX_Startall(1, req);
      EXPECT_EQ(rc, MPI_SUCCESS) << label << " MPIX_Startall: " << error_string(rc);
      rc = MPIX_Waitall(1, req, MPI_STATUSES_IGNORE);
      EXPECT_EQ(rc, MPI_SUCCESS) << label << " MPIX_Waitall: " << error_string(rc);
      break;
    default: {
      rc = MPIX_Start(req);
      EXPECT_EQ(rc, MPI_SUCCESS) << label << " MPIX_Start: " << error_string(rc);
      int flag = 0;
      while (rc == MPI_SUCCESS && !flag) rc = MPIX_Test(req, &flag, MPI_STATUS_IGNORE);
      EXPECT_EQ(rc, MPI_SUCCESS) << label << " MPIX_Test: " << error_string(rc);
      break;
    }
  }
}

void run_v_persistent(MPI_Comm comm, const std::string& spec, const Config& c, int iterations = 5) {
  const int me = comm_rank(comm), P = comm_size(comm);
  SCOPED_TRACE(describe("persistent", spec, c));
  Buffers b;
  make_buffers(c, me, P, &b);
  MPI_Info info = MPI_INFO_NULL;
  if (!spec.empty()) {
    MPI_Info_create(&info);
    MPI_Info_set(info, MPIX_INFO_KEY_ALGORITHM, spec.c_str());
  }
  MPIX_Request req = MPIX_REQUEST_NULL;
  int rc;
  if (c.in_place) {
    // The send arguments are ignored: pass garbage.
    rc = MPIX_Alltoallv_init(MPI_IN_PLACE, nullptr, nullptr, MPI_DATATYPE_NULL, b.rbuf->ptr(),
                             b.rbuf->counts(), b.rbuf->displs(), b.rlay.type(), comm, info, &req);
  } else {
    // Counts and displacements are read only at init: pass copies and destroy them after.
    std::vector<int> sc(b.sbuf->counts(), b.sbuf->counts() + P);
    std::vector<int> sd(b.sbuf->displs(), b.sbuf->displs() + P);
    std::vector<int> rcn(b.rbuf->counts(), b.rbuf->counts() + P);
    std::vector<int> rd(b.rbuf->displs(), b.rbuf->displs() + P);
    rc = MPIX_Alltoallv_init(b.sbuf->ptr(), sc.data(), sd.data(), b.slay.type(), b.rbuf->ptr(),
                             rcn.data(), rd.data(), b.rlay.type(), comm, info, &req);
    std::fill(sc.begin(), sc.end(), -99);
    std::fill(sd.begin(), sd.end(), -99);
    std::fill(rcn.begin(), rcn.end(), -99);
    std::fill(rd.begin(), rd.end(), -99);
  }
  if (info != MPI_INFO_NULL) MPI_Info_free(&info);
  EXPECT_EQ(rc, MPI_SUCCESS) << "MPIX_Alltoallv_init: " << error_string(rc);
  const bool ok = rc == MPI_SUCCESS && req != MPIX_REQUEST_NULL;
  if (!all_ok(comm, ok)) {
    if (ok) MPIX_Request_free(&req);
    ADD_FAILURE() << "MPIX_Alltoallv_init failed on some rank; cycles skipped";
    return;
  }
  expect_reported_v(req, spec, P);
  for (int i = 0; i < iterations; ++i) {
    const int iter = next_iter();
    const std::string label = "cycle " + std::to_string(i);
    std::vector<unsigned char> snap;
    if (c.in_place) {
      b.rbuf->fill(me, iter, true);
    } else {
      b.sbuf->fill(me, iter, true);
      b.rbuf->poison(static_cast<unsigned char>(0x30 + i));
      snap = b.sbuf->snapshot();
    }
    complete(&req, i, label);
    b.rbuf->check(me, iter, false, label + " receive buffer");
    if (!c.in_place) {
      EXPECT_TRUE(b.sbuf->same_as(snap)) << label << ": send buffer modified";
    }
  }
  rc = MPIX_Request_free(&req);
  EXPECT_EQ(rc, MPI_SUCCESS) << "MPIX_Request_free: " << error_string(rc);
  EXPECT_EQ(req, MPIX_REQUEST_NULL);
}

void run_v_blocking(MPI_Comm comm, const std::string& spec, const Config& c, int calls = 1) {
  const int me = comm_rank(comm), P = comm_size(comm);
  SCOPED_TRACE(describe("blocking", spec, c));
  Buffers b;
  make_buffers(c, me, P, &b);
  ScopedCommAlgorithm sel(comm, "alltoallv", spec);
  for (int i = 0; i < calls; ++i) {
    const int iter = next_iter();
    std::vector<unsigned char> snap;
    int rc;
    if (c.in_place) {
      b.rbuf->fill(me, iter, true);
      rc = MPIX_Alltoallv(MPI_IN_PLACE, nullptr, nullptr, MPI_DATATYPE_NULL, b.rbuf->ptr(),
                          b.rbuf->counts(), b.rbuf->displs(), b.rlay.type(), comm);
    } else {
      b.sbuf->fill(me, iter, true);
      b.rbuf->poison(static_cast<unsigned char>(0x40 + i));
      snap = b.sbuf->snapshot();
      rc = MPIX_Alltoallv(b.sbuf->ptr(), b.sbuf->counts(), b.sbuf->displs(), b.slay.type(),
                          b.rbuf->ptr(), b.rbuf->counts(), b.rbuf->displs(), b.rlay.type(), comm);
    }
    EXPECT_EQ(rc, MPI_SUCCESS) << "MPIX_Alltoallv call " << i << ": " << error_string(rc);
    b.rbuf->check(me, iter, false, "call " + std::to_string(i) + " receive buffer");
    if (!c.in_place) {
      EXPECT_TRUE(b.sbuf->same_as(snap)) << "send buffer modified";
    }
  }
}

// ------------------------------------------------------------------------------------------
// Datatypes.
// ------------------------------------------------------------------------------------------
const TypeCase kTypes[] = {
    {"int", layout_int, 1, layout_int, 1},
    {"double", layout_double, 1, layout_double, 1},
    {"vector_gaps", layout_vector_gaps, 1, layout_vector_gaps, 1},
    {"struct_char_double", layout_struct_char_double, 1, layout_struct_char_double, 1},
    {"resized_lb", layout_resized_lb, 1, layout_resized_lb, 1},
    {"negative_stride", layout_negative_stride, 1, layout_negative_stride, 1},
    {"vector_to_int", layout_vector_gaps, 1, layout_int, 6},
    {"int_to_contig4", layout_int, 4, layout_contig4_int, 1},
    {"struct_to_packed", layout_struct_char_double, 1, layout_packed_char_double, 1},
    {"resized_lb_to_contig2", layout_resized_lb, 1, layout_contig2_int, 1},
};
enum {
  kInt,
  kDouble,
  kVectorGaps,
  kStruct,
  kResizedLb,
  kNegStride,
  kVectorToInt,
  kIntToContig4,
  kStructToPacked,
  kResizedLbToContig2,
  kNumTypes
};

const Pattern kPatterns[] = {Pattern::Uniform,   Pattern::Random,   Pattern::SymRandom,
                             Pattern::Zeros,     Pattern::Silent,   Pattern::Huge,
                             Pattern::PowerLaw,  Pattern::Sparse,   Pattern::Banded,
                             Pattern::PowerLaw4, Pattern::HotSpots, Pattern::BySender};

struct Param {
  int index;
  Config config;
  bool core;  // a key configuration (the matrix samples when MPI is slow; see guaranteed())
};

std::vector<Param> make_params() {
  std::vector<Param> params;
  int k = 0;
  for (int t = 0; t < kNumTypes; ++t) {
    for (Pattern p : kPatterns) {
      const Displ d = static_cast<Displ>((t + static_cast<int>(p)) % 3);
      const bool core = t == kInt && (p == Pattern::Random || p == Pattern::Silent);
      params.push_back({k++, {&kTypes[t], p, core ? Displ::ReverseGaps : d, false}, core});
    }
  }
  // In place: symmetric patterns, one type with the send layout equal to the receive one.
  for (int t : {kInt, kDouble, kVectorGaps, kStruct, kResizedLb, kNegStride}) {
    for (Pattern p : kPatterns) {
      if (!symmetric(p)) continue;
      const Displ d = static_cast<Displ>((t + static_cast<int>(p) + 1) % 3);
      const bool core = t == kInt && p == Pattern::SymRandom;
      params.push_back({k++, {&kTypes[t], p, core ? Displ::ShuffledGaps : d, true}, core});
    }
  }
  return params;
}

const std::vector<Param>& all_params() {
  static const std::vector<Param> params = make_params();
  return params;
}

void PrintTo(const Param& p, std::ostream* os) {
  *os << p.config.tc->name << " " << pattern_name(p.config.pattern) << " "
      << displ_name(p.config.displ) << (p.config.in_place ? " in place" : "");
}

std::string param_name(const ::testing::TestParamInfo<Param>& info) {
  const Config& c = info.param.config;
  return std::string(c.tc->name) + "_" + pattern_name(c.pattern) + "_" + displ_name(c.displ) +
         (c.in_place ? "_in_place" : "");
}

// ------------------------------------------------------------------------------------------
// Tests.
// ------------------------------------------------------------------------------------------
TEST(AlltoallvRegistry, HasTheDocumentedAlgorithms) {
  const std::vector<std::string>& names = registry_v();
  for (const char* want :
       {"pairwise", "linear", "multipair_waitall", "multipair_waitany", "multipair_testany",
        "bruck", "hybrid", "locality", "locality_radix", "system", "auto"}) {
    EXPECT_NE(std::find(names.begin(), names.end(), want), names.end())
        << "alltoallv registry lacks " << want;
  }
  // No duplicates.
  std::vector<std::string> sorted = names;
  std::sort(sorted.begin(), sorted.end());
  EXPECT_EQ(std::adjacent_find(sorted.begin(), sorted.end()), sorted.end());
}

class AlltoallvMatrix : public ::testing::TestWithParam<Param> {};

int matrix_stride(long nspecs) {
  static const int stride = sample_stride(static_cast<long>(all_params().size()) * nspecs * 2, 5.0);
  return stride;
}

// When sampling, every algorithm still runs once persistent and once blocking, on different
// configurations (spread over the matrix): a = the spec index.
bool guaranteed(int index, long a, bool blocking) {
  const long n = static_cast<long>(all_params().size());
  return index == (a * 7 + (blocking ? 3 : 0)) % n;
}

TEST_P(AlltoallvMatrix, EveryAlgorithm) {
  const Param& p = GetParam();
  const std::vector<std::string> specs = base_specs();
  ASSERT_GT(specs.size(), 1u) << "the alltoallv registry is empty";
  const long nspecs = static_cast<long>(specs.size());
  const int stride = matrix_stride(nspecs);
  for (long a = 0; a < nspecs; ++a) {
    const long combo = (static_cast<long>(p.index) * nspecs + a) * 2 + 100000;
    const std::string& spec = specs[static_cast<std::size_t>(a)];
    const bool core = p.core && stride == 1;
    if (core || guaranteed(p.index, a, false) || sampled(combo, stride)) {
      run_v_persistent(MPI_COMM_WORLD, spec, p.config);
    }
    if (core || guaranteed(p.index, a, true) || sampled(combo + 1, stride)) {
      run_v_blocking(MPI_COMM_WORLD, spec, p.config);
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Patterns, AlltoallvMatrix, ::testing::ValuesIn(all_params()), param_name);

// Every algorithm at the values spanning its parameters' listed ranges (windows, radices,
// thresholds: test_support's param_specs), on random counts in reverse order with gaps, sparse
// ones and power-law ones.
TEST(AlltoallvParams, EveryWindowAndRadix) {
  int P = 0, N = 0, Q = 0;
  comm_extent(MPI_COMM_WORLD, &P, &N, &Q);
  const std::vector<std::string> specs = param_specs("alltoallv", P, N, Q);
  ASSERT_FALSE(specs.empty());
  const Config configs[] = {
      {&kTypes[kInt], Pattern::Random, Displ::ReverseGaps, false},
      {&kTypes[kVectorToInt], Pattern::Sparse, Displ::ShuffledGaps, false},
      {&kTypes[kDouble], Pattern::PowerLaw, Displ::ShuffledGaps, true},
  };
  const long n = static_cast<long>(specs.size());
  const int stride = sample_stride(n * 6, 3.0);
  // When sampling, each algorithm's first and last (the ends of its ranges) always run, with
  // the first configuration.
  for (long a = 0; a < n; ++a) {
    const std::string& spec = specs[static_cast<std::size_t>(a)];
    const bool end = at_range_end(specs, static_cast<std::size_t>(a));
    if (stride == 1 || end || sampled(a * 8 + 6, stride)) {
      run_v_persistent(MPI_COMM_WORLD, spec, configs[0]);
    }
    for (long c = 1; c < 3; ++c) {
      if (sampled(a * 8 + c * 2, stride)) run_v_persistent(MPI_COMM_WORLD, spec, configs[c]);
      if (sampled(a * 8 + c * 2 + 1, stride)) run_v_blocking(MPI_COMM_WORLD, spec, configs[c]);
    }
    if (sampled(a * 8 + 7, stride)) run_v_blocking(MPI_COMM_WORLD, spec, configs[0]);
  }
}

// A request started many times, data changed between starts.
TEST(AlltoallvEdge, ManyCycles) {
  const std::vector<std::string> specs = registry_v();
  const int stride = sample_stride(static_cast<long>(specs.size()) * 2, 2.0);
  const Config c{&kTypes[kStruct], Pattern::Random, Displ::ShuffledGaps, false};
  for (std::size_t a = 0; a < specs.size(); ++a) {
    if (stride == 1 || sampled(static_cast<long>(a) + 40, stride)) {
      run_v_persistent(MPI_COMM_WORLD, specs[a], c, stride > 1 ? 8 : 12);
    }
  }
}

// The blocking call repeated on the very same buffers with the same and then different counts
// (the library may cache its plan per argument list), with new data every time.
TEST(AlltoallvEdge, BlockingRepeatedOnSameBuffers) {
  const int me = comm_rank(MPI_COMM_WORLD), P = comm_size(MPI_COMM_WORLD);
  const std::vector<std::string> specs = base_specs();
  const int stride = sample_stride(static_cast<long>(specs.size()) * 6, 4.0);
  const Pattern pats[] = {Pattern::Random,  Pattern::Random, Pattern::Banded,
                          Pattern::Uniform, Pattern::Random, Pattern::Zeros};
  const int cap = 8 * P + 8;
  std::vector<int> sbuf(static_cast<std::size_t>(cap)), rbuf(static_cast<std::size_t>(cap));
  for (std::size_t a = 0; a < specs.size(); ++a) {
    if (stride > 1 && specs[a] != "multipair_waitany" &&
        !sampled(static_cast<long>(a) + 60, stride)) {
      continue;
    }
    SCOPED_TRACE("algorithm '" + specs[a] + "'");
    ScopedCommAlgorithm sel(MPI_COMM_WORLD, "alltoallv", specs[a]);
    for (int i = 0; i < 6; ++i) {
      const Pattern pat = pats[i];
      std::vector<int> sc(static_cast<std::size_t>(P)), rc(sc.size()), sd(sc.size()), rd(sc.size());
      for (int p = 0; p < P; ++p) {
        sc[static_cast<std::size_t>(p)] = units(pat, me, p, P, 1);
        rc[static_cast<std::size_t>(p)] = units(pat, p, me, P, 1);
      }
      sd = make_displs(sc, Displ::ReverseGaps, me);
      rd = make_displs(rc, Displ::Ascending, me);
      const int iter = next_iter();
      std::fill(sbuf.begin(), sbuf.end(), -1);
      std::fill(rbuf.begin(), rbuf.end(), -7);
      for (int p = 0; p < P; ++p)
        for (int e = 0; e < sc[static_cast<std::size_t>(p)]; ++e)
          encode_value(Prim::Int, value_hash(me, p, e, iter),
                       reinterpret_cast<unsigned char*>(
                           &sbuf[static_cast<std::size_t>(sd[static_cast<std::size_t>(p)] + e)]));
      const int rcode = MPIX_Alltoallv(sbuf.data(), sc.data(), sd.data(), MPI_INT, rbuf.data(),
                                       rc.data(), rd.data(), MPI_INT, MPI_COMM_WORLD);
      EXPECT_EQ(rcode, MPI_SUCCESS) << "call " << i << ": " << error_string(rcode);
      std::vector<int> want(rbuf.size(), -7);
      for (int p = 0; p < P; ++p)
        for (int e = 0; e < rc[static_cast<std::size_t>(p)]; ++e)
          encode_value(Prim::Int, value_hash(p, me, e, iter),
                       reinterpret_cast<unsigned char*>(
                           &want[static_cast<std::size_t>(rd[static_cast<std::size_t>(p)] + e)]));
      long bad = 0;
      for (std::size_t x = 0; x < want.size(); ++x) bad += want[x] != rbuf[x];
      EXPECT_EQ(bad, 0) << "call " << i << " (" << pattern_name(pat) << "): " << bad
                        << " wrong ints on rank " << me;
    }
  }
}

// Two sub-communicators (odd and even ranks of MPI_COMM_WORLD) run concurrently.
TEST(AlltoallvEdge, SubCommunicators) {
  const int me = comm_rank(MPI_COMM_WORLD);
  MPI_Comm sub;
  MPI_Comm_split(MPI_COMM_WORLD, me % 2, -me, &sub);  // reversed rank order inside
  const std::vector<std::string> specs = base_specs();
  const int stride = sample_stride(static_cast<long>(specs.size()) * 3, 2.0);
  const Config c1{&kTypes[kInt], Pattern::Random, Displ::ReverseGaps, false};
  const Config c2{&kTypes[kResizedLb], Pattern::Banded, Displ::ShuffledGaps, true};
  for (std::size_t a = 0; a < specs.size(); ++a) {
    if (stride == 1 || specs[a] == "bruck" || specs[a] == "multipair_testany" ||
        sampled(static_cast<long>(a) * 2 + 50, stride)) {
      run_v_persistent(sub, specs[a], c1);
    }
    if (sampled(static_cast<long>(a) * 2, stride)) run_v_blocking(sub, specs[a], c2);
    if (sampled(static_cast<long>(a) * 2 + 1, stride)) run_v_persistent(sub, specs[a], c2);
  }
  // The world communicator still works afterwards.
  run_v_blocking(MPI_COMM_WORLD, "pairwise", c1);
  MPI_Comm_free(&sub);
}

// Zero counts everywhere with a null send or receive buffer: legal, moves nothing. (Not both
// null: MPICH's own MPI_Alltoallv, which "system" calls, rejects sendbuf == recvbuf even when
// nothing moves.)
TEST(AlltoallvEdge, ZeroCountsNullBuffers) {
  const int P = comm_size(MPI_COMM_WORLD);
  int dummy = 0;
  std::vector<int> zeros(static_cast<std::size_t>(P), 0);
  for (const std::string& spec : base_specs()) {
    SCOPED_TRACE("algorithm '" + spec + "'");
    MPI_Info info = MPI_INFO_NULL;
    if (!spec.empty()) {
      MPI_Info_create(&info);
      MPI_Info_set(info, MPIX_INFO_KEY_ALGORITHM, spec.c_str());
    }
    MPIX_Request req = MPIX_REQUEST_NULL;
    int rc = MPIX_Alltoallv_init(nullptr, zeros.data(), zeros.data(), MPI_INT, &dummy, zeros.data(),
                                 zeros.data(), MPI_INT, MPI_COMM_WORLD, info, &req);
    if (info != MPI_INFO_NULL) MPI_Info_free(&info);
    EXPECT_EQ(rc, MPI_SUCCESS) << error_string(rc);
    if (rc == MPI_SUCCESS) {
      for (int i = 0; i < 2; ++i) {
        EXPECT_EQ(MPIX_Start(&req), MPI_SUCCESS);
        EXPECT_EQ(MPIX_Wait(&req, MPI_STATUS_IGNORE), MPI_SUCCESS);
      }
      EXPECT_EQ(MPIX_Request_free(&req), MPI_SUCCESS);
    }
    ScopedCommAlgorithm sel(MPI_COMM_WORLD, "alltoallv", spec);
    rc = MPIX_Alltoallv(nullptr, zeros.data(), zeros.data(), MPI_INT, &dummy, zeros.data(),
                        zeros.data(), MPI_INT, MPI_COMM_WORLD);
    EXPECT_EQ(rc, MPI_SUCCESS) << error_string(rc);
    rc = MPIX_Alltoallv(&dummy, zeros.data(), zeros.data(), MPI_INT, nullptr, zeros.data(),
                        zeros.data(), MPI_INT, MPI_COMM_WORLD);
    EXPECT_EQ(rc, MPI_SUCCESS) << error_string(rc);
  }
}

}  // namespace

namespace {

// Negative displacements are legal MPI: the base pointer may be the end of the buffer (every
// block before it) or its middle. Every algorithm and the default, persistent and blocking,
// MPI_IN_PLACE too, against the reference values, with the bytes around every block (and
// before and after the whole buffer) checked untouched.
TEST(AlltoallvEdge, NegativeDisplacements) {
  const std::vector<std::string> specs = base_specs();
  // make_buffers gives the receive side the other negative order (send at the end, receive in
  // the middle, and the reverse); in place, both are the same.
  const Config configs[] = {
      {&kTypes[kInt], Pattern::Random, Displ::NegativeEnd, false},
      {&kTypes[kStructToPacked], Pattern::Sparse, Displ::NegativeMiddle, false},
      {&kTypes[kNegStride], Pattern::Silent, Displ::NegativeEnd, false},
      {&kTypes[kDouble], Pattern::SymRandom, Displ::NegativeMiddle, true},
      {&kTypes[kVectorGaps], Pattern::Banded, Displ::NegativeEnd, true},
  };
  const long nconfigs = static_cast<long>(sizeof configs / sizeof configs[0]);
  const long nspecs = static_cast<long>(specs.size());
  const int stride = sample_stride(nspecs * nconfigs * 2, 4.0);
  for (long a = 0; a < nspecs; ++a) {
    const std::string& spec = specs[static_cast<std::size_t>(a)];
    for (long c = 0; c < nconfigs; ++c) {
      const long combo = (a * nconfigs + c) * 2 + 700000;
      // When sampling, every algorithm still runs once persistent (rotating over the
      // configurations) and once blocking in place.
      if (c == a % nconfigs || sampled(combo, stride)) {
        run_v_persistent(MPI_COMM_WORLD, spec, configs[c], 3);
      }
      if (c == 3 + a % 2 || sampled(combo + 1, stride)) {
        run_v_blocking(MPI_COMM_WORLD, spec, configs[c], 2);
      }
    }
  }
}

// The displacements of make_displs really are what the test above claims.
TEST(AlltoallvEdge, NegativeDisplacementsAreNegative) {
  const std::vector<int> counts = {3, 0, 2, 5, 1};
  const std::vector<int> end = make_displs(counts, Displ::NegativeEnd, 1);
  const std::vector<int> middle = make_displs(counts, Displ::NegativeMiddle, 1);
  int end_max = -1000, mid_min = 1000, mid_max = -1000;
  for (std::size_t b = 0; b < counts.size(); ++b) {
    end_max = std::max(end_max, end[b] + counts[b]);
    mid_min = std::min(mid_min, middle[b]);
    mid_max = std::max(mid_max, middle[b]);
  }
  EXPECT_LE(end_max, 0) << "every block ends at or before the base";
  EXPECT_LT(mid_min, 0);
  EXPECT_GT(mid_max, 0);
}

// Choosing different algorithms for the communicator on different ranks is MPI_ERR_ARG on every
// rank, even among the direct variants, which could exchange with one another (before the
// choice was agreed, each rank's own MPIX_ALLTOALLV could differ, and blocking calls
// interoperated): the previous choice stays in force and the blocking call runs it.
TEST(AlltoallvEdge, DifferentChoicesOnRanksAreRejected) {
  const int me = comm_rank(MPI_COMM_WORLD), P = comm_size(MPI_COMM_WORLD);
  std::vector<std::string> direct;
  for (const std::string& name : registry_v()) {
    if (name == "pairwise") direct.push_back(name);
    if (is_multipair(name)) {
      direct.push_back(name + ":window=1");
      direct.push_back(name + ":window=3");
      direct.push_back(name);
    }
  }
  direct.emplace_back("");  // back to the default
  const int n = static_cast<int>(direct.size());
  const Config configs[] = {
      {&kTypes[kInt], Pattern::Random, Displ::ReverseGaps, false},
      {&kTypes[kVectorToInt], Pattern::Sparse, Displ::ShuffledGaps, false},
      {&kTypes[kDouble], Pattern::Banded, Displ::Ascending, true},
  };
  ScopedCommAlgorithm previous(MPI_COMM_WORLD, "alltoallv", "linear");
  std::vector<int> one(static_cast<std::size_t>(P), 1), displs(one.size());
  for (int p = 0; p < P; ++p) displs[static_cast<std::size_t>(p)] = p;
  std::vector<int> sbuf(one.size()), rbuf(one.size());
  for (int shift = 0; shift < 3; ++shift) {
    const int mine = (me * 5 + shift) % n;
    int lo = 0, hi = 0;
    MPI_Allreduce(&mine, &lo, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
    MPI_Allreduce(&mine, &hi, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
    const std::string& choice = direct[static_cast<std::size_t>(mine)];
    SCOPED_TRACE("this rank chooses '" + choice + "'" + (lo == hi ? " like every rank" : ""));
    const int rc = set_comm_algorithm(MPI_COMM_WORLD, "alltoallv", choice.c_str());
    if (lo == hi) {
      EXPECT_EQ(rc, MPI_SUCCESS) << error_string(rc);
    } else {
      EXPECT_EQ(error_class(rc), MPI_ERR_ARG) << error_string(rc);
      // Still "linear": an init without info says so.
      MPIX_Request req = MPIX_REQUEST_NULL;
      const int code = MPIX_Alltoallv_init(sbuf.data(), one.data(), displs.data(), MPI_INT,
                                           rbuf.data(), one.data(), displs.data(), MPI_INT,
                                           MPI_COMM_WORLD, MPI_INFO_NULL, &req);
      EXPECT_EQ(code, MPI_SUCCESS) << error_string(code);
      if (code == MPI_SUCCESS) {
        char name[MPIX_MAX_ALGORITHM_STRING];
        int len = 0;
        EXPECT_EQ(MPIX_Request_get_algorithm(req, name, &len), MPI_SUCCESS);
        EXPECT_STREQ(name, "linear") << "the previous choice must stay";
        EXPECT_EQ(MPIX_Request_free(&req), MPI_SUCCESS);
      }
    }
    run_v_blocking(MPI_COMM_WORLD, "", configs[shift], 2);  // whatever is in force now
    if (lo == hi) {
      EXPECT_EQ(set_comm_algorithm(MPI_COMM_WORLD, "alltoallv", "linear"), MPI_SUCCESS);
    }
  }
}
}  // namespace
