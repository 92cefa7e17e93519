#!/usr/bin/env bash
# Installs mbk into a scratch prefix, then builds and runs a tiny consumer
# with CMake's find_package(mbk) and with pkg-config (shared and static), and
# runs the installed program without LD_LIBRARY_PATH.
set -euo pipefail
src=$1 bin=$2 work=$3
rm -rf "$work"; mkdir -p "$work"
cmake --install "$bin" --prefix "$work/prefix" > "$work/install.log"
libdir=$(find "$work/prefix" -name libmbk.so -printf '%h\n' | head -1)

# find_package
cmake -S "$src/tests/install/consumer" -B "$work/cmake-build" \
      -DCMAKE_PREFIX_PATH="$work/prefix" > "$work/configure.log"
cmake --build "$work/cmake-build" > "$work/build.log"
LD_LIBRARY_PATH="$libdir" "$work/cmake-build/consumer" | tee "$work/cmake-run.log"
grep -q "consumer ok" "$work/cmake-run.log"

# pkg-config (shared, then static)
export PKG_CONFIG_PATH="$libdir/pkgconfig"
cc -std=c11 "$src/tests/install/consumer/consumer.c" -o "$work/pc-consumer" \
   $(pkg-config --cflags --libs mbk)
LD_LIBRARY_PATH="$libdir" "$work/pc-consumer" | tee "$work/pc-run.log"
grep -q "consumer ok" "$work/pc-run.log"
cc -std=c11 "$src/tests/install/consumer/consumer.c" -o "$work/pc-static-consumer" \
   $(pkg-config --cflags mbk) "$libdir/libmbk.a" $(pkg-config --libs --static mbk | sed 's/-lmbk//')
"$work/pc-static-consumer" | tee "$work/pc-static-run.log"
grep -q "consumer ok" "$work/pc-static-run.log"

# the installed program starts without LD_LIBRARY_PATH (its RPATH finds the
# installed libmbk, not the one in the build tree or elsewhere on the system)
mbk="$work/prefix/bin/mbk"
resolved=$(env -u LD_LIBRARY_PATH ldd "$mbk" | awk '/libmbk\.so/ {print $3}')
case "$resolved" in
  "$work/prefix/"*) ;;
  *) echo "installed mbk resolves libmbk to '$resolved', not to the installed one under $work/prefix" >&2; exit 1 ;;
esac
env -u LD_LIBRARY_PATH "$mbk" --help > "$work/mbk-help.log"
grep -q "usage: mbk run" "$work/mbk-help.log"
(cd "$work" && env -u LD_LIBRARY_PATH "$mbk" run builtin:chain:2 --t-final 0.05 --output none --plot none) \
  > "$work/mbk-run.log"
grep -q "simulated builtin:chain:2" "$work/mbk-run.log"

# the installed program writes the viewer page from its installed files (share/mbk/viewer),
# also when the install tree is moved, and not from the build or source tree
test -f "$work/prefix/share/mbk/viewer/viewer.html"
test -f "$work/prefix/share/mbk/viewer/three.min.js"
mv "$work/prefix" "$work/moved"
(cd "$work" && env -u LD_LIBRARY_PATH -u MBK_VIEWER_DIR "$work/moved/bin/mbk" view builtin:chain:2 --t-final 0.05 \
   --html "$work/view.html") > "$work/mbk-view.log"
grep -q 'id="mbk-data"' "$work/view.html"
grep -q 'REVISION="111"' "$work/view.html"
mv "$work/moved" "$work/prefix"
echo "6 passed, 0 failed"
