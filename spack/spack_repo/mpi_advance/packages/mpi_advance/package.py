# Spack recipe of mpi-advance, kept in the project's own repository (spack/).
#
# Conventions followed: Spack v1.x, Package API v2.2 (spack_repo/<namespace>/packages/<dir>/,
# imports from spack_repo.builtin.build_systems and spack.package), as used by spack-packages
# v2026.06.0, the builtin repository released with Spack v1.2 (any Spack >= 1.0.0 reads it).
#
#   spack repo add ./spack/spack_repo/mpi_advance
#   spack external find openmpi          # the system MPI as an external (or: mpich)
#   spack env create -d /tmp/mpia-env && spack -e /tmp/mpia-env add mpi-advance@main ^openmpi
#   spack -e /tmp/mpia-env develop --path <checkout> mpi-advance@=main
#   spack -e /tmp/mpia-env install
#   spack -e /tmp/mpia-env test run mpi-advance   # the smoke test below
# (spack install mpi-advance ^openmpi once the project is published: the URLs below are
# placeholders.)
#
# Version check: `ctest -R spack.recipe` compiles this file and checks it against the project's
# CMakeLists.txt (the version, and that every MPIA_ option it sets exists).

import os

from spack_repo.builtin.build_systems.cmake import CMakePackage

from spack.package import *


