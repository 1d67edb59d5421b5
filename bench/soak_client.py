#!/usr/bin/env python3
"""Mixed traffic and random link faults against a gateway whose workers sit behind
fault proxies (sy_proxied_worker), for bench/soak.sh. Standard library only.

Traffic: USERS threads, each sending one request after another: completions or chat,
streamed or not, greedy or seeded, any priority; a few leave mid-stream on purpose and a
few send malformed JSON (which must get a 400). Every greedy or seeded request is sent
again later with the same body: its text must equal the first answer exactly (a lost or
repeated token would change it). Faults: every FAULT_EVERY seconds one replica's proxy
gets a random toxic for a few seconds; every KILL_EVERY seconds one worker is killed -9.
Processes: RSS and open descriptors of the gateway and every descendant, sampled each
minute to a CSV; the first and last samples are summarized.
"""
import argparse
import http.client
import json
import os
import random
import signal
import threading
import time

PROMPTS = [f"Soak prompt {i}: tell me about the harbour, the ships and the tides." for i in range(40)]
TOXICS = [
    ("latency spike", {"type": "latency", "direction": "down", "latency_ms": 800, "jitter_ms": 400}),
    ("reset mid-stream", {"type": "reset", "direction": "down", "bytes": 600, "probability": 0.3}),
    ("reset before first byte", {"type": "reset", "probability": 0.3}),
    ("blackhole", {"type": "blackhole", "probability": 0.2}),
    ("stall", {"type": "stall", "direction": "down", "bytes": 400, "probability": 0.3}),
    ("down", {"type": "down"}),
    ("bandwidth", {"type": "bandwidth", "direction": "down", "rate": 2000}),
]


class Tally:
    def __init__(self):
        self.lock = threading.Lock()
        self.counts = {}
        self.texts = {}
        self.samples = []

    def add(self, key, sample=None):
        with self.lock:
            self.counts[key] = self.counts.get(key, 0) + 1
            if sample and len(self.samples) < 20:
                self.samples.append(sample)

    def check_text(self, body_key, text):
        with self.lock:
            first = self.texts.setdefault(body_key, text)
        return first == text


def request_body(rng):
    prompt = rng.choice(PROMPTS)
    chat = rng.random() < 0.5
    body = {"max_tokens": rng.choice([8, 32, 64]), "stream": rng.random() < 0.8,
            "priority": rng.choice(["interactive", "standard", "batch"])}
    if chat:
        body["messages"] = [{"role": "user", "content": prompt}]
    else:
        body["prompt"] = prompt
    if rng.random() < 0.5:
        body["temperature"] = 0.0
    else:
        body["temperature"] = 0.8
        body["seed"] = rng.randrange(4)
    return ("/v1/chat/completions" if chat else "/v1/completions"), body


def text_of(body, streamed, raw):
    """The answer's text, or None when the response is not a complete, clean one."""
    def piece(choice):
        if "text" in choice:
            return choice["text"]
        message = choice.get("delta") or choice.get("message") or {}
        return message.get("content") or ""
    if not streamed:
        j = json.loads(raw)
        return piece(j["choices"][0])
    text, done = "", False
    for line in raw.decode("utf-8", "replace").split("\n"):
        if line.startswith("event: error"):
            return None
        if not line.startswith("data: "):
            continue
        data = line[6:]
        if data == "[DONE]":
            done = True
            continue
        j = json.loads(data)
        if "error" in j:
            return None
        if j.get("choices"):
            text += piece(j["choices"][0])
    return text if done else None


def user(args, tally, stop, seed):
    rng = random.Random(seed)
    while not stop.is_set():
        path, body = request_body(rng)
        conn = http.client.HTTPConnection("127.0.0.1", args.port, timeout=args.timeout)
        started = time.monotonic()
        try:
            if rng.random() < 0.02:
                conn.request("POST", path, body=b'{"prompt": "broken', headers={"content-type": "application/json"})
                r = conn.getresponse()
                r.read()
                tally.add("malformed → 400" if r.status == 400 else "malformed → other", None if r.status == 400 else r.status)
                continue
            conn.request("POST", path, body=json.dumps(body), headers={"content-type": "application/json"})
            r = conn.getresponse()
            if body["stream"] and r.status == 200 and rng.random() < 0.05:
                r.read(200)  # a client that leaves mid-stream
                tally.add("left mid-stream (on purpose)")
                continue
            raw = r.read()
            if r.status != 200:
                tally.add(f"failed: HTTP {r.status}", raw[:200])
                continue
            text = text_of(body, body["stream"], raw)
            if text is None:
                tally.add("failed: stream ended with an error", raw[-300:])
                continue
            key = json.dumps([path, body.get("prompt"), body.get("messages"), body["max_tokens"], body["temperature"],
                              body.get("seed")], sort_keys=True)
            if tally.check_text(key, text):
                tally.add("completed")
            else:
                tally.add("failed: text differs from the same request's earlier answer", key)
        except Exception as e:  # a hang past the timeout, a reset: both are failures
            tally.add(f"failed: {type(e).__name__}", f"{e} after {time.monotonic() - started:.1f} s")
        finally:
            conn.close()


