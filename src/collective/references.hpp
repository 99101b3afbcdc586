// The published sources that several algorithm records cite in their reference (About, record.hpp),
// as string literals so that a record can say where in the source: MPIA_SEED_001 ", Algorithm 3".
// "seed NNN" is the project's copy of the paper (shared/seeds/NNN_*.txt), which the records'
// header comments cite the same way.
#pragma once

#define MPIA_REF_BRUCK97                                                                \
  "J. Bruck, C.-T. Ho, S. Kipnis, E. Upfal, D. Weathersby, \"Efficient algorithms for " \
  "all-to-all communications in multiport message-passing systems\", IEEE TPDS 8(11), 1997"

#define MPIA_SEED_000                                                                   \
  "J. L. Traff, A. Rougier, S. Hunold, \"Implementing a classic: zero-copy all-to-all " \
  "communication with MPI datatypes\", ICS 2014 (seed 000)"

// The seed's copy has no title or author line.
#define MPIA_SEED_001                                                                     \
  "the study of MPI Advance's MPI_Alltoallv algorithms in HeFFTe and Beatnik (seed 001; " \
  "its copy names neither title nor authors)"

#define MPIA_SEED_002 "MPI Forum, MPI-4.1 standard (2023), section 9.6.2 (seed 002)"

#define MPIA_SEED_003                                                                   \
  "K. Fan, S. Petruzza, T. Gilray, S. Kumar, \"Configurable algorithms for all-to-all " \
  "collectives\", ISC 2024 (seed 003)"

#define MPIA_REF_TUNA \
  "K. Fan et al., \"Parameterized algorithms for non-uniform all-to-all\" (TuNA), HPDC 2025"

#define MPIA_REF_COLLOM                                                                 \
  "G. Collom, A. Bienz et al., \"Optimizing irregular communication with neighborhood " \
  "collectives and locality-aware parallelism\""
