"""Issue 28, "--judges options are not checked": every judge option, whether from a flag, a
--judges entry's "options" or an LLMJudge keyword, is checked against one declaration of
its type and range (minijudge._JUDGE_OPTIONS); a bad one is exit 2 naming the judge (or
the flag) and the option, or a JudgeError naming the keyword.

On main, {"strict": true} in a judges file crashed a worker thread and hung the run,
{"scale": "1,5"} was a traceback at the summary, {"on_failure": 1.0} scored failures 1.0
while the summary said "failures as 0.0", and most flags and keywords took any value.
The command line runs in this process (``main([...])``) against a loopback stub, except
where main hung: there a real ``python -m minijudge`` with a time limit.
"""
import inspect
import json
import os
import re
import subprocess
import sys
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(HERE)
sys.path.insert(0, REPO)
sys.path.insert(0, HERE)
import minijudge  # noqa: E402
from stub import PYTHON, JUDGE_ENV, StubTestCase, error, run_main  # noqa: E402

NAN, INF = float("nan"), float("inf")
TIMEOUT = "must be a number of seconds above 0, at most 86400 (a day); got "
TOKENS = "must be a whole number from 1 to 2147483647; got "
# (the options of judge "a", what follows "minijudge: error: judge a: ")
BAD_OPTIONS = [
    ({"scale": "1,5"}, "scale must be a pair [LO, HI] of numbers with LO < HI; got '1,5'"),
    ({"scale": [5, 1]}, "scale must be a pair [LO, HI] of numbers with LO < HI; got [5, 1]"),
    ({"scale": [1, INF]}, "scale must be a pair [LO, HI] of numbers with LO < HI; got [1, inf]"),
    ({"timeout": "abc"}, "timeout " + TIMEOUT + "'abc'"),
    ({"timeout": NAN}, "timeout " + TIMEOUT + "nan"),
    ({"timeout": INF}, "timeout " + TIMEOUT + "inf"),
    ({"timeout": -1}, "timeout " + TIMEOUT + "-1"),
    ({"timeout": 1e300}, "timeout " + TIMEOUT + "1e+300"),
    ({"max_tokens": True}, "max_tokens " + TOKENS + "True"),
    ({"max_tokens": 10 ** 30}, "max_tokens " + TOKENS + str(10 ** 30)),
    ({"max_tokens": 16.0}, "max_tokens " + TOKENS + "16.0"),
    ({"max_retries": "5"}, "max_retries must be a whole number from 0 to 100; got '5'"),
    ({"repeats": 0}, "repeats must be a whole number from 1 to 100; got 0"),
    ({"temperature": NAN}, "temperature must be a number, 0 or more; got nan"),
    ({"temperature": "0"}, "temperature must be a number, 0 or more; got '0'"),
    ({"logprobs": "false"}, "logprobs must be true or false; got 'false'"),
    ({"seed": 2 ** 64}, "seed must be a whole number that fits in 64 bits; got " + str(2 ** 64)),
    ({"pass_threshold": "0.5"}, "pass_threshold must be a number from 0 to 1 (scores are 0-1); "
                                "got '0.5'"),
    ({"top_logprobs": 21}, "top_logprobs must be a whole number from 0 to 20; got 21"),
    ({"restart_wait": -5}, "restart_wait must be a number of seconds, 0 or more; got -5"),
    ({"extra_body": [1]}, "extra_body must be a JSON object (a dict) without messages, model "
                          "or stream (minijudge sends them); got [1]"),
    ({"headers": {"X-Retry": 3}}, "headers must be a dict of header names to text; got "
                                  "{'X-Retry': 3}"),
    ({"headers": {"X-Note": "a\nb"}}, "header 'X-Note' has a line break in it"),
    ({"key_header": "api key"}, "key_header must be a header name; got 'api key'"),
    ({"parser": "xml"}, "parser must be one of rating, binary, comparative, verdict, json, "
                        "option; got 'xml'"),
    ({"binary_format": "10"}, "binary_format must be yesno or 01; got '10'"),
    ({"max_token": 4}, "'max_token' is not a judge option (did you mean max_tokens?)"),
    # what belongs to the run, or to Python, or to the entry itself
    ({"on_failure": 1.0}, 'on_failure is for Python: on the command line a failure scores 0.0 '
                          '(the summary\'s "failures as 0.0") and judge_status says why'),
    ({"cache": "c.jsonl"}, "cache is the run's: use --cache (one store for every judge)"),
    ({"judge_fn": "f"}, "judge_fn is for Python (a function), not a file"),
    ({"template": "pairwise"}, 'template goes in the judge\'s "template", not its options'),
    ({"criterion": {"name": "x"}}, 'criterion goes in the judge\'s "criteria" (a file or an '
                                   'object), not its options'),
]
STRICT = "strict is a run option: use --strict (it stops at the first bad input line)"
BAD_FLAGS = [  # (flags, what follows "minijudge: error: ")
    (["--timeout", "1e300"], "--timeout " + TIMEOUT + "1e+300"),
    (["--temperature", "nan"], "--temperature must be a number, 0 or more; got nan"),
    (["--temperature", "-1"], "--temperature must be a number, 0 or more; got -1.0"),
    (["--max-tokens", "0"], "--max-tokens " + TOKENS + "0"),
    (["--max-tokens", str(10 ** 30)], "--max-tokens " + TOKENS + str(10 ** 30)),
    (["--assess-max-tokens", "0"], "--assess-max-tokens " + TOKENS + "0"),
    (["--seed", str(2 ** 63)], "--seed must be a whole number that fits in 64 bits; got "
                               + str(2 ** 63)),
    (["--top-logprobs", "-1"], "--top-logprobs must be a whole number from 0 to 20; got -1"),
    (["--max-retries", "-1"], "--max-retries must be a whole number from 0 to 100; got -1"),
    (["--repeats", str(10 ** 12)], "--repeats must be a whole number from 1 to 100; got "
                                   + str(10 ** 12)),
    (["--restart-wait", "inf"], "--restart-wait must be a number of seconds, 0 or more; got inf"),
    (["--key-header", "api key"], "--key-header must be a header name; got 'api key'"),
    (["--scale", "1,inf"], "--scale must be LO,HI with LO < HI; got '1,inf'"),
]
SOURCE = [{"question": "q", "response": "r"}]


