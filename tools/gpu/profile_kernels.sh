#!/usr/bin/env bash
# Per-kernel GPU time of one forward pass under Nsight Compute, for deciding which kernel to write next (the
# bench's stage medians say which stage is slow, this says which launches inside it). Summaries:
# tools/gpu/summarise_ncu.py CSV --top N (run on the H200 and the H100 since 2026-12-05).
#
# On the GPU machine, after a build (tools/gpu/check.sh ... --targets trackscope-cli):
#   bash tools/gpu/profile_kernels.sh OUT_DIR "small:256:fp16" "small:1024:fp16" ...
# Each case is MODEL:POINTS:PRECISION[:BENCH_OPTION=VALUE,...] (e.g. small:1024:fp16:--mixer=fused); writes
# OUT_DIR/ncu_MODEL_POINTS_PRECISION[_OPTIONS].csv (one row per launch, in
# launch order, with the NVTX stage range it ran in) and the bench's own stage table beside it. cuDNN autotuning
# and CUDA graphs are off and there is no warm-up, so the launches are exactly one forward pass; cuDNN's
# heuristic may then pick other convolution kernels than the autotuned run does.
set -uo pipefail
OUT=${1:?usage: profile_kernels.sh OUT_DIR MODEL:POINTS:PRECISION...}
shift
CLI=${BUILD_DIR:-build-gpu}/app/trackscope-cli
NCU=$(command -v ncu || find /usr/local/cuda/bin /opt/nvidia -name ncu -type f 2>/dev/null | head -1)
if [ -z "$NCU" ] || [ ! -x "$CLI" ]; then
  echo "profile_kernels.sh: needs ncu (found '${NCU}') and $CLI" >&2
  exit 1
fi
mkdir -p "$OUT"
for case in "$@"; do
  IFS=: read -r model points precision options <<< "$case"
  name=ncu_${model}_${points}_${precision}
  extra=()
  if [ -n "${options:-}" ]; then
    IFS=, read -r -a extra <<< "$options"
    name=${name}_$(echo "$options" | tr -c 'a-zA-Z0-9\n' '_' | sed 's/^_*//')
  fi
  common=(bench --device cuda:0 --model "$model" --points "$points" --precision "$precision" --no-peaks
          --cudnn-benchmark off --cuda-graphs off "${extra[@]}")
  "$CLI" "${common[@]}" --warmup 2 --repeats 5 > "$OUT/$name.bench.txt" 2>&1
  # --clock-control none: the card's own clocks, as in the bench (the KINDS.md notes of the device tool).
  timeout 300 "$NCU" --clock-control none --nvtx --metrics gpu__time_duration.sum --csv --page raw \
    "$CLI" "${common[@]}" --warmup 0 --repeats 1 > "$OUT/$name.csv" 2> "$OUT/$name.err"
  echo "$case: ncu rc=$? ($(grep -c '^"[0-9]' "$OUT/$name.csv") launches)"
done
