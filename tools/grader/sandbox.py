"""The sandbox that every build and every run of a student's submission goes through.

Threat model. A submission is C++/CUDA code compiled into the lab's program; the
build (meson, ninja, nvcc) and every run of the program (correctness, the
compute-sanitizer, benchmarks, class grading, Slurm tasks) execute it. Inside
bubblewrap (bwrap) it:
  - sees read-only: /usr, /bin, /sbin, /lib*, /etc, /opt, the CUDA Toolkit
    wherever /usr/local/cuda* resolves, /sys, a fresh /proc (its own PID
    namespace: it sees only its own processes) with /proc/sys and
    /proc/sysrq-trigger read-only, and the folders the caller passes as
    `readable` (the course tree and build, toolchain folders);
  - can write: the caller's `writable` folders (the submission's scratch or
    build folder, bound at the same path), a private /tmp and /dev/shm
    (tmpfs, capped at Limits.tmp_bytes each, gone when it ends);
  - cannot see: /root, /home, /work, /mnt, /srv, /var, /run (sockets of
    Docker, D-Bus, systemd) or anything else not named above; no network at
    all (its own network namespace: not even the host's 127.0.0.1), its own
    IPC and UTS namespaces, a new session (no TIOCSTI into the grader's
    terminal), only a clean environment (no tokens from the grader's);
  - runs as an unprivileged user: as the grader's own user (through a user
    namespace), or, when the grader runs as root, as nobody (uid 65534) with
    no capabilities. Root without capabilities is not enough: uid 0 still
    owns /etc/shadow, munge.key and ssh host keys (readable), root's kernel
    keyring, and may write most of /proc/sys (kernel.hostname, core_pattern);
  - is limited: wall-clock time, memory (a watchdog sums the resident memory
    of all its processes every 0.1 s and kills all of them past the limit),
    number of processes and threads (a fork bomb), the largest file it may
    write, the disk space it may add to its writable folders (a second
    watchdog sums them every DISK_POLL_S and kills it past the limit: many
    files each under the per-file limit), CPU seconds, no core files; when
    it ends or is killed, every process it started ends with it (the PID
    namespace dies with its init).
It does NOT protect against: the GPU itself being shared (a kernel runs on
the same device as other users' work; the driver isolates device memory
between contexts, so it cannot read another process's allocations, but it
can slow them down); timing side channels; bugs in the kernel, the NVIDIA
driver or bwrap (no seccomp filter is installed: the kernel's whole system
call surface and the driver's ioctls stay reachable); what it prints (the
output comes back to the grader, capped at Limits.output_bytes: its first and last halves).

The grader calls run() (or wrap() for the command line of a Slurm script);
check_available() says, once, whether bwrap works here and how to fix it if
not. run(..., enabled=False) is the grader's --no-sandbox path: the same
limits, timeout and result, without the isolation (trusted code only).
"""
from __future__ import annotations

import collections
import dataclasses
import glob
import json
import os
import re
import resource
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

__all__ = ["SandboxUnavailable", "Limits", "Result", "check_available", "wrap", "run",
           "prepare_writable", "python_paths", "sandbox_env"]

KiB, MiB, GiB = 1 << 10, 1 << 20, 1 << 30

# When the grader runs as root the sandboxed programs run as nobody:nogroup.
SANDBOX_UID = SANDBOX_GID = 65534

# The system, bound read-only (the ones that are symlinks in /, such as
# /bin -> usr/bin on merged-/usr systems, are recreated as symlinks).
SYSTEM_DIRS = ("/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32", "/etc", "/opt")
# The GPU: the NVIDIA device nodes (nvidia0.., nvidiactl, nvidia-uvm,
# nvidia-uvm-tools, nvidia-modeset, the folders nvidia-caps (MIG) and
# nvidia-caps-imex-channels), DRM render nodes, and WSL2's paravirtual GPU.
GPU_NODES = ("/dev/nvidia*", "/dev/dri", "/dev/dxg")
# Parts of the fresh /proc that a process may write to as the owner of its
# files; bound read-only from the host's (Docker does the same).
PROC_READ_ONLY = ("/proc/sys", "/proc/sysrq-trigger", "/proc/irq", "/proc/bus", "/proc/fs")
# The caller's variables that the programs need, kept when set: which GPUs
# (CUDA_VISIBLE_DEVICES and friends), NCCL's NVLink multicast switch (off on
# the shared machines), where the CUDA Toolkit and its libraries are.
KEEP_ENV = ("CUDA_VISIBLE_DEVICES", "CUDA_DEVICE_ORDER", "NVIDIA_VISIBLE_DEVICES",
            "NVIDIA_DRIVER_CAPABILITIES", "NCCL_NVLS_ENABLE", "CUDA_HOME", "CUDA_PATH", "LD_LIBRARY_PATH")

TMPFS = ("/tmp", "/dev/shm", "/dev")  # the sandbox's own, empty at the start

POLL_S = 0.1  # the watchdog's period: memory, processes, the wall clock
# Tasks a fork bomb may reach before the kernel refuses it more, between two
# polls (a C fork loop makes ~2,000 a second here, so the watchdog kills it
# near `processes`); far below pid_max (32,768 at the least, 4,194,304 with systemd).
NPROC_BACKSTOP = 8192
# Disk space a command may add to its writable folders (Limits.disk_bytes). A
# graded run leaves every output its checks compared for the judge, who reads
# them after the run: lab 25's runs at n = 2^28 + 1 leave about 14 GiB by count
# (seven variants, each checked on its first and on fresh inputs, 1 GiB an
# output; the repeated run's output is a hard link), more than the 8 GiB this
# limit once was. 32 GiB leaves room above that. CUDALABS_DISK_LIMIT_GIB raises
# (or lowers) it for the whole grader.
DISK_BYTES = 32 * (1 << 30)
DISK_LIMIT_ENV = "CUDALABS_DISK_LIMIT_GIB"
DISK_POLL_S = 1.0  # the writable folders are walked this often, in a thread of their own
# Whatever each command's limit, the disk itself is kept from filling: when the
# filesystem holding a command's writable folders has less than DISK_RESERVE_SHARE
# of its size free (at least DISK_RESERVE_MIN), the command that has added the
# most among those running is killed. Several runs in parallel (--parallel), each
# within its limit, could otherwise fill a small disk together, and a full disk
# breaks every grading on the machine, not only the one that filled it.
DISK_RESERVE_SHARE = 0.05
DISK_RESERVE_MIN = 2 * (1 << 30)  # about what a fast writer adds between two walks (DISK_POLL_S)
# The same share of the filesystem's inodes is kept free: each file counts ENTRY_BYTES against a
# command's limit, so 32 GiB of it is 8 M empty files, more than the 6.5 M inodes of a 100 GB ext4
# disk (one per 16 KiB). A filesystem that reports no inode count (btrfs: 0) is not held to it.
INODE_RESERVE_MIN = 10000
ENTRY_BYTES = 4096  # what each file or folder counts at the least: a million empty files fill a disk's inodes


