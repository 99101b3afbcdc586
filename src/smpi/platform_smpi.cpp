// util/platform.hpp for SimGrid's SMPI (the SMPI component: built into the library only there,
// MPIA_SMPI). Starting one persistent request of a lowered schedule charges the per-message send
// overhead that SMPI forgets for persistent sends (and the receive overhead it charges to no
// receive without eager sends).
//
// SMPI (SimGrid 3.32) injects its send overhead into a rank's simulated time only for sends
// flagged "isend" (MPI_Isend, MPI_Issend, and the sends of its own MPI_Sendrecv, which every
// collective of SMPI's uses) or detached (eager) ones: the `smpi/ois` option, a sleep of the
// sending actor before the message is posted. MPI_Send_init + MPI_Start is neither, so the
// engine's messages would travel for free and every all-in-flight schedule would look several
// times cheaper than SMPI's own collectives. In an SMPI build, start_request() sleeps exactly
// what MPI_Isend of the same size would: smpi/ois evaluated the way SMPI evaluates it
// (sections "bytes:seconds:seconds-per-byte;..." or one value; the section of the largest
// bound below the size), minus the smpi/os that SMPI itself charges when it detaches the send
// (below smpi/send-is-detached-thresh). Receives: SMPI charges smpi/or only to a receive matched
// with a detached send, i.e. never under smpi/send-is-detached-thresh:0 (checked: P = 64, 8 B,
// linear and pairwise take the same simulated time with smpi/or 0 and 0.5 us); so that a
// simulated machine can have a receive-side per-message cost (scripts/smpi/platforms'
// variants, the cost model's o_recv_*), the engine's persistent receives sleep smpi/or at
// MPI_Start. That is the rank's CPU time per message received, in the place where the engine
// spends it on its receives, not where SMPI would (after the match): one rank's overheads add
// up the same way. SMPI's own collectives never pay it. A sleep, not smpi_execute(): that is
// the call SMPI's MPI_Isend makes, and smpi_execute() drops durations below
// smpi/cpu-threshold (1 us by default) and scales by smpi/host-speed.
#include "util/platform.hpp"

#include <simgrid/actor.h>
#include <xbt/config.hpp>
#include <xbt/parse_units.hpp>

#include <algorithm>
#include <cstddef>
#include <string>
#include <vector>

namespace mpia {

namespace {

// One of SMPI's piecewise per-message costs (smpi/os, smpi/ois, smpi/or): SimGrid's FactorSet.
struct MessageCost {
  struct Section {
    double bound = 0;  // bytes: applies to sizes above it
    double offset = 0, per_byte = 0;
  };
  double single = 0;  // the value when given as one number (or for sizes below every bound)
  std::vector<Section> sections;  // sorted by bound

  double operator()(double bytes) const {
    for (std::size_t i = 0; i < sections.size(); ++i)
      if (bytes <= sections[i].bound)
        return i == 0 ? single : sections[i - 1].offset + sections[i - 1].per_byte * bytes;
    return sections.empty() ? single : sections.back().offset + sections.back().per_byte * bytes;
  }

  static MessageCost parse(const std::string& text) {
    MessageCost c;
    auto time_of = [](const std::string& s) { return xbt_parse_get_time("", 0, s, ""); };
    if (text.find_first_of(":;") == std::string::npos) {
      c.single = text.empty() ? 0 : time_of(text);
      return c;
    }
    std::size_t at = 0;
    while (at <= text.size()) {
      std::size_t end = text.find(';', at);
      if (end == std::string::npos) end = text.size();
      const std::string chunk = text.substr(at, end - at);
      at = end + 1;
      if (chunk.empty()) continue;
      std::vector<std::string> f;
      for (std::size_t b = 0;;) {
        const std::size_t e = chunk.find(':', b);
        f.push_back(chunk.substr(b, e == std::string::npos ? std::string::npos : e - b));
        if (e == std::string::npos) break;
        b = e + 1;
      }
      Section s;
      s.bound = std::stod(f[0]);
      if (f.size() > 1) s.offset = time_of(f[1]);
      if (f.size() > 2) s.per_byte = time_of(f[2]);
      c.sections.push_back(s);
    }
    std::sort(c.sections.begin(), c.sections.end(),
              [](const Section& a, const Section& b) { return a.bound < b.bound; });
    return c;
  }
};

struct SendCharge {
  MessageCost isend, send, recv;
  double detached_below = 0;  // smpi/send-is-detached-thresh (bytes)

