#!/usr/bin/env bash
# Stage 4 of check-compile.sh: builds a stand-in for the protobuf part of
# libmesos (the generated .pb.cc of the messages the modules touch, and the
# protos they import), links module_smoke.cpp against it, and runs it on
# libnestguard_mesos.so; then times the Authorizer's authorized() with a real
# mesos::authorization::Request (authorizer_bench.cpp). Usage: run-smoke.sh
# MESOS_TREE OUT_DIR REPO
set -euo pipefail
mesos="$1"
out="$2"
repo="$3"
here="$(cd "$(dirname "$0")" && pwd)"
CXX="${CXX:-g++}"

printf '== %s\n' "smoke test: generated protobuf code for the modules' messages"
# The transitive imports of the protos the modules and the test use.
declare -A seen=()
queue=(mesos/authorizer/authorizer.proto mesos/module/hook.proto
  mesos/slave/containerizer.proto mesos/module/module.proto)
while [ "${#queue[@]}" -gt 0 ]; do
  p="${queue[0]}"
  queue=("${queue[@]:1}")
  [ -n "${seen[$p]:-}" ] && continue
  seen[$p]=1
  while read -r dep; do
    case "$dep" in
      google/protobuf/*) ;;
      *) queue+=("$dep") ;;
    esac
  done < <(sed -n 's/^import "\(.*\)";/\1/p' "$mesos/include/$p")
done
protos=("${!seen[@]}")
echo "${#protos[@]} protos: ${protos[*]}"

objs=()
pids=()
mkdir -p "$out/pb"
for p in "${protos[@]}"; do
  src="$mesos/build/include/${p%.proto}.pb.cc"
  obj="$out/pb/$(echo "${p%.proto}" | tr / _).o"
  objs+=("$obj")
  [ -f "$obj" ] && [ "$obj" -nt "$src" ] && continue
  # shellcheck disable=SC2086 # PB_CXXFLAGS may hold several flags
  "$CXX" -std=c++11 ${PB_CXXFLAGS:--O0} -fPIC -w -isystem "$mesos/build/include" -c -o "$obj" "$src" &
  pids+=("$!")
done
for pid in "${pids[@]}"; do wait "$pid"; done
"$CXX" -shared -o "$out/libnestguard-smoke-mesos-protos.so" "${objs[@]}" -lprotobuf

printf '== %s\n' "smoke test: module_smoke"
"$CXX" -std=c++11 -O0 -g -Wall -Wextra -Werror \
  -isystem "$mesos/build/include" -isystem "$mesos/include" \
  -isystem "$mesos/3rdparty/stout/include" \
  -isystem "$mesos/3rdparty/libprocess/include" \
  -o "$out/module_smoke" "$here/module_smoke.cpp" "$here/libprocess_stubs.cpp" \
  -L"$out" -lnestguard-smoke-mesos-protos -lprotobuf -lglog -ldl \
  -Wl,-rpath,"$out" -Wl,--export-dynamic

"$out/module_smoke" "$out/libnestguard_mesos.so"

printf '== %s\n' "Authorizer timing: authorizer_bench"
# -O2 like the module; the protobuf objects above are -O0 (set
# PB_CXXFLAGS=-O2 for figures comparable with a -O2 libmesos). BENCH_ARGS:
# entries and calls (default a quick 10000 entries, 20000 calls).
"$CXX" -std=c++11 -O2 -Wall -Wextra -Werror \
  -isystem "$mesos/build/include" -isystem "$mesos/include" \
  -isystem "$mesos/3rdparty/stout/include" \
  -isystem "$mesos/3rdparty/libprocess/include" \
  -o "$out/authorizer_bench" "$here/authorizer_bench.cpp" "$here/libprocess_stubs.cpp" \
  -L"$out" -lnestguard-smoke-mesos-protos -lprotobuf -lglog -ldl \
  -Wl,-rpath,"$out" -Wl,--export-dynamic
# shellcheck disable=SC2086
"$out/authorizer_bench" "$out/libnestguard_mesos.so" ${BENCH_ARGS:-10000 20000}
