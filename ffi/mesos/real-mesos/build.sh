#!/usr/bin/env bash
# Builds everything the real-Mesos checks need into $CACHE (see README.md in
# ffi/mesos, "Real Mesos"). Each step is skipped when its stamp
# ($CACHE/stamps/<step>) holds the hash of the step's inputs, so a second run
# only checks stamps (and cargo's own no-op build).
#
#   MESOS_GIT=<apache/mesos mirror> PROTOBUF_GIT=<protocolbuffers/protobuf mirror> \
#   CACHE=<dir> ffi/mesos/real-mesos/build.sh [step...]
#
# Steps: packages binary libs sources protoc protos stubs mains nestguard shim
set -euo pipefail

here="$(cd "$(dirname "$0")" && pwd)"
repo="$(cd "$here/../../.." && pwd)"
: "${MESOS_GIT:?set MESOS_GIT to a mirror of apache/mesos (tag 1.11.0)}"
: "${PROTOBUF_GIT:?set PROTOBUF_GIT to a mirror of protocolbuffers/protobuf (tag v3.5.0)}"
CACHE="${CACHE:-$HOME/.cache/nestguard-real-mesos}"
MESOS_REF=1.11.0
PROTOBUF_REF=v3.5.0
JOBS="${JOBS:-2}"

S="$CACHE/src/mesos-$MESOS_REF"   # MESOS_HOME for the shim's Makefile
B="$S/build"                      # its "build" tree (generated headers, 3rdparty)
T="$B/3rdparty"
P="$CACHE/src/protobuf-3.5.0"
LIB="$CACHE/lib"                  # every non-glibc library the binaries load
BIN="$CACHE/bin"                  # mesos-agent, mesos-master, mesos-containerizer, mesos-io-switchboard
NG="$CACHE/ng"                    # libnestguard.so, libnestguard_mesos.so, nestguard
mkdir -p "$CACHE"/{dl,stamps,build} "$LIB" "$BIN" "$NG"

log() { printf '== %s\n' "$*" >&2; }
die() { printf 'build.sh: error: %s\n' "$*" >&2; exit 1; }
hash_of() { { printf '%s\n' "$@"; } | sha256sum | cut -d' ' -f1; }
files_hash() { cat "$@" | sha256sum | cut -d' ' -f1; }
fresh() { [ -f "$CACHE/stamps/$1" ] && [ "$(cat "$CACHE/stamps/$1")" = "$2" ]; }
stamp() { printf '%s\n' "$2" >"$CACHE/stamps/$1"; }

# The defines that give Mesos' classes the layout the binary was built with.
MESOS_DEFINES="-D_GLIBCXX_USE_CXX11_ABI=1 -D__STDC_FORMAT_MACROS -DPICOJSON_USE_INT64 \
-DUSE_SSL_SOCKET=1 -DUSE_LIBEVENT=1 -DENABLE_SECCOMP_ISOLATOR=1 -DENABLE_NVML=1"

step_packages() {
  local need=() p
  for p in g++ libc6-dev make cmake patch binutils curl patchelf python3 dpkg-dev libcurl4-openssl-dev; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'ok installed' || need+=("$p")
  done
  [ "${#need[@]}" -eq 0 ] && return
  log "apt-get install ${need[*]}"
  apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${need[@]}" >/dev/null
}

