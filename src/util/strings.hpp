// Small string helpers shared by the library and the tools.
#pragma once

#include <sstream>
#include <string>
#include <vector>

namespace mpia {

// The non-empty pieces of s between separators: "a,,b" -> {"a", "b"}.
inline std::vector<std::string> split(const std::string& s, char sep) {
  std::vector<std::string> out;
  std::stringstream in(s);
  for (std::string x; std::getline(in, x, sep);)
    if (!x.empty()) out.push_back(x);
  return out;
}

}  // namespace mpia
