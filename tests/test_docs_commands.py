"""Every command the README and docs/ show runs as written, or is listed here saying why not.

A command is a line of a ```sh block (a backslash at a line's end continues it, a ``#``
line is a comment), or the ``$ `` line that opens a ```console block, whose other lines
are the output it shows. Each is one of:

- a "Common tasks" command of the README: tests/test_readme_tasks.py runs those, each with
  its own checks (the setup block first, as a user would);
- listed in NOT_RUNNABLE, with why it cannot run here (an upload to OpenAI, eight GPUs, a
  package from PyPI, a benchmark of minutes, the suite itself); where later commands need
  what it makes, STAND_INS plays that part (the test's batch engine plays vLLM's or
  OpenAI's, ``scored_record`` plays a Ray worker);
- run: by ``sh``, from a copy of a clone's folder (minijudge.py, examples/, tests/, .ci/
  and ``data.jsonl``, a copy of examples/qa.jsonl, for the commands that name "your
  data"), with the judge URL shown (``http://127.0.0.1:8000``, ``http://judge-lb:8000``)
  replaced by the loopback stub's, as a user replaces it by theirs; the stub plays the
  judge of tests/test_readme_tasks.py and serves the model the command names. It must exit
  0 (or as EXIT_STATUS says), and a console block's output must be what it printed: the
  lines shown in order, ``...`` alone on a line standing for any lines and inside a line
  for any text, ports and timings aside.

A block holding a command that is none of these fails the test: a new command in the docs
needs a test, or a reason. Each ```python block runs too: one of ``>>>`` lines as a
doctest against the stub (its URL replaced as above), any other must be the text of an
example file (examples/ray_judge.py, which tests/ray_check.py runs). And every link from
one doc to another finds its file and its heading.

Python 3.8+, standard library only.
"""
import doctest
import glob
import json
import os
import re
import shutil
import subprocess
import sys
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(HERE)
sys.path.insert(0, REPO)
sys.path.insert(0, HERE)
from batch_engine import run_batch  # noqa: E402
from stub import JUDGE_ENV, SideBySide, StubTestCase, chat, copy_minijudge  # noqa: E402
from test_readme_tasks import (FAKE_VLLM, between, commands, github_anchor,  # noqa: E402
                               headings, judge, readme, tasks)

DOCS = ["README.md"] + sorted(os.path.relpath(path, REPO)
                              for path in glob.glob(os.path.join(REPO, "docs", "*.md")))
URLS_SHOWN = ("http://127.0.0.1:8000", "http://judge-lb:8000")
SUITE = "python tests/run.py"
BENCHMARK = ("a benchmark of minutes on this project's 2 shared cores (bench_trust.py about "
             "20 s); it asserts nothing: run by hand")
OPENAI = ("an upload to (or download from) OpenAI's Batch API: it needs an account and its "
          "key; the test's batch engine plays the batch")
EIGHT_GPUS = ("eight vLLM processes on eight GPUs; the test's batch engine plays vLLM on each "
              "part the export wrote (README's batch task runs a vllm run-batch as written)")
RAY = ("needs ray[data], which the suite does not install (.ci/run installs it for "
       "tests/ray_check.py, which runs this example on a local cluster); scored_record, "
       "as the example's workers call it, writes the shards here")

