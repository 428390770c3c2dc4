"""The cache (the section "Cache"): the --cache file under hostile conditions, processes
appending to it side by side, lines of the wrong shape, lone surrogates, a full disk (a
hostile pass of issue 11's); and its index of keys, set and read around SQLite.

    python -m unittest tests.test_cache -v
"""
import hashlib
import json
import os
import re
import subprocess
import sys
import threading
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(HERE)
sys.path.insert(0, REPO)
sys.path.insert(0, HERE)  # so `python -m unittest tests.test_cache` finds stub too
import minijudge  # noqa: E402
from stub import PYTHON, SideBySide, StubTestCase, chat, without_judge  # noqa: E402

_ID_RE = re.compile(r"\[The Start of the Response\]\nr(\d+)")

# Once told to, appends until told to stop lines a cache holds for other prompts, padded
# with spaces so that a read of any nearby length there still parses: what another run
# appends, as fast as it can, so that some land between a seek to the end and
# a write
_APPENDER = r"""
import json, os, select, sys
fd = os.open(sys.argv[1], os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o666)
reply = {"content": "Record 9999. Rating: 5", "latency": 0.01, "attempts": 1}
line = (json.dumps({"key": "f" * 64, "reply": reply}) + " " * 300 + "\n").encode()
sys.stdin.readline()
while not select.select([sys.stdin], [], [], 0)[0]:
    for _ in range(100):
        os.write(fd, line)
"""


def own_reply(i):
    """Record i's reply names i; every reply has the same length, so a line read at the
    offset of another record's line parses."""
    return "Record %04d. Rating: %d" % (i, i % 5 + 1)


def echo_id(request):
    match = _ID_RE.search(request.prompt or "")
    return match and chat(own_reply(int(match.group(1))))


def record(i, **fields):
    return dict({"id": i, "question": "q", "response": "r%04d" % i}, **fields)


class CacheTestCase(StubTestCase):
    def setUp(self):
        super().setUp()
        self.srv.responder = echo_id
        self.cache = self.path("cache.jsonl")

    def spawn(self, *argv, env=None, **options):
        env = without_judge(env)
        options.setdefault("stdout", subprocess.PIPE)
        return subprocess.Popen(
            [*PYTHON, "-m", "minijudge", "--judge-url", self.srv.url, "--judge-model",
             "judge-model", "-q", "--max-error-rate", "1", "--cache", self.cache]
            + [str(a) for a in argv],
            cwd=REPO, env=env, stderr=subprocess.PIPE, **options)

    def results(self, proc):
        out, err = proc.communicate(timeout=60)
        self.assertEqual(proc.returncode, 0, err)
        return [json.loads(line) for line in out.splitlines()]

    def run_once(self, source, *argv, env=None):
        self.srv.clear()
        return self.results(self.spawn(*argv, source, env=env))

    def borrowed(self, results):
        """(id, reply) of each record whose reply is not its own, or not ok."""
        return [(r["id"], r["judge_status"], r["judge_raw"]) for r in results
                if (r["judge_status"], r["judge_raw"]) != ("ok", own_reply(r["id"]))]


