// util/platform.hpp for an MPI library (every build but SimGrid's SMPI).
#include "util/platform.hpp"

namespace mpia::platform {

int start_request(MPI_Request* q, bool, int, MPI_Datatype) { return MPI_Start(q); }

bool posts_with_isend(std::int64_t bytes) { return bytes <= kIsendBytes; }

bool isends_derived_types() { return false; }

bool receives_unpaid() { return false; }

double unpaid_receive_seconds(std::int64_t) { return 0; }

void charge(double) {}

bool aborts_on_fatal() { return false; }

}  // namespace mpia::platform