NOT_RUNNABLE = {
    # README.md
    SUITE: "the whole suite, this test among it: .ci/run runs it as written (checked below)",
    # docs/batch-and-ray.md
    'curl -s https://api.openai.com/v1/files -H "$H" -F purpose=batch '
    '-F file=@requests.000.jsonl': OPENAI,
    'curl -s https://api.openai.com/v1/batches -H "$H" -H "Content-Type: application/json" '
    '-d \'{"input_file_id": "file-...", "endpoint": "/v1/chat/completions", '
    '"completion_window": "24h"}\'': OPENAI,
    'curl -s https://api.openai.com/v1/batches/batch_... -H "$H" # until "completed"': OPENAI,
    'curl -s https://api.openai.com/v1/files/OUTPUT_FILE_ID/content -H "$H" > '
    'results.000.jsonl': OPENAI,
    'curl -s https://api.openai.com/v1/files/ERROR_FILE_ID/content -H "$H" > '
    'errors.000.jsonl': OPENAI,
    "for g in 0 1 2 3 4 5 6 7; do": EIGHT_GPUS,
    "CUDA_VISIBLE_DEVICES=$g vllm run-batch -i requests.00$g.jsonl -o results.00$g.jsonl "
    "--model Qwen/Qwen2.5-7B-Instruct &": EIGHT_GPUS,
    "done; wait": EIGHT_GPUS,
    'pip install "ray[data]"': "installs Ray from PyPI: the suite installs nothing",
    "python examples/ray_judge.py examples/qa.jsonl shards/ --judge-url "
    "http://127.0.0.1:8000": RAY,
    # docs/layout.md
    "python .ci/complexity.py minijudge.py": "needs lizard (pip install lizard), a dev-only "
                                             "tool the suite does not install; .ci/run "
                                             "installs and runs it",
    # docs/performance.md
    "python tests/bench_throughput.py --latency 0.05 --concurrency 32 128 --items 6000 "
    "--repeat 3": BENCHMARK,
    "python tests/bench_throughput.py --memory 100000": BENCHMARK,
    "python tests/bench_throughput.py --dists constant tail lognormal --items 2000 "
    "--repeat 3": BENCHMARK,
    "python tests/bench_parsers.py": BENCHMARK + "; it also needs the real judge outputs, "
                                                 "which a clone does not hold",
    "python tests/bench_batch.py --records 100000 1000000": BENCHMARK,
    "python tests/bench_offline.py --records 100000 --repeat 3": BENCHMARK,
    "python tests/bench_offline.py --records 1000000": BENCHMARK,
    "python tests/bench_throughput.py --servers 1 8 64 --concurrency 64 --items 100000 "
    "--repeat 1": BENCHMARK,
    "python tests/bench_cache.py 1000000 3000000": BENCHMARK,
    "python tests/bench_limits.py": BENCHMARK,
    "python tests/bench_limits.py --no-headers": BENCHMARK,
    "python tests/bench_trust.py": BENCHMARK,
    "python tests/bench_ranking.py": BENCHMARK,
}

EXIT_STATUS = {
    # a clone holds no real judge outputs: it says which files are missing and exits 1,
    # as docs/templates-and-parsers.md says next to it
    "python tests/test_real_data.py --report --show 5": 1,
}

# a command run once for each value of a variable it names ("on machine K = 0..7")
EACH = {
    "python -m minijudge --shard $K/8 --judge-url http://judge-lb:8000 --judge-model M "
    "data.jsonl -o shard-$K.jsonl # on machine K = 0..7": ("K", range(8)),
}

# -- The docs, read as a reader reads them -----------------------------------------------


def read(name):
    with open(os.path.join(REPO, name), encoding="utf-8") as f:
        return f.read()


def blocks(text):
    """(language, body) of each fenced block, in order."""
    return re.findall(r"^```(\w*)\n(.*?)^```", text, re.S | re.M)


def key(command):
    """A command as the tables name it: its words, one space apart."""
    return " ".join(command.split())


def shell_commands(name):
    """[(block number, command, shown output or None)] of a doc: each command of its sh
    blocks (output None), and the command opening each console block, with its output."""
    found = []
    for number, (language, body) in enumerate(blocks(read(name))):
        if language == "sh":
            found.extend((number, command, None) for command in commands(body))
        elif language == "console":
            first, _, shown = body.partition("\n")
            if not first.startswith("$ "):
                raise ValueError("{}: a console block opens with its command, '$ ...'; got "
                                 "{!r}".format(name, first))
            found.append((number, first[2:], shown))
    return found


def readme_tasks():
    """The commands tests/test_readme_tasks.py runs: the README's "Common tasks"."""
    return {command for task in tasks(readme()).values() for command in task}


def ran_here(name):
    """The commands of a doc this file runs, by block: {block number: [(command, shown)]}."""
    handled = readme_tasks() if name == "README.md" else set()
    by_block = {}
    for number, command, shown in shell_commands(name):
        if command not in handled:
            by_block.setdefault(number, []).append((command, shown))
    return by_block


# -- Output, as a console block shows it --------------------------------------------------


def steady(text):
    """The text with what differs from run to run made alike: ports, seconds, rates."""
    text = re.sub(r"127\.0\.0\.1:\d+", "127.0.0.1:PORT", text)
    text = re.sub(r"\b\d+(?:\.\d+)? s\b", "N s", text)
    return re.sub(r"\b\d+(?:\.\d+)? requests/s\b", "N requests/s", text)


