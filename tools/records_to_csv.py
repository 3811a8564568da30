#!/usr/bin/env python3
"""Turns the JSON records of the lab programs (one object per line, as written
by --json) into one CSV table, one row per record.

Nested fields become columns of their own: size {"m":..,"n":..} becomes
size_m, size_n; resources {...} becomes res_registers, res_occupancy, ...;
extra {...} becomes extra_NAME. Labs have different size names, so the columns
are the union over all records; a record without a field leaves it empty.

usage: records_to_csv.py RECORDS.jsonl [-o OUT.csv]   (default: RECORDS.csv)
"""
import argparse
import csv
import sys
from pathlib import Path

from grader.records import read_records  # tools/grader/records.py

# The scalar fields of a record, in the order of common/src/report.cpp.
FIELDS = [
    "lab", "variant", "gpu", "cc", "bytes", "flops", "timed", "runs",
    "median_ms", "min_ms", "mean_ms", "stddev_ms", "ci95_ms", "stop",
    "gbps", "gflops", "ceiling", "ceiling_value", "pct_of_ceiling", "suspect",
    "baseline", "baseline_ms", "vs_baseline", "max_abs_err", "rel_err",
    "tolerance", "tolerance_rel", "passed", "failure", "seed", "git",
    "toolkit", "driver", "timestamp",
]
NESTED = {"size": "size_", "resources": "res_", "extra": "extra_"}


def flatten(record):
    row = {}
    for key, value in record.items():
        if key in NESTED and isinstance(value, dict):
            for k, v in value.items():
                row[NESTED[key] + k] = v
        else:
            row[key] = value
    # Booleans as 1/0, missing numbers (JSON null) as empty cells: both read
    # directly into gnuplot, spreadsheets and pandas.
    return {k: (int(v) if isinstance(v, bool) else "" if v is None else v) for k, v in row.items()}


def columns(rows):
    present = set().union(*(r.keys() for r in rows)) if rows else set()
    head = [f for f in FIELDS[:2] if f in present]
    sizes = sorted(k for k in present if k.startswith("size_"))
    rest = [f for f in FIELDS[2:] if f in present]
    known = set(head) | set(sizes) | set(rest)
    nested = sorted(k for k in present - known if k.startswith(("res_", "extra_")))
    unknown = sorted(present - known - set(nested))  # fields newer than this script
    return head + sizes + rest + nested + unknown


def write_csv(records, path):
    rows = [flatten(r) for r in records]
    with open(path, "w", newline="") as f:
        writer = csv.DictWriter(f, fieldnames=columns(rows), restval="")
        writer.writeheader()
        writer.writerows(rows)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("records", help="a .jsonl file of records (e.g. results/h100/records.jsonl)")
    parser.add_argument("-o", "--out", help="the CSV to write (default: the records file with .csv)")
    args = parser.parse_args()
    out = Path(args.out) if args.out else Path(args.records).with_suffix(".csv")
    try:
        records = read_records(args.records)
    except (OSError, ValueError) as e:
        print(f"records_to_csv: {e}", file=sys.stderr)
        return 2
    write_csv(records, out)
    print(f"{len(records)} records -> {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
