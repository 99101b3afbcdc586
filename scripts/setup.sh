#!/usr/bin/env bash
# Installs what building, testing and benchmarking mpi-advance need on Debian/Ubuntu: both
# MPIs side by side (Open MPI: mpicc.openmpi / mpirun.openmpi, MPICH: mpicc.mpich /
# mpiexec.mpich), CMake, a C++17 compiler, hwloc, GoogleTest, valgrind, FFTW 3 (for the
# FFT mini-app), SimGrid's SMPI (libsimgrid-dev: smpicc, smpicxx, smpirun; the simulated
# runs of scripts/smpi/) and numpy + matplotlib for the distribution's /usr/bin/python3
# (scripts/calibrate.py, the plots; common.sh's mpia_python finds that interpreter), and
# clang-format (scripts/check_format.sh), and Doxygen (the API reference and man pages).
# Fast no-op when everything is installed already; otherwise apt-get, non-interactive, with
# sudo when not root.
set -euo pipefail

packages=(cmake g++ make pkg-config openmpi-bin libopenmpi-dev mpich libmpich-dev
          libhwloc-dev hwloc googletest libgtest-dev valgrind libfftw3-dev
          libsimgrid-dev gfortran python3 python3-numpy python3-matplotlib clang-format
          doxygen)

installed() {
  [ "$(dpkg-query -W -f='${db:Status-Status}' "$1" 2>/dev/null)" = installed ]
}

if ! command -v dpkg-query >/dev/null 2>&1 || ! command -v apt-get >/dev/null 2>&1; then
  echo "setup.sh: not a Debian-like system (no dpkg/apt-get). Install by hand: ${packages[*]}" >&2
  exit 1
fi

missing=()
for p in "${packages[@]}"; do
  installed "$p" || missing+=("$p")
done

if [ ${#missing[@]} -eq 0 ]; then
  echo "setup.sh: all ${#packages[@]} packages present"
else
  echo "setup.sh: installing ${missing[*]}"
  sudo=()
  if [ "$(id -u)" -ne 0 ]; then
    command -v sudo >/dev/null 2>&1 || { echo "setup.sh: need root or sudo to install ${missing[*]}" >&2; exit 1; }
    sudo=(sudo)
  fi
  export DEBIAN_FRONTEND=noninteractive
  "${sudo[@]}" apt-get update -q
  "${sudo[@]}" env DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends "${missing[@]}"
fi

# Both MPIs must be usable under their flavour names.
status=0
for t in mpicc.openmpi mpicxx.openmpi mpiexec.openmpi mpicc.mpich mpicxx.mpich mpiexec.mpich cmake pkg-config \
         smpicc smpicxx smpirun; do
  command -v "$t" >/dev/null 2>&1 || { echo "setup.sh: $t not found after install" >&2; status=1; }
done
exit $status
