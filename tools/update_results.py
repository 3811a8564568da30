#!/usr/bin/env python3
"""Merges the records of a GPU run into results/<gpu>/records.jsonl.

A lab's records in the run replace all earlier records of that lab (so every
lab's rows come from one run of that lab, with the ceiling and the baseline it
measured in that run); labs the run did not include keep their records.
Also copies device.txt (appended under the run's date), the streams timeline,
and remakes records.csv (git does not track it: `make csv` makes it on demand).

usage: update_results.py RUN_DIR [--gpu h100]
"""
import argparse
import json
import pathlib
import shutil
import subprocess
import sys

from grader.records import read_records  # tools/grader/records.py

parser = argparse.ArgumentParser()
parser.add_argument("run_dir")
parser.add_argument("--gpu", default="h100")
args = parser.parse_args()

run = pathlib.Path(args.run_dir)
dest = pathlib.Path(__file__).resolve().parent.parent / "results" / args.gpu
dest.mkdir(parents=True, exist_ok=True)

new = read_records(run / "records.jsonl")
labs = {r["lab"] for r in new}
old_path = dest / "records.jsonl"
old = []
if old_path.exists():
    old = read_records(old_path)
kept = [r for r in old if r["lab"] not in labs]
merged = sorted(kept + new, key=lambda r: r["lab"])  # stable: a lab's rows keep their run order
old_path.write_text("".join(json.dumps(r, separators=(",", ":")) + "\n" for r in merged))
print(f"{len(new)} records of {len(labs)} labs replaced; {len(kept)} kept; {len(merged)} in {old_path}")

device = run / "device.txt"
if device.exists():
    text = device.read_text()
    (dest / "device.txt").write_text(text)
timeline = run / "08_streams_timeline.csv"
if timeline.exists():
    shutil.copy(timeline, dest / timeline.name)
to_csv = pathlib.Path(__file__).resolve().parent / "records_to_csv.py"
if to_csv.exists():
    subprocess.run([sys.executable, str(to_csv), str(old_path), "-o", str(dest / "records.csv")], check=True)
