"""The tables of `scripts/gpu_run.sh paths`: each cell timed with each path
of PATHS_FORCE forced (column "path 0" is the tier table's own choice), so
the tier table can be set from them.

Files are routing_benchmark JSON named like the step writes them,
TAG_NAME_rROUND.json, where NAME is the forced path ("0", "5", "7") or a
path with its number ("7r2": the filter path with 2 rows per warp task,
"5l4": the row-per-thread path with 4 lanes per row). A cell's time in a
column is the median over the rounds of each round's median repetition.
"""
import json
import re
import statistics

from . import load

_COLUMN = re.compile(r"_(\d+(?:[rl]\d+)?)_r\d+\.json$")
# A forced column that beats the first by more than this is marked "<==".
MARK_BELOW = 0.95


def column_of(filename):
    """'paths_5l2_r1.json' -> 'path 5l2'; ValueError for a name the step does not write."""
    m = _COLUMN.search(filename)
    if not m:
        raise ValueError(f"{filename!r} is not named TAG_PATH_rROUND.json (gpu_run.sh paths)")
    return "path " + m.group(1)


def _medians(doc):
    """{run name: median us} from the aggregate rows, or from the repetitions when there are none."""
    agg, reps = {}, {}
    for row in doc.get("benchmarks", []):
        if row.get("error_occurred") or row.get("skipped") or row.get("error_message"):
            continue
        name = row.get("run_name", row["name"]).split("/force")[0]
        us = load.to_us(row["real_time"], row.get("time_unit", "ns"))
        if row.get("run_type") == "aggregate":
            if row.get("aggregate_name") == "median":
                agg[name] = us
        else:
            reps.setdefault(name, []).append(us)
    return agg or {name: statistics.median(t) for name, t in reps.items()}


def load_runs(files):
    """(columns in the order first seen, {run name: {column: us}}), run names in the order first seen."""
    cols, runs = [], {}
    for path in files:
        col = column_of(path)
        if col not in cols:
            cols.append(col)
        with open(path, encoding="utf-8") as f:
            doc = json.load(f)
        for name, us in _medians(doc).items():
            runs.setdefault(name, {}).setdefault(col, []).append(us)
    cells = {name: {c: statistics.median(t) for c, t in row.items()} for name, row in runs.items()}
    return cols, cells


def cell_table(cols, cells):
    """One row per cell, one column per forced path ("-" where it cannot run the cell); "vs first" is the
    best column's time over the first column's, "<==" where a forced path beat the first by more than 5%."""
    lines = [f"{'cell':<80}" + "".join(f"{c:>10}" for c in cols) + "   best        vs first"]
    for name, row in cells.items():
        best = min(row, key=row.get)
        first = row.get(cols[0])
        ratio = f"{row[best] / first:.3f}" if first else "-"
        mark = "  <==" if first and row[best] < MARK_BELOW * first else ""
        lines.append(f"{name:<80}" + "".join(f"{row[c]:>10.2f}" if c in row else f"{'-':>10}" for c in cols)
                     + f"   {best:<10} {ratio}{mark}")
    return "\n".join(lines)


def ratio_grid(cols, cells):
    """The same cells folded by shape: one line per (experts, norm, dtype, topk), one field per row count,
    each field the other columns' times over the first column's, in column order ("-" where a column cannot
    run the cell or the first has no time). The form a band of the tier table is read from."""
    grid = {}
    for name, row in cells.items():
        parts = load.parse_name(name)
        shape = (int(parts["experts"]), parts["norm"], parts["dtype"], int(parts["topk"]))
        first = row.get(cols[0])
        ratios = [f"{row[c] / first:.2f}" if first and c in row else "-" for c in cols[1:]]
        grid.setdefault(shape, {})[int(parts["tokens"])] = "/".join(ratios)
    head = f"time over {cols[0]}, fields {' / '.join(cols[1:])}, by rows"
    lines = [head]
    for shape in sorted(grid):
        e, norm, dtype, k = shape
        fields = "  ".join(f"{t}:{grid[shape][t]}" for t in sorted(grid[shape]))
        lines.append(f"E={e:<4} {norm:<7} {dtype:<8} k={k:<2} {fields}")
    return "\n".join(lines)
