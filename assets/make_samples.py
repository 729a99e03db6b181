"""Draw the sample pictures of the ViT page into assets/samples/ (run: python assets/make_samples.py).

Every picture is drawn here from simple shapes, so the app ships no third-party images. Drawing happens at four
times the final size and is then shrunk, which smooths the edges.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import numpy as np
from PIL import Image, ImageDraw

SIZE = 224  # final side in pixels (the ViT-B/16 input size; the page shrinks it further)
SCALE = 4  # drawing oversampling factor
OUT = Path(__file__).resolve().parent / "samples"


def checkerboard() -> Image.Image:
    """8 x 8 black and white squares: patch edges that line up with the squares, or not."""
    cells = np.indices((8, 8)).sum(axis=0) % 2  # (8, 8) of 0/1
    pixels = np.kron(cells, np.ones((SIZE // 8, SIZE // 8))) * 255
    return Image.fromarray(pixels.astype(np.uint8)).convert("RGB")


def house() -> Image.Image:
    """A house under a sun: a few coloured regions to look for in the attention maps."""
    s = SIZE * SCALE
    img = Image.new("RGB", (s, s), (135, 200, 235))
    d = ImageDraw.Draw(img)
    d.rectangle([0, int(s * 0.72), s, s], fill=(80, 160, 70))
    d.ellipse([int(s * 0.70), int(s * 0.06), int(s * 0.92), int(s * 0.28)], fill=(250, 200, 40))
    d.rectangle([int(s * 0.18), int(s * 0.45), int(s * 0.58), int(s * 0.78)], fill=(230, 225, 210))
    d.polygon([(int(s * 0.12), int(s * 0.46)), (int(s * 0.38), int(s * 0.24)), (int(s * 0.64), int(s * 0.46))],
              fill=(190, 50, 40))
    d.rectangle([int(s * 0.33), int(s * 0.60), int(s * 0.43), int(s * 0.78)], fill=(110, 70, 40))
    d.rectangle([int(s * 0.22), int(s * 0.52), int(s * 0.30), int(s * 0.60)], fill=(90, 150, 210))
    return img.resize((SIZE, SIZE), Image.Resampling.LANCZOS)


def digit() -> Image.Image:
    """A hand-drawn looking "7", white on black like the MNIST digits."""
    s = SIZE * SCALE
    img = Image.new("L", (s, s), 0)
    d = ImageDraw.Draw(img)
    width = int(s * 0.09)
    top = [(int(s * 0.25), int(s * 0.24)), (int(s * 0.74), int(s * 0.22))]
    d.line(top, fill=255, width=width, joint="curve")
    d.line([top[1], (int(s * 0.45), int(s * 0.80))], fill=255, width=width, joint="curve")
    d.line([(int(s * 0.42), int(s * 0.50)), (int(s * 0.66), int(s * 0.50))], fill=255, width=int(width * 0.8))
    for x, y in (*top, (int(s * 0.45), int(s * 0.80))):
        d.ellipse([x - width // 2, y - width // 2, x + width // 2, y + width // 2], fill=255)
    return img.resize((SIZE, SIZE), Image.Resampling.LANCZOS).convert("RGB")


def smiley() -> Image.Image:
    """A yellow smiling face: two eyes and a mouth on a round face."""
    s = SIZE * SCALE
    img = Image.new("RGB", (s, s), (255, 255, 255))
    d = ImageDraw.Draw(img)
    d.ellipse([int(s * 0.08), int(s * 0.08), int(s * 0.92), int(s * 0.92)], fill=(255, 210, 50),
              outline=(60, 40, 0), width=int(s * 0.02))
    for cx in (0.35, 0.65):
        d.ellipse([int(s * (cx - 0.06)), int(s * 0.30), int(s * (cx + 0.06)), int(s * 0.45)], fill=(40, 30, 20))
    d.arc([int(s * 0.27), int(s * 0.35), int(s * 0.73), int(s * 0.75)], start=20, end=160, fill=(40, 30, 20),
          width=int(s * 0.04))
    return img.resize((SIZE, SIZE), Image.Resampling.LANCZOS)


def shapes() -> Image.Image:
    """A red circle, a blue square and a green triangle on grey: three objects in three places."""
    s = SIZE * SCALE
    img = Image.new("RGB", (s, s), (225, 225, 225))
    d = ImageDraw.Draw(img)
    d.ellipse([int(s * 0.08), int(s * 0.10), int(s * 0.42), int(s * 0.44)], fill=(213, 94, 0))
    d.rectangle([int(s * 0.58), int(s * 0.14), int(s * 0.90), int(s * 0.46)], fill=(0, 114, 178))
    d.polygon([(int(s * 0.30), int(s * 0.90)), (int(s * 0.50), int(s * 0.56)), (int(s * 0.70), int(s * 0.90))],
              fill=(0, 158, 115))
    return img.resize((SIZE, SIZE), Image.Resampling.LANCZOS)


SAMPLES: dict[str, Callable[[], Image.Image]] = {
    "house": house,
    "smiley": smiley,
    "shapes": shapes,
    "digit": digit,
    "checkerboard": checkerboard,
}


def main() -> None:
    OUT.mkdir(parents=True, exist_ok=True)
    for name, draw in SAMPLES.items():
        path = OUT / f"{name}.png"
        draw().save(path, optimize=True)
        print(f"wrote {path} ({path.stat().st_size} bytes)")


if __name__ == "__main__":
    main()
