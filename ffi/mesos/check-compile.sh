#!/usr/bin/env bash
# Compiles (and links, and smoke-runs) the nestguard Mesos modules against
# the real headers of a Mesos release, without building Mesos.
#
#   MESOS_GIT=<clone or bare mirror of apache/mesos> ffi/mesos/check-compile.sh
#
# Environment:
#   MESOS_GIT   required; any git repository holding the Mesos tag
#   MESOS_REF   the tag or commit to check against (default 1.11.0)
#   WORK_DIR    scratch directory (default: a new one under $TMPDIR, removed
#               at exit unless KEEP_WORK=1)
#   SKIP_APT=1  do not apt-get install the header packages
#   SKIP_SMOKE=1  stop after compiling and linking
#   SKIP_RUNTIME=1  skip stage 5 (it builds libprocess: several minutes)
#
# What it does:
#   1. installs the Debian packages whose headers Mesos' public headers
#      include (as root, when missing);
#   2. lays out a Mesos "source + build" tree in WORK_DIR from MESOS_REF:
#      include/, 3rdparty/stout/include, 3rdparty/libprocess/include (git
#      archive), build/include/mesos/version.hpp (from version.hpp.in and
#      the version in configure.ac) and build/include/**/*.pb.h (Debian's
#      protoc over every include/**/*.proto);
#   3. runs ffi/mesos/Makefile on that tree with -Werror: -fsyntax-only on
#      every source, then the objects and libnestguard_mesos.so linked to
#      target/debug/libnestguard.so (cargo build --lib), and checks that the
#      three module symbols, and no other strong symbol, are exported;
#   3b. with cargo-c installed: the same build against an installed layout,
#      Mesos' headers under PREFIX/include and nestguard from cargo cinstall,
#      found by pkg-config (the module needs libnestguard.so.0, rpath
#      PREFIX/lib);
#   4. smoke test (ffi/mesos/test/module_smoke.cpp): compiles the generated
#      .pb.cc the modules use into a stand-in for libmesos, loads the module
#      library with dlopen as Mesos' module manager does, checks every
#      ModuleBase field and calls the modules with real Mesos protobufs;
#   5. isolator runtime (ffi/mesos/test/isolator_runtime.cpp): builds
#      libprocess from the same sources (no SSL, libev) and drives
#      io_nestguard_Isolator through every Mesos call on a real libprocess
#      (the shim's thread pool, process::io::poll), with the disk/du isolator.
#
# Not part of the test suite: CI has no Mesos sources.
set -euo pipefail

here="$(cd "$(dirname "$0")" && pwd)"
repo="$(cd "$here/../.." && pwd)"

: "${MESOS_GIT:?set MESOS_GIT to a clone or bare mirror of apache/mesos}"
MESOS_REF="${MESOS_REF:-1.11.0}"

if [ -z "${WORK_DIR:-}" ]; then
  WORK_DIR="$(mktemp -d "${TMPDIR:-/tmp}/nestguard-mesos-check.XXXXXX")"
  if [ "${KEEP_WORK:-0}" != 1 ]; then
    trap 'rm -rf "$WORK_DIR"' EXIT
  fi
fi
mkdir -p "$WORK_DIR"

step() { printf '== %s\n' "$*"; }

# 1. Header packages. Mesos' public headers include stout and libprocess,
# which include boost, glog (and through it gflags), protobuf, picojson,
# rapidjson and curl (stout/net.hpp).
# Stage 5 also builds libprocess: libev, http-parser and zlib.
packages=(g++ make protobuf-compiler libprotobuf-dev libboost-dev
  libgoogle-glog-dev libgflags-dev picojson-dev rapidjson-dev
  libcurl4-openssl-dev libev-dev libhttp-parser-dev zlib1g-dev)
if [ "${SKIP_APT:-0}" != 1 ]; then
  missing=()
  for p in "${packages[@]}"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'ok installed' ||
      missing+=("$p")
  done
  if [ "${#missing[@]}" -gt 0 ]; then
    step "apt-get install ${missing[*]}"
    if [ "$(id -u)" -ne 0 ]; then
      echo "error: missing packages ${missing[*]}; install them as root" >&2
      exit 1
    fi
    apt-get update -qq
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${missing[@]}" >/dev/null
  fi
fi

# 2. The Mesos tree.
mesos="$WORK_DIR/mesos"
rm -rf "$mesos"
mkdir -p "$mesos"
step "Mesos $MESOS_REF headers from $MESOS_GIT"
git -C "$MESOS_GIT" rev-parse --verify -q "$MESOS_REF^{commit}" >/dev/null || {
  echo "error: $MESOS_GIT has no $MESOS_REF" >&2
  exit 1
}
git -C "$MESOS_GIT" archive "$MESOS_REF" include configure.ac \
  3rdparty/stout/include 3rdparty/libprocess/include | tar -x -C "$mesos"

