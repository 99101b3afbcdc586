// Errors inside the library are C++ exceptions carrying an MPI error class; the C boundary
// (api/c_api.cpp) turns them into return codes and raises them on the communicator's error
// handler. Every MPI call goes through check() so that no return code is ignored or summed.
//
// Communication errors of a running request are not exceptions: they are recorded in the
// request's StickyError, the schedule runs to its end (so that no posted MPI request is ever
// abandoned and no peer is left waiting), and the request's own Wait/Test reports them.
#pragma once

#include <mpi.h>

#include <cstdint>
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

// The first error of one execution of a request: its MPI code (the class is what callers
// compare) and a message. Cleared when the request starts again.
struct StickyError {
  int code = MPI_SUCCESS;
  std::string what;
  explicit operator bool() const { return code != MPI_SUCCESS; }
  // Records rc (if an error and the first one) from the MPI call named call; returns rc == 0.
  bool note(int rc, const char* call);
  void note(const Error& e);
  void clear() {
    code = MPI_SUCCESS;
    what.clear();
  }
  [[noreturn]] void raise() const { throw Error(code, what); }
};

// Calls comm's error handler with code, as MPI_Comm_call_errhandler does, except that
// MPI_ERRORS_RETURN is not called (it does nothing; SimGrid 3.32's MPI_Comm_call_errhandler
// jumps to a null function for it) and, where util/platform.hpp says so (SMPI: the same null
// function), MPI_ERRORS_ARE_FATAL aborts with MPI_Abort. Prints what first when the handler is
// fatal.
void call_errhandler(MPI_Comm comm, int code, const char* what = nullptr);

// MPI_Error_class of a code; MPI_ERR_OTHER when the code is not one.
int error_class(int code);

// The packed size of one element of t, with MPI_Type_size_x: above 2 GiB too (MPI_Type_size
// gives MPI_UNDEFINED there).
std::int64_t type_size(MPI_Datatype t);

}  // namespace mpia

#define MPIA_CHECK(call) ::mpia::check((call), #call)
