#!/bin/sh
# trackscope-cli info and track on damaged copies of the shared clips, made here: an H.264 stream with bytes
# overwritten in its slice data is reported frame by frame; a folder with a truncated JPEG stops with a message
# naming the file, or leaves it out with --bad-images skip.
# usage: cli_info_damaged.sh TRACKSCOPE_CLI TESTDATA_DIR WORK_DIR
set -eu
cli=$1 testdata=$2 work=$3
rm -rf "$work" && mkdir -p "$work/images"

cp "$testdata/pips2_camel.mp4" "$work/damaged.mp4"
size=$(wc -c < "$work/damaged.mp4")
for i in 1 2 3 4 5 6 7 8; do
  printf '\377\125\000\252' | dd of="$work/damaged.mp4" bs=1 seek=$((size / 3 + i * size / 27)) conv=notrunc 2>/dev/null
done
"$cli" info --threads 1 "$work/damaged.mp4" > "$work/damaged.json" 2> "$work/damaged.err"
grep -q '"clean": false' "$work/damaged.json" || { echo "damaged.mp4: not reported"; exit 1; }
grep -q '"checked_frames": 372' "$work/damaged.json" || { echo "damaged.mp4: not every frame checked"; exit 1; }
grep -q '"concealed": true' "$work/damaged.json" || { echo "damaged.mp4: no concealed frame listed"; exit 1; }
grep -q 'warning: .* damaged frame' "$work/damaged.err" || { echo "damaged.mp4: no warning"; exit 1; }
"$cli" info "$testdata/pips2_camel.mp4" | grep -q '"clean": true' || { echo "pips2_camel.mp4: intact clip not clean"; exit 1; }

for i in 0 1 2 3 4 5; do cp "$testdata/horsejump-high_480p/video/0000$i.jpg" "$work/images/"; done
head -c 30000 "$testdata/horsejump-high_480p/video/00003.jpg" > "$work/images/00003.jpg"
if "$cli" info "$work/images" > /dev/null 2> "$work/stop.err"; then echo "truncated JPEG accepted"; exit 1; fi
grep -q '00003.jpg.*truncated' "$work/stop.err" || { echo "the message does not name 00003.jpg"; cat "$work/stop.err"; exit 1; }
grep -q -- '--bad-images' "$work/stop.err" || { echo "the message does not name the option"; exit 1; }
"$cli" info --bad-images skip "$work/images" > "$work/skip.json" 2>/dev/null
grep -q '"frame_count": 5,' "$work/skip.json" || { echo "skip: expected 5 frames"; exit 1; }
grep -q '00003.jpg' "$work/skip.json" || { echo "skip: the skipped file is not listed"; exit 1; }
echo "ok"
