#!/usr/bin/env bash
# ctest perf_bad_flags: a bad value of routing_benchmark's own flags ends the
# run with exit status 2 and a message that names the flag and the value.
set -uo pipefail
bench=$1
fail=0
expect() {  # expect "MESSAGE" ARGS...
  local want=$1
  shift
  local out rc
  out=$("$bench" "$@" 2>&1 >/dev/null)
  rc=$?
  if [ "$rc" != 2 ] || [[ "$out" != *"$want"* ]]; then
    echo "FAIL: routing_benchmark $*: exit $rc, stderr: $out (wanted exit 2 and: $want)"
    fail=1
  else
    echo "ok: routing_benchmark $*: $out"
  fi
}
expect "--force-path: 'x' is not an integer in [0, 2147483647]" --force-path=x
expect "--graph-launches: '0' is not an integer in [1, 2147483647]" --graph-launches=0
expect "--io-floor-blocks: '-3' is not an integer in [0, 2147483647]" --io-floor-blocks=-3
expect "--io-floor-warps: '0' is not an integer in [1, 32]" --io-floor-warps=0
expect "--io-floor-warps: '33' is not an integer in [1, 32]" --io-floor-warps=33
expect "--filter-rows: '4rows' is not an integer in [0, 2147483647]" --filter-rows=4rows
expect "--force-path: '99999999999' is not an integer in [0, 2147483647]" --force-path=99999999999
expect "--buffer-offset: '100' is not a multiple of 256" --buffer-offset=100
expect "--buffer-offset: '-256' is not an integer in [0, 67108864]" --buffer-offset=-256
expect "unknown implementation 'bogus'" --impls=bogus
exit $fail
