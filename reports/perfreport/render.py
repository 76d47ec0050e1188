"""Builds the Markdown report and its SVG plots from loaded cells."""
import math
import os
from collections import defaultdict

from . import svg

DEFAULT_COPY_GBPS = 3000.0  # the anchor's DRAM floor assumption (3.0 TB/s)


def geomean(xs):
    xs = [x for x in xs if x > 0]
    return math.exp(sum(math.log(x) for x in xs) / len(xs)) if xs else float("nan")


def _group(cells):
    """(dtype, norm, padding) -> (experts, topk) -> impl -> [(tokens, us)]"""
    g = defaultdict(lambda: defaultdict(lambda: defaultdict(list)))
    for (impl, t, e, k, dtype, norm, pad), c in cells.items():
        g[(dtype, norm, pad)][(e, k)][impl].append((t, c.median_us))
    return g


def speedups(cells, fast_impl, slow_impl):
    """{base_key: slow/fast} over cells both have."""
    out = {}
    for key, c in cells.items():
        if key[0] != fast_impl:
            continue
        other = cells.get((slow_impl,) + key[1:])
        if other:
            out[key[1:]] = other.median_us / c.median_us
    return out


def render(cells, context, out_dir, title, command=None, anchor_floors=None, extra_sections=None):
    """extra_sections: Markdown lines appended at the end (the io floor table)."""
    os.makedirs(out_dir, exist_ok=True)
    copy_gbps = float(context.get("d2d_copy_gbps", DEFAULT_COPY_GBPS))
    impls = sorted({k[0] for k in cells})
    md = [f"# {title}", ""]
    if command:
        md += ["Made by:", "", "```", command, "```", ""]
    ctx_keys = ["gpu_name", "gpu_sm_clock_mhz", "gpu_mem_clock_mhz", "cuda_driver_version",
                "cuda_runtime_version", "d2d_copy_gbps", "git_commit", "build_type", "preset", "l2", "pdl",
                "graph_launches", "processes", "date", "host_name"]
    md += ["| context | value |", "|---|---|"]
    md += [f"| {k} | {context[k]} |" for k in ctx_keys if k in context]
    over = f"the repetitions of {context['processes']} processes" if "processes" in context else "repetitions"
    md += ["", f"Implementations: {', '.join(impls)}. Times are medians of {over}, microseconds per call.", ""]

    groups = _group(cells)
    for (dtype, norm, pad), by_ek in sorted(groups.items()):
        panels = []
        for (e, k), series in sorted(by_ek.items()):
            panels.append((f"E={e} k={k}", dict(series)))
        name = f"time_{dtype}_{norm}_{pad}.svg"
        with open(os.path.join(out_dir, name), "w", encoding="utf-8") as f:
            f.write(svg.line_panels(panels, f"time per call, {dtype} {norm} padding={pad}", "tokens", "us"))
        md += [f"## {dtype}, {norm}, padding {pad}", "", f"![time per call]({name})", ""]

        # Percent of the DRAM floor for the CUDA kernel, at each k present.
        for k in sorted({k for (_, k) in by_ek}):
            values, rows, cols = {}, set(), set()
            for (impl, t, e, kk, d, n, p), c in cells.items():
                if impl != "cuda" or (d, n, p, kk) != (dtype, norm, pad, k) or c.bytes_per_call <= 0:
                    continue
                floor_us = c.bytes_per_call / (copy_gbps * 1e9) * 1e6
                values[(e, t)] = 100.0 * floor_us / c.median_us
                rows.add(e)
                cols.add(t)
            if not values:
                continue
            hname = f"floor_{dtype}_{norm}_{pad}_k{k}.svg"
            with open(os.path.join(out_dir, hname), "w", encoding="utf-8") as f:
                f.write(svg.heatmap(f"cuda: % of DRAM floor ({copy_gbps:.0f} GB/s copy), {dtype} {norm} k={k}",
                                    sorted(rows), sorted(cols), values, row_label="experts", col_label="tokens"))
            md += [f"![percent of DRAM floor, k={k}]({hname})", ""]

    md += ["## Speedups of the CUDA kernel", ""]
    md += ["| over | cells | geometric mean | min | cells slower |", "|---|---|---|---|---|"]
    for other in [i for i in impls if i != "cuda"]:
        s = speedups(cells, "cuda", other)
        if not s:
            continue
        slower = sum(1 for v in s.values() if v < 1.0)
        md.append(f"| {other} | {len(s)} | {geomean(s.values()):.2f}x | {min(s.values()):.2f}x | {slower} |")
        # Heatmap of speedup over E x T at k=8 (or the largest k), fp32 sigmoid first.
        for (dtype, norm, pad) in sorted(groups):
            ks = sorted({key[2] for key in s if key[3:6] == (dtype, norm, pad)})
            if not ks:
                continue
            k = 8 if 8 in ks else ks[-1]
            vals = {(key[1], key[0]): v for key, v in s.items() if key[2] == k and key[3:6] == (dtype, norm, pad)}
            slug = other.replace(" ", "_").replace("(", "").replace(")", "")
            sname = f"speedup_{slug}_{dtype}_{norm}_{pad}_k{k}.svg"
            with open(os.path.join(out_dir, sname), "w", encoding="utf-8") as f:
                f.write(svg.heatmap(f"cuda speedup over {other}, {dtype} {norm} k={k}",
                                    sorted({r for r, _ in vals}), sorted({c for _, c in vals}), vals,
                                    fmt="{:.1f}x", lo=0.5, hi=4.0, row_label="experts", col_label="tokens"))
    md.append("")
    for other in [i for i in impls if i != "cuda"]:
        s = speedups(cells, "cuda", other)
        slow = sorted((v, key) for key, v in s.items() if v < 1.0)
        if slow:
            md += [f"Cells where cuda is slower than {other} (speedup, tokens, experts, topk, dtype, norm):", ""]
            md += [f"- {v:.2f}x at T={key[0]} E={key[1]} k={key[2]} {key[3]} {key[4]}" for v, key in slow[:40]]
            md.append("")
    md += list(extra_sections or [])
    with open(os.path.join(out_dir, "README.md"), "w", encoding="utf-8") as f:
        f.write("\n".join(md) + "\n")
    return os.path.join(out_dir, "README.md")


