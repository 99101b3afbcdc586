#include "operation/select.hpp"

#include "locality/locality.hpp"
#include "operation/attach.hpp"
#include "util/error.hpp"

namespace mpia {

ExtentOf extent_of(CommState& st) {
  return [&st](const AlgorithmSpec& a) {
    if (!a.needs_locality) return Extent(st.size);
    const NodeMap& m = comm_locality(st).map;
    return Extent(st.size, m.nnodes(), m.max_local());
  };
}

Selection parse_for(Collective c, std::string_view text, const ExtentOf& extent, bool strict) {
  const AlgorithmSpec& a = parse_algorithm(c, text);
  return parse_selection(c, text, a.params.empty() ? Extent{} : extent(a), strict);
}

Selection select_algorithm(Collective c, MPI_Info info, const std::string& fallback,
                           const ExtentOf& nranks) {
  if (info != MPI_INFO_NULL) {
    int len = 0, flag = 0;
    MPIA_CHECK(MPI_Info_get_valuelen(info, "mpix_algorithm", &len, &flag));
    if (flag) {
      std::string value(std::size_t(len) + 1, '\0');
      MPIA_CHECK(MPI_Info_get(info, "mpix_algorithm", len, value.data(), &flag));
      value.resize(std::size_t(len));
      return parse_for(c, value, nranks, true);
    }
  }
  if (!fallback.empty()) {
    // A bad value of the environment variable is reported and replaced by auto. A failure to
    // learn the communicator's extent is not the variable's fault (a malformed MPIX_LOCALITY,
    // reported where it is parsed): it is the call's error, as auto would meet it too.
    bool extent_failed = false;
    const ExtentOf guarded = [&](const AlgorithmSpec& a) {
      try {
        return nranks(a);
      } catch (...) {
        extent_failed = true;
        throw;
      }
    };
    try {
      return parse_for(c, fallback, guarded, false);
    } catch (const Error& e) {
      if (extent_failed) throw;
      warn_once(std::string(e.what()) + " (from " + collective_env(c) + "; using auto)");
    }
  }
  return parse_for(c, "auto", nranks, true);
}

}  // namespace mpia
