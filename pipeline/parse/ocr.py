"""OCR of PDF pages that have no text layer, through the `tesseract` binary (Debian `tesseract-ocr` with
`tesseract-ocr-eng`; `make` installs it). PIPELINE_OCR=auto (the default) uses it when it is installed;
PIPELINE_OCR=off never does. A page it does not read becomes a `no_text_layer` ingest error, never a
silently empty document. The page is rendered by PDFium to a greyscale PGM (no imaging library needed)
and read from a temporary file; nothing is downloaded: the language data is Debian's.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
from dataclasses import dataclass

PAGE_TIMEOUT_S = 120  # one page; a stuck tesseract must not hold the corpus


@dataclass(frozen=True)
class OcrPolicy:
    enabled: bool
    binary: str | None = None
    language: str = "eng"

    @staticmethod
    def from_env() -> OcrPolicy:
        mode = os.environ.get("PIPELINE_OCR", "auto").strip().lower()
        if mode in ("off", "0", "false", "no", "none"):
            return OcrPolicy(False)
        binary = shutil.which("tesseract")
        return OcrPolicy(binary is not None, binary)

    def key(self) -> str:
        """What the parse cache must tell apart: the same bytes parse differently with OCR on and off."""
        return f"ocr={'on' if self.enabled else 'off'}:{self.language}"


def ocr_image(
    page, policy: OcrPolicy, dpi: float = 300.0, timeout: float = PAGE_TIMEOUT_S
) -> str | None:  # page: pypdfium2.PdfPage
    """The page's text as Tesseract reads it rendered at `dpi`; None when Tesseract fails. Raises
    subprocess.TimeoutExpired past `timeout` seconds (the caller knows whose budget that was)."""
    if not policy.enabled or policy.binary is None:
        return None
    pixels = page.render(scale=dpi / 72, grayscale=True).to_numpy()
    if pixels.ndim == 3:
        pixels = pixels[:, :, 0]
    h, w = pixels.shape
    with tempfile.TemporaryDirectory(prefix="ocr-") as tmp:
        path = os.path.join(tmp, "page.pgm")
        with open(path, "wb") as fh:
            fh.write(f"P5\n{w} {h}\n255\n".encode("ascii"))
            fh.write(pixels.astype("uint8").tobytes())
        del pixels  # the bitmap is on disk: Tesseract's memory should not sit beside a second copy
        try:
            done = subprocess.run(
                [policy.binary, path, "stdout", "-l", policy.language, "--dpi", str(round(dpi))],
                capture_output=True,
                timeout=timeout,
                # one thread: the ingest parses one page at a time, and Tesseract's OpenMP threads
                # would contend with the other workers of the run for the same cores
                env={**os.environ, "OMP_THREAD_LIMIT": "1"},
                check=False,
            )
        except OSError:
            return None
    if done.returncode != 0:
        return None
    return done.stdout.decode("utf-8", errors="replace")
