#!/usr/bin/env bash
# Builds the carry folder (.gpu-carry) that the GPU machine needs: a minimal FFmpeg, GoogleTest, the header
# libraries, libjpeg-turbo and libpng (image sequences, core/video/still_image.cpp), and the shared fixtures/test clips the GPU tests and benchmarks read. Run here (Debian 12) from
# anywhere; the first run takes ~3 minutes (FFmpeg build), later ones seconds.
#   tools/gpu/prepare.sh [--fixtures small|base|all|none] [--with-qt] [--no-long-clip] [--batch-clips]
#                        [--photo-textures DIR] [--out FOLDER]
# --out .gpu-carry-lite --fixtures none makes a small carry (~8 MiB) for calls that also carry training weights.
# --no-long-clip leaves out pips2_camel.mp4 (2 MiB; only the long-clip tracking run reads it): --fixtures base
# with the project's own 23 MiB is otherwise close to the 64 MiB upload limit. --batch-clips adds the two other clips
# of the test data (sampt_bees.mp4, cotracker_apple.mp4: 4.2 MiB) for tools/gpu/batch_throughput.sh.
# --photo-textures DIR copies the photographs of tools/data/fetch-photo-textures.sh (2.2 MiB) into
# FOLDER/photo-textures, for trackscope-train --texture-images (docs/training.md "Photo textures").
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
FIXTURES=small
LONG_CLIP=yes
BATCH_CLIPS=no
PHOTOS=""
CARRY=.gpu-carry
EXTRA=()
while [ $# -gt 0 ]; do
  case "$1" in
    --fixtures) FIXTURES=$2; shift ;;
    --with-qt) EXTRA+=(--with-qt) ;;
    --out) CARRY=$2; shift ;;
    --no-long-clip) LONG_CLIP=no ;;
    --batch-clips) BATCH_CLIPS=yes ;;
    --photo-textures) PHOTOS=$2; shift ;;
    *) echo "unknown argument $1" >&2; exit 2 ;;
  esac
  shift
done
DATA=(--data fixtures/locotrack/state_dict_shapes.json --data testdata/horsejump-high_480p/video
      --data testdata/derived_badja_horsejump-high_854x480.csv)
[ "$LONG_CLIP" = yes ] && DATA+=(--data testdata/pips2_camel.mp4)
[ "$BATCH_CLIPS" = yes ] && DATA+=(--data testdata/sampt_bees.mp4 --data testdata/cotracker_apple.mp4)
case "$FIXTURES" in
  small|all) DATA+=(--data fixtures/locotrack/parity_inputs.safetensors --data fixtures/locotrack/parity_small.safetensors
                    --data fixtures/locotrack/locotrack_small_random_bf16-0.safetensors
                    --data fixtures/locotrack/locotrack_small_random_bf16-1.safetensors) ;;&
  base|all)  DATA+=(--data fixtures/locotrack/parity_inputs.safetensors --data fixtures/locotrack/parity_base.safetensors
                    --data fixtures/locotrack/locotrack_base_random_bf16-0.safetensors
                    --data fixtures/locotrack/locotrack_base_random_bf16-1.safetensors) ;;
  none|small|base|all) ;;
  *) echo "--fixtures takes small, base, all or none" >&2; exit 2 ;;
esac
cd "$ROOT"
"$ROOT/../shared/device/prepare_carry.sh" "${EXTRA[@]}" \
  --deb nlohmann-json3-dev --deb libcli11-dev --deb libfmt-dev --deb libfmt9 --deb libzip-dev --deb libzip4 \
  --deb libjpeg62-turbo-dev --deb libjpeg62-turbo --deb libpng-dev --deb libpng16-16 \
  "${DATA[@]}" "$CARRY"
if [ -n "$PHOTOS" ]; then
  rm -rf "$CARRY/photo-textures"
  mkdir -p "$CARRY/photo-textures"
  find "$PHOTOS" -maxdepth 1 -type f \( -iname '*.png' -o -iname '*.jpg' -o -iname '*.jpeg' \) \
    -exec cp {} "$CARRY/photo-textures/" \;
  [ -n "$(ls -A "$CARRY/photo-textures")" ] || { echo "no JPEG/PNG photographs in $PHOTOS" >&2; exit 1; }
fi
# The device tool uploads the tracked and untracked-not-ignored files plus the carried folders, 64 MiB in all, and
# refuses a call above that: say here whether this carry fits with the tree as it is now.
tree_bytes=$( (git ls-files -z; git ls-files -z --others --exclude-standard) | xargs -0 du -cb 2>/dev/null |
  awk '$2 == "total" { s += $1 } END { print s + 0 }')
carry_bytes=$(du -sb "$CARRY" | cut -f1)
total_mib=$(( (tree_bytes + carry_bytes) / 1048576 ))
echo "upload with this carry: tree $((tree_bytes / 1048576)) MiB + $CARRY $((carry_bytes / 1048576)) MiB = ${total_mib} MiB (limit 64)"
if [ "$total_mib" -ge 64 ]; then
  echo "prepare.sh: WARNING: over the device tool's 64 MiB; use --fixtures none/small, --no-long-clip or a second call" >&2
fi