version="$(sed -n 's/^AC_INIT(\[mesos\], \[\([0-9.]*\)\]).*/\1/p' "$mesos/configure.ac")"
[ -n "$version" ] || { echo "error: no version in configure.ac" >&2; exit 1; }
IFS=. read -r major minor patch <<<"$version"
mkdir -p "$mesos/build/include/mesos"
sed -e "s/@PACKAGE_VERSION@/$version/" \
    -e "s/@MESOS_MAJOR_VERSION@/$major/g" \
    -e "s/@MESOS_MINOR_VERSION@/$minor/g" \
    -e "s/@MESOS_PATCH_VERSION@/$patch/g" \
    "$mesos/include/mesos/version.hpp.in" >"$mesos/build/include/mesos/version.hpp"
step "MESOS_VERSION $version; protoc $(protoc --version)"
(cd "$mesos/include" && find mesos -name '*.proto' -print0 | sort -z |
  xargs -0 protoc -I. --cpp_out="$mesos/build/include")

# 3. Compile and link with the shim's own Makefile.
step "cargo build --lib (libnestguard.so)"
(cd "$repo" && cargo build --lib --quiet)
debug="${CARGO_TARGET_DIR:-$repo/target}/debug"
out="$WORK_DIR/out"
make_args=(-C "$here" MESOS_HOME="$mesos" OUT="$out" WERROR=-Werror
  NESTGUARD_LIB_DIR="$debug" NESTGUARD_INCLUDE="$repo/include"
  NESTGUARD_RPATH="$debug")
step "make check-headers (g++ $("${CXX:-g++}" -dumpfullversion), -std=c++11 -fsyntax-only -Werror)"
make -s "${make_args[@]}" check-headers
step "make (objects + libnestguard_mesos.so)"
make -s "${make_args[@]}"

step "exported symbols"
# Strong definitions only: weak (W/V) and unique (u) ones are inline code of the
# C++ standard library, whose headers force default visibility.
exported="$(nm -D --defined-only "$out/libnestguard_mesos.so" |
  awk '$2 !~ /^[WVwvu]$/ {print $3}' | sort)"
expected="$(printf '%s\n' io_nestguard_Authorizer io_nestguard_CredentialHook io_nestguard_Isolator | sort)"
if [ "$exported" != "$expected" ]; then
  echo "error: libnestguard_mesos.so exports:" >&2
  echo "$exported" >&2
  exit 1
fi
echo "$exported"

# 3b. The same against installed copies, as an operator builds it: Mesos
# laid out as `make install` does (PREFIX/include/{mesos,stout,process}) and
# nestguard installed by cargo cinstall, found by pkg-config.
if cargo cinstall --version >/dev/null 2>&1; then
  prefix="$WORK_DIR/prefix"
  step "installed layout: cargo cinstall + make MESOS_HOME=$prefix (pkg-config)"
  rm -rf "$prefix"
  mkdir -p "$prefix/include"
  cp -a "$mesos/include/mesos" "$mesos/3rdparty/stout/include/stout" \
    "$mesos/3rdparty/libprocess/include/process" "$prefix/include/"
  cp -a "$mesos/build/include/mesos/." "$prefix/include/mesos/"
  (cd "$repo" && cargo cinstall -p nestguard --profile dev --library-type cdylib \
    --prefix "$prefix" --libdir "$prefix/lib" \
    --target-dir "${CARGO_TARGET_DIR:-$repo/target}/cinstall")
  installed_out="$WORK_DIR/out-installed"
  PKG_CONFIG_PATH="$prefix/lib/pkgconfig" make -s -C "$here" MESOS_HOME="$prefix" \
    OUT="$installed_out" WERROR=-Werror
  needed="$(readelf -d "$installed_out/libnestguard_mesos.so")"
  grep -q 'Shared library: \[libnestguard.so.0\]' <<<"$needed" &&
    grep -q "R.*PATH.*\[$prefix/lib\]" <<<"$needed" || {
    echo "error: the module does not need libnestguard.so.0 from $prefix/lib:" >&2
    echo "$needed" >&2
    exit 1
  }
  echo "libnestguard_mesos.so needs libnestguard.so.0, rpath $prefix/lib"
else
  step "installed layout: SKIPPED (cargo-c not installed: cargo install cargo-c --locked)"
fi

if [ "${SKIP_SMOKE:-0}" = 1 ]; then
  echo "compile check passed (smoke test skipped)"
  exit 0
fi

# 4. Smoke test.
"$here/test/run-smoke.sh" "$mesos" "$out" "$repo"

if [ "${SKIP_RUNTIME:-0}" = 1 ]; then
  echo "compile check and smoke test passed (isolator runtime skipped)"
  exit 0
fi

# 5. Isolator on a real libprocess.
"$here/test/run-isolator-runtime.sh" "$mesos" "$out" "$MESOS_GIT" "$MESOS_REF"
echo "compile check, smoke test and isolator runtime passed"