def proxies(control_dir):
    out = []
    for name in sorted(os.listdir(control_dir)):
        try:
            info = json.load(open(os.path.join(control_dir, name)))
            os.kill(info["proxy_pid"], 0)
            out.append(info)
        except (OSError, ValueError, KeyError):
            pass
    return out


def control(port, method, path, body=None):
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=5)
    try:
        conn.request(method, path, body=json.dumps(body) if body else None)
        conn.getresponse().read()
    finally:
        conn.close()


def faults(args, tally, stop, seed):
    rng = random.Random(seed)
    next_kill = time.monotonic() + args.kill_every
    while not stop.wait(args.fault_every):
        live = proxies(args.control_dir)
        if not live:
            continue
        target = rng.choice(live)
        if time.monotonic() >= next_kill:
            next_kill += args.kill_every
            try:
                os.kill(target["worker_pid"], signal.SIGKILL)
                tally.add("fault: worker kill -9")
            except OSError:
                pass
            continue
        name, toxic = rng.choice(TOXICS)
        try:
            control(target["control_port"], "POST", "/toxics", toxic)
            tally.add(f"fault: {name}")
            stop.wait(rng.uniform(3, 10))
            control(target["control_port"], "DELETE", "/toxics")
        except OSError:
            pass


def process_tree(root):
    children = {}
    for pid in os.listdir("/proc"):
        if pid.isdigit():
            try:
                fields = open(f"/proc/{pid}/stat").read().rsplit(")", 1)[1].split()
                children.setdefault(int(fields[1]), []).append(int(pid))
            except OSError:
                pass
    out, todo = [], [root]
    while todo:
        pid = todo.pop()
        out.append(pid)
        todo.extend(children.get(pid, []))
    return out


def sample(root):
    rows = []
    for pid in process_tree(root):
        try:
            name = open(f"/proc/{pid}/comm").read().strip()
            rss = next(int(l.split()[1]) for l in open(f"/proc/{pid}/status") if l.startswith("VmRSS:"))
            fds = len(os.listdir(f"/proc/{pid}/fd"))
            rows.append((pid, name, rss, fds))
        except (OSError, StopIteration):
            pass
    return rows


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--port", type=int, required=True)
    p.add_argument("--gateway-pid", type=int, required=True)
    p.add_argument("--control-dir", required=True)
    p.add_argument("--duration", type=float, default=1800)
    p.add_argument("--users", type=int, default=8)
    p.add_argument("--fault-every", type=float, default=15)
    p.add_argument("--kill-every", type=float, default=300)
    p.add_argument("--timeout", type=float, default=60)
    p.add_argument("--csv", required=True)
    args = p.parse_args()

    tally, stop = Tally(), threading.Event()
    threads = [threading.Thread(target=user, args=(args, tally, stop, i)) for i in range(args.users)]
    threads.append(threading.Thread(target=faults, args=(args, tally, stop, 1000)))
    start_rows = sample(args.gateway_pid)
    with open(args.csv, "w") as csv:
        csv.write("elapsed_s,pid,name,rss_kib,fds\n")
        for t in threads:
            t.start()
        t0 = time.monotonic()
        rows = start_rows
        while time.monotonic() - t0 < args.duration:
            for pid, name, rss, fds in rows:
                csv.write(f"{time.monotonic() - t0:.0f},{pid},{name},{rss},{fds}\n")
            csv.flush()
            stop.wait(min(60, max(0.0, args.duration - (time.monotonic() - t0))))
            rows = sample(args.gateway_pid)
        stop.set()
        for t in threads:
            t.join()
        time.sleep(2)  # let the last cancelled requests settle before the end sample
        end_rows = sample(args.gateway_pid)
        for pid, name, rss, fds in end_rows:
            csv.write(f"{time.monotonic() - t0:.0f},{pid},{name},{rss},{fds}\n")

    print(f"soak: {args.duration:.0f} s, {args.users} users, a fault every {args.fault_every:.0f} s, a kill every {args.kill_every:.0f} s")
    for key in sorted(tally.counts):
        print(f"  {key:60s} {tally.counts[key]:6d}")
    for s in tally.samples:
        print(f"  sample: {s!r:.300}")
    print(f"  distinct greedy/seeded requests checked for identical text: {len(tally.texts)}")
    print("processes (pid name: RSS KiB, open fds) at start → at end")
    start = {pid: (name, rss, fds) for pid, name, rss, fds in start_rows}
    end = {pid: (name, rss, fds) for pid, name, rss, fds in end_rows}
    for pid in sorted(set(start) | set(end)):
        a, b = start.get(pid), end.get(pid)
        name = (a or b)[0]
        fmt = lambda x: f"{x[1]:7d} KiB {x[2]:4d} fds" if x else "        (not running)"
        print(f"  {pid:7d} {name:22s} {fmt(a)} → {fmt(b)}")


if __name__ == "__main__":
    main()
