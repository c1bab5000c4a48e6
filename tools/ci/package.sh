#!/usr/bin/env bash
# The Debian package, built, installed and used: cpack -G DEB in the build folder, `apt-get install ./trackscope_*.deb`,
# then checks of the installed files (the private libtrackscope_gpu.so in /usr/lib/<triplet>/trackscope found
# through RPATH, the desktop file and AppStream metadata valid, the BLAS it recommends) and runs of the INSTALLED
# programs from outside the source tree: trackscope-cli --version, devices, info and a short track with the
# installed default model, and the GUI offscreen for a screenshot of its default view (checked to be a real
# picture, not a blank window).
#   tools/ci/package.sh [--keep]     BUILD_DIR (default build, configured by tools/test.sh) and JOBS may be set.
# Removes the package again at the end unless --keep. Needs root or sudo (apt-get).
set -euo pipefail
cd "$(dirname "$0")/../.."
ROOT=$PWD
BUILD_DIR=${BUILD_DIR:-build}
JOBS=${JOBS:-$(nproc)}
TESTDATA=$(cd "${TRACKSCOPE_SHARED_DIR:-$ROOT/../shared}/testdata" && pwd)
KEEP=no
[ "${1:-}" = "--keep" ] && KEEP=yes
SUDO=""
[ "$(id -u)" -ne 0 ] && SUDO="sudo"
T0=$SECONDS
say() { echo "package.sh [$((SECONDS - T0)) s] $*"; }
fail() { echo "package.sh: FAIL: $*" >&2; exit 1; }

missing=()
for p in desktop-file-utils appstream; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" > /dev/null
fi

# The package is made from the main build (everything it installs is built there already in CI).
[ -f "$BUILD_DIR/CMakeCache.txt" ] || cmake -S . -B "$BUILD_DIR" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo
cmake --build "$BUILD_DIR" -j "$JOBS" > /dev/null
rm -f "$BUILD_DIR"/trackscope_*.deb
(cd "$BUILD_DIR" && cpack -G DEB > cpack.log 2>&1) || { tail -30 "$BUILD_DIR/cpack.log"; fail "cpack"; }
DEB=$(ls "$BUILD_DIR"/trackscope_*.deb)
say "built $(basename "$DEB") ($(du -h "$DEB" | cut -f1))"
dpkg-deb -f "$DEB" Depends | tr ',' '\n' | sed 's/^ */  depends: /'
echo "  recommends: $(dpkg-deb -f "$DEB" Recommends)"
dpkg-deb -f "$DEB" Recommends | grep -q libopenblas0-openmp || fail "the package does not recommend OpenBLAS"

DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq "$ROOT/$DEB" > "$BUILD_DIR/apt-install.log" 2>&1 ||
  { tail -20 "$BUILD_DIR/apt-install.log"; fail "apt-get install"; }
cleanup() { [ "$KEEP" = yes ] || DEBIAN_FRONTEND=noninteractive $SUDO apt-get remove -y -qq trackscope > /dev/null 2>&1 || true; }
trap cleanup EXIT
say "installed: $(dpkg-query -W -f='${Package} ${Version} ${Installed-Size} KiB' trackscope)"

# The private library in the package's own folder, found through RPATH.
ARCH=$(dpkg-architecture -qDEB_HOST_MULTIARCH 2>/dev/null || gcc -dumpmachine)
PRIVATE=/usr/lib/$ARCH/trackscope
dpkg -L trackscope | grep -q "^$PRIVATE/libtrackscope_gpu.so$" || fail "libtrackscope_gpu.so is not in $PRIVATE"
dpkg -L trackscope | grep -E '^/usr/lib/[^/]+/[^/]*\.so' && fail "a library directly in /usr/lib"
for exe in /usr/bin/trackscope-cli /usr/bin/trackscope; do
  rpath=$(readelf -d "$exe" | grep -oE '(RUNPATH|RPATH).*\[.*\]' | sed 's/.*\[\(.*\)\]/\1/')
  resolved=$(realpath "$(ldd "$exe" | awk '/libtrackscope_gpu/ {print $3}')")
  echo "  $exe: RUNPATH $rpath -> $resolved"
  [ "$resolved" = "$PRIVATE/libtrackscope_gpu.so" ] || fail "$exe loads libtrackscope_gpu.so from '$resolved'"