def shown_pattern(shown):
    """A regular expression of the output a console block shows: each line as it is, but a
    line `...` is any lines (none too), and `...` inside a line any text."""
    parts = []
    for line in steady(shown).splitlines():
        if line == "...":
            parts.append(r"(?:[^\n]*\n)*?")
        else:
            parts.append(".*".join(map(re.escape, line.split("..."))) + r"\n")
    return "".join(parts)


# -- Stand-ins for what cannot run here ---------------------------------------------------


def engine_replies(case):
    """The batch engine answers each exported part: requests.NNN.jsonl -> results.NNN.jsonl."""
    for part in sorted(glob.glob(os.path.join(case.clone, "requests.*.jsonl"))):
        results = part.replace("requests.", "results.")
        run_batch([part], results, case.srv.url + "/v1/chat/completions")


def no_errors(case):
    """OpenAI's error file of a batch in which no request failed: empty."""
    with open(os.path.join(case.clone, "errors.000.jsonl"), "w", encoding="utf-8"):
        pass


def ray_shards(case):
    """What examples/ray_judge.py's workers write: scored_record's lines in a shard."""
    import minijudge
    os.makedirs(os.path.join(case.clone, "shards"))
    judge = minijudge.LLMJudge(case.srv.url)
    with open(os.path.join(case.clone, "examples", "qa.jsonl"), encoding="utf-8") as f:
        lines = [minijudge.scored_record(judge, json.loads(text), line=n)
                 for n, text in enumerate(f, 1) if text.strip()]
    judge.close()
    with open(os.path.join(case.clone, "shards", "lines-0000000001.jsonl"), "w",
              encoding="utf-8") as f:
        f.writelines(json.dumps(line) + "\n" for line in lines)


STAND_INS = {
    'curl -s https://api.openai.com/v1/files/OUTPUT_FILE_ID/content -H "$H" > '
    'results.000.jsonl': engine_replies,
    'curl -s https://api.openai.com/v1/files/ERROR_FILE_ID/content -H "$H" > '
    'errors.000.jsonl': no_errors,
    "CUDA_VISIBLE_DEVICES=$g vllm run-batch -i requests.00$g.jsonl -o results.00$g.jsonl "
    "--model Qwen/Qwen2.5-7B-Instruct &": engine_replies,
    "python examples/ray_judge.py examples/qa.jsonl shards/ --judge-url "
    "http://127.0.0.1:8000": ray_shards,
}



# -- The judge recipes.md's new judgments meet -------------------------------------------

GRADE_1_TO_10 = "N a whole number from 1 (useless) to 10 (excellent)"  # examples/grade_1_to_10.txt


