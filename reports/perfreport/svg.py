"""A minimal SVG writer: log-log line panels and heatmaps. Standard library only."""
import math
from xml.sax.saxutils import escape

PALETTE = ["#1f77b4", "#d62728", "#2ca02c", "#9467bd", "#ff7f0e", "#8c564b", "#17becf"]


def _log_ticks(lo, hi):
    ticks, p = [], math.floor(math.log10(lo))
    while 10 ** p <= hi * 1.0001:
        if 10 ** p >= lo / 1.0001:
            ticks.append(10 ** p)
        p += 1
    return ticks or [lo, hi]


def _fmt(v):
    if v >= 1000:
        return f"{v / 1000:g}k"
    return f"{v:g}"


def line_panels(panels, title, x_label, y_label, cols=3, w=260, h=190):
    """panels: list of (panel_title, {series: [(x, y), ...]}); log-log axes per panel."""
    rows = math.ceil(len(panels) / cols)
    series_names = sorted({s for _, d in panels for s in d})
    color = {s: PALETTE[i % len(PALETTE)] for i, s in enumerate(series_names)}
    width, height = cols * w + 20, rows * h + 70 + 18 * math.ceil(len(series_names) / 3)
    out = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" font-family="sans-serif" font-size="10">',
           f'<rect width="100%" height="100%" fill="white"/>',
           f'<text x="{width / 2}" y="16" text-anchor="middle" font-size="13">{escape(title)}</text>']
    for i, (ptitle, data) in enumerate(panels):
        ox, oy = 10 + (i % cols) * w, 30 + (i // cols) * h
        l, t, pw, ph = ox + 45, oy + 16, w - 60, h - 45
        pts = [p for s in data.values() for p in s if p[0] > 0 and p[1] > 0]
        out.append(f'<text x="{ox + w / 2}" y="{oy + 10}" text-anchor="middle">{escape(ptitle)}</text>')
        out.append(f'<rect x="{l}" y="{t}" width="{pw}" height="{ph}" fill="none" stroke="#999"/>')
        if not pts:
            continue
        xlo, xhi = min(p[0] for p in pts), max(p[0] for p in pts)
        ylo, yhi = min(p[1] for p in pts) / 1.3, max(p[1] for p in pts) * 1.3
        xlo, xhi = (xlo / 2, xhi * 2) if xlo == xhi else (xlo, xhi)
        fx = lambda x: l + (math.log(x) - math.log(xlo)) / (math.log(xhi) - math.log(xlo)) * pw
        fy = lambda y: t + ph - (math.log(y) - math.log(ylo)) / (math.log(yhi) - math.log(ylo)) * ph
        for y in _log_ticks(ylo, yhi):
            out.append(f'<line x1="{l}" x2="{l + pw}" y1="{fy(y):.1f}" y2="{fy(y):.1f}" stroke="#eee"/>')
            out.append(f'<text x="{l - 3}" y="{fy(y) + 3:.1f}" text-anchor="end">{_fmt(y)}</text>')
        for x in _log_ticks(xlo, xhi):
            out.append(f'<text x="{fx(x):.1f}" y="{t + ph + 11}" text-anchor="middle">{_fmt(x)}</text>')
        for s, series in sorted(data.items()):
            series = sorted(p for p in series if p[0] > 0 and p[1] > 0)
            if not series:
                continue
            path = " ".join(f"{fx(x):.1f},{fy(y):.1f}" for x, y in series)
            out.append(f'<polyline points="{path}" fill="none" stroke="{color[s]}" stroke-width="1.5"/>')
        out.append(f'<text x="{ox + w / 2}" y="{t + ph + 24}" text-anchor="middle" fill="#555">{escape(x_label)}</text>')
        out.append(f'<text x="{ox + 8}" y="{t + ph / 2}" transform="rotate(-90 {ox + 8} {t + ph / 2})" text-anchor="middle" fill="#555">{escape(y_label)}</text>')
    ly = 30 + rows * h + 10
    for i, s in enumerate(series_names):
        x, y = 20 + (i % 3) * 280, ly + (i // 3) * 18
        out.append(f'<line x1="{x}" x2="{x + 20}" y1="{y}" y2="{y}" stroke="{color[s]}" stroke-width="2"/>')
        out.append(f'<text x="{x + 25}" y="{y + 4}">{escape(s)}</text>')
    out.append("</svg>")
    return "\n".join(out)


def heatmap(title, rows, cols, values, fmt="{:.0f}", lo=0.0, hi=100.0, row_label="", col_label=""):
    """values[(r, c)] -> number; green is high. Missing cells are grey."""
    cw, ch, left, top = 64, 22, 90, 40
    width, height = left + cw * len(cols) + 20, top + ch * len(rows) + 40
    out = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" font-family="sans-serif" font-size="10">',
           f'<rect width="100%" height="100%" fill="white"/>',
           f'<text x="{width / 2}" y="14" text-anchor="middle" font-size="12">{escape(title)}</text>',
           f'<text x="{left - 5}" y="{top - 6}" text-anchor="end" fill="#555">{escape(row_label)} \\ {escape(col_label)}</text>']
    for j, c in enumerate(cols):
        out.append(f'<text x="{left + j * cw + cw / 2}" y="{top - 6}" text-anchor="middle">{escape(str(c))}</text>')
    for i, r in enumerate(rows):
        out.append(f'<text x="{left - 5}" y="{top + i * ch + 15}" text-anchor="end">{escape(str(r))}</text>')
        for j, c in enumerate(cols):
            v = values.get((r, c))
            if v is None:
                fill, label = "#ddd", ""
            else:
                f = max(0.0, min(1.0, (v - lo) / (hi - lo))) if hi > lo else 0.5
                fill = f"rgb({int(230 - 190 * f)},{int(90 + 130 * f)},{int(80 + 40 * f)})"
                label = fmt.format(v)
            out.append(f'<rect x="{left + j * cw}" y="{top + i * ch}" width="{cw - 2}" height="{ch - 2}" fill="{fill}"/>')
            out.append(f'<text x="{left + j * cw + cw / 2}" y="{top + i * ch + 14}" text-anchor="middle">{label}</text>')
    out.append("</svg>")
    return "\n".join(out)
