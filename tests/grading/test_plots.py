#!/usr/bin/env python3
"""Renders every plot of tools/make_plots.py from synthetic records (made by
synthetic_records.py, with data for every plot), so each gnuplot script runs in
CI even before results/ holds a GPU run. Fails when any plot fails or is skipped."""
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent.parent
sys.path.insert(0, str(ROOT / "tools"))
from make_plots import PLOTS  # noqa: E402


def main():
    with tempfile.TemporaryDirectory(prefix="cudalabs-plots-test-") as tmp:
        subprocess.run([sys.executable, str(HERE / "synthetic_records.py"), tmp], check=True)
        out = Path(tmp) / "plots"
        p = subprocess.run([sys.executable, str(ROOT / "tools" / "make_plots.py"), "--check",
                            "--records", str(Path(tmp) / "records.jsonl"), "--out", str(out)],
                           capture_output=True, text=True)
        print(p.stdout + p.stderr)
        if p.returncode == 77:
            return 77  # no gnuplot on this machine: skipped, not failed
        if p.returncode != 0:
            print(f"FAIL: make_plots.py exit {p.returncode}")
            return 1
        missing = [f"{name}.{fmt}" for name, *_ in PLOTS for fmt in ("png", "svg") if not (out / f"{name}.{fmt}").is_file()]
        if missing:
            print(f"FAIL: not drawn: {', '.join(missing)}")
            return 1
        print(f"ok: all {len(PLOTS)} plots drawn as PNG and SVG")
        return 0


if __name__ == "__main__":
    sys.exit(main())
