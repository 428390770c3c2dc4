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

# the issue's file: its own field names, none of them minijudge's defaults
RECORDS = [{"prompt": "2+2?", "completion": "4", "gold": "4", "uid": 1},
           {"prompt": "3+3?", "completion": "6", "gold": "6", "uid": 2}]
OWN = "the record has completion, gold, prompt, uid"
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


class WrongFieldFlag(Cli):
    """`--question-field qq` on the issue's file: the error named the flag and the record's
    fields, but not the field meant; the newcomer needed three --dry-run tries."""

    def test_the_issues_example_suggests_the_field_in_each_record_and_the_summary(self):
        source = self.write_jsonl("in.jsonl", RECORDS)
        code, out, err = self.subprocess("--judge-url", self.srv.url, "--question-field", "qq",
                                         source)
        error = "no 'qq' field (--question-field qq; {}); pass --question-field prompt?".format(
            OWN)
        records = [json.loads(line) for line in out.splitlines()]
        self.assertEqual(code, 1)
        self.assertEqual([(r["judge_status"], r["judge_error"]) for r in records], [
            ("bad_record", "line 1: " + error), ("bad_record", "line 2: " + error)])
        self.assertIn("\n  first bad_record: line 1: {}\n".format(error), err)
        self.assertEqual(self.srv.chat_count, 0)

    def test_a_typo_in_the_flag_suggests_the_field_it_is_close_to(self):
        source = self.write_jsonl("in.jsonl", [dict(RECORDS[0], question="q")])
        code, (record,), err = self.run_cli("--response-field", "complet", "--reference-field",
                                            "gld", source)
        self.assertEqual(record["judge_error"], "line 1: no 'gld' field (--reference-field gld; "
                         "the record has completion, gold, prompt, question, uid); pass "
                         "--reference-field gold?")

    def test_no_guess_when_no_field_could_be_it(self):
        # only the question (minijudge's own) and a number: nothing to suggest
        source = self.write_jsonl("in.jsonl", [{"question": "q", "id": 3}])
        code, (record,), err = self.run_cli(source)
        self.assertEqual(record["judge_error"], "line 1: no 'response' field (choose one with "
                         "--response-field; the record has id, question)")


class MissingResponse(Cli):
    """No flag at all on the issue's file: the response was missing; the question, missing
    too, came only on the next try."""

    def test_the_hint_names_both_flags_and_following_it_scores_the_file(self):
        source = self.write_jsonl("in.jsonl", RECORDS)
        code, records, err = self.run_cli(source)
        error = ("no 'response' field (choose one with --response-field; {}); pass "
                 "--response-field completion --question-field prompt?".format(OWN))
        self.assertEqual((code, [r["judge_error"] for r in records]),
                         (1, ["line 1: " + error, "line 2: " + error]))
        self.assertIn("\n  first bad_record: line 1: {}\n".format(error), err)
        # the second try: the flags exactly as the hint gives them
        flags = shlex.split(error.rpartition("; pass ")[2].rstrip("?"))
        code, records, err = self.run_cli(*(flags + [source]))
        self.assertEqual((code, [r["judge_status"] for r in records]), (0, ["ok", "ok"]))
        self.assertEqual(sorted("[Question]\n2+2?" in r.prompt for r in self.srv.requests),
                         [False, True])  # each its own question, in either order

    def test_dry_run_shows_it(self):
        source = self.write_jsonl("in.jsonl", RECORDS)
        code, out, err = self.subprocess("--dry-run", source)
        error = ("no 'response' field (choose one with --response-field; {}); pass "
                 "--response-field completion --question-field prompt?".format(OWN))
        self.assertEqual((code, out), (2, "--- line 1: {0}\n--- line 2: {0}\n".format(error)))

    def test_a_pair_suggests_each_side_in_turn(self):
        source = self.write_jsonl("in.jsonl", [{"question": "q", "output_1": "x",
                                                "output_2": "y"}])
        code, (record,), err = self.run_cli("--mode", "pairwise", source)
        self.assertEqual(record["judge_error"], "line 1: no 'response_a' field (choose one with "
                         "--response-a-field; the record has output_1, output_2, question); "
                         "pass --response-a-field output_1?")
        code, (record,), err = self.run_cli("--mode", "pairwise", "--response-a-field",
                                            "output_1", source)
        self.assertEqual(record["judge_error"], "line 1: no 'response_b' field (choose one with "
                         "--response-b-field; the record has output_1, output_2, question); "
                         "pass --response-b-field output_2?")


