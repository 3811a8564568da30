#!/usr/bin/env python3
"""Runs a command and passes only if it exits with the expected code and its
output contains the expected text. Used for the bad-input tests: every bad flag
must give a clear message and exit code 2, never a crash.

usage: expect_exit.py CODE TEXT -- COMMAND [ARGS...]
"""
import subprocess
import sys


def main() -> int:
    sep = sys.argv.index("--")
    code, text = int(sys.argv[1]), sys.argv[2]
    cmd = sys.argv[sep + 1:]
    try:
        p = subprocess.run(cmd, capture_output=True, text=True, timeout=60)
    except subprocess.TimeoutExpired:
        print(f"FAIL: {' '.join(cmd)} did not finish in 60 s (a hang)")
        return 1
    out = p.stdout + p.stderr
    print(out)
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
