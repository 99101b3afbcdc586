// "system": each collective handed to the MPI library (operation/system.cpp), persistent where
// the library has a persistent form. No schedule, no parameters, no cost: auto never weighs it.
#include "collective/record.hpp"

namespace mpia {

MPIA_ALGORITHMS(all_system) {
  using detail::record;
  return {
      record(Collective::Alltoall, "system", 900,
             "the MPI library's own alltoall (persistent if it has one)", AlgorithmKind::System),
      record(Collective::Alltoallv, "system", 900,
             "the MPI library's own alltoallv (persistent if it has one)", AlgorithmKind::System),
      record(Collective::NeighborAlltoallv, "system", 900,
             "the MPI library's own neighbor alltoallv (persistent if it has one)",
             AlgorithmKind::System),
  };
}

}  // namespace mpia
