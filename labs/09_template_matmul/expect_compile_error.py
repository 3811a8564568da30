#!/usr/bin/env python3
"""Compiles one file and checks the outcome: that it compiles, or that the
compiler rejects it AND says the expected text. Lab 09's compile-time rules are
tested this way: a rule that stopped firing, or fired with a different
message, fails the test. CPU only (no GPU needed).

usage: expect_compile_error.py --compiles -- COMPILER ARGS...
       expect_compile_error.py --fails-with TEXT -- COMPILER ARGS...
The script adds `-o <temporary file>` to the command.
"""
import subprocess
import sys
import tempfile
from pathlib import Path


def main() -> int:
    sep = sys.argv.index("--")
    mode, expected = sys.argv[1], (sys.argv[2] if sys.argv[1] == "--fails-with" else None)
    if mode not in ("--compiles", "--fails-with") or (mode == "--fails-with" and sep != 3):
        print(__doc__)
        return 2
    with tempfile.TemporaryDirectory() as tmp:
        cmd = sys.argv[sep + 1:] + ["-o", str(Path(tmp) / "out.o")]
        print(" ".join(cmd))
        try:
            p = subprocess.run(cmd, capture_output=True, text=True, timeout=300)
        except subprocess.TimeoutExpired:
            print("FAIL: the compiler did not finish in 300 s")
            return 1
    out = p.stdout + p.stderr
    print(out)
    if mode == "--compiles":
        if p.returncode != 0:
            print(f"FAIL: expected to compile, but the compiler exited {p.returncode}")
            return 1
        print("ok: compiles")
        return 0
    if p.returncode == 0:
        print(f"FAIL: this instantiation compiled, but a rule should have rejected it with {expected!r}")
        return 1
    if expected not in out:
        print(f"FAIL: the compiler rejected it, but its output does not contain {expected!r}")
        return 1
    print(f"ok: rejected with {expected!r}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
