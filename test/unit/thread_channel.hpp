// An in-process SizeChannel for the unit tests: the init-time exchange hooks (AlgorithmSpec::
// learn_*) of P ranks run as P threads that talk through one Mailbox.
#pragma once

#include "collective/exchange.hpp"

#include <algorithm>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <exception>
#include <functional>
#include <mutex>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

namespace mpia {

// The messages of an init-time size exchange among P ranks run as threads: sends are buffered
// at once (so no order of posting can deadlock), receives are completed in posting order.
class Mailbox {
 public:
  explicit Mailbox(int P) : P_(P), queues_(std::size_t(P) * P), wake_(std::size_t(P)) {}
  void put(int from, int to, std::vector<std::int64_t> data) {
    {
      std::lock_guard<std::mutex> lock(mu_);
      queues_[key(from, to)].push_back(std::move(data));
    }
    wake_[std::size_t(to)].notify_one();  // only `to` ever waits on it
  }
  std::vector<std::int64_t> take(int from, int to) {
    std::unique_lock<std::mutex> lock(mu_);
    auto& q = queues_[key(from, to)];
    wake_[std::size_t(to)].wait(lock, [&] { return !q.empty() || failed_; });
    if (q.empty()) throw std::runtime_error("another rank failed");
    std::vector<std::int64_t> v = std::move(q.front());
    q.pop_front();
    return v;
  }
  void fail() {
    {
      std::lock_guard<std::mutex> lock(mu_);
      failed_ = true;
    }
    for (auto& cv : wake_) cv.notify_all();
  }
  bool drained() {
    std::lock_guard<std::mutex> lock(mu_);
    for (auto& q : queues_)
      if (!q.empty()) return false;
    return true;
  }

 private:
  std::size_t key(int from, int to) const { return std::size_t(from) * std::size_t(P_) + to; }
  int P_;
  std::mutex mu_;
  std::vector<std::deque<std::vector<std::int64_t>>> queues_;
  std::vector<std::condition_variable> wake_;
  bool failed_ = false;
};

class ThreadChannel final : public SizeChannel {
 public:
  ThreadChannel(Mailbox& box, int me) : box_(box), me_(me) {}
  void post_recv(int peer, std::int64_t* data, int n) override {
    recvs_.push_back({peer, data, n});
  }
  void post_send(int peer, const std::int64_t* data, int n) override {
    box_.put(me_, peer, std::vector<std::int64_t>(data, data + n));
  }
  void wait_all() override {
    for (const Recv& r : recvs_) {
      const std::vector<std::int64_t> v = box_.take(r.peer, me_);
      if (int(v.size()) != r.n)
        throw std::runtime_error("rank " + std::to_string(me_) + ": " + std::to_string(v.size()) +
                                 " values from " + std::to_string(r.peer) + ", expected " +
                                 std::to_string(r.n));
      std::copy(v.begin(), v.end(), r.data);
    }
    recvs_.clear();
  }

 private:
  struct Recv {
    int peer;
    std::int64_t* data;
    int n;
  };
  Mailbox& box_;
  int me_;
  std::vector<Recv> recvs_;
};

// Runs body(rank, channel) for every rank of P at once, one thread each; returns the first
// rank's failure ("rank r: what"), or that a message was left unreceived, or "".
inline std::string run_threads(int P, const std::function<void(int, SizeChannel&)>& body) {
  Mailbox box(P);
  std::vector<std::string> errors(static_cast<std::size_t>(P));
  std::vector<std::thread> threads;
  for (int r = 0; r < P; ++r)
    threads.emplace_back([&, r] {
      try {
        ThreadChannel ch(box, r);
        body(r, ch);
      } catch (const std::exception& e) {
        errors[std::size_t(r)] = e.what();
        box.fail();
      }
    });
  for (std::thread& t : threads) t.join();
  for (int r = 0; r < P; ++r)
    if (!errors[std::size_t(r)].empty()) return "rank " + std::to_string(r) + ": " + errors[r];
  if (!box.drained()) return "a message of the size exchange was never received";
  return {};
}

}  // namespace mpia
