#!/usr/bin/env bash
# The Slurm path of `trackscope-cli batch`, for real, on this machine: starts a single-node Slurm (munged,
# slurmctld, slurmd on localhost, CPU only, a generated slurm.conf in a temporary folder), runs the same job list
# twice -- locally with three CPU workers, and as a 3-task Slurm job array gathered by the submitter -- and
# compares the two: every output file bit for bit, and summary.json without its "measurements" (times, hosts,
# workers). Needs root (it installs slurm-wlm and munge when missing and starts the daemons); stops what it
# started on exit.
#   tools/ci/slurm.sh [--full]        BUILD_DIR (default build) holds a built trackscope-cli.
# The job list: every clip of ../shared/testdata (the first 8 frames, a 4x4 grid; --full: whole clips), plus a
# truncated copy of one clip, which both runs must report as failed the same way. docs/batch.md explains how a
# lab points the same command at its own cluster.
set -euo pipefail
cd "$(dirname "$0")/../.."
ROOT=$PWD
BUILD_DIR=${BUILD_DIR:-build}
CLI=$ROOT/$BUILD_DIR/app/trackscope-cli
TESTDATA=$(cd "${TRACKSCOPE_SHARED_DIR:-$ROOT/../shared}/testdata" && pwd)
FULL=no
[ "${1:-}" = "--full" ] && FULL=yes
T0=$SECONDS
say() { echo "slurm.sh [$((SECONDS - T0)) s] $*"; }
[ -x "$CLI" ] || { echo "slurm.sh: build trackscope-cli first ($CLI)" >&2; exit 2; }
[ "$(id -u)" -eq 0 ] || { echo "slurm.sh: run as root (it installs and starts munged, slurmctld, slurmd)" >&2; exit 2; }

missing=()
for p in slurm-wlm munge; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  say "installing ${missing[*]}"
  apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}" > /dev/null
fi

WORK=$(mktemp -d "${TMPDIR:-/tmp}/trackscope-slurm.XXXXXX")
chmod 755 "$WORK"
CONF=$WORK/conf
mkdir -p "$CONF/state" "$CONF/spool"
export SLURM_CONF=$CONF/slurm.conf
PIDS=()
cleanup() {
  local rc=$?
  for pid in "${PIDS[@]}"; do kill "$pid" 2>/dev/null || true; done
  [ -f "$CONF/munged.pid" ] && kill "$(cat "$CONF/munged.pid")" 2>/dev/null || true
  if [ $rc -ne 0 ]; then
    for log in "$CONF"/slurmctld.log "$CONF"/slurmd.log "$WORK"/slurm/slurm/shard-*.log; do
      [ -f "$log" ] && { echo "---- $log"; tail -20 "$log"; }
    done
  fi
  echo "slurm.sh: work folder $WORK"
}
trap cleanup EXIT

# munge: the Debian package made /etc/munge/munge.key; a private socket keeps clear of any munged already running.
MUNGE_SOCKET=$CONF/munge.socket
mkdir -p /var/lib/munge /var/log/munge /run/munge
chown munge:munge "$CONF" /var/lib/munge /var/log/munge /run/munge 2>/dev/null || true
runuser -u munge -- /usr/sbin/munged --socket="$MUNGE_SOCKET" --pid-file="$CONF/munged.pid" \
  --log-file="$CONF/munged.log" --seed-file="$CONF/munged.seed"
chown root:root "$CONF"
munge --socket="$MUNGE_SOCKET" -n | unmunge --socket="$MUNGE_SOCKET" > /dev/null
say "munged up"

NODE=$(hostname -s)
CPUS=$(nproc)
MEMORY_MB=$(( $(awk '/MemTotal/ {print $2}' /proc/meminfo) / 1024 / 2 ))
cat > "$SLURM_CONF" <<CONFEOF
ClusterName=trackscope-ci
SlurmctldHost=$NODE(127.0.0.1)
SlurmctldPort=16817
SlurmdPort=16818
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
AuthInfo=socket=$MUNGE_SOCKET
CredType=cred/munge
StateSaveLocation=$CONF/state
SlurmdSpoolDir=$CONF/spool
SlurmctldPidFile=$CONF/slurmctld.pid
SlurmdPidFile=$CONF/slurmd.pid
SlurmctldLogFile=$CONF/slurmctld.log
SlurmdLogFile=$CONF/slurmd.log
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
SchedulerType=sched/backfill
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
ReturnToService=2
MpiDefault=none
MinJobAge=600
NodeName=$NODE NodeAddr=127.0.0.1 CPUs=$CPUS RealMemory=$MEMORY_MB State=UNKNOWN
PartitionName=ci Nodes=$NODE Default=YES MaxTime=INFINITE State=UP
CONFEOF
/usr/sbin/slurmctld -D -f "$SLURM_CONF" > "$CONF/slurmctld.out" 2>&1 &
PIDS+=($!)
/usr/sbin/slurmd -D -f "$SLURM_CONF" -N "$NODE" > "$CONF/slurmd.out" 2>&1 &
PIDS+=($!)
for _ in $(seq 60); do
  sinfo -h -o '%T' 2>/dev/null | grep -qE '^(idle|mixed|allocated)' && break
  sleep 1
