// The System records: the MPI library's own alltoall, run on the private communicator. This
// translation unit deliberately does not include mpi_advance.h: it includes Open MPI's <mpi-ext.h>,
// whose MPIX_Alltoall_init is Open MPI's, not ours.
#include <mpi.h>
#if defined(OPEN_MPI) && OPEN_MPI
#include <mpi-ext.h>
#endif

#include "operation/alltoall.hpp"
#include "operation/alltoallv.hpp"
#include "operation/neighbor.hpp"
#include "util/error.hpp"

#include <algorithm>
#include <vector>

namespace mpia {

namespace {

// A call handed to the MPI library: its persistent form when it has one (MPI-4, or Open MPI's
// pcollreq extension), created by the subclass; else the nonblocking call at each start. (Not
// a barrier and then the blocking call, though where the nonblocking form is wrong that would
// be right: two such requests of one communicator, driven in different orders on different
// ranks, would enter their blocking calls in different orders.)
class SystemOperation : public Operation {
 public:
  ~SystemOperation() override {
    int finalized = 0;
    MPI_Finalized(&finalized);
    if (!finalized && persistent_ && request_ != MPI_REQUEST_NULL) MPI_Request_free(&request_);
  }

 protected:
  // Named as its record is (the System kind of the table).
  explicit SystemOperation(Collective c) { algorithm_ = find_kind(c, AlgorithmKind::System)->name; }
  virtual int start_nonblocking() = 0;

  // A failure to start or complete is the request's error; a failed MPI request counts as
  // complete.
  bool do_start() override {
    const int rc = persistent_ ? MPI_Start(&request_) : start_nonblocking();
    return !errors_.note(rc, persistent_ ? "MPI_Start" : "the MPI library's collective");
  }

  bool do_progress(bool block) override {
    if (block) {
      errors_.note(MPI_Wait(&request_, MPI_STATUS_IGNORE), "MPI_Wait");
      return true;
    }
    int flag = 0;
    const int rc = MPI_Test(&request_, &flag, MPI_STATUS_IGNORE);
    return !errors_.note(rc, "MPI_Test") || flag != 0;
  }

  MPI_Request request_ = MPI_REQUEST_NULL;
  bool persistent_ = false;
};

class SystemAlltoall : public SystemOperation {
 public:
  SystemAlltoall(const AlltoallArgs& a, std::shared_ptr<PrivateComm> comm)
      : SystemOperation(Collective::Alltoall),
        comm_(std::move(comm)),
        a_(a),
        recvtype_(a.recvtype) {
    if (!a.in_place()) sendtype_ = std::make_unique<TypeHandle>(a.sendtype);
    a_.recvtype = recvtype_.get();
    if (sendtype_) a_.sendtype = sendtype_->get();
#if MPI_VERSION >= 4
    MPIA_CHECK(MPI_Alltoall_init(a_.sendbuf, a_.sendcount, a_.sendtype, a_.recvbuf, a_.recvcount,
                                 a_.recvtype, comm_->get(), MPI_INFO_NULL, &request_));
    persistent_ = true;
#elif defined(OMPI_HAVE_MPI_EXT_PCOLLREQ) && OMPI_HAVE_MPI_EXT_PCOLLREQ
    MPIA_CHECK(MPIX_Alltoall_init(a_.sendbuf, a_.sendcount, a_.sendtype, a_.recvbuf, a_.recvcount,
                                  a_.recvtype, comm_->get(), MPI_INFO_NULL, &request_));
    persistent_ = true;
#endif
  }

 protected:
  int start_nonblocking() override {
    return MPI_Ialltoall(a_.sendbuf, a_.sendcount, a_.sendtype, a_.recvbuf, a_.recvcount,
                         a_.recvtype, comm_->get(), &request_);
  }

 private:
  std::shared_ptr<PrivateComm> comm_;
  AlltoallArgs a_;
  TypeHandle recvtype_;
  std::unique_ptr<TypeHandle> sendtype_;
};

class SystemAlltoallv : public SystemOperation {
 public:
  SystemAlltoallv(const AlltoallvArgs& a, int P, std::shared_ptr<PrivateComm> comm)
      : SystemOperation(Collective::Alltoallv),
        comm_(std::move(comm)),
        a_(a),
        recvtype_(a.recvtype) {
    // MPI may read the arrays at every start: keep our own copies.
    rc_.assign(a.recvcounts, a.recvcounts + P);
    rd_.assign(a.rdispls, a.rdispls + P);
    a_.recvcounts = rc_.data();
    a_.rdispls = rd_.data();
    a_.recvtype = recvtype_.get();
    if (!a.in_place()) {
      sc_.assign(a.sendcounts, a.sendcounts + P);
      sd_.assign(a.sdispls, a.sdispls + P);
      a_.sendcounts = sc_.data();
      a_.sdispls = sd_.data();
      sendtype_ = std::make_unique<TypeHandle>(a.sendtype);
      a_.sendtype = sendtype_->get();
    }
#if MPI_VERSION >= 4
    MPIA_CHECK(MPI_Alltoallv_init(a_.sendbuf, a_.sendcounts, a_.sdispls, a_.sendtype, a_.recvbuf,
                                  a_.recvcounts, a_.rdispls, a_.recvtype, comm_->get(),
                                  MPI_INFO_NULL, &request_));
    persistent_ = true;
#elif defined(OMPI_HAVE_MPI_EXT_PCOLLREQ) && OMPI_HAVE_MPI_EXT_PCOLLREQ
    MPIA_CHECK(MPIX_Alltoallv_init(a_.sendbuf, a_.sendcounts, a_.sdispls, a_.sendtype, a_.recvbuf,
                                   a_.recvcounts, a_.rdispls, a_.recvtype, comm_->get(),
                                   MPI_INFO_NULL, &request_));
    persistent_ = true;
#endif
  }

