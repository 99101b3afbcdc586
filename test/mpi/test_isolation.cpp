// Isolation: the library's traffic never matches the user's receives on the same
// communicator; several requests (and blocking calls, and MPI's own collectives) can be in
// flight together on one communicator and completed in any order; sub-communicators work and
// a communicator can be freed after its requests.
#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <vector>

#include "test_support.hpp"

using namespace mpia_test;

namespace {

// One persistent all-to-all with its own layouts and guarded buffers.
class Exchange {
 public:
  Exchange(MPI_Comm comm, const std::string& spec, LayoutFactory sf, int scount, LayoutFactory rf,
           int rcount)
      : comm_(comm),
        spec_(spec),
        send_(sf()),
        recv_(rf()),
        me_(comm_rank(comm)),
        sbuf_(send_, scount, comm_size(comm), 0xC3),
        rbuf_(recv_, rcount, comm_size(comm), 0xA5) {
    MPI_Info info = MPI_INFO_NULL;
    if (!spec.empty()) {
      MPI_Info_create(&info);
      MPI_Info_set(info, MPIX_INFO_KEY_ALGORITHM, spec.c_str());
    }
    const int rc = MPIX_Alltoall_init(sbuf_.ptr(), scount, send_.type(), rbuf_.ptr(), rcount,
                                      recv_.type(), comm, info, &req_);
    if (info != MPI_INFO_NULL) MPI_Info_free(&info);
    EXPECT_EQ(rc, MPI_SUCCESS) << "init '" << spec << "': " << error_string(rc);
  }
  ~Exchange() {
    if (req_ != MPIX_REQUEST_NULL) {
      EXPECT_EQ(MPIX_Request_free(&req_), MPI_SUCCESS) << spec_;
    }
  }
  Exchange(const Exchange&) = delete;
  Exchange& operator=(const Exchange&) = delete;

  bool ok() const { return req_ != MPIX_REQUEST_NULL; }
  MPIX_Request& req() { return req_; }
  void prepare(int iter) {
    sbuf_.fill(me_, iter, true);
    rbuf_.poison(0x5A);
  }
  void check(int iter, const std::string& what) {
    rbuf_.check(me_, iter, false, what + " [algorithm '" + spec_ + "']");
  }
  const std::string& spec() const { return spec_; }

 private:
  MPI_Comm comm_;
  std::string spec_;
  Layout send_, recv_;
  int me_;
  Buffer sbuf_, rbuf_;
  MPIX_Request req_ = MPIX_REQUEST_NULL;
};

bool everywhere(MPI_Comm comm, bool local) {
  int in = local ? 1 : 0, out = 0;
  MPI_Allreduce(&in, &out, 1, MPI_INT, MPI_MIN, comm);
  return out != 0;
}

class Isolation : public ::testing::Test {
 protected:
  void SetUp() override {
    MPI_Comm_dup(MPI_COMM_WORLD, &comm_);
    me_ = comm_rank(comm_);
    nprocs_ = comm_size(comm_);
    algs_ = registered_algorithms();
    ASSERT_FALSE(algs_.empty());
  }
  void TearDown() override { MPI_Comm_free(&comm_); }

