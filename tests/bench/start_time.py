#!/usr/bin/env python3
"""Start time of harness-local builds: exec to the first answered agent card.

Usage: tests/bench/start_time.py [--runs N] LABEL=BINARY [LABEL=BINARY ...]

Each run starts every binary once, on a fresh state directory and a free port, with the
bench's arguments (the conformance agent, no rate limit), in an order that alternates from
run to run (so a loaded machine weighs on each alike), and times from just before the exec
to the first 200 answer to GET /.well-known/agent-card.json (polled every 0.2 ms over a
new connection each time). The server is then stopped (SIGTERM) and its state removed.
Prints each binary's median, minimum and maximum over the runs. Standard library only.
"""

from __future__ import annotations

import argparse
import os
import shutil
import signal
import socket
import statistics
import subprocess
import tempfile
import time

CARD = b"GET /.well-known/agent-card.json HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n"
GIVE_UP = 30.0


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def card_answered(port: int) -> bool:
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=1) as s:
            s.sendall(CARD)
            head = s.recv(16)
            return head.startswith(b"HTTP/1.1 200")
    except OSError:
        return False


def one_start(binary: str) -> float:
    port = free_port()
    state = tempfile.mkdtemp(prefix="harness-start-")
    args = [binary, "--listen", f"127.0.0.1:{port}", "--agent", "conformance",
            "--default-participant", "bench", "--rate-limit-per-minute", "0",
            "--state-dir", state]
    env = dict(os.environ, RUST_LOG="warn")
    t0 = time.perf_counter()
    proc = subprocess.Popen(args, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        while not card_answered(port):
            if proc.poll() is not None:
                raise SystemExit(f"{binary} exited with {proc.returncode}")
            if time.perf_counter() - t0 > GIVE_UP:
                raise SystemExit(f"{binary} did not answer its card in {GIVE_UP} s")
            time.sleep(0.0002)
        return time.perf_counter() - t0
    finally:
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        shutil.rmtree(state, ignore_errors=True)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--runs", type=int, default=20)
    ap.add_argument("binaries", nargs="+", metavar="LABEL=BINARY")
    a = ap.parse_args()
    named = [b.split("=", 1) for b in a.binaries]
    times: dict[str, list[float]] = {label: [] for label, _ in named}
    for run in range(a.runs):
        order = named if run % 2 == 0 else list(reversed(named))
        for label, binary in order:
            times[label].append(one_start(binary))
    for label, ts in times.items():
        print(f"{label}: median {statistics.median(ts) * 1000:.1f} ms, "
              f"min {min(ts) * 1000:.1f} ms, max {max(ts) * 1000:.1f} ms ({len(ts)} starts)")


if __name__ == "__main__":
    main()
