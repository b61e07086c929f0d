#!/bin/sh
# Builds the libc interposers with the fake core (shim_c/libc/test_fake_core.c) into a scratch folder and
# runs their tests: tests/c/test_libc_time.c (virtual and TIMEWARP_VIRTUAL_TIME=0), a library calling in
# from its constructor before init (tests/c/test_libc_early.c, both preload orders), and CPython.
# Usage: tests/c/test_libc_run.sh [outdir]   (default /tmp/tw_libc); PYTHON picks the interpreter.
set -eu
root=$(cd "$(dirname "$0")/../.." && pwd)
out=${1:-/tmp/tw_libc}
py=${PYTHON:-python3}
mkdir -p "$out"
cc=${CC:-gcc}
flags="-std=gnu11 -O2 -g -Wall -Wextra -Werror"
# TW_LIBC_FAKE_CORE: test_fake_core.c stands in for shim_c/core/vclock.c
$cc $flags -DTW_LIBC_FAKE_CORE -shared -fPIC -fvisibility=hidden -I"$root/shim_c/include" "$root"/shim_c/libc/*.c \
    -o "$out/libtw_libc_test.so" -ldl -lpthread -Wl,-z,defs
$cc $flags "$root/tests/c/test_libc_time.c" -o "$out/test_libc_time" -ldl -lpthread
$cc $flags -shared -fPIC "$root/tests/c/test_libc_early.c" -o "$out/libtw_early.so" -ldl
lib="$out/libtw_libc_test.so"
fail=0
LD_PRELOAD="$lib" "$out/test_libc_time" || fail=1
TIMEWARP_VIRTUAL_TIME=0 LD_PRELOAD="$lib" "$out/test_libc_time" --off || fail=1
for order in "$out/libtw_early.so $lib" "$lib $out/libtw_early.so"; do
    LD_PRELOAD="$order" /bin/true | tee "$out/early.txt"
    grep -q "early: ok" "$out/early.txt" || fail=1
done
# CPython: time.sleep() is clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME) to monotonic() + secs
start=$(date +%s%N)
res=$(LD_PRELOAD="$lib" "$py" -c 'import time; t = time.monotonic(); time.sleep(5); print("%.4f" % (time.monotonic() - t))')
real_ms=$(( ($(date +%s%N) - start) / 1000000 ))
if awk -v d="$res" -v r="$real_ms" 'BEGIN { exit !(d >= 5.0 && d < 5.05 && r < 2000) }'; then
    echo "ok    python time.sleep(5): monotonic delta $res s, real ${real_ms} ms"
else
    echo "FAIL  python time.sleep(5): monotonic delta $res s, real ${real_ms} ms"; fail=1
fi
[ $fail = 0 ] && echo "ALL PASSED" || echo "SOME FAILED"
exit $fail
