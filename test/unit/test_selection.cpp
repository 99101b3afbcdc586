// The selection syntax name[:key=value,...] and the cost model behind auto.
#include "collective/selection.hpp"
#include "util/error.hpp"

#include <gtest/gtest.h>

namespace mpia {
namespace {

int error_class(const std::function<void()>& f) {
  try {
    f();
  } catch (const Error& e) {
    return e.code();
  }
  return MPI_SUCCESS;
}

TEST(Selection, ParsesNamesAndDefaults) {
  EXPECT_EQ(parse_selection(Collective::Alltoall, "tra", 16, true).to_string(), "tra:radix=4");
  EXPECT_EQ(parse_selection(Collective::Alltoall, "tra", 17, true).to_string(), "tra:radix=5");
  EXPECT_EQ(parse_selection(Collective::Alltoall, "tra", 1, true).to_string(), "tra:radix=2");
  EXPECT_EQ(parse_selection(Collective::Alltoall, "tra:radix=7", 16, true).to_string(),
            "tra:radix=7");
  EXPECT_EQ(parse_selection(Collective::Alltoall, "bruck", 16, true).to_string(), "bruck");
}

TEST(Selection, StrictRejectsBadValues) {
  for (const char* text : {"nonsense", "tra:radix=1", "tra:radix=17", "tra:radix=x", "tra:radix",
                           "tra:width=3", "tra:radix=3,radix=3", "bruck:radix=2", ""}) {
    EXPECT_EQ(error_class([&] { parse_selection(Collective::Alltoall, text, 16, true); }),
              MPI_ERR_INFO_VALUE)
        << text;
  }
}

TEST(Selection, EnvironmentStyleClampsRange) {
  EXPECT_EQ(parse_selection(Collective::Alltoall, "tra:radix=64", 8, false).to_string(),
            "tra:radix=8");
  EXPECT_EQ(parse_selection(Collective::Alltoall, "tra:radix=0", 8, false).to_string(),
            "tra:radix=2");
}

}  // namespace
}  // namespace mpia
