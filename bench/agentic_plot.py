#!/usr/bin/env python3
"""TTFT against turn, one line pair per policy (p90 solid, p50 dashed), from
switchyard-agentic reports (--json-out), as one self-contained SVG on stdout.

    python3 bench/agentic_plot.py /tmp/out/agentic-*.json > ttft.svg
"""
import json
import math
import sys

COLORS = ["#1f77b4", "#d62728", "#2ca02c", "#9467bd", "#ff7f0e", "#8c564b", "#17becf"]
W, H, L, R, T, B = 760, 440, 70, 190, 40, 50


def main(paths):
    runs = []
    for p in paths:
        r = json.load(open(p))
        rows = [t for t in r.get("ttft_ms_by_turn", []) if t.get("p50") is not None]
        runs.append((r.get("label", p), rows, r.get("valid", False)))
    pts = [v for _, rows, _ in runs for t in rows for v in (t["p50"], t["p90"]) if v and v > 0]
    turns = [t["turn"] for _, rows, _ in runs for t in rows]
    if not pts:
        sys.exit("no TTFT rows in the reports")
    lo, hi = min(pts), max(pts)
    log = hi / lo > 20
    if log:
        lo, hi = 10 ** math.floor(math.log10(lo)), 10 ** math.ceil(math.log10(hi))
    else:
        lo, hi = 0, hi * 1.1
    tmax = max(turns) if turns else 1

    def x(turn):
        return L + (W - L - R) * (turn / max(1, tmax))

    def y(v):
        f = (math.log10(v) - math.log10(lo)) / (math.log10(hi) - math.log10(lo)) if log else (v - lo) / (hi - lo)
        return H - B - (H - T - B) * f

    out = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{W}" height="{H}" font-family="sans-serif" font-size="12">',
           f'<rect width="{W}" height="{H}" fill="white"/>',
           f'<text x="{L}" y="22" font-size="14">TTFT by turn (ms{", log scale" if log else ""}): p90 solid, p50 dashed</text>',
           f'<line x1="{L}" y1="{H - B}" x2="{W - R}" y2="{H - B}" stroke="black"/>',
           f'<line x1="{L}" y1="{T}" x2="{L}" y2="{H - B}" stroke="black"/>']
    ticks = [lo * 10 ** k for k in range(int(round(math.log10(hi / lo))) + 1)] if log else [lo + (hi - lo) * k / 5 for k in range(6)]
    for v in ticks:
        out.append(f'<line x1="{L}" y1="{y(v):.1f}" x2="{W - R}" y2="{y(v):.1f}" stroke="#ddd"/>')
        out.append(f'<text x="{L - 6}" y="{y(v) + 4:.1f}" text-anchor="end">{v:.3g}</text>')
    step = max(1, tmax // 10)
    for t in range(0, tmax + 1, step):
        out.append(f'<text x="{x(t):.1f}" y="{H - B + 16}" text-anchor="middle">{t}</text>')
    out.append(f'<text x="{(L + W - R) / 2}" y="{H - 12}" text-anchor="middle">turn</text>')
    for i, (label, rows, valid) in enumerate(runs):
        c = COLORS[i % len(COLORS)]
        for key, dash in (("p90", ""), ("p50", ' stroke-dasharray="5,4"')):
            pts = " ".join(f"{x(t['turn']):.1f},{y(max(t[key], lo if log else 0)):.1f}" for t in rows if t[key])
            out.append(f'<polyline points="{pts}" fill="none" stroke="{c}" stroke-width="2"{dash}/>')
        ly = T + 18 * i
        out.append(f'<line x1="{W - R + 12}" y1="{ly}" x2="{W - R + 36}" y2="{ly}" stroke="{c}" stroke-width="2"/>')
        out.append(f'<text x="{W - R + 42}" y="{ly + 4}">{label}{"" if valid else " (INVALID)"}</text>')
    out.append("</svg>")
    print("\n".join(out))


if __name__ == "__main__":
    main(sys.argv[1:])
