"""Running one program for the grader: with a timeout that kills its whole
process group, its output logged; a submission's program in the sandbox
(tools/grader/sandbox.py) unless --no-sandbox. Also whether this machine has a
GPU and compute-sanitizer."""
from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import threading
import time
from dataclasses import dataclass
from pathlib import Path

from . import sandbox
from .config import GradeError


@dataclass
class Run:
    what: str
    cmd: list
    rc: int = 0
    output: str = ""
    seconds: float = 0.0
    timeout: float = None
    timed_out: bool = False


@dataclass
class Untrusted:
    """How a submission's code is run: in the sandbox (tools/grader/sandbox.py)
    unless --no-sandbox, reading the course tree and its own build, writing only
    its run's folder. None for the course's own tree (trusted: no sandbox)."""
    sandboxed: bool
    readable: list

    def warn(self):
        if not self.sandboxed:
            print("grade: WARNING: --no-sandbox: the submission's code runs with the grader's rights "
                  "(it can read and write anything this user can)", file=sys.stderr, flush=True)


def run_untrusted(what, cmd, timeout, log, untrusted, writable, limits=None, env=None):
    """Runs a submission's command in the sandbox (or, --no-sandbox, directly with
    the same limits): a Run as run() gives, with the sandbox's reason when it
    killed it (time, memory, processes)."""
    untrusted.warn()
    limits = limits or sandbox.Limits()
    limits.wall_s = timeout
    for folder in writable:
        Path(folder).mkdir(parents=True, exist_ok=True)
    try:
        res = sandbox.run(cmd, writable=writable, readable=untrusted.readable + sandbox.python_paths(), gpu=True,
                          limits=limits, enabled=untrusted.sandboxed, env=env)
    except (ValueError, FileNotFoundError, PermissionError) as e:
        # The grader's own setup, not the submission: stop rather than score it zero.
        raise GradeError(f"{what}: {e}") from None
    output = res.output + (f"\n[sandbox: {res.killed_why}]" if res.killed_why else "")
    r = Run(what, cmd, res.rc, output, res.seconds, timeout, res.timed_out)
    write_log(log, f"$ {' '.join(map(str, cmd))}\n{'(sandboxed) ' if untrusted.sandboxed else '(NOT sandboxed) '}"
                   f"{r.output}\n[exit {r.rc}, {r.seconds:.1f} s]\n\n")
    return r


def run(what, cmd, timeout, log):
    """Runs cmd, output and errors together. Past `timeout` seconds the whole
    process group is killed (compute-sanitizer runs the lab as its child)."""
    start = time.monotonic()
    try:
        p = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                             errors="replace", start_new_session=True)
    except OSError as e:
        r = Run(what, cmd, 126, f"cannot run {cmd[0]}: {e}")
    else:
        try:
            out, _ = p.communicate(timeout=timeout)
            r = Run(what, cmd, p.returncode, out)
        except subprocess.TimeoutExpired:
            os.killpg(p.pid, signal.SIGKILL)
            out, _ = p.communicate()
            r = Run(what, cmd, -signal.SIGKILL, out, timed_out=True)
    r.timeout = timeout
    r.seconds = time.monotonic() - start
    write_log(log, f"$ {' '.join(map(str, cmd))}\n{r.output}\n[exit {r.rc}, {r.seconds:.1f} s]\n\n")
    return r


LOG_LOCK = threading.Lock()


def write_log(log, text):
    """One run's whole entry at once: a judge finishing in the background writes
    to the same lab log as the graded run beside it."""
    with LOG_LOCK:
        log.write(text)
        log.flush()


def why_no_gpu():
    """None when nvidia-smi lists a GPU, else the reason in a few words."""
    smi = shutil.which("nvidia-smi")
    if not smi:
        return "no NVIDIA GPU here (nvidia-smi not found)"
    try:
        p = subprocess.run([smi, "-L"], capture_output=True, text=True, timeout=60)
    except (OSError, subprocess.TimeoutExpired):
        return "no usable NVIDIA GPU (nvidia-smi -L did not answer)"
    if p.returncode != 0 or "GPU" not in p.stdout:
        said = (p.stdout + p.stderr).strip().splitlines()
        return f"no usable NVIDIA GPU (nvidia-smi -L: {said[0] if said else 'exit ' + str(p.returncode)})"
    return None


def gpu_memory_gib():
    """The memory of the smallest GPU nvidia-smi lists, in GiB, or None when it does not say."""
    smi = shutil.which("nvidia-smi")
    try:
        p = subprocess.run([smi, "--query-gpu=memory.total", "--format=csv,noheader,nounits"],
                           capture_output=True, text=True, timeout=60) if smi else None
        mib = [float(line) for line in p.stdout.split()] if p and p.returncode == 0 else []
    except (OSError, subprocess.TimeoutExpired, ValueError):
        return None
    return min(mib) / 1024 if mib else None


def sanitizer_found():
    return shutil.which("compute-sanitizer") or Path("/usr/local/cuda/bin/compute-sanitizer").is_file()


def tail(text, lines=15):
    return "\n".join(text.rstrip().splitlines()[-lines:])

