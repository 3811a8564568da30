"""Per shape and configuration: each run's event-timed median and CUDA-graph time (µs), and whether it passed.
File names: M_N_K_CONFIG_REP.jsonl (ab/ of session 19's calls 1-3)."""
import collections, glob, json, os, sys

runs = collections.defaultdict(lambda: collections.defaultdict(list))
for path in sorted(glob.glob(os.path.join(sys.argv[1], "*.jsonl"))):
    parts = os.path.basename(path)[:-6].split("_")
    shape, config = "x".join(parts[:3]), "_".join(parts[3:-1])
    for line in open(path):
        r = json.loads(line)
        runs[shape][(r["variant"], config)].append(
            f"{r['median_ms'] * 1e3:.2f}/{r.get('no_gap_ms', 0) * 1e3:.2f}{'' if r['passed'] else ' FAIL'}")
print("m x n x k: variant, config: event median / graph time (µs) per repetition")
for shape, rows in runs.items():
    print(shape)
    for (variant, config), times in sorted(rows.items()):
        print(f"  {variant:10} {config:10} " + "  ".join(times))
