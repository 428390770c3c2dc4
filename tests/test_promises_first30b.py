"""Issue 30, part first30b: the first contact with the field flags and the server flags.

A record missing a field the template needs names the flag that sets it, lists the record's
own fields, and suggests the likeliest one as a flag to copy; `--api-key KEY`, `--model M`
and their kin are answered with a hint (exit 2), the key never echoed nor taken as the
input file. Each test failed on main before its fix. CLI tests run a real
``python -m minijudge`` or ``minijudge.main`` on real files against the stub (tests/stub.py).
"""
import concurrent.futures
import json
import os
import shlex
import subprocess
import sys
import time
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))
sys.path.insert(0, HERE)  # so `python -m unittest tests.test_promises_first30b` finds stub
from stub import PYTHON, StubTestCase, run_main  # noqa: E402

KEY = "sk-first30b-\u00e9-SECRET-0123456789"


class Cli(StubTestCase):
    def run_cli(self, *argv):
        """(exit code, records, stderr) of main() against the stub."""
        code, out, err = run_main(["--judge-url", self.srv.url, "--judge-model", "judge-model",
                                   "--no-preflight", "--max-retries", "0"] + list(argv))
        return code, [json.loads(line) for line in out.splitlines()], err

    def subprocess(self, *argv, env=None):
        """A real ``python -m minijudge``: (exit code, stdout, stderr)."""
        environ = dict(os.environ, PYTHONPATH=os.path.dirname(HERE), **(env or {}))
        done = subprocess.run([*PYTHON, "-m", "minijudge"] + list(argv), cwd=self.tmp,
                              env=environ, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                              universal_newlines=True, encoding="utf-8", timeout=60)
        return done.returncode, done.stdout, done.stderr


class KeyAndModelFlags(Cli):
    """`--api-key KEY` was an unrecognised argument and the key the input file's name
    (`--api-key=KEY` and a key after the input were echoed whole; `--key KEY` was taken as
    --key-header KEY); `--model M` an unrecognised argument."""

    def assert_no_key(self, *texts):
        for text in texts:
            self.assertNotIn(KEY, text)
            self.assertNotIn("SECRET", text)

    def test_a_key_flag_is_refused_with_the_variables_to_set(self):
        source = self.write_jsonl("in.jsonl", [{"question": "q", "response": "r"}])
        hint = ("minijudge takes no API key on the command line (other users can read it in "
                "the process list): set LLM_JUDGE_API_KEY (or OPENAI_API_KEY) in the "
                "environment")
        cases = ((["--api-key", KEY, source], "--api-key"),
                 (["--api-key=" + KEY, source], "--api-key"),
                 ([source, "--api-key", KEY], "--api-key"),
                 (["--api_key", KEY, source], "--api_key"),
                 (["--openai-api-key", KEY, source], "--openai-api-key"),
                 (["--OPENAI_API_KEY=" + KEY, source], "--OPENAI_API_KEY"),
                 (["report", "--token", KEY, source], "--token"))
        # the seven processes run two at a time (one a core); each is checked alone
        with concurrent.futures.ThreadPoolExecutor(2) as pool:
            runs = [pool.submit(self.subprocess, "--judge-url", self.srv.url, *argv)
                    for argv, _ in cases]
        for (argv, flag), run in zip(cases, runs):
            with self.subTest(argv=argv):
                code, out, err = run.result()
                self.assertEqual((code, out, err), (2, "", "minijudge: error: {}: {}\n".format(
                    flag, hint)))
                self.assert_no_key(out, err)
        self.assertEqual(sorted(os.listdir(self.tmp)), ["in.jsonl"])  # no file named the key
        self.assertEqual(self.srv.requests, [])

    def test_key_is_no_abbreviation_of_key_header(self):
        source = self.write_jsonl("in.jsonl", [{"question": "q", "response": "r"}])
        code, out, err = self.run_cli("--key", KEY, source)
        self.assertEqual((code, out, err), (2, [], "minijudge: error: --key: minijudge takes "
                         "no API key on the command line (other users can read it in the "
                         "process list): set LLM_JUDGE_API_KEY (or OPENAI_API_KEY) in the "
                         "environment; --key-header NAME names the header it is sent in\n"))
        self.assertEqual(self.srv.requests, [])

    def test_any_other_flag_named_for_a_secret_is_not_echoed(self):
        source = self.write_jsonl("in.jsonl", [{"question": "q", "response": "r"}])
        for flag in ("--my-secret-" + KEY, "--judge-api-key", "--hf_token=" + KEY, "--passwd",
                     "--bearer", "--auth=" + KEY):
            with self.subTest(flag=flag[:16]):
                code, out, err = self.run_cli(flag, source)
                self.assertEqual((code, out), (2, []))
                self.assertTrue(err.startswith("minijudge: error: an option named for a key "
                                               "or token: minijudge takes no API key"), err)
                self.assert_no_key(err)

    def test_real_flags_with_such_words_still_work(self):
        source = self.write_jsonl("in.jsonl", [{"question": "q", "response": "r"}])
        code, records, err = self.run_cli("--max-tokens", "20", "--key-header", "api-key",
                                          source)
        self.assertEqual((code, records[0]["judge_status"]), (0, "ok"))
        self.assertEqual(self.srv.requests[0].json["max_tokens"], 20)

    def test_a_model_or_url_flag_points_to_the_judges_own(self):
        source = self.write_jsonl("in.jsonl", [{"question": "q", "response": "r"}])
        for argv, error in (
                (["--model", "gpt-4o"], "--model: the judge's model is --judge-model M (or "
                 "LLM_JUDGE_MODEL in the environment)"),
                (["--model_name=gpt-4o"], "--model_name: the judge's model is --judge-model M "
                 "(or LLM_JUDGE_MODEL in the environment)"),
                (["--base-url", "http://h/v1"], "--base-url: the judge's URL is --judge-url URL "
                 "(or LLM_JUDGE_API_BASE in the environment)")):
            with self.subTest(argv=argv):
                code, out, err = run_main(argv + [source])
                self.assertEqual((code, out, err), (2, "", "minijudge: error: " + error + "\n"))

    def test_after_a_double_dash_it_is_a_file_name(self):
        self.write_jsonl("--model", [{"question": "q", "response": "r"}])
        code, out, err = self.subprocess("--judge-url", self.srv.url, "--no-preflight", "--",
                                         "--model")
        self.assertEqual(code, 0, err)


if __name__ == "__main__":
    unittest.main()
