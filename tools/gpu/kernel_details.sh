#!/usr/bin/env bash
# Nsight Compute's detail sections (speed of light, memory workload, launch statistics, occupancy, warp states)
# for the first launch of each named kernel in one forward pass: why a kernel is slow, where
# tools/gpu/profile_kernels.sh only says that it is (docs/performance-results.md).
#
# On the GPU machine, after a build (tools/gpu/check.sh ... --targets trackscope-cli):
#   bash tools/gpu/kernel_details.sh OUT_DIR MODEL:POINTS:PRECISION KERNEL_REGEX...
# e.g. kernel_details.sh "$OUT/details" small:1024:fp16 mixer_input_kernel vectorized_layer_norm partial_moments
# writes OUT_DIR/details_<n>.csv (ncu --page details --csv: one row per metric) per regex, and
# OUT_DIR/details.txt with the headline metrics of each kernel. One ncu run per regex (the CLI starts again each
# time, ~10 s), so each regex profiles exactly one launch: the first that matches.
# Beside the sections, the warp stall reasons (cycles per issued instruction spent in each) and the tensor, FMA and
# load/store pipes' utilisation are collected as extra metrics (ncu's "Command line profiler metrics"), printed
# with the headline rows: where a kernel's issue slots go, not only how full they are.
set -uo pipefail
OUT=${1:?usage: kernel_details.sh OUT_DIR MODEL:POINTS:PRECISION KERNEL_REGEX...}
CASE=${2:?usage: kernel_details.sh OUT_DIR MODEL:POINTS:PRECISION KERNEL_REGEX...}
shift 2
CLI=${BUILD_DIR:-build-gpu}/app/trackscope-cli
NCU=$(command -v ncu || find /usr/local/cuda/bin /opt/nvidia -name ncu -type f 2>/dev/null | head -1)
if [ -z "$NCU" ] || [ ! -x "$CLI" ]; then
  echo "kernel_details.sh: needs ncu (found '${NCU}') and $CLI" >&2
  exit 1
fi
IFS=: read -r model points precision <<< "$CASE"
mkdir -p "$OUT"
STALLS="barrier long_scoreboard short_scoreboard mio_throttle math_pipe_throttle wait not_selected selected"
STALLS+=" lg_throttle dispatch_stall no_instruction tex_throttle membar drain branch_resolving sleeping"
METRICS=""
for stall in $STALLS; do METRICS+="smsp__average_warps_issue_stalled_${stall}_per_issue_active.ratio,"; done
METRICS+="sm__pipe_tensor_op_hmma_cycles_active.avg.pct_of_peak_sustained_active,"
METRICS+="sm__inst_executed_pipe_fma.avg.pct_of_peak_sustained_active,"
METRICS+="sm__inst_executed_pipe_alu.avg.pct_of_peak_sustained_active,"
METRICS+="sm__inst_executed_pipe_lsu.avg.pct_of_peak_sustained_active,"
METRICS+="smsp__inst_executed.sum,sm__sass_inst_executed_op_shared_ld.sum,sm__sass_inst_executed_op_shared_st.sum,"
METRICS+="sm__sass_inst_executed_op_global_ld.sum,l1tex__data_bank_conflicts_pipe_lsu_mem_shared.sum"
index=0
for regex in "$@"; do
  index=$((index + 1))
  profile_once() {  # $1: extra ncu arguments
    # shellcheck disable=SC2086
    timeout 120 "$NCU" --clock-control none -k "regex:$regex" --launch-count 1 $1 \
      --section SpeedOfLight --section MemoryWorkloadAnalysis --section LaunchStats --section Occupancy \
      --section ComputeWorkloadAnalysis --section WarpStateStats --csv --page details \
      "$CLI" bench --device cuda:0 --model "$model" --points "$points" --precision "$precision" --no-peaks \
      --cudnn-benchmark off --cuda-graphs off --warmup 0 --repeats 1 > "$OUT/details_$index.csv" 2> "$OUT/details_$index.err"
  }
  profile_once "--metrics $METRICS"
  rc=$?
  # A metric this ncu does not know fails the whole run: then the sections alone.
  if [ "$rc" -ne 0 ]; then
    cp "$OUT/details_$index.err" "$OUT/details_${index}_metrics.err"
    profile_once ""
    rc=$?
  fi
  echo "== $regex (rc=$rc)" >> "$OUT/details.txt"
  # The headline rows: duration, throughputs, occupancy, registers, grid and block sizes.
  python3 - "$OUT/details_$index.csv" >> "$OUT/details.txt" <<'PY'
import csv, sys
wanted = ("Duration", "Memory Throughput", "DRAM Throughput", "Compute (SM) Throughput", "Achieved Occupancy",
          "Theoretical Occupancy", "Registers Per Thread", "Grid Size", "Block Size", "L1/TEX Hit Rate",
          "L2 Hit Rate", "Executed Ipc Active", "Warp Cycles Per Issued Instruction", "Mem Busy", "Max Bandwidth",
          "Dynamic Shared Memory Per Block", "Waves Per SM")
lines = [line for line in open(sys.argv[1]) if line.startswith('"')]
for row in csv.DictReader(lines):
    if row.get("Metric Name") in wanted or row.get("Section Name") == "Command line profiler metrics":
        print(f'{row.get("Kernel Name", "")[:60]:60} {row["Metric Name"]:36} {row.get("Metric Value", "")} {row.get("Metric Unit", "")}')
PY
done
cat "$OUT/details.txt"
