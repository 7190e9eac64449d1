"""Documents parsed in a child process under an address-space limit, a CPU and a wall-clock deadline, and
an output-size limit (`bounds.ParseLimits`), so that no file can take the index down with it.

The budgets inside the parsers (`bounds`) hold for what they can see; these hold for everything else: a
parser library's own allocation (RLIMIT_AS: a MemoryError, or a C library's crash, ends that document, not
the run), a loop that never ends (RLIMIT_CPU, whose SIGXCPU kills the worker, and a wall-clock deadline the
parent keeps, which also covers a Tesseract process the worker waits on: the worker leads its own process
group, and the group is killed), and an answer too large to hand back. A document that breaks one is an
ingest_errors row naming it (`parse_timeout`, `too_large_expanded`, `too_large`), and the next document
goes to a fresh worker.

One worker is started on a run's first document and reused for the rest (`BoundedParser`), so small files
pay for one start, not one each (a start is ~0.1 s: the parse package imports no settings or pydantic).
Requests and answers are pickled frames on the worker's stdin and stdout; anything a library prints goes
to its stderr, a temporary file whose tail explains a crash. The worker ends with its parent (the kernel's
PDEATHSIG on Linux, and an end-of-file on its stdin everywhere). The run's OCR budget
(`ocr_run_max_pages`, `ocr_run_max_seconds`) is kept here, in the parent: each document's own budget is cut
to what the run has left.
"""

from __future__ import annotations

import contextlib
import os
import pickle
import resource
import select
import signal
import struct
import subprocess
import sys
import tempfile
import time
import weakref
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, BinaryIO

from pipeline.parse import OcrBudget, OcrPolicy, Parsed, ParseError, ParseLimits, parse_bytes

_FRAME = struct.Struct("<Q")
_PR_SET_PDEATHSIG = 1  # from <linux/prctl.h>
_MB = 1_000_000


@dataclass
class Outcome:
    """One document's parse: the document or the error, and the OCR it spent (for the run's budget)."""

    parsed: Parsed | None
    error: ParseError | None
    ocr_pages: int = 0
    ocr_seconds: float = 0.0


# -- the child ------------------------------------------------------------------------------------------


def _read_exact(stream: BinaryIO, n: int) -> bytes | None:
    chunks = []
    while n:
        chunk = stream.read(n)
        if not chunk:
            return None
        chunks.append(chunk)
        n -= len(chunk)
    return b"".join(chunks)


def _set_limits(limits: ParseLimits) -> None:
    """This document's address space and CPU time; the hard limits stay, so the next document may have
    larger soft ones."""
    _, hard = resource.getrlimit(resource.RLIMIT_AS)
    want = limits.memory_mb * 1024 * 1024
    resource.setrlimit(
        resource.RLIMIT_AS, (want if hard == resource.RLIM_INFINITY else min(want, hard), hard)
    )
    usage = resource.getrusage(resource.RUSAGE_SELF)
    _, hard = resource.getrlimit(resource.RLIMIT_CPU)
    want = int(usage.ru_utime + usage.ru_stime + limits.cpu_seconds) + 1
    resource.setrlimit(
        resource.RLIMIT_CPU, (want if hard == resource.RLIM_INFINITY else min(want, hard), hard)
    )


def _lift_limits() -> None:
    for which in (resource.RLIMIT_AS, resource.RLIMIT_CPU):
        _, hard = resource.getrlimit(which)
        resource.setrlimit(which, (hard, hard))


def _vm_peak() -> int | None:
    """This process's peak address space in bytes (Linux), else None."""
    try:
        with open("/proc/self/status", encoding="ascii") as fh:
            for line in fh:
                if line.startswith("VmPeak:"):
                    return int(line.split()[1]) * 1024
    except (OSError, ValueError):
        return None
    return None


