// A hash that is the same in every process and every build (std::hash is neither): 64-bit
// FNV-1a. Used where ranks compare what they chose (settings, algorithm selections).
#pragma once

#include <cstdint>
#include <string_view>

namespace mpia {

constexpr std::uint64_t kFnvOffset = 14695981039346656037ULL;

constexpr std::uint64_t fnv1a(std::string_view s, std::uint64_t h = kFnvOffset) {
  for (unsigned char c : s) {
    h ^= c;
    h *= 1099511628211ULL;
  }
  return h;
}

// A non-negative int64 of the hash, so that ranks can compare it with one MPI_MAX allreduce of
// (h, -h): equal on every rank iff max(h) == -max(-h).
constexpr std::int64_t hash63(std::string_view s) {
  return std::int64_t(fnv1a(s) & 0x3fffffffffffffffULL);
}

// A 64-bit mixer (the splitmix64 finalizer): well-spread values of small integers, e.g. the
// edges of a graph whose sums ranks compare.
constexpr std::uint64_t mix64(std::uint64_t h) {
  h ^= h >> 30;
  h *= 0xbf58476d1ce4e5b9ULL;
  h ^= h >> 27;
  h *= 0x94d049bb133111ebULL;
  return h ^ (h >> 31);
}

}  // namespace mpia
