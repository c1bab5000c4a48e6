#!/usr/bin/env bash
# The live performance view on a real GPU run (issue 17): the GUI, offscreen, tracks a clip on cuda:0, then on the
# CPU, then on cuda:0 again in one process (a scripted run: ui/scripted_run.h), and after each job saves
# screenshots of the performance dock's Stages and Telemetry tabs (that run's per-chunk stage charts, NVML's clocks,
# power, memory and utilisation).
#
# On the GPU machine, after tools/gpu/prepare.sh --with-qt --fixtures none --out .gpu-carry-gui here:
#   source .gpu-carry-gui/gpu_env.sh || exit 1; bash tools/gpu/gui_run.sh "$OUT"
# Environment: VIDEO (default ../shared/testdata/pips2_camel.mp4), QUERIES (grid:8x8@frame0), DEVICES
# (cuda:0,cpu,cuda:0), TABS (stages,telemetry), BUILD_DIR (build-gpu-gui). Returns the screenshots (camel*.png,
# at most 7: the device tool brings back 8 files) and logs.tar.gz (configure, build and the GUI's log).
# The build is the cuda preset with the GUI and without tests or the sample clip (the carried FFmpeg cannot write
# MP4).
set -uo pipefail
OUT=${1:?usage: gui_run.sh OUT_DIR}
VIDEO=${VIDEO:-../shared/testdata/pips2_camel.mp4}
QUERIES=${QUERIES:-grid:8x8@frame0}
DEVICES=${DEVICES:-cuda:0,cpu,cuda:0}
TABS=${TABS:-stages,telemetry}
BUILD=${BUILD_DIR:-build-gpu-gui}
LOGS=$(mktemp -d)
mkdir -p "$OUT"
pack() { tar -C "$LOGS" -czf "$OUT/logs.tar.gz" . 2>/dev/null; }
T0=$SECONDS
cmake --preset cuda -B "$BUILD" -DTRACKSCOPE_WITH_UI=ON -DTRACKSCOPE_BUILD_TESTS=OFF \
  -DTRACKSCOPE_RENDER_SAMPLE_CLIP=OFF -DCMAKE_CUDA_ARCHITECTURES=90 > "$LOGS/configure.log" 2>&1 \
  || { tail -30 "$LOGS/configure.log"; pack; exit 1; }
ninja -C "$BUILD" -j"$(nproc)" trackscope > "$LOGS/build.log" 2>&1 \
  || { grep -m10 -B2 -A8 -E 'error|FAILED' "$LOGS/build.log"; pack; exit 1; }
echo "gui_run: built trackscope in $((SECONDS - T0)) s"
nvidia-smi --query-gpu=name,clocks.sm,power.draw,memory.used --format=csv,noheader
T1=$SECONDS
QT_QPA_PLATFORM=offscreen timeout 420 "$BUILD/app/trackscope" "$VIDEO" --queries "$QUERIES" --track \
  --track-devices "$DEVICES" --screenshot-after-track "$OUT/camel.png" --dock-tab "$TABS" > "$LOGS/gui.log" 2>&1
rc=$?
echo "gui_run: trackscope rc=$rc in $((SECONDS - T1)) s"
grep -E "scripted run|job [0-9]+ on|tracking [0-9]+ points|memory plan|Could not|error" "$LOGS/gui.log" | tail -30
pack
ls -l "$OUT"
exit $rc
