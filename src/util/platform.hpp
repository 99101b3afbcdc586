// What the library asks of the MPI it runs on beyond MPI's own calls: one implementation per
// kind of build, chosen by CMake, so that no source has a conditional for it. An MPI library:
// util/platform.cpp. SimGrid's simulated MPI (MPIA_SMPI, the lab of scripts/smpi/):
// smpi/platform_smpi.cpp, which charges what SMPI forgets to charge.
#pragma once

#include <mpi.h>

#include <cstdint>

namespace mpia::platform {

// On an MPI library, sends of at most this many bytes are posted with MPI_Isend at each start
// of a lowered schedule rather than as persistent requests (posts_with_isend; schedule/engine.hpp).
constexpr std::int64_t kIsendBytes = 256;

// MPI_Start of one request of a lowered schedule; a send is `count` elements of `type`.
int start_request(MPI_Request* q, bool is_send, int count, MPI_Datatype type);

// Whether a send of `bytes` is posted with MPI_Isend at each start rather than made a persistent
// request (kIsendBytes above).
bool posts_with_isend(std::int64_t bytes);

// Whether a send whose datatype is derived (several regions, or a user's type with holes) must
// be posted with MPI_Isend at each start too, because a persistent send of it would send what
// the buffer held at MPI_Send_init (SimGrid 3.32's SMPI packs it there, not at MPI_Start).
bool isends_derived_types();

// The receive overhead, in seconds, of one message of `bytes` that the MPI library's own
// collectives do not pay on this platform while the engine's receives do (start_request), and
// charging such seconds to the calling rank: where the library hands a collective to the MPI
// library (operation/system.cpp) it charges what the engine would for the same receives, so
// that a trial's `system` entry and ours pay alike. 0 and nothing on an MPI library; in SMPI,
// smpi/or (0 on the lab's default machine; 0.5 us on its variants with one), which SMPI's
// collectives never pay.
bool receives_unpaid();  // whether unpaid_receive_seconds can be above 0 here
double unpaid_receive_seconds(std::int64_t bytes);
void charge(double seconds);

// Whether the library itself must abort (MPI_Abort) where an error meets MPI_ERRORS_ARE_FATAL,
// rather than leave it to MPI_Comm_call_errhandler.
bool aborts_on_fatal();

}  // namespace mpia::platform
