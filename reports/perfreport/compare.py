"""Regression check of one run against a baseline run, aware of noise, and
the per-tokens summary of the time ratio."""

import math


def regressions(new_cells, base_cells, threshold, impl=None):
    """A cell regressed when its median is slower than the baseline's by more
    than `threshold` (0.05 = 5%) and, when both have 3+ repetitions, even its
    fastest repetition is slower than the baseline's slowest."""
    found = []
    for key, new in sorted(new_cells.items()):
        if impl and key[0] != impl:
            continue
        base = base_cells.get(key)
        if base is None:
            continue
        ratio = new.median_us / base.median_us
        if ratio <= 1.0 + threshold:
            continue
        if len(new.times_us) >= 3 and len(base.times_us) >= 3 and new.min_us <= base.max_us:
            continue  # within the runs' spread
        found.append((key, base.median_us, new.median_us, ratio))
    return found


def ratio_by_tokens(new_cells, base_cells, impl=None):
    """{tokens: (geomean of new/base median time, cells, cells faster by > 3%,
    cells slower by > 3%)} over the cells both runs have, plus "all"."""
    groups = {}
    for key, new in new_cells.items():
        if impl and key[0] != impl:
            continue
        base = base_cells.get(key)
        if base is None:
            continue
        r = new.median_us / base.median_us
        for g in (key[1], "all"):
            groups.setdefault(g, []).append(r)
    out = {}
    for g, rs in groups.items():
        gm = math.exp(sum(math.log(r) for r in rs) / len(rs))
        out[g] = (gm, len(rs), sum(r < 0.97 for r in rs), sum(r > 1.03 for r in rs))
    return out
