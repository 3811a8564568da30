"""A lab's performance test: which timed record is judged, its fraction of the
baseline or the ceiling, and the points (tools/grading.toml)."""
from __future__ import annotations

from . import judge

def baseline_variants(records):
    """The library baselines: a record whose ceiling is itself, or a variant named
    as another record's baseline."""
    names = {r["variant"] for r in records if r.get("ceiling") and r.get("ceiling") == r.get("variant")}
    return names | {r["baseline"] for r in records if r.get("baseline")}


def size_product(record):
    product = 1
    for v in record.get("size", {}).values():
        product *= v
    return product


def size_text(record):
    return " ".join(f"{k}={v}" for k, v in record.get("size", {}).items())


def judge_performance(records, cfg):
    """The performance test of one lab: which record, its fraction, the score."""
    points = cfg["performance"]
    if points <= 0:
        return {}
    timed = [r for r in records if r.get("timed") and r.get("passed")]
    metric = cfg["metric"]
    if metric == "auto":
        metric = "vs_baseline" if any(r.get("vs_baseline") for r in timed) else "pct_of_ceiling"

    def fraction(r):
        v = r.get(metric)
        if not v:
            return None
        return v / 100.0 if metric == "pct_of_ceiling" else v

    baselines = baseline_variants(records)
    # A result faster than the hardware can be is a wrong measurement (a kernel
    # that skips its work when it finds the output already right, a wrong byte
    # count): no performance points for the lab, whatever the threshold.
    impossible = [r for r in timed if r.get("implausible") and r["variant"] not in baselines]
    if impossible:
        r = impossible[0]
        return {"score": 0, "passed": False, "metric": metric, "threshold": cfg["threshold"], "implausible": True,
                "text": f"IMPLAUSIBLE: {r['variant']} at {size_text(r)}: {r.get('implausible_why', 'faster than the hardware')}"
                        f" -> 0/{points:g}"}
    candidates = [r for r in timed if r["variant"] not in baselines and fraction(r) is not None]
    if cfg["variant"] != "best":
        candidates = [r for r in candidates if r["variant"] == cfg["variant"]]
    # Plausibility needs declared work: a time whose bytes and FLOPs nobody
    # declared cannot be held against the hardware's limits.
    undeclared = [r for r in candidates if not judge.declared_work(r)]
    candidates = [r for r in candidates if judge.declared_work(r)]
    if undeclared and not candidates:
        r = undeclared[0]
        return {"score": 0, "passed": False, "metric": metric, "threshold": cfg["threshold"],
                "text": f"{r['variant']} at {size_text(r)} declares no work (bytes or FLOPs), so no plausibility "
                        f"gate holds its time -> 0/{points:g}"}
    what = "the baseline" if metric == "vs_baseline" else "the ceiling"
    if not candidates:
        wanted = f"variant {cfg['variant']}" if cfg["variant"] != "best" else "any variant"
        return {"score": 0, "passed": False, "metric": metric, "threshold": cfg["threshold"],
                "text": f"no {metric} measured for {wanted} (check 'variant'/'metric' in tools/grading.toml)"}
    largest = max(size_product(r) for r in candidates)
    best = max((r for r in candidates if size_product(r) == largest), key=fraction)
    value = fraction(best)
    threshold = cfg["threshold"]
    score = round(points * min(1.0, value / threshold), 2)
    against = best.get("baseline") if metric == "vs_baseline" else best.get("ceiling")
    return {"score": score, "passed": value >= threshold, "metric": metric, "variant": best["variant"],
            "size": size_text(best), "value": value, "threshold": threshold,
            "text": f"{best['variant']} at {size_text(best)}: {value:.2f} of {what} ({against}), "
                    f"threshold {threshold:.2f} -> {score:g}/{points:g}"}


