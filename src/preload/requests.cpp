// The drop-in library's requests: what an unmodified application holds for a nonblocking or
// persistent all-to-all that mpi-advance runs, and the MPI request calls that complete them.
//
// The application must get a real MPI_Request: it may put it in any array of MPI_Waitany,
// MPI_Testsome & co. beside point-to-point and the MPI library's requests, start it with
// MPI_Startall beside its own persistent requests, ask MPI_Request_get_status, free it. So each
// library request (MPIX_Request) is paired with a "shell": a zero-byte receive from this process
// on a private duplicate of MPI_COMM_SELF, with a tag of its own, made by MPI_Recv_init --
// started at once for a nonblocking call, by MPI_Start for a persistent one. When the library
// request completes, the preload sends the zero-byte message to itself, the shell completes,
// and from then on everything -- indices, statuses, inactive persistent requests -- is the MPI
// library's own bookkeeping. A nonblocking call's shell is persistent too so that the MPI
// library never frees it by itself: the preload frees it, and sets the user's handle to
// MPI_REQUEST_NULL, under its lock, after dropping it from its table. (Freed by the MPI library
// inside a test, its handle could be given to another thread's new request before the table
// forgets it: that request would be taken for the shell.)
//
// Something must drive the library requests while the application waits: the preload defines
// MPI_Wait, MPI_Waitall, MPI_Waitany, MPI_Waitsome, MPI_Test, MPI_Testall, MPI_Testany,
// MPI_Testsome and MPI_Request_get_status. While no shell exists they go straight to the MPI
// library (one atomic load: the cost a foreign request pays, measured in
// benchmarks/request_overhead.c). Otherwise a wait polls: one progress pass of the library, the
// shells of finished library requests completed, then the MPI library's test of the same
// array, until it is satisfied -- so a wait on point-to-point requests also drives the running
// collectives, as MPI's progress rule asks. MPI_Wait on one shell whose request still runs
// waits in the library instead (MPIX_Wait, which drives every library request too).
// MPI_Start, MPI_Startall and MPI_Request_free are defined for the persistent shells (start
// both; free both, or, while active, let the request finish first), and MPI_Cancel refuses a
// shell with MPI_ERR_REQUEST: MPI does not allow cancelling a collective.
//
// The library's own waits and tests call PMPI_ directly and never come here.
// Threads: the pairs are kept under one mutex; one thread at a time drives (try-lock); a
// thread inside the preload's handling passes every nested request call to MPI.
#include "preload/preload.hpp"

#include "api/mpia_private.h"
#include "mpi_advance.h"

#include <atomic>
#include <cstdint>
#include <cstring>
#include <mutex>
#include <thread>
#include <unordered_map>
#include <vector>