class SandboxUnavailable(Exception):
    """bwrap is missing or cannot create its namespaces here; the message says how to fix it."""


def _memory_total():
    try:
        with open("/proc/meminfo") as f:
            for line in f:
                if line.startswith("MemTotal:"):
                    return int(line.split()[1]) * KiB
    except (OSError, ValueError, IndexError):
        pass
    return 16 * GiB


def _cpus():
    return os.cpu_count() or 1


def _disk_limit():
    """DISK_BYTES, or CUDALABS_DISK_LIMIT_GIB's GiB when it is set."""
    said = os.environ.get(DISK_LIMIT_ENV)
    if not said:
        return DISK_BYTES
    try:
        gib = float(said)
        if gib <= 0:
            raise ValueError
    except ValueError:
        raise ValueError(f"{DISK_LIMIT_ENV}={said}: not a number of GiB above 0 (e.g. {DISK_BYTES >> 30}); "
                         "unset it for the default") from None
    return int(gib * (1 << 30))


@dataclasses.dataclass
class Limits:
    """What one sandboxed command may use. None: no limit of that kind.

    The defaults suit one run of a lab program: the largest sizes allocate a
    few GB on the host; the CPU reference may start one thread per core.
    Limits.for_build() suits meson/ninja/nvcc: many
    processes, cicc needing 1-3 GB per translation unit."""
    wall_s: float | None = 600.0
    # Resident memory (anonymous + shared, summed over its processes). Not
    # RLIMIT_AS: CUDA reserves address space far beyond the memory it uses
    # (hundreds of GB of virtual space for unified addressing), so an
    # address-space limit kills every CUDA program. 16 GiB, or 3/4 of RAM.
    memory_bytes: int | None = dataclasses.field(default_factory=lambda: min(16 * GiB, _memory_total() * 3 // 4))
    # Processes and threads together (the kernel counts threads as tasks
    # too), all of them killed when they reach it. The CPU reference starts
    # one thread per core; CUDA adds a few.
    processes: int | None = dataclasses.field(default_factory=lambda: max(1024, 8 * _cpus()))
    file_bytes: int | None = 4 * GiB  # the largest file it may write (RLIMIT_FSIZE)
    cpu_s: int | None = 3600  # CPU seconds per process (RLIMIT_CPU): SIGXCPU, then SIGKILL 10 s later
    # Optional RLIMIT_AS per process, for compilers only (never for CUDA programs, see memory_bytes).
    address_space_bytes: int | None = None
    tmp_bytes: int = 2 * GiB  # the size of its private /tmp and of its /dev/shm (tmpfs: memory)
    # Output kept, its first half and its last (the error that ends a run comes
    # last); the rest is counted and dropped. Printing is allowed to a kernel file,
    # and every run's output goes to the lab's log: at 64 MiB a run, a lab's ~30
    # runs (checks, sanitizers, benchmark) left ~2 GiB of log per student, on no
    # limit's account. A lab's own table is a few KB.
    output_bytes: int = 4 * MiB
    # Disk space it may add to its writable folders, summed over all of them
    # (files' allocated blocks, at least ENTRY_BYTES each; what was there before
    # it started is not counted). DISK_BYTES, or CUDALABS_DISK_LIMIT_GIB.
    disk_bytes: int | None = dataclasses.field(default_factory=_disk_limit)

    @classmethod
    def for_build(cls) -> "Limits":
        return cls(wall_s=1800.0, memory_bytes=min(32 * GiB, _memory_total() * 3 // 4),
                   processes=max(4096, 32 * _cpus()), file_bytes=4 * GiB, cpu_s=3600, tmp_bytes=4 * GiB)


@dataclasses.dataclass
class Result:
    rc: int  # the exit code; negative: killed by that signal
    output: str  # stdout and stderr together
    seconds: float
    timed_out: bool = False
    killed_why: str = ""  # "" or why the sandbox ended it (time, memory, processes, CPU, file size)
    cmd: list = dataclasses.field(default_factory=list)  # what ran, bwrap included
    peak_memory_bytes: int = 0  # the most the watchdog saw (it samples every POLL_S)
    peak_processes: int = 0


# ---- finding and trying bwrap ----------------------------------------------------

def find_bwrap() -> str:
    """bwrap's path: $CUDALABS_BWRAP (a bwrap unpacked from the .deb, say), else PATH."""
    named = os.environ.get("CUDALABS_BWRAP")
    if named:
        if not (os.path.isfile(named) and os.access(named, os.X_OK)):
            raise SandboxUnavailable(f"CUDALABS_BWRAP={named} is not an executable file: point it at a bwrap "
                                     "binary, or unset it to use the bwrap on PATH")
        return os.path.abspath(named)
    found = shutil.which("bwrap")
    if not found:
        raise SandboxUnavailable(
            "bubblewrap is not installed: sudo apt-get install bubblewrap (tools/ensure_deps.sh build installs it "
            "as root), or set CUDALABS_BWRAP to a bwrap binary; or grade with --no-sandbox (trusted code only)")
    return found


_options_cache: dict = {}


def _bwrap_options(bwrap: str) -> frozenset:
    """The options this bwrap knows (they came in over versions: --clearenv and
    --perms in 0.5, --size in 0.7, --disable-userns in 0.8)."""
    if bwrap not in _options_cache:
        try:
            p = subprocess.run([bwrap, "--help"], capture_output=True, text=True, timeout=30)
            _options_cache[bwrap] = frozenset(re.findall(r"--[a-z0-9-]+", p.stdout + p.stderr))
        except (OSError, subprocess.TimeoutExpired) as e:
            raise SandboxUnavailable(f"cannot run {bwrap}: {e}") from e
    return _options_cache[bwrap]


def _read(path: str) -> str:
    try:
        with open(path) as f:
            return f.read().strip()
    except OSError:
        return ""


def _why_no_namespaces(said: str) -> str:
    """The fix for bwrap failing to create its namespaces, found by looking at
    the sysctls that turn user namespaces off."""
    if os.geteuid() != 0:
        if _read("/proc/sys/kernel/unprivileged_userns_clone") == "0":
            return ("user namespaces are disabled for ordinary users: "
                    "sudo sysctl -w kernel.unprivileged_userns_clone=1 (Debian)")
        if _read("/proc/sys/kernel/apparmor_restrict_unprivileged_userns") == "1":
            return ("AppArmor restricts user namespaces: sudo sysctl -w kernel.apparmor_restrict_unprivileged_userns=0 "
                    "(Ubuntu 24.04), or give bwrap an AppArmor profile that allows userns")
        if _read("/proc/sys/user/max_user_namespaces") == "0":
            return "user namespaces are disabled: sudo sysctl -w user.max_user_namespaces=10000"
    return ("bubblewrap cannot create namespaces here (a container? Docker's default seccomp profile blocks them: "
            "run the container with --security-opt seccomp=unconfined --cap-add SYS_ADMIN, or grade with "
            f"--no-sandbox, trusted code only). bwrap said: {said}")


_available: "str | SandboxUnavailable | None" = None


def check_available() -> str:
    """'/usr/bin/bwrap (bubblewrap 0.8.0)' when a trivial sandbox (`true`, with
    the same namespaces, binds and user switch as run's) works here; else
    raises SandboxUnavailable saying how to enable it. Tried once, cached."""
    global _available
    if _available is None:
        try:
            _available = _try_sandbox()
        except SandboxUnavailable as e:
            _available = e
    if isinstance(_available, SandboxUnavailable):
        raise _available
    return _available


def _try_sandbox() -> str:
    bwrap = find_bwrap()
    try:
        version = subprocess.run([bwrap, "--version"], capture_output=True, text=True, timeout=30).stdout.strip()
    except (OSError, subprocess.TimeoutExpired) as e:
        raise SandboxUnavailable(f"cannot run {bwrap}: {e}") from e
    options = _bwrap_options(bwrap)
    needed = {"--clearenv", "--perms", "--die-with-parent", "--new-session", "--unshare-pid", "--remount-ro"}
    if not needed <= options:
        raise SandboxUnavailable(f"{bwrap} ({version or 'unknown version'}) is too old: the sandbox needs "
                                 f"bubblewrap 0.5 or newer ({', '.join(sorted(needed - options))} missing); "
                                 "install a newer one or set CUDALABS_BWRAP to one")
    if os.geteuid() == 0 and not shutil.which("setpriv", path="/usr/bin:/bin:/usr/sbin:/sbin"):
        raise SandboxUnavailable("as root the sandbox drops to uid 65534 with setpriv, which is missing: "
                                 "sudo apt-get install util-linux")
    with tempfile.TemporaryDirectory(prefix="cudalabs-sandbox-check-") as tmp:
        scratch = Path(tmp) / "scratch"
        scratch.mkdir()
        prepare_writable([scratch])
        cmd = wrap(["/bin/sh", "-c", "echo ok > \"$HOME/ok\""], writable=[scratch], gpu=False)
        try:
            p = subprocess.run(cmd, capture_output=True, text=True, timeout=60, stdin=subprocess.DEVNULL)
        except (OSError, subprocess.TimeoutExpired) as e:
            raise SandboxUnavailable(f"cannot run {bwrap}: {e}") from e
        said = (p.stdout + p.stderr).strip().replace("\n", " / ")
        if p.returncode != 0:
            own = " / ".join(line for line in (p.stdout + p.stderr).splitlines() if line.startswith("bwrap:"))
            if re.search(r"namespace|uid map|Operation not permitted|Permission denied", own):
                raise SandboxUnavailable(_why_no_namespaces(own))
            raise SandboxUnavailable(f"bubblewrap fails here (exit {p.returncode}): {said}")
        if _read(str(scratch / "ok")) != "ok":
            raise SandboxUnavailable(f"bubblewrap ran, but the sandbox could not write its writable folder: {said}")
    return f"{bwrap} ({version})"


# ---- the command line -------------------------------------------------------------

def _under(path: str, top: str) -> bool:
    return path == top or path.startswith(top.rstrip("/") + "/")


def _covered(path: str, tops) -> bool:
    return any(_under(path, top) for top in tops)


def python_paths() -> list[Path]:
    """The folders a sandboxed Python needs when it is this one (a venv's
    python is a symlink to its base interpreter, under a pyenv in /root, say):
    add them to `readable` to run meson from a venv inside the sandbox."""
    found = []
    for p in (sys.prefix, sys.base_prefix, os.path.dirname(os.path.dirname(os.path.realpath(sys.executable)))):
        real = Path(os.path.realpath(p))
        if not _covered(str(real), SYSTEM_DIRS) and real not in found:
            found.append(real)
    return found


def sandbox_env(writable=(), env: dict | None = None) -> dict:
    """The sandbox's whole environment: PATH, HOME (the first writable folder,
    else /tmp), LANG=C.UTF-8, TMPDIR=/tmp, the KEEP_ENV variables that are set,
    then `env` (which may set PATH; a value of None removes a variable)."""
    writable = list(writable)
    out = {"PATH": os.environ.get("PATH", "/usr/local/bin:/usr/bin:/bin"),
           "HOME": os.path.abspath(writable[0]) if writable else "/tmp",
           "LANG": "C.UTF-8", "TMPDIR": "/tmp"}
    for name in KEEP_ENV:
        if name in os.environ:
            out[name] = os.environ[name]
    for name, value in (env or {}).items():
        if value is None:
            out.pop(name, None)
        else:
            out[name] = str(value)
    return out


def _count_tasks(uid: int) -> int:
    """Processes and threads whose real uid is `uid`, now (RLIMIT_NPROC counts these)."""
    n = 0
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        try:
            with open(f"/proc/{name}/status") as f:
                text = f.read()
        except OSError:
            continue
        m_uid = re.search(r"^Uid:\s+(\d+)", text, re.M)
        m_threads = re.search(r"^Threads:\s+(\d+)", text, re.M)
        if m_uid and int(m_uid.group(1)) == uid:
            n += int(m_threads.group(1)) if m_threads else 1
    return n


def _rlimits(limits: Limits, sandboxed: bool) -> list:
    """[(resource, soft, hard)] for the sandboxed (or direct) command.

    RLIMIT_NPROC counts every task of the real uid on the whole machine, not
    of one sandbox, and not at all for root (the kernel exempts uid 0). As
    root the sandbox's uid is nobody's (65534), shared by every sandbox
    running side by side (a class graded in parallel), so an exact limit
    would let one sandbox's threads make another's fork fail. The watchdog
    enforces `processes` exactly, per sandbox, from /proc; RLIMIT_NPROC is
    the backstop that stops a fork bomb faster than it polls: the tasks the
    uid runs now plus NPROC_BACKSTOP (or 2 x processes if more)."""
    out = [(resource.RLIMIT_CORE, 0, 0)]
    if limits.file_bytes is not None:
        out.append((resource.RLIMIT_FSIZE, limits.file_bytes, limits.file_bytes))
    if limits.cpu_s is not None:
        out.append((resource.RLIMIT_CPU, int(limits.cpu_s), int(limits.cpu_s) + 10))
    if limits.address_space_bytes is not None:
        out.append((resource.RLIMIT_AS, limits.address_space_bytes, limits.address_space_bytes))
    if limits.processes is not None:
        uid = SANDBOX_UID if (sandboxed and os.geteuid() == 0) else os.getuid()
        if uid != 0:
            n = _count_tasks(uid) + max(NPROC_BACKSTOP, 2 * limits.processes)
            out.append((resource.RLIMIT_NPROC, n, n))
    return out


def _prlimit_prefix(rlimits) -> list:
    """prlimit (util-linux) sets the limits and execs the command: the limits
    are part of the command line (a Slurm script gets them too) and no Python
    runs between fork and exec (preexec_fn is unsafe in a threaded grader)."""
    prlimit = shutil.which("prlimit", path="/usr/bin:/bin:/usr/sbin:/sbin")
    if not prlimit:
        return []
    names = {resource.RLIMIT_CORE: "core", resource.RLIMIT_FSIZE: "fsize", resource.RLIMIT_CPU: "cpu",
             resource.RLIMIT_AS: "as", resource.RLIMIT_NPROC: "nproc"}
    return [prlimit] + [f"--{names[r]}={soft}:{hard}" for r, soft, hard in rlimits] + ["--"]


def _set_rlimits(rlimits):
    """preexec_fn when there is no prlimit: runs in the child between fork and exec."""
    for r, soft, hard in rlimits:
        resource.setrlimit(r, (soft, hard))


def _binds(writable, readable):
    """The caller's paths as (real path, mode, alias) triples, parents before
    children (so a writable folder inside a readable one is bound on top of
    it, and the other way round); bound at the real path, with the path as
    given made a symlink to it when they differ and nothing else provides it."""
    modes = {}
    aliases = {}
    for mode, paths in (("ro", readable), ("rw", writable)):
        for p in paths:
            given = os.path.abspath(os.fspath(p))
            real = os.path.realpath(given)
            if not os.path.exists(real):
                raise FileNotFoundError(f"sandbox: {given} ({mode}) does not exist")
            if real == "/" or _covered(real, ("/proc", "/dev", "/sys")):
                raise ValueError(f"sandbox: {given} cannot be bound into the sandbox (it would expose the system)")
            modes[real] = "rw" if mode == "rw" or modes.get(real) == "rw" else "ro"  # writable wins
            if given != real:
                aliases.setdefault(given, real)
    order = sorted(modes, key=lambda r: len(Path(r).parts))
    return [(r, modes[r]) for r in order], aliases


def _system_args(gpu: bool, env: dict, tmp_bytes: int, options) -> tuple[list, list]:
    """bwrap's arguments for the system (read-only), /proc, /dev, /sys, /tmp;
    and the folders they bind from the host (not the tmpfs ones, TMPFS)."""
    args, tops = [], []
    size = ["--size", str(tmp_bytes)] if "--size" in options else []  # bwrap < 0.7: half of RAM
    for top in SYSTEM_DIRS:
        if os.path.islink(top):
            args += ["--symlink", os.readlink(top), top]  # /bin -> usr/bin
        elif os.path.isdir(top):
            args += ["--ro-bind", top, top]
            tops.append(top)
    # The CUDA Toolkit where /usr/local/cuda* (or CUDA_HOME) resolves, when
    # that is outside the folders above (/usr/local/cuda -> /usr/local/cuda-13.0
    # is inside /usr; -> /software/cuda-12.8 is not).
    cuda = glob.glob("/usr/local/cuda*") + [env[v] for v in ("CUDA_HOME", "CUDA_PATH") if env.get(v)]
    for path in cuda:
        real = os.path.realpath(path)
        if os.path.isdir(real) and real != "/" and not _covered(real, tops):
            args += ["--ro-bind", real, real]
            tops.append(real)
    args += ["--proc", "/proc"]
    for path in PROC_READ_ONLY:
        if os.path.exists(path):
            args += ["--ro-bind", path, path]
    args += ["--dev", "/dev", "--perms", "1777"] + size + ["--tmpfs", "/dev/shm"]
    if gpu:
        for node in _gpu_nodes():
            args += ["--dev-bind", node, node]
    args += ["--ro-bind", "/sys", "/sys"]
    args += ["--perms", "1777"] + size + ["--tmpfs", "/tmp"]
    tops += ["/proc", "/sys"]
    return args, tops


def _check_shown(cmd, provided) -> None:
    """Every argument of cmd that names a file or folder on this machine must
    be there inside the sandbox too: bound, or in a bound folder (a symbolic
    link counts where it leads). A program or input the sandbox does not show
    would fail as if the graded code had failed; this says why instead."""
    for arg in map(os.fspath, cmd):
        if not os.path.isabs(arg) or not os.path.exists(arg) or _covered(arg, ("/dev", "/proc", "/sys")):
            continue
        real = os.path.realpath(arg)
        if not _covered(real, provided):
            shown = f"{arg} (which is {real})" if real != arg else arg
            raise ValueError(f"sandbox: {shown} is not inside any folder the sandbox shows (the system's, or one "
                             "given as readable or writable): copy it into one, or give its folder as readable")


def _gpu_nodes() -> list[str]:
    return [node for pattern in GPU_NODES for node in sorted(glob.glob(pattern))]


def _gpu_groups() -> list[int]:
    """The groups that may open the GPU's nodes where others may not (a driver
    loaded with NVreg_DeviceFileMode=0660 and a 'video' group, as some
    clusters do): nobody keeps them, or the sandbox as root could not reach
    the GPU. Empty with the driver's default, 0666."""
    groups = set()
    for node in _gpu_nodes():
        for path in [node] + (glob.glob(os.path.join(node, "*")) if os.path.isdir(node) else []):
            try:
                st = os.stat(path)
            except OSError:
                continue
            if st.st_gid != 0 and st.st_mode & 0o060 and not st.st_mode & 0o006:
                groups.add(st.st_gid)
    return sorted(groups)


def _build(cmd, *, writable, readable, gpu, env, cwd, limits, status_fd=None) -> list[str]:
    bwrap = find_bwrap()
    options = _bwrap_options(bwrap)
    as_root = os.geteuid() == 0
    writable = [Path(os.path.abspath(os.fspath(p))) for p in writable]
    environment = sandbox_env(writable, env)
    tmp_bytes = (limits or Limits()).tmp_bytes

    args = []
    if limits is not None:
        args += _prlimit_prefix(_rlimits(limits, sandboxed=True))
    args += [bwrap, "--unshare-net", "--unshare-pid", "--unshare-ipc", "--unshare-uts", "--hostname", "sandbox"]
    if "--unshare-cgroup-try" in options:
        args += ["--unshare-cgroup-try"]
    args += ["--die-with-parent", "--new-session"]
    if as_root:
        # Root needs no user namespace; it keeps only what setpriv needs to
        # become nobody, and setuid to a non-zero uid clears those too.
        args += ["--cap-drop", "ALL", "--cap-add", "CAP_SETUID", "--cap-add", "CAP_SETGID"]
    else:
        # An ordinary user's bwrap (not setuid) works only in a user namespace;
        # inside, no further user namespaces (bwrap >= 0.8).
        args += ["--unshare-user"]
        if "--disable-userns" in options:
            args += ["--disable-userns"]
    if status_fd is not None:
        args += ["--json-status-fd", str(status_fd)]

    system, tops = _system_args(gpu, environment, tmp_bytes, options)
    args += system
    binds, aliases = _binds(writable, readable)
    provided = list(tops)
    made = set()

    def parents(path):
        # bwrap makes a destination's missing parents mode 0700, which only
        # root could pass: make them 0755 first (on the root tmpfs, read-only
        # at the end, so an empty /root or /work is all they show).
        missing = []
        parent = os.path.dirname(path)
        while parent != "/" and parent not in TMPFS and not _covered(parent, provided) and parent not in made:
            missing.append(parent)
            parent = os.path.dirname(parent)
        out = []
        for folder in reversed(missing):
            out += ["--perms", "0755", "--dir", folder]
            made.add(folder)
        return out

    for real, mode in binds:
        args += parents(real) + ["--bind" if mode == "rw" else "--ro-bind", real, real]
        provided.append(real)
    for given in sorted(aliases, key=lambda g: len(Path(g).parts)):
        if not _covered(given, provided):
            args += parents(given) + ["--symlink", aliases[given], given]
            provided.append(given)

    _check_shown(cmd, provided)
    workdir = os.path.abspath(os.fspath(cwd)) if cwd is not None else environment["HOME"]
    inside = provided + list(TMPFS)
    if not _covered(os.path.realpath(workdir), inside) and not _covered(workdir, inside):
        raise ValueError(f"sandbox: the working folder {workdir} is not inside a writable or readable folder")
    args += ["--chdir", workdir]
    # Everything above is bound; now the root (a tmpfs holding the mount
    # points) and /dev become read-only: nothing can fill their memory.
    args += ["--remount-ro", "/dev", "--remount-ro", "/"]
    args += ["--clearenv"]
    for name, value in environment.items():
        args += ["--setenv", name, value]
    args += ["--"]
    if as_root:
        setpriv = shutil.which("setpriv", path="/usr/bin:/bin:/usr/sbin:/sbin") or "/usr/bin/setpriv"
        groups = _gpu_groups() if gpu else []
        keep = [f"--groups={','.join(map(str, groups))}"] if groups else ["--clear-groups"]
        args += [setpriv, f"--reuid={SANDBOX_UID}", f"--regid={SANDBOX_GID}"] + keep + ["--inh-caps=-all", "--"]
    return args + [os.fspath(c) for c in cmd]


def wrap(cmd, *, writable, readable=(), gpu: bool = True, env: dict | None = None, cwd=None,
         limits: Limits | None = None) -> list[str]:
    """The bwrap command line that runs `cmd` in the sandbox (for logs and
    Slurm scripts). With `limits`, it starts with prlimit and their rlimits
    (the watchdog's memory limit and wall clock are run()'s: a Slurm script
    gets those from Slurm's own --mem and --time). As root the writable
    folders must belong to uid 65534: call prepare_writable() first."""
    return _build(cmd, writable=writable, readable=readable, gpu=gpu, env=env, cwd=cwd, limits=limits)


def prepare_writable(paths) -> None:
    """As root the sandboxed programs run as nobody (65534): the writable
    folders, and everything in them, become nobody's (the grader, as root,
    still reads and removes them). Nothing to do as an ordinary user."""
    if os.geteuid() != 0:
        return
    for top in paths:
        top = os.path.realpath(os.fspath(top))
        # bwrap enters the folder (--chdir) before it drops to nobody, as a root
        # without capabilities: a 0700 folder (tempfile.mkdtemp's) must let it through.
        os.chmod(top, os.stat(top).st_mode | 0o111)
        entries = [top]
        for folder, dirs, files in os.walk(top):  # does not follow symlinks
            entries += [os.path.join(folder, name) for name in dirs + files]
        for path in entries:
            try:
                st = os.lstat(path)
                if (st.st_uid, st.st_gid) != (SANDBOX_UID, SANDBOX_GID):
                    os.lchown(path, SANDBOX_UID, SANDBOX_GID)
            except FileNotFoundError:
                pass


def _check_reachable(readable, writable) -> None:
    """As root the programs run as nobody: each readable path, and each folder
    on the way to a bound path inside another bound folder, must let others
    in. Says which one does not, and the fix."""
    if os.geteuid() != 0:
        return
    ours = {os.path.realpath(os.fspath(p)) for p in writable}  # prepare_writable makes them nobody's
    bound = [os.path.realpath(os.fspath(p)) for p in list(readable) + list(writable)]
    for path in bound:
        st = os.stat(path)
        need = 0 if path in ours else 0o005 if os.path.isdir(path) else 0o004
        if st.st_mode & need != need:
            raise PermissionError(f"sandbox: as root the sandbox runs its programs as nobody (uid 65534), who cannot "
                                  f"read {path} (mode {st.st_mode & 0o777:o}): chmod o+rX {path}, or grade as an "
                                  "ordinary user")
        parent = os.path.dirname(path)
        while parent != "/" and _covered(parent, [b for b in bound if b != path]):
            if not os.stat(parent).st_mode & 0o001:
                raise PermissionError(f"sandbox: as root the sandbox runs its programs as nobody (uid 65534), who "
                                      f"cannot enter {parent}: chmod o+x {parent}, or grade as an ordinary user")
            parent = os.path.dirname(parent)


# ---- watching the processes ---------------------------------------------------------

def _proc_table() -> dict:
    """pid -> _Proc of every process now, from /proc/PID/stat."""
    table = {}
    for name in os.listdir("/proc"):
        if name.isdigit():
            proc = _stat(int(name))
            if proc is not None:
                table[proc.pid] = proc
    return table


@dataclasses.dataclass
class _Proc:
    pid: int
    state: str
    ppid: int
    pgrp: int
    threads: int
    start: int  # clock ticks after boot: with the pid, names one process for good


def _stat(pid: int):
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            data = f.read()
        # After "pid (comm) ", from field 3: state ppid pgrp ... field 20
        # num_threads, field 22 starttime (proc(5)); comm may hold spaces and ')'.
        rest = data[data.rindex(b")") + 2:].split()
        return _Proc(pid, rest[0].decode(), int(rest[1]), int(rest[2]), int(rest[17]), int(rest[19]))
    except (OSError, ValueError, IndexError):
        return None


def _alive(pid: int, start: int) -> bool:
    """Whether that process still runs (a zombie has ended: it only waits to be reaped)."""
    proc = _stat(pid)
    return proc is not None and proc.start == start and proc.state not in ("Z", "X")


def _descendants(root: int, table: dict) -> list[int]:
    children = {}
    for proc in table.values():
        children.setdefault(proc.ppid, []).append(proc.pid)
    out, stack = [], [root]
    while stack:
        for child in children.get(stack.pop(), ()):
            out.append(child)
            stack.append(child)
    return out


def _memory_of(pid: int) -> int:
    """Resident anonymous and shared memory of one process, in bytes (not its
    file-backed pages: the CUDA libraries' hundreds of MB of code are page
    cache, shared by every process that maps them, and the kernel can drop them)."""
    total = 0
    try:
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                if line.startswith(("RssAnon:", "RssShmem:")):
                    total += int(line.split()[1]) * KiB
    except (OSError, ValueError, IndexError):
        pass
    return total


def _kill(pid: int, start: int) -> None:
    """SIGKILL that process if it still is the one seen (same start time): the
    pidfd, opened before the check, pins it, so a reused pid is never hit."""
    try:
        fd = os.pidfd_open(pid)
    except ProcessLookupError:
        return  # gone
    except OSError:
        fd = None  # no pidfds (Linux < 5.3): check, then kill (a race of microseconds)
    try:
        proc = _stat(pid)
        if proc is not None and proc.start == start:
            if fd is not None:
                signal.pidfd_send_signal(fd, signal.SIGKILL)
            else:
                os.kill(pid, signal.SIGKILL)
    except OSError:
        pass
    finally:
        if fd is not None:
            os.close(fd)


class _Watch:
    """The processes of one command: samples their memory and number, keeps
    every process seen (pid and start time), and kills them all at the end.

    In the sandbox the command's process is bwrap; its child is PID 1 of the
    sandbox's PID namespace (bwrap's init), whose children are the command's
    processes. Every process in the namespace stays under that init (an
    orphan is reparented to it), so the tree under bwrap is all of them, and
    killing the init kills the namespace: the kernel ends every process in a
    PID namespace whose init ends, before the init itself is gone."""

    def __init__(self, popen, sandboxed: bool):
        self.popen = popen
        self.sandboxed = sandboxed
        self.seen: dict = {}  # pid -> start time
        self.memory = self.tasks = self.peak_memory = self.peak_tasks = 0

    def sample(self) -> None:
        table = _proc_table()
        root = self.popen.pid
        members = _descendants(root, table)
        if self.sandboxed:
            skip = {pid for pid in members if table[pid].ppid == root}  # bwrap's init is not the command's
        else:
            skip = set()
            members += [pid for pid in (root,) if pid in table]
        memory = tasks = 0
        for pid in members:
            self.seen.setdefault(pid, table[pid].start)
            if pid not in skip:
                tasks += table[pid].threads
                memory += _memory_of(pid)
        self.memory, self.tasks = memory, tasks
        self.peak_memory = max(self.peak_memory, memory)
        self.peak_tasks = max(self.peak_tasks, tasks)

    def add_init(self, status: dict) -> None:
        """bwrap's status line names its init, {"child-pid": N, "pid-namespace": INODE}:
        the one process to kill to end the sandbox, known even when the
        command ended before the first sample. Trusted only if that pid is
        in that namespace now (the status pipe is bwrap's, never the command's)."""
        pid, ns = status.get("child-pid"), status.get("pid-namespace")
        if not pid or pid in self.seen:
            return
        proc = _stat(pid)
        try:
            if proc is not None and os.readlink(f"/proc/{pid}/ns/pid") == f"pid:[{ns}]":
                self.seen[pid] = proc.start
        except OSError:
            pass

    def kill_all(self, limit_s: float = 5.0) -> None:
        """Kills the command's processes until none is left (at most limit_s).
        In the sandbox: bwrap and its init, which ends the namespace (bwrap
        ending alone does too: --die-with-parent). Without it: the process
        group (start_new_session made one) and every process ever seen; best
        effort, as a process that left the group, and whose parent died
        between two samples, is not known."""
        popen = self.popen
        deadline = time.monotonic() + limit_s
        while True:
            if popen.poll() is None:
                self.sample()
                popen.kill()
            if not self.sandboxed:
                for proc in _proc_table().values():
                    if proc.pgrp == popen.pid:
                        self.seen.setdefault(proc.pid, proc.start)
                try:
                    os.killpg(popen.pid, signal.SIGKILL)
                except OSError:
                    pass
            for pid, start in list(self.seen.items()):
                _kill(pid, start)
            alive = [pid for pid, start in self.seen.items() if _alive(pid, start)]
            if (not alive and popen.poll() is not None) or time.monotonic() > deadline:
                return
            time.sleep(0.01)


def _let_owner_in(path) -> None:
    """chmod u+rwx of the folder at `path` itself, never of what a link put there
    since leads to: the command runs while its folders are walked, and can swap a
    folder it made unreadable for a link to any file of the grader's user between the
    failed listing and this chmod (a plain chmod follows it). Opened as a path, not
    followed, then changed through its descriptor."""
    fd = os.open(path, os.O_PATH | os.O_NOFOLLOW | os.O_DIRECTORY)
    try:
        os.chmod(f"/proc/self/fd/{fd}", os.fstat(fd).st_mode & 0o7777 | 0o700)
    finally:
        os.close(fd)


def _disk_usage(folders, stop_above=None) -> int:
    """Bytes the folders take on disk: each file's and folder's allocated blocks, at
    least ENTRY_BYTES each, a hard-linked file once; links never followed. Stops
    counting past stop_above. A folder the command made unreadable (mode 000, as the
    grader's own user) is opened again after chmod u+rwx: the grader owns it."""
    total, seen, todo = 0, set(), [os.fspath(f) for f in folders]
    while todo:
        path = todo.pop()
        try:
            entries = list(os.scandir(path))
        except PermissionError:
            try:
                _let_owner_in(path)
                entries = list(os.scandir(path))
            except OSError:
                continue
        except OSError:  # removed while it was walked
            continue
        for e in entries:
            try:
                st = e.stat(follow_symlinks=False)
            except OSError:
                continue
            if (st.st_dev, st.st_ino) in seen:
                continue
            seen.add((st.st_dev, st.st_ino))
            total += max(st.st_blocks * 512, ENTRY_BYTES)
            if e.is_dir(follow_symlinks=False):
                todo.append(e.path)
        if stop_above is not None and total > stop_above:
            break
    return total


def remove_tree(path) -> None:
    """Removes path, a file or a folder, whatever a sandboxed command made of it:
    folders it made unreadable (mode 000) are the grader's to open again; links
    are removed, never followed. Nothing there: nothing to do."""
    path = os.fspath(path)
    if not os.path.isdir(path) or os.path.islink(path):
        try:
            os.unlink(path)
        except FileNotFoundError:
            pass
        return
    todo = [path]
    while todo:
        folder = todo.pop()
        try:
            os.chmod(folder, 0o700)
            todo += [e.path for e in os.scandir(folder) if e.is_dir(follow_symlinks=False)]
        except OSError:
            continue
    shutil.rmtree(path, ignore_errors=True)


def _disk_space(path) -> tuple[int, int, int, int]:
    """(bytes free to an ordinary user, size, inodes free to an ordinary user, inodes)
    of the filesystem holding path."""
    st = os.statvfs(path)
    return st.f_bavail * st.f_frsize, st.f_blocks * st.f_frsize, st.f_favail, st.f_files


class _DiskWatch:
    """The disk space a command adds to its writable folders, measured in a thread
    every DISK_POLL_S (a walk of many files must not hold up the memory watchdog),
    and the space left on their disks (DISK_RESERVE_SHARE)."""

    live: set = set()  # the watches of the commands running now, in every thread
    live_lock = threading.Lock()

    def __init__(self, folders, limit):
        self.folders, self.limit = folders, limit
        self.base = _disk_usage(folders)
        self.added = 0
        self.low = None  # (folder, free, reserve) once its disk ran low while this command added the most
        self.done = threading.Event()
        with _DiskWatch.live_lock:
            _DiskWatch.live.add(self)
        self.thread = threading.Thread(target=self._watch, daemon=True)
        self.thread.start()

    def _watch(self):
        while not self.done.wait(DISK_POLL_S):
            self.added = _disk_usage(self.folders, self.base + self.limit) - self.base
            self.low = self._disk_low()

    def _disk_low(self):
        """(folder, what ran low, free, reserve) when a folder's disk has less than its
        reserve of bytes or of inodes free and, of the commands running, this one has
        added the most; else None."""
        for folder in self.folders:
            try:
                free, size, free_inodes, inodes = _disk_space(folder)
            except OSError:
                continue
            reserve = max(DISK_RESERVE_MIN, int(size * DISK_RESERVE_SHARE))
            inode_reserve = max(INODE_RESERVE_MIN, int(inodes * DISK_RESERVE_SHARE))
            if free >= reserve:
                low = ("inodes", free_inodes, inode_reserve) if inodes and free_inodes < inode_reserve else None
            else:
                low = ("bytes", free, reserve)
            if low is None or self.added <= 0:
                continue
            with _DiskWatch.live_lock:
                largest = max(w.added for w in _DiskWatch.live)
            if self.added >= largest:
                return (folder, *low)
        return None

    def over(self) -> bool:
        return self.added > self.limit or self.low is not None

    def stop(self):
        self.done.set()
        with _DiskWatch.live_lock:
            _DiskWatch.live.discard(self)

    def why(self) -> str:
        if self.low is not None and self.added <= self.limit:
            folder, what, free, reserve = self.low
            room = (f"{free / GiB:.2f} GiB free, under the {reserve / GiB:.2f} GiB kept free" if what == "bytes" else
                    f"{free} inodes free (files it can still hold), under the {reserve} kept free")
            return (f"killed: the disk holding {os.fspath(folder)} had {room} "
                    f"(tools/grader/sandbox.py, DISK_RESERVE_SHARE), and of the "
                    f"commands running this one had added the most ({self.added / GiB:.2f} GiB). If it is the "
                    f"course's own code, the disk is too small for this grading: free some space, or grade with "
                    f"fewer runs at once (--parallel 1)")
        shown = ", ".join(map(os.fspath, self.folders))
        return (f"killed: it added {self.added} bytes ({self.added / GiB:.2f} GiB) to its writable folders "
                f"({shown}), over the limit of {self.limit} bytes ({self.limit / GiB:.2f} GiB; "
                f"tools/grader/sandbox.py, Limits.disk_bytes: raise it with {DISK_LIMIT_ENV}=N, in GiB)")


# ---- running --------------------------------------------------------------------------

class _Output:
    """Reads the command's output (stdout and stderr: one pipe) in a thread, so
    a full pipe never blocks it; keeps its first limit/2 bytes and its last
    limit/2, counts the rest."""

    def __init__(self, pipe, limit: int):
        self.pipe, self.limit = pipe, limit
        self.chunks, self.kept, self.dropped = [], 0, 0
        self.tail, self.tail_bytes = collections.deque(), 0
        self.thread = threading.Thread(target=self._read, daemon=True)
        self.thread.start()

    def _read(self):
        fd = self.pipe.fileno()
        head = self.limit // 2
        while True:
            try:
                data = os.read(fd, 65536)
            except OSError:
                return
            if not data:
                return
            room = max(0, head - self.kept)
            if room:
                self.chunks.append(data[:room])
                self.kept += min(room, len(data))
                data = data[room:]
            if data:
                self.tail.append(data)
                self.tail_bytes += len(data)
                while self.tail_bytes - len(self.tail[0]) >= self.limit - head:
                    self.dropped += len(self.tail[0])
                    self.tail_bytes -= len(self.tail.popleft())

    def text(self, wait_s: float) -> str:
        # Everything it started has ended, so the pipe is closed; wait_s
        # bounds the wait when something escaped with it (no sandbox): then
        # the pipe stays open (closing it under the reading thread could let
        # that thread read a reused fd number).
        self.thread.join(timeout=wait_s)
        if not self.thread.is_alive():
            self.pipe.close()
        tail = b"".join(self.tail)
        cut = max(0, len(tail) - (self.limit - self.limit // 2))
        dropped = self.dropped + cut
        text = b"".join(self.chunks).decode(errors="replace")
        if dropped:
            text += (f"\n[sandbox: {dropped} more bytes of output were dropped here (limit {self.limit}: "
                     "the first and the last half kept)]\n")
        return text + tail[cut:].decode(errors="replace")


class _Status:
    """bwrap's --json-status-fd pipe: a JSON object a line, {"child-pid": ...,
    "pid-namespace": ...} when it starts, {"exit-code": N} when the command ended."""

    def __init__(self, fd):
        self.fd, self.text, self.lines = fd, "", []
        if fd is not None:
            os.set_blocking(fd, False)

    def read(self) -> list:
        if self.fd is not None:
            try:
                while True:
                    data = os.read(self.fd, 4096)
                    if not data:
                        break
                    self.text += data.decode(errors="replace")
            except BlockingIOError:
                pass
            except OSError:
                pass
            *done, self.text = self.text.split("\n")
            for line in done:
                try:
                    obj = json.loads(line)
                except ValueError:
                    continue
                if isinstance(obj, dict):
                    self.lines.append(obj)
        return self.lines

    def close(self):
        if self.fd is not None:
            os.close(self.fd)
            self.fd = None


def run(cmd, *, writable, readable=(), gpu: bool = True, env: dict | None = None, cwd=None,
        limits: Limits | None = None, stdin=None, enabled: bool = True) -> Result:
    """Runs cmd in the sandbox (enabled=False: directly, the --no-sandbox
    path), stdout and stderr together, under `limits` (default Limits(): a
    lab program's run; Limits.for_build() for builds). Returns when every process it
    started has ended. stdin: None (/dev/null), bytes or str (fed to it), or
    a file. Raises SandboxUnavailable when the sandbox cannot work here, and
    FileNotFoundError, ValueError or PermissionError (as root: a readable
    folder nobody may read) for paths it cannot bind."""
    limits = limits if limits is not None else Limits()
    writable = [Path(os.path.abspath(os.fspath(p))) for p in writable]
    readable = [Path(os.path.abspath(os.fspath(p))) for p in readable]
    status_r = status_w = None
    if enabled:
        check_available()
        _check_reachable(readable, writable)
        prepare_writable(writable)
        if "--json-status-fd" in _bwrap_options(find_bwrap()):
            status_r, status_w = os.pipe()
        full = _build(cmd, writable=writable, readable=readable, gpu=gpu, env=env, cwd=cwd, limits=limits,
                      status_fd=status_w)
        popen_env = {"PATH": "/usr/bin:/bin", "LANG": "C.UTF-8"}  # bwrap's own; it clears it for cmd
        popen_cwd = "/"
    else:
        full = _prlimit_prefix(_rlimits(limits, sandboxed=False)) + [os.fspath(c) for c in cmd]
        popen_env = sandbox_env(writable, env)
        popen_cwd = os.fspath(cwd) if cwd is not None else (popen_env["HOME"] if writable else None)
    preexec = None
    if os.path.basename(full[0]) != "prlimit":  # no prlimit here: set them between fork and exec
        rlimits = _rlimits(limits, sandboxed=enabled)
        preexec = lambda: _set_rlimits(rlimits)  # noqa: E731

    feed = None
    if stdin is None:
        stdin_arg = subprocess.DEVNULL
    elif isinstance(stdin, (bytes, str)):
        stdin_arg, feed = subprocess.PIPE, stdin.encode() if isinstance(stdin, str) else stdin
    else:
        stdin_arg = stdin

    disk = _DiskWatch(writable, limits.disk_bytes) if limits.disk_bytes is not None and writable else None
    start = time.monotonic()
    try:
        p = subprocess.Popen(full, stdin=stdin_arg, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                             env=popen_env, cwd=popen_cwd, start_new_session=True, preexec_fn=preexec,
                             pass_fds=(status_w,) if status_w is not None else ())
    except OSError as e:
        for fd in (status_r, status_w):
            if fd is not None:
                os.close(fd)
        if disk is not None:
            disk.stop()
        return Result(127 if isinstance(e, FileNotFoundError) else 126, f"cannot run {full[0]}: {e}\n",
                      time.monotonic() - start, cmd=full)
    if status_w is not None:
        os.close(status_w)
    output = _Output(p.stdout, limits.output_bytes)
    status = _Status(status_r)
    if feed is not None:
        def write_stdin():
            try:
                p.stdin.write(feed)
            except OSError:
                pass  # it ended or closed its stdin first
            finally:
                try:
                    p.stdin.close()
                except OSError:
                    pass
        threading.Thread(target=write_stdin, daemon=True).start()

    # The watchdog: every POLL_S, the wall clock, then memory, processes and disk.
    watch = _Watch(p, sandboxed=enabled)
    deadline = start + limits.wall_s if limits.wall_s is not None else None
    timed_out, killed_why = False, ""
    while True:
        wait_s = POLL_S if deadline is None else max(0.0, min(POLL_S, deadline - time.monotonic()))
        try:
            p.wait(timeout=wait_s)
            break
        except subprocess.TimeoutExpired:
            pass
        for line in status.read():
            watch.add_init(line)
        if deadline is not None and time.monotonic() >= deadline:
            timed_out = True
            killed_why = f"killed: still running after {limits.wall_s:g} s (the wall-clock limit)"
            break
        watch.sample()
        if limits.memory_bytes is not None and watch.memory > limits.memory_bytes:
            killed_why = (f"killed: its processes used {watch.memory} bytes ({watch.memory / GiB:.2f} GiB) of "
                          f"memory, over the limit of {limits.memory_bytes} bytes "
                          f"({limits.memory_bytes / GiB:.2f} GiB)")
            break
        if limits.processes is not None and watch.tasks >= limits.processes:
            killed_why = (f"killed: it reached {watch.tasks} processes and threads, the limit is "
                          f"{limits.processes} (a fork bomb?)")
            break
        if disk is not None and disk.over():
            killed_why = disk.why()
            break
    # Ended or stopped: nothing it started outlives run().
    for line in status.read():
        watch.add_init(line)
    watch.kill_all()
    p.wait()
    if disk is not None:
        disk.stop()
    text = output.text(wait_s=2.0)
    statuses = status.read()
    status.close()
    seconds = time.monotonic() - start

    rc = p.returncode
    if enabled and not killed_why:
        # Without {"exit-code": N} bwrap failed before the command ran: a
        # bind, or the exec (the command is not there).
        ran = any("exit-code" in line for line in statuses)
        said = [line for line in text.splitlines() if line.startswith("bwrap: ")]
        if status_r is not None and not ran and rc != 0:
            if said and said[-1].startswith("bwrap: execvp"):
                rc = 127  # a shell's code for a command it cannot find
            else:
                killed_why = f"the sandbox did not start: {said[-1] if said else f'bwrap exited {rc}'}"
        elif 128 < rc < 128 + 65:
            # bwrap reports a command killed by signal N as 128 + N, as a shell
            # does (a program that exits 129..192 itself reads as a signal too).
            rc = -(rc - 128)
    if not killed_why and rc == -signal.SIGXCPU and limits.cpu_s is not None:
        killed_why = f"killed: it used more than {limits.cpu_s} s of CPU time (RLIMIT_CPU)"
    elif not killed_why and rc == -signal.SIGXFSZ and limits.file_bytes is not None:
        killed_why = f"killed: it tried to write a file larger than {limits.file_bytes} bytes (RLIMIT_FSIZE)"
    return Result(rc=rc, output=text, seconds=seconds, timed_out=timed_out, killed_why=killed_why, cmd=full,
                  peak_memory_bytes=watch.peak_memory, peak_processes=watch.peak_tasks)


if __name__ == "__main__":
    # python3 tools/grader/sandbox.py [CMD...]: says whether the sandbox works
    # here (exit 77 if not); with a command, runs it in the sandbox, in a
    # fresh scratch folder (writable), the current folder readable.
    try:
        print(check_available())
    except SandboxUnavailable as e:
        print(f"sandbox unavailable: {e}")
        sys.exit(77)
    if len(sys.argv) > 1:
        with tempfile.TemporaryDirectory(prefix="cudalabs-sandbox-") as tmp:
            r = run(sys.argv[1:], writable=[Path(tmp)], readable=[Path.cwd()], cwd=Path.cwd())
        sys.stdout.write(r.output)
        print(f"[rc {r.rc}, {r.seconds:.2f} s{', ' + r.killed_why if r.killed_why else ''}]")
        sys.exit(0 if r.rc == 0 else 1)
