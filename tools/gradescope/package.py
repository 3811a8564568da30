"""The Gradescope autograder package: `make gradescope-autograder OUT=file.zip ...`.

The zip, as Gradescope wants it (setup.sh and run_autograder at its top):
  setup.sh          installs the compilers (the CUDA Toolkit from NVIDIA's apt
                    repository), Meson, Ninja and ssh: tools/gradescope/autograder/setup.sh
  run_autograder    runs bridge.py submit with this package's settings
  bridge/key, bridge/known_hosts   the autograder's own SSH key and the GPU host's host key
  cudalabs/         the course (git's tracked files, without results/): the
                    labs, tools/grading.toml, the grader
"""
import shlex
import subprocess
import zipfile
from pathlib import Path

from grader.config import ROOT, lab_names, select

SOURCE = "/autograder/source"


class PackageError(Exception):
    """A missing or bad input of the package: exit 2."""


def course_files():
    r = subprocess.run(["git", "-C", str(ROOT), "ls-files", "-z"], capture_output=True)
    if r.returncode != 0:
        raise PackageError(f"{ROOT} is not a git checkout: the package holds the course's tracked files")
    return sorted(p for p in r.stdout.decode().split("\0")
                  if p and not p.startswith("results/") and (ROOT / p).is_file())


def run_autograder(args, labs):
    cmd = ["python3", f"{SOURCE}/cudalabs/tools/gradescope/bridge.py", "submit",
           "--submission", "/autograder/submission", "--metadata", "/autograder/submission_metadata.json",
           "--results", "/autograder/results/results.json", "--labs", ",".join(labs),
           "--assignment", args.assignment, "--host", args.host, "--port", str(args.port), "--user", args.user,
           "--key", f"{SOURCE}/bridge/key", "--known-hosts", f"{SOURCE}/bridge/known_hosts",
           "--timeout", str(args.timeout)] + (["--arch", args.arch] if args.arch else [])
    return ("#!/bin/sh\n"
            "# Gradescope runs this for every submission (made by make gradescope-autograder).\n"
            "# results.json is written whatever happens; its output says why when not graded.\n"
            f"export PATH=\"{SOURCE}/cudalabs/build/.venv/bin:$PATH:/usr/local/cuda/bin\"\n"
            f"{shlex.join(cmd)}\n"
            "exit 0\n")


def build(args):
    """Writes the zip; returns its path."""
    key, known_hosts = Path(args.key or ""), Path(args.known_hosts or "")
    if not args.key or not key.is_file():
        raise PackageError(f"KEY={args.key or ''}: no such file. Make the autograder's key with "
                           f"ssh-keygen -t ed25519 -N '' -C cudalabs-bridge -f cudalabs_bridge, then KEY=cudalabs_bridge")
    head = key.read_text(errors="replace")[:64]
    if "PRIVATE KEY" not in head:
        raise PackageError(f"KEY={key}: not a private key (the .pub file goes into the host's authorized_keys; "
                           f"KEY= is the other one)")
    if not args.host:
        raise PackageError("HOST= names the GPU host the autograder connects to (a name or address)")
    if not args.known_hosts or not known_hosts.is_file():
        raise PackageError(f"KNOWN_HOSTS={args.known_hosts or ''}: no such file. The GPU host's public host key: "
                           f"ssh-keyscan -p {args.port} {args.host} > known_hosts (check its fingerprint against "
                           f"ssh-keygen -lf /etc/ssh/ssh_host_ed25519_key.pub on the host)")
    if not args.assignment:
        raise PackageError("ASSIGNMENT= names the assignment, as in the GPU host's [assignments.NAME]")
    if not args.labs:
        raise PackageError("LABS= lists the assignment's labs, e.g. LABS=02 or LABS=04,06")
    labs = select(lab_names(ROOT), args.labs)
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    with zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as z:
        def add(name, text, mode=0o644):
            info = zipfile.ZipInfo(name, date_time=(2020, 1, 1, 0, 0, 0))
            info.external_attr = (0o100000 | mode) << 16
            info.compress_type = zipfile.ZIP_DEFLATED
            z.writestr(info, text)
        add("setup.sh", (ROOT / "tools" / "gradescope" / "autograder" / "setup.sh").read_text(), 0o755)
        add("run_autograder", run_autograder(args, labs), 0o755)
        add("bridge/key", key.read_bytes(), 0o600)
        add("bridge/known_hosts", known_hosts.read_bytes())
        for rel in course_files():
            add(f"cudalabs/{rel}", (ROOT / rel).read_bytes(), 0o755 if (ROOT / rel).stat().st_mode & 0o111 else 0o644)
    return out, labs