namespace mpia_preload {
namespace {

struct Shell {
  MPIX_Request op = MPIX_REQUEST_NULL;    // the library's request
  MPI_Request handle = MPI_REQUEST_NULL;  // the shell, as the application was given it
  MPI_Comm comm = MPI_COMM_NULL;          // the collective's (MPI_Cancel's error)
  int ranks = 0;                          // its size (the report; the user may free comm)
  int coll = 0;                           // preload.cpp's index of the call (the report)
  double bytes = 0;                       // received per start (the report)
  int tag = -1;
  bool persistent = false;
  bool active = false;        // started (or a nonblocking call) and not yet completed for the user
  bool running = false;       // the library request runs: its zero-byte message is not yet sent
  bool claimed = false;       // an MPI_Wait on this shell alone waits for it in the library
  bool freed = false;         // freed by the user while active: dropped once the request is done
  bool report_later = false;  // MPIX_REPORT: its call is recorded once it knows its algorithm
  int error = MPI_SUCCESS;    // the library request's error, reported by the completing call
};

static_assert(sizeof(MPI_Request) <= sizeof(std::uint64_t), "MPI_Request wider than 64 bits");
std::uint64_t key(MPI_Request r) {
  std::uint64_t k = 0;
  std::memcpy(&k, &r, sizeof r);
  return k;
}

std::mutex mu;                                      // everything below but the counts
std::unordered_map<std::uint64_t, Shell*>* shells;  // by the user's handle
std::vector<Shell*>* running;                       // library requests not yet done
std::vector<int>* free_tags;
int next_tag = 0, tag_ub = 0;
MPI_Comm self = MPI_COMM_NULL;
// Read without the mutex: live > 0 while any shell exists (in shells, or freed and running);
// busy > 0 while any library request runs.
std::atomic<long> live{0};
std::atomic<long> busy{0};

// Finalize: every library request the user freed while active is driven to its end first.
int at_finalize(MPI_Comm, int, void*, void*);

// With mu held. The private communicator, the tables and the tag.
int take_tag(int* tag) {
  if (self == MPI_COMM_NULL) {
    int rc = PMPI_Comm_dup(MPI_COMM_SELF, &self);
    if (rc != MPI_SUCCESS) return rc;
    PMPI_Comm_set_errhandler(self, MPI_ERRORS_RETURN);
    void* ub = nullptr;
    int flag = 0;
    PMPI_Comm_get_attr(MPI_COMM_WORLD, MPI_TAG_UB, &ub, &flag);
    tag_ub = flag && ub ? *static_cast<int*>(ub) : 32767;
    shells = new std::unordered_map<std::uint64_t, Shell*>();
    running = new std::vector<Shell*>();
    free_tags = new std::vector<int>();
    int keyval = MPI_KEYVAL_INVALID;
    if (PMPI_Comm_create_keyval(MPI_COMM_NULL_COPY_FN, at_finalize, &keyval, nullptr) ==
        MPI_SUCCESS)
      PMPI_Comm_set_attr(MPI_COMM_SELF, keyval, nullptr);
  }
  if (!free_tags->empty()) {
    *tag = free_tags->back();
    free_tags->pop_back();
    return MPI_SUCCESS;
  }
  // More live shells than tags (at least 32767): refused, as a request the MPI library could
  // not make.
  if (next_tag > tag_ub) return MPI_ERR_INTERN;
  *tag = next_tag++;
  return MPI_SUCCESS;
}

// With mu held: the table no longer knows s by its handle.
void forget(Shell* s) {
  auto it = shells->find(key(s->handle));
  if (it != shells->end() && it->second == s) shells->erase(it);
}

// With mu held: s is gone for good.
void drop(Shell* s) {
  forget(s);
  if (s->tag >= 0) free_tags->push_back(s->tag);
  delete s;
  live.fetch_sub(1, std::memory_order_release);
}

// With mu held: the library request of s is done (error: its code). Its shell completes; a
// shell the user freed meanwhile goes with its request.
void done(Shell* s, int error) {
  s->error = error;
  s->running = false;
  for (auto it = running->begin(); it != running->end(); ++it)
    if (*it == s) {
      running->erase(it);
      break;
    }
  busy.fetch_sub(1, std::memory_order_release);
  // Matches the shell's posted receive (never sent before it is posted): completes at once.
  PMPI_Send(nullptr, 0, MPI_BYTE, 0, s->tag, self);
  if (s->freed) {
    // The user freed the shell while it was active; the MPI library still holds it (see
    // MPI_Request_free): completed and freed now.
    PMPI_Wait(&s->handle, MPI_STATUS_IGNORE);
    if (s->handle != MPI_REQUEST_NULL) PMPI_Request_free(&s->handle);
    Inside in;
    if (s->op != MPIX_REQUEST_NULL) MPIX_Request_free(&s->op);
    drop(s);
  }
}

// With mu held: starts to watch s's running library request.
void watch(Shell* s) {
  s->running = true;
  s->active = true;
  running->push_back(s);
  busy.fetch_add(1, std::memory_order_release);
}

thread_local bool driving = false;

// One progress pass of the library, and the shells of the finished requests completed. Another
// thread driving already: nothing (it does the same).
void drive() {
  if (busy.load(std::memory_order_acquire) == 0 || driving) return;
  std::unique_lock<std::mutex> lock(mu, std::try_to_lock);
  if (!lock.owns_lock()) return;
  driving = true;
  Inside in;
  mpia_private_progress();
  for (std::size_t i = 0; i < running->size();) {
    Shell* s = (*running)[i];
    if (s->claimed || mpia_private_request_running(s->op)) {
      ++i;
      continue;
    }
    if (s->report_later) {
      s->report_later = false;
      report_call(s->coll, s->ranks, s->op, s->bytes, 0.0);
    }
    int flag = 0;
    const int rc = MPIX_Test(&s->op, &flag, MPI_STATUS_IGNORE);
    if (rc == MPI_SUCCESS && !flag) {
      ++i;
      continue;
    }
    done(s, rc);  // erases s from running: i now indexes the next one
  }
  driving = false;
}

// MPIX_REPORT: the MPI library's own persistent requests of the preload's calls, reported at
// each start (report_library_request). Read without the mutex: any at all.
struct LibraryRequest {
  int coll = 0, ranks = 0;
  double bytes = 0;
};
std::unordered_map<std::uint64_t, LibraryRequest>* library_requests;  // under mu
std::atomic<long> library_live{0};

// A start of request, reported if it is one of those.
void report_if_library(MPI_Request request) {
  if (library_live.load(std::memory_order_acquire) == 0 || request == MPI_REQUEST_NULL) return;
  LibraryRequest found;
  {
    std::lock_guard<std::mutex> lock(mu);
    auto it = library_requests->find(key(request));
    if (it == library_requests->end()) return;
    found = it->second;
  }
  report_start(found.coll, found.ranks, MPIX_REQUEST_NULL, found.bytes);
}

// Whether request calls must look for shells at all.
bool plain() { return live.load(std::memory_order_acquire) == 0 || depth > 0 || driving; }

// A request call's table of shells (classify), kept per thread so that a call allocates nothing
// once it has seen its largest array (request calls do not nest on a thread: see plain()).
thread_local std::vector<Shell*> scratch;

// The shells among n requests (null where not one), and whether there is any.
bool classify(int n, const MPI_Request* reqs, std::vector<Shell*>& out) {
  out.assign(std::size_t(n > 0 ? n : 0), nullptr);
  bool any = false;
  std::lock_guard<std::mutex> lock(mu);
  if (!shells) return false;
  for (int i = 0; i < n; ++i) {
    if (reqs[i] == MPI_REQUEST_NULL) continue;
    auto it = shells->find(key(reqs[i]));
    if (it != shells->end()) {
      out[std::size_t(i)] = it->second;
      any = true;
    }
  }
  return any;
}

Shell* find(MPI_Request r) {
  if (r == MPI_REQUEST_NULL) return nullptr;
  std::lock_guard<std::mutex> lock(mu);
  if (!shells) return nullptr;
  auto it = shells->find(key(r));
  return it == shells->end() ? nullptr : it->second;
}

// The MPI library completed shell s for the user (status: its status, or null; slot: the
// user's handle of it), which is now inactive. A persistent call's stays so; a nonblocking
// call's pair goes, and the user's handle becomes MPI_REQUEST_NULL. The status is a
// collective's: no source, no tag, nothing received. Returns the library request's error.
int finish(Shell* s, MPI_Status* status, MPI_Request* slot) {
  if (status) {
    status->MPI_SOURCE = MPI_ANY_SOURCE;
    status->MPI_TAG = MPI_ANY_TAG;
  }
  std::lock_guard<std::mutex> lock(mu);
  const int error = s->error;
  s->error = MPI_SUCCESS;
  s->active = false;
  if (!s->persistent) {
    MPI_Request handle = s->handle;
    drop(s);  // out of the table before the MPI library may reuse the handle
    PMPI_Request_free(&handle);
    *slot = MPI_REQUEST_NULL;
  }
  return error;
}

// The polling loop of the waits: drive, then MPI's test of the same requests, until it says so.
template <class Test>
int poll(Test&& test) {
  for (;;) {
    drive();
    int flag = 0;
    const int rc = test(&flag);
    if (rc != MPI_SUCCESS || flag) return rc;
    std::this_thread::yield();
  }
}

// The completion of several requests (requests), some of them shells (sh): their errors go to
// the statuses (MPI_ERR_IN_STATUS) or, without statuses, are returned as they are. When the MPI
// library's call itself failed (another request's error), the shells it completed are those
// whose statuses say so; without statuses none is known, and each is left to a later call,
// which finds it complete at once.
int finish_some(int rc, int count, const int* indices, MPI_Request requests[],
                const std::vector<Shell*>& sh, MPI_Status statuses[]) {
  const bool ignore = statuses == MPI_STATUSES_IGNORE;
  if (rc != MPI_SUCCESS) {
    int cls = MPI_SUCCESS;
    if (ignore || PMPI_Error_class(rc, &cls) != MPI_SUCCESS || cls != MPI_ERR_IN_STATUS) return rc;
  }
  int first = MPI_SUCCESS;
  std::vector<int> errors;
  for (int k = 0; k < count; ++k) {
    const int i = indices ? indices[k] : k;
    if (i < 0 || !sh[std::size_t(i)]) continue;
    if (rc != MPI_SUCCESS && statuses[k].MPI_ERROR != MPI_SUCCESS) continue;
    const int e = finish(sh[std::size_t(i)], ignore ? nullptr : &statuses[k], &requests[i]);
    if (e != MPI_SUCCESS && rc != MPI_SUCCESS) {
      statuses[k].MPI_ERROR = e;  // the MPI library's call reports in the statuses already
    } else if (e != MPI_SUCCESS) {
      if (first == MPI_SUCCESS) first = e;
      if (!ignore) {
        if (errors.empty()) errors.assign(std::size_t(count), MPI_SUCCESS);
        errors[std::size_t(k)] = e;
      }
    }
  }
  if (rc != MPI_SUCCESS || first == MPI_SUCCESS) return rc;
  if (ignore) return first;
  for (int k = 0; k < count; ++k) statuses[k].MPI_ERROR = errors[std::size_t(k)];
  return MPI_ERR_IN_STATUS;
}

int at_finalize(MPI_Comm, int, void*, void*) {
  while (busy.load(std::memory_order_acquire) > 0) {
    drive();
    std::this_thread::yield();
  }
  return MPI_SUCCESS;
}

}  // namespace

void report_library_request(MPI_Request request, int coll, int ranks, double bytes) {
  std::lock_guard<std::mutex> lock(mu);
  if (!library_requests) library_requests = new std::unordered_map<std::uint64_t, LibraryRequest>();
  LibraryRequest& r = (*library_requests)[key(request)];
  if (r.ranks == 0) library_live.fetch_add(1, std::memory_order_release);
  r = LibraryRequest{coll, ranks, bytes};
}

int make_shell(MPIX_Request op, bool persistent, MPI_Comm comm, int coll, double bytes,
               bool report_later, MPI_Request* request) {
  auto* s = new Shell;
  s->op = op;
  s->comm = comm;
  PMPI_Comm_size(comm, &s->ranks);
  s->coll = coll;
  s->bytes = bytes;
  s->persistent = persistent;
  s->report_later = report_later;
  std::lock_guard<std::mutex> lock(mu);
  int rc = take_tag(&s->tag);
  if (rc == MPI_SUCCESS) rc = PMPI_Recv_init(nullptr, 0, MPI_BYTE, 0, s->tag, self, &s->handle);
  if (rc == MPI_SUCCESS && !persistent) {
    rc = PMPI_Start(&s->handle);
    if (rc != MPI_SUCCESS) PMPI_Request_free(&s->handle);
  }
  if (rc != MPI_SUCCESS) {
    // Not expected. The library request is complete (nonblocking: waited for) and freed.
    Inside in;
    if (!persistent) MPIX_Wait(&s->op, MPI_STATUS_IGNORE);
    if (s->op != MPIX_REQUEST_NULL) MPIX_Request_free(&s->op);
    if (s->tag >= 0) free_tags->push_back(s->tag);
    delete s;
    *request = MPI_REQUEST_NULL;
    return PMPI_Comm_call_errhandler(comm, MPI_ERR_INTERN), MPI_ERR_INTERN;
  }
  (*shells)[key(s->handle)] = s;
  live.fetch_add(1, std::memory_order_release);
  if (!persistent) watch(s);
  *request = s->handle;
  return MPI_SUCCESS;
}

}  // namespace mpia_preload