# libmesos from PyPI's binary distribution of mesos.scheduler. pip refuses the
# tarball (not a Python project) and names its URL in the error; we fetch that.
step_binary() {
  local tgz="$CACHE/dl/mesos.scheduler-1.11.0.linux-x86_64.tar.gz" h
  if [ ! -s "$tgz" ]; then
    log "pip download mesos.scheduler==1.11.0.linux-x86_64 (for its URL)"
    local err url
    err="$(cd "$CACHE/dl" && python3 -m pip download --no-deps -d "$CACHE/dl/pip" \
      'mesos.scheduler==1.11.0.linux-x86_64' 2>&1 || true)"
    url="$(grep -o 'https://[^ ]*mesos\.scheduler-1\.11\.0\.linux-x86_64\.tar\.gz' <<<"$err" | head -1)"
    [ -n "$url" ] || die "pip named no tarball URL: $err"
    curl -fsSL -o "$tgz.part" "$url" && mv "$tgz.part" "$tgz"
    rm -rf "$CACHE/dl/pip"
  fi
  h="$(sha256sum "$tgz" | cut -d' ' -f1)"
  fresh binary "$h" && [ -f "$LIB/libmesos-1.11.0.so" ] && return
  log "extract _scheduler.so as libmesos-1.11.0.so"
  local x="$CACHE/dl/x"; rm -rf "$x"; mkdir -p "$x"
  tar -xzf "$tgz" -C "$x" --wildcards '*/_scheduler.so'
  cp "$(find "$x" -name _scheduler.so)" "$LIB/libmesos-1.11.0.so"
  rm -rf "$x"
  # It has no SONAME; give it one so NEEDED entries hold a bare name.
  patchelf --set-soname libmesos-1.11.0.so "$LIB/libmesos-1.11.0.so"
  stamp binary "$h"
}

# Private copies of the Debian libraries libmesos and the forwarders need.
DEBS="libsvn1 libapr1 libaprutil1 libserf-1-1 libutf8proc2 libcurl3-gnutls libsasl2-2 libssl3"
step_libs() {
  local h; h="$(hash_of $DEBS)"
  fresh libs "$h" && return
  log "private libraries: apt-get download $DEBS"
  local d="$CACHE/dl/debs"; rm -rf "$d"; mkdir -p "$d/root"
  (cd "$d" && apt-get download $DEBS >/dev/null 2>&1) || die "apt-get download $DEBS failed"
  local deb; for deb in "$d"/*.deb; do dpkg -x "$deb" "$d/root"; done
  find "$d/root" -name '*.so.*' \( -type f -o -type l \) -exec cp -P {} "$LIB/" \;
  rm -rf "$d"
  stamp libs "$h"
}

# Copies into $LIB every library (outside glibc) that the given objects load.
copy_deps() {
  local round missing lib path
  for round in 1 2 3 4 5; do
    missing=0
    while read -r lib path; do
      case "$lib" in
        libc.so*|libm.so*|libdl.so*|libpthread.so*|librt.so*|ld-linux*|linux-vdso*|libutil.so*|libresolv.so*) continue ;;
      esac
      [ -e "$LIB/$lib" ] && continue
      [ "$path" = "not" ] && die "library $lib not found (needed by one of: $*)"
      cp -L "$path" "$LIB/$lib"; missing=1
    done < <(for f in "$@" "$LIB/libcurl-gnutls.so.4" "$LIB/libcrypto.so.3"; do
               LD_LIBRARY_PATH="$LIB" ldd "$f" 2>/dev/null; done |
             awk '$2=="=>" {print $1, $3}' | sort -u)
    [ "$missing" = 0 ] && return
  done
}

step_sources() {
  local h; h="$(hash_of "$(git -C "$MESOS_GIT" rev-parse "$MESOS_REF^{commit}")" \
    "$(git -C "$PROTOBUF_GIT" rev-parse "$PROTOBUF_REF^{commit}")" v2)"
  fresh sources "$h" && return
  log "Mesos $MESOS_REF sources (without the blobs the mirror lacks)"
  rm -rf "$S" "$P"; mkdir -p "$S" "$P"
  git -C "$MESOS_GIT" ls-tree -r --name-only "$MESOS_REF" |
    grep -v -E '^3rdparty/(gperftools-2\.5|grpc-1\.10\.0|libarchive-3\.3\.2|protobuf-3\.5\.0|zookeeper-3\.4\.8)\.tar\.gz$' \
    >"$CACHE/src/mesos-paths.txt"
  # git archive also reports the missing blobs it skips; the check below is
  # what counts: every listed path must be there.
  tr '\n' '\0' <"$CACHE/src/mesos-paths.txt" |
    xargs -0 git -C "$MESOS_GIT" archive "$MESOS_REF" -- 2>/dev/null | tar -x -C "$S"
  local n; n="$(cd "$S" && find . \( -type f -o -type l \) | wc -l)"
  [ "$n" -ge "$(wc -l <"$CACHE/src/mesos-paths.txt")" ] || die "git archive gave $n files"

  local version major minor patch
  version="$(sed -n 's/^AC_INIT(\[mesos\], \[\([0-9.]*\)\]).*/\1/p' "$S/configure.ac")"
  IFS=. read -r major minor patch <<<"$version"
  mkdir -p "$B/include/mesos" "$B/src" "$T"
  sed -e "s/@PACKAGE_VERSION@/$version/" -e "s/@MESOS_MAJOR_VERSION@/$major/g" \
      -e "s/@MESOS_MINOR_VERSION@/$minor/g" -e "s/@MESOS_PATCH_VERSION@/$patch/g" \
      "$S/include/mesos/version.hpp.in" >"$B/include/mesos/version.hpp"

  log "3rdparty: boost glog picojson rapidjson elfio concurrentqueue csi nvml libseccomp"
  local t
  for t in boost-1.65.0 glog-0.4.0 picojson-1.3.0 rapidjson-1.1.0 elfio-3.2 \
           concurrentqueue-7b69a8f csi-0.2.0 csi-1.1.0 nvml-352.79 libseccomp-2.3.3; do
    tar -xzf "$S/3rdparty/$t.tar.gz" -C "$T"
  done
  for t in boost-1.65.0 glog-0.4.0 picojson-1.3.0 rapidjson-1.1.0; do
    (cd "$T/$t" && patch -s -p1 <"$S/3rdparty/$t.patch")
  done
  # CSI protos laid out as Mesos' 3rdparty build does (csi/v0, csi/v1).
  mkdir -p "$T/csi/csi/v0" "$T/csi/csi/v1"
  cp "$T/spec-0.2.0/csi.proto" "$T/csi/csi/v0/csi.proto"
  cp "$T/spec-1.1.0/csi.proto" "$T/csi/csi/v1/csi.proto"
  # glog's generated headers (logging.h ...) land in its cmake build dir.
  mkdir -p "$T/glog-build"
  (cd "$T/glog-build" && cmake -DWITH_GFLAGS=OFF -DBUILD_TESTING=OFF \
     -DCMAKE_POLICY_VERSION_MINIMUM=3.5 ../glog-0.4.0 >cmake.log 2>&1) ||
    die "glog cmake failed: $T/glog-build/cmake.log"

  log "protobuf $PROTOBUF_REF + Mesos' patch"
  git -C "$PROTOBUF_GIT" archive "$PROTOBUF_REF" src cmake configure.ac | tar -x -C "$P"
  (cd "$P" && patch -s -p1 <"$S/3rdparty/protobuf-3.5.0.patch")
  ln -sfn "$P" "$T/protobuf-3.5.0"
  stamp sources "$h"
}

