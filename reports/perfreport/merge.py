"""Several routing_benchmark runs of the same cells, each its own process,
as one run: every repetition of every process under its cell, so that a
cell's median is taken over all of them.

On the H100 a decode cell's repetitions agree within one process while the
cell can read up to 1.5x slower in one process than in the next on the same
binary (docs/performance.md, H100 section); the median over the
repetitions of three processes is not moved by one process's shift.
Aggregate rows are dropped (they are per process); the context is the first
run's, with `processes` added.
"""
import json

# Context keys that must agree for the runs to be one measurement.
SAME = ("gpu_name", "git_commit", "preset", "l2", "pdl", "graph_launches", "force_path")


def merge(docs, names):
    """One routing_benchmark JSON document from several; ValueError names the
    first context key on which a run disagrees with the first."""
    if not docs:
        raise ValueError("no runs to merge")
    first = docs[0].get("context", {})
    for doc, name in zip(docs[1:], names[1:]):
        context = doc.get("context", {})
        for key in SAME:
            if context.get(key) != first.get(key):
                raise ValueError(f"{name}: {key} is {context.get(key)!r}, {names[0]} has {first.get(key)!r}")
    context = dict(first)
    context["processes"] = str(len(docs))
    rows = []
    for index, doc in enumerate(docs):
        for row in doc.get("benchmarks", []):
            if row.get("run_type") == "aggregate":
                continue
            rows.append(dict(row, process_index=index))
    return {"context": context, "benchmarks": rows}


def merge_files(paths, out):
    docs = []
    for path in paths:
        with open(path, encoding="utf-8") as f:
            docs.append(json.load(f))
    merged = merge(docs, paths)
    with open(out, "w", encoding="utf-8") as f:
        json.dump(merged, f, separators=(",", ":"))
    return merged
