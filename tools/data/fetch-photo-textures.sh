#!/usr/bin/env bash
# Puts the photographs the synthetic generator may use as textures (trackscope-train --photo-textures F
# --texture-images DIR) into DIR, and verifies their checksums. Only public-domain / CC0 photographs, taken from
# Debian's python3-skimage package (its data folder; the licence of each image is stated in skimage/data/_fetchers.py
# and restated in docs/training.md "Photo textures"). They never enter the repository.
#
#   tools/data/fetch-photo-textures.sh DIR          # downloads the package with apt-get download (no root needed)
#   tools/data/fetch-photo-textures.sh DIR --deb F  # or takes it from a .deb already at hand
#
# Exit status: 0 when DIR holds every photograph with the right checksum, 1 otherwise, 2 for a usage error.
set -euo pipefail

if [ $# -lt 1 ] || [ "${1:0:1}" = "-" ]; then
  sed -n '2,10p' "$0"
  exit 2
fi
DEST=$1
shift
DEB=""
while [ $# -gt 0 ]; do
  case $1 in
    --deb) DEB=$2; shift 2 ;;
    *) echo "unknown option $1" >&2; exit 2 ;;
  esac
done

# file | sha256 | what | licence (as skimage states it)
PHOTOS=$(
  cat <<'LIST'
astronaut.png|88431cd9653ccd539741b555fb0a46b61558b301d4110412b5bc28b5e3ea6cb5|astronaut Eileen Collins (NASA)|public domain
chelsea.png|596aa1e7cb875eb79f437e310381d26b338a81c2da23439704a73c4651e8c4bb|a cat|CC0 (Stefan van der Walt)
coffee.png|cc02f8ca188b167c775a7101b5d767d1e71792cf762c33d6fa15a4599b5a8de7|a cup of coffee|CC0 (Rachel Michetti)
rocket.jpg|c2dd0de7c538df8d111e479619b129464d0269d0ae5fd18ca91d33a7fdfea95c|a SpaceX rocket on its launch pad|public domain (SpaceX)
grass.png|b6b6022426b38936c43a4ac09635cd78af074e90f42ffa8227ac8b7452d39f89|grass (texture photograph)|CC0 (CC0Textures)
gravel.png|c48615b451bf1e606fbd72c0aa9f8cc0f068ab7111ef7d93bb9b0f2586440c12|gravel (texture photograph)|CC0 (CC0Textures)
brick.png|7966caf324f6ba843118d98f7a07746d22f6a343430add0233eca5f6eaaa8fcf|a brick wall (texture photograph)|CC0 (CC0Textures)
camera.png|b0793d2adda0fa6ae899c03989482bff9a42d3d5690fc7e3648f2795d730c23a|a photographer (grey)|CC0 (Lav Varshney)
LIST
)

WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT
if [ -z "$DEB" ]; then
  (cd "$WORK" && apt-get download python3-skimage >/dev/null) || {
    echo "apt-get download python3-skimage failed: pass a .deb with --deb" >&2
    exit 1
  }
  DEB=$(ls "$WORK"/python3-skimage_*.deb)
fi
dpkg-deb -x "$DEB" "$WORK/x"
DATA=$(find "$WORK/x" -type d -path '*/skimage/data' | head -1)
[ -n "$DATA" ] || { echo "no skimage/data folder in $DEB" >&2; exit 1; }

mkdir -p "$DEST"
status=0
while IFS='|' read -r file sum what licence; do
  cp "$DATA/$file" "$DEST/$file"
  actual=$(sha256sum "$DEST/$file" | cut -d' ' -f1)
  if [ "$actual" != "$sum" ]; then
    echo "$file: checksum $actual, expected $sum (another python3-skimage version?)" >&2
    status=1
  fi
  printf '%-14s %-45s %s\n' "$file" "$what" "$licence"
done <<<"$PHOTOS"
exit $status