# protoc 3.5.0: the generated headers must match the 3.5 runtime headers.
step_protoc() {
  local h; h="$(cat "$CACHE/stamps/sources")"
  fresh protoc "$h" && [ -x "$CACHE/build/protoc/protoc" ] && return
  log "protoc 3.5.0 (cmake; several minutes)"
  mkdir -p "$CACHE/build/protoc"
  (cd "$CACHE/build/protoc" &&
    cmake -DCMAKE_BUILD_TYPE=Release -Dprotobuf_BUILD_TESTS=OFF \
      -DCMAKE_CXX_FLAGS="-std=c++11 -w" -DCMAKE_POLICY_VERSION_MINIMUM=3.5 "$P/cmake" >cmake.log 2>&1 &&
    make -j"$JOBS" protoc >make.log 2>&1) || die "protoc build failed: $CACHE/build/protoc/make.log"
  stamp protoc "$h"
}

step_protos() {
  local h; h="$(hash_of "$(cat "$CACHE/stamps/protoc")" v1)"
  fresh protos "$h" && return
  log "generate .pb.h/.pb.cc (include/mesos, CSI, src)"
  local protoc="$CACHE/build/protoc/protoc" inc=(-I"$S/include" -I"$S/src" -I"$T/csi" -I"$P/src")
  (cd "$S/include" && find mesos -name '*.proto' -print0 | xargs -0 "$protoc" "${inc[@]}" --cpp_out="$B/include")
  (cd "$T/csi" && "$protoc" "${inc[@]}" --cpp_out="$B/include" csi/v0/csi.proto csi/v1/csi.proto)
  (cd "$S/src" && find . -name '*.proto' -not -path './tests/*' -not -path './examples/*' -printf '%P\0' |
     xargs -0 "$protoc" "${inc[@]}" --cpp_out="$B/src")
  stamp protos "$h"
}

