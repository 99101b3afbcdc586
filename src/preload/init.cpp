// The drop-in library's persistent inits under Open MPI 4.1, whose mpi.h is MPI-3.1: its
// extension's MPIX_Alltoall_init & co. (<mpi-ext.h>, pcollreq). This translation unit does not
// include mpi_advance.h, whose MPIX_ names are ours (MPIA_ at link level); MPI-4's MPI_*_init are
// defined in preload.cpp. Each runs preload.cpp's dispatcher, as the C entry points there do.
#include <mpi.h>
#if defined(OPEN_MPI) && OPEN_MPI
#include <mpi-ext.h>
#endif

#include "preload/preload.hpp"
#include "util/mpi_features.h"

#if !MPIA_HAVE_PERSISTENT_COLL && defined(OMPI_HAVE_MPI_EXT_PCOLLREQ) && OMPI_HAVE_MPI_EXT_PCOLLREQ

#define MPIA_PRELOAD_EXPORT __attribute__((visibility("default")))

extern "C" {
#include "preload_ompi_ext.inc"
}  // extern "C"

#endif
