#include "util/error.hpp"

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
