#!/usr/bin/env bash
# Long-video measurements on the GPU machine (docs/long-videos.md): one point and 64 points through an 18,000-frame
# 1080p clip -- made in memory by trackscope-long-video (a window panning over a rendered scene: the GPU machine
# has no ffmpeg CLI and no encoder) -- with the device-memory and RSS peaks, and the cost of exact streaming
# against a whole-clip run on pips2_camel.mp4 (64 points; whole, exact with the cache in host memory, exact with a
# cache file, windowed), with the tracks of each mode compared.
#
# On the GPU machine, from the project root, after tools/gpu/prepare.sh here (the carry folder):
#   source .gpu-carry/gpu_env.sh || exit 1; bash tools/gpu/long_video.sh "$OUT" [BUILD_DIR]
# or after tools/gpu/check.sh built the tree (same build folder, nothing rebuilt):
#   bash tools/gpu/check.sh "$OUT" --no-tests --run "bash tools/gpu/long_video.sh $OUT/long build-gpu"
# Options (environment): DEVICE (cuda:0), BUDGET_MB (24576: the issue's 24 GB target), FRAMES (18000),
# PRECISION (fp32), CAMEL (pips2_camel.mp4 of the shared test data), CAMEL_POINTS (64), CAMEL_EXTRA (more
# arguments of the camel runs, e.g. "--end 40" for a dry run on a CPU), SKIP_LONG=1, SKIP_CAMEL=1, PASSES (2: whole/exact pairs),
# JOBS (build jobs).
# Returns three files (the device tool brings back few): OUT/long_video.txt (the summary), OUT/long_video.json
# (every run's report) and OUT/logs.tar.gz.
# Expected time on one H200 (16 cores): configure + build of trackscope-long-video ~4-5 min from a cold tree
# (0 if check.sh built it), the two 18,000-frame runs ~1 min each (backbone ~0.6 ms/frame, the frames made and
# uploaded at ~2 ms/frame), the six camel runs ~1 min in all: ~8 min cold, ~3 min after check.sh.
set -uo pipefail
OUT=${1:?usage: long_video.sh OUT_DIR [BUILD_DIR]}
BUILD=${2:-${BUILD_DIR:-build-gpu}}
DEVICE=${DEVICE:-cuda:0}
BUDGET_MB=${BUDGET_MB:-24576}
FRAMES=${FRAMES:-18000}
PRECISION=${PRECISION:-fp32}
JOBS=${JOBS:-$(nproc)}
CAMEL_POINTS=${CAMEL_POINTS:-64}
read -r -a CAMEL_EXTRA <<< "${CAMEL_EXTRA:-}"
if [ -z "${CAMEL:-}" ]; then  # the shared test data: beside the tree, or in the carry folder (prepare.sh)
  for c in "${TRACKSCOPE_SHARED_DIR:-../shared}/testdata/pips2_camel.mp4" ../shared/testdata/pips2_camel.mp4 \
           "${GPU_CARRY_SHARED:-.gpu-carry/shared}/testdata/pips2_camel.mp4" .gpu-carry/shared/testdata/pips2_camel.mp4; do
    [ -f "$c" ] && { CAMEL=$c; break; }
  done
fi
CAMEL=${CAMEL:-../shared/testdata/pips2_camel.mp4}
mkdir -p "$OUT"
LOGS=$(mktemp -d)
SUMMARY=$OUT/long_video.txt
: > "$SUMMARY"
say() { echo "$*" | tee -a "$SUMMARY"; }
finish() {
  python3 - "$LOGS" "$OUT/long_video.json" <<'EOF'
import glob, json, os, sys
reports = {os.path.basename(p)[:-5]: json.load(open(p)) for p in sorted(glob.glob(sys.argv[1] + "/*.json"))}
json.dump(reports, open(sys.argv[2], "w"), indent=1)
EOF
  tar -C "$LOGS" -czf "$OUT/logs.tar.gz" . 2>/dev/null
  rm -rf "$LOGS"
}
T0=$SECONDS

if [ ! -f "$BUILD/build.ninja" ]; then
  cmake -S . -B "$BUILD" -G Ninja -DCMAKE_BUILD_TYPE=Release -DTRACKSCOPE_WITH_UI=OFF -DTRACKSCOPE_WITH_CUDA=ON \
    -DCMAKE_CUDA_ARCHITECTURES=90 -DTRACKSCOPE_BUILD_TESTS=OFF > "$LOGS/configure.log" 2>&1 ||
    { tail -30 "$LOGS/configure.log" | tee -a "$SUMMARY"; finish; exit 1; }
fi
ninja -C "$BUILD" -j"$JOBS" trackscope-long-video > "$LOGS/build.log" 2>&1
rc=$?
say "build trackscope-long-video: rc=$rc at $((SECONDS - T0)) s"
[ $rc -eq 0 ] || { grep -m5 -A8 -E 'error|FAILED' "$LOGS/build.log" | tee -a "$SUMMARY"; finish; exit 1; }
TOOL=$BUILD/app/trackscope-long-video
nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader 2>&1 | tee -a "$SUMMARY"
say "host: $(nproc) cores, $(free -g | awk '/Mem:/ {print $2}') GiB RAM, $(df -h /var/tmp | awk 'NR == 2 {print $4}') free in /var/tmp"
TIME=()
[ -x /usr/bin/time ] && TIME=(/usr/bin/time -v)  # the tool's own report has the peak RSS too (getrusage)

