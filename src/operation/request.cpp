#include "operation/request.hpp"

namespace mpia {

mpia_request* make_request(MPI_Comm user, CommState& st, std::unique_ptr<Operation> op) {
  if (op->threaded) op->threaded = start_progress_thread();
  auto handle = std::make_unique<mpia_request>();
  handle->comm = user;
  handle->library_comm = st.comm;
  handle->op = std::move(op);
  return handle.release();
}

}  // namespace mpia
