// Whether this is a sanitized build (MPIA_SANITIZE: -fsanitize=address,undefined). Such a build
// is there to find memory errors and undefined behaviour, and runs the in-process sweeps 5-15x
// slower (the unit tests took 282 s, the trial's rule 200 s, most of the CI's sanitizer stage);
// the sweeps of every P and radix, and the statistics over hundreds of simulated trials, run in
// full in the other builds. So under the sanitizers the alltoall sweep takes a sample of P that
// still reaches every code path (1, powers of two and their neighbours, primes, 64), the
// alltoallv sweep leaves out P = 64, and the statistical tests of the trial's rule are skipped.
#pragma once

namespace mpia_unit {

#if defined(__SANITIZE_ADDRESS__)
inline constexpr bool kSanitized = true;
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
inline constexpr bool kSanitized = true;
#else
inline constexpr bool kSanitized = false;
#endif
#else
inline constexpr bool kSanitized = false;
#endif

// Whether a sweep over P runs this P: every P in a plain build, a sample in a sanitized one.
inline bool sweeps(int P) {
  constexpr int kSample[] = {1, 2, 3, 4, 5, 7, 8, 9, 13, 16, 17, 31, 32, 37, 64};
  if (!kSanitized) return true;
  for (int p : kSample)
    if (p == P) return true;
  return false;
}

}  // namespace mpia_unit
