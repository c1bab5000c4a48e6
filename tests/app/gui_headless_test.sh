#!/bin/sh
# trackscope --screenshot never waits on a dialog (issue 18): a project whose video is missing and a recovery
# file of a crashed session would each open a modal prompt in an interactive window; headless, each takes its
# default answer (cancel / later), which is logged, and the screenshot is written and the process exits.
#
#   gui_headless_test.sh TRACKSCOPE OUTPUT_DIR
set -u
gui=$1
out=$2/gui_headless
rm -rf "$out" && mkdir -p "$out/config/Trackscope/recovery"
project='{"format": "trackscope-project", "version": 1, "next_id": 1,
  "video": {"path": "/nonexistent/moved.mp4", "size_bytes": 1000, "fingerprint": "00", "frame_count": 10,
            "width": 64, "height": 48, "frames_per_second": 25},
  "points": [{"id": 0, "colour_index": 0, "query": {"frame": 0, "x": 5.5, "y": 5.5}, "track": null}]}'
echo "$project" >"$out/moved.trackscope"
# A crashed session's recovery file (no lock: its process is gone).
echo "$project" >"$out/config/Trackscope/recovery/session-1-1.trackscope-recovery"
start=$(date +%s)
XDG_CONFIG_HOME="$out/config" QT_QPA_PLATFORM=offscreen timeout 90 "$gui" --screenshot "$out/shot.png" \
  "$out/moved.trackscope" >"$out/stdout" 2>"$out/stderr"
rc=$?
echo "trackscope --screenshot exited with $rc after $(($(date +%s) - start)) s"
grep "headless" "$out/stderr"
[ "$rc" = 0 ] || { echo "FAIL: exit $rc (124 = still waiting after 90 s)"; cat "$out/stderr"; exit 1; }
[ -s "$out/shot.png" ] || { echo "FAIL: no screenshot"; exit 1; }
grep -q "headless: the project's video is missing" "$out/stderr" || { echo "FAIL: the missing video was not logged"; exit 1; }
grep -q "answered Later" "$out/stderr" || { echo "FAIL: the recovery offer was not logged"; exit 1; }
[ -e "$out/config/Trackscope/recovery/session-1-1.trackscope-recovery" ] || { echo "FAIL: the recovery file is gone"; exit 1; }
# Contradictory or malformed options: exit status 2 and one line naming the problem, before any window.
bad_option() {
  expected=$1
  shift
  XDG_CONFIG_HOME="$out/config" QT_QPA_PLATFORM=offscreen timeout 30 "$gui" "$@" >/dev/null 2>"$out/bad.stderr"
  rc=$?
  [ "$rc" = 2 ] || { echo "FAIL: $* exited with $rc, expected 2"; cat "$out/bad.stderr"; exit 1; }
  grep -q -- "$expected" "$out/bad.stderr" || { echo "FAIL: $* did not say '$expected'"; cat "$out/bad.stderr"; exit 1; }
}
bad_option "need --track" --track-devices cpu
bad_option "with --track use --screenshot-after-track" --track --screenshot "$out/x.png"
bad_option "unknown precision 'fp8'" --precision fp8
bad_option "queries 'grid:0x1@frame0'" --queries grid:0x1@frame0
bad_option "takes two profiles" --compare only-one.json
echo "all passed"