  static const SendCharge& get() {
    static const SendCharge charge = [] {
      SendCharge c;
      try {
        c.isend = MessageCost::parse(simgrid::config::get_value<std::string>("smpi/ois"));
        c.send = MessageCost::parse(simgrid::config::get_value<std::string>("smpi/os"));
        c.recv = MessageCost::parse(simgrid::config::get_value<std::string>("smpi/or"));
        c.detached_below = simgrid::config::get_value<int>("smpi/send-is-detached-thresh");
      } catch (...) {
        c = SendCharge{};  // an option SimGrid does not know: charge nothing
      }
      return c;
    }();
    return charge;
  }

  // Seconds to add to a persistent send of `bytes` so that it costs what MPI_Isend costs.
  double extra(double bytes) const {
    const double isend_cost = isend(bytes);
    return bytes < detached_below ? std::max(0.0, isend_cost - send(bytes)) : isend_cost;
  }

  // Seconds to add to a persistent receive of `bytes`: smpi/or, which SMPI itself charges only
  // to a receive that matches a detached send (none without eager sends). With detached sends
  // SMPI charges it after the match, so the engine adds nothing then.
  double extra_recv(double bytes) const { return bytes < detached_below ? 0.0 : recv(bytes); }
};

}  // namespace

namespace platform {

int start_request(MPI_Request* q, bool is_send, int count, MPI_Datatype type) {
  int size = 0;
  if (MPI_Type_size(type, &size) == MPI_SUCCESS) {
    const SendCharge& charge = SendCharge::get();
    const double bytes = double(size) * double(count);
    const double o = is_send ? charge.extra(bytes) : charge.extra_recv(bytes);
    if (o > 0) sg_actor_sleep_for(o);
  }
  return MPI_Start(q);
}

// Not with MPI_Isend: start_request charges the persistent sends what MPI_Isend costs here.
bool posts_with_isend(std::int64_t) { return false; }

// SMPI's MPI_Send_init of a derived datatype packs the data then, and every MPI_Start sends
// that copy: zero_copy_bruck's struct types over buffers that change between starts, a user's
// type with holes, delivered stale bytes (P = 8: 440 wrong after a second start). MPI_Isend
// packs at the call, and SMPI charges it smpi/ois itself -- what start_request charges a
// persistent send: the same simulated cost.
bool isends_derived_types() { return true; }

// SMPI charges smpi/or to no receive of its collectives (send-is-detached-thresh:0), nor to those
// of the neighbor stand-ins (smpi/compat.cpp), while start_request charges it to ours. Measured,
// P = 64, smpi/or 0 -> 0.5 us: linear 31.85 -> 63.31 us at 8 B, SMPI's MPI_Ialltoall (the lab's
// system entry) 31.85 both times.
bool receives_unpaid() {
  const MessageCost& r = SendCharge::get().recv;
  return r.single > 0 || std::any_of(r.sections.begin(), r.sections.end(),
                                     [](const auto& x) { return x.offset > 0 || x.per_byte > 0; });
}

double unpaid_receive_seconds(std::int64_t bytes) {
  return SendCharge::get().extra_recv(double(bytes));
}

void charge(double seconds) {
  if (seconds > 0) sg_actor_sleep_for(seconds);
}

// SimGrid 3.32's MPI_Comm_call_errhandler jumps to a null function for MPI_ERRORS_ARE_FATAL.
bool aborts_on_fatal() { return true; }

}  // namespace platform
}  // namespace mpia
