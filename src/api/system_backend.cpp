// "system": the MPI library's own alltoall, run on the private communicator. This translation
// unit deliberately does not include mpi_advance.h: it includes Open MPI's <mpi-ext.h>, whose
// MPIX_Alltoall_init is Open MPI's, not ours.
#include <mpi.h>
#if defined(OPEN_MPI) && OPEN_MPI
#include <mpi-ext.h>
#endif

#include "collective/alltoall/alltoall.hpp"
#include "util/error.hpp"

namespace mpia {

namespace {

class SystemAlltoall : public Operation {
 public:
  SystemAlltoall(const AlltoallArgs& a, std::shared_ptr<PrivateComm> comm)
      : comm_(std::move(comm)), args_(a), recvtype_(a.recvtype) {
    algorithm_ = "system";
    if (!a.in_place()) sendtype_ = std::make_unique<TypeHandle>(a.sendtype);
    args_.recvtype = recvtype_.get();
    if (sendtype_) args_.sendtype = sendtype_->get();
#if MPI_VERSION >= 4
    MPIA_CHECK(MPI_Alltoall_init(args_.sendbuf, args_.sendcount, args_.sendtype, args_.recvbuf,
                                 args_.recvcount, args_.recvtype, comm_->get(), MPI_INFO_NULL,
                                 &request_));
    persistent_ = true;
#elif defined(OMPI_HAVE_MPI_EXT_PCOLLREQ) && OMPI_HAVE_MPI_EXT_PCOLLREQ
    MPIA_CHECK(MPIX_Alltoall_init(args_.sendbuf, args_.sendcount, args_.sendtype, args_.recvbuf,
                                  args_.recvcount, args_.recvtype, comm_->get(), MPI_INFO_NULL,
                                  &request_));
    persistent_ = true;
#endif
  }

  ~SystemAlltoall() override {
    int finalized = 0;
    MPI_Finalized(&finalized);
    if (!finalized && persistent_ && request_ != MPI_REQUEST_NULL) MPI_Request_free(&request_);
  }

 protected:
  void do_start() override {
    if (persistent_)
      MPIA_CHECK(MPI_Start(&request_));
    else
      MPIA_CHECK(MPI_Ialltoall(args_.sendbuf, args_.sendcount, args_.sendtype, args_.recvbuf,
                               args_.recvcount, args_.recvtype, comm_->get(), &request_));
  }

  bool do_progress(bool block) override {
    if (block) {
      MPIA_CHECK(MPI_Wait(&request_, MPI_STATUS_IGNORE));
      return true;
    }
    int flag = 0;
    MPIA_CHECK(MPI_Test(&request_, &flag, MPI_STATUS_IGNORE));
    return flag != 0;
  }

 private:
  std::shared_ptr<PrivateComm> comm_;
  AlltoallArgs args_;
  TypeHandle recvtype_;
  std::unique_ptr<TypeHandle> sendtype_;
  MPI_Request request_ = MPI_REQUEST_NULL;
  bool persistent_ = false;
};

}  // namespace

std::unique_ptr<Operation> make_system_alltoall(const AlltoallArgs& a,
                                                std::shared_ptr<PrivateComm> comm) {
  return std::make_unique<SystemAlltoall>(a, std::move(comm));
}

}  // namespace mpia