done
desktop-file-validate /usr/share/applications/org.trackscope.Trackscope.desktop || fail "desktop-file-validate"
appstreamcli validate --no-net /usr/share/metainfo/org.trackscope.Trackscope.metainfo.xml || fail "appstreamcli validate"
say "files: private library, RPATH, desktop file and AppStream metadata checked"

# The installed programs, from a folder outside the source tree, with an empty home (no user models).
RUN=$(mktemp -d "${TMPDIR:-/tmp}/trackscope-package.XXXXXX")
cd "$RUN"
export HOME=$RUN/home XDG_DATA_HOME=$RUN/home/.local/share
mkdir -p "$HOME"
unset TRACKSCOPE_MODEL_DIR
command -v trackscope-cli | grep -qx /usr/bin/trackscope-cli || fail "trackscope-cli is not the installed one"
trackscope-cli --version
trackscope-cli devices > devices.json 2> devices.err || fail "devices"
grep -q '"id": "cpu"' devices.json || fail "devices lists no CPU"
sed 's/^/  /' devices.err
trackscope-cli info "$TESTDATA/cotracker_apple.mp4" > info.json || fail "info"
grep -q '"frame_count": 50,' info.json || fail "info: expected 50 frames"
echo "  info: $(tr -d '\n ' < info.json | cut -c1-160)..."
T1=$SECONDS
trackscope-cli track "$TESTDATA/horsejump-high_480p/video" --queries grid:4x4@frame0 --end 8 --device cpu -q \
  --out "$RUN/tracks.csv" 2> track.err || { cat track.err; fail "track"; }
cat track.err
grep -q "/usr/share/trackscope/models/locotrack_small_default.safetensors" track.err ||
  fail "track did not use the installed default model"
rows=$(grep -cv '^#' tracks.csv)
[ "$rows" -eq $((16 * 8 + 1)) ] || fail "tracks.csv has $rows rows, expected 16 tracks x 8 frames + header"
say "track: 16 points x 8 frames with the installed default model in $((SECONDS - T1)) s"

QT_QPA_PLATFORM=offscreen timeout 120 trackscope --screenshot "$RUN/shot.png" > gui.log 2>&1 || { cat gui.log; fail "the GUI"; }
python3 - "$RUN/shot.png" <<'PYEOF' || fail "the screenshot is blank or unreadable"
# Decodes the PNG (8-bit RGB/RGBA, as Qt writes it) with the standard library and checks it is a real picture.
import struct, sys, zlib
data = open(sys.argv[1], "rb").read()
assert data[:8] == b"\x89PNG\r\n\x1a\n", "not a PNG"
pos, chunks = 8, {}
while pos < len(data):
    length, kind = struct.unpack(">I4s", data[pos:pos + 8])
    chunks.setdefault(kind, []).append(data[pos + 8:pos + 8 + length])
    pos += 12 + length
width, height, depth, colour, _, _, interlace = struct.unpack(">IIBBBBB", chunks[b"IHDR"][0])
assert depth == 8 and colour in (2, 6) and interlace == 0, f"unexpected PNG format {depth}/{colour}/{interlace}"
channels = 3 if colour == 2 else 4
raw, stride = zlib.decompress(b"".join(chunks[b"IDAT"])), width * channels
rows, previous = [], bytearray(stride)
for y in range(height):
    kind, line = raw[y * (stride + 1)], bytearray(raw[y * (stride + 1) + 1:(y + 1) * (stride + 1)])
    for i in range(stride):
        a = line[i - channels] if i >= channels else 0
        b, c = previous[i], previous[i - channels] if i >= channels else 0
        p = a + b - c
        predictor = (a if abs(p - a) <= abs(p - b) and abs(p - a) <= abs(p - c) else b if abs(p - b) <= abs(p - c) else c)
        line[i] = (line[i] + (0, a, b, (a + b) // 2, predictor)[kind]) & 0xFF
    rows.append(line)
    previous = line
colours = {bytes(row[i:i + 3]) for row in rows[::4] for i in range(0, stride, channels * 4)}
print(f"  screenshot: {width}x{height}, {len(colours)} distinct colours (sampled)")
assert width >= 640 and height >= 400, "the window is too small"
assert len(colours) >= 200, "too few colours: a blank or unpainted window"
PYEOF
say "GUI: offscreen screenshot of the default view checked ($RUN/shot.png)"
say "PASS: the installed package works (total $((SECONDS - T0)) s)"