  MPI_Comm comm_ = MPI_COMM_NULL;
  int me_ = 0;
  int nprocs_ = 0;
  std::vector<std::string> algs_;
};

// A pending MPI_Irecv(MPI_ANY_SOURCE, MPI_ANY_TAG) on the same communicator must not match
// anything the library sends, in init, in the cycles or in the blocking call.
TEST_F(Isolation, PendingWildcardReceiveIsNotMatched) {
  const int stride = sample_stride(static_cast<long>(algs_.size()), 2.0);
  for (std::size_t a = 0; a < algs_.size(); ++a) {
    const std::string& spec = algs_[a];
    SCOPED_TRACE("algorithm " + spec);
    int user[4] = {-1, -1, -1, -1};
    MPI_Request ureq;
    MPI_Irecv(user, 4, MPI_INT, MPI_ANY_SOURCE, MPI_ANY_TAG, comm_, &ureq);
    int flag = 0;
    {
      Exchange ex(comm_, spec, layout_int, 3, layout_int, 3);
      MPI_Test(&ureq, &flag, MPI_STATUS_IGNORE);
      EXPECT_FALSE(flag) << "matched after MPIX_Alltoall_init";
      if (everywhere(MPI_COMM_WORLD, ex.ok())) {
        for (int i = 0; i < 2; ++i) {
          ex.prepare(100 + i);
          EXPECT_EQ(MPIX_Start(&ex.req()), MPI_SUCCESS);
          EXPECT_EQ(MPIX_Wait(&ex.req(), MPI_STATUS_IGNORE), MPI_SUCCESS);
          ex.check(100 + i, "cycle " + std::to_string(i));
          MPI_Test(&ureq, &flag, MPI_STATUS_IGNORE);
          EXPECT_FALSE(flag) << "matched after cycle " << i;
        }
      }
    }
    MPI_Test(&ureq, &flag, MPI_STATUS_IGNORE);
    EXPECT_FALSE(flag) << "matched after MPIX_Request_free";
    if (a % static_cast<std::size_t>(stride) == 0) {
      Layout lint = layout_int();
      run_blocking(comm_, spec, lint, 2, lint, 2, false);
      MPI_Test(&ureq, &flag, MPI_STATUS_IGNORE);
      EXPECT_FALSE(flag) << "matched after the blocking MPIX_Alltoall";
    }
    // Nobody sends before everybody has tested (the barrier is on another communicator).
    MPI_Barrier(MPI_COMM_WORLD);
    const int to = (me_ + 1) % nprocs_;
    const int from = (me_ + nprocs_ - 1) % nprocs_;
    const int tag = 4242 + static_cast<int>(a);
    int msg[4] = {me_, static_cast<int>(a), 77, 88};
    MPI_Request sreq;
    MPI_Isend(msg, 4, MPI_INT, to, tag, comm_, &sreq);
    MPI_Status st;
    MPI_Wait(&ureq, &st);
    MPI_Wait(&sreq, MPI_STATUS_IGNORE);
    if (!flag) {
      EXPECT_EQ(st.MPI_SOURCE, from);
      EXPECT_EQ(st.MPI_TAG, tag);
      EXPECT_EQ(user[0], from);
      EXPECT_EQ(user[1], static_cast<int>(a));
      EXPECT_EQ(user[2], 77);
      EXPECT_EQ(user[3], 88);
    }
  }
}

// Two requests on one communicator started together, completed in opposite orders on even
// and odd ranks.
TEST_F(Isolation, TwoRequestsCompletedInOppositeOrders) {
  const std::size_t n = algs_.size();
  const int stride = sample_stride(static_cast<long>(n) * 2, 4.0);
  for (std::size_t i = 0; i < n; ++i) {
    if (i % static_cast<std::size_t>(stride) != 0) continue;
    const std::string& spec_a = algs_[i];
    const std::string& spec_b = algs_[(i + 1) % n];
    SCOPED_TRACE("A = '" + spec_a + "', B = '" + spec_b + "'");
    Exchange a(comm_, spec_a, layout_int, 3, layout_int, 3);
    Exchange b(comm_, spec_b, layout_vector_gaps, 1, layout_int, 6);
    if (!everywhere(comm_, a.ok() && b.ok())) continue;
    for (int it = 0; it < 3; ++it) {
      a.prepare(200 + it);
      b.prepare(300 + it);
      if (it == 1) {
        MPIX_Request both[2] = {a.req(), b.req()};
        EXPECT_EQ(MPIX_Startall(2, both), MPI_SUCCESS);
        a.req() = both[0];
        b.req() = both[1];
      } else {
        EXPECT_EQ(MPIX_Start(&a.req()), MPI_SUCCESS);
        EXPECT_EQ(MPIX_Start(&b.req()), MPI_SUCCESS);
      }
      if (me_ % 2 == 0) {
        EXPECT_EQ(MPIX_Wait(&a.req(), MPI_STATUS_IGNORE), MPI_SUCCESS);
        a.check(200 + it, "A (waited first)");
        EXPECT_EQ(MPIX_Wait(&b.req(), MPI_STATUS_IGNORE), MPI_SUCCESS);
        b.check(300 + it, "B (waited second)");
      } else {
        EXPECT_EQ(MPIX_Wait(&b.req(), MPI_STATUS_IGNORE), MPI_SUCCESS);
        b.check(300 + it, "B (waited first)");
        EXPECT_EQ(MPIX_Wait(&a.req(), MPI_STATUS_IGNORE), MPI_SUCCESS);
        a.check(200 + it, "A (waited second)");
      }
    }
  }
}

// Every algorithm at once on one communicator: Startall, then Waitall (even ranks) or Wait in
// reverse order (odd ranks).
TEST_F(Isolation, AllAlgorithmsInFlightTogether) {
  std::vector<std::unique_ptr<Exchange>> ex;
  bool ok = true;
  for (std::size_t i = 0; i < algs_.size(); ++i) {
    if (i % 2 == 0) {
      ex.emplace_back(new Exchange(comm_, algs_[i], layout_int, 2, layout_int, 2));
    } else {
      ex.emplace_back(new Exchange(comm_, algs_[i], layout_struct_char_double, 2,
                                   layout_packed_char_double, 2));
    }
    ok = ok && ex.back()->ok();
  }
  ASSERT_TRUE(everywhere(comm_, ok));
  const int cycles = sample_stride(static_cast<long>(algs_.size()) * 2, 3.0) > 1 ? 1 : 2;
  for (int it = 0; it < cycles; ++it) {
    std::vector<MPIX_Request> reqs;
    for (std::size_t i = 0; i < ex.size(); ++i) {
      ex[i]->prepare(400 + 10 * it + static_cast<int>(i));
      reqs.push_back(ex[i]->req());
    }
    EXPECT_EQ(MPIX_Startall(static_cast<int>(reqs.size()), reqs.data()), MPI_SUCCESS);
    if (me_ % 2 == 0) {
      std::vector<MPI_Status> st(reqs.size());
      EXPECT_EQ(MPIX_Waitall(static_cast<int>(reqs.size()), reqs.data(), st.data()), MPI_SUCCESS);
    } else {
      for (std::size_t i = reqs.size(); i-- > 0;) {
        EXPECT_EQ(MPIX_Wait(&reqs[i], MPI_STATUS_IGNORE), MPI_SUCCESS);
      }
    }
    for (std::size_t i = 0; i < ex.size(); ++i) {
      EXPECT_EQ(reqs[i], ex[i]->req()) << "persistent handles must not change";
      ex[i]->check(400 + 10 * it + static_cast<int>(i), "cycle " + std::to_string(it));
    }
  }
}

// A blocking MPIX_Alltoall, and MPI's own collectives, while a persistent request is active
// on the same communicator.
TEST_F(Isolation, BlockingCallWhileRequestActive) {
  Layout lint = layout_int();
  const std::size_t n = algs_.size();
  const int stride = sample_stride(static_cast<long>(n) * 2, 3.0);
  for (std::size_t i = 0; i < n; ++i) {
    if ((i + 1) % static_cast<std::size_t>(stride) != 0 && stride > 1) continue;
    const std::string& active = algs_[i];
    const std::string& blocking = algs_[(i + n / 2) % n];
    SCOPED_TRACE("active '" + active + "', blocking '" + blocking + "'");
    Exchange ex(comm_, active, layout_resized_lb, 2, layout_resized_lb, 2);
    if (!everywhere(comm_, ex.ok())) continue;
    ex.prepare(500);
    EXPECT_EQ(MPIX_Start(&ex.req()), MPI_SUCCESS);
    run_blocking(comm_, blocking, lint, 3, lint, 3, false);
    int one = 1, sum = 0;
    MPI_Allreduce(&one, &sum, 1, MPI_INT, MPI_SUM, comm_);
    EXPECT_EQ(sum, nprocs_);
    EXPECT_EQ(MPIX_Wait(&ex.req(), MPI_STATUS_IGNORE), MPI_SUCCESS);
    ex.check(500, "active request");
  }
}

// A blocking MPIX_Alltoall repeated with the same arguments (the library runs its last plan at
// once) while a persistent request of a multi-round algorithm is active, and half the ranks
// wait for that request before their blocking calls: the blocking calls must drive the request
// meanwhile (MPI's progress rule), or the ranks waiting for it hang.
TEST_F(Isolation, RepeatedBlockingCallDrivesActiveRequest) {
  Layout lint = layout_int();
  Buffer sbuf(lint, 3, nprocs_, 0xC3);
  Buffer rbuf(lint, 3, nprocs_, 0xA5);
  for (const char* active : {"bruck", "pairwise"}) {
    SCOPED_TRACE(std::string("active '") + active + "'");
    Exchange ex(comm_, active, layout_int, 2, layout_int, 2);
    if (!everywhere(comm_, ex.ok())) continue;
    ScopedCommAlgorithm sel(comm_, "alltoall", "linear");
    auto blocking = [&](int iter) {
      sbuf.fill(me_, iter, true);
      rbuf.poison(0x5A);
      EXPECT_EQ(MPIX_Alltoall(sbuf.ptr(), 3, MPI_INT, rbuf.ptr(), 3, MPI_INT, comm_), MPI_SUCCESS);
      rbuf.check(me_, iter, false, "blocking call " + std::to_string(iter));
    };
    blocking(800);  // the plan the repeats run
    for (int cycle = 0; cycle < 3; ++cycle) {
      ex.prepare(810 + cycle);
      EXPECT_EQ(MPIX_Start(&ex.req()), MPI_SUCCESS);
      if (me_ % 2 == 1) EXPECT_EQ(MPIX_Wait(&ex.req(), MPI_STATUS_IGNORE), MPI_SUCCESS);
      for (int k = 0; k < 3; ++k) blocking(820 + 10 * cycle + k);
      if (me_ % 2 == 0) EXPECT_EQ(MPIX_Wait(&ex.req(), MPI_STATUS_IGNORE), MPI_SUCCESS);
      ex.check(810 + cycle, "active request, cycle " + std::to_string(cycle));
    }
  }
}

// Requests on two different communicators may be started in different orders on different
// ranks (legal for nonblocking collectives on distinct communicators).
TEST_F(Isolation, DifferentCommunicatorsStartedInDifferentOrders) {
  MPI_Comm other;
  MPI_Comm_dup(MPI_COMM_WORLD, &other);
  const std::size_t n = algs_.size();
  const int stride = sample_stride(static_cast<long>(n) * 2, 3.0);
  for (std::size_t i = 0; i < n; ++i) {
    if ((i + 2) % static_cast<std::size_t>(stride) != 0 && stride > 1) continue;
    SCOPED_TRACE("algorithms '" + algs_[i] + "' and '" + algs_[(i + 3) % n] + "'");
    Exchange a(comm_, algs_[i], layout_int, 2, layout_int, 2);
    Exchange b(other, algs_[(i + 3) % n], layout_double, 2, layout_double, 2);
    if (!everywhere(MPI_COMM_WORLD, a.ok() && b.ok())) continue;
    a.prepare(600);
    b.prepare(700);
    if (me_ % 2 == 0) {
      EXPECT_EQ(MPIX_Start(&a.req()), MPI_SUCCESS);
      EXPECT_EQ(MPIX_Start(&b.req()), MPI_SUCCESS);
    } else {
      EXPECT_EQ(MPIX_Start(&b.req()), MPI_SUCCESS);
      EXPECT_EQ(MPIX_Start(&a.req()), MPI_SUCCESS);
    }
    MPIX_Request reqs[2] = {a.req(), b.req()};
    EXPECT_EQ(MPIX_Waitall(2, reqs, MPI_STATUSES_IGNORE), MPI_SUCCESS);
    a.check(600, "A");
    b.check(700, "B");
  }
  MPI_Comm_free(&other);
}

// Sub-communicators (odd/even ranks, sub-rank order reversed), with a world request in flight
// at the same time; the communicators are split and freed (after their requests) repeatedly,
// so state cached per communicator must follow the communicator's life.
TEST_F(Isolation, SubCommunicators) {
  const std::size_t n = algs_.size();
  const int stride = sample_stride(static_cast<long>(n) * 3 * 2, 5.0);
  for (int round = 0; round < 3; ++round) {
    MPI_Comm sub;
    MPI_Comm_split(comm_, me_ % 2, round == 1 ? -me_ : me_, &sub);
    const int sub_size = comm_size(sub);
    for (std::size_t i = 0; i < n; ++i) {
      if ((i + static_cast<std::size_t>(round)) % static_cast<std::size_t>(stride) != 0) continue;
      const std::string& spec = algs_[i];
      SCOPED_TRACE("round " + std::to_string(round) + ", algorithm '" + spec +
                   "', sub-communicator of size " + std::to_string(sub_size));
      Exchange s(sub, spec, layout_vector_trailing, 3, layout_vector_trailing, 3);
      Exchange w(comm_, algs_[(i + 1) % n], layout_int, 1, layout_int, 1);
      if (!everywhere(MPI_COMM_WORLD, s.ok() && w.ok())) continue;
      for (int it = 0; it < 2; ++it) {
        s.prepare(800 + it);
        w.prepare(900 + it);
        EXPECT_EQ(MPIX_Start(&w.req()), MPI_SUCCESS);
        EXPECT_EQ(MPIX_Start(&s.req()), MPI_SUCCESS);
        EXPECT_EQ(MPIX_Wait(&s.req(), MPI_STATUS_IGNORE), MPI_SUCCESS);
        EXPECT_EQ(MPIX_Wait(&w.req(), MPI_STATUS_IGNORE), MPI_SUCCESS);
        s.check(800 + it, "sub-communicator");
        w.check(900 + it, "world");
      }
      if (i == 0) {
        // The blocking path on the sub-communicator too.
        Layout lint = layout_int();
        run_blocking(sub, spec, lint, 2, lint, 2, false);
      }
    }
    MPI_Comm_free(&sub);
  }
}

// Free the request, then the communicator, many times: handles get reused.
TEST_F(Isolation, CommunicatorFreedAfterRequest) {
  const std::size_t n = algs_.size();
  const int rounds = sample_stride(8, 2.0) > 1 ? 3 : 8;
  for (int round = 0; round < rounds; ++round) {
    MPI_Comm c;
    MPI_Comm_dup(MPI_COMM_WORLD, &c);
    const std::string& spec = algs_[static_cast<std::size_t>(round) % n];
    SCOPED_TRACE("round " + std::to_string(round) + ", algorithm '" + spec + "'");
    {
      Exchange ex(c, spec, layout_int, 2, layout_int, 2);
      if (everywhere(MPI_COMM_WORLD, ex.ok())) {
        ex.prepare(1000 + round);
        EXPECT_EQ(MPIX_Start(&ex.req()), MPI_SUCCESS);
        EXPECT_EQ(MPIX_Wait(&ex.req(), MPI_STATUS_IGNORE), MPI_SUCCESS);
        ex.check(1000 + round, "request on a fresh communicator");
      }
    }
    // A blocking call caches nothing that outlives the communicator either.
    Layout lint = layout_int();
    run_blocking(c, spec, lint, 1, lint, 1, false);
    MPI_Comm_free(&c);
  }
}

// The user may free the communicator while a request on it still exists (MPI_Comm_free only
// marks it for deallocation): the request keeps working and can be freed afterwards.
TEST_F(Isolation, CommunicatorFreedBeforeRequest) {
  const std::size_t n = algs_.size();
  const int stride = sample_stride(static_cast<long>(n), 3.0);
  for (std::size_t i = 0; i < n; ++i) {
    if (i % static_cast<std::size_t>(stride) != 0) continue;
    SCOPED_TRACE("algorithm '" + algs_[i] + "'");
    MPI_Comm c;
    MPI_Comm_dup(MPI_COMM_WORLD, &c);
    Exchange ex(c, algs_[i], layout_struct_char_double, 2, layout_struct_char_double, 2);
    MPI_Comm_free(&c);
    if (!everywhere(MPI_COMM_WORLD, ex.ok())) continue;
    for (int it = 0; it < 2; ++it) {
      ex.prepare(1100 + it);
      EXPECT_EQ(MPIX_Start(&ex.req()), MPI_SUCCESS);
      EXPECT_EQ(MPIX_Wait(&ex.req(), MPI_STATUS_IGNORE), MPI_SUCCESS);
      ex.check(1100 + it, "after MPI_Comm_free of its communicator");
    }
  }
}

// Requests created and freed without ever being started, then one that is started: nothing
// left behind by the unused ones may disturb it.
TEST_F(Isolation, RequestsFreedWithoutStart) {
  {
    std::vector<std::unique_ptr<Exchange>> unused;
    for (const std::string& spec : algs_) {
      unused.emplace_back(new Exchange(comm_, spec, layout_int, 1, layout_int, 1));
    }
  }
  Exchange ex(comm_, algs_[0], layout_int, 2, layout_int, 2);
  ASSERT_TRUE(everywhere(comm_, ex.ok()));
  ex.prepare(1200);
  EXPECT_EQ(MPIX_Start(&ex.req()), MPI_SUCCESS);
  EXPECT_EQ(MPIX_Wait(&ex.req(), MPI_STATUS_IGNORE), MPI_SUCCESS);
  ex.check(1200, "after unused requests");
}

}  // namespace