class JudgesFileTest(StubTestCase):
    def judges(self, options, **entry):
        return self.write("judges.json", json.dumps([dict({"name": "a", "options": options},
                                                          **entry)]))

    def run_cli(self, *argv):
        return run_main(["--judge-url", self.srv.url, "--max-retries", "0", *argv,
                         self.write_jsonl("in.jsonl", SOURCE)])

    def test_each_bad_option_is_exit_2_naming_the_judge_and_the_option(self):
        for options, message in BAD_OPTIONS:
            with self.subTest(options=options):
                code, out, err = self.run_cli("--judges", self.judges(options))
                self.assertEqual((code, out, err), (2, "", "minijudge: error: judge a: {}\n"
                                                    .format(message)))
        self.assertEqual(self.srv.chat_count, 0)

    def test_the_entry_url_model_and_template_are_checked_too(self):
        for entry, message in (({"url": 5}, "url must be a URL (text), or a list of them; "
                                            "got 5"),
                               ({"model": ["m"]}, "model must be a model name (text); got ['m']"),
                               ({"template": 7}, "template must be a template name or text; "
                                                 "got 7")):
            with self.subTest(entry=entry):
                code, out, err = self.run_cli("--judges", self.judges({}, **entry))
                self.assertEqual((code, out, err), (2, "", "minijudge: error: judge a: {}\n"
                                                    .format(message)))

    def test_strict_in_a_judges_file_is_refused_not_a_hang(self):
        # on main: the worker thread raised the JudgeError strict asks for and died; the run
        # waited for its record forever. A real process, so a hang fails the test
        self.srv.responder = lambda request: error(500, "down")
        env = {k: v for k, v in os.environ.items() if k not in JUDGE_ENV}
        try:
            proc = subprocess.run(
                [*PYTHON, "-m", "minijudge", "--judge-url", self.srv.url, "--max-retries",
                 "0", "--no-preflight", "--judges", self.judges({"strict": True}),
                 self.write_jsonl("in.jsonl", SOURCE)],
                cwd=REPO, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=20)
        except subprocess.TimeoutExpired:
            self.fail("the run hung")
        self.assertEqual((proc.returncode, proc.stdout, proc.stderr.decode()),
                         (2, b"", "minijudge: error: judge a: {}\n".format(STRICT)))

    def test_good_options_still_run_and_the_summary_says_failures_as_0(self):
        options = {"scale": [1, 5], "timeout": 5, "max_tokens": 8, "temperature": None,
                   "logprobs": False, "seed": 3, "headers": {"X-Run": "r1"}, "repeats": 1}
        code, out, err = self.run_cli("--judges", self.judges(options))
        self.assertEqual(code, 0, err)
        self.assertEqual(json.loads(out)["a_score"], 0.75)
        sent = self.srv.requests[-1]
        self.assertEqual((sent.json["max_tokens"], sent.json["seed"], "temperature" in sent.json,
                          sent.headers["x-run"]), (8, 3, False, "r1"))
        self.assertIn("failures as 0.0", err)


class FlagTest(StubTestCase):
    def test_each_bad_flag_value_is_exit_2_naming_the_flag(self):
        source = self.write_jsonl("in.jsonl", SOURCE)
        for flags, message in BAD_FLAGS:
            with self.subTest(flags=flags):
                code, out, err = run_main(["--judge-url", self.srv.url, *flags, source])
                self.assertEqual((code, out, err), (2, "", "minijudge: error: {}\n".format(
                    message)))
        self.assertEqual(self.srv.chat_count, 0)

    def test_a_flag_of_the_wrong_type_is_argparse_usage(self):
        code, out, err = run_main(["--judge-url", self.srv.url, "--timeout", "abc", "in.jsonl"])
        self.assertEqual((code, out), (2, ""))
        self.assertTrue(err.endswith("minijudge: error: argument --timeout: invalid float "
                                     "value: 'abc'\n"), err)


