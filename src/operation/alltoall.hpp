// MPIX_Alltoall / MPIX_Alltoall_init: argument checks, agreement and building the operation a
// request runs (alltoall.cpp); its entry points are declared with the other collectives'.
#pragma once

#include "operation/entry_points.hpp"
