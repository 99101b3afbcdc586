#include "operation/checks.hpp"

#include "operation/datatypes.hpp"
#include "util/error.hpp"

#include <string>

namespace mpia {

void check_type(MPI_Datatype type, MPI_Comm comm, const char* which) {
  if (type == MPI_DATATYPE_NULL)
    fail(MPI_ERR_TYPE, std::string("mpi-advance: ") + which + " is MPI_DATATYPE_NULL");
  if (predefined(type)) return;
  char in = 0, out = 0;
  int position = 0;
  if (MPI_Pack(&in, 0, type, &out, 0, &position, comm) != MPI_SUCCESS)
    fail(MPI_ERR_TYPE, std::string("mpi-advance: ") + which +
                           " is not a committed datatype (MPI_Type_commit it first)");
}

void check_buffer(const void* buf, std::int64_t bytes, MPI_Datatype type, const char* which) {
  if (buf != nullptr || bytes == 0) return;
  MPI_Aint tlb, textent;
  MPIA_CHECK(MPI_Type_get_true_extent(type, &tlb, &textent));
  if (tlb >= 0 && tlb < 4096)
    fail(MPI_ERR_BUFFER, std::string("mpi-advance: null ") + which + " with a non-zero count");
}

}  // namespace mpia
