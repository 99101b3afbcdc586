// "system": each collective handed to the MPI library, persistent where the library has a
// persistent form. Its builder makes that call an operation (operation/system.cpp); no schedule,
// no parameters, no cost: the model never weighs it (a trial may measure it).
#include "collective/record.hpp"

namespace mpia {

// operation/system.cpp.
std::unique_ptr<Operation> library_operation(const LibraryCall& call);

MPIA_ALGORITHMS(all_system) {
  using detail::record;
  std::vector<AlgorithmSpec> out = {
      record(Collective::Alltoall, "system", 900,
             "the MPI library's own alltoall (persistent if it has one)", AlgorithmKind::System),
      record(Collective::Alltoallv, "system", 900,
             "the MPI library's own alltoallv (persistent if it has one)", AlgorithmKind::System),
      record(Collective::NeighborAlltoallv, "system", 900,
             "the MPI library's own neighbor alltoallv (persistent if it has one)",
             AlgorithmKind::System),
  };
  for (AlgorithmSpec& a : out) a.build_operation = library_operation;
  return out;
}

}  // namespace mpia