step_stubs() {
  local h; h="$(hash_of "$(files_hash "$here/stubs/gen_stubs.py")" "$(cat "$CACHE/stamps/binary")")"
  fresh stubs "$h" && return
  log "stub libraries (OpenSSL 1.0, libcurl CURL_OPENSSL_3, Python 2)"
  local g="$CACHE/build/stubs"; rm -rf "$g"; mkdir -p "$g"
  python3 "$here/stubs/gen_stubs.py" "$LIB/libmesos-1.11.0.so" "$g" >&2
  gcc -shared -fPIC -O1 -w -o "$LIB/libcrypto.so.1.0.0" -Wl,-soname,libcrypto.so.1.0.0 \
    -Wl,--version-script,"$g/crypto.map" "$g/crypto.c" -ldl
  gcc -shared -fPIC -O1 -w -o "$LIB/libssl.so.1.0.0" -Wl,-soname,libssl.so.1.0.0 \
    -Wl,--version-script,"$g/ssl.map" "$g/ssl.c"
  gcc -shared -fPIC -O1 -w -o "$LIB/libcurl.so.4" -Wl,-soname,libcurl.so.4 \
    -Wl,--version-script,"$g/curl.map" "$g/curl.c" -ldl
  gcc -shared -fPIC -O1 -w -o "$LIB/libnestguard-python2-stub.so" "$g/python.c"
  stamp stubs "$h"
}

mesos_includes() {
  printf '%s ' -I"$S/src" -I"$B/src" -I"$S/3rdparty/libprocess/src" -isystem "$here/include" \
    -isystem "$B/include" -isystem "$S/include" -isystem "$S/3rdparty/stout/include" \
    -isystem "$S/3rdparty/libprocess/include" -isystem "$T/boost-1.65.0" -isystem "$T/glog-build" \
    -isystem "$T/glog-0.4.0/src" -isystem "$T/picojson-1.3.0" -isystem "$P/src" \
    -isystem "$T/rapidjson-1.1.0/include" -isystem "$T/elfio-3.2" \
    -isystem "$T/concurrentqueue-7b69a8f" -isystem "$T/nvml-352.79" \
    -isystem "$T/libseccomp-2.3.3/include"
}

# mains/<m>.cpp -> $BIN/mesos-<m>
MAINS="agent master containerizer io-switchboard"
all_mains_built() {
  local m
  for m in $MAINS; do [ -x "$BIN/mesos-$m" ] || return 1; done
}

