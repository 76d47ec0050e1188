"""Regression check of one run against a baseline run, aware of noise, and
the summary of the time ratio per tokens value (or any other axis)."""

from .render import geomean


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


# The axes of a cell key, (impl, tokens, experts, topk, dtype, norm, padding).
FIELDS = ("impl", "tokens", "experts", "topk", "dtype", "norm", "padding")
# What the summary can be grouped by and --where can select on: the axes and
# the kernel path the new run's label names (routing_benchmark's path=NAME),
# so that an A/B says which path got faster.
PATH = "path"
GROUPS = FIELDS[1:] + (PATH,)


def parse_where(terms):
    """["experts=8", "path=filter"] -> {2: "8", "path": "filter"}; ValueError naming a bad term."""
    where = {}
    names = FIELDS + (PATH,)
    for term in terms or []:
        field, sep, value = term.partition("=")
        if not sep or field not in names:
            raise ValueError(f"--where {term!r}: expected FIELD=VALUE with FIELD one of {', '.join(names)}")
        where[PATH if field == PATH else FIELDS.index(field)] = value
    return where


def _matches(key, cell, where):
    return all((cell.path if i == PATH else str(key[i])) == v for i, v in where.items())


def common_ratios(new_cells, base_cells, impl=None, where=None):
    """[(key, base median, new median, new/base)] over the cells both runs
    have that match `impl` and every {field index or "path": value} of
    `where` (the path is the new run's)."""
    out = []
    for key, new in sorted(new_cells.items()):
        if impl and key[0] != impl:
            continue
        if where and not _matches(key, new, where):
            continue
        base = base_cells.get(key)
        if base is None:
            continue
        out.append((key, base.median_us, new.median_us, new.median_us / base.median_us))
    return out


def ratio_by(new_cells, base_cells, impl=None, group="tokens", where=None):
    """{value of `group` (tokens by default; "path": the new run's path, "-"
    for a cell without one): (geomean of new/base median time, cells, cells
    faster by > 3%, cells slower by > 3%)} over the cells both runs have,
    plus "all"."""
    groups = {}
    for key, _, _, r in common_ratios(new_cells, base_cells, impl, where):
        value = (new_cells[key].path or "-") if group == PATH else key[FIELDS.index(group)]
        for g in (value, "all"):
            groups.setdefault(g, []).append(r)
    out = {}
    for g, rs in groups.items():
        gm = geomean(rs)
        out[g] = (gm, len(rs), sum(r < 0.97 for r in rs), sum(r > 1.03 for r in rs))
    return out
