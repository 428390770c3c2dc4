"""One judge on several servers (replicas). --judge-url given several
times, a list in a --judges entry, base_url as a list in Python: requests go to the least
busy server, a server that refuses or times out rests and its requests go to the others
at no retry's cost, the run fails only when every server fails, and the summary counts
requests and failures per server. The stubs run as their own processes where one is killed.
"""
import json
import os
import pty
import select
import signal
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))
sys.path.insert(0, HERE)
import minijudge  # noqa: E402
from stub import (PYTHON, JUDGE_ENV, StubServer, StubTestCase, error, hang, read_terminal,  # noqa: E402
                  run_main)  # noqa: E402

# a stub in its own process: prints its URL, then a line per chat request it answers
STUB_PROCESS = """
import sys, threading, time
sys.path.insert(0, sys.argv[1])
from stub import StubServer
lock = threading.Lock()
def told(request):
    with lock:  # the stub answers in threads: one whole line each
        sys.stdout.write("served\\n")
        sys.stdout.flush()
srv = StubServer("Rating: 4", delay=float(sys.argv[2]), responder=told).start()
print(srv.url, flush=True)
time.sleep(600)
"""
KEY = "sk-rep31-secret-0123456789"


class ReplicaTest(StubTestCase):
    def stub_process(self, delay=0.0):
        """(process, URL) of a stub running in a process of its own."""
        proc = subprocess.Popen([*PYTHON, "-c", STUB_PROCESS, HERE, str(delay)],
                                stdout=subprocess.PIPE, text=True)
        self.addCleanup(proc.wait)
        self.addCleanup(proc.kill)
        self.addCleanup(proc.stdout.close)
        return proc, proc.stdout.readline().strip()

    def records(self, n):
        return self.write_jsonl("in.jsonl", [{"question": "q{}".format(i), "response": "r"}
                                             for i in range(1, n + 1)])

    def read_jsonl(self, name):
        with open(self.path(name), encoding="utf-8") as f:
            return [json.loads(line) for line in f]

    def summary(self, name="s.json"):
        with open(self.path(name), encoding="utf-8") as f:
            return json.load(f)

    def test_a_replica_killed_mid_run_loses_no_record(self):
        stubs = [self.stub_process(delay=0.02) for _ in range(3)]
        source = self.records(90)
        argv = [*PYTHON, "-m", "minijudge", source, "-o", self.path("out.jsonl"),
                "--summary", self.path("s.json"), "--judge-model", "judge-model",
                "--concurrency", "6"]
        for _, url in stubs:
            argv += ["--judge-url", url]
        run = subprocess.Popen(argv, cwd=os.path.dirname(HERE), stdout=subprocess.PIPE,
                               stderr=subprocess.PIPE, text=True, env=dict(os.environ))
        killed = stubs[1][0]
        for _ in range(5):  # it was asked five times: the run is under way
            ready, _, _ = select.select([killed.stdout], [], [], 10)
            self.assertTrue(ready, "the second stub was never asked")
            self.assertEqual(killed.stdout.readline(), "served\n")
        killed.send_signal(signal.SIGKILL)
        out, err = run.communicate(timeout=30)
        self.assertEqual(run.returncode, 0, err)
        records = self.read_jsonl("out.jsonl")
        self.assertEqual([r["question"] for r in records],
                         ["q{}".format(i) for i in range(1, 91)])
        self.assertEqual({r["judge_status"] for r in records}, {"ok"})
        servers = self.summary()["servers"]
        self.assertEqual([s["url"] for s in servers],
                         [url + "/v1/chat/completions" for _, url in stubs])
        answered = [s["requests"] - s["failures"] for s in servers]
        self.assertEqual(sum(answered), 90)
        self.assertGreaterEqual(answered[1], 3)  # five were asked: two may have been cut off
        self.assertGreater(answered[0], 0)
        self.assertGreater(answered[2], 0)
        self.assertIn("  servers:\n    {}/v1/chat/completions: ".format(stubs[0][1]), err)

    def test_a_replica_answering_500_rests_and_the_other_answers(self):
        failing = StubServer(responder=lambda request: error(500, "cuda error")).start()
        self.addCleanup(failing.stop)
        code, out, err = run_main([
            self.records(10), "--judge-url", failing.url, "--judge-url", self.srv.url,
            "--judge-model", "judge-model", "--retry-max-wait", "0", "--concurrency", "1",
            "-o", self.path("out.jsonl"), "--summary", self.path("s.json")])
        self.assertEqual(code, 0, err)
        records = self.read_jsonl("out.jsonl")
        self.assertEqual({r["judge_status"] for r in records}, {"ok"})
        servers = self.summary()["servers"]
        self.assertEqual(servers[0]["requests"], servers[0]["failures"])
        self.assertEqual(servers[0]["failures"], failing.chat_count)
        self.assertGreater(failing.chat_count, 0)
        self.assertEqual(servers[1], {"url": self.srv.url + "/v1/chat/completions",
                                      "requests": 10, "failures": 0})
        self.assertEqual(self.srv.chat_count, 10)

    def test_every_replica_down_fails_the_run_naming_each(self):
        first, second = self.down_url(), self.down_url()
        code, out, err = run_main([self.records(2), "--judge-url", first,
                                   "--judge-url", second])
        self.assertEqual(code, 1)
        self.assertIn("all 2 servers failed: connection refused by GET {}/v1/models: is the "
                      "server running?; connection refused by GET {}/v1/models: is the "
                      "server running?".format(first, second), err)

    def test_a_replica_down_at_start_rests_and_the_run_goes_on(self):
        down = self.down_url()
        code, out, err = run_main([self.records(4), "--judge-url", down, "--judge-url",
                                   self.srv.url, "--summary", self.path("s.json")])
        self.assertEqual(code, 0, err)
        self.assertEqual(self.srv.chat_count, 4)
        self.assertEqual(self.summary()["servers"][0]["url"], down + "/v1/chat/completions")

    def test_the_page_counts_each_replicas_requests(self):
        other = self.start_stub()
        code, out, err = run_main([self.records(4), "--judge-url", self.srv.url,
                                   "--judge-url", other.url, "--concurrency", "1",
                                   "--html", self.path("page.html")])
        self.assertEqual(code, 0, err)
        with open(self.path("page.html"), encoding="utf-8") as f:
            page = f.read()
        self.assertIn("<h3>Servers</h3><table><tr><th>server</th><th>requests</th><th>failed"
                      "</th></tr>\n<tr><td>{}/v1/chat/completions</td><td>2</td><td>0</td></tr>"
                      "<tr><td>{}/v1/chat/completions</td><td>2</td><td>0</td></tr></table>"
                      .format(self.srv.url, other.url), page)

    def test_a_replica_that_times_out_rests_and_costs_no_retry(self):
        hung = StubServer(responder=lambda request: hang(2)).start()
        self.addCleanup(hung.stop)
        code, out, err = run_main([
            self.records(3), "--judge-url", hung.url, "--judge-url", self.srv.url,
            "--judge-model", "judge-model", "--timeout", "0.2", "--max-retries", "0",
            "--concurrency", "1", "-o", self.path("out.jsonl"), "--summary", self.path("s.json")])
        self.assertEqual(code, 0, err)
        records = self.read_jsonl("out.jsonl")
        self.assertEqual([r["judge_status"] for r in records], ["ok"] * 3)
        self.assertEqual(hung.chat_count, 1)  # then rested for the rest of the run
        self.assertEqual(self.summary()["servers"][0], {
            "url": hung.url + "/v1/chat/completions", "requests": 1, "failures": 1})

    def test_the_progress_line_names_a_rested_replica(self):
        down = self.down_url()
        judge = minijudge.LLMJudge([down, self.srv.url], model="judge-model")
        notes = []
        judge._on_retry = notes.append
        self.assertTrue(judge.judge({"question": "q"}, "r").ok)
        self.assertEqual(notes[0], "judge unreachable: connection refused at {}/v1/chat/"
                                   "completions; resting it 1 s, its requests go to the "
                                   "others".format(down))

    def test_a_replica_serving_another_model_stops_the_run_at_start(self):
        other = StubServer(models=("another-model",)).start()
        self.addCleanup(other.stop)
        code, out, err = run_main([self.records(2), "--judge-url", self.srv.url,
                                   "--judge-url", other.url])
        self.assertEqual(code, 1)
        self.assertEqual(err, "minijudge: error: preflight failed: GET {}/v1/models lists "
                              "another-model, not judge-model: every server of a judge must "
                              "serve its model\n".format(other.url))
        self.assertEqual(self.srv.chat_count + other.chat_count, 0)

    def test_on_a_terminal_the_progress_line_names_a_resting_replica(self):
        down = self.down_url()
        self.srv.delay = 0.15
        master, slave = pty.openpty()
        env = {k: v for k, v in os.environ.items() if k not in JUDGE_ENV}
        proc = subprocess.Popen(
            [*PYTHON, "-m", "minijudge", "--judge-url", down, "--judge-url",
             self.srv.url, "--judge-model", "judge-model", "--no-preflight", "--concurrency",
             "1", "-o", self.path("out.jsonl"), self.records(8)],
            cwd=os.path.dirname(HERE), env=env, stdout=subprocess.DEVNULL, stderr=slave)
        os.close(slave)
        self.addCleanup(lambda: proc.poll() is None and proc.kill())
        tty = read_terminal(master, 10)
        self.assertEqual(proc.wait(10), 0, tty)
        self.assertIn("; judge servers resting: {}/v1/chat/completions".format(down).encode(),
                      tty)

    def test_the_same_server_twice_is_refused(self):
        code, out, err = run_main([self.records(1), "--judge-url", self.srv.url,
                                   "--judge-url", self.srv.url + "/v1/"])
        self.assertEqual(code, 2)
        self.assertEqual(err, "minijudge: error: judge URL '{0}/v1/' is given twice (as "
                              "{0}/v1/chat/completions): name each server once\n".format(
                                  self.srv.url))

    def test_a_judges_entry_lists_its_servers(self):
        other = self.start_stub()
        judges = self.write("judges.json", json.dumps([
            {"name": "j", "url": [self.srv.url, other.url], "model": "judge-model"}]))
        code, out, err = run_main([self.records(6), "--judges", judges, "--concurrency", "2",
                                   "--summary", self.path("s.json")])
        self.assertEqual(code, 0, err)
        self.assertEqual(self.srv.chat_count + other.chat_count, 6)
        self.assertGreater(other.chat_count, 0)
        self.assertGreater(self.srv.chat_count, 0)

    def test_a_judges_entry_url_must_be_text_or_a_list_of_it(self):
        judges = self.write("judges.json", json.dumps([{"name": "j", "url": [5]}]))
        code, out, err = run_main([self.records(1), "--judges", judges])
        self.assertEqual(code, 2)
        self.assertEqual(err, "minijudge: error: judge j: url must be a URL (text), or a list "
                              "of them; got [5]\n")

    def test_one_server_then_three_share_the_cache_and_the_stamp(self):
        others = [self.start_stub(), self.start_stub()]
        source, cache = self.records(5), self.path("cache.db")
        code, out, err = run_main([source, "--judge-url", self.srv.url, "--cache", cache,
                                   "-o", self.path("one.jsonl")])
        self.assertEqual(code, 0, err)
        argv = [source, "--cache", cache, "-o", self.path("three.jsonl")]
        for srv in [others[0], self.srv, others[1]]:
            argv += ["--judge-url", srv.url]
        code, out, err = run_main(argv)
        self.assertEqual(code, 0, err)
        self.assertEqual(self.srv.chat_count + others[0].chat_count + others[1].chat_count, 5)
        one, three = self.read_jsonl("one.jsonl"), self.read_jsonl("three.jsonl")
        self.assertEqual([r["judge_run"] for r in one], [r["judge_run"] for r in three])
        code, out, err = run_main(["report", self.path("three.jsonl")])
        self.assertEqual(code, 0, err)
        self.assertIn("judge judge-model\n", err)

    def test_the_key_goes_to_every_replica_and_is_never_shown(self):
        other = self.start_stub()
        code, out, err = run_main([self.records(4), "--judge-url", self.srv.url,
                                   "--judge-url", other.url, "--concurrency", "2",
                                   "--summary", self.path("s.json")],
                                  env={"LLM_JUDGE_API_KEY": KEY})
        self.assertEqual(code, 0, err)
        for srv in (self.srv, other):
            self.assertEqual({r.headers["authorization"] for r in srv.requests},
                             {"Bearer " + KEY})
        with open(self.path("s.json"), encoding="utf-8") as f:
            self.assertNotIn(KEY, f.read() + out + err)


if __name__ == "__main__":
    import unittest
    unittest.main()