def _handle(request: tuple) -> tuple[bytes, bool]:
    """(the pickled answer, whether this worker should end after sending it)."""
    data, fmt, policy, text, limits = request
    budget = OcrBudget.of(limits)
    limit = limits.memory_mb * 1024 * 1024
    out_of_memory = False
    _set_limits(limits)
    try:
        answer: tuple = ("ok", parse_bytes(data, fmt, policy, text, limits, budget))
    except ParseError as exc:
        answer = ("error", exc.error_type, exc.reason)
    except MemoryError:
        out_of_memory = True
        answer = ("error",)
    except RecursionError:
        answer = ("error", "corrupt", "nested too deeply to parse")
    except Exception as exc:  # a parser library's own failure on a damaged file
        answer = ("error", "corrupt", f"{type(exc).__name__}: {exc}")
    finally:
        _lift_limits()
    peak = _vm_peak()
    # a library may turn a failed allocation into its own error (lxml: "Memory allocation failed"): a
    # failure whose address space reached the limit is the limit's
    if answer[0] == "error" and peak is not None and peak >= 0.9 * limit:
        out_of_memory = True
    if out_of_memory:
        answer = (
            "error",
            "too_large_expanded",
            f"parsing it needed more than the parse worker's {limits.memory_mb:,} MB of address space "
            "(parse_memory_mb)",
        )
    # after a large parse (or a failed allocation: a library's state may be half built) a fresh worker
    # takes the next document, so the peak above always measures one document
    restart = out_of_memory or (peak is not None and peak >= limit // 2)
    stats = (budget.used_pages, budget.used_seconds)
    body = pickle.dumps((answer, stats, restart), protocol=pickle.HIGHEST_PROTOCOL)
    if len(body) > limits.max_output_mb * _MB:
        answer = (
            "error",
            "too_large",
            f"its parsed text and layout take {len(body):,} bytes, past the {limits.max_output_mb:,} MB a "
            "parse may hand back (parse_max_output_mb)",
        )
        body = pickle.dumps((answer, stats, restart), protocol=pickle.HIGHEST_PROTOCOL)
    return body, restart


def _die_with_parent(parent: int) -> None:
    if sys.platform == "linux":
        import ctypes

        ctypes.CDLL(None, use_errno=True).prctl(_PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
    if os.getppid() != parent:  # the parent ended before the prctl above took effect
        os._exit(1)


def serve(parent: int) -> None:
    """The worker's loop: a request frame in, an answer frame out, until stdin ends."""
    _die_with_parent(parent)
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))  # a crash under the limits writes no core file
    requests = sys.stdin.buffer
    answers = os.fdopen(os.dup(1), "wb")
    os.dup2(2, 1)  # whatever a library prints goes to stderr, never into the answer frames
    while True:
        head = _read_exact(requests, _FRAME.size)
        if head is None:
            return
        raw = _read_exact(requests, _FRAME.unpack(head)[0])
        if raw is None:
            return
        body, restart = _handle(pickle.loads(raw))
        answers.write(_FRAME.pack(len(body)) + body)
        answers.flush()
        if restart:
            return


# -- the parent -----------------------------------------------------------------------------------------


class _Broken(Exception):
    """The worker ended or missed its deadline; `error` is what that means for the document."""

    def __init__(self, error: ParseError) -> None:
        super().__init__(error.reason)
        self.error = error


def _reap(proc: subprocess.Popen[bytes]) -> None:
    """A worker whose owner was dropped without `close` (an exception past the run's loop): end it."""
    if proc.poll() is None:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(proc.pid, signal.SIGKILL)
        with contextlib.suppress(ChildProcessError):
            proc.wait()


