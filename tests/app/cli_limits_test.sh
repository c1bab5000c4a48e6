#!/bin/sh
# trackscope-cli under limits and faults (issue 18): nonsense arguments refused with a clear message, outputs
# checked before the work, thread requests capped, and cut-off writes (ulimit -f) that keep the previous file.
#
#   cli_limits_test.sh CLI TESTDATA OUTPUT_DIR [fast|slow]
#
# fast (default, ~10 s): everything that needs no tracking run; slow adds a 2-frame CPU tracking run (--threads
# 1000 capped), two 4-frame runs with and without the read-ahead (identical tracks), and a cut-off bench --json.
set -u
cli=$1
testdata=$2
mode=${4:-fast}
out=$3/cli_limits_$mode

rm -rf "$out" && mkdir -p "$out"
failures=0

fail() {
  echo "FAIL: $*"
  failures=$((failures + 1))
}

# expect_error NAME REGEX COMMAND...: the command fails and its stderr matches REGEX.
expect_error() {
  name=$1
  regex=$2
  shift 2
  if "$@" >"$out/$name.out" 2>"$out/$name.err"; then
    fail "$name: succeeded"
  elif ! grep -Eq -e "$regex" "$out/$name.err"; then
    fail "$name: stderr does not match '$regex':"
    cat "$out/$name.err"
  else
    echo "ok: $name: $(grep -E -e "$regex" "$out/$name.err" | head -1)"
  fi
}

video=$testdata/horsejump-high_480p/video
printf 'frame,x,y\n0,100.5,100.5\n' >"$out/one.csv"

# --- nonsense refused before anything runs ------------------------------------------------------------------
expect_error end_negative "--end -5: give one past the last frame" \
  "$cli" track "$video" --queries "$out/one.csv" --out "$out/t.csv" --end -5
expect_error threads_negative "--threads -1 is negative" \
  "$cli" track "$video" --queries "$out/one.csv" --out "$out/t.csv" --threads -1
expect_error memory_budget_huge "larger than any machine" \
  "$cli" track "$video" --queries "$out/one.csv" --out "$out/t.csv" --memory-budget-mb 99999999999999
expect_error bench_threads_negative "--threads -1 is negative" "$cli" bench --threads -1 --device cpu
expect_error read_ahead_negative "read-ahead-mb" \
  "$cli" track "$video" --queries "$out/one.csv" --out "$out/t.csv" --read-ahead-mb -5
# The engine choices are parsed once by their names (gpu/bench.h): an unknown one is refused by the parser, known
# ones get through to the next check (the unwritable --json).
expect_error bench_corr_kernel_unknown "corr-kernel" "$cli" bench --device cpu --corr-kernel tensor_cores
expect_error bench_cuda_graphs_auto "cuda-graphs" "$cli" bench --device cpu --cuda-graphs auto
expect_error bench_engine_choices_parsed "does not exist" "$cli" bench --device cpu --path eager --corr-kernel tensor \
  --cmdtop dense --cudnn-benchmark off --norm reference --cuda-graphs on --mixer plain --json "$out/none/b.json"

# --- outputs checked before the work: the missing folder is reported before the (missing) queries are read --
start=$(date +%s%N)
expect_error out_unwritable "cannot write .*/no_such_folder/t.csv.*does not exist" \
  "$cli" track "$video" --queries "$out/no_such_queries.csv" --out "$out/no_such_folder/t.csv"
elapsed_ms=$((($(date +%s%N) - start) / 1000000))
echo "    (track with an unwritable --out failed after $elapsed_ms ms, process start included)"
expect_error bench_json_unwritable "does not exist" \
  "$cli" bench --device cpu --json "$out/no_such_folder/b.json"
expect_error eval_json_unwritable "does not exist" \
  "$cli" eval --synthetic 1 --json "$out/no_such_folder/e.json"

# --- queries above the limit: refused at the first row past it ----------------------------------------------
awk 'BEGIN { print "frame,x,y"; for (i = 0; i < 100000; ++i) printf "0,%d.5,%d.5\n", i % 800, i % 400 }' \
  >"$out/100k.csv"
