#!/usr/bin/env python3
"""Markdown tables of recorded results, so writeups quote exactly what
results/<gpu>/records.jsonl holds.

  results_table.py LAB [--variants a,b] [--columns ms,gbps,pct,vs] [--sizes n=1024,...]
                   [--flags causal=1,...]
      prints one lab's table; --flags keeps the records made with those flag values
      (the record's "flags": lab 16's --causal, lab 30's --dtype). Flags whose values
      differ among the rows shown are added to the size column, so a causal row is
      never read as a non-causal one.
  results_table.py --update FILE.md [FILE.md ...]
      regenerates every block in the files written as
        <!-- results-table LAB [--variants ...] [--columns ...] -->
        ...anything (replaced)...
        <!-- /results-table -->

Columns: ms, ci, runs, gbps, gflops, tflops, pct, vs, err, plus extra.NAME for a
lab-specific number from the record's "extra" object.
"""
import argparse
import pathlib
import re
import shlex
import sys

from grader.records import read_records  # tools/grader/records.py

ROOT = pathlib.Path(__file__).resolve().parent.parent


def fmt(v, spec):
    return "-" if v is None else format(v, spec)


COLUMNS = {
    "ms": ("median ms", lambda r: f"{r['median_ms']:.4g}"),
    "ci": ("±95% CI", lambda r: f"{100 * r['ci95_ms'] / r['mean_ms']:.1f}%" if r.get("mean_ms") else "-"),
    "runs": ("runs", lambda r: str(r["runs"])),
    "gbps": ("GB/s", lambda r: fmt(r.get("gbps"), ".1f") if r.get("bytes") else "-"),
    "gflops": ("GFLOP/s", lambda r: fmt(r.get("gflops"), ".0f") if r.get("flops") else "-"),
    "tflops": ("TFLOP/s", lambda r: fmt(r["gflops"] / 1000, ".1f") if r.get("flops") and r.get("gflops") else "-"),
    "pct": ("% of ceiling", lambda r: fmt(r.get("pct_of_ceiling"), ".1f") if r.get("pct_of_ceiling") else "-"),
    "vs": ("vs baseline", lambda r: f"{r['vs_baseline']:.2f}×" if r.get("vs_baseline") else "-"),
    "err": ("max abs err", lambda r: fmt(r.get("max_abs_err"), ".1e")),
}


def column(name):
    if name.startswith("extra."):
        key = name[6:]
        return key, lambda r: fmt(r.get("extra", {}).get(key), ".4g")
    return COLUMNS[name]


def table(lab, gpu="h100", variants="", columns="ms,gbps,pct,vs", sizes="", flags="", records=None):
    if records is None:
        path = ROOT / "results" / gpu / "records.jsonl"
        records = read_records(path) if path.exists() else []
    records = [r for r in records if r["lab"] == lab and r.get("timed")]
    if variants:
        keep = variants.split(",")
        records = [r for r in records if r["variant"] in keep]
    if sizes:
        keep = sizes.split(",")
        records = [r for r in records if " ".join(f"{k}={v}" for k, v in r["size"].items()) in keep or
                   any(f"{k}={v}" in keep for k, v in r["size"].items())]
    if flags:
        bad = [item for item in flags.split(",") if "=" not in item]
        if bad:
            print(f"results_table: --flags {flags}: each item is NAME=VALUE, e.g. --flags causal=1 (not {bad[0]!r})",
                  file=sys.stderr)
            sys.exit(2)
        want = dict(item.split("=", 1) for item in flags.split(","))
        records = [r for r in records if all(r.get("flags", {}).get(k) == v for k, v in want.items())]
    if not records:
        return f"(no records of {lab} in results/{gpu}/records.jsonl yet)"
    # --sweep is left out: a sweep point carries its launch in its variant name.
    names = sorted({k for r in records for k in r.get("flags", {}) if k != "sweep"})
    differing = [k for k in names if len({r.get("flags", {}).get(k) for r in records}) > 1]
    cols = [column(c) for c in columns.split(",")]
    lines = ["| size | variant | " + " | ".join(c[0] for c in cols) + " |", "|---|---|" + "---|" * len(cols)]
    for r in records:
        size = " ".join([f"{k}={v}" for k, v in r["size"].items()] +
                        [f"{k}={r.get('flags', {}).get(k, '-')}" for k in differing])
        lines.append(f"| {size} | {r['variant']} | " + " | ".join(c[1](r) for c in cols) + " |")
    r = records[0]
    commits = ", ".join(dict.fromkeys(x["git"] for x in records))
    lines.append("")
    lines.append(f"<sub>{r['gpu']}, CUDA {r['toolkit']}, driver {r['driver']}, git {commits}, {r['timestamp'][:10]}; "
                 f"results/{gpu}/records.jsonl</sub>")
    return "\n".join(lines)


def parse_block_args(text):
    p = argparse.ArgumentParser(prog="results-table")
    p.add_argument("lab")
    p.add_argument("--gpu", default="h100")
    p.add_argument("--variants", default="")
    p.add_argument("--columns", default="ms,gbps,pct,vs")
    p.add_argument("--sizes", default="")
    p.add_argument("--flags", default="")
    return p.parse_args(shlex.split(text))


BLOCK = re.compile(r"(<!-- results-table (.*?) -->\n)(.*?)(<!-- /results-table -->)", re.S)


def update(path):
    text = path.read_text()
    def repl(m):
        a = parse_block_args(m.group(2))
        return m.group(1) + table(a.lab, a.gpu, a.variants, a.columns, a.sizes, a.flags) + "\n" + m.group(4)
    new, count = BLOCK.subn(repl, text)
    path.write_text(new)
    print(f"{path}: {count} table(s) updated")


if __name__ == "__main__":
    if len(sys.argv) > 1 and sys.argv[1] == "--update":
        for f in sys.argv[2:]:
            update(pathlib.Path(f))
    else:
        a = parse_block_args(" ".join(shlex.quote(x) for x in sys.argv[1:]))
        print(table(a.lab, a.gpu, a.variants, a.columns, a.sizes, a.flags))
