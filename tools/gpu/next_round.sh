#!/usr/bin/env bash
# The next GPU call. Last run 2026-12-06 09:19-10:01 UTC (stop 37: LocoTrack-S's first CMDTop layer without its
# padding taps, the correlation's copies addressed once per block; results and commands in
# docs/performance-results.md): the GPU tests, source A/Bs against the previous kernels (AB, AB_CASE), the official
# cases, fast mode's fidelity. The item-1 targets of issue 17 are defined on an H200: when one is lent, this call as
# it is gives the figures to compare with them.
# One call, within TOTAL_S seconds (default 570), in this order, each step only if time is left:
#   1. build trackscope-cli + the CUDA tests (tools/gpu/check.sh), run TESTS (default gpu/ops_cuda, gpu/engine_cuda);
#   2. the source A/Bs of AB="NAME:FOLDER:ROUNDS ..." (bench arguments AB_CASE, default small N=256 fp16; prepare
#      each folder here with SOURCE_AB_OLD=FOLDER bash tools/gpu/source_ab.sh --prepare REV FILE... and carry it);
#   3. the flag A/Bs of FLAG_AB="FLAG:VALUE_A,VALUE_B ..." (default: --mlp-gelu exact,fused-tanh; FLAG_AB= skips):
#      the four official cases in fp16, the two values alternately, two rounds (flag-*.json);
#   4. the four official cases in fast (fp16) and exact (fp32) mode, medians of 5 (bench-official.json);
#   5. fast mode against exact mode on the bundled model (tools/gpu/fidelity.py, fp16 and bf16: fidelity.json);
#   6. Nsight Compute details + stall reasons of DETAILS, if set;
#   7. per-launch kernel times of small N=256 fp16 under ncu (tools/gpu/profile_kernels.sh), if time is left.
#
# Here, first: tools/gpu/prepare.sh --fixtures small --no-long-clip
# The call (device tool, carry [".gpu-carry"] and the A/B folders, timeout_s 600), e.g. stop 37's:
#   source .gpu-carry/gpu_env.sh || exit 1; TOTAL_S=540 AB="skip:.gpu-carry-old1:2" FLAG_AB= \
#     TESTS='gpu/(ops|engine|locotrack_parity)_cuda' AB_CASE="--device cuda:0 --repeats 5 --warmup 2 --no-peaks \
#     --model small --points 256,1024 --precision fp16,fp32" bash tools/gpu/next_round.sh "$OUT"
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

bash tools/gpu/check.sh "$OUT/check" --tests "${TESTS:-gpu/(ops|engine)_cuda}" \
  --targets "trackscope-cli test_gpu_ops test_gpu_engine test_gpu_locotrack_parity test_gpu_synthetic test_gpu_trainer"
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
CASE=${AB_CASE:-"$COMMON --model small --points 256 --precision fp16"}
for ab in ${AB:-}; do
  IFS=: read -r name folder rounds <<< "$ab"
  source_ab "$name" "$folder" 80 "${rounds:-2}" "$CASE"
done
FAST="--device cuda:0 --model small,base --points 256,1024 --precision fp16 --repeats 5 --warmup 2 --no-peaks"
for ab in ${FLAG_AB---mlp-gelu:exact,fused-tanh}; do
  IFS=: read -r flag values <<< "$ab"
  IFS=, read -r value_a value_b <<< "$values"
  for round in 1 2; do
    for value in "$value_a" "$value_b"; do
      if [ "$(left)" -lt 200 ]; then say "flag A/B $flag $value round $round: $(left) s left, skipped"; continue; fi
      json="$OUT/flag-${flag#--}-$value-$round.json"
      # shellcheck disable=SC2086
      timeout 100 "$CLI" bench $FAST "$flag" "$value" --json "$json" > "${json%.json}.txt" 2>&1
      say "flag A/B $flag $value round $round: rc=$? at $((SECONDS - T0)) s"
      grep -E 'median' "${json%.json}.txt" | tee -a "$LOG"
    done
  done
done
# The device tool returns at most 8 files: the A/B's profiles and logs travel as one archive.
if compgen -G "$OUT/flag-*.txt" > /dev/null; then
  (cd "$OUT" && tar -czf flag-ab.tar.gz flag-*.txt flag-*.json 2> /dev/null; rm -f flag-*.json flag-*.txt)
fi
OFFICIAL="--device cuda:0 --model small,base --points 256,1024 --precision fp16,fp32 --repeats 5 --warmup 2 --no-peaks"
if [ "$(left)" -gt 130 ]; then
  # shellcheck disable=SC2086
  timeout 110 "$CLI" bench $OFFICIAL --json "$OUT/bench-official.json" > "$OUT/bench-official.txt" 2>&1
  say "official cases: rc=$? at $((SECONDS - T0)) s"
  grep -E 'median' "$OUT/bench-official.txt" | tee -a "$LOG"
fi
if [ "$(left)" -gt 100 ]; then
  timeout 90 python3 tools/gpu/fidelity.py --cli "$CLI" --video ../shared/testdata/horsejump-high_480p/video \
    --model default --precisions fp16,bf16 --json "$OUT/fidelity.json" > "$OUT/fidelity.txt" 2>&1
  say "fidelity: rc=$? at $((SECONDS - T0)) s"
  tee -a "$LOG" < "$OUT/fidelity.txt"
fi
DETAILS=${DETAILS:-}
if [ -n "$DETAILS" ] && [ "$(left)" -gt 60 ]; then
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
