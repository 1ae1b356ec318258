#!/usr/bin/env python3
"""SSIM of images against a reference, on luma (BT.601), Gaussian window sigma 1.5 (Wang et al. 2004).

Usage: ssim.py REFERENCE IMAGE...   (any format ImageMagick's `convert` reads; sizes must match)
Prints one line per image: "<ssim> <path>".
"""
import subprocess
import sys

import numpy as np
from scipy.ndimage import gaussian_filter


def load_luma(path):
    ppm = subprocess.run(["convert", path, "-depth", "8", "ppm:-"], check=True, capture_output=True).stdout
    # P6\n<w> <h>\n<max>\n<data>, no comments from ImageMagick
    parts = ppm.split(maxsplit=4)
    width, height = int(parts[1]), int(parts[2])
    data = np.frombuffer(parts[4][: width * height * 3], dtype=np.uint8).reshape(height, width, 3).astype(np.float64)
    return 0.299 * data[..., 0] + 0.587 * data[..., 1] + 0.114 * data[..., 2]


def ssim(a, b):
    c1, c2 = (0.01 * 255) ** 2, (0.03 * 255) ** 2
    mu_a, mu_b = gaussian_filter(a, 1.5), gaussian_filter(b, 1.5)
    var_a = gaussian_filter(a * a, 1.5) - mu_a**2
    var_b = gaussian_filter(b * b, 1.5) - mu_b**2
    cov = gaussian_filter(a * b, 1.5) - mu_a * mu_b
    s = ((2 * mu_a * mu_b + c1) * (2 * cov + c2)) / ((mu_a**2 + mu_b**2 + c1) * (var_a + var_b + c2))
    return float(s[5:-5, 5:-5].mean())


def main():
    reference = load_luma(sys.argv[1])
    for path in sys.argv[2:]:
        image = load_luma(path)
        if image.shape != reference.shape:
            print(f"size-mismatch {path}")
            continue
        print(f"{ssim(reference, image):.4f} {path}")


if __name__ == "__main__":
    main()
