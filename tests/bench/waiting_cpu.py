#!/usr/bin/env python3
"""What tasks waiting on people cost harness-local while nothing happens: with reply
deadlines and without (issue 52).

Usage: tests/bench/waiting_cpu.py [--tasks N] [--idle SECONDS] [--rounds R] BINARY

Each round starts BINARY twice, on a fresh state directory and a free port, with the LLM
agent on a scripted model that asks bob a question: once with `reply_within` of a day on
every question, once with none. It makes N tasks (alice's, with bob on them) and waits
until each waits on bob (INPUT_REQUIRED), then lets the server sit for SECONDS and reads
the CPU time the process's threads ran meanwhile (/proc/<pid>/task/*/schedstat). The order
of the two alternates from round to round. Prints the CPU milliseconds each used while
idle, per round and the median. Standard library only.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import socket
import statistics
import subprocess
import tempfile
import time
import urllib.request

def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def rpc(url: str, method: str, params: dict) -> dict:
    body = json.dumps({"jsonrpc": "2.0", "id": 1, "method": method, "params": params}).encode()
    req = urllib.request.Request(url, body, {
        "Content-Type": "application/json", "A2A-Version": "1.0", "X-Participant-Id": "alice"})
    with urllib.request.urlopen(req, timeout=30) as res:
        answer = json.load(res)
    if "error" in answer:
        raise SystemExit(f"{method}: {answer['error']}")
    return answer["result"]


def cpu_ms(pid: int) -> float:
    """The CPU time the process's threads have run, in ms, to the nanosecond the kernel
    keeps (schedstat), not the 10 ms ticks of stat; the process's threads live as long as
    it does (tokio's workers)."""
    total = 0
    for tid in os.listdir(f"/proc/{pid}/task"):
        try:
            with open(f"/proc/{pid}/task/{tid}/schedstat") as f:
                total += int(f.read().split()[0])
        except FileNotFoundError:
            pass
    return total / 1e6


def idle_cpu(binary: str, tasks: int, idle: float, within: str | None) -> float:
    work = tempfile.mkdtemp(prefix="harness-waiting-")
    args = {"participant_id": "bob", "question": "Which colour?"}
    if within:
        args["reply_within"] = within
    script = os.path.join(work, "script.json")
    with open(script, "w") as f:
        json.dump({"turns": [{"tool_calls": [{"name": "ask_participant", "arguments": args}]}]}, f)
    port = free_port()
    url = f"http://127.0.0.1:{port}/"
    proc = subprocess.Popen(
        [binary, "--listen", f"127.0.0.1:{port}", "--state-dir", os.path.join(work, "state"),
         "--agent", "llm", "--model", f"scripted:{script}", "--rate-limit-per-minute", "0",
         "--tasks-for-others-per-hour", str(tasks + 1)],
        env=dict(os.environ, RUST_LOG="warn"), stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 30
        while True:
            try:
                urllib.request.urlopen(f"{url}.well-known/agent-card.json", timeout=1)
                break
            except OSError:
                if time.monotonic() > deadline or proc.poll() is not None:
                    raise SystemExit(f"{binary} did not start")
                time.sleep(0.05)
        envelope = {"mediaType": "application/vnd.tiny-harness.event+json", "data": {
            "kind": "task", "payload": {"name": "Shed", "goal": "Paint it", "participants": [
                {"id": "alice", "kind": "human", "role": "reporter"},
                {"id": "bob", "kind": "human", "role": "watcher"}]}}}
        for i in range(tasks):
            message = {"messageId": f"m-{i}", "role": "ROLE_USER",
                       "parts": [{"text": f"Paint shed {i}"}, envelope]}
            task = rpc(url, "SendMessage", {"message": message})["task"]
            if task["status"]["state"] != "TASK_STATE_INPUT_REQUIRED":
                raise SystemExit(f"task {i} is not waiting: {task['status']}")
        time.sleep(1)
        before = cpu_ms(proc.pid)
        time.sleep(idle)
        return cpu_ms(proc.pid) - before
    finally:
        proc.terminate()
        proc.wait()
        shutil.rmtree(work, ignore_errors=True)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("binary")
    ap.add_argument("--tasks", type=int, default=300)
    ap.add_argument("--idle", type=float, default=60.0)
    ap.add_argument("--rounds", type=int, default=3)
    a = ap.parse_args()
    runs: dict[str, list[float]] = {"with deadlines": [], "without": []}
    for r in range(a.rounds):
        order = [("with deadlines", "1d"), ("without", None)]
        for label, within in order if r % 2 == 0 else order[::-1]:
            ms = idle_cpu(a.binary, a.tasks, a.idle, within)
            runs[label].append(ms)
            print(f"round {r + 1}: {label}: {ms:.1f} ms of CPU in {a.idle:.0f} s idle", flush=True)
    for label, values in runs.items():
        print(f"{a.tasks} tasks waiting, {label}: median {statistics.median(values):.1f} ms of CPU "
              f"in {a.idle:.0f} s idle (min {min(values):.1f}, max {max(values):.1f})")


if __name__ == "__main__":
    main()