class SharedCacheHostileTest(SideBySide, CacheTestCase):
    """Two processes on one --cache never serve a record another prompt's reply."""

    side_by_side = 2  # subprocesses only (see stub.SideBySide), each test its own cache

    def test_two_shards_side_by_side_never_borrow_a_reply(self):
        # each new prompt comes with three asked before, so that while one thread appends
        # others read the cache; even lines hold even ids, so each shard asks its own
        order = []
        for m in range(120):
            order += [2 * m, 2 * m + 1]
            for back in (10, 20, 30):
                if m >= back:
                    order += [2 * (m - back), 2 * (m - back) + 1]
        source = self.write_jsonl("in.jsonl", [record(i) for i in order])
        shards = [self.spawn("--shard", "%d/2" % k, "--concurrency", "8", source)
                  for k in range(2)]
        results = [self.results(proc) for proc in shards]
        self.assertEqual([len(r) for r in results], [len(order) // 2] * 2)
        self.assertEqual(self.borrowed(results[0] + results[1]), [])

    def beside_appender(self, source, *argv):
        """Run on `source` while another process appends to the cache: it starts once
        the run has loaded the cache and sent its first request."""
        appender = subprocess.Popen([*PYTHON, "-c", _APPENDER, self.cache],
                                    stdin=subprocess.PIPE)
        self.addCleanup(appender.wait)
        self.addCleanup(appender.stdin.close)
        first, responder = threading.Event(), self.srv.responder
        self.srv.responder = lambda request: first.set() or responder(request)
        proc = self.spawn(*argv, source)
        self.assertTrue(first.wait(30))
        appender.stdin.write(b"go\n")
        appender.stdin.flush()
        try:
            return self.results(proc)
        finally:
            appender.stdin.close()
            appender.wait()
            self.srv.responder = responder

    def test_a_run_beside_another_appender_never_borrows_its_line(self):
        source = self.write_jsonl("in.jsonl", [record(i % 60) for i in range(180)])
        results = self.beside_appender(source, "--concurrency", "4")
        self.assertEqual(len(results), 180)
        self.assertEqual(self.borrowed(results), [])
        # every line of ours came out whole, between the other process's lines
        with open(self.cache, "rb") as f:
            ours = [json.loads(line)["reply"]["content"] for line in f
                    if not line.startswith(b'{"key": "fff')]
        self.assertEqual(sorted(set(ours)), [own_reply(i) for i in range(60)])

    def test_each_line_is_one_write(self):
        # a reply far larger than a write buffer still lands whole, between others' lines
        # (so it did before: a buffered write of a long line was one write(2) as well)
        big = "Record 0000. " + "x" * 100000 + " Rating: 1"
        self.srv.responder = lambda request: chat(big)
        self.beside_appender(self.write_jsonl("in.jsonl", [record(0), record(1)]))
        with open(self.cache, "rb") as f:
            ours = [line for line in f if not line.startswith(b'{"key": "fff')]
        self.assertEqual([json.loads(line)["reply"]["content"] for line in ours], [big] * 2)


class ShapeHostileTest(CacheTestCase):
    def test_a_reply_of_the_wrong_shape_is_asked_again_and_replaced(self):
        source = self.write_jsonl("in.jsonl", [record(i) for i in range(7)])
        self.assertEqual(self.borrowed(self.run_once(source)), [])
        keys = [minijudge._cache_key(r.json) for r in self.srv.requests
                if r.path.endswith("/chat/completions")]
        self.assertEqual(len(keys), 7)
        wrong = [5, None, "Rating: 4", {"latency": 0.1, "attempts": 1},
                 {"content": 4, "latency": 0.1, "attempts": 1},
                 {"content": "", "latency": 0.1, "attempts": 1},
                 {"content": "Rating: 4", "latency": "soon", "attempts": 1}]
        with open(self.cache, "w", encoding="utf-8") as f:
            for key, reply in zip(keys, wrong):
                f.write(json.dumps({"key": key, "reply": reply}) + "\n")
        second = self.run_once(source)
        self.assertEqual(self.borrowed(second), [])
        self.assertEqual(self.srv.chat_count, 7)  # every one asked again
        self.assertEqual(self.run_once(source), second)  # and the new reply wins
        self.assertEqual(self.srv.chat_count, 0)


class SurrogateHostileTest(CacheTestCase):
    def test_a_lone_surrogate_is_judged_then_served_from_the_cache(self):
        with open(self.path("in.jsonl"), "w", encoding="ascii") as f:
            f.write('{"id": 1, "question": "q \\ud83d", "response": "r0001 \\ud83d"}\n'
                    '{"id": 2, "question": "q", "response": "r0002"}\n')
        for asked in (2, 0):
            results = self.run_once(self.path("in.jsonl"))
            self.assertEqual([r["question"] for r in results], ["q \ud83d", "q"])
            self.assertEqual(self.borrowed(results), [])
            self.assertEqual(self.srv.chat_count, asked)


class OpenedByTheJudgeHostileTest(StubTestCase):
    def test_close_releases_a_cache_the_judge_opened_and_a_later_use_opens_it_again(self):
        # issue 44: a notebook running a cell again made a judge with cache="path" each time,
        # and neither close() nor with released its descriptor: at the limit, EMFILE. The
        # judges are kept, as a notebook's outputs keep them.
        code = r"""
import os, resource, sys, minijudge
resource.setrlimit(resource.RLIMIT_NOFILE, (64, 64))
url, path = sys.argv[1], sys.argv[2]
before, judges = len(os.listdir("/proc/self/fd")), []
for i in range(1000):
    judges.append(minijudge.LLMJudge(url, model="m", cache=path))
    judges[-1].close()
    with minijudge.LLMJudge(url, model="m", cache=path) as judge:
        judges.append(judge)
judge = judges[0]
asked = [{"role": "user", "content": "Rate it"}]
replies = [judge.chat(asked)["content"]]
judge.close()
replies.append(judge.chat(asked)["content"])  # opened again: the reply it cached
judge.close()
print(len(os.listdir("/proc/self/fd")) - before, replies)
"""
        done = subprocess.run([*PYTHON, "-c", code, self.srv.url, self.path("c.jsonl")],
                              cwd=REPO, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                              timeout=120)
        self.assertEqual(done.returncode, 0, done.stderr.decode())
        self.assertEqual(done.stdout, b"0 ['4', '4']\n")
        self.assertEqual(self.srv.chat_count, 1)

    def test_judge_records_leaves_the_cache_open_for_the_judge_to_close(self):
        # its workers close their own connections as they end: closing the shared cache too
        # made the next lookup open and index the whole file again, once a worker
        from unittest import mock
        records = [record(i) for i in range(20)]
        real_open = minijudge._Cache._open
        with mock.patch.object(minijudge._Cache, "_open", autospec=True,
                               side_effect=real_open) as opened:
            with minijudge.LLMJudge(self.srv.url, model="m", cache=self.path("c.jsonl")) as judge:
                for _ in range(2):  # the second time, every reply from the cache
                    results = list(minijudge.judge_records(judge, records, concurrency=4))
                    self.assertEqual([j.status for _, j in results], ["ok"] * 20)
        self.assertEqual((opened.call_count, self.srv.chat_count), (1, 20))

    def test_a_pathlib_path_is_a_path(self):
        # it was refused: "cache must be a path or a store with get and put; got PosixPath(...)"
        import pathlib
        import pickle
        path = pathlib.Path(self.path("c.jsonl"))
        asked = [{"role": "user", "content": "Rate it"}]
        with minijudge.LLMJudge(self.srv.url, model="m", cache=path) as judge:
            judge.chat(asked)
            again = pickle.loads(pickle.dumps(judge))  # opens the same file, from anywhere
        with again:
            self.assertEqual(again.chat(asked)["content"], "4")
        self.assertEqual(self.srv.chat_count, 1)
        self.assertEqual(len(path.read_text().splitlines()), 1)


class FullDiskHostileTest(unittest.TestCase):
    def test_put_raises_when_the_file_cannot_grow(self):
        # RLIMIT_FSIZE: the write that crosses it is cut short, the next one fails
        code = r"""
import errno, resource, sys, minijudge
resource.setrlimit(resource.RLIMIT_FSIZE, (1000, 1000))
cache = minijudge._Cache(sys.argv[1])
try:
    cache.put("0" * 64, {"content": "x" * 5000, "latency": 0.1, "attempts": 1})
except OSError as exc:
    print(errno.errorcode[exc.errno])
"""
        import tempfile
        with tempfile.TemporaryDirectory() as tmp:
            out = subprocess.run([*PYTHON, "-c", code, os.path.join(tmp, "c.jsonl")],
                                 cwd=REPO, stdout=subprocess.PIPE, check=True).stdout
        self.assertEqual(out, b"EFBIG\n")


def key(n):
    return hashlib.sha256(str(n).encode()).hexdigest()


class CacheKeysTest(unittest.TestCase):
    """Issue 31, second round (perfx31): the cache's index of keys (minijudge._Keys) finds a
    key set one at a time before and after it reaches SQLite, and a later number replaces an
    earlier one."""

    def test_set_keys_read_back_before_and_after_they_are_written_together(self):
        keys = minijudge._Keys()
        count = minijudge._KEYS_PENDING + 5  # some flushed to SQLite, some still waiting
        for n in range(count):
            keys[key(n)] = n
        self.assertEqual([keys.get(key(n)) for n in (0, count - 6, count - 1)],
                         [0, count - 6, count - 1])
        keys[key(0)] = 99  # a later number replaces the earlier, wherever that one is
        keys[key(count - 1)] = 98
        self.assertEqual((keys.get(key(0)), keys.get(key(count - 1))), (99, 98))
        self.assertIsNone(keys.get(key(-1)))
        self.assertEqual(len(keys), count)

    def test_keys_given_at_start_and_updated_are_found(self):
        keys = minijudge._Keys([(key(1), 10), (key(2), 20)])
        keys[key(3)] = 30
        keys.update([(key(3), 31), (key(4), 40)])  # after the waiting one: it wins
        self.assertEqual([keys.get(key(n)) for n in range(1, 6)], [10, 20, 31, 40, None])


if __name__ == "__main__":
    unittest.main()
