"""Throughput benchmark: the real CLI against a local judge with fixed latency.

    python tests/bench_throughput.py                  # docs/performance.md's figures
    python tests/bench_throughput.py --latency 0.05 --concurrency 32 128 --items 6000 --repeat 3
    python tests/bench_throughput.py --memory 1000000 # flat memory on a million records
    python tests/bench_throughput.py --dists constant tail lognormal --items 2000 --repeat 1
    python tests/bench_throughput.py --repo ../other-tree --dists tail  # its minijudge.py
    python tests/bench_throughput.py --servers 1 8 64 --concurrency 64   # replicas

A server that answers every request after L seconds can serve at most C / L requests a
second to C concurrent clients; this prints how close `python -m minijudge` gets to that
limit, the client's CPU time per request, its peak RSS, and the time `import minijudge`
takes. The server is asyncio in a separate process (it must never be the bottleneck);
it answers in the OpenAI format with keep-alive. Its own round trip is printed first: no
client can do better than L divided by it. On a virtual machine, the share of CPU time
the hypervisor gave to other guests (steal) is printed too: it moves these figures. A
benchmark, not a test: it asserts nothing and is not collected by unittest.

With --dists, the server draws the latency of each chat request from a distribution
with median L instead, in the order the requests arrive, from a seeded RNG (--seed), so
the k-th request of every run waits the same l_k whatever the client:
  constant   every reply after L;
  tail       1% of replies after 100 x L, the rest after L;
  lognormal  L x exp(1.0 x a standard normal): median L, mean 1.65 L, a heavy tail.
The ideal time is that of C clients that each send the next request the moment their
reply arrives, computed by replaying l_1..l_N on C slots (the k-th request goes to the
first slot free). It is never below the bound max(sum(l_k) / C, max(l_k)), printed
beside it, and never above that bound plus max(l_k); a client that always keeps C
requests in flight reaches it, wherever the slow ones fall. The fraction printed is ideal
/ measured, where measured is the wall time of the whole CLI process, start-up included
(printed on its own first): 1.0 means the client never let a slot idle. The server's
CPU time a request is printed too (its ~0.15 s start-up included): it shares the cores.

Earlier readings (docs/performance.md has the current ones). On 2026-11-23, idle, three
runs each: fraction of C/L 0.939–0.942 at C = 32 and 0.806–0.820 at C = 128 (6,000
records), client CPU 0.49–0.57 ms a request, import 28 ms, peak RSS 35.8 / 37.4 MiB at
100,000 / 1,000,000 records (L = 0, --memory 1000000); on 2026-11-26 before issues 30 and
34, 43.0 MiB at 6,000 (not re-measured at a million). On 2026-11-26, alternated on one
host in one hour (--repo DIR --concurrency 32 128 --items 6000 --repeat 1): the code
before the promises of issue 28 gave C = 32 0.928, C = 128 0.673–0.684, 0.61–0.67 ms of
client CPU a request, import 28.7 ms; after them, and after the refactor of issue 29 (a
function per named step), the two measured alike (C = 32 0.922–0.924 / 0.915–0.925,
C = 128 0.581–0.691 both). The import grew by the 33 regular expressions compiled at
import (18 ms of the module's own time, 8.5 ms before). That evening, after issues 30 and
34 (hints, the progress line's reasons, groups, intervals, Bradley–Terry), alternated
with the morning's code: C = 32 0.925 both, C = 128 0.641 / 0.640, client CPU 0.654 /
0.638 ms a request, import 39.9 / 44.3 ms, peak RSS 43.6 / 49.7 MiB (the same at 100,000
records: a constant, not growth). Talking to http.client directly, not through urllib's
opener, raised C = 128 from 0.64–0.71 that morning (0.90–0.93 was seen in faster hours on
earlier code). That afternoon, on a busier host, the morning's code and the code with
images, response formats and per-record criteria measured alike, alternated twice
(--repo DIR --concurrency 32 128 --repeat 1): C = 32 0.928–0.934 / 0.924–0.927, C = 128
0.646–0.749 / 0.589–0.745.
"""

import argparse
import asyncio
import heapq
import itertools
import json
import math
import random
import re
import os
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))  # --repo changes it
DISTS = ("constant", "tail", "lognormal")
TAIL_SHARE, TAIL_FACTOR, SIGMA = 0.01, 100, 1.0


