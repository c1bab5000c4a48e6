#!/usr/bin/env bash
# Puts Trackscope's test data and parity fixtures where the tests read them, and verifies their checksums.
# The data never enters the repository: the tests read TRACKSCOPE_SHARED_DIR (default ../shared beside the
# checkout), which holds testdata/ and fixtures/ (docs/testing-data.md).
#
#   tools/data/fetch-testdata.sh [--check] [--from DIR] [--dest DIR] [--copy] [--no-download] [--list]
#
#   --dest DIR      the folder the tests read (default: $TRACKSCOPE_SHARED_DIR, else ../shared beside the checkout)
#   --from DIR      a folder holding testdata/ and fixtures/ (e.g. a share or another machine's copy);
#                   each missing file is linked from there (symbolic link), or copied with --copy
#   --no-download   do not download what --from does not provide (by default a missing file with a public
#                   origin is downloaded from it, pinned to the commit below, and checked like every other file)
#   --check         change nothing: verify every file of tools/data/testdata.sha256 under --dest
#   --list          print each file group with its origin and exit
#
# Exit status: 0 when every listed file is present with the right checksum, 1 otherwise (each problem is
# listed with what to do), 2 for a usage error. Needs bash, coreutils (sha256sum) and curl or wget to download.
set -euo pipefail

ROOT=$(cd "$(dirname "$0")/../.." && pwd)
MANIFEST="$ROOT/tools/data/testdata.sha256"

# Where every file comes from. Paths are relative to the shared folder; a URL prefix with a pinned commit is given
# where the file is public (the file's path in that repository follows the prefix), "none" otherwise.
#   group (path prefix) | origin | licence | URL prefix
ORIGINS=$(
  cat <<'EOF'
testdata/horsejump-high_480p/video/|AssafSinger94/dino-tracker dataset/horsejump/video @ 5b0f2b0f; imagery: DAVIS-2017 horsejump-high (50 frames 854x480)|MIT (code); DAVIS footage terms|https://raw.githubusercontent.com/AssafSinger94/dino-tracker/5b0f2b0f/dataset/horsejump/video/
testdata/horsejump-high_480p/masks/|AssafSinger94/dino-tracker dataset/horsejump/masks @ 5b0f2b0f (binary foreground masks)|MIT (code); DAVIS footage terms|https://raw.githubusercontent.com/AssafSinger94/dino-tracker/5b0f2b0f/dataset/horsejump/masks/
testdata/badja_horsejump-high.json|benjiebob/BADJA joint_annotations/horsejump-high.json @ bc8be92a (joints on 10 frames, 1920x1080 pixels)|MIT (cite Biggs et al., ACCV 2018)|https://raw.githubusercontent.com/benjiebob/BADJA/bc8be92a/joint_annotations/horsejump-high.json
testdata/derived_badja_horsejump-high_854x480.csv|derived from the BADJA joints (scaled by 854/1920, 480/1080) and the masks (PCK threshold 0.2*sqrt(area)); no public copy|MIT inputs|none
testdata/pips2_camel.mp4|aharley/pips2 stock_videos/camel.mp4 @ 8b5bd9ec (H.264 960x540, 372 frames)|MIT; stock footage|https://raw.githubusercontent.com/aharley/pips2/8b5bd9ec/stock_videos/camel.mp4
testdata/sampt_bees.mp4|SysCV/sam-pt data/demo_data/bees.mp4 @ 874ff7e7 (H.264 1280x720, 277 frames)|Apache-2.0; footage from Pixabay|https://raw.githubusercontent.com/SysCV/sam-pt/874ff7e7/data/demo_data/bees.mp4
testdata/sampt_query_points__bees.txt|SysCV/sam-pt data/demo_data/query_points__bees.txt @ 874ff7e7 (demo query points)|Apache-2.0|https://raw.githubusercontent.com/SysCV/sam-pt/874ff7e7/data/demo_data/query_points__bees.txt
testdata/cotracker_apple.mp4|facebookresearch/co-tracker assets/apple.mp4 @ 82e02e80 (H.264 1296x720, 50 frames)|CC BY-NC 4.0: tests only|https://raw.githubusercontent.com/facebookresearch/co-tracker/82e02e80/assets/apple.mp4
fixtures/locotrack/|written by the official LocoTrack implementation (cvlab-kaist/locotrack @ 3385a23) on the CPU in fp32: random weights, inputs, per-stage outputs (docs/locotrack-spec.md §8); no public copy|generated for this project|none
EOF
)

usage() {
  sed -n '2,17p' "$0" | sed 's/^# \{0,1\}//'
  exit 2
}

CHECK_ONLY=0 FROM="" DEST="" COPY=0 DOWNLOAD=1 LIST=0
while [ $# -gt 0 ]; do
  case "$1" in
    --check) CHECK_ONLY=1 ;;
    --from) FROM=${2:?--from needs a folder}; shift ;;
    --dest) DEST=${2:?--dest needs a folder}; shift ;;
    --copy) COPY=1 ;;
    --no-download) DOWNLOAD=0 ;;
    --list) LIST=1 ;;
    -h | --help) usage ;;
    *) echo "fetch-testdata: unknown argument '$1'" >&2; usage ;;
  esac
  shift
