#!/usr/bin/env bash
# The next GPU call (prepared 2026-12-06, not yet run). Run it on branch next/norm-chunks (main + the InstanceNorm
# kernels on the emulation primitives: shifted-sum statistics in about 512 blocks, a conflict-free tree, the apply
# with registers for scale/shift (next/norm-v2); each residual block's sum fused into the next norm's statistics and
# the apply at four vectors per thread (next/norm-residual); the samples in L2-sized chunks): tests, source A/Bs, the
# official cases, kernel details. Merge only if gpu/ops_cuda and gpu/engine_cuda pass and the A/Bs gain (each part
# by its own A/B).
# One call, within TOTAL_S seconds (default 570), in this order, each step only if time is left:
#   1. build trackscope-cli + the CUDA op and engine tests (tools/gpu/check.sh), run gpu/ops_cuda and gpu/engine_cuda
#      (the CUDA InstanceNorm against float64 and the fused residual sum against the two ops bit for bit, exact-mode
#      parity, bf16/fp16 fidelity);
#   2. the A/Bs whose folder of old files was carried (SOURCE_AB_OLD), small N=256 fp16:
#        norm      .gpu-carry-old3  3 rounds: main's InstanceNorm (its kernels, launcher, op and engine files)
#        chunks    .gpu-carry-old6  2 rounds: without the chunks (next/norm-residual's four files)
#   3. the four official cases in fast (fp16) and exact (fp32) mode, medians of 5 (bench-official.json);
#   4. more A/Bs, small N=256 fp16, 2 rounds each:
#        residual  .gpu-carry-old4  the engine without add_norm_relu (next/norm-v2's engine.cpp)
#        apply     .gpu-carry-old5  the apply's parts before e15b876 (this branch's .cuh with 8658028's apply_parts)
#   5. Nsight Compute details + stall reasons of DETAILS (default: the InstanceNorm statistics and apply kernels);
#   6. per-launch kernel times of small N=256 fp16 under ncu (tools/gpu/profile_kernels.sh), if time is left.
#
# Here, first:
#   tools/gpu/prepare.sh --fixtures small --no-long-clip
#   SOURCE_AB_OLD=.gpu-carry-old3 bash tools/gpu/source_ab.sh --prepare main gpu/engine/engine.cpp \
#     gpu/ops/cuda/cuda_wrappers.cpp gpu/ops/cuda/instance_norm_kernels.cu \
#     gpu/ops/cuda/launchers.h gpu/ops/instance_norm.cpp gpu/ops/kernels.h   (main's ops.h and engine.h are not
#     needed: the branch's only add a declaration and a comment, and they would rebuild most of the tree)
#   SOURCE_AB_OLD=.gpu-carry-old6 bash tools/gpu/source_ab.sh --prepare next/norm-residual \
#     gpu/ops/cuda/instance_norm_kernels.cu gpu/ops/cuda/instance_norm_kernel.cuh gpu/ops/cuda/launchers.h \
#     gpu/ops/cuda/cuda_wrappers.cpp
#   SOURCE_AB_OLD=.gpu-carry-old4 bash tools/gpu/source_ab.sh --prepare next/norm-v2 gpu/engine/engine.cpp
#   .gpu-carry-old5/gpu/ops/cuda/instance_norm_kernel.cuh: this branch's file with the block from "/// Apply blocks
#     per sample" to "struct Moments {" replaced by 8658028's (a short Python replace; source_ab.sh cannot make it)
# The call (device tool, carry [".gpu-carry", ".gpu-carry-old3", ".gpu-carry-old4", ".gpu-carry-old5",
#   ".gpu-carry-old6"], timeout_s 600):
#   source .gpu-carry/gpu_env.sh || exit 1; TOTAL_S=540 bash tools/gpu/next_round.sh "$OUT"
set -uo pipefail
OUT=${1:?usage: next_round.sh OUT_DIR}
cd "$(dirname "$0")/../.." || exit 1
mkdir -p "$OUT"
T0=$SECONDS
LOG=$OUT/next-round.txt
say() { echo "$*" | tee -a "$LOG"; }
TOTAL_S=${TOTAL_S:-570}  # the seconds this call may take (the device tool stops it at its timeout)
left() { echo $((TOTAL_S - (SECONDS - T0))); }
nvidia-smi --query-gpu=name,clocks.max.sm,memory.total --format=csv,noheader | tee -a "$LOG"

