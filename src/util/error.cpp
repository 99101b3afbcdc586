#include "util/error.hpp"

#include "util/platform.hpp"

#include <cstdio>

namespace mpia {

void fail(int mpi_class, const std::string& what) { throw Error(mpi_class, what); }

namespace detail {
void mpi_call_failed(int rc, const char* call) {
  throw Error(rc, std::string("mpi-advance: MPI call failed: ") + call);
}
}  // namespace detail

bool StickyError::note(int rc, const char* call) {
  if (rc == MPI_SUCCESS) return true;
  if (code == MPI_SUCCESS) {
    code = rc;
    what = std::string("mpi-advance: ") + call + " failed";
    char text[MPI_MAX_ERROR_STRING];
    int len = 0;
    if (MPI_Error_string(rc, text, &len) == MPI_SUCCESS && len > 0)
      what += std::string(": ") + std::string(text, std::size_t(len));
  }
  return false;
}

void StickyError::note(const Error& e) {
  if (code != MPI_SUCCESS) return;
  code = e.code();
  what = e.what();
}

void call_errhandler(MPI_Comm comm, int code, const char* what) {
  MPI_Errhandler handler = MPI_ERRHANDLER_NULL;
  bool returns = false, fatal = false;
  if (MPI_Comm_get_errhandler(comm, &handler) == MPI_SUCCESS) {
    returns = handler == MPI_ERRORS_RETURN;
    fatal = handler == MPI_ERRORS_ARE_FATAL;
    if (handler != MPI_ERRHANDLER_NULL) MPI_Errhandler_free(&handler);
  }
  if (fatal && what && *what) std::fprintf(stderr, "%s\n", what);
  if (returns) return;
  if (fatal && platform::aborts_on_fatal()) MPI_Abort(comm, code);
  MPI_Comm_call_errhandler(comm, code);
}

int error_class(int code) {
  int cls = MPI_ERR_OTHER;
  if (MPI_Error_class(code, &cls) != MPI_SUCCESS) cls = MPI_ERR_OTHER;
  return cls;
}

std::int64_t type_size(MPI_Datatype t) {
  MPI_Count size = 0;
  MPIA_CHECK(MPI_Type_size_x(t, &size));
  if (size == MPI_UNDEFINED)
    fail(MPI_ERR_TYPE, "mpi-advance: datatype size does not fit MPI_Count");
  return std::int64_t(size);
}

}  // namespace mpia
