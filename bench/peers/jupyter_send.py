# Peer row for session sends: a Jupyter kernel (ipykernel, unsandboxed) driven over ZMQ with
# jupyter_client, as a notebook front end drives it. Prints {"p50": ms, "p99": ms} on stdout.
# Usage: /usr/bin/python3 bench/peers/jupyter_send.py N
import json
import sys
import time

from jupyter_client.manager import start_new_kernel

n = int(sys.argv[1]) if len(sys.argv) > 1 else 150
manager, client = start_new_kernel(kernel_name="python3")
try:
    client.execute_interactive("x = 0", timeout=30)
    for _ in range(5):
        client.execute_interactive("x += 1", timeout=30)
    latencies = []
    for _ in range(n):
        started = time.perf_counter()
        reply = client.execute_interactive("x += 1", timeout=30)
        latencies.append((time.perf_counter() - started) * 1000)
        if reply["content"]["status"] != "ok":
            raise SystemExit(f"kernel error: {reply['content']}")
    latencies.sort()
    pick = lambda q: latencies[min(len(latencies) - 1, int(q * len(latencies)))]
    print(json.dumps({"n": n, "p50": pick(0.5), "p99": pick(0.99)}))
finally:
    client.stop_channels()
    manager.shutdown_kernel(now=True)