bash tools/gpu/check.sh "$OUT/check" --tests 'gpu/(ops|engine)_cuda' \
  --targets "trackscope-cli test_gpu_ops test_gpu_engine"
say "check: done at $((SECONDS - T0)) s"
grep -E 'tests passed|tests failed|Failed|Passed' "$OUT/check/summary.txt" 2>/dev/null | tee -a "$LOG"

CLI=${BUILD_DIR:-build-gpu}/app/trackscope-cli
[ -x "$CLI" ] || { say "no $CLI: the build failed (check/logs.tar.gz)"; exit 1; }
source_ab() {  # source_ab NAME OLD_DIR MIN_SECONDS ROUNDS BENCH_ARGS
  local name=$1 old=$2 need=$3 rounds=$4 args=$5
  if [ ! -d "$old" ]; then say "A/B $name: $old not carried, skipped"; return 0; fi
  if [ "$(left)" -lt "$need" ]; then say "A/B $name: $(left) s left, skipped"; return 0; fi
  SOURCE_AB_OLD=$old bash tools/gpu/source_ab.sh --run "$OUT/ab-$name" "$args" "$rounds" 2>&1 | tail -30 | tee -a "$LOG"
  tar -C "$OUT" -czf "$OUT/ab-$name.tar.gz" "ab-$name" && rm -rf "${OUT:?}/ab-$name"
  say "A/B $name: done at $((SECONDS - T0)) s"
}
# Each A/B runs if its folder of old files was carried (prepare it with SOURCE_AB_OLD=FOLDER source_ab.sh --prepare).
COMMON="--device cuda:0 --repeats 5 --warmup 2 --no-peaks"
CASE="$COMMON --model small --points 256 --precision fp16"
source_ab norm .gpu-carry-old3 90 3 "$CASE"
source_ab chunks .gpu-carry-old6 80 2 "$CASE"
OFFICIAL="--device cuda:0 --model small,base --points 256,1024 --precision fp16,fp32 --repeats 5 --warmup 2 --no-peaks"
if [ "$(left)" -gt 130 ]; then
  # shellcheck disable=SC2086
  timeout 110 "$CLI" bench $OFFICIAL --json "$OUT/bench-official.json" > "$OUT/bench-official.txt" 2>&1
  say "official cases: rc=$? at $((SECONDS - T0)) s"
  grep -E 'median' "$OUT/bench-official.txt" | tee -a "$LOG"
fi
source_ab residual .gpu-carry-old4 80 2 "$CASE"
source_ab apply .gpu-carry-old5 80 2 "$CASE"
DETAILS=${DETAILS:-"small:256:fp16 statistics_kernel apply_kernel"}
if [ "$(left)" -gt 60 ]; then
  # shellcheck disable=SC2086  # DETAILS is a case and regexes
  timeout "$(( $(left) - 30 ))" bash tools/gpu/kernel_details.sh /tmp/details $DETAILS > /dev/null 2>&1
  say "kernel details: rc=$? at $((SECONDS - T0)) s"
  cp /tmp/details/details.txt "$OUT/" 2>/dev/null
fi
if [ "$(left)" -gt 70 ]; then
  timeout "$(( $(left) - 20 ))" bash tools/gpu/profile_kernels.sh /tmp/prof small:256:fp16 > /tmp/prof.log 2>&1
  say "profile small:256:fp16: rc=$? at $((SECONDS - T0)) s"
  cp /tmp/prof.log /tmp/prof/ 2>/dev/null
  tar -C /tmp -czf "$OUT/prof.tar.gz" prof 2>/dev/null
fi
say "total: $((SECONDS - T0)) s"