expect_error queries_100k ":10002: more than 10000 queries" \
  "$cli" track "$video" --queries "$out/100k.csv" --out "$out/t.csv"

# --- cut-off writes keep the previous files (SIGXFSZ is ignored by the CLI: the write fails, reported) --------
"$cli" frames "$video" --at 0,1 --out "$out/frames" >/dev/null || fail "frames: first run"
cp -r "$out/frames" "$out/frames_before"
expect_error frames_cut "could not save .*ulimit -f" sh -c "ulimit -f 16; exec '$cli' frames '$video' --at 0,1 --out '$out/frames'"
cmp -s "$out/frames/frame_000000.png" "$out/frames_before/frame_000000.png" || fail "frames: the previous PNG changed"
[ "$(ls -A "$out/frames" | wc -l)" = 2 ] || fail "frames: files left behind: $(ls -A "$out/frames")"

"$cli" bench-video "$video" --seeks 3 --json "$out/bv.json" >/dev/null 2>&1 || fail "bench-video: first run"
cp "$out/bv.json" "$out/bv_before.json"
expect_error bench_video_cut "could not save .*ulimit -f" sh -c "ulimit -f 1; exec '$cli' bench-video '$video' --seeks 3 --json '$out/bv.json'"
cmp -s "$out/bv.json" "$out/bv_before.json" || fail "bench-video: the previous JSON changed"

if [ "$mode" = slow ]; then
  # --- --threads 1000 is capped to the machine, with a notice, and the run finishes --------------------------
  if "$cli" track "$video" --queries "$out/one.csv" --out "$out/t.csv" --device cpu --end 2 --threads 1000 -q \
    2>"$out/threads.err"; then
    grep -q "threads 1000 is more than the .* CPU thread" "$out/threads.err" || fail "threads: no notice"
    echo "ok: threads_capped: $(grep -E 'threads 1000' "$out/threads.err")"
  else
    fail "threads: the capped run failed: $(cat "$out/threads.err")"
  fi
  # --- the read-ahead hands the tracker exactly the file's frames (and says what it did) ----------------------
  "$cli" track "$video" --queries "$out/one.csv" --out "$out/plain.csv" --device cpu --end 4 --read-ahead-mb 0 -q \
    2>"$out/plain.err" || fail "read-ahead: the run without it failed: $(cat "$out/plain.err")"
  "$cli" track "$video" --queries "$out/one.csv" --out "$out/ahead.csv" --device cpu --end 4 --read-ahead-mb 16 -q \
    2>"$out/ahead.err" || fail "read-ahead: the run with it failed: $(cat "$out/ahead.err")"
  grep -q "no read-ahead" "$out/plain.err" || fail "read-ahead: --read-ahead-mb 0 not reported as off"
  grep -q "read ahead meanwhile .* 4 in all, 4 of them used" "$out/ahead.err" ||
    fail "read-ahead: not all 4 frames came from it: $(grep start-up "$out/ahead.err")"
  if cmp -s "$out/plain.csv" "$out/ahead.csv"; then
    echo "ok: read_ahead_same_tracks: $(grep -o 'read ahead meanwhile.*used)' "$out/ahead.err")"
  else
    fail "read-ahead: the tracks differ"
  fi
  # --- bench --json cut off: the previous profile survives ----------------------------------------------------
  bench="$cli bench --device cpu --points 8 --frames 4 --repeats 1 --warmup 0 --no-peaks"
  $bench --json "$out/bench.json" >/dev/null 2>&1 || fail "bench: first run"
  cp "$out/bench.json" "$out/bench_before.json"
  expect_error bench_json_cut "could not save .*ulimit -f" sh -c "ulimit -f 1; exec $bench --json '$out/bench.json'"
  cmp -s "$out/bench.json" "$out/bench_before.json" || fail "bench: the previous profile changed"
fi

[ "$failures" = 0 ] && echo "all passed" && exit 0
echo "$failures failure(s)"
exit 1
