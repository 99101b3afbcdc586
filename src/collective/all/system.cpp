// "system": each collective handed to the MPI library, persistent where the library has a
// persistent form. Its builder makes that call an operation (operation/system.cpp); no schedule,
// no parameters, no cost: the model never weighs it (a trial may measure it).
#include "collective/record.hpp"

namespace mpia {

// operation/system.cpp.
std::unique_ptr<Operation> library_operation(const LibraryCall& call);

namespace {

constexpr const char* kNotModelled =
    "not modelled: the model never weighs the MPI library's call; a measured trial may time it "
    "beside the model's shortlist";

}  // namespace

MPIA_ALGORITHMS(all_system) {
  using detail::record;
  std::vector<AlgorithmSpec> out = {
      record(Collective::Alltoall, "system", 900,
             "the MPI library's own alltoall (persistent if it has one)",
             {"the MPI library's MPI_Alltoall, or MPI_Alltoall_init (MPI-4)", kNotModelled},
             AlgorithmKind::System),
      record(Collective::Alltoallv, "system", 900,
             "the MPI library's own alltoallv (persistent if it has one)",
             {"the MPI library's MPI_Alltoallv, or MPI_Alltoallv_init (MPI-4)", kNotModelled},
             AlgorithmKind::System),
      record(Collective::NeighborAlltoallv, "system", 900,
             "the MPI library's own neighbor alltoallv (persistent if it has one)",
             {"the MPI library's MPI_Neighbor_alltoallv, or MPI_Neighbor_alltoallv_init; "
              "defined in " MPIA_SEED_002,
              kNotModelled},
             AlgorithmKind::System),
  };
  for (AlgorithmSpec& a : out) a.build_operation = library_operation;
  return out;
}

}  // namespace mpia
