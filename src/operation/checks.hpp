// Local argument checks the collectives share: datatypes and buffers.
#pragma once

#include <mpi.h>

#include <cstdint>

namespace mpia {

// MPI_ERR_TYPE for MPI_DATATYPE_NULL and for a derived type that is not committed (which MPI
// cannot send); which names the argument. comm: one whose error handler returns (the private
// duplicate): the probe is an MPI_Pack of zero elements, which fails for an uncommitted type.
void check_type(MPI_Datatype type, MPI_Comm comm, const char* which);

// A null base whose first byte would fall in page zero cannot be valid memory. (A null base
// with a datatype of absolute addresses -- MPI_BOTTOM -- is legal MPI and passes.)
void check_buffer(const void* buf, std::int64_t bytes, MPI_Datatype type, const char* which);

}  // namespace mpia
