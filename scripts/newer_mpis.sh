#!/usr/bin/env bash
# Builds newer MPIs than Debian 12's (Open MPI 4.1.4, MPICH 4.0.2) for the tests: Open MPI 5.0.x
# and MPICH 4.3.x, from source trees the user points it at, into a cache outside the checkout:
#
#   $CACHE/openmpi-<version>/   $CACHE/mpich-<version>/   (bin/mpicc, mpicxx, mpifort, mpiexec)
#   $CACHE/logs/                autogen/configure/make/install logs and phase times
#
# A prefix holds a stamp (.mpia-stamp: flavour, version, configure arguments); when it matches,
# the build is skipped (a second run takes a second). Needs no network except apt-get.
#
# Usage:
#   scripts/newer_mpis.sh [--ompi-src DIR] [--mpich-src DIR] [--cache DIR] [--jobs N]
#                         [--force] [--no-apt] [openmpi] [mpich]
#       builds the flavours named (default: every flavour whose source tree is given)
#   scripts/newer_mpis.sh --print-prefix openmpi|mpich [--cache DIR]
#       prints the installed prefix of that flavour (the newest version in the cache);
#       exits 1 when none is built
#   scripts/newer_mpis.sh --make-src openmpi|mpich DEST [--rev TAG] [--mirrors DIR]
#       writes a source tree (a git tree with its submodules, no .git) to DEST from local bare
#       mirrors DIR/<owner>+<name>/repo (default $MPIA_GIT_MIRRORS or /work/.mirror); submodules
#       with no mirror are skipped with a warning (MPICH's hwloc, libfabric, ucx and mydef_boot
#       are not needed: Debian's hwloc and libfabric are used).
#
# Environment equivalents: MPIA_OMPI5_SRC, MPIA_MPICH4_SRC, MPIA_MPI_CACHE (default
# ${XDG_CACHE_HOME:-$HOME/.cache}/mpi-advance/mpis), MPIA_JOBS (2).
#
# Getting a source tree (either works; the script runs autogen only when `configure` is absent):
#   * a release tarball: https://download.open-mpi.org/release/open-mpi/v5.0/openmpi-5.0.10.tar.bz2,
#     https://www.mpich.org/static/downloads/4.3.2/mpich-4.3.2.tar.gz, unpacked anywhere;
#   * a git clone with submodules:
#       git clone --recurse-submodules -b v5.0.10 https://github.com/open-mpi/ompi
#       git clone --recurse-submodules -b v4.3.2  https://github.com/pmodels/mpich
#     (needs autoconf, automake, libtool, flex, perl, python3: installed here by the script), or
#     --make-src from local mirrors of those repositories. A build from the v5.0.10 tag calls
#     itself 5.0.10rc2 (MPI_Get_library_version, ompi_info): the tag's VERSION keeps greek=rc2,
#     the release tarball is made with --no-greek; the cache prefix is openmpi-5.0.10 either way.
#
# Builds run under `nice -n 5` with make -j$MPIA_JOBS. The configuration is lean: C, C++ (C
# bindings), Fortran (mpif.h, use mpi, use mpi_f08), shared libraries only, threads, launchers;
# no MPI-IO (ROMIO), Java, OpenSHMEM or documentation. See configure_openmpi/configure_mpich.
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
# shellcheck source=scripts/common.sh
. "$here/common.sh"

ompi_src="${MPIA_OMPI5_SRC:-}"
mpich_src="${MPIA_MPICH4_SRC:-}"
cache="${MPIA_MPI_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/mpi-advance/mpis}"
jobs="$MPIA_JOBS"
force=0
use_apt=1
mode=build
query=""
make_dest=""
make_rev=""
mirrors="${MPIA_GIT_MIRRORS:-/work/.mirror}"
flavours=()

die() { mpia_log "newer_mpis: $*"; exit 1; }
usage() { sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//'; }

while [ $# -gt 0 ]; do
  case "$1" in
    --ompi-src) ompi_src="$2"; shift ;;
    --mpich-src) mpich_src="$2"; shift ;;
    --cache) cache="$2"; shift ;;
    --jobs|-j) jobs="$2"; shift ;;
    --force) force=1 ;;
    --no-apt) use_apt=0 ;;
    --print-prefix) mode=print; query="$2"; shift ;;
    --make-src) mode=make-src; query="$2"; make_dest="$3"; shift 2 ;;
    --rev) make_rev="$2"; shift ;;
    --mirrors) mirrors="$2"; shift ;;
    -h|--help) usage; exit 0 ;;
    openmpi|mpich) flavours+=("$1") ;;
    *) usage >&2; die "unknown argument '$1'" ;;
  esac
  shift
