#!/usr/bin/env bash
# Throughput of one batch on the GPU machine: the same job list (the carried test clips, each REPEATS times, a
# 16x16 grid, PRECISION) tracked by `trackscope-cli batch` with the GPU alone and with the GPU and a CPU worker
# together, then the GPU + CPU batch again with two deliberately corrupt copies of a clip added (one truncated,
# one with bytes flipped in the middle; made here with dd and python: the GPU machine has no ffmpeg CLI).
# The corrupt copies: the first 4 KiB zeroed (the container header is gone), the second half cut off, 64 KiB
# inverted at 40% of the file. Writes OUT/batch.txt (the report) and OUT/batch.tar.gz (every summary.json/.csv and the job lists).
#   bash tools/gpu/batch_throughput.sh OUT [CLI]       REPEATS (4), PRECISION (bf16: fast on the GPU and on a CPU with AVX-512 BF16), GRID (16x16) may be set;
#   GPU (cuda:0) and END_FRAME (frames per clip, default all) let it run elsewhere (GPU=cpu END_FRAME=4 as a smoke test).
# Meant for tools/gpu/check.sh --run "bash tools/gpu/batch_throughput.sh \$OUT"; needs the clips carried by
# tools/gpu/prepare.sh --batch-clips (../shared/testdata/*.mp4 and the horsejump frames).
set -uo pipefail
OUT=${1:?usage: batch_throughput.sh OUT [trackscope-cli]}
CLI=${2:-${BUILD_DIR:-build-gpu}/app/trackscope-cli}
REPEATS=${REPEATS:-4}
PRECISION=${PRECISION:-bf16}
GRID=${GRID:-16x16}
GPU=${GPU:-cuda:0}
END=""
[ -n "${END_FRAME:-}" ] && END=", \"end\": $END_FRAME"
# The shared test data: TRACKSCOPE_SHARED_DIR, else the carry's copy (gpu_env.sh sets GPU_CARRY_SHARED; the carry
# does not replace ../shared when the machine has an older link there), else ../shared.
SHARED=${TRACKSCOPE_SHARED_DIR:-${GPU_CARRY_SHARED:-../shared}}
TESTDATA=$(cd "$SHARED/testdata" && pwd)
WORK=$(mktemp -d /tmp/trackscope-batch.XXXXXX)
REPORT=$OUT/batch.txt
mkdir -p "$OUT"
: > "$REPORT"
say() { echo "$*" | tee -a "$REPORT"; }

clips=()
for clip in sampt_bees.mp4 pips2_camel.mp4 cotracker_apple.mp4 horsejump-high_480p/video; do
  [ -e "$TESTDATA/$clip" ] && clips+=("$clip")
done
say "== batch throughput on $(nvidia-smi --query-gpu=name --format=csv,noheader 2>/dev/null | head -1), $(nproc) CPU threads"
say "clips: ${clips[*]} x $REPEATS, grid $GRID, $PRECISION"
JOBS=$WORK/jobs.jsonl
: > "$JOBS"
for r in $(seq "$REPEATS"); do
  for clip in "${clips[@]}"; do
    name=$(echo "$clip" | cut -d/ -f1 | sed 's/\.mp4$//')
    echo "{\"id\": \"$name-$r\", \"video\": \"$TESTDATA/$clip\", \"queries\": \"grid:$GRID@frame0\", \"precision\": \"$PRECISION\"$END, \"outputs\": [\"csv\"]}" >> "$JOBS"
  done
done
"$CLI" --version | tee -a "$REPORT"

run() {  # NAME DEVICES [JOBS] [extra args]
  local name=$1 devices=$2 jobs=${3:-$JOBS}
  shift 3 2>/dev/null || shift $#
  local t0=$SECONDS
  "$CLI" batch "$jobs" --out "$WORK/$name" --devices "$devices" "$@" > "$WORK/$name.log" 2>&1
  local rc=$?
  local seconds=$((SECONDS - t0))
  python3 - "$WORK/$name/summary.json" "$name" "$devices" "$seconds" "$rc" <<'PYEOF' | tee -a "$REPORT"
import json, sys
path, name, devices, seconds, rc = sys.argv[1], sys.argv[2], sys.argv[3], float(sys.argv[4]), sys.argv[5]
s = json.load(open(path))
m = {x["id"]: x for x in s["measurements"]}
ok = [c for c in s["clips"] if c["status"] == "ok"]
point_frames = sum(c["points"] * c["frames"] for c in ok)
frames = sum(c["frames"] for c in ok)
by_device = {}
for c in ok:
    d = m[c["id"]]["device"]
    by_device[d] = by_device.get(d, 0) + 1
print(f"{name:<22} devices {devices:<14} exit {rc}: {len(ok)}/{len(s['clips'])} clips ok in {seconds:.0f} s wall: "
      f"{len(ok) / seconds:.2f} clips/s, {frames / seconds:.1f} frames/s, {point_frames / seconds / 1e3:.2f} k point-frames/s; "
      f"clips per device {by_device}; backups {sum(1 for c in ok if m[c['id']]['attempts'] > 1)}")
for c in s["clips"]:
    if c["status"] != "ok":
        print(f"    {c['id']}: {c['status']}: {c['error']}")
PYEOF
}

