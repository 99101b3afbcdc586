// The info keys a call may carry besides "mpix_algorithm" (select.hpp): how a new request runs.
#pragma once

#include <mpi.h>

namespace mpia {

// An info key whose value is one of two words: 1 for yes, 0 for no, -1 when absent (or no info);
// another value is MPI_ERR_INFO_VALUE.
int info_switch(MPI_Info info, const char* key, const char* yes, const char* no);

// Whether a new auto request measures its shortlist (trial.hpp): info "mpix_auto" = "measure" or
// "model", else MPIX_AUTO. Local: the caller agrees on it with its choice.
bool wants_trial(MPI_Info info);

// Whether a new request is threaded: info "mpix_progress" = "thread" (or "calls"; another value
// is MPI_ERR_INFO_VALUE), else MPIX_PROGRESS. Local: ranks may differ.
bool wants_progress_thread(MPI_Info info);

}  // namespace mpia