class ParseWorker:
    """One worker process, started on first use and again after it ends."""

    def __init__(self) -> None:
        self._proc: subprocess.Popen[bytes] | None = None
        self._stderr: BinaryIO | None = None
        self._finalizer: weakref.finalize | None = None

    def _start(self) -> subprocess.Popen[bytes]:
        root = str(Path(__file__).resolve().parents[2])  # the child imports this checkout's pipeline
        path = os.environ.get("PYTHONPATH")
        env = {
            **os.environ,
            "PYTHONPATH": root + (os.pathsep + path if path else ""),
            # one thread each: the run parses one document at a time, beside the rest of the pipeline
            "OMP_THREAD_LIMIT": "1",
            "OPENBLAS_NUM_THREADS": "1",
        }
        self._stderr = tempfile.TemporaryFile(prefix="parse-worker-")  # noqa: SIM115 - lives as long as the worker
        self._proc = subprocess.Popen(
            [sys.executable, "-m", "pipeline.parse.worker", str(os.getpid())],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=self._stderr,
            env=env,
            start_new_session=True,  # its own process group: a deadline kills Tesseract with it
        )
        self._finalizer = weakref.finalize(self, _reap, self._proc)
        return self._proc

    @property
    def pid(self) -> int | None:
        return self._proc.pid if self._proc is not None and self._proc.poll() is None else None

    def close(self) -> None:
        proc, self._proc = self._proc, None
        if self._finalizer is not None:
            self._finalizer.detach()
            self._finalizer = None
        if proc is not None:
            with contextlib.suppress(OSError):
                proc.stdin.close()  # type: ignore[union-attr]
            try:
                proc.wait(timeout=5)
            except subprocess.TimeoutExpired:
                self._kill(proc)
            with contextlib.suppress(OSError):
                proc.stdout.close()  # type: ignore[union-attr]
        if self._stderr is not None:
            self._stderr.close()
            self._stderr = None

    @staticmethod
    def _kill(proc: subprocess.Popen[bytes]) -> None:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(proc.pid, signal.SIGKILL)
        with contextlib.suppress(ProcessLookupError):
            proc.kill()
        proc.wait()

    def _stderr_tail(self) -> str:
        if self._stderr is None:
            return ""
        with contextlib.suppress(OSError):
            self._stderr.seek(0, os.SEEK_END)
            size = self._stderr.tell()
            self._stderr.seek(max(0, size - 400))
            lines = self._stderr.read().decode("utf-8", "replace").strip().splitlines()
            return lines[-1][:200] if lines else ""
        return ""

    def _ended(self, proc: subprocess.Popen[bytes], limits: ParseLimits) -> ParseError:
        """What the worker's end means for the document it was parsing."""
        code = proc.wait()
        tail = self._stderr_tail()
        self.close()
        if code == -signal.SIGXCPU:
            return ParseError(
                "parse_timeout",
                f"parsing it took more than {limits.cpu_seconds:,.0f} s of CPU (parse_cpu_seconds)",
            )
        how = f"signal {signal.Signals(-code).name}" if code < 0 else f"exit status {code}"
        return ParseError(
            "corrupt",
            f"the parse worker died on it ({how}{': ' + tail if tail else ''}): a damaged file, or one "
            f"that needs more than the worker's {limits.memory_mb:,} MB (parse_memory_mb)",
        )

    def _read(self, proc: subprocess.Popen[bytes], n: int, deadline: float, limits: ParseLimits) -> bytes:
        fd = proc.stdout.fileno()  # type: ignore[union-attr]
        chunks: list[bytes] = []
        while n:
            left = deadline - time.monotonic()
            ready = select.select([fd], [], [], max(left, 0))[0] if left > 0 else []
            if not ready:
                self._kill(proc)
                self.close()
                raise _Broken(
                    ParseError(
                        "parse_timeout",
                        f"parsing it took longer than {limits.wall_seconds:,.0f} s (parse_wall_seconds)",
                    )
                )
            chunk = os.read(fd, min(n, 1 << 20))
            if not chunk:
                raise _Broken(self._ended(proc, limits))
            chunks.append(chunk)
            n -= len(chunk)
        return b"".join(chunks)

    def parse(
        self, data: bytes, fmt: str, policy: OcrPolicy, text: str | None, limits: ParseLimits
    ) -> Outcome:
        proc = self._proc if self._proc is not None and self._proc.poll() is None else self._start()
        started = time.monotonic()
        deadline = started + limits.wall_seconds
        request = pickle.dumps((data, fmt, policy, text, limits), protocol=pickle.HIGHEST_PROTOCOL)
        try:
            try:
                proc.stdin.write(_FRAME.pack(len(request)) + request)  # type: ignore[union-attr]
                proc.stdin.flush()  # type: ignore[union-attr]
            except (BrokenPipeError, OSError):
                raise _Broken(self._ended(proc, limits)) from None
            size = _FRAME.unpack(self._read(proc, _FRAME.size, deadline, limits))[0]
            if size > limits.max_output_mb * _MB + 4096:  # the worker checks this; a frame is not trusted
                self._kill(proc)
                self.close()
                raise _Broken(
                    ParseError("too_large", f"the parse worker's answer of {size:,} bytes is too large")
                )
            answer, (ocr_pages, ocr_seconds), restart = pickle.loads(self._read(proc, size, deadline, limits))
        except _Broken as broken:
            # a worker killed mid-OCR spent the time it ran; its pages are unknown
            return Outcome(None, broken.error, 0, time.monotonic() - started)
        if answer[0] == "ok":
            return Outcome(answer[1], None, ocr_pages, ocr_seconds)
        if restart:
            self.close()  # it ends itself after a MemoryError: the next document starts a new one
        return Outcome(None, ParseError(answer[1], answer[2]), ocr_pages, ocr_seconds)


class BoundedParser:
    """A run's parses: one reused worker, and the OCR budget the run has left.

    `parse` returns the document or raises its ParseError. Use as a context manager (or call `close`) so
    the worker ends with the run."""

    def __init__(
        self,
        limits: ParseLimits | None = None,
        run_ocr_pages: int | None = None,
        run_ocr_seconds: float | None = None,
    ) -> None:
        self.limits = limits or ParseLimits()
        self.ocr_pages_left = run_ocr_pages if run_ocr_pages is not None else sys.maxsize
        self.ocr_seconds_left = run_ocr_seconds if run_ocr_seconds is not None else float("inf")
        self.worker = ParseWorker()

    def parse(self, data: bytes, fmt: str, policy: OcrPolicy, text: str | None = None) -> Parsed:
        limits = replace(
            self.limits,
            ocr_max_pages=max(0, min(self.limits.ocr_max_pages, self.ocr_pages_left)),
            ocr_max_seconds=max(0.0, min(self.limits.ocr_max_seconds, self.ocr_seconds_left)),
        )
        outcome = self.worker.parse(data, fmt, policy, text, limits)
        self.ocr_pages_left -= outcome.ocr_pages
        self.ocr_seconds_left -= outcome.ocr_seconds
        if outcome.error is not None:
            raise outcome.error
        assert outcome.parsed is not None
        return outcome.parsed

    def close(self) -> None:
        self.worker.close()

    def __enter__(self) -> BoundedParser:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()


if __name__ == "__main__":
    serve(int(sys.argv[1]))
