#!/usr/bin/env bash
# Stage 5 of check-compile.sh: builds libprocess from the same Mesos sources
# (without SSL, libev event loop, Debian's libev and http-parser) and runs
# isolator_runtime.cpp, which drives io_nestguard_Isolator through every
# Mesos call on a real libprocess.
# Usage: run-isolator-runtime.sh MESOS_TREE OUT_DIR MESOS_GIT MESOS_REF
set -euo pipefail
mesos="$1"
out="$2"
mesos_git="$3"
mesos_ref="$4"
here="$(cd "$(dirname "$0")" && pwd)"
CXX="${CXX:-g++}"

printf '== %s\n' "isolator runtime: libprocess from $mesos_ref"
lp="$mesos/3rdparty/libprocess"
[ -d "$lp/src" ] ||
  git -C "$mesos_git" archive "$mesos_ref" 3rdparty/libprocess/src | tar -x -C "$mesos"

# The sources of libprocess.la without SSL, gRPC or libevent
# (3rdparty/libprocess/Makefile.am).
sources=(authenticator.cpp authenticator_manager.cpp clock.cpp firewall.cpp
  help.cpp http.cpp http_proxy.cpp io.cpp latch.cpp logging.cpp
  memory_profiler.cpp metrics/metrics.cpp mime.cpp pid.cpp posix/io.cpp
  posix/libev/libev.cpp posix/libev/libev_poll.cpp posix/poll_socket.cpp
  posix/subprocess.cpp process.cpp profiler.cpp reap.cpp socket.cpp
  subprocess.cpp time.cpp)
mkdir -p "$out/libprocess"
objs=()
for s in "${sources[@]}"; do
  objs+=("$out/libprocess/$(echo "${s%.cpp}" | tr / _).o")
done
printf '%s\n' "${sources[@]}" | xargs -P "$(nproc)" -I{} sh -c '
  o="$1/libprocess/$(echo "$2" | sed "s/\.cpp$//" | tr / _).o"
  [ -f "$o" ] && exit 0
  '"$CXX"' -std=c++11 -O0 -fPIC -w -D__STDC_FORMAT_MACROS \
    -DBUILD_DIR="\"/nonexistent\"" -DPKGLIBEXECDIR="\"/nonexistent\"" \
    -I"$3/include" -I"$3/src" -I"$4/3rdparty/stout/include" \
    -I"$4/build/include" -c -o "$o.tmp" "$3/src/$2" && mv "$o.tmp" "$o"
' _ "$out" {} "$lp" "$mesos"
"$CXX" -shared -o "$out/libnestguard-smoke-process.so" "${objs[@]}" \
  -lev -lhttp_parser -lglog -lgflags -lprotobuf -lpthread -lz -lcurl

printf '== %s\n' "isolator runtime: isolator_runtime"
"$CXX" -std=c++11 -O0 -g -Wall -Wextra -Werror \
  -isystem "$mesos/build/include" -isystem "$mesos/include" \
  -isystem "$mesos/3rdparty/stout/include" -isystem "$lp/include" \
  -o "$out/isolator_runtime" "$here/isolator_runtime.cpp" \
  -L"$out" -lnestguard-smoke-mesos-protos -lnestguard-smoke-process \
  -lprotobuf -lglog -ldl -lpthread -Wl,-rpath,"$out" -Wl,--export-dynamic

"$out/isolator_runtime" "$out/libnestguard_mesos.so"
