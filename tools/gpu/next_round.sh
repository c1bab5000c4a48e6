#!/usr/bin/env bash
# The GPU call for what 2026-12-05 wrote without a GPU (no machine was lent): the init kernel rewritten in place
# (9c05ccf), the shared warp reduction (bcfce69), the glue kernels (ops::sample_query_supports, ops::mixer_input_rows,
# ops::l2_normalise_channels on CUDA) and the cached ALiBi bias.
# One call, within TOTAL_S seconds (default 570), in this order, each step only if time is left:
#   1. build trackscope-cli + the CUDA op and engine tests (tools/gpu/check.sh), run gpu/ops_cuda (every kernel
#      against the CPU: InitFromCostVolumeCuda, QuerySupportsCuda, MixerInputRowsCuda, L2NormaliseChannelsCuda,
#      CmdTopCuda and MixerCuda for the warp reduction) and gpu/engine_cuda (exact-mode parity with the official
#      outputs when the fixtures are carried, bf16/fp16 fidelity);
#   2. the glue A/B with the new CLI: --glue-kernels composite and auto, alternately, twice (the ALiBi cache has no
#      switch: it is in both);
#   3. per-launch kernel times of small N=1024 fp16 under ncu (tools/gpu/profile_kernels.sh), with the default
#      (module) mixer and the fused one (is the fused 16-bit mixer slower for its SIMT attention or its GEMMs?);
#   4. the init kernel A/B (tools/gpu/source_ab.sh: the CLI rebuilt with the previous init .cu and device_utils.cuh,
#      both benched alternately, fp16, small+base, N=256,1024);
#   5. exact mode (fp32) with the new defaults, the four official cases;
#   6. ncu of base N=256 and small N=256 fp16;
#   7. the OpenMP runtime check (is torch/lib's libgomp the one the CLI loads?).
#
# Here, first:
#   tools/gpu/prepare.sh --fixtures small --no-long-clip
#   bash tools/gpu/source_ab.sh --prepare b966fc6 gpu/ops/cuda/init_from_cost_volume_kernel.cu gpu/ops/cuda/device_utils.cuh
# (b966fc6's init .cu uses device_utils' block reductions, which bcfce69 removed: both files go back for "old"; the
# other .cu files compile against that device_utils.cuh too, checked with nvcc here.)
# The call (device tool, carry [".gpu-carry", ".gpu-carry-old"], timeout_s 600):
#   source .gpu-carry/gpu_env.sh || exit 1; bash tools/gpu/next_round.sh "$OUT"
set -uo pipefail
OUT=${1:?usage: next_round.sh OUT_DIR}
cd "$(dirname "$0")/../.." || exit 1
mkdir -p "$OUT"
T0=$SECONDS
LOG=$OUT/next-round.txt
say() { echo "$*" | tee -a "$LOG"; }
TOTAL_S=${TOTAL_S:-570}  # the seconds this call may take (the device tool stops it at its timeout)
left() { echo $((TOTAL_S - (SECONDS - T0))); }

bash tools/gpu/check.sh "$OUT/check" --tests 'gpu/(ops|engine)_cuda' \
  --targets "trackscope-cli test_gpu_ops test_gpu_engine"
say "check: done at $((SECONDS - T0)) s"
grep -E 'tests passed|tests failed|Failed|Passed' "$OUT/check/summary.txt" 2>/dev/null | tee -a "$LOG"

CLI=${BUILD_DIR:-build-gpu}/app/trackscope-cli
[ -x "$CLI" ] || { say "no $CLI: the build failed (check/logs.tar.gz)"; exit 1; }
AB_ARGS="--device cuda:0 --model small,base --points 256,1024 --precision fp16 --repeats 5 --warmup 2 --no-peaks"
# In order of what the next decision needs most, each step only if the budget still has room for it.
SUP=$(mktemp -d)
for round in 1 2; do
  for variant in composite auto; do
    [ "$(left)" -gt 60 ] || break 2
    # shellcheck disable=SC2086  # AB_ARGS is a list of bench arguments
    timeout 90 "$CLI" bench $AB_ARGS --glue-kernels "$variant" --json "$SUP/glue-$variant-$round.json" \
      > "$SUP/glue-$variant-$round.txt" 2>&1
    say "glue kernels $variant round $round: rc=$?"
  done
done
"$CLI" compare "$SUP/glue-composite-1.json" "$SUP/glue-auto-1.json" > "$SUP/compare.txt" 2>&1
tail -30 "$SUP/compare.txt" | tee -a "$LOG"
tar -C "$SUP" -czf "$OUT/glue-ab.tar.gz" .
say "glue A/B: done at $((SECONDS - T0)) s"

profile() {  # profile_kernels.sh for the given cases, within the budget
  [ "$(left)" -gt 100 ] || return 0
  timeout "$(( $(left) - 60 ))" bash tools/gpu/profile_kernels.sh /tmp/prof "$@" >> /tmp/prof.log 2>&1
  say "profile $*: rc=$? at $((SECONDS - T0)) s"
  cp /tmp/prof.log /tmp/prof/ 2>/dev/null
  tar -C /tmp -czf "$OUT/prof.tar.gz" prof 2>/dev/null
}
profile small:1024:fp16 small:1024:fp16:--mixer=fused

if [ "$(left)" -gt 200 ]; then
  bash tools/gpu/source_ab.sh --run "$OUT/init-ab" "$AB_ARGS" 2 2>&1 | tail -30 | tee -a "$LOG"
  tar -C "$OUT" -czf "$OUT/init-ab.tar.gz" init-ab && rm -rf "$OUT/init-ab"
  say "init A/B: done at $((SECONDS - T0)) s"
fi

if [ "$(left)" -gt 120 ]; then
  # Exact mode with the new defaults (the init kernel and the one-pass L2 normalisation run in fp32 too).
  # shellcheck disable=SC2086
  timeout 100 "$CLI" bench ${AB_ARGS/fp16/fp32} --json "$OUT/exact-fp32.json" > "$OUT/exact-fp32.txt" 2>&1
  say "exact fp32 bench: rc=$? at $((SECONDS - T0)) s"
  tail -12 "$OUT/exact-fp32.txt" | tee -a "$LOG"
fi
profile base:256:fp16 small:256:fp16

TORCH_LIB=$(python3 -c 'import torch,os;print(os.path.dirname(torch.__file__))')/lib
say "OpenMP in torch/lib: $(find "$TORCH_LIB" -maxdepth 1 -iname '*omp*' -printf '%f ' 2>/dev/null)"
say "OpenMP the CLI loads: $(ldd "$CLI" | grep -i omp | tr '\n' ' ')"
say "total: $((SECONDS - T0)) s"