def benchmark_judge(request):
    """A judge that gives its reasons, then its verdict on a last line, as MT-Bench's and
    Arena-Hard's judges are asked to (--explain): it grades a reply by its words (one grade
    a 2 words, 1 to 10) and prefers the pair's answer of more words, a tie within 2. A
    stand-in with a length bias, not a model; other prompts go to the README's judge."""
    prompt = request.prompt
    if GRADE_1_TO_10 in prompt:
        words = len(between(prompt, "[The Start of the Response]",
                            "[The End of the Response]").split())
        grade = max(1, min(10, words // 2))
        return chat("The reply has {} words; a longer reply says more here.\n\n"
                    "Rating: [[{}]]".format(words, grade))
    if "[The Start of Assistant A's Answer]" in prompt and "First explain" in prompt:
        a, b = (len(between(prompt, "[The Start of Assistant {0}'s Answer]".format(side),
                            "[The End of Assistant {0}'s".format(side)).split())
                for side in "AB")
        verdict = "[[C]]" if abs(a - b) <= 2 else "[[A]]" if a > b else "[[B]]"
        return chat("Assistant A's answer has {} words, Assistant B's {}; the longer one "
                    "covers more.\n{}".format(a, b, verdict))
    return judge(request)


RESPONDERS = {"docs/recipes.md": benchmark_judge}  # a doc's judge, where not the README's

# a page whose blocks are steps of one session (a block judges the records an earlier one
# made): they run in one clone, in order, as a reader following the page runs them
SESSIONS = {"docs/recipes.md"}

# -- The tests ---------------------------------------------------------------------------


class EveryCommandIsAccountedFor(unittest.TestCase):
    """Each command is run (here or by test_readme_tasks) or listed as not runnable."""

    def test_each_doc_with_commands_has_its_test(self):
        tested = {name for name in DOCS
                  if any(key(command) not in NOT_RUNNABLE
                         for block in ran_here(name).values() for command, _ in block)}
        self.assertEqual(tested, set(DocCommands.DOCS.values()))

    def test_the_not_runnable_are_all_in_the_docs(self):
        shown = {key(command) for name in DOCS for _, command, _ in shell_commands(name)}
        for table in (NOT_RUNNABLE, EXIT_STATUS, EACH, STAND_INS):
            self.assertEqual(set(table) - shown, set())  # a stale entry: the docs changed
        self.assertEqual(set(STAND_INS) - set(NOT_RUNNABLE), set())

    def test_every_readme_task_is_run_by_test_readme_tasks(self):
        listed = readme_tasks()
        in_section = set()
        text = readme()
        start = text.index("\n## Common tasks\n")
        section = text[start:text.index("\n## ", start + 1)]
        for language, body in blocks(section):
            self.assertEqual(language, "sh")
            in_section.update(commands(body))
        self.assertEqual(in_section, listed)

    def test_every_test_file_named_exists(self):
        # a reader sent to tests/test_x.py finds it: files are renamed as tests move
        for name in DOCS + [os.path.join("tests", "HOSTILE.md")]:
            for named in set(re.findall(r"\b(test_[a-z0-9_]+\.py)\b", read(name))):
                self.assertTrue(os.path.isfile(os.path.join(HERE, named)), (name, named))

    def test_ci_runs_the_readme_s_test_command_as_written(self):
        self.assertIn(SUITE, [command for _, command, _ in shell_commands("README.md")])
        with open(os.path.join(REPO, ".ci", "run"), encoding="utf-8") as f:
            self.assertIn("\n" + SUITE + "\n", f.read())

    def test_a_python_block_is_a_doctest_or_an_example_s_code(self):
        examples = [read(path) for path in glob.glob(os.path.join(REPO, "examples", "*.py"))]
        for name in DOCS:
            for language, body in blocks(read(name)):
                if language != "python" or ">>>" in body:
                    continue
                with self.subTest(name=name, block=body[:40]):
                    compile(body, name, "exec")
                    self.assertTrue(any(body.strip("\n") in text for text in examples))


class Links(unittest.TestCase):
    """Each link to a doc finds its file, and its heading if it names one."""

    def test_every_relative_link_finds_its_file_and_heading(self):
        for name in DOCS + ["tests/HOSTILE.md"]:
            text = re.sub(r"^```.*?^```", "", read(name), flags=re.S | re.M)
            for target in re.findall(r"\]\(([^)\s]+)\)", text):
                if re.match(r"\w+:", target):
                    continue
                path, _, anchor = target.partition("#")
                with self.subTest(doc=name, link=target):
                    found = os.path.normpath(os.path.join(os.path.dirname(name), path or
                                                          os.path.basename(name)))
                    self.assertTrue(os.path.exists(os.path.join(REPO, found)), found)
                    if anchor:
                        titles = headings(read(found))
                        self.assertIn(anchor, [github_anchor(title) for _, title in titles])


class Doctests(StubTestCase):
    """The ```python blocks of >>> lines, against the stub as a judge on your server."""

    def test_each_doctest_runs_as_shown(self):
        self.srv.responder = judge
        self.srv.models = ("judge-model",)
        ran = 0
        for name in DOCS:
            names = {}  # a page's blocks share their names, as a reader's session does
            for language, body in blocks(read(name)):
                if language != "python" or ">>>" not in body:
                    continue
                for url in URLS_SHOWN:
                    body = body.replace(url, self.srv.url)
                test = doctest.DocTestParser().get_doctest(body, names, name, name, 0)
                # verbose=False: by default doctest reads -v in sys.argv (python -m unittest -v)
                # and prints each example it tries, which the out= below takes as a failure
                runner = doctest.DocTestRunner(verbose=False, optionflags=doctest.ELLIPSIS)
                runner.run(test, out=lambda text, name=name: self.fail(name + "\n" + text),
                           clear_globs=False)
                names = test.globs
                ran += 1
        self.assertGreaterEqual(ran, 3)  # the README's, python-api.md's two


class DocCommands(SideBySide):
    """Each doc's commands, run block by block, each block in a fresh copy of a clone."""

    side_by_side = 3  # mostly waiting on subprocesses; two cores are shared
    DOCS = {"test_readme": "README.md", "test_batch_and_ray": "docs/batch-and-ray.md",
            "test_conversations": "docs/conversations.md",
            "test_guarantees": "docs/guarantees.md", "test_layout": "docs/layout.md",
            "test_migrating": "docs/migrating.md", "test_modes": "docs/modes.md",
            "test_recipes": "docs/recipes.md",
            "test_templates_and_parsers": "docs/templates-and-parsers.md"}

    def test_readme(self):
        self.run_doc()

    def test_batch_and_ray(self):
        self.run_doc()
        self.assertIn("minijudge report: 24 records;", self.last.stderr)  # of the Ray shards


    def test_conversations(self):
        self.run_doc()

    def test_guarantees(self):
        self.run_doc()

    def test_layout(self):
        self.run_doc()

    def test_migrating(self):
        self.run_doc()

    def test_modes(self):
        self.run_doc()

    def test_recipes(self):
        self.run_doc()
        self.assertIn('    "model-z"  4        1       0.6875  0.9167       3.6667  ',
                      self.last.stderr)  # of your own tool's grades

    def test_templates_and_parsers(self):
        self.run_doc()

    def run_doc(self):
        name = self.DOCS[self._testMethodName]
        self.srv.responder = RESPONDERS.get(name, judge)
        cloned = False
        for number, block in sorted(ran_here(name).items()):
            if name not in SESSIONS or not cloned:
                self.new_clone()
                cloned = True
            for command, shown in block:
                with self.subTest(doc=name, command=command):
                    self.run_command(command, shown)

    def new_clone(self):
        """A fresh copy of a clone's folder, with a `python` and a `vllm` on its PATH."""
        self.clone = self.path("clone-{}".format(len(os.listdir(self.tmp))))
        os.mkdir(self.clone)
        copy_minijudge(self.clone)
        for folder in ("examples", "tests", ".ci"):
            shutil.copytree(os.path.join(REPO, folder), os.path.join(self.clone, folder),
                            ignore=shutil.ignore_patterns("__pycache__"))
        shutil.copy(os.path.join(REPO, "examples", "qa.jsonl"),
                    os.path.join(self.clone, "data.jsonl"))
        self.bin = os.path.join(self.clone, ".bin")
        os.mkdir(self.bin)
        os.symlink(sys.executable, os.path.join(self.bin, "python"))
        with open(os.path.join(self.bin, "vllm"), "w", encoding="utf-8") as f:
            f.write(FAKE_VLLM.format(python=sys.executable, tests=HERE, url=self.srv.url))
        os.chmod(os.path.join(self.bin, "vllm"), 0o755)

    def run_command(self, command, shown):
        if key(command) in NOT_RUNNABLE:
            if key(command) in STAND_INS:
                STAND_INS[key(command)](self)
            return
        named = re.search(r"--judge-model (\S+)", command)
        self.srv.models = (named.group(1),) if named else ("judge-model",)
        script = command
        for url in URLS_SHOWN:
            script = script.replace(url, self.srv.url)
        if key(command) in EACH:
            variable, values = EACH[key(command)]
            script = "for {} in {}; do {}\ndone".format(
                variable, " ".join(map(str, values)), script)
        env = {k: v for k, v in os.environ.items() if k not in JUDGE_ENV}
        env.update(PATH=self.bin + os.pathsep + env.get("PATH", ""), PYTHONUNBUFFERED="1")
        env.pop("PYTHONPATH", None)
        # a console block shows what a terminal shows: both streams, as they came
        errors = subprocess.STDOUT if shown is not None else subprocess.PIPE
        proc = subprocess.run(["sh", "-c", "set -e\n" + script], cwd=self.clone, env=env,
                              stdout=subprocess.PIPE, stderr=errors, timeout=180,
                              universal_newlines=True)
        self.last = proc
        said = (proc.stderr or proc.stdout)[-3000:]
        self.assertEqual(proc.returncode, EXIT_STATUS.get(key(command), 0), said)
        if shown is not None:
            printed = steady(proc.stdout)
            if not printed.endswith("\n"):
                printed += "\n"
            if not re.fullmatch(shown_pattern(shown), printed):
                self.fail("{} printed:\n{}\nnot what the docs show:\n{}".format(
                    command, printed, steady(shown)))


if __name__ == "__main__":
    unittest.main()
