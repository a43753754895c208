#!/usr/bin/env bash
# Build CableLabs' ns-3 docsis module (model/ and helper/) and docsis-qprot.cc against the
# ns-3 3.44 pip wheel (`pip install ns3`: headers, libns3.44-*.so), without an ns-3 source
# tree. The module's last release targets ns-3.41; one patch (docsis-helper-ns3.44.patch)
# makes helper/docsis-helper.cc build on 3.44 with mainline applications:
#   - the game and file-transfer session helpers need the applications the module's
#     patches/ns-3.41.patch adds to src/applications (GameClient, FileTransferApplication):
#     they are compiled out (#if 0), with their two includes;
#   - ns-3.44's InetSocketAddress has no SetTos: the UDP helpers set the ToS through the
#     UdpClient / OnOffApplication "Tos" attribute instead.
# model/ builds on 3.44 unchanged. The scenario uses only mainline BulkSend and UdpClient.
#
#   benchmarks/ns3_docsis/build.sh DOCSIS_GIT [BUILD_DIR]
#
# DOCSIS_GIT: a clone (bare or not) of https://github.com/cablelabs/docsis-ns3 holding
# commit $DOCSIS_COMMIT. BUILD_DIR: where the library and program go (default out/ns3-docsis
# under the repository). NS3_PREFIX: the wheel's ns3 directory (the one holding include/
# and lib64/); by default found with `python3 -c 'import ns3'` (PYTHONPATH as needed).
# Prints the program's path. Runs the compiler niced on two jobs (~1 min).
set -euo pipefail

DOCSIS_COMMIT=02aa2423569e406334d19930daa3c1cd5e7e7db5 # "Update for ns-3.41"
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
REPO="$(cd "$HERE/../.." && pwd)"
DOCSIS_GIT="${1:?usage: build.sh DOCSIS_GIT [BUILD_DIR]}"
BUILD="${2:-$REPO/out/ns3-docsis}"
NS3_PREFIX="${NS3_PREFIX:-$(python3 -c 'import ns3; print(list(ns3.__path__)[0])')}"
INC="$NS3_PREFIX/include"
LIB="$NS3_PREFIX/lib64"
[ -f "$INC/ns3/core-module.h" ] || { echo "no ns-3 headers under $INC (set NS3_PREFIX)" >&2; exit 1; }
ls "$LIB"/libns3.44-core.so >/dev/null 2>&1 || { echo "no libns3.44-core.so under $LIB" >&2; exit 1; }

# The wheel's compile definitions (its CMake config: a release build with logs and asserts);
# the module still calls EventId::IsRunning, deprecated in ns-3.42 (IsPending) but there.
DEFS="-Wno-deprecated-declarations -DNS3_LOG_ENABLE -DNS3_ASSERT_ENABLE -DNS3_BUILD_PROFILE_RELEASE -D__LINUX__"
CXX="nice -n 10 ${CXX:-g++} -std=c++20 -O2 -fPIC $DEFS"
NS3_LIBS=""
for m in core network bridge point-to-point traffic-control applications internet csma \
    flow-monitor stats fd-net-device; do
    NS3_LIBS="$NS3_LIBS -lns3.44-$m"
done

rm -rf "$BUILD/src" "$BUILD/include" "$BUILD/obj"
mkdir -p "$BUILD/src" "$BUILD/include/ns3" "$BUILD/obj"
git -C "$DOCSIS_GIT" archive "$DOCSIS_COMMIT" model helper | tar -x -C "$BUILD/src"
patch -s -d "$BUILD/src" -p1 < "$HERE/docsis-helper-ns3.44.patch"
# The module's headers as ns3/<name>.h, as an ns-3 build would install them.
for h in "$BUILD"/src/model/*.h "$BUILD"/src/helper/*.h; do
    ln -sf "$h" "$BUILD/include/ns3/"
done

ls "$BUILD"/src/model/*.cc "$BUILD"/src/helper/docsis-helper.cc |
    xargs -P 2 -I{} sh -c "$CXX -I'$BUILD/include' -I'$INC' -c {} -o '$BUILD/obj/'\$(basename {} .cc).o"
$CXX -shared -o "$BUILD/libns3-docsis.so" "$BUILD"/obj/*.o -L"$LIB" $NS3_LIBS \
    -Wl,-rpath,"$LIB"
$CXX -I"$BUILD/include" -I"$INC" "$HERE/docsis-qprot.cc" -o "$BUILD/docsis-qprot" \
    -L"$BUILD" -lns3-docsis -L"$LIB" $NS3_LIBS -Wl,-rpath,"$LIB" -Wl,-rpath,"$BUILD"
echo "$BUILD/docsis-qprot"