step_mains() {
  local h; h="$(hash_of "$(files_hash "$here"/mains/*.cpp "$here"/include/grpcpp/*.h)" "$MAINS" \
    "$(cat "$CACHE/stamps/protos")" "$(cat "$CACHE/stamps/stubs")" "$MESOS_DEFINES" v1)"
  fresh mains "$h" && all_mains_built && return
  log "mains: mesos-agent mesos-master mesos-containerizer mesos-io-switchboard (-O1, a minute or two)"
  local o="$CACHE/build/mains"; mkdir -p "$o"
  local m pids=()
  for m in $MAINS; do
    # A failed compile leaves an old object behind; the check below must not link it.
    rm -f "$o/$m.o"
    # shellcheck disable=SC2046
    g++ -std=c++11 -O1 -w $MESOS_DEFINES $(mesos_includes) -MD -c -o "$o/$m.o" "$here/mains/$m.cpp" \
      2>"$o/$m.log" &
    pids+=($!)
    # A failure shows below, with its log, as a missing object.
    [ "${#pids[@]}" -ge "$JOBS" ] && { wait "${pids[0]}" || true; pids=("${pids[@]:1}"); }
  done
  for m in "${pids[@]}"; do wait "$m" || true; done
  for m in $MAINS; do
    [ -s "$o/$m.o" ] || die "compiling $m.cpp failed: $(head -c 3000 "$o/$m.log")"
    if grep -qE '/usr/include/(google|glog|boost|picojson\.h|rapidjson)' "$o/$m.d"; then
      die "$m.cpp picked up a system header instead of Mesos' bundled one ($o/$m.d)"
    fi
    g++ -o "$BIN/mesos-$m" "$o/$m.o" -L"$LIB" -l:libmesos-1.11.0.so -l:libnestguard-python2-stub.so \
      -Wl,--disable-new-dtags -Wl,-rpath,'$ORIGIN/../lib' -Wl,-rpath-link,"$LIB" \
      -Wl,--allow-shlib-undefined -lpthread -ldl 2>"$o/$m.link.log" ||
      die "linking mesos-$m failed: $(head -c 3000 "$o/$m.link.log")"
  done
  copy_deps "$BIN"/mesos-agent "$BIN"/mesos-master "$BIN"/mesos-containerizer "$BIN"/mesos-io-switchboard
  stamp mains "$h"
}

# libnestguard.so + the nestguard binary (executor, `nestguard agent`).
step_nestguard() {
  log "cargo build --release (libnestguard.so, nestguard, nestguard-launch, nestguard-exec)"
  (cd "$repo" && cargo build --release --workspace --quiet) || die "cargo build --release failed"
  local t="${CARGO_TARGET_DIR:-$repo/target}/release" f
  for f in libnestguard.so nestguard nestguard-launch; do
    cmp -s "$t/$f" "$NG/$f" || cp "$t/$f" "$NG/$f"
  done
  # The exec stage statically linked: it runs as root in containers whose
  # environment the tenant chose, so no dynamic loader may read LD_PRELOAD
  # and the like for it (an explicit --target keeps the flag off build
  # scripts and the cdylib).
  log "cargo build --release nestguard-exec, statically linked"
  (cd "$repo" && RUSTFLAGS="-C target-feature=+crt-static" cargo build --release --quiet \
    --bin nestguard-exec --target x86_64-unknown-linux-gnu) || die "static nestguard-exec failed"
  f="${CARGO_TARGET_DIR:-$repo/target}/x86_64-unknown-linux-gnu/release/nestguard-exec"
  file "$f" | grep -q 'static' || die "$f is not statically linked"
  cmp -s "$f" "$NG/nestguard-exec" || cp "$f" "$NG/nestguard-exec"
}

step_shim() {
  local h; h="$(hash_of "$(files_hash "$repo"/ffi/mesos/src/* "$repo/ffi/mesos/Makefile" \
    "$repo/include/nestguard.h")" "$(cat "$CACHE/stamps/protos")" "$MESOS_DEFINES" v1)"
  fresh shim "$h" && [ -f "$NG/libnestguard_mesos.so" ] && return
  log "shim libnestguard_mesos.so against Mesos' protobuf 3.5 headers (about a minute)"
  make -s -C "$repo/ffi/mesos" MESOS_HOME="$S" OUT="$CACHE/build/shim" \
    NESTGUARD_LIB_DIR="$NG" NESTGUARD_INCLUDE="$repo/include" NESTGUARD_RPATH='$$ORIGIN' \
    CXXFLAGS="-O2 -g -MD" EXTRA_CPPFLAGS="$MESOS_DEFINES -isystem $T/glog-build" >&2 ||
    die "shim build failed"
  if cat "$CACHE"/build/shim/*.d | grep -qE '/usr/include/(google|glog|boost|picojson\.h|rapidjson)'; then
    die "the shim picked up a system header instead of Mesos' bundled one"
  fi
  cp "$CACHE/build/shim/libnestguard_mesos.so" "$NG/"
  copy_deps "$NG/libnestguard.so" "$NG/libnestguard_mesos.so"
  stamp shim "$h"
}

steps=("$@")
[ "${#steps[@]}" -eq 0 ] && steps=(packages binary libs sources protoc protos stubs mains nestguard shim)
for s in "${steps[@]}"; do "step_$s"; done