def latency_stream(dist, latency, seed):
    """The latency of each chat request in arrival order: l_1, l_2, ... (seconds)."""
    rng = random.Random(seed)
    while True:
        if dist == "tail":
            yield latency * TAIL_FACTOR if rng.random() < TAIL_SHARE else latency
        elif dist == "lognormal":
            yield rng.lognormvariate(math.log(latency), SIGMA)
        else:
            yield latency


def ideal_seconds(latencies, concurrency):
    """C clients that never idle: the k-th request starts on the first slot free."""
    slots = [0.0] * max(1, min(concurrency, len(latencies)))
    for each in latencies:
        heapq.heapreplace(slots, slots[0] + each)
    return max(slots)


def serve(latency, port_file, dist="constant", seed="0", ports="1"):
    """A minimal keep-alive chat-completions server; every reply is "4" after `latency`,
    or after the next latency of `dist` (see latency_stream). It listens on `ports` ports,
    each a replica to the client, all answered by this one process."""
    latencies = latency_stream(dist, latency, int(seed))
    body = json.dumps({
        "id": "chatcmpl-bench", "object": "chat.completion", "created": 0,
        "model": "bench-judge", "choices": [{"index": 0, "finish_reason": "stop",
                                             "message": {"role": "assistant", "content": "4"}}],
        "usage": {"prompt_tokens": 120, "completion_tokens": 1, "total_tokens": 121}}).encode()
    models = json.dumps({"object": "list", "data": [{"id": "bench-judge"}]}).encode()

    def response(payload):
        return (b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: "
                + str(len(payload)).encode() + b"\r\n\r\n" + payload)

    class Judge(asyncio.Protocol):
        # A Protocol, not streams: the server must cost far less than the client.
        def connection_made(self, transport):
            self.transport, self.buffer = transport, b""

        def data_received(self, data):
            self.buffer += data
            while True:
                end = self.buffer.find(b"\r\n\r\n")
                if end < 0:
                    return
                head = self.buffer[:end].lower()
                length = re.search(rb"content-length: *(\d+)", head)
                length = int(length.group(1)) if length else 0
                if len(self.buffer) < end + 4 + length:
                    return
                self.buffer = self.buffer[end + 4 + length:]
                if head.startswith(b"get"):
                    self.transport.write(response(models))
                else:
                    loop.call_later(next(latencies), self.reply)

        def reply(self):
            if not self.transport.is_closing():
                self.transport.write(response(body))

    async def run():
        servers = []
        for _ in range(int(ports)):
            servers.append(await loop.create_server(Judge, "127.0.0.1", 0, backlog=1024))
        with open(port_file, "w") as f:
            f.write(" ".join(str(s.sockets[0].getsockname()[1]) for s in servers))
        await servers[0].serve_forever()

    loop = asyncio.new_event_loop()
    loop.run_until_complete(run())


def start_server(latency, dist="constant", seed=0, ports=1):
    """The server process and its URL (a list of them with ports > 1)."""
    port_file = tempfile.mktemp()
    proc = subprocess.Popen([sys.executable, __file__, "--serve", str(latency), port_file,
                             dist, str(seed), str(ports)])
    deadline = time.time() + 10
    while not os.path.exists(port_file) or not open(port_file).read():
        if time.time() > deadline:
            raise SystemExit("the benchmark server did not start")
        time.sleep(0.05)
    urls = ["http://127.0.0.1:{}".format(port) for port in open(port_file).read().split()]
    os.unlink(port_file)
    if ports == 1:
        return proc, urls[0]
    return proc, urls


def write_records(path, n):
    with open(path, "w") as f:
        for i in range(n):
            f.write(json.dumps({"id": i, "question": "What is {} + {}?".format(i, i),
                                "answer": str(2 * i), "response": "It is {}.".format(2 * i)})
                    + "\n")


def run_cli(url, path, concurrency, extra=(), stderr=None):
    """Run the CLI in a child process: (wall seconds, its CPU seconds, its peak RSS MiB)."""
    started = time.perf_counter()
    urls = url
    if isinstance(url, str):
        urls = [url]
    flags = []
    for one in urls:
        flags += ["--judge-url", one]
    child = subprocess.Popen([sys.executable, "-m", "minijudge"] + flags + [
                              "--quiet", "--concurrency", str(concurrency), "-o", os.devnull,
                              path] + list(extra), cwd=ROOT, stderr=stderr)
    _, status, usage = os.wait4(child.pid, 0)
    wall = time.perf_counter() - started
    child.returncode = os.WEXITSTATUS(status) if os.WIFEXITED(status) else -1
    if child.returncode != 0:
        raise SystemExit("the CLI failed with exit status {}".format(child.returncode))
    return wall, usage.ru_utime + usage.ru_stime, usage.ru_maxrss / 1024


