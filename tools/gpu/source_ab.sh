#!/usr/bin/env bash
# A/B of a source change that has no runtime switch (a kernel rewritten in place): the CLI built from the working
# tree ("new") against the same build with some files put back to an older revision ("old"), benched alternately in
# one call so that the ratio is measured on one warm machine.
#
# Here:   bash tools/gpu/source_ab.sh --prepare REV FILE...
#         (writes `git show REV:FILE` under .gpu-carry-old/; that folder is git-ignored: name it in the call's carry)
# There:  after tools/gpu/check.sh has built trackscope-cli into BUILD_DIR (default build-gpu):
#         bash tools/gpu/source_ab.sh --run OUT_DIR "BENCH ARGS" [ROUNDS]
#         e.g. "--device cuda:0 --model small,base --points 256,1024 --precision fp16 --repeats 5 --warmup 2"
# Writes OUT_DIR/ab-{new,old}-K.json (K = 1..ROUNDS, default 2, in the order new, old, new, old, ...) and the
# headless comparison of the first pair (`trackscope-cli compare`) to OUT_DIR/ab-compare.txt. Rebuilding for "old"
# recompiles only the swapped files and relinks; the tree is restored and rebuilt as "new" before returning.
# Two rounds write 11 files and the device tool returns at most 8 from $OUT: run into a folder outside $OUT and
# bring back one archive, e.g. --run "bash tools/gpu/source_ab.sh --run /tmp/ab 'ARGS' 2; tar czf \$OUT/ab.tar.gz
# -C /tmp ab" (stop 40 lost the old side's JSON of a two-round A/B written under $OUT).
set -uo pipefail
cd "$(dirname "$0")/../.." || exit 1
# SOURCE_AB_OLD names another folder for the old files (two A/Bs in one call: prepare and run each with its own).
OLD_DIR=${SOURCE_AB_OLD:-.gpu-carry-old}
case "${1:-}" in
  --prepare)
    rev=${2:?usage: source_ab.sh --prepare REV FILE...}
    shift 2
    rm -rf "$OLD_DIR"
    for f in "$@"; do
      mkdir -p "$OLD_DIR/$(dirname "$f")"
      git show "$rev:$f" > "$OLD_DIR/$f" || exit 1
    done
    echo "source_ab: $# file(s) of $rev under $OLD_DIR/ (carry it)"
    exit 0
    ;;
  --run) ;;
  *) echo "usage: source_ab.sh --prepare REV FILE... | --run OUT_DIR \"BENCH ARGS\" [ROUNDS]" >&2; exit 2 ;;
esac
OUT=${2:?usage: source_ab.sh --run OUT_DIR "BENCH ARGS" [ROUNDS]}
ARGS=${3:?bench arguments}
ROUNDS=${4:-2}
BUILD=${BUILD_DIR:-build-gpu}
CLI=$BUILD/app/trackscope-cli
if [ ! -d "$OLD_DIR" ] || [ ! -x "$CLI" ]; then
  echo "source_ab: needs $OLD_DIR (carried) and $CLI (built)" >&2
  exit 1
fi
mkdir -p "$OUT"
BIN=$(mktemp -d)
# A variant is the CLI *and* the project's shared libraries (libtrackscope_gpu.so: the kernels live there), each
# variant in its own folder, run with LD_LIBRARY_PATH on it (the CLI's RUNPATH gives way to it). Until 2026-12-05
# only the CLI was copied: both variants then loaded the build's one library, the last built, and every A/B
# measured the new code twice (1.00x).
keep_variant() {  # keep_variant NAME: the built CLI and libraries into $BIN/NAME
  mkdir -p "$BIN/$1"
  cp "$CLI" "$BIN/$1/trackscope-cli"
  find "$BUILD" -name 'libtrackscope*.so*' -exec cp -P {} "$BIN/$1/" \;
}
in_variant() {  # in_variant NAME COMMAND...: COMMAND with NAME's library folder first on LD_LIBRARY_PATH
  local name=$1
  shift
  LD_LIBRARY_PATH="$BIN/$name${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" "$@"
}
run_variant() {  # run_variant NAME ARGS...
  local name=$1
  shift
  in_variant "$name" "$BIN/$name/trackscope-cli" "$@"
}
keep_variant new
mapfile -t files < <(cd "$OLD_DIR" && find . -type f | sed 's#^\./##')
for f in "${files[@]}"; do cp "$f" "$BIN/$(echo "$f" | tr / _).new" && cp "$OLD_DIR/$f" "$f"; done
ninja -C "$BUILD" trackscope-cli > "$OUT/ab-build-old.log" 2>&1
rc=$?
keep_variant old
for f in "${files[@]}"; do cp "$BIN/$(echo "$f" | tr / _).new" "$f" && touch "$f"; done
ninja -C "$BUILD" trackscope-cli > "$OUT/ab-build-new.log" 2>&1
echo "source_ab: old build rc=$rc (${files[*]}); new rebuilt rc=$?"
[ $rc -eq 0 ] || exit 1
for v in new old; do
  resolved=$(in_variant "$v" ldd "$BIN/$v/trackscope-cli" | grep libtrackscope)
  echo "source_ab: $v loads ${resolved:-no project library (a static build)}"
  if [ -n "$resolved" ] && ! grep -q "$BIN/$v/" <<< "$resolved"; then
    echo "source_ab: variant $v would not load its own library: no A/B" >&2
    exit 1
  fi
done
if cmp -s "$BIN/new/trackscope-cli" "$BIN/old/trackscope-cli" &&
   cmp -s "$BIN/new/libtrackscope_gpu.so" "$BIN/old/libtrackscope_gpu.so"; then
  echo "source_ab: the two variants are the same binaries: no A/B" >&2
  exit 1
fi
for k in $(seq 1 "$ROUNDS"); do
  for v in new old; do
    # shellcheck disable=SC2086  # ARGS is a list of bench arguments
    run_variant "$v" bench $ARGS --json "$OUT/ab-$v-$k.json" > "$OUT/ab-$v-$k.txt" 2>&1
    echo "source_ab: bench $v round $k rc=$?"
  done
done
run_variant new compare "$OUT/ab-old-1.json" "$OUT/ab-new-1.json" > "$OUT/ab-compare.txt" 2>&1
tail -40 "$OUT/ab-compare.txt"
