#include "util/error.hpp"

namespace mpia {

void fail(int mpi_class, const std::string& what) { throw Error(mpi_class, what); }

namespace detail {
void mpi_call_failed(int rc, const char* call) {
  throw Error(rc, std::string("mpi-advance: MPI call failed: ") + call);
}
}  // namespace detail

}  // namespace mpia
