// What every algorithm record tells the listings (mpia_info --algorithms, docs/algorithms.md)
// beside its description: where it comes from and the formula of the time the cost model
// predicts for it, in the notation the listings print (kCostNotation).
#include "collective/registry.hpp"

#include <gtest/gtest.h>

#include <cctype>
#include <set>
#include <string>

namespace mpia {
namespace {

std::string what(const AlgorithmSpec& a) {
  return std::string(collective_name(a.collective)) + " " + a.name;
}

// A record without a reference or a cost formula leaves a hole in the algorithm reference.
TEST(Records, EveryRecordHasAReferenceAndACostFormula) {
  for (const AlgorithmSpec& a : registry()) {
    ASSERT_NE(a.reference, nullptr) << what(a);
    ASSERT_NE(a.cost_formula, nullptr) << what(a);
    EXPECT_GE(std::string(a.reference).size(), 10u) << what(a) << ": no reference";
    EXPECT_GE(std::string(a.cost_formula).size(), 10u) << what(a) << ": no cost formula";
  }
}

// The formula says "not modelled" exactly where there is no cost function to describe.
TEST(Records, CostFormulaIsNotModelledExactlyWithoutACost) {
  for (const AlgorithmSpec& a : registry()) {
    const bool not_modelled = std::string(a.cost_formula).rfind("not modelled", 0) == 0;
    EXPECT_EQ(not_modelled, a.cost == nullptr) << what(a) << ": " << a.cost_formula;
  }
}

// Every function a formula applies (a name followed by "(") is one the notation defines, or
// plain arithmetic: a helper renamed or added in cost.hpp shows up here.
TEST(Records, CostFormulasUseTheNotation) {
  std::set<std::string> defined = {"min", "max", "floor", "exp", "Poisson", "P"};
  for (const CostSymbol& s : kCostNotation) {
    const std::string symbol = s.symbol;
    const std::size_t paren = symbol.find('(');
    if (paren != std::string::npos) defined.insert(symbol.substr(0, paren));
  }
  EXPECT_TRUE(defined.count("round") && defined.count("radix") && defined.count("direct"));
  auto word_char = [](char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_'; };
  for (const AlgorithmSpec& a : registry()) {
    const std::string f = a.cost_formula;
    for (std::size_t i = 0; i < f.size(); ++i) {
      if (f[i] != '(' || i == 0 || !word_char(f[i - 1])) continue;
      std::size_t start = i;
      while (start > 0 && word_char(f[start - 1])) --start;
      const std::string name = f.substr(start, i - start);
      EXPECT_TRUE(defined.count(name)) << what(a) << ": " << name << "( is not in kCostNotation";
    }
  }
}

}  // namespace
}  // namespace mpia