class MpiAdvance(CMakePackage):
    """Faster MPI all-to-all collectives (MPIX_Alltoall, MPIX_Alltoallv,
    MPIX_Neighbor_alltoall(v) and their persistent _init forms) on top of the system MPI."""

    # PLACEHOLDER: mpi-advance has no public repository or release tarball yet. Replace both
    # addresses with the real ones when it is published (".invalid" can never resolve). Until
    # then build from a checkout with `spack develop --path <checkout> mpi-advance@=main`.
    homepage = "https://mpi-advance.invalid/"
    git = "https://mpi-advance.invalid/mpi-advance.git"

    # No license("...") directive: the project has no LICENSE file yet.

    version("main", branch="main")
    # project(MPIAdvance VERSION 0.1.0) in CMakeLists.txt. No tag exists yet: tag the release
    # v0.1.0 and add its commit= here when publishing.
    version("0.1.0", tag="v0.1.0")

    variant("hwloc", default=True, description="Use hwloc for the package/NUMA domain of ranks")
    variant("fortran", default=False, description="Build and install the Fortran module")

    depends_on("c", type="build")
    depends_on("cxx", type="build")
    depends_on("fortran", type="build", when="+fortran")
    depends_on("cmake@3.20:", type="build")
    # src/bindings/generate.py writes the header and the bindings from src/bindings/calls.txt.
    depends_on("python@3.6:", type="build")

    # MPI-3's nonblocking and neighborhood collectives at least. Tested (scripts/test.sh,
    # docs/mpis.md): Open MPI 4.1 and 5.0, MPICH 4.0 and 4.3; older series are refused rather
    # than built untested (the drop-in relies on how each MPI completes and frees requests).
    depends_on("mpi@3:")
    conflicts("^openmpi@:4.0", msg="mpi-advance is tested with Open MPI 4.1 and 5.0")
    conflicts("^mpich@:3", msg="mpi-advance is tested with MPICH 4.0 to 4.3")
    depends_on("hwloc", when="+hwloc")
    depends_on("pkgconfig", type="build", when="+hwloc")  # hwloc is found with pkg-config
    depends_on("googletest", type="test")  # the project's own tests (spack install --test=root)

    @property
    def build_dirname(self):
        """A build directory of its own when the tests are built (spack install --test=root).
        Spack configures a develop spec once and then skips CMake in incremental builds: after a
        plain install, --test=root would build the same tests-off directory again and test
        nothing."""
        name = f"spack-build-{self.spec.dag_hash(7)}"
        return f"{name}-tests" if self.run_tests else name

    def check(self):
        """The project's tests (ctest), failing when they were not built instead of passing with
        none run: MPI tests at 1 to 16 ranks, oversubscribed on a small machine."""
        with working_dir(self.build_directory):
            cache = ""
            if os.path.exists("CMakeCache.txt"):
                with open("CMakeCache.txt") as f:
                    cache = f.read()
            if "MPIA_BUILD_TESTS:BOOL=ON" not in cache:
                raise InstallError(
                    f"{self.build_directory} was configured without the tests "
                    "(MPIA_BUILD_TESTS=OFF), so there is nothing to run: remove that directory "
                    "(or run `spack clean mpi-advance`) and install with --test=root again"
                )
            ctest("--output-on-failure", "--no-tests=error", "-j", str(make_jobs))

    # The smoke test compiles a C program against the installed library.
    test_requires_compiler = True

    def _mpi_program(self, generic, suffix):
        """The program of the MPI the spec names: on a distribution that installs several MPIs
        side by side in one prefix (Debian: /usr/bin/mpicc is whichever MPI the alternatives
        system chose, mpicc.mpich and mpicc.openmpi are each MPI's own), the one with the MPI's
        suffix; else the generic one."""
        mpi = self.spec["mpi"]
        own = join_path(mpi.prefix.bin, f"{os.path.basename(generic)}.{suffix}")
        return own if os.path.exists(own) else generic

    def _check_mpi(self, program):
        """Stops when program belongs to another MPI than the spec's (an external declared with a
        prefix that several MPIs share), instead of building silently against the wrong one."""
        name = self.spec["mpi"].name
        real = os.path.basename(os.path.realpath(program))
        # Open MPI's wrappers are links to opal_wrapper; MPICH's carry its name on Debian.
        owner = None
        if real == "opal_wrapper" or "openmpi" in real:
            owner = "openmpi"
        elif "mpich" in real:
            owner = "mpich"
        if owner and name in ("openmpi", "mpich") and owner != name:
            raise InstallError(
                f"{program} is {owner}'s ({os.path.realpath(program)}), but the spec asks for "
                f"^{name}. Declare the external {name} with the prefix of its own wrappers (on "
                f"Debian both MPIs share /usr: install {name}'s and check that "
                f"/usr/bin/mpicc.{name} exists), or select it with update-alternatives."
            )

    def cmake_args(self):
        mpi = self.spec["mpi"]
        suffix = "openmpi" if mpi.name == "openmpi" else "mpich"
        mpicc = self._mpi_program(mpi.mpicc, suffix)
        mpicxx = self._mpi_program(mpi.mpicxx, suffix)
        self._check_mpi(mpicc)
        args = [
            self.define("MPI_C_COMPILER", mpicc),
            self.define("MPI_CXX_COMPILER", mpicxx),
            self.define_from_variant("MPIA_ENABLE_HWLOC", "hwloc"),
            self.define_from_variant("MPIA_ENABLE_FORTRAN", "fortran"),
            self.define("MPIA_BUILD_TESTS", self.run_tests),
            self.define("MPIA_BUILD_BENCHMARKS", False),  # not installed, no test runs it
        ]
        if self.spec.satisfies("+fortran"):
            # The MPI's Fortran wrapper (its mpi_f08 module): mpif90 on Debian, mpifort elsewhere.
            args.append(self.define("MPI_Fortran_COMPILER", self._mpi_program(mpi.mpifc, suffix)))
        if self.run_tests:
            mpiexec = self._mpi_program(mpi.prefix.bin.mpiexec, suffix)
            args.append(self.define("MPIEXEC_EXECUTABLE", mpiexec))
        return args

    def _allow_mpi_as_root(self, env):
        # Spack removes every environment variable whose name ends in _ROOT from the build and
        # test environments, OMPI_ALLOW_RUN_AS_ROOT included: set the pair again, so that Open
        # MPI's mpiexec runs the tests in a container as root. Only as root; MPICH ignores them.
        if hasattr(os, "geteuid") and os.geteuid() == 0:
            env.set("OMPI_ALLOW_RUN_AS_ROOT", "1")
            env.set("OMPI_ALLOW_RUN_AS_ROOT_CONFIRM", "1")

    def setup_build_environment(self, env: EnvironmentModifications) -> None:
        self._allow_mpi_as_root(env)

    def setup_run_environment(self, env: EnvironmentModifications) -> None:
        self._allow_mpi_as_root(env)

    def test_alltoall_smoke(self):
        """build a C program against the installed library and run it at 2 ranks"""
        mpi = self.spec["mpi"]
        source = join_path(self.test_suite.current_test_data_dir, "mpia_smoke.c")
        suffix = "openmpi" if mpi.name == "openmpi" else "mpich"
        mpicc = which(self._mpi_program(mpi.prefix.bin.mpicc, suffix), required=True)
        mpicc(
            source,
            "-o",
            "mpia_smoke",
            f"-I{self.prefix.include}",
            f"-L{self.prefix.lib}",
            f"-Wl,-rpath,{self.prefix.lib}",
            "-lmpi_advance",
        )
        mpiexec = which(self._mpi_program(mpi.prefix.bin.mpiexec, suffix), required=True)
        flags = ["--oversubscribe"] if mpi.name == "openmpi" else []  # 2 ranks on 1 core too
        out = mpiexec(*flags, "-n", "2", "./mpia_smoke", output=str.split, error=str.split)
        check_outputs(["mpi-advance smoke: OK on 2 ranks"], out)
