"""What an input folder holds, seen without reaching outside it and without opening anything to look.

Ingest (`pipeline.ops.ingest`) and the input sensor (its fingerprint) walk a folder the same way:

- hidden names are skipped; a link to a folder is not descended into (a link to a folder inside the root
  adds nothing the walk does not reach at its real place, one outside it is reported `outside_input`);
- only a regular file is read. A FIFO, socket or device is reported `special_file` from its `stat`,
  never opened: opening a FIFO for reading blocks until some writer opens it, which hung `pipeline index`;
- a symlink is read only when its target resolves inside the folder; one that resolves elsewhere (another
  tenant's corpus, `/etc/hostname`) is reported `outside_input` and its target is neither read nor
  stat'ed for the fingerprint, so an edit out there triggers nothing either.

`read_regular` opens the file it was given non-blocking and checks, on the open descriptor, that it is
still the same regular file: a file swapped for a FIFO or a link after the walk is refused, not hung on.
"""

from __future__ import annotations

import hashlib
import os
import stat
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

OUTSIDE_INPUT = "outside_input"
SPECIAL_FILE = "special_file"

_KINDS = (
    (stat.S_ISFIFO, "a FIFO (named pipe)"),
    (stat.S_ISSOCK, "a socket"),
    (stat.S_ISCHR, "a character device"),
    (stat.S_ISBLK, "a block device"),
    (stat.S_ISDIR, "a folder"),
)


class NotRegularError(OSError):
    """The path no longer names the regular file the walk saw."""


@dataclass(frozen=True)
class InputEntry:
    rel: str  # as the user sees it: relative to the folder, links not resolved
    path: Path  # what is read: the resolved target, inside the folder
    stat: os.stat_result | None  # the target's, for a regular file; the entry's own (lstat) when skipped
    error_type: str | None = None  # set when the entry is skipped, with `reason`
    reason: str = ""

    @property
    def readable(self) -> bool:
        return self.error_type is None


def _kind(mode: int) -> str:
    return next((name for test, name in _KINDS if test(mode)), "not a regular file")


def _inside(target: str, root: str) -> bool:
    return target == root or target.startswith(root.rstrip(os.sep) + os.sep)


def _entry(path: Path, rel: str, root_real: str) -> InputEntry:
    try:
        own = os.lstat(path)
    except OSError as exc:  # deleted while we walked
        return InputEntry(rel, path, None, "unreadable", f"cannot read file: {exc.strerror or exc}")
    target = path
    if stat.S_ISLNK(own.st_mode):
        resolved = os.path.realpath(path)
        if not _inside(resolved, root_real):
            return InputEntry(
                rel, path, own, OUTSIDE_INPUT, "symlink to a path outside the input folder; not read"
            )
        target = Path(resolved)
        try:
            st = os.stat(target)
        except OSError as exc:  # a dangling link or a loop of links
            return InputEntry(rel, path, own, "unreadable", f"broken symlink: {exc.strerror or exc}")
    else:
        st = own
    if not stat.S_ISREG(st.st_mode):
        return InputEntry(
            rel,
            path,
            own,
            SPECIAL_FILE,
            f"{_kind(st.st_mode)}, not a regular file; only regular files are read",
        )
    return InputEntry(rel, target, st)


def scan(folder: str | os.PathLike[str]) -> Iterator[InputEntry]:
    """Every visible entry under `folder`, sorted, each readable or with why it is skipped (see module)."""
    root = Path(folder)
    root_real = os.path.realpath(root)
    for dirpath, dirnames, filenames in os.walk(root):
        here = Path(dirpath)
        visible = sorted(d for d in dirnames if not d.startswith("."))
        dirnames[:] = []
        for name in visible:
            sub = here / name
            if not os.path.islink(sub):
                dirnames.append(name)
            elif not _inside(os.path.realpath(sub), root_real):
                rel = sub.relative_to(root).as_posix()
                yield InputEntry(
                    rel,
                    sub,
                    os.lstat(sub),
                    OUTSIDE_INPUT,
                    "symlink to a folder outside the input folder; not read",
                )
        for name in sorted(filenames):
            if not name.startswith("."):
                path = here / name
                yield _entry(path, path.relative_to(root).as_posix(), root_real)


def read_regular(entry: InputEntry) -> bytes:
    """The entry's bytes, read only if its path still opens to the regular file `scan` saw."""
    flags = (
        os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_NOCTTY", 0)
    )
    fd = os.open(entry.path, flags)
    with os.fdopen(fd, "rb") as f:
        st = os.fstat(fd)
        seen = entry.stat
        if (
            not stat.S_ISREG(st.st_mode)
            or seen is None
            or (st.st_dev, st.st_ino) != (seen.st_dev, seen.st_ino)
        ):
            now = "another file" if stat.S_ISREG(st.st_mode) else _kind(st.st_mode)
            raise NotRegularError(f"{entry.rel} was replaced while it was read (by {now}); not read")
        return f.read()


def folder_fingerprint(folder: str | os.PathLike[str]) -> str:
    """sha256 over what ingest would see: (path, size, mtime) of each readable file and (path, status) of
    each skipped entry, so adding, editing or deleting a file changes it and nothing outside does."""
    h = hashlib.sha256()
    for e in scan(folder):
        if e.readable and e.stat is not None:
            h.update(f"{e.rel}\0{e.stat.st_size}\0{e.stat.st_mtime_ns}\n".encode())
        else:
            h.update(f"{e.rel}\0{e.error_type}\n".encode())
    return h.hexdigest()
