#include "test_support.hpp"

#include <gtest/gtest.h>

#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <sstream>

namespace mpia_test {

// ------------------------------------------------------------------------------------------
// Values.
// ------------------------------------------------------------------------------------------
std::size_t prim_size(Prim p) {
  switch (p) {
    case Prim::Int:
      return sizeof(int);
    case Prim::Double:
      return sizeof(double);
    case Prim::Byte:
      return 1;
    case Prim::Char:
      return 1;
  }
  return 0;
}

const char* prim_name(Prim p) {
  switch (p) {
    case Prim::Int:
      return "int";
    case Prim::Double:
      return "double";
    case Prim::Byte:
      return "byte";
    case Prim::Char:
      return "char";
  }
  return "?";
}

std::uint64_t value_hash(int src, int dst, long elem, int iter) {
  // splitmix64 of a positional combination of the four coordinates.
  std::uint64_t x = static_cast<std::uint64_t>(src) + 1;
  x = x * 1000003u + static_cast<std::uint64_t>(dst) + 7;
  x = x * 1000003u + static_cast<std::uint64_t>(elem) + 13;
  x = x * 1000003u + static_cast<std::uint64_t>(iter) + 29;
  x += 0x9E3779B97F4A7C15ull;
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
  return x ^ (x >> 31);
}

void encode_value(Prim p, std::uint64_t h, unsigned char* out) {
  switch (p) {
    case Prim::Int: {
      const int v = static_cast<int>(static_cast<std::uint32_t>(h));
      std::memcpy(out, &v, sizeof v);
      break;
    }
    case Prim::Double: {
      const double v = static_cast<double>(h >> 11) + 0.5;  // exact: < 2^53
      std::memcpy(out, &v, sizeof v);
      break;
    }
    case Prim::Byte:
    case Prim::Char:
      out[0] = static_cast<unsigned char>(h);
      break;
  }
}

std::string format_value(Prim p, const unsigned char* bytes) {
  std::ostringstream os;
  switch (p) {
    case Prim::Int: {
      int v;
      std::memcpy(&v, bytes, sizeof v);
      os << v;
      break;
    }
    case Prim::Double: {
      double v;
      std::memcpy(&v, bytes, sizeof v);
      os.precision(17);
      os << v;
      break;
    }
    case Prim::Byte:
    case Prim::Char:
      os << "0x" << std::hex << static_cast<unsigned>(bytes[0]);
      break;
  }
  return os.str();
}

// ------------------------------------------------------------------------------------------
// Layouts.
// ------------------------------------------------------------------------------------------
Layout::Layout(std::string name, MPI_Datatype type, bool owned, std::vector<PrimAt> map)
    : name_(std::move(name)), type_(type), owned_(owned), map_(std::move(map)) {
  MPI_Aint lb = 0;
  MPI_Type_get_extent(type_, &lb, &extent_);
  int size = 0;
  MPI_Type_size(type_, &size);
  std::size_t expect = 0;
  for (const PrimAt& p : map_) expect += prim_size(p.kind);
  if (static_cast<std::size_t>(size) != expect) {
    std::fprintf(stderr, "test bug: layout %s has MPI size %d, type map size %zu\n", name_.c_str(),
                 size, expect);
    std::abort();
  }
}

Layout::~Layout() { reset(); }

void Layout::reset() {
  if (owned_ && type_ != MPI_DATATYPE_NULL) MPI_Type_free(&type_);
  type_ = MPI_DATATYPE_NULL;
  owned_ = false;
}

Layout::Layout(Layout&& o) noexcept
    : name_(std::move(o.name_)),
      type_(o.type_),
      owned_(o.owned_),
      extent_(o.extent_),
      map_(std::move(o.map_)) {
  o.type_ = MPI_DATATYPE_NULL;
  o.owned_ = false;
}

Layout& Layout::operator=(Layout&& o) noexcept {
  if (this != &o) {
    reset();
    name_ = std::move(o.name_);
    type_ = o.type_;
    owned_ = o.owned_;
    extent_ = o.extent_;
    map_ = std::move(o.map_);
    o.type_ = MPI_DATATYPE_NULL;
    o.owned_ = false;
  }
  return *this;
}

namespace {

// Commits `t`, checks that its lb/extent are what the test expects, wraps it.
Layout owned_layout(const char* name, MPI_Datatype t, MPI_Aint want_lb, MPI_Aint want_extent,
                    std::vector<PrimAt> map) {
  MPI_Type_commit(&t);
  MPI_Aint lb = 0, extent = 0;
  MPI_Type_get_extent(t, &lb, &extent);
  if (lb != want_lb || extent != want_extent) {
    std::fprintf(stderr, "test bug: layout %s has lb %ld extent %ld, expected %ld %ld\n", name,
                 static_cast<long>(lb), static_cast<long>(extent), static_cast<long>(want_lb),
                 static_cast<long>(want_extent));
    std::abort();
  }
  return Layout(name, t, true, std::move(map));
}

MPI_Datatype resized(MPI_Datatype t, MPI_Aint lb, MPI_Aint extent) {
  MPI_Datatype r;
  MPI_Type_create_resized(t, lb, extent, &r);
  MPI_Type_free(&t);
  return r;
}

struct CharDouble {
  char c;
  double d;
};

}  // namespace

Layout layout_int() { return Layout("int", MPI_INT, false, {{0, Prim::Int}}); }
Layout layout_double() { return Layout("double", MPI_DOUBLE, false, {{0, Prim::Double}}); }
Layout layout_byte() { return Layout("byte", MPI_BYTE, false, {{0, Prim::Byte}}); }
Layout layout_char() { return Layout("char", MPI_CHAR, false, {{0, Prim::Char}}); }

Layout layout_contig2_int() {
  MPI_Datatype t;
  MPI_Type_contiguous(2, MPI_INT, &t);
  return owned_layout("contig2(int)", t, 0, 8, {{0, Prim::Int}, {4, Prim::Int}});
}

Layout layout_contig4_int() {
  MPI_Datatype t;
  MPI_Type_contiguous(4, MPI_INT, &t);
  return owned_layout("contig4(int)", t, 0, 16,
                      {{0, Prim::Int}, {4, Prim::Int}, {8, Prim::Int}, {12, Prim::Int}});
}

Layout layout_vector_gaps() {
  MPI_Datatype t;
  MPI_Type_vector(3, 2, 3, MPI_INT, &t);  // ints at 0,4 | 12,16 | 24,28; extent 32
  return owned_layout("vector(3,2,3,int)", t, 0, 32,
                      {{0, Prim::Int},
                       {4, Prim::Int},
                       {12, Prim::Int},
                       {16, Prim::Int},
                       {24, Prim::Int},
                       {28, Prim::Int}});
}

Layout layout_vector_trailing() {
  MPI_Datatype t;
  MPI_Type_vector(2, 1, 2, MPI_INT, &t);  // ints at 0, 8; extent 12
  t = resized(t, 0, 16);
  return owned_layout("resized(vector(2,1,2,int),0,16)", t, 0, 16,
                      {{0, Prim::Int}, {8, Prim::Int}});
}

Layout layout_struct_char_double() {
  const int blocklens[2] = {1, 1};
  const MPI_Aint displs[2] = {static_cast<MPI_Aint>(offsetof(CharDouble, c)),
                              static_cast<MPI_Aint>(offsetof(CharDouble, d))};
  const MPI_Datatype types[2] = {MPI_CHAR, MPI_DOUBLE};
  MPI_Datatype t;
  MPI_Type_create_struct(2, blocklens, displs, types, &t);
  t = resized(t, 0, static_cast<MPI_Aint>(sizeof(CharDouble)));
  return owned_layout("struct{char,double}", t, 0, static_cast<MPI_Aint>(sizeof(CharDouble)),
                      {{displs[0], Prim::Char}, {displs[1], Prim::Double}});
}

Layout layout_packed_char_double() {
  const int blocklens[2] = {1, 1};
  const MPI_Aint displs[2] = {0, 1};
  const MPI_Datatype types[2] = {MPI_CHAR, MPI_DOUBLE};
  MPI_Datatype t;
  MPI_Type_create_struct(2, blocklens, displs, types, &t);
  t = resized(t, 0, 9);
  return owned_layout("packed{char,double}", t, 0, 9, {{0, Prim::Char}, {1, Prim::Double}});
}

Layout layout_resized_lb() {
  const int blocklen = 2;
  const MPI_Aint displ = 8;
  const MPI_Datatype type = MPI_INT;
  MPI_Datatype t;
  MPI_Type_create_struct(1, &blocklen, &displ, &type, &t);  // ints at 8, 12; lb 8, ub 16
  t = resized(t, 4, 20);
  return owned_layout("resized(2 ints at 8, lb=4, extent=20)", t, 4, 20,
                      {{8, Prim::Int}, {12, Prim::Int}});
}

Layout layout_negative_stride() {
  MPI_Datatype t;
  MPI_Type_vector(2, 1, -1, MPI_DOUBLE, &t);  // doubles at 0 then -8; lb -8, extent 16
  return owned_layout("vector(2,1,-1,double)", t, -8, 16, {{0, Prim::Double}, {-8, Prim::Double}});
}

// ------------------------------------------------------------------------------------------
// Buffers.
// ------------------------------------------------------------------------------------------
Buffer::Buffer(const Layout& layout, int count, int nblocks, unsigned char sentinel)
    : sentinel_(sentinel) {
  struct Rel {
    MPI_Aint off;
    Prim kind;
    int block;
    long elem;
  };
  std::vector<Rel> rel;
  const auto& map = layout.map();
  MPI_Aint low = 0, high = 0;
  for (int b = 0; b < nblocks; ++b) {
    long elem = 0;
    for (int k = 0; k < count; ++k) {
      for (const PrimAt& p : map) {
        const MPI_Aint off = (static_cast<MPI_Aint>(b) * count + k) * layout.extent() + p.offset;
        rel.push_back({off, p.kind, b, elem++});
        low = std::min(low, off);
        high = std::max(high, off + static_cast<MPI_Aint>(prim_size(p.kind)));
      }
    }
  }
  const std::size_t guard = 64;
  storage_.assign(guard + static_cast<std::size_t>(high - low) + guard, sentinel_);
  covered_.assign(storage_.size(), 0);
  base_ = storage_.data();
  origin_ = guard + static_cast<std::size_t>(-low);
  slots_.reserve(rel.size());
  for (const Rel& r : rel) {
    const std::size_t pos = origin_ + static_cast<std::size_t>(r.off);
    for (std::size_t i = 0; i < prim_size(r.kind); ++i) {
      if (covered_[pos + i]) {
        std::fprintf(stderr, "test bug: layout %s overlaps itself\n", layout.name().c_str());
        std::abort();
      }
      covered_[pos + i] = 1;
    }
    slots_.push_back({pos, r.kind, r.block, r.elem});
  }
}

void Buffer::fill(int me, int iter, bool as_sender) {
  for (const Slot& s : slots_) {
    const int src = as_sender ? me : s.block;
    const int dst = as_sender ? s.block : me;
    encode_value(s.kind, value_hash(src, dst, s.elem, iter), &storage_[s.pos]);
  }
}

void Buffer::poison(unsigned char p) {
  for (const Slot& s : slots_) std::memset(&storage_[s.pos], p, prim_size(s.kind));
}

long Buffer::check(int me, int iter, bool as_sender, const std::string& what) const {
  long bad = 0;
  int reported = 0;
  const int max_reports = 4;
  unsigned char want[8];
  for (const Slot& s : slots_) {
    const int src = as_sender ? me : s.block;
    const int dst = as_sender ? s.block : me;
    const std::size_t n = prim_size(s.kind);
    encode_value(s.kind, value_hash(src, dst, s.elem, iter), want);
    if (std::memcmp(want, &storage_[s.pos], n) != 0) {
      ++bad;
      if (reported++ < max_reports) {
        ADD_FAILURE() << what << ": rank " << me << ", block of rank " << s.block << ", element "
                      << s.elem << " (" << prim_name(s.kind) << " at offset "
                      << static_cast<long>(s.pos) - static_cast<long>(origin_) << "): expected "
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
                      << " is outside the type map but was overwritten (0x" << std::hex
                      << static_cast<unsigned>(storage_[i]) << ", sentinel 0x"
                      << static_cast<unsigned>(sentinel_) << ")";
      }
    }
  }
  if (bad > max_reports) {
    ADD_FAILURE() << what << ": rank " << me << ": " << bad << " wrong elements/bytes in total";
  }
  return bad;
}

long Buffer::compare(const std::vector<unsigned char>& snap, const std::string& what) const {
  long bad = 0;
  for (std::size_t i = 0; i < storage_.size() && i < snap.size(); ++i) {
    if (storage_[i] != snap[i]) {
      if (bad == 0) {
        ADD_FAILURE() << what << ": byte at offset "
                      << static_cast<long>(i) - static_cast<long>(origin_) << " changed";
      }
      ++bad;
    }
  }
  if (bad > 1) ADD_FAILURE() << what << ": " << bad << " bytes changed";
  return bad;
}

// ------------------------------------------------------------------------------------------
// Algorithms.
// ------------------------------------------------------------------------------------------
std::vector<std::string> registered_algorithms(const char* collective) {
  ScopedErrhandler eh(MPI_COMM_SELF, MPI_ERRORS_RETURN);
  std::vector<std::string> names;
  for (int i = 0; i < 1000; ++i) {
    const char* name = nullptr;
    const char* desc = nullptr;
    if (MPIX_Algorithm_get(collective, i, &name, &desc) != MPI_SUCCESS) break;
    EXPECT_NE(name, nullptr) << "MPIX_Algorithm_get(" << collective << ", " << i << ")";
    EXPECT_NE(desc, nullptr) << "MPIX_Algorithm_get(" << collective << ", " << i << ")";
    if (name == nullptr) break;
    names.emplace_back(name);
  }
  return names;
}

namespace {

// One bound of the listing: an integer, 2^k, P, N, Q, ceil(sqrt(X)) or max(a,X).
long long listed_bound(const std::string& t, int P, int N, int Q, bool* ok) {
  if (t == "P") return P;
  if (t == "N") return N;
  if (t == "Q") return Q;
  if (t.rfind("2^", 0) == 0) return 1LL << std::stoi(t.substr(2));
  if (t.rfind("ceil(sqrt(", 0) == 0 && t.size() > 12 && t.compare(t.size() - 2, 2, "))") == 0) {
    const long long x = listed_bound(t.substr(10, t.size() - 12), P, N, Q, ok);
    long long r = 0;
    while (r * r < x) ++r;
    return r;
  }
  if (t.rfind("max(", 0) == 0 && t.back() == ')') {
    const std::size_t comma = t.find(',');
    if (comma == std::string::npos) return *ok = false, 0;
    return std::max(listed_bound(t.substr(4, comma - 4), P, N, Q, ok),
                    listed_bound(t.substr(comma + 1, t.size() - comma - 2), P, N, Q, ok));
  }
  char* end = nullptr;
  const long long v = std::strtoll(t.c_str(), &end, 10);
  if (t.empty() || *end != '\0') *ok = false;
  return v;
}

}  // namespace

std::vector<ListedParam> listed_params(const char* collective, const std::string& name, int P,
                                       int N, int Q) {
  ScopedErrhandler eh(MPI_COMM_SELF, MPI_ERRORS_RETURN);
  std::string summary;
  for (int i = 0;; ++i) {
    const char* n = nullptr;
    const char* d = nullptr;
    if (MPIX_Algorithm_get(collective, i, &n, &d) != MPI_SUCCESS) break;
    if (n && name == n && d) summary = d;
  }
  std::vector<ListedParam> out;
  // Entries are "; key: ..., min..max, default value"; other "; " pieces belong to the
  // description (they have no ", default ").
  std::size_t at = 0;
  while ((at = summary.find("; ", at)) != std::string::npos) {
    at += 2;
    const std::size_t next = std::min(summary.find("; ", at), summary.size());
    const std::string entry = summary.substr(at, next - at);
    const std::size_t colon = entry.find(": "), def = entry.rfind(", default ");
    if (colon == std::string::npos || def == std::string::npos) continue;
    const std::size_t range = entry.rfind(", ", def - 1), dots = entry.find("..", range);
    bool ok = range != std::string::npos && dots != std::string::npos && dots < def;
    ListedParam p;
    p.key = entry.substr(0, colon);
    if (ok) {
      p.min = listed_bound(entry.substr(range + 2, dots - range - 2), P, N, Q, &ok);
      p.max = listed_bound(entry.substr(dots + 2, def - dots - 2), P, N, Q, &ok);
      p.default_value = listed_bound(entry.substr(def + 10), P, N, Q, &ok);
    }
    EXPECT_TRUE(ok && p.min <= p.default_value && p.default_value <= p.max)
        << collective << " " << name << ": cannot read the listed parameter '" << entry << "'";
    if (ok) out.push_back(p);
  }
  return out;
}

std::vector<std::string> param_specs(const char* collective, int P, int N, int Q) {
  std::vector<std::string> out;
  for (const std::string& name : registered_algorithms(collective)) {
    std::vector<std::string> specs{name};
    for (const ListedParam& p : listed_params(collective, name, P, N, Q)) {
      std::vector<long long> values;
      if (p.max - p.min < 5) {
        for (long long v = p.min; v <= p.max; ++v) values.push_back(v);
      } else {
        // One more between the low end and the default (or the top, if the default is low),
        // geometrically: a window of 4 under a default of 8, a 16-byte threshold under 256.
        const long long top = p.default_value > p.min + 2 ? p.default_value : p.max;
        const long long mid =
            static_cast<long long>(std::llround(std::sqrt(double(p.min + 1) * double(top))));
        values = {p.min, p.min + 1, mid, p.default_value, p.max};
      }
      std::sort(values.begin(), values.end());
      values.erase(std::unique(values.begin(), values.end()), values.end());
      std::vector<std::string> next;
      for (const std::string& s : specs)
        for (long long v : values)
          next.push_back(s + (s == name ? ":" : ",") + p.key + "=" + std::to_string(v));
      specs = std::move(next);
    }
    out.insert(out.end(), specs.begin(), specs.end());
  }
  return out;
}

bool at_range_end(const std::vector<std::string>& specs, std::size_t i) {
  auto algorithm_of = [&](std::size_t k) { return specs[k].substr(0, specs[k].find(':')); };
  return i == 0 || i + 1 == specs.size() || algorithm_of(i - 1) != algorithm_of(i) ||
         algorithm_of(i + 1) != algorithm_of(i);
}

void comm_extent(MPI_Comm comm, int* P, int* N, int* Q) {
  int node = 0, local_rank = 0, local_size = 0;
  MPI_Comm_size(comm, P);
  ASSERT_EQ(MPIX_Comm_locality(comm, &node, N, &local_rank, &local_size), MPI_SUCCESS);
  MPI_Allreduce(&local_size, Q, 1, MPI_INT, MPI_MAX, comm);
}

bool parse_spec(const std::string& text, Spec* out) {
  Spec s;
  const std::size_t colon = text.find(':');
  s.name = text.substr(0, colon);
  if (s.name.empty()) return false;
  if (colon != std::string::npos) {
    std::string rest = text.substr(colon + 1);
    std::size_t start = 0;
    while (start <= rest.size()) {
      std::size_t comma = rest.find(',', start);
      if (comma == std::string::npos) comma = rest.size();
      const std::string kv = rest.substr(start, comma - start);
      const std::size_t eq = kv.find('=');
      if (eq == std::string::npos || eq == 0) return false;
      s.params[kv.substr(0, eq)] = kv.substr(eq + 1);
      start = comma + 1;
    }
  }
  *out = std::move(s);
  return true;
}

int ceil_sqrt(int n) {
  int r = 0;
  while (r * r < n) ++r;
  return r;
}

int default_tra_radix(int nprocs) {
  return std::max(2, std::min(std::max(2, nprocs), ceil_sqrt(nprocs)));
}

void expect_reported_algorithm(MPIX_Request req, const std::string& requested, int nprocs,
                               const std::vector<std::string>& registry) {
  char name[MPIX_MAX_ALGORITHM_STRING + 16];
  std::memset(name, 0x7f, sizeof name);
  int len = -1;
  const int rc = MPIX_Request_get_algorithm(req, name, &len);
  ASSERT_EQ(rc, MPI_SUCCESS) << "MPIX_Request_get_algorithm: " << error_string(rc);
  const void* nul = std::memchr(name, '\0', MPIX_MAX_ALGORITHM_STRING);
  ASSERT_NE(nul, nullptr) << "MPIX_Request_get_algorithm wrote no NUL within "
                          << MPIX_MAX_ALGORITHM_STRING << " characters";
  const std::string got_text(name);
  EXPECT_EQ(len, static_cast<int>(got_text.size())) << "resultlen of '" << got_text << "'";
  Spec got, want;
  ASSERT_TRUE(parse_spec(got_text, &got))
      << "reported algorithm '" << got_text << "' is not name[:key=value,...]";
  if (requested.empty()) {
    want.name = "auto";
  } else {
    ASSERT_TRUE(parse_spec(requested, &want)) << "test bug: bad spec " << requested;
  }
  SCOPED_TRACE("requested '" + requested + "', reported '" + got_text + "'");
  if (want.name == "auto") {
    EXPECT_NE(got.name, "auto") << "auto must report what it chose";
    EXPECT_NE(std::find(registry.begin(), registry.end(), got.name), registry.end())
        << "reported algorithm is not in the registry";
  } else {
    EXPECT_EQ(got.name, want.name);
  }
  for (const auto& kv : want.params) {
    auto it = got.params.find(kv.first);
    if (it == got.params.end()) {
      ADD_FAILURE() << "parameter " << kv.first << " not reported";
    } else {
      EXPECT_EQ(it->second, kv.second) << "parameter " << kv.first;
    }
  }
  if (got.name == "tra") {
    auto it = got.params.find("radix");
    if (it == got.params.end()) {
      ADD_FAILURE() << "tra must report its radix";
    } else {
      char* end = nullptr;
      const long radix = std::strtol(it->second.c_str(), &end, 10);
      EXPECT_TRUE(end && *end == '\0' && !it->second.empty()) << "radix '" << it->second << "'";
      EXPECT_GE(radix, 2);
      EXPECT_LE(radix, std::max(2, nprocs));
      if (want.name == "tra" && want.params.count("radix") == 0) {
        EXPECT_EQ(radix, default_tra_radix(nprocs)) << "default radix at P=" << nprocs;
      }
    }
  }
}

// ------------------------------------------------------------------------------------------
// Runners.
// ------------------------------------------------------------------------------------------
namespace {

// A number that advances identically on every rank (runners are called in the same order
// everywhere), so consecutive runs never see the same data.
int next_round() {
  static int round = 0;
  return round += 16;
}

std::string describe(const char* mode, const std::string& spec, const Layout& send, int scount,
                     const Layout& recv, int rcount, bool in_place) {
  std::ostringstream os;
  os << mode << " alltoall, algorithm '" << (spec.empty() ? "<none>" : spec) << "', ";
  if (in_place) {
    os << "MPI_IN_PLACE, ";
  } else {
    os << "send " << scount << " x " << send.name() << ", ";
  }
  os << "recv " << rcount << " x " << recv.name();
  return os.str();
}

bool all_true(MPI_Comm comm, bool local) {
  int in = local ? 1 : 0, out = 0;
  MPI_Allreduce(&in, &out, 1, MPI_INT, MPI_MIN, comm);
  return out != 0;
}

}  // namespace

void run_persistent(MPI_Comm comm, const std::string& spec, const TypeCase& tc, int units,
                    const RunOptions& opt) {
  Layout send = tc.send();
  Layout recv = tc.recv();
  run_persistent(comm, spec, send, units * tc.send_mult, recv, units * tc.recv_mult, opt);
}

bool trial_settled(MPIX_Request r) {
  char text[MPIX_MAX_TRIAL_STRING];
  int len = 0;
  EXPECT_EQ(MPIX_Request_get_trial(r, text, &len), MPI_SUCCESS);
  return len == 0 || std::strncmp(text, "chose", 5) == 0;
}

void run_persistent(MPI_Comm comm, const std::string& spec, const Layout& send, int scount,
                    const Layout& recv, int rcount, const RunOptions& opt) {
  const int me = comm_rank(comm);
  const int nprocs = comm_size(comm);
  const std::string what = describe("persistent", spec, send, scount, recv, rcount, opt.in_place);
  SCOPED_TRACE(what);

  Buffer sbuf(send, opt.in_place ? 0 : scount, nprocs, 0xC3);
  Buffer rbuf(recv, rcount, nprocs, 0xA5);

  MPI_Info info = MPI_INFO_NULL;
  if (!spec.empty()) {
    MPI_Info_create(&info);
    MPI_Info_set(info, MPIX_INFO_KEY_ALGORITHM, spec.c_str());
  }
  MPIX_Request req = MPIX_REQUEST_NULL;
  int rc = MPIX_Alltoall_init(opt.in_place ? MPI_IN_PLACE : sbuf.ptr(), scount, send.type(),
                              rbuf.ptr(), rcount, recv.type(), comm, info, &req);
  if (info != MPI_INFO_NULL) MPI_Info_free(&info);  // the request must not need it any more
  EXPECT_EQ(rc, MPI_SUCCESS) << "MPIX_Alltoall_init: " << error_string(rc);
  const bool ok = rc == MPI_SUCCESS && req != MPIX_REQUEST_NULL;
  EXPECT_TRUE(rc != MPI_SUCCESS || req != MPIX_REQUEST_NULL) << "init succeeded, request null";
  if (!all_true(comm, ok)) {
    if (ok) MPIX_Request_free(&req);
    ADD_FAILURE() << "MPIX_Alltoall_init failed on some rank; skipping the cycles";
    return;
  }
  if (opt.check_reported) {
    expect_reported_algorithm(req, spec, nprocs, registered_algorithms());
  }

  int settled_for = 0;
  for (int i = 0; i < opt.iterations; ++i) {
    const int iter = next_round();
    const std::string label = "cycle " + std::to_string(i);
    if (opt.in_place) {
      rbuf.fill(me, iter, true);
    } else {
      sbuf.fill(me, iter, true);
      rbuf.poison(static_cast<unsigned char>(0x5A + i));
    }
    const std::vector<unsigned char> snap = sbuf.snapshot();

    MPI_Status status;
    switch (i % 4) {
      case 0:
        rc = MPIX_Start(&req);
        EXPECT_EQ(rc, MPI_SUCCESS) << label << " MPIX_Start: " << error_string(rc);
        rc = MPIX_Wait(&req, &status);
        EXPECT_EQ(rc, MPI_SUCCESS) << label << " MPIX_Wait: " << error_string(rc);
        break;
      case 1: {
        rc = MPIX_Startall(1, &req);
        EXPECT_EQ(rc, MPI_SUCCESS) << label << " MPIX_Startall: " << error_string(rc);
        rc = MPIX_Waitall(1, &req, &status);
        EXPECT_EQ(rc, MPI_SUCCESS) << label << " MPIX_Waitall: " << error_string(rc);
        break;
      }
      case 2: {
        rc = MPIX_Start(&req);
        EXPECT_EQ(rc, MPI_SUCCESS) << label << " MPIX_Start: " << error_string(rc);
        int flag = 0;
        while (rc == MPI_SUCCESS && !flag) rc = MPIX_Test(&req, &flag, MPI_STATUS_IGNORE);
        EXPECT_EQ(rc, MPI_SUCCESS) << label << " MPIX_Test: " << error_string(rc);
        break;
      }
      default:
        rc = MPIX_Start(&req);
        EXPECT_EQ(rc, MPI_SUCCESS) << label << " MPIX_Start: " << error_string(rc);
        rc = MPIX_Wait(&req, MPI_STATUS_IGNORE);
        EXPECT_EQ(rc, MPI_SUCCESS) << label << " MPIX_Wait: " << error_string(rc);
        break;
    }
    EXPECT_NE(req, MPIX_REQUEST_NULL) << label << ": completion must keep a persistent request";
    rbuf.check(me, iter, false, label + " receive buffer");
    if (!opt.in_place) sbuf.compare(snap, label + " send buffer was modified");
    if (opt.after_settled >= 0 && trial_settled(req) && settled_for++ >= opt.after_settled) break;
  }

  rc = MPIX_Request_free(&req);
  EXPECT_EQ(rc, MPI_SUCCESS) << "MPIX_Request_free: " << error_string(rc);
  EXPECT_EQ(req, MPIX_REQUEST_NULL) << "MPIX_Request_free must null the handle";
}

void run_blocking(MPI_Comm comm, const std::string& spec, const Layout& send, int scount,
                  const Layout& recv, int rcount, bool in_place) {
  const int me = comm_rank(comm);
  const int nprocs = comm_size(comm);
  const std::string what = describe("blocking", spec, send, scount, recv, rcount, in_place);
  SCOPED_TRACE(what);
  Buffer sbuf(send, in_place ? 0 : scount, nprocs, 0xC3);
  Buffer rbuf(recv, rcount, nprocs, 0xA5);
  const int iter = next_round();
  if (in_place) {
    rbuf.fill(me, iter, true);
  } else {
    sbuf.fill(me, iter, true);
    rbuf.poison(0x5A);
  }
  const std::vector<unsigned char> snap = sbuf.snapshot();
  int rc;
  {
    ScopedCommAlgorithm sel(comm, "alltoall", spec);
    rc = MPIX_Alltoall(in_place ? MPI_IN_PLACE : sbuf.ptr(), scount, send.type(), rbuf.ptr(),
                       rcount, recv.type(), comm);
  }
  EXPECT_EQ(rc, MPI_SUCCESS) << "MPIX_Alltoall: " << error_string(rc);
  rbuf.check(me, iter, false, "receive buffer");
  if (!in_place) sbuf.compare(snap, "send buffer was modified");
}

int set_comm_algorithm(MPI_Comm comm, const char* collective, const char* selection) {
  ScopedErrhandler eh(comm, MPI_ERRORS_RETURN);
  return MPIX_Comm_set_algorithm(comm, collective, selection);
}

ScopedCommAlgorithm::ScopedCommAlgorithm(MPI_Comm comm, const char* collective,
                                         const std::string& selection)
    : comm_(comm), collective_(collective), selection_(selection) {
  if (selection_.empty()) return;
  const int rc = set_comm_algorithm(comm_, collective_.c_str(), selection_.c_str());
  EXPECT_EQ(rc, MPI_SUCCESS) << "MPIX_Comm_set_algorithm(" << collective_ << ", '" << selection_
                             << "'): " << error_string(rc);
  set_ = true;  // reset even after a failure: a failure keeps the previous choice anyway
  ok_ = rc == MPI_SUCCESS;
}

ScopedCommAlgorithm::~ScopedCommAlgorithm() {
  if (!set_) return;
  const int rc = set_comm_algorithm(comm_, collective_.c_str(), "");
  EXPECT_EQ(rc, MPI_SUCCESS) << "MPIX_Comm_set_algorithm(" << collective_ << ", '') after '"
                             << selection_ << "': " << error_string(rc);
}

std::string capture_stderr(const std::function<void()>& call) {
  std::fflush(stderr);
  std::FILE* tmp = std::tmpfile();
  const int saved = dup(2);
  if (tmp == nullptr || saved < 0 || dup2(fileno(tmp), 2) < 0) {
    ADD_FAILURE() << "capture_stderr: cannot redirect stderr";
    if (saved >= 0) close(saved);
    if (tmp) std::fclose(tmp);
    call();
    return std::string();
  }
  call();
  std::fflush(stderr);
  dup2(saved, 2);
  close(saved);
  std::string text;
  std::rewind(tmp);
  char chunk[512];
  std::size_t n;
  while ((n = std::fread(chunk, 1, sizeof chunk, tmp)) > 0) text.append(chunk, n);
  std::fclose(tmp);
  std::fputs(text.c_str(), stderr);
  std::fflush(stderr);
  return text;
}

ScopedErrhandler::ScopedErrhandler(MPI_Comm comm, MPI_Errhandler eh) : comm_(comm) {
  MPI_Comm_get_errhandler(comm_, &old_);
  MPI_Comm_set_errhandler(comm_, eh);
}

ScopedErrhandler::~ScopedErrhandler() {
  MPI_Comm_set_errhandler(comm_, old_);
  MPI_Errhandler_free(&old_);
}

int error_class(int code) {
  int cls = -1;
  ScopedErrhandler eh(MPI_COMM_SELF, MPI_ERRORS_RETURN);
  if (MPI_Error_class(code, &cls) != MPI_SUCCESS) return -1;
  return cls;
}

std::string error_string(int code) {
  if (code == MPI_SUCCESS) return "MPI_SUCCESS";
  char text[MPI_MAX_ERROR_STRING];
  int len = 0;
  ScopedErrhandler eh(MPI_COMM_SELF, MPI_ERRORS_RETURN);
  if (MPI_Error_string(code, text, &len) != MPI_SUCCESS) {
    return "unknown error code " + std::to_string(code);
  }
  return std::string(text, static_cast<std::size_t>(len)) + " (code " + std::to_string(code) +
         ", class " + std::to_string(error_class(code)) + ")";
}

// ------------------------------------------------------------------------------------------
// Intensity.
// ------------------------------------------------------------------------------------------
double collective_seconds() {
  static double cost = -1.0;
  if (cost >= 0.0) return cost;
  int nprocs = 1;
  MPI_Comm_size(MPI_COMM_WORLD, &nprocs);
  std::vector<int> s(static_cast<std::size_t>(nprocs), 1), r(s.size(), 0);
  MPI_Alltoall(s.data(), 1, MPI_INT, r.data(), 1, MPI_INT, MPI_COMM_WORLD);  // warm-up
  MPI_Barrier(MPI_COMM_WORLD);
  const int reps = 4;
  const double t0 = MPI_Wtime();
  for (int i = 0; i < reps; ++i) {
    MPI_Alltoall(s.data(), 1, MPI_INT, r.data(), 1, MPI_INT, MPI_COMM_WORLD);
  }
  double local = (MPI_Wtime() - t0) / reps;
  MPI_Allreduce(&local, &cost, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
  int rank = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  if (rank == 0) {
    std::printf("[   MPI    ] one MPI_Alltoall takes %.3f ms here\n", cost * 1e3);
    std::fflush(stdout);
  }
  return cost;
}

int sample_stride(long planned_runs, double budget_seconds) {
  const char* full = std::getenv("MPIA_TEST_FULL");
  if (full && *full && std::strcmp(full, "0") != 0) return 1;
  const double collectives_per_run = 10.0;
  const double projected =
      static_cast<double>(planned_runs) * collectives_per_run * collective_seconds();
  if (projected <= budget_seconds) return 1;
  const double stride = std::ceil(projected / budget_seconds);
  return stride > 1e6 ? 1000000 : static_cast<int>(stride);
}

bool sampled(long key, int stride) {
  if (stride <= 1) return true;
  std::uint64_t x = static_cast<std::uint64_t>(key) + 0x9E3779B97F4A7C15ull;
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
  x ^= x >> 31;
  return x % static_cast<std::uint64_t>(stride) == 0;
}

int comm_rank(MPI_Comm comm) {
  int r = 0;
  MPI_Comm_rank(comm, &r);
  return r;
}

int comm_size(MPI_Comm comm) {
  int s = 0;
  MPI_Comm_size(comm, &s);
  return s;
}

}  // namespace mpia_test
