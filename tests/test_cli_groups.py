"""The command line a person can scan: --help in argument groups, a short usage when no
input is given, the new judging flags, and the summary's positional bias (issue 12,
items 4 and 5).

--help and the no-input usage run ``python -m minijudge`` in a real process from the
repository root; the summary tests build real Judgements from an LLMJudge on a loopback
StubServer and feed them to the tally, the summary and its printer.
"""
import inspect
import io
import json
import os
import re
import subprocess
import sys
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))
sys.path.insert(0, HERE)  # so `python -m unittest tests.test_cli_groups` finds stub too
import minijudge  # noqa: E402
from stub import PYTHON, JUDGE_ENV, StubTestCase, chat  # noqa: E402
from test_cli import REPO, CLITest, parse_lines, response_of  # noqa: E402
from test_modes import HELPFULNESS  # noqa: E402

GROUPS = {
    "server": ["--judge-url", "--judge-model", "--key-header", "--header", "--timeout",
               "--max-retries", "--retry-min-wait", "--retry-max-wait", "--restart-wait",
               "--extra-body", "--rpm", "--tpm"],
    "what to judge": ["--mode", "--criteria", "--template", "--parser", "--scale", "--system",
                      "--pass-threshold", "--single-order", "--assess", "--assess-max-tokens",
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
    """(exit code, stdout, stderr) of ``python -m minijudge`` with no judge settings."""
    return finish(start(*argv))


def start(*argv):
    """``python -m minijudge`` with no judge settings, started: several run side by side."""
    env = {k: v for k, v in os.environ.items() if k not in JUDGE_ENV}
    return subprocess.Popen([*PYTHON, "-m", "minijudge"] + list(argv), cwd=REPO,
                            env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE)


def finish(proc):
    """run() of a process from start()."""
    try:
        out, err = proc.communicate(timeout=30)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.communicate()
        raise
    return proc.returncode, out.decode(), err.decode()


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
    def test_criteria_with_another_mode_is_refused_not_a_traceback(self):
        # found by a cut pass: rating crashed in the summary, comparative too, rubric failed all
        criteria = os.path.join(REPO, "examples", "helpfulness.json")
        modes = ("rating", "rubric", "comparative", "binary", "pairwise")
        # side by side: the interpreters start on both cores
        procs = [start("--judge-url", "http://127.0.0.1:9", "--mode", mode, "--criteria",
                       criteria, "examples/qa.jsonl") for mode in modes]
        for mode, proc in zip(modes, procs):
            with self.subTest(mode=mode):
                code, out, err = finish(proc)
                self.assertEqual((code, out), (2, ""), err)
                self.assertEqual(err, "minijudge: error: --criteria is for --mode criterion; "
                                 "got mode {}\n".format(mode))


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
        procs = [start(*argv) for argv in runs]  # side by side
        for argv, proc in zip(runs, procs):
            with self.subTest(argv=argv):
                self.assertEqual(finish(proc), (2, "", SHORT_USAGE))

    def test_other_usage_errors_print_the_one_usage_line(self):
        code, out, err = run("--mode", "nope", "in.jsonl")
        self.assertEqual((code, out), (2, ""))
        lines = err.splitlines(True)
        self.assertEqual(lines[0], USAGE)
        self.assertEqual(len(lines), 2, err)
        self.assertTrue(lines[1].startswith("minijudge: error: argument --mode: invalid choice: "
                                            "'nope'"), err)


# -- The summary ----------------------------------------------------------------------


if __name__ == "__main__":
    unittest.main()
