// The running operations of the process and who drives them: Wait/Test, the library's own
// waits, and the optional progress thread.
#include "operation/operation.hpp"
#include "operation/settings.hpp"

#include <condition_variable>
#include <cstdio>
#include <mutex>
#include <thread>

namespace mpia {

// The list of running operations: intrusive, doubly linked, guarded by one lock. A pass over
// it takes the head, moves it to the tail and tries its owner lock while holding the list
// lock, then drives it without: so no thread ever holds a pointer to an operation it neither
// owns nor reaches through the locked list, and an operation is freed only after its owner has
// seen it complete under its own lock. Lock order: owner lock, then list lock (the pass only
// ever try-locks an owner while holding the list lock). The counts are written with the list
// lock held and may be read without it: a snapshot, as good as one read under the lock, which
// the reader would have released before acting on it anyway.
struct ProgressList {
  SpinLock lock;
  Operation* head = nullptr;
  Operation* tail = nullptr;
  std::atomic<std::size_t> count{0};
  std::atomic<std::size_t> threaded{0};  // of them, those the progress thread drives
  // The progress thread sleeps on wake while no threaded operation runs (a condition variable
  // needs a std::mutex: sleep guards nothing else).
  std::mutex sleep;
  std::condition_variable wake;

  // The list alone: the counts are kept by link and unlink, never by the moves of a pass, so
  // that a reader never sees a running operation missing from them (the progress thread, seeing
  // no threaded operation, would sleep with one running; Wait would think itself alone).
  void append(Operation* op) {
    op->prev_ = tail;
    op->next_ = nullptr;
    if (tail)
      tail->next_ = op;
    else
      head = op;
    tail = op;
  }
  void detach(Operation* op) {
    if (op->prev_)
      op->prev_->next_ = op->next_;
    else
      head = op->next_;
    if (op->next_)
      op->next_->prev_ = op->prev_;
    else
      tail = op->prev_;
    op->prev_ = op->next_ = nullptr;
  }
  void link(Operation* op) {
    {
      std::lock_guard<SpinLock> guard(lock);
      append(op);
      op->linked_ = true;
      count.fetch_add(1, std::memory_order_release);
      if (op->threaded) threaded.fetch_add(1, std::memory_order_release);
    }
    if (op->threaded) {  // the sleeper checks threaded with sleep held: no lost wake-up
      std::lock_guard<std::mutex> guard(sleep);
      wake.notify_one();
    }
  }
  void unlink(Operation* op) {
    std::lock_guard<SpinLock> guard(lock);
    if (!op->linked_) return;
    detach(op);
    op->linked_ = false;
    count.fetch_sub(1, std::memory_order_release);
    if (op->threaded) threaded.fetch_sub(1, std::memory_order_release);
  }
  // Whether op is the only running operation. op must be running, and its owner lock held by
  // the caller (then it is linked, and stays so).
  bool only(const Operation* /*op*/) const { return count.load(std::memory_order_acquire) == 1; }
  // One pass: every operation running at its start is offered once (with threaded_only, only
  // the threaded ones are driven).
  bool pass(bool threaded_only = false) {
    const std::size_t n = count.load(std::memory_order_acquire);
    bool any = false;
    for (std::size_t i = 0; i < n; ++i) {
      Operation* op;
      {
        std::lock_guard<SpinLock> guard(lock);
        op = head;
        if (!op) break;
        if (op != tail) {  // rotate: the next pass, or another thread, starts elsewhere
          detach(op);
          append(op);
        }
        if (threaded_only && !op->threaded) continue;
        if (!op->owner_.try_lock()) continue;
      }
      if (op->running_.load(std::memory_order_relaxed)) op->drive(false);
      op->owner_.unlock();
      any = true;
    }
    return any;
  }
};

namespace {
ProgressList g_list;
}  // namespace

// --- Operation ----------------------------------------------------------------------------

Operation::~Operation() { g_list.unlink(this); }

Memory Operation::memory() const {
  Memory m;
  m.bytes = sizeof(*this);
  return m;
}

bool Operation::drive(bool block) {
  bool done;
  try {
    done = do_progress(block);
  } catch (const Error& e) {  // not expected: executions record their errors
    errors_.note(e);
    done = true;
  } catch (...) {
    errors_.note(MPI_ERR_INTERN, "progress");
    done = true;
  }
  if (done) {
    g_list.unlink(this);
    running_.store(false, std::memory_order_release);
  }
  return done;
}

bool Operation::start_part(Operation& part) {
  part.errors_.clear();
  bool done;
  try {
    done = part.do_start();
  } catch (const Error& e) {
    part.errors_.note(e);
    done = true;
  }
  if (done && part.errors_) errors_.note(Error(part.errors_.code, part.errors_.what));
  return done;
}

bool Operation::progress_part(Operation& part, bool block) {
  bool done;
  try {
    done = part.do_progress(block);
  } catch (const Error& e) {
    part.errors_.note(e);
    done = true;
  }
  if (done && part.errors_) errors_.note(Error(part.errors_.code, part.errors_.what));
  return done;
}

void Operation::start() {
  std::lock_guard<SpinLock> lock(owner_);
  if (active_.load(std::memory_order_relaxed))
    fail(MPI_ERR_REQUEST, "mpi-advance: MPIX_Start on an active request");
  errors_.clear();
  active_.store(true, std::memory_order_release);
  bool done;
  try {
    done = do_start();
  } catch (const Error& e) {
    errors_.note(e);
    done = true;
  }
  if (done) return;  // nothing to wait for (or nothing could be posted): Wait reports
  running_.store(true, std::memory_order_release);
  g_list.link(this);
}

void Operation::wait() {
  if (!active()) return;
  for (;;) {
    bool done = false;
    if (owner_.try_lock()) {
      done = !running_.load(std::memory_order_acquire);
      // Alone, and nothing else to drive: let MPI block (and yield) in its own waits.
      if (!done) done = drive(g_list.only(this));
      owner_.unlock();
    }
    if (done) break;
    if (!g_list.pass()) std::this_thread::yield();
  }
  active_.store(false, std::memory_order_release);
  if (errors_) errors_.raise();
}

void Operation::run() {
  std::lock_guard<SpinLock> lock(owner_);
  if (active_.load(std::memory_order_relaxed))
    fail(MPI_ERR_REQUEST, "mpi-advance: a blocking call's plan is active");
  errors_.clear();
  bool done;
  try {
    done = !any_running() && do_run();
    if (!done) done = do_start();
    while (!done) {
      done = do_progress(!any_running());
      if (!done && !g_list.pass()) std::this_thread::yield();
    }
  } catch (const Error& e) {  // not expected: executions record their errors
    errors_.note(e);
  }
  if (errors_) errors_.raise();
}

bool Operation::test() {
  if (!active()) return true;
  bool done = false;
  g_list.pass();
  if (owner_.try_lock()) {
    done = !running_.load(std::memory_order_acquire);
    owner_.unlock();
  }
  if (!done) return false;
  active_.store(false, std::memory_order_release);
  if (errors_) errors_.raise();
  return true;
}

// --- The library's own waits ----------------------------------------------------------------

bool progress_running() { return g_list.pass(); }

bool any_running() { return g_list.count.load(std::memory_order_acquire) > 0; }

void complete(MPI_Request& request, const char* what) {
  MPI_Status status;
  for (;;) {
    if (!any_running()) {
      const int rc = PMPI_Wait(&request, &status);
      if (rc != MPI_SUCCESS) check(rc, what);
      return;
    }
    int flag = 0;
    check(PMPI_Test(&request, &flag, &status), what);
    if (flag) return;
    if (!g_list.pass()) std::this_thread::yield();
  }
}

// --- The progress thread ------------------------------------------------------------------

namespace {

std::mutex g_thread_mutex;  // starting and stopping
std::thread g_thread;
std::atomic<bool> g_thread_running{false};
std::atomic<bool> g_thread_stop{false};

void progress_loop() {
  while (!g_thread_stop.load(std::memory_order_acquire)) {
    {
      std::unique_lock<std::mutex> lock(g_list.sleep);
      g_list.wake.wait(lock, [] {
        return g_thread_stop.load(std::memory_order_acquire) ||
               g_list.threaded.load(std::memory_order_acquire) > 0;
      });
    }
    if (!g_list.pass(true)) std::this_thread::yield();
  }
}

}  // namespace

bool progress_thread_running() { return g_thread_running.load(std::memory_order_acquire); }

bool start_progress_thread() {
  if (progress_thread_running()) return true;
  std::lock_guard<std::mutex> lock(g_thread_mutex);
  if (progress_thread_running()) return true;
  int level = MPI_THREAD_SINGLE;
  MPIA_CHECK(MPI_Query_thread(&level));
  if (level < MPI_THREAD_MULTIPLE) {
    static bool said = false;
    if (!said)
      std::fprintf(stderr,
                   "mpi-advance: a progress thread needs MPI_THREAD_MULTIPLE (MPI provides "
                   "less): none is started; requests progress inside library calls only\n");
    said = true;
    return false;
  }
  g_thread_stop.store(false);
  g_thread = std::thread(progress_loop);
  g_thread_running.store(true, std::memory_order_release);
  return true;
}

void stop_progress_thread() {
  std::lock_guard<std::mutex> lock(g_thread_mutex);
  if (!progress_thread_running()) return;
  {
    std::lock_guard<std::mutex> sleep_lock(g_list.sleep);
    g_thread_stop.store(true, std::memory_order_release);
    g_list.wake.notify_all();
  }
  g_thread.join();
  g_thread_running.store(false, std::memory_order_release);
}

}  // namespace mpia
