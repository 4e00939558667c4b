#!/usr/bin/env bash
# Builds libnestguard.so and its launch helper for x86_64 Linux hosts with
# glibc 2.17 or later (CentOS/RHEL 7 and the other distributions Mesos 1.11
# clusters run on), installs them as a C library into a staging tree, and
# fails unless every versioned glibc symbol they need is at most 2.17.
#
#   scripts/build-glibc217.sh [DESTDIR]     # default: target/glibc-2.17/stage
#
# Environment: PREFIX (default /usr/local), LIBDIR (default $PREFIX/lib),
# CARGO_TARGET_DIR (as cargo). Run by hand, not in CI (it needs zig).
#
# How: zig links against a glibc of the version named in the target, so the
# objects rustc makes (Rust's std supports glibc 2.17) are linked to 2.17's
# symbol versions; cargo-zigbuild (`pip install ziglang cargo-zigbuild`, or
# `cargo install cargo-zigbuild --locked` plus zig) provides that linker as
# `cargo-zigbuild zig cc`. The library is built and installed by cargo-c's
# `cargo cinstall` (`cargo install cargo-c --locked`), with that linker for
# the target, exactly as an ordinary install: libnestguard.so.0.1.0 with
# SONAME libnestguard.so.0 and its two links, include/nestguard.h,
# lib/pkgconfig/nestguard.pc. `nestguard-launch` (used by nestguard's own
# launcher; the library looks for it next to itself) is built with the
# same linker and installed into LIBDIR.
#
# The check: `objdump -T` lists each dynamic symbol with its version
# (GLIBC_2.2.5 ... GLIBC_2.17 ...); any GLIBC_x.y above 2.17, or a library
# other than glibc's own (libc, libm, libpthread, libdl, librt, libgcc_s,
# ld-linux), fails the build.
set -euo pipefail
cd "$(dirname "$0")/.."
repo="$(pwd)"

triple=x86_64-unknown-linux-gnu
glibc=2.17
destdir="${1:-${CARGO_TARGET_DIR:-$repo/target}/glibc-$glibc/stage}"
prefix="${PREFIX:-/usr/local}"
libdir="${LIBDIR:-$prefix/lib}"

need() {
  command -v "$1" >/dev/null 2>&1 || {
    echo "error: $1 not found; $2" >&2
    exit 1
  }
}
need cargo-zigbuild "pip install ziglang cargo-zigbuild (or cargo install cargo-zigbuild --locked, and zig)"
need cargo-cinstall "cargo install cargo-c --locked"
need objdump "apt-get install binutils"
need readelf "apt-get install binutils"

work="$(mktemp -d "${TMPDIR:-/tmp}/nestguard-glibc.XXXXXX")"
trap 'rm -rf "$work"' EXIT

# The linker: zig cc for x86_64 glibc 2.17 (the wrapper cargo-zigbuild
# itself writes for the target x86_64-unknown-linux-gnu.2.17).
linker="$work/zigcc-$glibc"
cat >"$linker" <<EOF
#!/bin/sh
exec cargo-zigbuild zig cc -- -g -fno-sanitize=all -target x86_64-linux-gnu.$glibc "\$@"
EOF
chmod 0755 "$linker"
export CARGO_TARGET_X86_64_UNKNOWN_LINUX_GNU_LINKER="$linker"
# Host tools (build scripts, proc macros) keep the host's linker: with an
# explicit --target only the target's artifacts use the one above.

echo "== cargo cinstall --target $triple (zig cc, glibc $glibc) into $destdir"
rm -rf "$destdir"
cargo cinstall -p nestguard --release --target "$triple" --library-type cdylib \
  --prefix "$prefix" --libdir "$libdir" --destdir "$destdir"
echo "== cargo build --release --target $triple --bin nestguard-launch"
cargo build --release --target "$triple" --bin nestguard-launch
target_dir="${CARGO_TARGET_DIR:-$repo/target}"
install -m 0755 "$target_dir/$triple/release/nestguard-launch" "$destdir$libdir/"

lib="$(readlink -f "$destdir$libdir/libnestguard.so")"
helper="$destdir$libdir/nestguard-launch"

echo "== checks"
failed=0
soname="$(readelf -d "$lib" | sed -n 's/.*Library soname: \[\(.*\)\]/\1/p')"
if [ "$soname" = libnestguard.so.0 ]; then
  echo "ok   SONAME $soname"
else
  echo "FAIL SONAME is '$soname', expected libnestguard.so.0"
  failed=1
fi
for f in "$lib" "$helper"; do
  name="$(basename "$f")"
  # Versions of glibc symbols: "... GLIBC_2.14  memcpy" (the version column
  # is the one before the name; hidden ones are in parentheses).
  versions="$(objdump -T "$f" | grep -o 'GLIBC_[0-9][0-9.]*' | sort -u -V)"
  newest="$(printf '%s\n' "$versions" | tail -n 1)"
  too_new="$(printf '%s\n' "$versions" | sed 's/^GLIBC_//' |
    awk -v max="$glibc" -F. '{ split(max, m, "."); if ($1 > m[1] || ($1 == m[1] && $2 + 0 > m[2] + 0)) print "GLIBC_" $0 }')"
  if [ -n "$too_new" ]; then
    echo "FAIL $name needs $(echo "$too_new" | tr '\n' ' ')for:"
    for v in $too_new; do
      objdump -T "$f" | grep -F "$v " | awk '{print "       " $NF}'
    done
    failed=1
  else
    echo "ok   $name: newest glibc symbol version $newest (at most GLIBC_$glibc)"
  fi
  others="$(readelf -d "$f" | sed -n 's/.*Shared library: \[\(.*\)\]/\1/p' |
    grep -v -E '^(libc|libm|libpthread|libdl|librt|libgcc_s)\.so\.[0-9]+$|^ld-linux-x86-64\.so\.2$' || true)"
  if [ -n "$others" ]; then
    echo "FAIL $name needs libraries outside glibc: $others"
    failed=1
  else
    echo "ok   $name: needs only $(readelf -d "$f" | sed -n 's/.*Shared library: \[\(.*\)\]/\1/p' | tr '\n' ' ')"
  fi
done
for f in include/nestguard.h lib/pkgconfig/nestguard.pc; do
  case "$f" in
    include/*) path="$destdir$prefix/$f" ;;
    *) path="$destdir$libdir/${f#lib/}" ;;
  esac
  if [ -f "$path" ]; then echo "ok   $path"; else echo "FAIL missing $path"; failed=1; fi
done
if [ "$failed" -ne 0 ]; then
  echo "glibc $glibc build FAILED" >&2
  exit 1
fi
echo "glibc $glibc build in $destdir$prefix (copy it to the hosts' $prefix, or package it)"
