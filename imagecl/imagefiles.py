"""Reading and writing image files (PNG, TIFF, JPEG, BMP through Pillow) and `.npy` arrays.

Conversions, chosen to keep values meaningful:
- an 8-bit file read into a float image gives values in [0, 1] (pixel / 255); into an integer
  image the pixel values themselves;
- a colour file read into a scalar image is converted to grey (ITU-R 601 luma, Pillow's 'L'),
  and into a uchar4/float4 image to RGBA;
- a float image written to PNG/JPEG/BMP is clipped to [0, 1] and scaled to 0..255; TIFF keeps
  float32 (single channel) exactly, and `.npy` keeps any array exactly.
"""
from __future__ import annotations

from pathlib import Path

import numpy as np

from .errors import ArgumentError

IMAGE_SUFFIXES = {".png", ".tif", ".tiff", ".jpg", ".jpeg", ".bmp", ".pgm", ".ppm"}
ARRAY_SUFFIXES = {".npy"}


def is_array_path(text: str) -> bool:
    return Path(text).suffix.lower() in IMAGE_SUFFIXES | ARRAY_SUFFIXES


def read_array(path: str | Path, dtype: np.dtype, channels: int = 0) -> np.ndarray:
    """Load `path` as an array of `dtype` (channels=4 for uchar4/float4 pixels)."""
    p = Path(path)
    if not p.exists():
        raise ArgumentError(f"{p}: no such file")
    suffix = p.suffix.lower()
    if suffix == ".npy":
        try:
            return np.load(p, allow_pickle=False)
        except (ValueError, OSError) as exc:
            raise ArgumentError(f"{p}: not a readable .npy file ({exc})") from None
    if suffix not in IMAGE_SUFFIXES:
        raise ArgumentError(f"{p}: unsupported file type '{suffix}' (use .npy, .png, .tif, .jpg or .bmp)")
    from PIL import Image, UnidentifiedImageError

    try:
        with Image.open(p) as im:
            im.load()
            if channels == 4:
                im = im.convert("RGBA")
            elif im.mode not in ("L", "I;16", "I;16B", "I", "F"):
                im = im.convert("L")
            data = np.array(im)
    except (UnidentifiedImageError, OSError) as exc:
        raise ArgumentError(f"{p}: cannot read the image ({exc})") from None
    if data.dtype == np.uint8 and np.dtype(dtype).kind == "f":
        return (data.astype(np.float32) / 255.0).astype(dtype)
    return data.astype(dtype)


def write_array(path: str | Path, array: np.ndarray) -> None:
    """Save `array` at `path` (replaced atomically; its folder must exist)."""
    from .outputs import OutputError, atomic_file, check_output

    p = Path(path)
    suffix = p.suffix.lower()
    try:
        check_output(p)
    except OutputError as exc:
        raise ArgumentError(str(exc)) from None
    if suffix == ".npy":
        with atomic_file(p) as f:
            np.save(f, array)
        return
    if suffix not in IMAGE_SUFFIXES:
        raise ArgumentError(f"{p}: unsupported file type '{suffix}' (use .npy, .png, .tif, .jpg or .bmp)")
    from PIL import Image

    data = array
    if array.ndim == 3 and array.shape[-1] != 4:
        raise ArgumentError(f"{p}: a {array.ndim}-D volume cannot be written as an image; use .npy")
    if array.ndim not in (2, 3):
        raise ArgumentError(f"{p}: cannot write an array of shape {array.shape} as an image; use .npy")
    if data.dtype.kind == "f":
        if suffix in (".tif", ".tiff") and data.ndim == 2:
            image = Image.fromarray(data.astype(np.float32), mode="F")
        else:
            data = (np.clip(data, 0.0, 1.0) * 255.0 + 0.5).astype(np.uint8)
            image = Image.fromarray(data)
    else:
        if data.dtype not in (np.uint8, np.uint16) or (data.dtype == np.uint16 and data.ndim == 3):
            if data.min() < 0 or data.max() > 255:
                raise ArgumentError(f"{p}: values of {array.dtype} range [{data.min()}, {data.max()}] do not fit an "
                                    "8-bit image; use .npy or .tif")
            data = data.astype(np.uint8)
        image = Image.fromarray(data)
    image_format = Image.registered_extensions().get(suffix)
    try:
        with atomic_file(p) as f:
            image.save(f, format=image_format)
    except (OSError, ValueError) as exc:  # e.g. a mode the format cannot hold
        raise ArgumentError(f"{p}: cannot write ({getattr(exc, 'strerror', None) or exc})") from None
