#include "operation/protocol.hpp"

#include "operation/operation.hpp"
#include "operation/settings.hpp"
#include "util/hash.hpp"

#include <algorithm>
#include <mutex>

namespace mpia {

namespace {

// The record every rank contributes: kMax values reduced by MPI_MAX, then the tag window's
// bitmap reduced by bitwise or. One MPI_Op over a contiguous type of the whole record, so that
// MPI never splits a record between calls of the op.
constexpr int kMax = 5 + kMaxima;
constexpr int kWords = TagAllocator::kWords;
constexpr int kRecord = kMax + kWords;

void reduce(void* in, void* inout, int* len, MPI_Datatype*) {
  const auto* a = static_cast<const std::int64_t*>(in);
  auto* b = static_cast<std::int64_t*>(inout);
  for (int r = 0; r < *len; ++r, a += kRecord, b += kRecord) {
    for (int i = 0; i < kMax; ++i) b[i] = std::max(a[i], b[i]);
    for (int i = kMax; i < kRecord; ++i) b[i] |= a[i];
  }
}

std::once_flag g_once;
MPI_Datatype g_record = MPI_DATATYPE_NULL;
MPI_Op g_op = MPI_OP_NULL;

void allreduce(std::int64_t (&rec)[kRecord], MPI_Comm comm) {
  std::call_once(g_once, [] {
    MPIA_CHECK(MPI_Type_contiguous(kRecord, MPI_INT64_T, &g_record));
    MPIA_CHECK(MPI_Type_commit(&g_record));
    MPIA_CHECK(MPI_Op_create(reduce, 1, &g_op));
  });
  MPI_Request r;
  MPIA_CHECK(MPI_Iallreduce(MPI_IN_PLACE, rec, 1, g_record, g_op, comm, &r));
  complete(r, "MPI_Iallreduce (agreement)");
}

// The first tag of the window no rank holds, or 0.
int free_tag(const TagAllocator& tags, const std::int64_t* bits) {
  const int n = tags.window_size();
  for (int k = 0; k < n; ++k)
    if (!(std::uint64_t(bits[k / 64]) >> (k % 64) & 1)) return tags.window_tag(k);
  return 0;
}

void fill_window(const TagAllocator& tags, std::int64_t* out) {
  std::uint64_t bits[kWords];
  tags.window(bits);
  for (int i = 0; i < kWords; ++i) out[i] = std::int64_t(bits[i]);
}

}  // namespace

Agreement agree(CommState& st, const Proposal& p) {
  const MPI_Comm comm = st.comm->get();
  TagAllocator& tags = st.comm->tags;
  std::int64_t rec[kRecord] = {};
  const std::int64_t h = p.error ? 0 : hash63(p.choice);
  const std::int64_t same = p.error ? 0 : p.same;
  // Argument errors outrank errors found by comparing with peers; then the larger class wins.
  const std::int64_t rank_of = p.derived ? 1 : 2;
  rec[0] = p.error ? (rank_of << 32) | error_class(p.error->code()) : 0;
  rec[1] = h, rec[2] = -h;
  rec[3] = same, rec[4] = -same;
  for (int i = 0; i < kMaxima; ++i) rec[5 + i] = p.maxima[i];
  if (p.tag) fill_window(tags, rec + kMax);
  allreduce(rec, comm);
  if (rec[0] != 0) {
    const int cls = int(rec[0] & 0xffffffff);
    if (p.error && error_class(p.error->code()) == cls) throw *p.error;
    fail(cls, p.error ? std::string(p.error->what()) + " (another rank's error is reported instead)"
                      : "mpi-advance: another rank rejected its arguments");
  }
  if (rec[1] != -rec[2])
    fail(MPI_ERR_ARG,
         "mpi-advance: ranks selected different algorithms (this rank: " + p.choice + ")");
  if (rec[3] != -rec[4]) fail(p.same_class, p.same_what);
  Agreement a;
  for (int i = 0; i < kMaxima; ++i) a.maxima[i] = rec[5 + i];
  if (!p.tag) return a;
  // Every rank sees the same bitmap and the same cursor: they take the same tag, or all move
  // to the next window together.
  for (std::int64_t scanned = 0;;) {
    if (const int t = free_tag(tags, rec + kMax)) {
      tags.hold(t);
      a.tag = t;
      return a;
    }
    scanned += tags.window_size();
    if (scanned >= tags.ub())
      fail(MPI_ERR_OTHER, "mpi-advance: no free tag: all " + std::to_string(tags.ub()) +
                              " tags of this communicator are held by live requests (free "
                              "some with MPIX_Request_free; MPIX_TAG_UB caps the range)");
    tags.skip_window();
    std::fill(rec, rec + kRecord, 0);
    fill_window(tags, rec + kMax);
    allreduce(rec, comm);
  }
}

void post_settings(const CommState& st, std::int64_t v[2], MPI_Request* r) {
  const Settings& s = settings();
  v[0] = s.fingerprint, v[1] = -s.fingerprint;
  MPIA_CHECK(MPI_Iallreduce(MPI_IN_PLACE, v, 2, MPI_INT64_T, MPI_MAX, st.comm->get(), r));
}

void apply_settings(CommState& st, const std::int64_t v[2]) {
  if (v[0] == -v[1]) return;
  st.settings_error = MPI_ERR_ARG;
  st.settings_error_what =
      "mpi-advance: the ranks of this communicator have different settings (environment "
      "variables MPIX_*); this rank has " +
      settings().text;
}

void agree_settings(CommState& st) {
  std::int64_t v[2];
  MPI_Request r;
  post_settings(st, v, &r);
  complete(r, "MPI_Iallreduce (settings)");
  apply_settings(st, v);
}

void free_protocol() {
  if (g_op != MPI_OP_NULL) MPI_Op_free(&g_op);
  if (g_record != MPI_DATATYPE_NULL) MPI_Type_free(&g_record);
}

void debug_agree(CommState& st, std::unique_ptr<Error> local, const Selection* sel,
                 std::int64_t same) {
  Proposal p;
  p.error = std::move(local);
  if (sel) p.choice = sel->to_string();
  p.same = same;
  agree(st, p);
}

}  // namespace mpia
