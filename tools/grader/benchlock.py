"""The host-wide benchmark lock of a class graded on several GPUs of one machine.

tools/grade_class.py grades one submission per GPU at once. Correctness and
sanitizer runs of different lanes may overlap freely; benchmark runs may not
always: a lab that times copies between the host and a GPU (PCIe, pinned host
memory: host_link = true in its grading.toml table) measures the host's links, which every lane
shares. So every lane's benchmark takes one lock file *shared*, and a host-link
lab's benchmark takes it *exclusive*: it waits until no other benchmark runs on
the host, and none starts until it ends. A student's performance points then never
depend on what a neighbour's lab was moving at the time.

    CUDALABS_BENCH_LOCK=/path/to/lock        the lock file (set by grade_class); unset: no lock
    CUDALABS_HOST_LINK_LABS=03_pcie_truth,...  the labs that take it exclusive

flock(2) favours no one: with lanes taking the lock shared one after the other, a
waiting exclusive taker could wait for ever. A second file, LOCK.gate, queues them:
every taker holds the gate while it waits for the lock, a shared taker lets the gate
go as soon as it has the lock, an exclusive one only once it has it too. A shared
taker that comes after a waiting exclusive one waits at the gate behind it.

The lock is per host: a node-local path (the default is under /tmp). Locks of
processes that die are released by the kernel with their file descriptors.
"""
import contextlib
import fcntl
import os
import time
from pathlib import Path

ENV_LOCK = "CUDALABS_BENCH_LOCK"
ENV_EXCLUSIVE = "CUDALABS_HOST_LINK_LABS"


def host_link_labs(config):
    """The labs whose benchmark takes the lock exclusive: host_link = true in
    their tools/grading.toml table (config: grader/config.py's load_config)."""
    return [lab for lab, cfg in config.items() if cfg["host_link"]]


def environment(lock_path, exclusive_labs):
    """The variables that make grade.py's benchmark runs take the lock."""
    return {ENV_LOCK: str(lock_path), ENV_EXCLUSIVE: ",".join(exclusive_labs)}


class BenchLock:
    """The lock held shared or exclusive; a context manager. `waited` is the seconds it
    took to get it (what a lane lost to its neighbours, for the log)."""

    def __init__(self, path, exclusive):
        self.path, self.exclusive = Path(path), exclusive
        self.files, self.waited = [], 0.0

    def _open(self, path):
        path.parent.mkdir(parents=True, exist_ok=True)
        f = open(path, "a")
        self.files.append(f)
        return f

    def __enter__(self):
        start = time.monotonic()
        gate = self._open(self.path.with_name(self.path.name + ".gate"))
        main = self._open(self.path)
        fcntl.flock(gate, fcntl.LOCK_EX)
        try:
            fcntl.flock(main, fcntl.LOCK_EX if self.exclusive else fcntl.LOCK_SH)
        finally:
            fcntl.flock(gate, fcntl.LOCK_UN)
        self.waited = time.monotonic() - start
        return self

    def __exit__(self, *exc):
        for f in reversed(self.files):
            f.close()  # releases its lock
        self.files = []


@contextlib.contextmanager
def held(lab, log=None):
    """Around one lab's benchmark runs (runs.py's benchmark_lab): the lock of
    CUDALABS_BENCH_LOCK, exclusive for the labs of CUDALABS_HOST_LINK_LABS, shared for
    the rest; nothing when the variable is unset (grade.py alone, one GPU)."""
    path = os.environ.get(ENV_LOCK)
    if not path:
        yield None
        return
    exclusive = lab in os.environ.get(ENV_EXCLUSIVE, "").split(",")
    with BenchLock(path, exclusive) as lock:
        if log is not None and lock.waited >= 1:
            print(f"benchmark lock ({'exclusive: host links' if exclusive else 'shared'}) after {lock.waited:.0f} s "
                  f"of waiting", file=log, flush=True)
        yield lock

