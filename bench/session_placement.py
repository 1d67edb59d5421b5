#!/usr/bin/env python3
"""Where new sessions went, from switchyard-agentic's per-turn CSVs (--turns-out): for
each session's first turn, the live sessions per replica when it was sent (a session is
live with a turn in flight or one that ended within IDLE_S, 15 s, the prefix router's
session_idle_s; it counts on the replica of its latest turn), by the client's clock. It
lists the new sessions sent to a replica holding more live sessions than the least
loaded one, which the prefix router's placement by count should not do (its own view
differs from the client's by the clocks' few milliseconds, and did by hedges, ba0b9f0).
With the CSV's `attempts` column (the gateway's x-switchyard-attempts), each listed
placement also names the hedged or retried turns (attempts > 1) sent before it whose
session had sent no later turn yet: what a router that re-homed sessions on hedges
would have counted wrong. Then it lists the sessions whose turns ran on more than one
replica, each with its turns' replicas in order (`3:0111`: session 3's first turn on r0,
the next three on r1).

    python3 bench/session_placement.py RUN.turns.csv ...
"""
import csv
import sys
from collections import Counter, defaultdict

IDLE_S = 15.0


def placements(path):
    rows = list(csv.DictReader(open(path)))
    replicas = sorted({r["replica"] for r in rows if r["replica"]})
    sessions = defaultdict(list)
    for r in rows:
        sessions[int(r["session"])].append(r)
    for turns in sessions.values():
        turns.sort(key=lambda r: int(r["turn"]))
    out = []
    for s, turns in sorted(sessions.items()):
        t = float(turns[0]["issued_s"])
        live = Counter()
        for other, theirs in sessions.items():
            sent = [x for x in theirs if float(x["issued_s"]) < t]
            if other == s or not sent:
                continue
            in_flight = any(t < float(x["done_s"]) for x in sent)
            last = max([float(x["done_s"]) for x in sent if float(x["done_s"]) <= t] + [float(sent[-1]["issued_s"])])
            if in_flight or t - last <= IDLE_S:
                live[sent[-1]["replica"]] += 1
        counts = [live[r] for r in replicas]
        out.append((s, t, turns[0]["replica"], replicas, counts, open_hedges(sessions, s, t)))
    return out


def open_hedges(sessions, s, t):
    """Turns of other sessions sent before t with more than one attempt, whose session
    sent no later turn before t; None when the CSV has no attempts column."""
    found = []
    for other, theirs in sessions.items():
        sent = [x for x in theirs if float(x["issued_s"]) < t]
        if other == s or not sent:
            continue
        if "attempts" not in sent[-1]:
            return None
        if int(sent[-1]["attempts"]) > 1:
            found.append(f"session {other} turn {sent[-1]['turn']} on {sent[-1]['replica']} ({sent[-1]['attempts']} attempts)")
    return found


def moved_sessions(path):
    """Sessions whose turns ran on more than one replica: (session, replicas in turn order)."""
    sessions = defaultdict(list)
    for r in csv.DictReader(open(path)):
        sessions[int(r["session"])].append(r)
    out = []
    for s, turns in sorted(sessions.items()):
        turns.sort(key=lambda r: int(r["turn"]))
        replicas = [r["replica"] for r in turns]
        if len({x for x in replicas if x}) > 1:
            out.append((s, "".join(x[1:] if x.startswith("r") else "-" for x in replicas)))
    return out


def main(paths):
    for path in paths:
        placed = placements(path)
        over = [p for p in placed if p[4][p[3].index(p[2])] > min(p[4])]
        print(f"{path}: {len(over)} of {len(placed)} new sessions sent to a replica with more live sessions than the least")
        for s, t, to, reps, counts, hedges in over:
            held = " ".join(f"{r}:{c}" for r, c in zip(reps, counts))
            print(f"  session {s} at {t:.1f} s to {to}; live sessions {held}")
            if hedges is not None:
                print(f"    hedged or retried turns open then: {'; '.join(hedges) if hedges else 'none'}")
        moved = moved_sessions(path)
        print(f"  sessions that changed replica: {len(moved)}" + "".join(f" {s}:{r}" for s, r in moved))


if __name__ == "__main__":
    if len(sys.argv) < 2:
        sys.exit(__doc__)
    main(sys.argv[1:])
