#!/usr/bin/env bash
# End to end against decoding alone (issue 17 item 3): 64 points (an 8x8 grid on frame 0) through pips2_camel.mp4
# with `trackscope-cli track`, process start to file written, against `bench-video` decoding the same clip with the
# same decoder threads. Prints each run's wall time and the tracker's phases (decode, resize, upload, compute,
# write) and the median ratio; writes OUT/camel_e2e.txt and OUT/decode.json.
#   bash tools/gpu/camel_e2e.sh OUT [trackscope-cli]
#   DEVICE (cuda:0), MODEL (default: the bundled model), PRECISION (fp32), THREADS (decoder threads, 4),
#   REPEATS (3), END_FRAME (all), TRACK_EXTRA (more track arguments, e.g. "--cudnn-benchmark off") may be set;
#   DEVICE=cpu END_FRAME=8 is a smoke test on a CPU machine.
# Meant for tools/gpu/check.sh --run "bash tools/gpu/camel_e2e.sh \$OUT" (the clip carried by tools/gpu/prepare.sh).
set -uo pipefail
OUT=${1:?usage: camel_e2e.sh OUT [trackscope-cli]}
CLI=${2:-${BUILD_DIR:-build-gpu}/app/trackscope-cli}
DEVICE=${DEVICE:-cuda:0}
MODEL=${MODEL:-default}
PRECISION=${PRECISION:-fp32}
THREADS=${THREADS:-4}
REPEATS=${REPEATS:-3}
CLIP=$(cd "${TRACKSCOPE_SHARED_DIR:-../shared}/testdata" && pwd)/pips2_camel.mp4
mkdir -p "$OUT"
REPORT=$OUT/camel_e2e.txt
: > "$REPORT"
say() { echo "$*" | tee -a "$REPORT"; }
END_ARGS=()
[ -n "${END_FRAME:-}" ] && END_ARGS=(--end "$END_FRAME")
read -r -a EXTRA_ARGS <<< "${TRACK_EXTRA:-}"

"$CLI" bench-video "$CLIP" --threads "$THREADS" --seeks 5 --json "$OUT/decode.json" 2>&1 | tee -a "$REPORT"
decode_s=$(python3 -c "import json,sys; d=json.load(open(sys.argv[1])); print(d['open_ms']/1e3 + d['sequential']['total_ms']/1e3)" "$OUT/decode.json")
say "decode alone (open + sequential, $THREADS threads): $decode_s s"

times=()
for i in $(seq 1 "$REPEATS"); do
  start=$(date +%s.%N)
  "$CLI" track "$CLIP" --queries grid:8x8@frame0 --out "$OUT/camel_tracks.csv" --model "$MODEL" --device "$DEVICE" \
    --precision "$PRECISION" --decode-threads "$THREADS" -q "${END_ARGS[@]}" "${EXTRA_ARGS[@]}" 2>&1 | tee -a "$REPORT"
  rc=${PIPESTATUS[0]}
  end=$(date +%s.%N)
  t=$(python3 -c "print(f'{$end - $start:.3f}')")
  say "track run $i: rc=$rc, $t s (process start to file written)"
  times+=("$t")
done
python3 - "$decode_s" "${times[@]}" <<'EOF' | tee -a "$REPORT"
import statistics, sys
decode = float(sys.argv[1])
runs = [float(t) for t in sys.argv[2:]]
median = statistics.median(runs)
print(f"median track {median:.3f} s = {median / decode:.2f}x decoding alone (target <= 1.5x)")
EOF
