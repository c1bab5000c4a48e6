#!/usr/bin/env bash
# CI step (optional): the sampled soak of tools/soak/run_soak.sh (~2 min on 2 cores): 20 s of random scrubbing
# through a generated 1-minute 720p clip within the frame-cache budget, 12 rounds of opening videos and projects
# without growth, 200 points over 30 frames on the CPU within the memory budget. Needs a built tree with
# trackscope-soak and trackscope-cli, and the ffmpeg command-line tool.
#   tools/ci/soak_quick.sh [BUILD_DIR]
set -euo pipefail
cd "$(dirname "$0")/../.."
BUILD_DIR=${1:-${BUILD_DIR:-build}}
SOAK_DIR=$(mktemp -d /tmp/trackscope-soak-quick.XXXXXX)
export SOAK_DIR
trap 'rm -rf "$SOAK_DIR"' EXIT
bash tools/soak/run_soak.sh "$BUILD_DIR" --quick
