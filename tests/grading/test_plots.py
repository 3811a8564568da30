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
from make_plots import PLOTS, peer_matrix  # tools/make_plots.py (PYTHONPATH: plots/meson.build)

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
        return check_fullest_matrix(tmp)


class Lab32Records:
    """The selection make_plots' data functions read (d.lab), over given records."""
    def __init__(self, records):
        self.records = records

    def lab(self, *labs):
        return self.records


def check_fullest_matrix(tmp):
    """--pairs auto on four GPUs: every ordered pair at 256 MiB, two pairs at
    1 GiB. The matrix is drawn at 256 MiB, the size with every pair."""
    def copy(src, dst, size):
        return {"lab": "32_multi_gpu", "variant": "peer_copy", "size": {"bytes": size, "dst": dst, "src": src},
                "gbps": 380.0, "gpu": "GPU", "extra": {"gpus": 4}}
    def both(a, b, size):
        return {"lab": "32_multi_gpu", "variant": "peer_copy_bidir", "size": {"bytes": size, "gpu_a": a, "gpu_b": b},
                "gbps": 750.0, "gpu": "GPU", "extra": {"gpus": 4}}
    mib256, gib = 256 << 20, 1 << 30
    records = [copy(s, d, mib256) for s in range(4) for d in range(4) if s != d]
    records += [both(a, b, mib256) for a in range(4) for b in range(a + 1, 4)]
    records += [copy(0, 1, gib), copy(1, 0, gib), both(0, 1, gib)]
    got = peer_matrix(Lab32Records(records), tmp)
    if got["size_note"] != "256 MiB per copy" or got["nx"] != 4:
        print(f"FAIL: the copy matrix of --pairs auto must be drawn where every pair was timed, got {got}")
        return 1
    print("ok: the copy matrix is drawn at the size where every pair was timed")
    return 0


if __name__ == "__main__":
    sys.exit(main())
