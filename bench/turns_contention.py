#!/usr/bin/env python3
"""Decode time per token by how many replicas decode at once, from switchyard-agentic's
per-turn CSVs (--turns-out) written before the report had `decode_contention` (8c59870)
and the CSV `completion_tokens`: a turn's decode span is first token to done, its tokens
the mean reply less one (REPLY, 79 for the default 32-128) unless the CSV has
completion_tokens, and the replicas decoding at once are counted at 20 points of the span.

    python3 bench/turns_contention.py RUN.turns.csv ...
"""
import csv
import statistics as st
import sys
from collections import defaultdict

REPLY = 79


def turns(path):
    rows = [r for r in csv.DictReader(open(path)) if r["ok"] == "1" and float(r["first_token_s"]) > 0]
    spans = []
    for r in rows:
        a, b = float(r["first_token_s"]), float(r["done_s"])
        tokens = int(r["completion_tokens"]) - 1 if r.get("completion_tokens") else REPLY
        spans.append((a, b, r["replica"], tokens))
    out = []
    for a, b, replica, tokens in spans:
        if b - a < 0.5 or tokens < 1:
            continue
        counts = []
        for k in range(20):
            t = a + (b - a) * (k + 0.5) / 20
            counts.append(len({s[2] for s in spans if s[0] <= t < s[1]}))
        out.append((st.mean(counts), (b - a) * 1000 / tokens))
    return out


for path in sys.argv[1:]:
    ts = turns(path)
    by = defaultdict(list)
    for n, ms in ts:
        by[round(n)].append(ms)
    print(f"{path}: {len(ts)} turns, mean replicas decoding {st.mean(n for n, _ in ts):.2f}")
    print("  ms/token (mean) by replicas decoding: " +
          "  ".join(f"{k}: {st.mean(v):.1f} ({len(v)})" for k, v in sorted(by.items())))