# One run: NAME, then trackscope-long-video's arguments.
run() {
  local name=$1; shift
  local t=$SECONDS
  "${TIME[@]}" "$TOOL" --device "$DEVICE" --precision "$PRECISION" "$@" --json "$LOGS/$name.json" \
    > "$LOGS/$name.log" 2> "$LOGS/$name.err"
  local rc=$?
  say "== $name: rc=$rc in $((SECONDS - t)) s: $*"
  grep -E '^memory plan' "$LOGS/$name.err" | cut -c1-700 | tee -a "$SUMMARY"
  [ -f "$LOGS/$name.json" ] && python3 - "$LOGS/$name.json" <<'EOF' | tee -a "$SUMMARY"
import json, sys
r = json.load(open(sys.argv[1]))
keys = ["mode", "frames", "points", "seconds", "frames_per_second", "peak_device_mib", "peak_rss_mib",
        "error_px_mean", "error_px_median", "error_px_p99", "within_8px"]
print("   " + ", ".join(f"{k} {r[k]:.4g}" if isinstance(r.get(k), float) else f"{k} {r.get(k)}" for k in keys if k in r))
print("   stages (s): " + ", ".join(f"{k} {v / 1000:.2f}" for k, v in sorted(r.get("stage_ms", {}).items())))
EOF
  grep -E 'Maximum resident' "$LOGS/$name.err" | tee -a "$SUMMARY"
  [ $rc -eq 0 ] || tail -5 "$LOGS/$name.err" | tee -a "$SUMMARY"
}

if [ "${SKIP_LONG:-0}" != 1 ]; then
  # The plan decides: host RAM and the disk cannot hold the clip's grids (123 GiB in fp32), so windowed.
  run long_1pt --synthetic "1920x1080x$FRAMES" --points 1 --memory-budget-mb "$BUDGET_MB"
  run long_64pt --synthetic "1920x1080x$FRAMES" --points 64 --memory-budget-mb "$BUDGET_MB"
fi

[ -f "$CAMEL" ] || say "no $CAMEL: the camel runs are skipped (set CAMEL=PATH)"
if [ "${SKIP_CAMEL:-0}" != 1 ] && [ -f "$CAMEL" ]; then
  # 64 points on random frames (seed 7): the windowed run hands tracks over in both directions.
  CAMEL_ARGS=(--video "$CAMEL" --points "$CAMEL_POINTS" --random-query-frames 7 "${CAMEL_EXTRA[@]}")
  # Whole clip and exact streaming PASSES times each, alternating (the first pair warms cuDNN's autotuning and
  # the page cache and is left out of the figures), a cache file, and windowed (128-frame windows overlapping by 16).
  for pass in $(seq 1 "${PASSES:-2}"); do
    run camel_whole_$pass "${CAMEL_ARGS[@]}" --long-video whole --out "$LOGS/camel_whole.csv"
    run camel_exact_host_$pass "${CAMEL_ARGS[@]}" --long-video exact --out "$LOGS/camel_exact_host.csv"
  done
  run camel_exact_file "${CAMEL_ARGS[@]}" --long-video exact --cache-dir /var/tmp \
    --out "$LOGS/camel_exact_file.csv"
  run camel_windowed "${CAMEL_ARGS[@]}" --long-video windowed --window 128 --overlap 16 \
    --out "$LOGS/camel_windowed.csv"
  python3 - "$LOGS" "${PASSES:-2}" <<'EOF' | tee -a "$SUMMARY"
import csv, json, math, os, sys
logs = sys.argv[1]
def load(name):
    path = f"{logs}/{name}.csv"
    if not os.path.exists(path):
        return None
    lines = [l for l in open(path) if not l.startswith("#")]
    return {(r["track_id"], int(r["frame"])): r for r in csv.DictReader(lines)}
def stats(v):
    v = sorted(v)
    return (f"n {len(v)}, mean {sum(v) / len(v):.3g} px, p99 {v[int(0.99 * (len(v) - 1))]:.3g} px, max {v[-1]:.3g} px"
            if v else "n 0")
def compare(a, b):
    d_all, d_vis, flags = [], [], 0
    for k, ra in a.items():
        rb = b[k]
        d = math.hypot(float(ra["x"]) - float(rb["x"]), float(ra["y"]) - float(rb["y"]))
        d_all.append(d)
        flags += ra["visible"] != rb["visible"]
        if ra["visible"] == "1":
            d_vis.append(d)
    return f"all pairs: {stats(d_all)}; visible in the first: {stats(d_vis)}; visibility flags differing: {flags}"
whole = load("camel_whole")
for name in ["camel_exact_host", "camel_exact_file", "camel_windowed"]:
    other = load(name)
    if whole and other:
        print(f"{name} vs camel_whole: {compare(whole, other)}")
def seconds(name):
    path = f"{logs}/{name}.json"
    return json.load(open(path))["seconds"] if os.path.exists(path) else None
passes = int(sys.argv[2])
pairs = [(seconds(f"camel_exact_host_{p}"), seconds(f"camel_whole_{p}")) for p in range(2, passes + 1)]
ratios = sorted(e / w for e, w in pairs if e and w)
if ratios:
    print(f"slowdown exact host / whole, pass by pass (passes 2..{passes}): "
          + ", ".join(f"{r:.3f}" for r in ratios) + f"; median {ratios[len(ratios) // 2]:.3f}")
base = seconds("camel_whole_2")
for name in ["camel_exact_file", "camel_windowed"]:
    t = seconds(name)
    if base and t:
        print(f"slowdown {name} / camel_whole_2: {t / base:.3f} ({t:.2f} s / {base:.2f} s)")
EOF
fi
say "total: $((SECONDS - T0)) s"
finish
ls -l "$OUT"
