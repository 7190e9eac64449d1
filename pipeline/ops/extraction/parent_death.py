"""Child processes that die with their parent, however the parent ends.

A `kill -9` of `pipeline index` left its spawned workers (about 430 MB each) running under PID 1, and with
them multiprocessing's resource tracker, which lives until the last holder of its pipe, the workers
included, is gone. `die_with_parent` is a pool initializer for every process pool the pipeline spawns.
On Linux the kernel kills the child when its parent does (PR_SET_PDEATHSIG); everywhere, a thread in the
child waits on the pipe the parent holds open for it and ends the child when that pipe closes. The pipe
catches a parent that died before the prctl, and the case PDEATHSIG gets wrong: it fires when the parent
*thread* that started the child ends, not the process.
"""

from __future__ import annotations

import ctypes
import multiprocessing
import multiprocessing.process
import os
import signal
import sys
import threading

_PR_SET_PDEATHSIG = 1  # from <linux/prctl.h>


def die_with_parent() -> None:
    """Make this multiprocessing child end when its parent process ends; a no-op elsewhere."""
    parent = multiprocessing.parent_process()
    if parent is None:  # not a multiprocessing child
        return
    if sys.platform == "linux":
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(_PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
    if os.getppid() != parent.pid:  # the parent died before the prctl above could take effect
        os._exit(1)
    # The parent's end of this pipe closes only when it exits: join() returns then, and only then.
    threading.Thread(target=_exit_when_gone, args=(parent,), daemon=True, name="parent-watch").start()


def _exit_when_gone(parent: multiprocessing.process.BaseProcess) -> None:
    parent.join()
    os._exit(1)
