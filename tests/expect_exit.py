#!/usr/bin/env python3
"""Runs a command and passes only if it exits with the expected code and its
output contains the expected text. Used for the bad-input tests: every bad flag
must give a clear message and exit code 2, never a crash.

usage: expect_exit.py [--gpu] CODE TEXT -- COMMAND [ARGS...]
With --gpu (a test that needs a GPU): when the command exits 77 (no usable
GPU) this exits 77 too, which Meson counts as a skip, not a failure.
"""
import subprocess
import sys


def main() -> int:
    args = sys.argv[1:]
    gpu = args[0] == "--gpu"
    if gpu:
        args = args[1:]
    sep = args.index("--")
    code, text = int(args[0]), args[1]
    cmd = args[sep + 1:]
    try:
        p = subprocess.run(cmd, capture_output=True, text=True, timeout=60)
    except subprocess.TimeoutExpired:
        print(f"FAIL: {' '.join(cmd)} did not finish in 60 s (a hang)")
        return 1
    out = p.stdout + p.stderr
    print(out)
    if gpu and p.returncode == 77 and code != 77:
        print("SKIP: the command found no usable GPU (exit 77)")
        return 77
    if p.returncode < 0:
        print(f"FAIL: killed by signal {-p.returncode} (a crash)")
        return 1
    if p.returncode != code:
        print(f"FAIL: exit code {p.returncode}, expected {code}")
        return 1
    if text not in out:
        print(f"FAIL: output does not contain {text!r}")
        return 1
    print(f"ok: exit {code} with {text!r}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
