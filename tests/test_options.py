"""Judge options and run flags (the sections "Judge options" and "Flags"): every option,
from a flag, a --judges entry or an LLMJudge keyword, checked against one declaration; an
empty value or a file nested too deeply refused naming the flag; an option a judge would
lose refused; --help in argument groups and a short usage when no input is given; and the
hostile campaign's options from every place.

Issue 28, "--judges options are not checked": every judge option, whether from a flag, a
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
from unittest import mock

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
                        "rubric, option; got 'xml'"),
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


class KeywordTest(StubTestCase):
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
                        {"scale": [1, 10], "template": "{question} {response} from 1 to 10"},
                        {"timeout": 5}, {"max_retries": 0}, {"seed": -1},
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
                expected = {} if option.name in ("headers", "vars") else option.default
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


class EmptyValueTest(StubTestCase):
    """Issue 28, a flag the user named is never silently dropped: an empty value (`-o ""`,
    `--judges ""`, `--reference-field ""`, a `--batch-import ""` among others) is exit 2
    naming the flag, not a run that quietly ignores it; a JSON file nested too deeply
    (`--judges`, `--criteria`, `--response-format`) is exit 2 naming the file, not a
    traceback. Through the real command line against the loopback stub."""

    def setUp(self):
        super().setUp()
        self.data = self.write_jsonl("data.jsonl", [{"question": "q", "response": "r"}])

    def run_cli(self, *flags):
        return run_main(["--judge-url", self.srv.url, "--judge-model", "m", *flags, self.data])

    def test_an_empty_value_is_refused_naming_the_flag(self):
        for flag in ("-o", "--cache", "--summary", "--html", "--judges", "--criteria",
                     "--template", "--response-format", "--batch-export", "--batch-import",
                     "--reference-field", "--question-field", "--response-field",
                     "--criteria-field", "--image-field", "--human-field", "--judge-model",
                     "--header", "--image-root"):
            with self.subTest(flag=flag):
                code, out, err = self.run_cli(flag, "")
                self.assertEqual(code, 2, err)
                shown = {"-o": "-o/--output"}.get(flag, flag)
                self.assertIn("minijudge: error: argument {}: expected a value, got an "
                              "empty string".format(shown), err)
                self.assertEqual(out, "")
        self.assertEqual(self.srv.chat_count, 0)

    def test_an_empty_system_message_is_still_allowed(self):
        code, _, err = self.run_cli("--system", "", "-q")
        self.assertEqual(code, 0, err)


class DeepJsonFileTest(StubTestCase):
    """Issue 28: a JSON file nested too deeply is exit 2 naming the file."""

    def test_a_json_file_nested_too_deeply_is_a_clear_error(self):
        data = self.write_jsonl("data.jsonl", [{"question": "q", "response": "r"}])
        deep = self.write("deep.json", "[" * 100000 + "]" * 100000)
        for flag, start in (("--judges", "--judges {}: expected a JSON list of judges"),
                            ("--criteria", "--criteria {}: not JSON (nested too deeply)"),
                            ("--response-format",
                             "--response-format {}: not JSON (nested too deeply)")):
            with self.subTest(flag=flag):
                code, _, err = run_main(["--judge-url", self.srv.url, flag, deep, data])
                self.assertEqual(code, 2, err)
                self.assertIn("minijudge: error: " + start.format(deep), err)
                self.assertNotIn("Traceback", err)
        self.assertEqual(self.srv.chat_count, 0)


TONE = {"name": "tone", "description": "Is the answer polite?",
        "options": {"Polite": 1.0, "Rude": 0.0}}


Q = {"question": "Which is kinder?"}


class PairwiseCriterionTest(unittest.TestCase):
    """A criterion given a pairwise judge reaches its prompt (issue 46 item 3; issue 44 item
    6 refused it, when the prompt named none): at the judge or per item, in compare,
    compare_systems, judge and messages alike. The full tests: tests/test_pair_criteria.py."""

    def setUp(self):
        self.sent = []

    def reply(self, messages):
        self.sent.append(messages)
        return "[[A]]"

    def pairwise(self, **options):
        return minijudge.LLMJudge(judge_fn=self.reply, template="pairwise", **options)

    def test_a_pairwise_judge_made_with_a_criterion_names_it(self):
        j = self.pairwise(criterion=TONE).compare(Q, "Sure!", "No.", both_orders=False)
        self.assertEqual((j.status, j.value, j.details["criterion"]), ("ok", "A", "tone"))
        self.assertIn("Criterion: tone\n", self.sent[0][-1]["content"])

    def test_a_criterion_given_per_item_reaches_every_call(self):
        judge = self.pairwise()
        calls = {
            "compare": lambda: judge.compare(Q, "Sure!", "No.", criterion=TONE),
            "compare, one order": lambda: judge.compare(Q, "Sure!", "No.", criterion=TONE,
                                                        both_orders=False),
            "compare_systems": lambda: judge.compare_systems(
                Q, {"x": "Sure!", "y": "No.", "z": "Maybe."}, criterion=TONE),
            "judge": lambda: judge.judge(Q, response_a="Sure!", response_b="No.",
                                         criterion=TONE),
            "messages": lambda: judge.messages(Q, response_a="Sure!", response_b="No.",
                                               criterion=TONE),
        }
        for name, call in calls.items():
            with self.subTest(name):
                del self.sent[:]
                result = call()
                if isinstance(result, list):  # messages
                    self.sent.append(result)
                self.assertTrue(self.sent)
                for messages in self.sent:
                    self.assertIn("Criterion: tone\n", messages[-1]["content"])

    def test_pairs_without_a_criterion_are_judged_as_before(self):
        j = self.pairwise().compare(Q, "Sure!", "No.", criterion=None, both_orders=False)
        self.assertEqual((j.status, j.value, j.score), ("ok", "A", 1.0))
        self.assertEqual(len(self.sent), 1)

    def test_a_criterion_still_reaches_the_templates_that_show_it(self):
        judge = minijudge.LLMJudge(judge_fn=self.reply, criterion=TONE)  # template criterion
        self.assertIn("Criterion: tone", judge.messages(Q, "Sure!")[-1]["content"])
        own = "Criterion: {criterion_name}\n{question}\nA: {response_a}\nB: {response_b}"
        judge = minijudge.LLMJudge(judge_fn=self.reply, template=own, parser="verdict",
                                   criterion=TONE)  # pairs under a criterion, your own way
        j = judge.compare(Q, "Sure!", "No.", both_orders=False)
        self.assertEqual((j.status, j.value), ("ok", "A"))
        self.assertTrue(self.sent[0][-1]["content"].startswith("Criterion: tone\n"))


GROUPS = {
    "server": ["--judge-url", "--judge-model", "--key-header", "--header", "--timeout",
               "--max-retries", "--retry-min-wait", "--retry-max-wait", "--restart-wait",
               "--extra-body", "--rpm", "--tpm"],
    "what to judge": ["--mode", "--criteria", "--rubric", "--template", "--parser", "--scale",
                      "--system", "--pass-threshold", "--explain", "--var", "--single-order",
                      "--assess", "--assess-max-tokens",
                      "--check-position", "--binary-format", "--response-format",
                      "--score-field"],
    "fields": ["--question-field", "--reference-field", "--response-field",
               "--response-a-field", "--response-b-field", "--responses-field",
               "--context-field", "--image-field", "--image-root",
               "--criteria-field", "--conversation-field", "--turn", "--max-turn-chars"],
    "run": ["--concurrency", "--window", "--cache", "--max-cost", "--shard", "--judges", "--jury",
            "--quorum", "--repeats", "--max-tokens",
            "--temperature", "--price", "--reask",
            "--dry-run", "--check", "--no-preflight", "--strict", "--max-error-rate"],
    "output": ["-o", "--summary", "--html", "--html-rows", "--save-prompts", "-q", "--group-by"],
    "trust": ["--human-field", "--bootstrap-seed", "--bootstrap-samples", "--confidence",
              "--model-field", "--baseline", "--strong-weight", "--logprobs", "--top-logprobs",
              "--structured", "--seed"],
    "batch": ["--batch-export", "--batch-max-lines", "--batch-import", "--mixed"],
    "report": ["--layout", "--questions", "--answers"],
}


# every flag before issue 12: (option strings, dest, default, type, action)
FLAGS = [
    (("--judge-url",), "judge_url", None, None, "append"),  # issue 31: several are replicas
    (("--judge-model",), "judge_model", None, None, "store"),
    (("-o", "--output"), "output", None, None, "store"),
    (("--mode",), "mode", None, None, "store"),
    (("--criteria",), "criteria", None, None, "store"),
    (("--pass-threshold",), "pass_threshold", None, float, "store"),
    (("--single-order",), "single_order", False, None, "store_true"),
    (("--response-a-field",), "response_a_field", "response_a", None, "store"),
    (("--response-b-field",), "response_b_field", "response_b", None, "store"),
    (("--responses-field",), "responses_field", "responses", None, "store"),
    (("--template",), "template", None, None, "store"),
    (("--parser",), "parser", None, None, "store"),
    (("--scale",), "scale", None, None, "store"),
    (("--question-field",), "question_field", None, None, "store"),
    (("--reference-field",), "reference_field", "answer", None, "store"),
    (("--response-field",), "response_field", "response", None, "store"),
    (("--system",), "system", None, None, "store"),
    (("--concurrency",), "concurrency", 8, int, "store"),
    (("--timeout",), "timeout", 60.0, float, "store"),
    (("--max-retries",), "max_retries", 5, int, "store"),
    (("--restart-wait",), "restart_wait", 60.0, float, "store"),
    (("--max-tokens",), "max_tokens", None, int, "store"),
    (("--temperature",), "temperature", 0.0, float, "store"),
    (("--extra-body",), "extra_body", None, None, "store"),
    (("--header",), "header", [], None, "append"),
    (("--key-header",), "key_header", "Authorization", None, "store"),
    (("--judges",), "judges", None, None, "store"),
    (("--cache",), "cache", None, None, "store"),
    (("--max-error-rate",), "max_error_rate", 0.1, float, "store"),
    (("--summary",), "summary", None, None, "store"),
    (("--shard",), "shard", None, None, "store"),
    (("--logprobs",), "logprobs", False, None, "store_true"),
    (("--top-logprobs",), "top_logprobs", 5, int, "store"),
    (("--structured",), "structured", False, None, "store_true"),
    (("--seed",), "seed", None, int, "store"),
    (("--human-field",), "human_field", None, None, "store"),
    (("--bootstrap-seed",), "bootstrap_seed", 0, int, "store"),
    (("--bootstrap-samples",), "bootstrap_samples", 1000, int, "store"),
    (("--confidence",), "confidence", 0.95, float, "store"),
    (("--model-field",), "model_field", None, None, "store"),
    (("--check",), "check", False, None, "store_true"),
    (("--dry-run",), "dry_run", False, None, "store_true"),
    (("--no-preflight",), "no_preflight", False, None, "store_true"),
    (("--strict",), "strict", False, None, "store_true"),
    (("-q", "--quiet"), "quiet", False, None, "store_true"),
]


USAGE = "usage: minijudge [options] INPUT.jsonl\n"


SHORT_USAGE = (USAGE + "quickstart: python -m minijudge --judge-url http://127.0.0.1:8000 "
               "data.jsonl\n--help for every option\n"
               "minijudge: error: the following arguments are required: input\n")


def run(*argv):
    """(exit code, stdout, stderr) of main(argv) in this process, as ``python -m minijudge``
    from the repository runs it with no judge settings: its refusals, usage and --help
    are words main() writes, not the process's (COLUMNS is the 80 columns argparse wraps
    --help to when stdout is a pipe)."""
    with mock.patch.dict(os.environ):
        for name in JUDGE_ENV:
            os.environ.pop(name, None)
        return run_main(argv, env={"COLUMNS": "80"}, cwd=REPO)


def sections(help_text):
    """{section title: [first option string of each option listed under it]}."""
    found, title = {}, None
    for line in help_text.splitlines():
        header = re.match(r"^(\S.*):$", line)
        option = re.match(r"^  (-[\w-]+)", line)
        if header:
            title = header.group(1)
            found[title] = []
        elif option and title:
            found[title].append(option.group(1))
    return found


class CriteriaModeTest(unittest.TestCase):
    """The command line a person can scan: --help in argument groups, a short usage when no
    input is given, the new judging flags (issue 12, items 4 and 5)."""

    def test_criteria_with_another_mode_is_refused_not_a_traceback(self):
        # found by a cut pass: rating crashed in the summary, comparative too, rubric failed all
        criteria = os.path.join(REPO, "examples", "helpfulness.json")
        modes = ("rating", "rubric", "comparative", "binary")  # pairwise takes one (issue 46)
        for mode in modes:
            with self.subTest(mode=mode):
                code, out, err = run("--judge-url", "http://127.0.0.1:9", "--mode", mode,
                                     "--criteria", criteria, "examples/qa.jsonl")
                self.assertEqual((code, out), (2, ""), err)
                self.assertEqual(err, "minijudge: error: --criteria is for --mode criterion, "
                                 "pairwise or systems; got mode {}\n".format(mode))


class HelpTest(unittest.TestCase):
    def test_help_lists_every_flag_under_its_group(self):
        code, out, err = run("--help")
        self.assertEqual((code, err), (0, ""))
        self.assertTrue(out.startswith(USAGE), out[:200])
        found = sections(out)
        self.assertEqual({title: flags for title, flags in found.items() if title in GROUPS},
                         GROUPS)
        self.assertEqual([t for t in found if t in GROUPS], list(GROUPS))  # in this order
        # only -h and --version stay outside the groups
        others = [f for title, flags in found.items() if title not in GROUPS for f in flags]
        self.assertEqual(others, ["-h", "--version"])
        self.assertIn("quickstart: python -m minijudge --judge-url http://127.0.0.1:8000 "
                      "data.jsonl", out)

    def test_every_flag_keeps_its_name_dest_default_and_type(self):
        actions = minijudge._arg_parser()._option_string_actions
        for strings, dest, default, kind, action in FLAGS:
            with self.subTest(flag=strings[-1]):
                got = actions[strings[-1]]
                self.assertEqual((tuple(got.option_strings), got.dest, got.default, got.type),
                                 (strings, dest, default, kind))
                self.assertEqual(type(got).__name__.strip("_").lower(),
                                 action.replace("_", "") + "action")
        choices = {name: actions[name].choices for name in ("--mode", "--parser")}
        self.assertLessEqual({"rating", "binary", "math", "rubric", "criterion", "comparative",
                              "pairwise", "systems"}, set(choices["--mode"]))
        self.assertLessEqual({"binary", "comparative", "json", "option", "rating", "verdict"},
                             set(choices["--parser"]))

    def test_the_assess_and_position_flags(self):
        parse = minijudge._arg_parser().parse_args
        args = parse(["in.jsonl"])
        self.assertEqual((args.assess, args.assess_max_tokens, args.check_position),
                         (False, 512, False))
        args = parse(["--assess", "--assess-max-tokens", "300", "--check-position", "in.jsonl"])
        self.assertEqual((args.assess, args.assess_max_tokens, args.check_position),
                         (True, 300, True))
        code, out, err = run("--assess-max-tokens", "many", "in.jsonl")
        self.assertEqual((code, out), (2, ""))
        self.assertEqual(err, USAGE + "minijudge: error: argument --assess-max-tokens: invalid "
                         "int value: 'many'\n")


class NoInputTest(unittest.TestCase):
    def test_no_input_prints_a_short_usage_and_exits_2(self):
        runs = ((), ("--judge-url", "http://127.0.0.1:1", "-q"))
        for argv in runs:
            with self.subTest(argv=argv):
                self.assertEqual(run(*argv), (2, "", SHORT_USAGE))

    def test_other_usage_errors_print_the_one_usage_line(self):
        code, out, err = run("--mode", "nope", "in.jsonl")
        self.assertEqual((code, out), (2, ""))
        lines = err.splitlines(True)
        self.assertEqual(lines[0], USAGE)
        self.assertEqual(len(lines), 2, err)
        self.assertTrue(lines[1].startswith("minijudge: error: argument --mode: invalid choice: "
                                            "'nope'"), err)


EXTRA = "must be a JSON object (a dict) without messages, model or stream (minijudge sends them)"


class OptionsFromEveryPlaceHostileTest(StubTestCase):
    """Issue 28's independent campaign (hostB): other inputs for the classes "options from
    every place are checked" and "a missing value is not an answer". Through the real
    command line (``main([...])``) against the loopback stub, and through LLMJudge's
    keywords.

    Seen on main, each with exit 0: an ``extra_body`` holding ``messages`` replaced the
    prompt (the judge graded nothing; every record ``ok``), one holding ``model`` sent
    another model than the summary names; a --judges entry with a misspelt top-level field
    (``"modle"``, ``"templat"``) or ``"options": []`` was used with the defaults without a
    word; a response that is NaN (``json`` reads the literal ``NaN``; pandas' missing value)
    was judged as the text "nan"."""

    def setUp(self):
        super().setUp()
        self.source = self.write_jsonl("in.jsonl", [{"question": "q", "response": "r"}])

    def judges(self, entry):
        judge = dict({"name": "a", "url": self.srv.url}, **entry)
        return self.write("judges.json", json.dumps([judge]))

    def refused(self, argv, message):
        code, out, err = run_main(["--no-preflight", "--judge-model", "m", *argv, self.source])
        self.assertEqual((code, out, err.strip()), (2, "", "minijudge: error: " + message))
        self.assertEqual(self.srv.chat_count, 0)

    def test_extra_body_may_not_replace_what_minijudge_sends(self):
        for key in ("messages", "model", "stream"):
            body = {key: []}
            with self.subTest(key=key):
                self.refused(["--judge-url", self.srv.url, "--extra-body", json.dumps(body)],
                             "--extra-body " + EXTRA + "; got " + repr(body))
                self.refused(["--judges", self.judges({"options": {"extra_body": body}})],
                             "judge a: extra_body " + EXTRA + "; got " + repr(body))
                with self.assertRaises(minijudge.JudgeError) as caught:
                    minijudge.LLMJudge(base_url=self.srv.url, model="m", extra_body=body)
                self.assertEqual(str(caught.exception), "extra_body " + EXTRA + "; got " + repr(
                    body))

    def test_extra_body_still_merges_other_keys(self):
        code, _, err = run_main(["--no-preflight", "--judge-model", "m", "--judge-url",
                                 self.srv.url, "--extra-body", '{"top_k": 3}', self.source])
        self.assertEqual(code, 0, err)
        self.assertEqual(self.srv.requests[-1].json["top_k"], 3)

    def test_a_judges_entry_with_an_unknown_field_is_refused(self):
        self.refused(["--judges", self.judges({"templat": "binary"})],
                     "judge a: 'templat' is not a field of a --judges entry (did you mean "
                     "template?); the fields are name, mode, template, criteria, url, model, "
                     "options, vars")
        self.refused(["--judges", self.judges({"prompt": "x"})],
                     "judge a: 'prompt' is not a field of a --judges entry; the fields are "
                     "name, mode, template, criteria, url, model, options, vars")

    def test_a_judges_entry_whose_options_are_not_an_object_is_refused(self):
        for options in ([], [["timeout", 5]], "timeout=5", 0):
            with self.subTest(options=options):
                self.refused(["--judges", self.judges({"options": options})],
                             "judge a: options must be a JSON object of LLMJudge keywords")


class RunFlagsHostileTest(StubTestCase):
    """Issue 28's independent hostile campaign (hostB)."""

    def test_max_error_rate_must_be_a_share(self):
        """On main --max-error-rate nan exited 0 however many records failed, -1 exited 1
        saying "failure rate 0.0% is over --max-error-rate -100.0%"."""
        source = self.write_jsonl("in.jsonl", [{"question": "q", "response": "r"}])
        for rate in ("nan", "-1", "1.5", "inf"):
            with self.subTest(rate=rate):
                for argv in (["--judge-url", self.srv.url, "--judge-model", "m",
                              "--no-preflight", "--max-error-rate", rate, source],
                             ["report", "--max-error-rate", rate, source]):
                    code, out, err = run_main(argv)
                    self.assertEqual((code, out, err.strip()), (
                        2, "", "minijudge: error: --max-error-rate must be a share from 0 to 1; "
                               "got " + repr(float(rate))))
        self.assertEqual(self.srv.chat_count, 0)

    def test_a_failed_run_with_the_highest_rate_still_exits_0_as_asked(self):
        source = self.write_jsonl("in.jsonl", [{"question": "q", "response": "r"}])
        self.srv.content = "no rating here"
        code, _, err = run_main(["--judge-url", self.srv.url, "--judge-model", "m",
                                 "--no-preflight", "--max-retries", "0", "--max-error-rate", "1",
                                 source])
        self.assertEqual(code, 0, err)

    def test_a_context_field_with_an_empty_name_or_field_is_a_usage_error(self):
        """On main "=x" and "a=" ran, every record a bad_record (no 'a=' field), exit 1."""
        source = self.write_jsonl("in.jsonl", [{"question": "q", "response": "r", "x": "c"}])
        for spec in ("=x", "a=", "="):
            with self.subTest(spec=spec):
                code, out, err = run_main(["--judge-url", self.srv.url, "--context-field", spec,
                                           source])
                self.assertEqual((code, out, err.splitlines()[-1]), (
                    2, "", "minijudge: error: argument --context-field: expected NAME=FIELD or "
                           "FIELD, neither empty; got {!r}".format(spec)))
        self.assertEqual(self.srv.chat_count, 0)

    def test_html_rows_may_not_be_negative(self):
        source = self.write_jsonl("in.jsonl", [{"question": "q", "response": "r"}])
        code, out, err = run_main(["--judge-url", self.srv.url, "--html", self.path("p.html"),
                                   "--html-rows", "-1", source])
        self.assertEqual((code, out, err.strip()), (
            2, "", "minijudge: error: --html-rows must be 0 or more; got -1"))
        self.assertFalse(os.path.exists(self.path("p.html")))


if __name__ == "__main__":
    unittest.main()