done

# ---------------------------------------------------------------------------------------------
# Debian packages: the MPIs' external dependencies, compilers, and autotools for git trees.
# PMIx: Debian 12 has 4.2.2, Open MPI 5.0.10 accepts >= 4.2.0 but its PRRTE 3.0 needs >= 4.2.4
# and Debian 12 has no PRRTE, so Open MPI is built with its bundled PMIx and PRRTE.
apt_install() {
  local missing=() p sudo=()
  for p in "$@"; do
    [ "$(dpkg-query -W -f='${db:Status-Status}' "$p" 2>/dev/null)" = installed ] || missing+=("$p")
  done
  [ ${#missing[@]} -eq 0 ] && return 0
  [ "$use_apt" = 1 ] || die "missing packages (--no-apt given): ${missing[*]}"
  command -v apt-get >/dev/null 2>&1 || die "not Debian-like; install by hand: ${missing[*]}"
  if [ "$(id -u)" -ne 0 ]; then
    command -v sudo >/dev/null 2>&1 || die "need root or sudo to install ${missing[*]}"
    sudo=(sudo)
  fi
  mpia_log "installing ${missing[*]}"
  "${sudo[@]}" env DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends \
    "${missing[@]}" || {
    "${sudo[@]}" apt-get update -q
    "${sudo[@]}" env DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends \
      "${missing[@]}"
  }
}
base_packages=(gcc g++ gfortran make pkg-config libhwloc-dev libevent-dev)
autotools_packages=(autoconf automake libtool flex perl python3)

# ---------------------------------------------------------------------------------------------
# --make-src: a source tree from bare git mirrors, submodules included (recursively).
# Mirror of https://github.com/OWNER/NAME (or a relative ../../OWNER/NAME): $mirrors/OWNER+NAME/repo
mirror_of() {
  local url="${1%.git}" name owner
  name="${url##*/}"; url="${url%/*}"; owner="${url##*/}"
  printf '%s/%s+%s/repo\n' "$mirrors" "$owner" "$name"
}
export_tree() {  # GIT_DIR REV DEST
  local gd="$1" rev="$2" dest="$3" key path url sha sub missing=()
  mkdir -p "$dest"
  # A partial (promisor) mirror may lack some blobs (Open MPI's bundled hwloc tarball, unused
  # here): leave those files out rather than fail.
  local listing
  listing="$(git --git-dir="$gd" ls-tree -r "$rev" | awk -F'\t' '{ split($1, m, " "); if (m[2] == "blob") print m[3] "\t" $2 }')"
  mapfile -t missing < <(cut -f1 <<<"$listing" | git --git-dir="$gd" cat-file --batch-check --buffer |
    awk '$2 == "missing" { print $1 }' | awk -F'\t' 'NR == FNR { miss[$1] = 1; next }
                                                   ($1 in miss) { print ":(exclude)" $2 }' - <(printf '%s\n' "$listing"))
  [ ${#missing[@]} -eq 0 ] || mpia_log "leaving out ${#missing[@]} file(s) missing from $gd: ${missing[*]#:(exclude)}"
  git --git-dir="$gd" archive --format=tar "$rev" -- . "${missing[@]}" 2>/dev/null | tar -x -C "$dest"
  git --git-dir="$gd" cat-file -e "$rev:.gitmodules" 2>/dev/null || return 0
  git --git-dir="$gd" config --blob "$rev:.gitmodules" --get-regexp '^submodule\..*\.path$' |
    while read -r key path; do
      url="$(git --git-dir="$gd" config --blob "$rev:.gitmodules" --get "${key%.path}.url")"
      sha="$(git --git-dir="$gd" rev-parse "$rev:$path")"
      sub="$(mirror_of "$url")"
      if ! git --git-dir="$sub" cat-file -e "$sha^{commit}" 2>/dev/null; then
        mpia_log "skipping submodule $path ($url @ ${sha:0:12}): not in $sub"
        continue
      fi
      mpia_log "submodule $path @ ${sha:0:12}"
      rm -rf "${dest:?}/$path"
      export_tree "$sub" "$sha" "$dest/$path"
    done
}

# ---------------------------------------------------------------------------------------------
# Versions and prefixes.
tree_version() {  # FLAVOUR SRC
  local src="$2" v=""
  case "$1" in
    openmpi)
      [ -f "$src/VERSION" ] || die "$src: no VERSION file, not an Open MPI tree"
      v="$(sed -n 's/^\(major\|minor\|release\)=\([0-9]*\)$/\2/p' "$src/VERSION" | paste -sd.)"
      [[ "$v" =~ ^[0-9]+\.[0-9]+\.[0-9]+$ ]] || v="" ;;
    mpich)
      if [ -f "$src/maint/version.m4" ]; then
        v="$(sed -n 's/.*MPICH_VERSION_m4\],\[\([^]]*\)\].*/\1/p' "$src/maint/version.m4")"
      elif [ -f "$src/configure" ]; then
        v="$(sed -n "s/^PACKAGE_VERSION='\(.*\)'/\1/p" "$src/configure" | head -n 1)"
      fi ;;
  esac
  [ -n "$v" ] || die "$src: cannot tell the $1 version"
  printf '%s\n' "$v"
}

installed_prefix() {  # FLAVOUR: the newest stamped prefix in the cache
  local stamps=()
  shopt -s nullglob
  stamps=("$cache/$1"-*/.mpia-stamp)
  shopt -u nullglob
  [ ${#stamps[@]} -gt 0 ] || return 1
  printf '%s\n' "${stamps[@]%/.mpia-stamp}" | sort -V | tail -n 1
}

# ---------------------------------------------------------------------------------------------
# Configure arguments (the cache stamp records them).
configure_openmpi() {
  local prefix="$1"
  printf '%s\n' \
    --prefix="$prefix" \
    --disable-dependency-tracking \
    --enable-shared --disable-static \
    --with-hwloc=external --with-libevent=external \
    --with-pmix=internal --with-prrte=internal \
    --enable-mpi-fortran=all \
    --disable-oshmem --disable-mpi-java --disable-io-romio \
    --without-ucx --without-ofi --without-cuda --without-rocm \
    --without-psm2 --without-portals4 --without-ucc --without-hcoll --without-knem --without-xpmem \
    --disable-sphinx
}
configure_mpich() {
  local prefix="$1"
  printf '%s\n' \
    --prefix="$prefix" \
    --disable-dependency-tracking \
    --enable-shared --disable-static \
    --with-device=ch4:ofi --with-libfabric=/usr \
    --with-hwloc=/usr \
    --with-pm=hydra \
    --enable-threads=multiple \
    --enable-fortran=all \
    --enable-fast=O2 \
    --disable-romio --disable-doc \
    --without-cuda --without-ze --without-hip
}

phase() {  # NAME LOG COMMAND...: runs under nice, logs, records wall and CPU (user+sys) time
  local name="$1" log="$2" t TIMEFORMAT='%R %U %S'
  shift 2
  mpia_log "$label: $name (log: $log)"
  if ! t="$( { time nice -n 5 "$@" >"$log" 2>&1; } 2>&1 )"; then
    tail -n 30 "$log" >&2
    die "$label: $name failed after ${t%% *} s (log: $log)"
  fi
  t="$(awk '{ printf "%-10s %7.0f s wall %7.0f s cpu", n, $1, $2 + $3 }' n="$name" <<<"$t")"
  printf '%s\n' "$t" >>"$times"
  mpia_log "$label: $t"
}

build_one() {  # FLAVOUR SRC
  local flavour="$1" src version prefix stamp args=() build t_start
  [ -n "$2" ] || die "no source tree for $flavour (give --$([ "$flavour" = openmpi ] && echo ompi || echo mpich)-src DIR)"
  src="$(cd "$2" && pwd)" || die "$2: no such directory"
  version="$(tree_version "$flavour" "$src")"
  label="$flavour-$version"
  prefix="$cache/$label"
  stamp="$prefix/.mpia-stamp"
  mapfile -t args < <("configure_$flavour" "$prefix")
  local want
  want="$(printf 'flavour=%s\nversion=%s\n' "$flavour" "$version"; printf 'configure %s\n' "${args[@]}")"
  if [ "$force" = 0 ] && [ -f "$stamp" ] && [ "$(cat "$stamp")" = "$want" ] \
     && [ -x "$prefix/bin/mpicc" ]; then
    mpia_log "$label: cached in $prefix (stamp matches; --force rebuilds)"
    return 0
  fi

  mkdir -p "$cache/logs"
  times="$cache/logs/$label.times"
  build="$cache/build/$label"
  # A build directory configured with the same arguments (an interrupted make) is reused: make
  # goes on where it stopped (MPICH's configure alone takes 15 minutes here).
  local reuse=0
  if [ "$force" = 0 ] && [ -f "$build/.mpia-configured" ] \
     && [ "$(cat "$build/.mpia-configured")" = "$want" ] && [ -x "$build/config.status" ]; then
    reuse=1
  fi
  if [ "$reuse" = 1 ]; then echo "(make resumed)" >>"$times"; else : >"$times"; fi
  t_start=$(date +%s)
  # A git tree: run autogen (again, when an earlier one was interrupted or failed).
  if [ ! -x "$src/configure" ] || [ -e "$src/.mpia-autogen-incomplete" ]; then
    apt_install "${autotools_packages[@]}"
    touch "$src/.mpia-autogen-incomplete"
    # The Debian python3 first: autogen's generators need only the standard library.
    local py_path=/usr/bin
    case "$flavour" in
      openmpi) phase autogen "$cache/logs/$label.autogen.log" \
                 env PATH="$py_path:$PATH" bash -c "cd '$src' && ./autogen.pl --no-3rdparty hwloc,libevent" ;;
      # No UCX, embedded libfabric or hwloc (Debian's are used), no test suite, no ROMIO.
      # Submodules left unchecked-out are empty directories: remove them, or autogen.sh
      # copies the empty modules/hwloc into hydra and then fails running its autogen.sh.
      mpich)
        local m
        for m in "$src"/modules/*/; do
          [ -e "$m/configure.ac" ] || [ -n "$(ls -A "$m")" ] || rmdir "$m"
        done
        [ -e "$src/src/pm/hydra/modules/hwloc/configure.ac" ] || rm -rf "$src/src/pm/hydra/modules/hwloc"
        phase autogen "$cache/logs/$label.autogen.log" \
               env PATH="$py_path:$PATH" bash -c "cd '$src' && ./autogen.sh -without-ucx -without-ofi -without-hwloc -without-test -without-romio -yaksa-depth=2" ;;
    esac
    rm -f "$src/.mpia-autogen-incomplete"
  fi
  rm -rf "$prefix"
  if [ "$reuse" = 1 ]; then
    mpia_log "$label: reusing the configured $build (--force configures again)"
  else
    rm -rf "$build"; mkdir -p "$build"
    # shellcheck disable=SC2016  # $0 and $@ are the inner shell's
    phase configure "$cache/logs/$label.configure.log" \
      bash -c 'cd "$0" && exec "$@"' "$build" "$src/configure" "${args[@]}"
    printf '%s\n' "$want" >"$build/.mpia-configured"
  fi
  phase make "$cache/logs/$label.make.log" make -C "$build" -j "$jobs"
  phase install "$cache/logs/$label.install.log" make -C "$build" install
  printf '%s\n' "$want" >"$stamp"
  rm -rf "$build"
  printf '%-10s %7d s wall\n' total "$(( $(date +%s) - t_start ))" >>"$times"
  mpia_log "$label: installed in $prefix ($(du -sh "$prefix" | cut -f1)); times:"
  sed 's/^/    /' "$times" >&2
}

case "$mode" in
  print)
    mpia_check_flavour "$query" || exit 1
    installed_prefix "$query" || { mpia_log "no $query built in $cache"; exit 1; } ;;
  make-src)
    mpia_check_flavour "$query" || exit 1
    [ -n "$make_dest" ] || die "--make-src needs FLAVOUR DEST"
    [ ! -e "$make_dest" ] || die "$make_dest exists already"
    case "$query" in
      openmpi) repo="$mirrors/open-mpi+ompi/repo"; : "${make_rev:=v5.0.10}" ;;
      mpich) repo="$mirrors/pmodels+mpich/repo"; : "${make_rev:=v4.3.2}" ;;
    esac
    [ -d "$repo" ] || die "no mirror $repo (or clone with --recurse-submodules instead)"
    export_tree "$repo" "$make_rev" "$make_dest"
    mpia_log "source tree of $query $make_rev in $make_dest" ;;
  build)
    if [ ${#flavours[@]} -eq 0 ]; then
      [ -n "$ompi_src" ] && flavours+=(openmpi)
      [ -n "$mpich_src" ] && flavours+=(mpich)
      [ ${#flavours[@]} -gt 0 ] || { usage >&2; die "give --ompi-src and/or --mpich-src"; }
    fi
    apt_install "${base_packages[@]}"
    for f in "${flavours[@]}"; do
      case "$f" in
        openmpi) build_one openmpi "$ompi_src" ;;
        # MPICH's configure links libfabric with its static dependencies (pkg-config --static):
        # their -dev packages too, or libmpi.la fails to link at the end of make.
        mpich) apt_install libfabric-dev libpsm2-dev libpsm-infinipath1-dev librdmacm-dev
               build_one mpich "$mpich_src" ;;
      esac
    done ;;
esac