 protected:
  int start_nonblocking() override {
    return MPI_Ialltoallv(a_.sendbuf, a_.sendcounts, a_.sdispls, a_.sendtype, a_.recvbuf,
                          a_.recvcounts, a_.rdispls, a_.recvtype, comm_->get(), &request_);
  }

 private:
  std::shared_ptr<PrivateComm> comm_;
  AlltoallvArgs a_;
  std::vector<int> sc_, sd_, rc_, rd_;
  TypeHandle recvtype_;
  std::unique_ptr<TypeHandle> sendtype_;
};

// The system's MPI_Neighbor_alltoallv on the private duplicate (which keeps the topology), or
// MPI_Neighbor_alltoall for the regular form: the library's own answer for its own call (on
// MPICH 4.0.2 they differ on periodic rings of 1 or 2 ranks, where only the regular one is
// right).
class SystemNeighbor : public SystemOperation {
 public:
  SystemNeighbor(const AlltoallvArgs& a, int indeg, int outdeg, std::shared_ptr<PrivateComm> comm)
      : SystemOperation(Collective::NeighborAlltoallv),
        comm_(std::move(comm)),
        a_(a),
        recvtype_(a.recvtype),
        sendtype_(a.sendtype) {
    // One element at least, so that the arrays are never NULL for a zero degree.
    rc_.assign(std::size_t(indeg) + 1, 0), rd_.assign(std::size_t(indeg) + 1, 0);
    sc_.assign(std::size_t(outdeg) + 1, 0), sd_.assign(std::size_t(outdeg) + 1, 0);
    std::copy(a.recvcounts, a.recvcounts + indeg, rc_.begin());
    std::copy(a.rdispls, a.rdispls + indeg, rd_.begin());
    std::copy(a.sendcounts, a.sendcounts + outdeg, sc_.begin());
    std::copy(a.sdispls, a.sdispls + outdeg, sd_.begin());
    a_.recvcounts = rc_.data(), a_.rdispls = rd_.data(), a_.recvtype = recvtype_.get();
    a_.sendcounts = sc_.data(), a_.sdispls = sd_.data(), a_.sendtype = sendtype_.get();
#if MPI_VERSION >= 4
    if (a_.regular)
      MPIA_CHECK(MPI_Neighbor_alltoall_init(a_.sendbuf, a_.sendcount, a_.sendtype, a_.recvbuf,
                                            a_.recvcount, a_.recvtype, comm_->get(), MPI_INFO_NULL,
                                            &request_));
    else
      MPIA_CHECK(MPI_Neighbor_alltoallv_init(a_.sendbuf, a_.sendcounts, a_.sdispls, a_.sendtype,
                                             a_.recvbuf, a_.recvcounts, a_.rdispls, a_.recvtype,
                                             comm_->get(), MPI_INFO_NULL, &request_));
    persistent_ = true;
#endif
    // Not Open MPI 4's MPIX_Neighbor_alltoall(v)_init: it fails with MPI_ERR_ARG on a rank
    // without neighbors. Without MPI-4, the nonblocking call at each start instead (Open MPI
    // 4.1's swaps the two directions of periodic dimensions of size 1 and 2, where its blocking
    // call is right: the System record is the library's own nonblocking answer there).
  }

 protected:
  int start_nonblocking() override {
    if (a_.regular)
      return MPI_Ineighbor_alltoall(a_.sendbuf, a_.sendcount, a_.sendtype, a_.recvbuf, a_.recvcount,
                                    a_.recvtype, comm_->get(), &request_);
    return MPI_Ineighbor_alltoallv(a_.sendbuf, a_.sendcounts, a_.sdispls, a_.sendtype, a_.recvbuf,
                                   a_.recvcounts, a_.rdispls, a_.recvtype, comm_->get(), &request_);
  }

 private:
  std::shared_ptr<PrivateComm> comm_;
  AlltoallvArgs a_;
  std::vector<int> sc_, sd_, rc_, rd_;
  TypeHandle recvtype_, sendtype_;
};

}  // namespace

std::unique_ptr<Operation> make_system_neighbor(const AlltoallvArgs& a, int indegree, int outdegree,
                                                std::shared_ptr<PrivateComm> comm) {
  return std::make_unique<SystemNeighbor>(a, indegree, outdegree, std::move(comm));
}

std::unique_ptr<Operation> make_system_alltoall(const AlltoallArgs& a,
                                                std::shared_ptr<PrivateComm> comm) {
  return std::make_unique<SystemAlltoall>(a, std::move(comm));
}

}  // namespace mpia

namespace mpia {
std::unique_ptr<Operation> make_system_alltoallv(const AlltoallvArgs& a, int nranks,
                                                 std::shared_ptr<PrivateComm> comm) {
  return std::make_unique<SystemAlltoallv>(a, nranks, std::move(comm));
}
}  // namespace mpia
