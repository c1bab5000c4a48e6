#!/bin/sh
# Soak checks of issue 18 (item 8) on generated media (in $SOAK_DIR, default /tmp/trackscope-soak; never in the
# repository):
#   1. scrub randomly through a 10-minute 1080p H.264 video for 5 minutes: resident memory within the
#      frame-cache budget (trackscope-soak scrub);
#   2. open and close 50 videos and projects in one process without growth (trackscope-soak open-close);
#   3. track 2,000 points over 300 frames on the CPU within the memory budget (trackscope-cli track).
#
#   tools/soak/run_soak.sh [BUILD_DIR]            the full soak (~15-40 min on 2 cores, most of it tracking)
#   tools/soak/run_soak.sh BUILD_DIR --quick      a sampled version (~2 min): 20 s of scrubbing a 1-minute 720p
#                                                 clip (128 MiB cache, so that it fills), 12 rounds, 200 points
#                                                 over 30 frames
# Each step prints a JSON line with its figures and a verdict; the script exits 1 if any step failed.
# Needs: the ffmpeg command-line tool, and the build's trackscope-soak and trackscope-cli.
set -eu
build=${1:-build}
quick=${2:-}
dir=${SOAK_DIR:-/tmp/trackscope-soak}
soak=$build/tools/soak/trackscope-soak
cli=$build/app/trackscope-cli
for tool in "$soak" "$cli"; do
  [ -x "$tool" ] || { echo "missing $tool: cmake --build $build --target trackscope-soak trackscope-cli"; exit 2; }
done
command -v ffmpeg >/dev/null || { echo "the ffmpeg command-line tool is needed to generate the soak media"; exit 2; }
mkdir -p "$dir"

if [ "$quick" = --quick ]; then
  long_size=1280x720 long_seconds=60 scrub_seconds=20 cache_mb=128 rounds=12 points=200 track_frames=30
  budget_mb=2048
else
  long_size=1920x1080 long_seconds=600 scrub_seconds=${SOAK_SCRUB_SECONDS:-300} cache_mb=512 rounds=50 points=2000
  track_frames=300 budget_mb=${SOAK_TRACK_BUDGET_MB:-6144}
fi

make_clip() {  # make_clip OUT SOURCE SIZE SECONDS [extra args]
  out=$1 source=$2 size=$3 seconds=$4
  shift 4
  [ -s "$out" ] && return 0
  echo "generating $out ($size, $seconds s)" >&2
  ffmpeg -v error -y -f lavfi -i "$source=size=$size:rate=25" -t "$seconds" -c:v libx264 -preset ultrafast -g 50 \
    -pix_fmt yuv420p "$@" "$out.partial.mp4"
  mv "$out.partial.mp4" "$out"
}

long=$dir/long_${long_size}_${long_seconds}s.mp4
make_clip "$long" testsrc2 "$long_size" "$long_seconds"
for source in testsrc2 smptehdbars mandelbrot; do
  make_clip "$dir/clip_$source.mp4" "$source" 640x360 10
  [ -s "$dir/clip_$source.trackscope" ] ||
    "$soak" make-project "$dir/clip_$source.mp4" "$dir/clip_$source.trackscope" --points 1000 --tracked-frames 100
done
track_clip=$dir/track_854x480_${track_frames}.mp4
make_clip "$track_clip" testsrc2 854x480 "$(echo "$track_frames" | awk '{ print $1 / 25 }')"
awk -v n="$points" 'BEGIN { srand(18); print "frame,x,y";
  for (i = 0; i < n; ++i) printf "%d,%.2f,%.2f\n", int(rand() * 10), 20 + rand() * 814, 20 + rand() * 440 }' \
  >"$dir/queries_$points.csv"

failed=0
echo "== 1. scrub $long for $scrub_seconds s (cache $cache_mb MiB)"
"$soak" scrub "$long" --seconds "$scrub_seconds" --cache-mb "$cache_mb" || failed=1

echo "== 2. open and close $rounds videos and projects in one process"
"$soak" open-close --count "$rounds" \
  --video "$dir/clip_testsrc2.mp4" --video "$dir/clip_smptehdbars.mp4" --video "$dir/clip_mandelbrot.mp4" \
  --project "$dir/clip_testsrc2.trackscope" --project "$dir/clip_smptehdbars.trackscope" \
  --project "$dir/clip_mandelbrot.trackscope" || failed=1

echo "== 3. track $points points over $track_frames frames on the CPU, memory budget $budget_mb MiB"
start=$(date +%s)
if "$cli" -v track "$track_clip" --queries "$dir/queries_$points.csv" --out "$dir/tracks_$points.csv" --device cpu \
  --memory-budget-mb "$budget_mb" -q 2>"$dir/track.log"; then
  peak=$(sed -n 's/.*peak host RSS \([0-9]*\) MiB.*/\1/p' "$dir/track.log")
  plan=$(grep -o "weights .* budget ([0-9]* chunks)" "$dir/track.log" | head -1)
  verdict=$([ "$peak" -le "$budget_mb" ] && echo pass || echo fail)
  [ "$verdict" = pass ] || failed=1
  printf '{"mode": "track", "points": %s, "frames": %s, "seconds": %s, "peak_rss_mib": %s, "budget_mib": %s, "plan": "%s", "verdict": "%s"}\n' \
    "$points" "$track_frames" "$(($(date +%s) - start))" "$peak" "$budget_mb" "$plan" "$verdict"
else
  echo "tracking failed:"
  tail -5 "$dir/track.log"
  failed=1
fi
exit $failed
