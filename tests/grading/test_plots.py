#!/usr/bin/env python3
"""Renders every plot of tools/make_plots.py from synthetic records (made by
synthetic_records.py, with data for every plot: labs 28, 30 and 32 included,
which results/ does not hold yet), so each gnuplot script runs in CI even
before results/ holds a GPU run. Fails when any plot fails or is skipped.
Then the same records without labs 28, 30 and 32: their plots must be skipped
with one line each, the others drawn, and the exit status 0."""
import json
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent.parent
from make_plots import PLOTS  # tools/make_plots.py (PYTHONPATH: plots/meson.build)

ABSENT = {"28": ("tuning_heatmap_saxpy", "tuning_heatmap_horner"), "30": ("tensor_core_ladder",),
          "32": ("peer_matrix", "allreduce_busbw")}


def make_plots(*args):
    p = subprocess.run([sys.executable, str(ROOT / "tools" / "make_plots.py"), "--check", *map(str, args)],
                       capture_output=True, text=True)
    print(p.stdout + p.stderr)
    return p


def main():
    with tempfile.TemporaryDirectory(prefix="cudalabs-plots-test-") as tmp:
        tmp = Path(tmp)
        subprocess.run([sys.executable, str(HERE / "synthetic_records.py"), tmp], check=True)
        out = tmp / "plots"
        p = make_plots("--records", tmp / "records.jsonl", "--records", tmp / "h200x2.jsonl", "--out", out)
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

        # Records as results/h100/ holds them today: no lab 28 sweep, no lab 30, no lab 32 file.
        without = tmp / "without.jsonl"
        with open(tmp / "records.jsonl") as f, open(without, "w") as w:
            w.writelines(line for line in f if json.loads(line)["lab"][:2] not in ABSENT)
        p = make_plots("--records", without, "--only", "transpose_bandwidth",
                       *[a for names in ABSENT.values() for name in names for a in ("--only", name)])
        lines = p.stdout.splitlines()
        for lab, names in ABSENT.items():
            for name in names:
                said = [line for line in lines if line.split()[:1] == [name]]
                if len(said) != 1 or f"skipped (labs {lab})" not in said[0]:
                    print(f"FAIL: {name} without lab {lab}'s records: expected one 'skipped (labs {lab})' line, got {said}")
                    return 1
        if p.returncode != 0 or not any(line.split()[:1] == ["transpose_bandwidth"] and ".png" in line for line in lines):
            print(f"FAIL: without labs 28, 30, 32 the other plots must draw and make_plots exit 0 (exit {p.returncode})")
            return 1
        print("ok: without labs 28, 30 and 32 their plots are skipped with one line each")
        return 0


if __name__ == "__main__":
    sys.exit(main())
