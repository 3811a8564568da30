"""Per-call durations and gaps from trace.cpp's lines (kernels and memsets, GPU ns):
for cuBLAS's kernel and lab 30's, inside CUDA graphs (graph id != 0) and outside."""
import gzip, statistics, sys

def med(xs):
    return statistics.median(xs) / 1e3 if xs else float("nan")

for path in sys.argv[1:]:
    rows = []
    for line in gzip.open(path, "rt"):
        kind, start, end, stream, x, graph, name = line.split(maxsplit=6)
        rows.append((int(start), int(end), kind, int(graph), name.strip()))
    rows.sort()
    print(path)
    for label, match in (("cuBLAS", "nvjet"), ("ours", "gemm_wgmma")):
        for in_graph in (False, True):
            # the calls of this variant: its kernels, each with the memset just before it (if any)
            seq = [r for r in rows if (match in r[4]) and ((r[3] != 0) == in_graph)]
            if len(seq) < 3:
                continue
            dur = [e - s for s, e, *_ in seq]
            period = [b[0] - a[0] for a, b in zip(seq, seq[1:])]
            idle = [b[0] - a[1] for a, b in zip(seq, seq[1:])]
            # memsets between consecutive kernels of this variant
            mem = [r for r in rows if r[2] == "M" and (r[3] != 0) == in_graph]
            print(f"  {label:6} {'graph' if in_graph else 'stream':6} n={len(seq):4} kernel {med(dur):7.2f} us"
                  f"  start-to-start {med(period):7.2f}  end-to-next-start {med(idle):6.2f}  (min {min(idle)/1e3:6.2f})")
