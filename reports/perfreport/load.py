"""Reads routing_benchmark JSON and the anchor CSV into cells keyed by their axes."""
import csv
import json
import statistics
from dataclasses import dataclass, field

AXES = ("impl", "tokens", "experts", "topk", "dtype", "norm", "padding")


@dataclass
class Cell:
    key: tuple            # (impl, tokens, experts, topk, dtype, norm, padding)
    times_us: list = field(default_factory=list)  # one per repetition
    bytes_per_call: float = 0.0
    label: str = ""       # routing_benchmark's label, e.g. "path=register"

    @property
    def path(self):
        """The kernel path the label names ("path=NAME"), "" when it names none."""
        for token in self.label.split():
            if token.startswith("path="):
                return token[len("path="):]
        return ""

    @property
    def median_us(self):
        return statistics.median(self.times_us)

    @property
    def min_us(self):
        return min(self.times_us)

    @property
    def max_us(self):
        return max(self.times_us)


def parse_name(name):
    """routing/impl:cuda/tokens:8/... -> dict; parts without a colon are ignored."""
    parts = {}
    for part in name.split("/"):
        if ":" in part:
            k, v = part.split(":", 1)
            parts[k] = v
    missing = [a for a in AXES if a not in parts]
    if missing:
        raise ValueError(f"benchmark name {name!r} lacks {', '.join(missing)}")
    return parts


def key_of(parts):
    return (parts["impl"], int(parts["tokens"]), int(parts["experts"]), int(parts["topk"]),
            parts["dtype"], parts["norm"], parts["padding"])


def to_us(value, unit):
    return value * {"ns": 1e-3, "us": 1.0, "ms": 1e3, "s": 1e6}[unit]


def load_benchmark_json(path):
    """Returns (context, {key: Cell}); aggregate rows are ignored, repetitions kept."""
    with open(path, encoding="utf-8") as f:
        doc = json.load(f)
    cells = {}
    for row in doc.get("benchmarks", []):
        if row.get("run_type") == "aggregate" or row.get("error_occurred") or row.get("skipped"):
            continue
        if row.get("error_message"):
            continue
        key = key_of(parse_name(row["name"]))
        cell = cells.setdefault(key, Cell(key))
        cell.times_us.append(to_us(row["real_time"], row.get("time_unit", "ns")))
        cell.bytes_per_call = row.get("bytes_per_call", cell.bytes_per_call)
        cell.label = row.get("label", cell.label)
    return doc.get("context", {}), cells


def copy_gbps(context):
    """The run's device-to-device copy bandwidth (GB/s, read + write) from its context; 0 when it has none."""
    return float(context.get("d2d_copy_gbps", 0) or 0)


def load_anchor_csv(path):
    """The anchor CSV as cells of two implementations, seed-triton and torch-eager (anchor)."""
    cells, floors = {}, {}
    with open(path, encoding="utf-8") as f:
        for r in csv.DictReader(f):
            base = (int(r["tokens"]), int(r["experts"]), int(r["topk"]), r["logits_dtype"], r["normalization"], "none")
            for impl, column in (("seed-triton", "seed_triton_us"), ("torch-eager (anchor)", "torch_eager_us")):
                cells[(impl,) + base] = Cell((impl,) + base, [float(r[column])])
            floors[base] = float(r["dram_floor_us"])
    return cells, floors


def load_loader_json(path):
    """loader_benchmark rows: (context, [dict(name parts + GB_per_s + ms)])."""
    with open(path, encoding="utf-8") as f:
        doc = json.load(f)
    rows = []
    for row in doc.get("benchmarks", []):
        if row.get("run_type") == "aggregate" or row.get("error_occurred") or not row["name"].startswith("loader/"):
            continue
        parts = {k: v for k, v in (p.split(":", 1) for p in row["name"].split("/") if ":" in p)}
        parts["GB_per_s"] = row.get("GB_per_s", 0.0)
        if "pct_of_pinned_h2d" in row:
            parts["pct_of_pinned_h2d"] = row["pct_of_pinned_h2d"]
        parts["time_ms"] = to_us(row["real_time"], row.get("time_unit", "ns")) / 1000.0
        rows.append(parts)
    return doc.get("context", {}), rows


def is_loader_json(path):
    with open(path, encoding="utf-8") as f:
        doc = json.load(f)
    names = [r.get("name", "") for r in doc.get("benchmarks", [])]
    return bool(names) and all(n.startswith("loader/") for n in names)
