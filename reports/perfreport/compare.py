"""Regression check of one run against a baseline run, aware of noise."""


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
