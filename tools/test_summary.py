#!/usr/bin/env python3
"""Prints the closing line of a test run, 'N passed, N failed, N skipped', from
Meson's build/meson-logs/testlog.json, and exits 1 when anything failed."""
import json
import sys

path = sys.argv[1] if len(sys.argv) > 1 else "build/meson-logs/testlog.json"
counts = {"OK": 0, "SKIP": 0}
failed = []
try:
    with open(path) as f:
        for line in f:
            t = json.loads(line)
            result = t["result"]
            if result in counts:
                counts[result] += 1
            elif result == "EXPECTEDFAIL":
                counts["OK"] += 1
            else:
                failed.append(f"{t['name']} ({result})")
except FileNotFoundError:
    print(f"no test log at {path}: the tests did not run")
    print("0 passed, 1 failed")
    sys.exit(1)
for name in failed:
    print(f"  failed: {name}")
if counts["SKIP"]:
    print(f"  ({counts['SKIP']} skipped: GPU tests exit 77 on a machine without a usable GPU)")
print(f"{counts['OK']} passed, {len(failed)} failed, {counts['SKIP']} skipped")
sys.exit(1 if failed else 0)
