#include "operation/comm_state.hpp"

#include "locality/locality.hpp"
#include "operation/nonblocking.hpp"
#include "operation/settings.hpp"
#include "util/error.hpp"

namespace mpia {

CommState::~CommState() {
  // The idle plans of nonblocking calls hold the private communicator they live in: dropped
  // here, or neither would ever be freed.
  if (comm && comm->nonblocking) comm->nonblocking->clear();
}

void CommState::check_settings() const {
  if (settings_error != MPI_SUCCESS) fail(settings_error, settings_error_what);
}

const std::string& CommState::default_algorithm(Collective c) const {
  const std::string& own = per[std::size_t(c)].algorithm;
  return own.empty() ? env_algorithm(c) : own;
}

const Locality* cached_locality(const CommState& state) { return state.locality.get(); }

}  // namespace mpia
