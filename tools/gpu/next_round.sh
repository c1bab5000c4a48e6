#!/usr/bin/env bash
# The GPU call for what 2026-12-05's second session wrote without a GPU: the mixer-input kernel with a block per row
# (no 64-bit divisions per element) and the mixer's residual add + LayerNorm kernel (ops::add_layer_norm).
# One call, within TOTAL_S seconds (default 570), in this order, each step only if time is left:
#   1. build trackscope-cli + the CUDA op and engine tests (tools/gpu/check.sh), run gpu/ops_cuda (AddLayerNormCuda,
#      MixerInputRowsCuda, and the L2NormaliseChannelsCuda fp16 case fixed in debc3a7) and gpu/engine_cuda (parity
#      in exact mode, bf16/fp16 fidelity: the LayerNorm kernel runs in the 16-bit module mixer);
#   2. the glue A/B: --glue-kernels composite and auto, alternately, twice (composite is the previous sessions'
#      baseline, auto has every glue kernel including the two new ones);
#   3. per-launch kernel times of small N=1024 and N=256 fp16 under ncu (tools/gpu/profile_kernels.sh): the new
#      kernels' own times against 190 us (mixer input) and 63 us + 22 us (LayerNorm + add) before;
#   4. Nsight Compute detail sections of the next candidates (tools/gpu/kernel_details.sh): the backbone's
#      instance-norm statistics and apply kernels, the CMDTop and correlation kernels, the init kernel.
#
# Here, first: tools/gpu/prepare.sh --fixtures small --no-long-clip
# The call (device tool, carry [".gpu-carry"], timeout_s 600):
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
profile small:1024:fp16 small:256:fp16

if [ "$(left)" -gt 90 ]; then
  timeout "$(( $(left) - 30 ))" bash tools/gpu/kernel_details.sh /tmp/details small:256:fp16 partial_moments_kernel \
    apply_kernel finalise_kernel layer_norm_kernel mixer_input_kernel cmdtop_mma_kernel local_corr4d_mma_pipelined \
    init_plane_kernel > /dev/null 2>&1
  say "kernel details: rc=$? at $((SECONDS - T0)) s"
  cp /tmp/details/details.txt "$OUT/" 2>/dev/null
  tar -C /tmp -czf "$OUT/details.tar.gz" details 2>/dev/null
fi
say "total: $((SECONDS - T0)) s"
