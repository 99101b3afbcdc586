// Errors inside the library are C++ exceptions carrying an MPI error class; the C boundary
// (api/c_api.cpp) turns them into return codes and raises them on the communicator's error
// handler. Every MPI call goes through check() so that no return code is ignored or summed.
#pragma once

#include <mpi.h>

#include <stdexcept>
#include <string>

namespace mpia {

class Error : public std::runtime_error {
 public:
  Error(int mpi_class, const std::string& what) : std::runtime_error(what), code_(mpi_class) {}
  int code() const noexcept { return code_; }

 private:
  int code_;
};

[[noreturn]] void fail(int mpi_class, const std::string& what);

namespace detail {
[[noreturn]] void mpi_call_failed(int rc, const char* call);
}

// Checks one MPI return code. The MPI library's own code is preserved (not re-classed) so the
// user's error handler sees exactly what MPI reported.
inline void check(int rc, const char* call) {
  if (rc != MPI_SUCCESS) detail::mpi_call_failed(rc, call);
}

}  // namespace mpia

#define MPIA_CHECK(call) ::mpia::check((call), #call)