class PythonTest(StubTestCase):
    def test_each_bad_keyword_is_a_judge_error_naming_it(self):
        for options, message in BAD_OPTIONS:
            name, value = next(iter(options.items()))
            if name == "max_token":
                continue  # not a keyword at all: Python's own TypeError
            if isinstance(value, list):  # JSON's list is Python's tuple too
                expected, got = message.split("; got ")
                message = "{}; got {!r}".format(expected, tuple(value))
                value = tuple(value)
            if name in ("on_failure", "cache", "judge_fn", "template", "criterion"):
                continue  # allowed in Python; their bad values below
            with self.subTest(**{name: value}), self.assertRaises(minijudge.JudgeError) as cm:
                minijudge.LLMJudge(self.srv.url, **{name: value})
            self.assertEqual(str(cm.exception), message)

    def test_python_only_keywords_are_checked_as_well(self):
        for name, value, message in (
                ("on_failure", "0", "on_failure must be a number from 0 to 1, NaN or None; "
                                    "got '0'"),
                ("on_failure", 1.5, "on_failure must be a number from 0 to 1, NaN or None; "
                                    "got 1.5"),
                ("strict", 1, "strict must be true or false; got 1"),
                ("cache", 5, "cache must be a path or a store with get and put; got 5"),
                ("judge_fn", "f", "judge_fn must be a function of messages; got 'f'"),
                ("max_response_bytes", 0, "max_response_bytes must be a whole number of bytes, "
                                          "1 or more; got 0"),
                ("timeout", None, "timeout " + TIMEOUT + "None")):
            with self.subTest(**{name: value}), self.assertRaises(minijudge.JudgeError) as cm:
                minijudge.LLMJudge(self.srv.url, **{name: value})
            self.assertEqual(str(cm.exception), message)

    def test_valid_values_of_every_kind_still_work(self):
        for options in ({"on_failure": None}, {"on_failure": NAN}, {"temperature": None},
                        {"scale": [1, 10]}, {"timeout": 5}, {"max_retries": 0}, {"seed": -1},
                        {"pass_threshold": 1}, {"retry_min_wait": 0, "retry_max_wait": 0}):
            with self.subTest(options=options):
                minijudge.LLMJudge(self.srv.url, model="m", **options).close()
        judge = minijudge.LLMJudge(self.srv.url, model="m", on_failure=None, max_retries=0)
        self.srv.push(error(400, "bad"))
        self.assertIsNone(judge.judge({"question": "q"}, "r").score)
        judge.close()


class OneDeclarationTest(unittest.TestCase):
    """The flags, the judges file's option names and LLMJudge's keywords all come from
    _JUDGE_OPTIONS."""

    def test_every_keyword_is_declared_with_its_default(self):
        keywords = {name: p.default for name, p in inspect.signature(
            minijudge.LLMJudge).parameters.items()}
        declared = {option.name: option.default for option in minijudge._JUDGE_OPTIONS}
        self.assertEqual(set(keywords), set(declared))
        for name, default in keywords.items():
            with self.subTest(name=name):
                self.assertIs(declared[name], default) if callable(default) else (
                    self.assertEqual(declared[name], default))

    def test_every_declared_flag_is_made_from_the_declaration(self):
        parser = minijudge._arg_parser()
        help_text = parser.format_help()
        actions = parser._option_string_actions
        for option in minijudge._JUDGE_OPTIONS:
            if option.flag is None:
                continue
            flag = option.flag.split(" ")[0]
            with self.subTest(flag=flag):
                self.assertIn(flag, help_text)
                action = actions[flag]
                self.assertEqual((action.dest, action.help), (option.dest, option.help))
                if not isinstance(option.default, bool) and option.default is not None:
                    self.assertEqual(action.default, option.default)

    def test_the_flags_give_every_flagged_option_its_default(self):
        args = minijudge._arg_parser().parse_args(["in.jsonl"])
        given = minijudge._flag_options(args)
        flagged = [option for option in minijudge._JUDGE_OPTIONS if option.flag]
        self.assertEqual(set(given), {option.name for option in flagged})
        for option in flagged:
            with self.subTest(option=option.name):
                expected = {} if option.name == "headers" else option.default
                self.assertEqual(given[option.name], expected)

    def test_a_judges_file_takes_exactly_the_options_declared_for_it(self):
        for option in minijudge._JUDGE_OPTIONS:
            with self.subTest(option=option.name):
                if option.in_file is True:
                    self.assertIs(minijudge._file_option("judge a: ", option.name), option)
                else:
                    with self.assertRaisesRegex(ValueError, "^judge a: {} ".format(
                            re.escape(option.name))):
                        minijudge._file_option("judge a: ", option.name)


if __name__ == "__main__":
    unittest.main()