say ""
say "-- the GPU alone, then the GPU and the CPU together (fresh output folders, models loaded once per worker)"
run gpu "$GPU"
run gpu_cpu "$GPU,cpu"
run gpu_cpu_no_backup "$GPU,cpu" "$JOBS" --no-backup

say ""
say "-- deliberately corrupt clips in the batch: header zeroed, second half cut off, 64 KiB inverted at 40%"
cp "$TESTDATA/pips2_camel.mp4" "$WORK/camel_header.mp4"
dd if=/dev/zero of="$WORK/camel_header.mp4" bs=4096 count=1 conv=notrunc status=none
cp "$TESTDATA/pips2_camel.mp4" "$WORK/camel_truncated.mp4"
size=$(stat -c %s "$WORK/camel_truncated.mp4")
truncate -s $((size / 2)) "$WORK/camel_truncated.mp4"
cp "$TESTDATA/pips2_camel.mp4" "$WORK/camel_flipped.mp4"
python3 - "$WORK/camel_flipped.mp4" <<'PYEOF'
import sys
path = sys.argv[1]
data = bytearray(open(path, "rb").read())
start = len(data) * 2 // 5
for i in range(start, min(len(data), start + 65536)):
    data[i] ^= 0xFF
open(path, "wb").write(data)
PYEOF
CORRUPT=$WORK/jobs_corrupt.jsonl
{
  head -n 4 "$JOBS"
  echo "{\"id\": \"camel-header\", \"video\": \"$WORK/camel_header.mp4\", \"queries\": \"grid:$GRID@frame0\", \"precision\": \"$PRECISION\"$END}"
  echo "{\"id\": \"camel-truncated\", \"video\": \"$WORK/camel_truncated.mp4\", \"queries\": \"grid:$GRID@frame0\", \"precision\": \"$PRECISION\"$END}"
  echo "{\"id\": \"camel-flipped\", \"video\": \"$WORK/camel_flipped.mp4\", \"queries\": \"grid:$GRID@frame0\", \"precision\": \"$PRECISION\"$END}"
  sed -n '5,8p' "$JOBS"
} > "$CORRUPT"
run corrupt "$GPU,cpu" "$CORRUPT"
python3 - "$WORK/corrupt/summary.json" <<'PYEOF' | tee -a "$REPORT"
import json, sys
s = json.load(open(sys.argv[1]))
m = {x["id"]: x for x in s["measurements"]}
for c in s["clips"]:
    if c["id"].startswith("camel-"):
        where = f" on {m[c['id']]['device']}" if c["id"] in m else ""
        print(f"    {c['id']:<16} {c['status']:<7} frames {c['frames']:>4}{where}  {c['error'] or ''}")
print(f"    the others: {sum(1 for c in s['clips'] if not c['id'].startswith('camel-') and c['status'] == 'ok')} ok")
PYEOF
if [ -f "$WORK/corrupt/camel-flipped/camel-flipped.csv" ]; then
  python3 - "$WORK/corrupt/camel-flipped/camel-flipped.csv" "$WORK/gpu/pips2_camel-1/pips2_camel-1.csv" <<'PYEOF' | tee -a "$REPORT"
# The flipped copy decoded (H.264 conceals damaged slices): how far its tracks are from the intact clip's.
import csv, math, sys
def load(p):
    rows = [r for r in open(p) if not r.startswith("#")]
    return {(r["track_id"], r["frame"]): (float(r["x"]), float(r["y"])) for r in csv.DictReader(rows)}
a, b = load(sys.argv[1]), load(sys.argv[2])
d = sorted(math.dist(a[k], b[k]) for k in a if k in b)
print(f"    camel-flipped was tracked: {len(d)} (track, frame) pairs, distance to the intact clip's tracks: "
      f"median {d[len(d) // 2]:.2f} px, 95% {d[int(len(d) * 0.95)]:.2f} px, max {d[-1]:.2f} px")
PYEOF
fi
say ""
say "-- summary of the GPU + CPU run"
sed -n '/^clip /,$p' "$WORK/gpu_cpu.log" | tee -a "$REPORT"
# Summaries, records and logs; not the track files (the clips' folders hold them).
tar -C "$WORK" -czf "$OUT/batch.tar.gz" --exclude='*/*/*.csv' jobs.jsonl jobs_corrupt.jsonl gpu gpu_cpu \
  gpu_cpu_no_backup corrupt gpu.log gpu_cpu.log gpu_cpu_no_backup.log corrupt.log 2>/dev/null
say "report: $REPORT, summaries: $OUT/batch.tar.gz"
