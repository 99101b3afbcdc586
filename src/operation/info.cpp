#include "operation/info.hpp"

#include "operation/settings.hpp"
#include "util/error.hpp"

#include <string>

namespace mpia {

int info_switch(MPI_Info info, const char* key, const char* yes, const char* no) {
  if (info == MPI_INFO_NULL) return -1;
  char value[16] = {};
  int flag = 0;
  MPIA_CHECK(MPI_Info_get(info, key, int(sizeof value) - 1, value, &flag));
  if (!flag) return -1;
  const std::string v(value);
  if (v == yes) return 1;
  if (v == no) return 0;
  fail(MPI_ERR_INFO_VALUE, std::string("mpi-advance: info ") + key + "='" + v + "' (expected " +
                               yes + " or " + no + ")");
}

bool wants_progress_thread(MPI_Info info) {
  const int v = info_switch(info, "mpix_progress", "thread", "calls");
  return v < 0 ? settings().progress == ProgressMode::Thread : v == 1;
}

bool wants_trial(MPI_Info info) {
  const int v = info_switch(info, "mpix_auto", "measure", "model");
  return v < 0 ? settings().auto_measure : v == 1;
}

}  // namespace mpia