done
sinfo -h -o '%T' | grep -qE '^(idle|mixed|allocated)' || { echo "slurm.sh: the node did not come up" >&2; sinfo >&2; exit 1; }
say "slurmctld and slurmd up: $(sinfo -h -o '%P %D node(s) %c CPUs %T')"

# The job list: every clip of the test data, and a truncated copy of one.
JOBS=$WORK/jobs.jsonl
head -c 300000 "$TESTDATA/cotracker_apple.mp4" > "$WORK/truncated_apple.mp4"
END=', "end": 8'
[ "$FULL" = yes ] && END=""
{
  echo "{\"id\": \"sampt_bees\", \"video\": \"$TESTDATA/sampt_bees.mp4\", \"queries\": \"grid:4x4@frame0\"$END, \"outputs\": [\"csv\", \"npz\"]}"
  echo "{\"id\": \"pips2_camel\", \"video\": \"$TESTDATA/pips2_camel.mp4\", \"queries\": \"grid:4x4@frame0\"$END, \"outputs\": [\"csv\", \"json\"]}"
  echo "{\"id\": \"cotracker_apple\", \"video\": \"$TESTDATA/cotracker_apple.mp4\", \"queries\": \"grid:4x4@frame0\"$END, \"outputs\": [\"csv\", \"dlc\"]}"
  echo "{\"id\": \"horsejump-high\", \"video\": \"$TESTDATA/horsejump-high_480p/video\", \"queries\": \"grid:4x4@frame0\"$END, \"outputs\": [\"csv\", \"trackscope\"]}"
  echo "{\"id\": \"truncated_apple\", \"video\": \"truncated_apple.mp4\", \"queries\": \"grid:4x4@frame0\"$END}"
} > "$JOBS"

# The same threads and memory budget per worker in both runs: the query chunks, and so the floating-point sums,
# are the same, and the outputs can be compared bit for bit.
# Whole clips need a larger budget (pips2_camel's 372 frames: 3.03 GiB in fp32).
BUDGET_MB=${BUDGET_MB:-3072}
[ "$FULL" = yes ] && BUDGET_MB=${BUDGET_MB_FULL:-4096}
COMMON=(--threads 1 --memory-budget-mb "$BUDGET_MB" -q)
T1=$SECONDS
set +e
"$CLI" batch "$JOBS" --out "$WORK/local" --devices 'cpu*3' "${COMMON[@]}" > "$WORK/local.txt" 2>&1
local_rc=$?
T2=$SECONDS
"$CLI" batch "$JOBS" --out "$WORK/slurm" --slurm --tasks 3 --partition ci --cpus-per-task 1 --time 00:30:00 \
  --devices cpu "${COMMON[@]}" > "$WORK/slurm.txt" 2>&1
slurm_rc=$?
T3=$SECONDS
set -e
say "local batch (3 CPU workers): exit $local_rc in $((T2 - T1)) s"
cat "$WORK/local.txt"
say "Slurm batch (3 array tasks): exit $slurm_rc in $((T3 - T2)) s"
cat "$WORK/slurm.txt"
# Exit 1 is expected (the truncated clip fails); anything else is not.
[ $local_rc -eq 1 ] && [ $slurm_rc -eq 1 ] || { echo "slurm.sh: unexpected exit codes" >&2; exit 1; }

# The comparison: every output file, byte for byte, and the summaries without their measurements.
fail=0
(cd "$WORK/local" && find . -type f ! -name result.json ! -name 'summary.*' ! -name batch.json | sort) > "$WORK/local.files"
(cd "$WORK/slurm" && find . -type f ! -path './slurm/*' ! -name result.json ! -name 'summary.*' ! -name batch.json | sort) > "$WORK/slurm.files"
if ! diff "$WORK/local.files" "$WORK/slurm.files"; then echo "slurm.sh: different output files" >&2; fail=1; fi
while read -r f; do
  if cmp -s "$WORK/local/$f" "$WORK/slurm/$f"; then
    echo "identical: $f ($(stat -c %s "$WORK/local/$f") bytes)"
  else
    echo "DIFFERENT: $f"; fail=1
  fi
done < "$WORK/local.files"
python3 - "$WORK/local/summary.json" "$WORK/slurm/summary.json" <<'PYEOF' || fail=1
import json, sys
a, b = (json.load(open(p)) for p in sys.argv[1:3])
workers = sorted({m["worker"] for m in a["measurements"]}), sorted({m["host"] for m in b["measurements"]})
for d in (a, b):
    del d["measurements"]
same = a == b
print("summary.json without measurements:", "identical" if same else "DIFFERENT")
print("  clips: %d, ok %d, failed %d; failed: %s" % (a["counts"]["clips"], a["counts"]["ok"], a["counts"]["failed"],
      "; ".join("%s: %s" % (c["id"], c["error"]) for c in a["clips"] if c["status"] == "failed")))
sys.exit(0 if same else 1)
PYEOF
grep -h . "$WORK"/slurm/slurm/shard-*.exit | tr '\n' ' ' | sed 's/^/Slurm task exit codes: /'; echo
say "total $((SECONDS - T0)) s (local $((T2 - T1)) s, Slurm $((T3 - T2)) s)"
[ $fail -eq 0 ] && echo "slurm.sh: PASS: the Slurm array's outputs and summary equal the local run's" || echo "slurm.sh: FAIL"
exit $fail