done

# origin_field PATH N: field N (2 origin, 3 licence, 4 URL prefix) of the group PATH belongs to.
origin_field() {
  local path=$1 field=$2 line prefix
  while IFS= read -r line; do
    prefix=${line%%|*}
    if [ "$path" = "$prefix" ] || { [ "${prefix%/}" != "$prefix" ] && [ "${path#"$prefix"}" != "$path" ]; }; then
      echo "$line" | cut -d'|' -f"$field"
      return
    fi
  done <<<"$ORIGINS"
  echo "unknown"
}

if [ "$LIST" = 1 ]; then
  while IFS='|' read -r prefix origin licence url; do
    printf '%s\n    origin:  %s\n    licence: %s\n    URL:     %s\n' "$prefix" "$origin" "$licence" "$url"
  done <<<"$ORIGINS"
  exit 0
fi

[ -n "$DEST" ] || DEST=${TRACKSCOPE_SHARED_DIR:-$ROOT/../shared}
[ "$CHECK_ONLY" = 1 ] || mkdir -p "$DEST" 2>/dev/null || true
DEST_REAL=$(cd "$DEST" 2>/dev/null && pwd -P) || { echo "fetch-testdata: cannot use '$DEST' as the data folder" >&2; exit 1; }
ROOT_REAL=$(cd "$ROOT" && pwd -P)
case "$DEST_REAL/" in
  "$ROOT_REAL"/*)
    echo "fetch-testdata: '$DEST' is inside the repository; the data must stay outside it (use --dest ../shared)" >&2
    exit 2
    ;;
esac
if [ -n "$FROM" ]; then
  FROM=$(cd "$FROM" 2>/dev/null && pwd -P) || { echo "fetch-testdata: no folder '$FROM'" >&2; exit 2; }
fi

download() {  # download URL FILE
  if command -v curl >/dev/null; then
    curl -fsSL --retry 2 -o "$2" "$1"
  elif command -v wget >/dev/null; then
    wget -q -O "$2" "$1"
  else
    echo "neither curl nor wget is installed" >&2
    return 1
  fi
}

# Bring in what is missing (not with --check). A file already present is never replaced: a wrong one is
# reported by the verification below, and the user decides.
linked=0 copied=0 downloaded=0
if [ "$CHECK_ONLY" = 0 ]; then
  while read -r sum path; do
    target="$DEST_REAL/$path"
    [ -e "$target" ] && continue
    mkdir -p "$(dirname "$target")"
    if [ -n "$FROM" ] && [ -f "$FROM/$path" ] && [ "$FROM" != "$DEST_REAL" ]; then
      if [ "$COPY" = 1 ]; then
        cp "$FROM/$path" "$target" && copied=$((copied + 1))
      else
        ln -s "$FROM/$path" "$target" && linked=$((linked + 1))
      fi
      continue
    fi
    url=$(origin_field "$path" 4)
    if [ "$DOWNLOAD" = 1 ] && [ "$url" != none ] && [ "$url" != unknown ]; then
      [ "${url%/}" != "$url" ] && url="$url${path##*/}"
      if download "$url" "$target.part"; then
        # A download that does not match (a moved file, a Git LFS pointer) is kept aside, not installed.
        if [ "$(sha256sum "$target.part" | cut -d' ' -f1)" = "$sum" ]; then
          mv "$target.part" "$target" && downloaded=$((downloaded + 1))
        else
          mv "$target.part" "$target.rejected"
          echo "fetch-testdata: $url does not match the checksum; kept as $target.rejected" >&2
        fi
      else
        rm -f "$target.part"
        echo "fetch-testdata: could not download $path from $url" >&2
      fi
    fi
  done <"$MANIFEST"
  echo "fetch-testdata: into $DEST_REAL: $linked linked, $copied copied, $downloaded downloaded"
fi

# Verify every file of the manifest.
ok=0 bad=0 missing=0
while read -r sum path; do
  target="$DEST_REAL/$path"
  if [ ! -f "$target" ]; then
    missing=$((missing + 1))
    echo "MISSING  $path    origin: $(origin_field "$path" 2)"
    continue
  fi
  actual=$(sha256sum "$target" | cut -d' ' -f1)
  if [ "$actual" = "$sum" ]; then
    ok=$((ok + 1))
  else
    bad=$((bad + 1))
    echo "WRONG    $path    sha256 $actual, expected $sum    origin: $(origin_field "$path" 2)"
  fi
done <"$MANIFEST"

echo "fetch-testdata: $ok of $((ok + bad + missing)) files verified in $DEST_REAL ($bad wrong, $missing missing)"
if [ $((bad + missing)) -gt 0 ]; then
  echo "  Files without a public copy (fixtures, the derived BADJA table) come from a project member's shared folder:"
  echo "  tools/data/fetch-testdata.sh --from /path/to/shared. A wrong file is never replaced: move it away and rerun."
  exit 1
fi