class MissingQuestion(Cli):
    """`--response-field completion` on the issue's file: the template needs a question, and
    the refusal listed minijudge's own 'response' among the file's fields."""

    def test_the_refusal_names_the_flag_and_the_records_own_fields(self):
        source = self.write_jsonl("in.jsonl", RECORDS)
        error = ("minijudge: error: line 1 (the first record): template needs field 'question' "
                 "(choose one with --question-field; {}); pass --question-field prompt?\n".format(
                     OWN))
        for more in ([], ["--dry-run"]):
            with self.subTest(more=more):
                code, out, err = self.subprocess(*(more + [
                    "--judge-url", self.srv.url, "--response-field", "completion", source]))
                self.assertEqual((code, out, err), (2, "", error))
        self.assertEqual(self.srv.requests, [])

    def test_a_later_record_without_one_says_so_too(self):
        source = self.write_jsonl("in.jsonl", [{"question": "q", "response": "r"},
                                               {"instruction": "q2", "response": "r"}])
        code, records, err = self.run_cli(source)
        self.assertEqual([r["judge_error"] for r in records], [
            None, "line 2: template needs field 'question' (choose one with --question-field; "
            "the record has instruction, response); pass --question-field instruction?"])

    def test_binary_mode_suggests_the_reference(self):
        source = self.write_jsonl("in.jsonl", [{"question": "q", "response": "r",
                                                "target": "x"}])
        code, out, err = run_main(["--judge-url", self.srv.url, "--mode", "binary", source])
        self.assertEqual((code, err), (2, "minijudge: error: line 1 (the first record): "
                         "template needs field 'reference' (choose one with --reference-field; "
                         "the record has question, response, target); pass --reference-field "
                         "target?\n"))


class HostileFieldNames(Cli):
    """The suggestion is a flag to copy: quoted for the shell, never one of minijudge's own
    fields, an option-like name, a name too long to show, or a field holding no text."""

    def test_a_name_with_spaces_or_unicode_is_quoted(self):
        for name in ("the prompt", "r\u00e9ponse", "it's"):
            with self.subTest(name=name):
                source = self.write_jsonl("in.jsonl", [{"question": "q", name: "x"}])
                code, (record,), err = self.run_cli(source)
                hint = record["judge_error"].rpartition("; pass ")[2]
                self.assertEqual(shlex.split(hint.rstrip("?")), ["--response-field", name])

    def test_names_never_suggested(self):
        for name, value in (("judge_raw", "x"), ("--api-key", "x"), ("p" * 101, "x"),
                            ("n", 4), ("b", ""), ("o", {"a": 1}), ("l", None)):
            with self.subTest(name=name[:20], value=value):
                source = self.write_jsonl("in.jsonl", [{"question": "q", name: value}])
                code, (record,), err = self.run_cli(source)
                self.assertNotIn("; pass ", record["judge_error"])

    def test_a_record_of_10000_fields_is_quick_and_short(self):
        record = {"f{}".format(n): "x" for n in range(10000)}
        record["question"] = "q"
        source = self.write_jsonl("in.jsonl", [record])
        code, (out,), err = self.run_cli(source)
        self.assertTrue(out["judge_error"].endswith("f1014 and 9981 more)"), out["judge_error"])

    def test_records_of_many_long_alike_names_are_quick(self):
        # difflib over 10,000 names of 100 characters took 19 s a record
        records = [{"{:b}".format(n + k).rjust(100, "_"): "x" for n in range(10000)}
                   for k in range(3)]
        source = self.write_jsonl("in.jsonl", records)
        started = time.monotonic()
        code, out, err = self.run_cli("--response-field", "_" * 90 + "1010", source)
        self.assertEqual([r["judge_status"] for r in out], ["bad_record"] * 3)
        self.assertLess(time.monotonic() - started, 5)


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
