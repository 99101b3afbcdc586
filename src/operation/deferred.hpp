// Nonblocking calls that wait for their communicator's attach (attach.hpp) before they run.
#pragma once

#include "collective/registry.hpp"
#include "operation/args.hpp"
#include "operation/attach.hpp"
#include "operation/operation.hpp"

#include <mpi.h>

#include <cstdint>
#include <functional>
#include <memory>
#include <string>

namespace mpia {

// A nonblocking call made while its communicator's attach is still in flight (the library's
// first call on it was nonblocking: attach.hpp): it posts nothing until the attach completed on
// this rank and the deferred calls before it on the communicator were made, then makes its
// operation (make, with the state: made and started as an undeferred call's) and completes with
// it. An argument error found then is the request's
// error, reported by its completion on every rank (every rank makes the same checks). keep holds
// what make reads that the user may free after the call returned (copies of derived datatypes).
class DeferredOperation : public Operation {
 public:
  using Make = std::function<std::unique_ptr<Operation>(CommState&)>;
  DeferredOperation(std::shared_ptr<PendingAttach> attach, std::uint64_t ticket, Make make,
                    std::shared_ptr<void> keep);

  std::string algorithm() const override { return inner_ ? inner_->algorithm() : "(attaching)"; }
  Traffic traffic() const override { return inner_ ? inner_->traffic() : Operation::traffic(); }
  Memory memory() const override;
  // After completion: the inner call's plan back to the cache (NonblockingOperation::finish).
  void finish();

 protected:
  bool do_start() override { return do_progress(false); }
  bool do_progress(bool block) override;

 private:
  std::shared_ptr<PendingAttach> attach_;
  std::uint64_t ticket_;
  Make make_;
  std::shared_ptr<void> keep_;
  std::unique_ptr<Operation> inner_;
};

// What a call deferred on comm (collective c) reads that the user may free as soon as it
// returned: copies of its derived datatypes (a w call's per block: comm's size of them, or its
// neighbor topology's degrees), put into args in place of the user's. Held by the call's
// DeferredOperation and freed with it.
std::shared_ptr<void> keep_datatypes(AlltoallArgs& args, MPI_Comm comm, Collective c);
std::shared_ptr<void> keep_datatypes(AlltoallvArgs& args, MPI_Comm comm, Collective c);

}  // namespace mpia