def render_loader(context, rows, out_dir, title, command=None):
    """A table of GB/s per (implementation, tp, cache, device), with the fast
    path's speedup over the per-expert baseline."""
    os.makedirs(out_dir, exist_ok=True)
    md = [f"# {title}", ""]
    if command:
        md += ["Made by:", "", "```", command, "```", ""]
    md += ["| context | value |", "|---|---|"] + [f"| {k} | {v} |" for k, v in sorted(context.items())] + [""]
    with_link = any("pct_of_pinned_h2d" in r for r in rows)  # CUDA runs that measured the link
    md += ["| impl | tp | cache | device | ms per load | GB/s |" + (" % of pinned H2D |" if with_link else ""),
           "|---|---|---|---|---|---|" + ("---|" if with_link else "")]
    for r in rows:
        link = f" {r['pct_of_pinned_h2d']:.0f}% |" if "pct_of_pinned_h2d" in r else (" - |" if with_link else "")
        md.append(f"| {r.get('impl')} | {r.get('tp')} | {r.get('cache')} | {r.get('device')} | {r['time_ms']:.2f} | {r['GB_per_s']:.2f} |" + link)
    # Each fast path and the per-expert baseline it is measured against.
    baseline_of = {"block-copies": "per-expert-rows", "staged-engine": "per-expert-memcpy2d"}
    md += ["", "| fast path | tp | cache | device | speedup over its per-expert baseline |", "|---|---|---|---|---|"]
    by_key = {(r.get("impl"), r.get("tp"), r.get("cache"), r.get("device")): r for r in rows}
    for (impl, tp, cache, device), r in sorted(by_key.items(), key=lambda kv: tuple(map(str, kv[0]))):
        base = by_key.get((baseline_of.get(impl), tp, cache, device))
        if base and base["GB_per_s"] > 0:
            md.append(f"| {impl} | {tp} | {cache} | {device} | {r['GB_per_s'] / base['GB_per_s']:.2f}x |")
    path = os.path.join(out_dir, "README.md")
    with open(path, "w", encoding="utf-8") as f:
        f.write("\n".join(md) + "\n")
    return path
