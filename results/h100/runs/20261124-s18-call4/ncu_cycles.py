"""Summarise Nsight Compute SpeedOfLight text reports: per shape and kernel, elapsed SM cycles and duration."""
import collections, glob, re, statistics, sys
rows = collections.defaultdict(lambda: collections.defaultdict(list))
for d in sys.argv[1:]:
    for f in sorted(glob.glob(d + '/ncu_*.txt')):
        shape = re.sub(r'_\d+$', '', f.split('/')[-1][4:-4])
        for b in re.split(r'\n  (?=\S)', open(f).read()):
            m = re.match(r'(void gemm_wgmma_tma_kernel<[^>]*>>|nvjet\S+)', b)
            if not m: continue
            name = 'wgmma_tma' if m.group(1).startswith('void') else m.group(1)
            cyc = float(re.search(r'Elapsed Cycles\s+cycle\s+([\d,]+)', b).group(1).replace(',', ''))
            dur = re.search(r'Duration\s+(\S+)\s+([\d\.]+)', b)
            us = float(dur.group(2)) * (1000 if dur.group(1) == 'ms' else 1)
            rows[shape][name].append((cyc, us))
for shape in rows:
    k = rows[shape]
    ours = k.pop('wgmma_tma', [])
    for name, v in k.items():
        oc = statistics.median(c for c, _ in ours); nc = statistics.median(c for c, _ in v)
        print(f"{shape:22s} wgmma_tma cycles {oc:11.0f} ({min(c for c,_ in ours):.0f}-{max(c for c,_ in ours):.0f}, n={len(ours)}) "
              f"{name} cycles {nc:11.0f} ({min(c for c,_ in v):.0f}-{max(c for c,_ in v):.0f}, n={len(v)})  cuBLAS/ours = {nc/oc:.3f}  "
              f"us {statistics.median(u for _,u in ours):.2f} vs {statistics.median(u for _,u in v):.2f}")
