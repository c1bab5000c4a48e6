#!/usr/bin/env python3
"""Image variants and PIL's pixels for them, for tests/core/video_decoding_test.cpp.

    python3 tests/core/video_reference_images.py SOURCE.jpg OUT_DIR

Writes each variant of SOURCE (a real photograph: a frame of the shared horsejump clip) into OUT_DIR/<name>/
(one image per folder, so that each opens as a one-frame image sequence) and prints a JSON object
{name: {"sha256": hex of PIL's RGB24 bytes, "width": w, "height": h} or {"refused": true}} on stdout.
The expected pixels are PIL's: Image.open(f).convert("RGB"), except where PIL is known to differ from libpng
and OpenCV (16-bit greyscale, which PIL clips to 255): there the expected value is libpng's png_set_strip_16
(the high byte), computed from the exact 16-bit samples PIL reads. Needs python3-pil (Debian), no numpy.
"""
import hashlib
import json
import os
import sys

from PIL import Image


def save(out_dir, name, image, extension, **options):
    folder = os.path.join(out_dir, name)
    os.makedirs(folder, exist_ok=True)
    path = os.path.join(folder, "00000" + extension)
    image.save(path, **options)
    return path


def expected(path):
    image = Image.open(path)
    if image.mode in ("I;16", "I;16B", "I"):
        # libpng's strip_16: the high byte of each 16-bit sample, replicated to RGB.
        samples = list(image.getdata())
        data = bytes(v >> 8 for v in samples for _ in range(3))
        return {"sha256": hashlib.sha256(data).hexdigest(), "width": image.width, "height": image.height}
    rgb = image.convert("RGB")
    return {"sha256": hashlib.sha256(rgb.tobytes()).hexdigest(), "width": rgb.width, "height": rgb.height}


def main():
    source, out_dir = sys.argv[1], sys.argv[2]
    photo = Image.open(source).convert("RGB")
    odd = photo.crop((0, 0, 853, 479))  # odd sizes: the last chroma column and row are half blocks
    results = {}
    jpegs = {
        "jpeg_420_q90": (photo, {"quality": 90}),
        "jpeg_444_q95": (photo, {"quality": 95, "subsampling": 0}),
        "jpeg_422_q75": (photo, {"quality": 75, "subsampling": 1}),
        "jpeg_420_odd_size": (odd, {"quality": 85}),
        "jpeg_progressive": (photo, {"quality": 85, "progressive": True}),
        "jpeg_optimized_q50": (photo, {"quality": 50, "optimize": True}),
        "jpeg_greyscale": (photo.convert("L"), {"quality": 85}),
    }
    for name, (image, options) in jpegs.items():
        results[name] = expected(save(out_dir, name, image, ".jpg", **options))
    save(out_dir, "jpeg_cmyk", photo.convert("CMYK"), ".jpg", quality=85)
    results["jpeg_cmyk"] = {"refused": True}

    small = photo.resize((213, 120), Image.BILINEAR)
    pngs = {
        "png_rgb": small,
        "png_rgba": small.convert("RGBA"),
        "png_grey": small.convert("L"),
        "png_grey_alpha": small.convert("LA"),
        "png_palette": small.convert("P", palette=Image.ADAPTIVE, colors=200),
        "png_bilevel": small.convert("1"),
    }
    for name, image in pngs.items():
        results[name] = expected(save(out_dir, name, image, ".png"))
    transparent = small.convert("P", palette=Image.ADAPTIVE, colors=64)
    results["png_palette_transparency"] = expected(
        save(out_dir, "png_palette_transparency", transparent, ".png", transparency=3))
    grey16 = Image.frombytes("I;16", small.size,
                             bytes(b for v in small.convert("L").getdata() for b in ((v * 257 + 77) & 0xFF,
                                                                                     (v * 257 + 77) >> 8 & 0xFF)))
    results["png_grey16"] = expected(save(out_dir, "png_grey16", grey16, ".png"))
    json.dump(results, sys.stdout, indent=1, sort_keys=True)


if __name__ == "__main__":
    main()
