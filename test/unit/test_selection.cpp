// The selection syntax name[:key=value,...] and the cost model behind auto.
#include "collective/selection.hpp"
#include "util/error.hpp"

#include <gtest/gtest.h>
#include <mpi.h>

#include <algorithm>

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

// Parameter ranges are data: what they evaluate to, how the listing prints them.
TEST(Selection, BoundsAreData) {
  const Extent e(64, 4, 16);
  EXPECT_EQ(Bound::constant(7).at(e), 7);
  EXPECT_EQ(Bound::of_size(Bound::Of::Ranks, 2).at(e), 64);
  EXPECT_EQ(Bound::of_size(Bound::Of::Ranks, 2).at(Extent(1)), 2);
  EXPECT_EQ(Bound::sqrt_of(Bound::Of::MaxLocal, 2).at(Extent(60, 4, 15)), 4);
  EXPECT_EQ(Bound::of_size(Bound::Of::Nodes, 2).at(e), 4);
  EXPECT_EQ(Bound::sqrt_of(Bound::Of::Ranks, 2).to_string(), "max(2,ceil(sqrt(P)))");
  EXPECT_EQ(Bound::of_size(Bound::Of::Nodes, 0).to_string(), "N");
  EXPECT_EQ(Bound::constant(std::int64_t(1) << 30).to_string(), "2^30");
  EXPECT_EQ(Bound::constant(256).to_string(), "256");
  const ParamSpec radix{"radix", "", Bound::sqrt_of(Bound::Of::Ranks, 2), kRadixMin, kRadixMax};
  EXPECT_EQ(radix.range_text(), "2..max(2,P), default max(2,ceil(sqrt(P)))");
}

TEST(Selection, ParamValuesSpanTheRange) {
  const ParamSpec radix{"radix", "", Bound::sqrt_of(Bound::Of::Ranks, 2), kRadixMin, kRadixMax};
  EXPECT_EQ(param_values(radix, 5, 8), (std::vector<std::int64_t>{2, 3, 4, 5}));
  EXPECT_EQ(param_values(radix, 1, 8), (std::vector<std::int64_t>{2}));
  const ParamSpec big{"t", "", Bound::constant(256), Bound::constant(0),
                      Bound::constant(std::int64_t(1) << 62)};
  for (std::size_t at_most : {3, 5, 8, 12, 100}) {
    const std::vector<std::int64_t> v = param_values(big, 8, at_most);
    ASSERT_LE(v.size(), at_most);
    EXPECT_TRUE(std::is_sorted(v.begin(), v.end()));
    EXPECT_EQ(v.front(), 0);
    EXPECT_EQ(v.back(), std::int64_t(1) << 62);
    EXPECT_NE(std::find(v.begin(), v.end(), 256), v.end()) << "the default, at_most " << at_most;
  }
  // Dense at the low end when there is room: 0..3, then powers of two.
  const std::vector<std::int64_t> v = param_values(big, 8, 100);
  EXPECT_EQ(std::vector<std::int64_t>(v.begin(), v.begin() + 6),
            (std::vector<std::int64_t>{0, 1, 2, 3, 4, 8}));
}

// Every record's grid on communicators of several shapes is accepted by strict selection (the
// ranges the grid walks are the ones selection enforces), and the listing shows every parameter.
// With MPI not initialised: parsing makes no MPI call (one would abort or fail here).
TEST(Selection, EveryParameterGridParsesBackAndIsListed) {
  int initialized = 1;
  MPI_Initialized(&initialized);
  ASSERT_FALSE(initialized);
  for (const AlgorithmSpec& a : registry()) {
    EXPECT_EQ(&parse_algorithm(a.collective, a.name), &a);
    for (const Extent e : {Extent(1), Extent(3), Extent(16, 4, 4), Extent(200, 10, 20)}) {
      for (const ParamValues& v : param_grid(a, e, 40)) {
        const Selection sel{&a, v};
        const Selection back = parse_selection(a.collective, sel.to_string(), e, true);
        EXPECT_EQ(back, sel) << sel.to_string();
      }
    }
    for (const ParamSpec& p : a.params)
      EXPECT_NE(a.summary.find(std::string(p.name) + ": " + p.description + ", " + p.range_text()),
                std::string::npos)
          << a.summary;
  }
}

}  // namespace
}  // namespace mpia