using namespace mpia_preload;

#define MPIA_PRELOAD_EXPORT __attribute__((visibility("default")))

extern "C" {

MPIA_PRELOAD_EXPORT int MPI_Wait(MPI_Request* request, MPI_Status* status) {
  if (plain() || !request) return PMPI_Wait(request, status);
  Shell* s = find(*request);
  if (!s && busy.load(std::memory_order_acquire) == 0) return PMPI_Wait(request, status);
  if (s) {
    // Alone: wait in the library (it drives every library request, and lets MPI block when it
    // is the only one).
    bool claimed = false;
    {
      std::lock_guard<std::mutex> lock(mu);
      // (A call still to be reported is completed by drive(), which reports it first.)
      if (s->running && !s->claimed && !s->report_later) s->claimed = claimed = true;
    }
    if (claimed) {
      int rc;
      {
        Inside in;
        driving = true;
        rc = MPIX_Wait(&s->op, MPI_STATUS_IGNORE);
        driving = false;
      }
      std::lock_guard<std::mutex> lock(mu);
      s->claimed = false;
      done(s, rc);
    }
  }
  const int rc = poll([&](int* flag) { return PMPI_Test(request, flag, status); });
  if (!s || rc != MPI_SUCCESS) return rc;
  return finish(s, status == MPI_STATUS_IGNORE ? nullptr : status, request);
}

MPIA_PRELOAD_EXPORT int MPI_Test(MPI_Request* request, int* flag, MPI_Status* status) {
  if (plain() || !request) return PMPI_Test(request, flag, status);
  drive();
  Shell* s = find(*request);
  const int rc = PMPI_Test(request, flag, status);
  if (!s || rc != MPI_SUCCESS || !*flag) return rc;
  return finish(s, status == MPI_STATUS_IGNORE ? nullptr : status, request);
}

MPIA_PRELOAD_EXPORT int MPI_Waitall(int count, MPI_Request requests[], MPI_Status statuses[]) {
  if (plain() || count <= 0 || !requests) return PMPI_Waitall(count, requests, statuses);
  std::vector<Shell*>& sh = scratch;
  const bool any = classify(count, requests, sh);
  if (!any && busy.load(std::memory_order_acquire) == 0)
    return PMPI_Waitall(count, requests, statuses);
  const int rc = poll([&](int* flag) { return PMPI_Testall(count, requests, flag, statuses); });
  return any ? finish_some(rc, count, nullptr, requests, sh, statuses) : rc;
}

MPIA_PRELOAD_EXPORT int MPI_Testall(int count, MPI_Request requests[], int* flag,
                                    MPI_Status statuses[]) {
  if (plain() || count <= 0 || !requests) return PMPI_Testall(count, requests, flag, statuses);
  drive();
  std::vector<Shell*>& sh = scratch;
  const bool any = classify(count, requests, sh);
  const int rc = PMPI_Testall(count, requests, flag, statuses);
  if (!any || !*flag) return rc;
  return finish_some(rc, count, nullptr, requests, sh, statuses);
}

MPIA_PRELOAD_EXPORT int MPI_Waitany(int count, MPI_Request requests[], int* index,
                                    MPI_Status* status) {
  if (plain() || count <= 0 || !requests) return PMPI_Waitany(count, requests, index, status);
  std::vector<Shell*>& sh = scratch;
  const bool any = classify(count, requests, sh);
  if (!any && busy.load(std::memory_order_acquire) == 0)
    return PMPI_Waitany(count, requests, index, status);
  const int rc =
      poll([&](int* flag) { return PMPI_Testany(count, requests, index, flag, status); });
  if (rc != MPI_SUCCESS || *index == MPI_UNDEFINED || !sh[std::size_t(*index)]) return rc;
  return finish(sh[std::size_t(*index)], status == MPI_STATUS_IGNORE ? nullptr : status,
                &requests[*index]);
}

MPIA_PRELOAD_EXPORT int MPI_Testany(int count, MPI_Request requests[], int* index, int* flag,
                                    MPI_Status* status) {
  if (plain() || count <= 0 || !requests) return PMPI_Testany(count, requests, index, flag, status);
  drive();
  std::vector<Shell*>& sh = scratch;
  const bool any = classify(count, requests, sh);
  const int rc = PMPI_Testany(count, requests, index, flag, status);
  if (!any || rc != MPI_SUCCESS || !*flag || *index == MPI_UNDEFINED || !sh[std::size_t(*index)])
    return rc;
  return finish(sh[std::size_t(*index)], status == MPI_STATUS_IGNORE ? nullptr : status,
                &requests[*index]);
}

MPIA_PRELOAD_EXPORT int MPI_Waitsome(int incount, MPI_Request requests[], int* outcount,
                                     int indices[], MPI_Status statuses[]) {
  if (plain() || incount <= 0 || !requests)
    return PMPI_Waitsome(incount, requests, outcount, indices, statuses);
  std::vector<Shell*>& sh = scratch;
  const bool any = classify(incount, requests, sh);
  if (!any && busy.load(std::memory_order_acquire) == 0)
    return PMPI_Waitsome(incount, requests, outcount, indices, statuses);
  const int rc = poll([&](int* flag) {
    const int r = PMPI_Testsome(incount, requests, outcount, indices, statuses);
    *flag = *outcount != 0;  // MPI_UNDEFINED (nothing active) ends the wait too
    return r;
  });
  if (!any || *outcount == MPI_UNDEFINED) return rc;
  return finish_some(rc, *outcount, indices, requests, sh, statuses);
}

MPIA_PRELOAD_EXPORT int MPI_Testsome(int incount, MPI_Request requests[], int* outcount,
                                     int indices[], MPI_Status statuses[]) {
  if (plain() || incount <= 0 || !requests)
    return PMPI_Testsome(incount, requests, outcount, indices, statuses);
  drive();
  std::vector<Shell*>& sh = scratch;
  const bool any = classify(incount, requests, sh);
  const int rc = PMPI_Testsome(incount, requests, outcount, indices, statuses);
  if (!any || *outcount == MPI_UNDEFINED || *outcount == 0) return rc;
  return finish_some(rc, *outcount, indices, requests, sh, statuses);
}

MPIA_PRELOAD_EXPORT int MPI_Request_get_status(MPI_Request request, int* flag, MPI_Status* status) {
  if (plain()) return PMPI_Request_get_status(request, flag, status);
  drive();
  const int rc = PMPI_Request_get_status(request, flag, status);
  if (rc == MPI_SUCCESS && *flag && status != MPI_STATUS_IGNORE && find(request)) {
    status->MPI_SOURCE = MPI_ANY_SOURCE;
    status->MPI_TAG = MPI_ANY_TAG;
  }
  return rc;
}

MPIA_PRELOAD_EXPORT int MPI_Start(MPI_Request* request) {
  if (request && library_live.load(std::memory_order_acquire) > 0 && depth == 0)
    report_if_library(*request);
  if (plain() || !request) return PMPI_Start(request);
  Shell* s = find(*request);
  if (!s) return PMPI_Start(request);
  std::lock_guard<std::mutex> lock(mu);
  if (!s->persistent || s->active) {
    PMPI_Comm_call_errhandler(s->comm, MPI_ERR_REQUEST);
    return MPI_ERR_REQUEST;
  }
  int rc = PMPI_Start(&s->handle);  // posts the shell's receive
  if (rc != MPI_SUCCESS) return rc;
  {
    Inside in;
    rc = MPIX_Start(&s->op);
  }
  watch(s);
  // Not started (the library raised the error): the shell completes with it at once.
  if (rc != MPI_SUCCESS) done(s, rc);
  report_start(s->coll, s->ranks, s->op, s->bytes);
  return rc;
}

MPIA_PRELOAD_EXPORT int MPI_Startall(int count, MPI_Request requests[]) {
  if (requests && library_live.load(std::memory_order_acquire) > 0 && depth == 0)
    for (int i = 0; i < count; ++i) report_if_library(requests[i]);
  if (plain() || count <= 0 || !requests) return PMPI_Startall(count, requests);
  std::vector<Shell*>& sh = scratch;
  if (!classify(count, requests, sh)) return PMPI_Startall(count, requests);
  std::lock_guard<std::mutex> lock(mu);
  for (Shell* s : sh)
    if (s && (!s->persistent || s->active)) {
      PMPI_Comm_call_errhandler(s->comm, MPI_ERR_REQUEST);
      return MPI_ERR_REQUEST;
    }
  // The MPI library starts every request, the shells' receives with them; then the library's.
  int rc = PMPI_Startall(count, requests);
  if (rc != MPI_SUCCESS) return rc;
  for (Shell* s : sh) {
    if (!s) continue;
    int r;
    {
      Inside in;
      r = MPIX_Start(&s->op);
    }
    watch(s);
    if (r != MPI_SUCCESS) {
      done(s, r);
      if (rc == MPI_SUCCESS) rc = r;
    }
    report_start(s->coll, s->ranks, s->op, s->bytes);
  }
  return rc;
}

MPIA_PRELOAD_EXPORT int MPI_Request_free(MPI_Request* request) {
  if (request && library_live.load(std::memory_order_acquire) > 0 && depth == 0) {
    std::lock_guard<std::mutex> lock(mu);
    if (library_requests->erase(key(*request)) > 0)
      library_live.fetch_sub(1, std::memory_order_release);
  }
  if (plain() || !request) return PMPI_Request_free(request);
  Shell* s = find(*request);
  if (!s) return PMPI_Request_free(request);
  std::lock_guard<std::mutex> lock(mu);
  if (s->running) {
    // The user's handle goes now, but the shell stays with the MPI library, posted, until its
    // request is done: done() sends its message, completes and frees it, and drops the pair
    // (drive, or at finalize). Freeing an active receive in the MPI library instead and
    // sending to it later is not safe: MPICH (ch4) then no longer matches it, and the send
    // to self never completes.
    forget(s);
    s->freed = true;
    *request = MPI_REQUEST_NULL;
    return MPI_SUCCESS;
  }
  // Inactive (persistent), or one whose request is done but which is not yet completed for the
  // user: its message is sent, its receive completes at once.
  PMPI_Wait(request, MPI_STATUS_IGNORE);
  const int rc = PMPI_Request_free(request);
  if (rc != MPI_SUCCESS) return rc;
  Inside in;
  if (s->op != MPIX_REQUEST_NULL) MPIX_Request_free(&s->op);
  drop(s);  // (s->handle is still the freed handle: its table entry goes)
  return MPI_SUCCESS;
}

MPIA_PRELOAD_EXPORT int MPI_Cancel(MPI_Request* request) {
  if (plain() || !request) return PMPI_Cancel(request);
  Shell* s = find(*request);
  if (!s) return PMPI_Cancel(request);
  return PMPI_Comm_call_errhandler(s->comm, MPI_ERR_REQUEST), MPI_ERR_REQUEST;
}

}  // extern "C"
