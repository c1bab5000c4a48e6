#!/usr/bin/env bash
# A/B of bench options in one call: `trackscope-cli bench COMMON ARGS` once per variant, the variants interleaved
# for ROUNDS rounds (so that the machine's drift between minutes hits every variant alike), then one table of the
# end-to-end and per-stage medians per case, variant and round. Every JSON goes into OUT_DIR/options_ab.tar.gz (the
# device tool brings back at most 8 files) and the table into OUT_DIR/options_ab.txt.
#
# On the GPU machine, after a build of trackscope-cli (tools/gpu/check.sh OUT --targets trackscope-cli ...):
#   bash tools/gpu/options_ab.sh OUT_DIR ROUNDS "COMMON BENCH ARGS" NAME=ARGS [NAME=ARGS ...]
# e.g.
#   bash tools/gpu/options_ab.sh "$OUT" 2 "--device cuda:0 --model small,base --points 256 --precision fp16 \
#     --repeats 5 --warmup 2 --no-peaks" "default=" "graphs=--cuda-graphs on" "pipelined=--corr-kernel pipelined"
# A variant's ARGS may be empty (the defaults). Exit status: 1 when any bench failed (the table shows which).
set -uo pipefail
OUT=${1:?usage: options_ab.sh OUT_DIR ROUNDS "COMMON" NAME=ARGS...}
ROUNDS=${2:?rounds}
COMMON=${3:?common bench arguments}
shift 3
[ $# -ge 1 ] || { echo "options_ab.sh: give at least one NAME=ARGS variant" >&2; exit 2; }
CLI=${BUILD_DIR:-build-gpu}/app/trackscope-cli
[ -x "$CLI" ] || { echo "options_ab.sh: no $CLI (build trackscope-cli first)" >&2; exit 1; }
WORK=$(mktemp -d)
status=0
for round in $(seq 1 "$ROUNDS"); do
  for variant in "$@"; do
    name=${variant%%=*}
    args=${variant#*=}
    json=$WORK/$name-$round.json
    # shellcheck disable=SC2086  # COMMON and ARGS are word lists
    if ! "$CLI" bench $COMMON $args --json "$json" > "$WORK/$name-$round.log" 2>&1; then
      echo "options_ab.sh: bench failed for $name (round $round): $(tail -1 "$WORK/$name-$round.log")" >&2
      status=1
    fi
  done
done
python3 - "$WORK" "$ROUNDS" "$@" > "$WORK/options_ab.txt" <<'EOF'
import json, os, sys
work, rounds, variants = sys.argv[1], int(sys.argv[2]), [v.split("=", 1)[0] for v in sys.argv[3:]]
rows = {}
for name in variants:
    for r in range(1, rounds + 1):
        path = os.path.join(work, f"{name}-{r}.json")
        if not os.path.exists(path):
            continue
        for case in json.load(open(path))["cases"]:
            stages = " ".join(f"{s['name']} {s['stats']['median_ms']:.3f}" for s in case["stages"]
                              if s["stats"]["median_ms"] >= 0.05)
            rows.setdefault(case["name"], []).append((name, r, case["end_to_end"]["median_ms"], stages))
for case, entries in rows.items():
    print(case)
    for name, r, e2e, stages in entries:
        print(f"  {name:<14} round {r}: {e2e:8.3f} ms   {stages}")
EOF
cat "$WORK/options_ab.txt"
mkdir -p "$OUT"
cp "$WORK/options_ab.txt" "$OUT/"
tar czf "$OUT/options_ab.tar.gz" -C "$WORK" .
exit $status
