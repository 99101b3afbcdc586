#include "operation/blocking_cache.hpp"

#include "locality/locality.hpp"
#include "operation/attach.hpp"
#include "operation/nonblocking.hpp"

namespace mpia {

void blocking_machine(CommState& st, Collective c) {
  if (cached_locality(st)) return;
  const BlockingCache::Memo& m = blocking_cache(st).memo;
  if (m.collective == int(c) && m.text == st.default_algorithm(c)) return;  // decided before
  if (resolves(select_algorithm(c, MPI_INFO_NULL, st.default_algorithm(c), extent_of(st))))
    comm_locality(st);
}

BlockingCache::BlockingCache() = default;
BlockingCache::~BlockingCache() = default;
BlockingCache::PlanCache::Entry::Entry() = default;
BlockingCache::PlanCache::Entry::Entry(Entry&&) noexcept = default;
BlockingCache::PlanCache::Entry& BlockingCache::PlanCache::Entry::operator=(Entry&&) noexcept =
    default;
BlockingCache::PlanCache::Entry::~Entry() = default;

std::int64_t cached_plan_bytes(const BlockingCache& bc) {
  if (!bc.cached) return 0;
  return bc.cached->memory().bytes +
         std::int64_t(bc.cached_words.capacity() * sizeof(std::int64_t));
}

CommPlanCache comm_plan_cache(const CommState& st) {
  CommPlanCache out;
  if (st.blocking) {
    for (const auto& e : st.blocking->plans.entries) {
      ++out.entries;
      out.agreed_bytes += e.agreed_bytes;
      out.bytes += e.charge.bytes();
    }
    out.bytes += st.blocking->cached_charge.bytes();
  }
  if (st.comm && st.comm->nonblocking) out.bytes += st.comm->nonblocking->bytes();
  return out;
}

}  // namespace mpia