def import_ms(repeat=15):
    """Median time of `import minijudge` in a fresh interpreter, from its .pyc (as after
    pip install; written here even under PYTHONDONTWRITEBYTECODE)."""
    import py_compile
    py_compile.compile(os.path.join(ROOT, "minijudge.py"), doraise=True)
    code = ("import sys, time; sys.path.insert(0, {!r}); t = time.perf_counter(); "
            "import minijudge; print(time.perf_counter() - t)").format(ROOT)
    times = [float(subprocess.run([sys.executable, "-c", code], capture_output=True,
                                  text=True, check=True).stdout) for _ in range(repeat)]
    return sorted(times)[len(times) // 2] * 1000


def steal():
    """CPU time the hypervisor gave to other guests so far (Linux /proc/stat), or None."""
    try:
        with open("/proc/stat") as f:
            fields = [int(x) for x in f.readline().split()[1:]]
    except (OSError, ValueError):
        return None
    return fields[7], sum(fields)  # steal ticks, all ticks


def print_steal(before):
    after = steal()
    if before and after and after[1] > before[1]:
        print("  the hypervisor took {:.1%} of this VM's CPU time meanwhile "
              "(steal)".format((after[0] - before[0]) / (after[1] - before[1])))


def server_round_trip(url, n=40):
    """The median time one raw-socket client waits for a reply: the server's latency."""
    import socket
    body = b'{"model": "bench-judge", "messages": []}'
    request = (b"POST /v1/chat/completions HTTP/1.1\r\nHost: bench\r\nContent-Length: %d"
               b"\r\n\r\n%s" % (len(body), body))
    times = []
    host, port = url.split("//")[1].rsplit(":", 1)
    with socket.create_connection((host, int(port))) as sock:
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        for _ in range(n):
            started, reply = time.perf_counter(), b""
            sock.sendall(request)
            while not reply.endswith(b"}}"):  # the body ends with the usage object
                reply += sock.recv(65536)
            times.append(time.perf_counter() - started)
    return sorted(times)[n // 2]


def describe(dist, latencies, latency):
    """One line on what the server will serve: how many slow replies, the sum, the max."""
    what = {"constant": "every reply after {:.0f} ms".format(latency * 1000),
            "tail": "{} of {} replies after {:.0f} ms, the rest after {:.0f} ms".format(
                sum(each > latency for each in latencies), len(latencies),
                latency * TAIL_FACTOR * 1000, latency * 1000),
            "lognormal": "median {:.0f} ms, sigma {}, p99 {:.0f} ms".format(
                latency * 1000, SIGMA, sorted(latencies)[len(latencies) * 99 // 100] * 1000)}
    return "{}: {}; sum {:.1f} s, max {:.2f} s".format(
        dist, what[dist], sum(latencies), max(latencies))


def run_fixed(args, path):
    """Per concurrency: requests a second against C / L, the CPU time, the peak RSS."""
    server, url = start_server(args.latency)
    try:
        print("the server alone: {:.2f} ms a reply to one client (L = {:.0f} ms)".format(
            server_round_trip(url) * 1000, args.latency * 1000))
        for c in args.concurrency:
            limit, before = c / args.latency, steal()
            for _ in range(args.repeat):
                wall, cpu, rss = run_cli(url, path, c)
                rate = args.items / wall
                print("L={:.0f} ms C={:<4d} items={}: {:7.1f} req/s, limit {:7.1f}, "
                      "fraction {:.3f}; client CPU {:.3f} ms/request; peak RSS {:.1f} "
                      "MiB".format(args.latency * 1000, c, args.items, rate, limit,
                                   rate / limit, cpu / args.items * 1000, rss))
            print_steal(before)
    finally:
        server.kill()


def run_servers(args, path):
    """Per number of replicas (--judge-url given N times, N ports of one server process):
    requests a second, the client's CPU time a request and its peak RSS, at the first C."""
    c = args.concurrency[0]
    for n in args.servers:
        server, urls = start_server(args.latency, ports=n)
        try:
            for _ in range(args.repeat):
                wall, cpu, rss = run_cli(urls, path, c)
                print("servers={:<3d} L={:.0f} ms C={:<4d} items={}: {:7.1f} req/s, limit "
                      "{:7.1f}; client CPU {:.3f} ms/request; peak RSS {:.1f} MiB".format(
                          n, args.latency * 1000, c, args.items, args.items / wall,
                          c / args.latency, cpu / args.items * 1000, rss))
        finally:
            server.kill()


def run_dists(args, path):
    """Per distribution and concurrency: the ideal time, the measured one, their ratio."""
    head = subprocess.run(["git", "-C", ROOT, "log", "--oneline", "-1"], capture_output=True,
                          text=True).stdout.strip()
    print("minijudge.py from {} ({}); seed {}".format(ROOT, head or "not a git tree",
                                                    args.seed))
    server, url = start_server(args.latency)
    try:
        print("the server alone: {:.2f} ms a reply to one client (L = {:.0f} ms)".format(
            server_round_trip(url) * 1000, args.latency * 1000))
        empty = os.path.join(os.path.dirname(path), "empty.jsonl")
        open(empty, "w").close()
        print("the CLI on no records: {:.2f} s (start-up, part of every measured time)".format(
            min(run_cli(url, empty, 32, stderr=subprocess.DEVNULL)[0] for _ in range(3))))
    finally:
        server.kill()
    for dist in args.dists:
        latencies = list(itertools.islice(latency_stream(dist, args.latency, args.seed),
                                          args.items))
        print(describe(dist, latencies, args.latency))
        for c in args.concurrency:
            ideal = ideal_seconds(latencies, c)
            bound, before = max(sum(latencies) / c, max(latencies)), steal()
            for _ in range(args.repeat):
                # A fresh server a run: the k-th request of each run waits l_k.
                server, url = start_server(args.latency, dist, args.seed)
                try:
                    wall, cpu, rss = run_cli(url, path, c)
                finally:
                    server.kill()
                # Its CPU time shows it was never the bottleneck (it shares the cores).
                usage = os.wait4(server.pid, 0)[2]
                served = (usage.ru_utime + usage.ru_stime) / args.items * 1000
                print("{:<9} C={:<4d} items={}: ideal {:6.2f} s (bound {:6.2f} s), measured "
                      "{:6.2f} s, fraction {:.3f}; client CPU {:.3f} ms/request, server "
                      "{:.3f}; peak RSS {:.1f} MiB".format(
                          dist, c, args.items, ideal, bound, wall, ideal / wall,
                          cpu / args.items * 1000, served, rss))
            print_steal(before)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--latency", type=float, default=0.05)
    parser.add_argument("--concurrency", type=int, nargs="+", default=[32, 128])
    parser.add_argument("--items", type=int, default=6000)
    parser.add_argument("--repeat", type=int, default=3, help="runs per concurrency (3)")
    parser.add_argument("--memory", type=int, metavar="N", help="also run N records at "
                        "zero latency to show memory stays flat (e.g. 1000000)")
    parser.add_argument("--dists", nargs="+", choices=DISTS, metavar="DIST",
                        help="instead, per-request latencies with median L drawn from "
                        "each of: " + ", ".join(DISTS) + "; prints the fraction of the "
                        "ideal time reached")
    parser.add_argument("--seed", type=int, default=0, help="the RNG seed of --dists (0)")
    parser.add_argument("--servers", type=int, nargs="+", metavar="N",
                        help="instead, one judge on N replicas (--judge-url N times) for "
                        "each N, at the first --concurrency")
    parser.add_argument("--repo", metavar="DIR", help="run the minijudge.py in DIR "
                        "(default: this file's repository)")
    parser.add_argument("--serve", nargs="+", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.serve:
        return serve(float(args.serve[0]), *args.serve[1:])
    if args.repo:
        global ROOT
        ROOT = os.path.abspath(args.repo)
        if not os.path.isfile(os.path.join(ROOT, "minijudge.py")):
            raise SystemExit("no minijudge.py in {}".format(ROOT))

    print("python {}, {} cores".format(sys.version.split()[0], os.cpu_count()))
    print("import minijudge: {:.1f} ms (median of 15 fresh interpreters, from .pyc)".format(
        import_ms()))
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "records.jsonl")
        write_records(path, args.items)
        if args.servers:
            run_servers(args, path)
        elif args.dists:
            run_dists(args, path)
        else:
            run_fixed(args, path)
        if args.memory:
            server, url = start_server(0.0)
            try:
                for n in (args.memory // 10, args.memory):
                    write_records(path, n)
                    wall, cpu, rss = run_cli(url, path, 32)
                    print("L=0 C=32 items={}: {:.0f} req/s; peak RSS {:.1f} MiB".format(
                        n, n / wall, rss))
            finally:
                server.kill()


if __name__ == "__main__":
    main()
