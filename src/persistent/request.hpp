// Operations (what a request runs) and the process-wide progress of active requests.
//
// A persistent request owns an Operation built once at init. Start only resets the operation's
// cursor and posts its first round; Wait and Test progress every active operation of the
// process, so requests complete whatever order ranks wait on them in.
#pragma once

#include "locality/node_map.hpp"
#include "persistent/comm_state.hpp"
#include "schedule/engine.hpp"

#include <mpi.h>

#include <memory>
#include <string>

namespace mpia {

// What one start of an operation makes this rank send; -1 where unknown (the system's own
// collectives; the node counts when the communicator's locality was not computed).
struct Traffic {
  std::int64_t messages = -1, bytes = -1, internode_messages = -1, internode_bytes = -1;
};
// From a schedule built for rank me; node counts from nodes when given.
Traffic traffic_of(const Schedule& schedule, int me, const NodeMap* nodes);

class Operation {
 public:
  virtual ~Operation();
  const Traffic& traffic() const { return traffic_; }
  void set_traffic(const Traffic& t) { traffic_ = t; }
  // The algorithm and its resolved parameters, in selection syntax.
  const std::string& algorithm() const { return algorithm_; }
  bool active() const { return active_; }

  void start();  // registers the operation as active
  void wait();   // progresses all active operations until this one completes
  bool test();   // progresses all active operations once; whether this one is complete

 protected:
  virtual void do_start() = 0;
  // Returns whether the operation is complete; with block, returns only when it is.
  virtual bool do_progress(bool block) = 0;
  std::string algorithm_;
  Traffic traffic_;

 private:
  static void progress_all();
  void link();
  void unlink();
  bool active_ = false;
  // The process-wide list of active operations is intrusive, so that Start and Wait allocate
  // nothing.
  Operation* prev_ = nullptr;
  Operation* next_ = nullptr;
};

// A datatype duplicated at init, so the user may free theirs while the request lives.
class TypeHandle {
 public:
  TypeHandle() = default;
  explicit TypeHandle(MPI_Datatype user);
  ~TypeHandle();
  TypeHandle(const TypeHandle&) = delete;
  TypeHandle& operator=(const TypeHandle&) = delete;
  MPI_Datatype get() const { return type_; }

 private:
  MPI_Datatype type_ = MPI_DATATYPE_NULL;
};

// A schedule lowered by the engine, plus everything it refers to: the private communicator,
// the duplicated datatypes, and for MPI_IN_PLACE a shadow of the receive buffer that Start
// refreshes (the schedule then reads "send" blocks from the shadow).
class ScheduledOperation : public Operation {
 public:
  ScheduledOperation(std::string algorithm, std::shared_ptr<PrivateComm> comm);
  ~ScheduledOperation() override;

  // Builds a block buffer over base for the blocks described by counts/displacements (in
  // units of the type's extent), duplicating the type.
  BlockBuffer bind(const void* base, const int* counts, const MPI_Aint* displs, int nblocks,
                   MPI_Datatype type);
  // For MPI_IN_PLACE: a send buffer that mirrors recv, read from a copy made at each Start.
  BlockBuffer shadow_of(const BlockBuffer& recv);
  void lower(const Schedule& schedule, const BlockBuffer& send, const BlockBuffer& recv, int tag);

 protected:
  void do_start() override;
  bool do_progress(bool block) override;

 private:
  std::shared_ptr<PrivateComm> comm_;
  std::unique_ptr<TypeHandle> types_[2];
  int ntypes_ = 0;
  std::unique_ptr<char[]> shadow_;
  const char* shadow_source_ = nullptr;
  std::size_t shadow_bytes_ = 0;
  std::unique_ptr<LoweredSchedule> lowered_;
};

}  // namespace mpia

// The C handle behind MPIX_Request.
struct mpia_request {
  std::unique_ptr<mpia::Operation> op;
  MPI_Comm comm = MPI_COMM_NULL;  // the user's communicator: errors are raised on it
  std::shared_ptr<mpia::PrivateComm> library_comm;  // tells whether comm was freed since
};
