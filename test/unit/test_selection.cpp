// The selection syntax name[:key=value,...] and the cost model behind auto.
#include "collective/model.hpp"
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
  EXPECT_EQ(parse_selection(Collective::Alltoall, "tra:radix=7", 16, true).to_string(), "tra:radix=7");
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

TEST(Model, AutoPicksARunnableAlgorithm) {
  for (int P : {1, 2, 3, 16, 1024}) {
    for (std::int64_t n : {0, 8, 1 << 20}) {
      Selection s = choose_alltoall(CostModel{}, P, n);
      ASSERT_NE(s.algorithm, nullptr);
      EXPECT_EQ(s.algorithm->kind, AlgorithmKind::Scheduled) << s.to_string();
    }
  }
  // Latency-bound at scale: a logarithmic radix beats P-1 messages.
  Selection small = choose_alltoall(CostModel{}, 4096, 8);
  EXPECT_EQ(std::string(small.algorithm->name), "tra");
  EXPECT_LT(small.value("radix"), 64);
  // Bandwidth-bound: direct exchange.
  EXPECT_EQ(std::string(choose_alltoall(CostModel{}, 64, 1 << 20).algorithm->name), "linear");
}

}  // namespace
}  // namespace mpia
