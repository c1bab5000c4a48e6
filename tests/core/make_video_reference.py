#!/usr/bin/env python3
"""Expected pixels of the shared test clips, made by the reference tools themselves.

    python3 tests/core/make_video_reference.py [TESTDATA_DIR]      # default: ../shared/testdata

Videos: `ffmpeg -v error -i CLIP -pix_fmt rgb24 -f rawvideo -` (the ffmpeg 5.1 CLI, as the official LocoTrack demo
reads video). Image folders: PIL's `Image.open(f).convert("RGB").tobytes()` (Debian's python3-pil, linked against
libjpeg62-turbo; OpenCV's imread gives the same pixels). For each clip it prints a C++ initializer with the frame
count and the SHA-256 of the RGB24 bytes of the sampled frames (every 5th frame and the last, concatenated in
order) and of frame 0 alone. tests/core/video_testdata_test.cpp holds the printed values; run this again after
upgrading FFmpeg or libjpeg-turbo and compare. Needs ffmpeg, ffprobe and python3-pil; no numpy.
"""
import glob
import hashlib
import os
import subprocess
import sys

from PIL import Image

VIDEOS = ["pips2_camel.mp4", "sampt_bees.mp4", "cotracker_apple.mp4"]
FOLDERS = ["horsejump-high_480p/video", "horsejump-high_480p/masks"]
SAMPLE_EVERY = 5


def sampled(frames):
    last = len(frames) - 1
    return [f for i, f in enumerate(frames) if i % SAMPLE_EVERY == 0 or i == last]


def video_frames(path):
    size = subprocess.run(["ffprobe", "-v", "error", "-select_streams", "v:0", "-show_entries",
                           "stream=width,height", "-of", "csv=p=0", path],
                          capture_output=True, text=True, check=True).stdout.strip().split(",")
    frame_bytes = int(size[0]) * int(size[1]) * 3
    raw = subprocess.run(["ffmpeg", "-v", "error", "-i", path, "-pix_fmt", "rgb24", "-f", "rawvideo", "-"],
                         capture_output=True, check=True).stdout
    return [raw[i:i + frame_bytes] for i in range(0, len(raw), frame_bytes)]


def folder_frames(path):
    return [Image.open(f).convert("RGB").tobytes() for f in sorted(glob.glob(os.path.join(path, "*")))]


def main():
    testdata = sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(__file__), "../../../shared/testdata")
    for name in VIDEOS + FOLDERS:
        path = os.path.join(testdata, name)
        frames = video_frames(path) if name in VIDEOS else folder_frames(path)
        digest = hashlib.sha256()
        for frame in sampled(frames):
            digest.update(frame)
        tool = "ffmpeg -pix_fmt rgb24" if name in VIDEOS else "PIL"
        print(f'ReferencePixels{{"{name}", "{tool}", {len(frames)}, "{digest.hexdigest()}",\n'
              f'                "{hashlib.sha256(frames[0]).hexdigest()}"}},')


if __name__ == "__main__":
    main()
