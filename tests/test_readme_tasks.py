"""The README's contents list, its length and its "Common tasks", run as a user would run them.

Each command in the "## Common tasks" section is taken from the README as it stands and run
by the shell (``sh``), from a copy of a clone's folder (minijudge.py and examples/), against
the loopback stub (tests/stub.py): the README's setup block is run first, with its judge URL
and key replaced by the stub's, as the README tells a user to replace them by theirs. The
stub plays a judge that reads the prompt (below), so each task's check can say what the
README says: which fields reached the prompt, which verdicts came back, how many requests.
The batch task's engine, ``vllm run-batch``, is played by a ``vllm`` script on PATH that
answers the exported lines through tests/batch_engine.py and a stub of its own (vLLM runs
the model itself: it asks the user's server nothing). tests/test_docs_commands.py runs
the README's other commands and those of docs/, with this file's judge.

Python 3.8+, standard library only.
"""
import json
import os
import re
import shutil
import subprocess
import sys
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(HERE)
sys.path.insert(0, HERE)  # so `python -m unittest tests.test_readme_tasks` finds stub
sys.path.insert(0, os.path.join(REPO, "examples"))
from batch_engine import SERVER_ERROR  # noqa: E402
from offline_demo import heuristic_run  # noqa: E402
from stub import JUDGE_ENV, SideBySide, StubServer, chat, copy_minijudge  # noqa: E402

README = os.path.join(REPO, "README.md")
MOST_WORDS = 3000  # issue 45: a README a newcomer finishes in ten minutes
URL_SHOWN = "http://127.0.0.1:8000"  # what the setup block tells the user to replace
KEY_SHOWN = "sk-..."
KEY = "sk-test-readme30-Zq7"
PANEL = {"llama-3.1-8b-instruct": (5, 1), "qwen2.5-7b-instruct": (4, 2),
         "mistral-7b-instruct-v0.3": (3, 3)}  # model: (rating if right, if wrong)
BATCH_MODEL = "Qwen/Qwen2.5-7B-Instruct"

# -- The README, read as a user reads it ----------------------------------------------


def readme():
    with open(README, encoding="utf-8") as f:
        return f.read()


def github_anchor(heading):
    """The id GitHub gives a heading: lowercase, punctuation but - and _ dropped, spaces -."""
    text = re.sub(r"[^\w\- ]", "", heading.strip().lower())
    return text.replace(" ", "-")


def headings(text):
    """(level, title) of each markdown heading outside code blocks."""
    found = []
    in_code = False
    for line in text.splitlines():
        if line.startswith("```"):
            in_code = not in_code
        elif not in_code and re.match(r"#{1,6} ", line):
            hashes, title = line.split(" ", 1)
            found.append((len(hashes), title))
    return found


def section(text, title):
    """The text of `## title`, up to the next `## ` heading."""
    start = text.index("\n## {}\n".format(title))
    end = text.find("\n## ", start + 1)
    return text[start:end]


def code_blocks(text):
    """[(the paragraph before it, [commands])] for each ```sh block; a backslash at a line's
    end continues the command, a `#` line is a comment."""
    blocks = []
    for lead, body in re.findall(r"((?:[^\n]+\n)*?)\n?```sh\n(.*?)```", text, re.S):
        blocks.append((lead, commands(body)))
    return blocks


def commands(body):
    joined = body.replace("\\\n", " ")
    return [line.strip() for line in joined.splitlines()
            if line.strip() and not line.strip().startswith("#")]


def tasks(text):
    """{task title: [commands]}: the setup block (before the first title) under ''."""
    found = {}
    title = ""
    for lead, block in code_blocks(section(text, "Common tasks")):
        match = re.search(r"\*\*([^*]+?)\.?\*\*", lead)
        if match:
            title = match.group(1)
        found.setdefault(title, []).extend(block)
    return found


# -- The judge the stub plays ------------------------------------------------------------


def between(prompt, start, end):
    match = re.search(re.escape(start) + r"\n(.*?)\n" + re.escape(end), prompt, re.S)
    if match:
        return match.group(1)
    return None


def right(prompt):
    """True if the response holds the reference, None without a reference."""
    reference = between(prompt, "[Reference Answer]", "")
    if reference is None:
        return None
    response = between(prompt, "[The Start of the Response]", "[The End of the Response]")
    return reference.lower() in response.lower()


def shorter(prompt):
    """The pairwise verdict of a judge that prefers the answer holding the reference, if
    one is shown and one answer holds it, else the shorter answer (so both orders agree)."""
    a = between(prompt, "[The Start of Assistant A's Answer]", "[The End of Assistant A's")
    b = between(prompt, "[The Start of Assistant B's Answer]", "[The End of Assistant B's")
    reference = between(prompt, "[Reference Answer]", "")
    if reference is not None:
        holds = [reference.lower() in answer.lower() for answer in (a, b)]
        if holds == [True, False]:
            return "[[A]]"
        if holds == [False, True]:
            return "[[B]]"
    if len(a) == len(b):
        return "[[C]]"
    if len(a) < len(b):
        return "[[A]]"
    return "[[B]]"


def judge(request):
    """Reply to a request as a judge that reads its prompt would, by the prompt's kind."""
    prompt = request.prompt
    if "[The Start of Assistant A's Answer]" in prompt:
        return chat(shorter(prompt))
    if "[The Start of the Agent's Run]" in prompt:  # yes if the tools bear the outcome out
        return chat(heuristic_run(prompt))
    verdict = right(prompt)
    if "Reply with one word: yes" in prompt:
        return chat({True: "yes", False: "no"}[verdict])
    if "Criterion: helpfulness" in prompt:
        return chat({True: "Excellent", False: "Bad"}[verdict])
    if "\nCriteria:\n- accuracy" in prompt:  # a rubric: reasoning, then one JSON object
        numbers = {True: (5, 9, 5), False: (1, 7, 2), None: (3, 5, 3)}[verdict]
        return chat("Checked against the reference.\n```json\n" + json.dumps(dict(
            zip(("accuracy", "clarity", "completeness"), numbers))) + "\n```")
    good, bad = PANEL.get(request.json["model"], (5, 2))
    rating = {True: good, False: bad, None: 3}[verdict]
    reply = "Rating: [[{}]]".format(rating)
    if "First explain your judgement" in prompt:  # --explain: the reasons, then the verdict
        reply = EXPLANATION + "\n\n" + reply
    return chat(reply)


# what the judge explains first with --explain: it quotes a rating that is not its verdict
EXPLANATION = 'A careless judge might say "Rating: [[1]]" here; this one reads the reference.'


FAKE_VLLM = """#!{python}
# plays `vllm run-batch -i IN -o OUT --model M` for the test: the stub answers each line
import json, sys
sys.path.insert(0, {tests!r})
from batch_engine import run_batch
args = sys.argv[1:]
if args[0] != "run-batch":
    sys.exit("vllm: only run-batch is played here")
flags = dict(zip(args[1::2], args[2::2]))
with open(flags["-i"], encoding="utf-8") as f:
    models = {{json.loads(line)["body"]["model"] for line in f}}
if models != {{flags["--model"]}}:
    sys.exit("vllm: the lines name {{}}, not --model {{}}".format(models, flags["--model"]))
run_batch([flags["-i"]], flags["-o"], {url!r} + "/v1/chat/completions")
"""

# -- The tests ---------------------------------------------------------------------------


class ContentsList(unittest.TestCase):
    """A contents list at the top links to every section, every link finds its heading, and
    the whole is short enough to finish in ten minutes."""

    def test_the_readme_is_at_most_3000_words(self):
        self.assertLessEqual(len(readme().split()), MOST_WORDS)  # as `wc -w README.md`

    def test_every_top_section_is_listed_before_the_quickstart(self):
        text = readme()
        top = text[:text.index("\n## Quickstart\n")]
        listed = re.findall(r"\]\(#([\w-]+)\)", top)
        sections = [github_anchor(title) for level, title in headings(text) if level == 2]
        self.assertEqual([a for a in listed if a in sections], sections)

    def test_every_link_to_a_section_finds_its_heading(self):
        text = readme()
        anchors = {github_anchor(title) for level, title in headings(text)}
        for link in re.findall(r"\]\(#([^)]*)\)", text):
            with self.subTest(link=link):
                self.assertIn(link, anchors)


class CommonTasks(SideBySide):
    """Each command of "Common tasks", as written, in a copy of a clone."""

    side_by_side = 3  # each task its own clone, stubs and shell: three at a time on two cores

    def setUp(self):
        super().setUp()
        self.srv.responder = judge
        self.srv.require_key = KEY
        self.srv.models = ("judge-model",)  # a server of one model; the panel's has three
        self.clone = self.path("clone")
        os.mkdir(self.clone)
        copy_minijudge(self.clone)  # with its .pyc, as after a first run
        shutil.copytree(os.path.join(REPO, "examples"), os.path.join(self.clone, "examples"))
        self.bin = self.path("bin")
        os.mkdir(self.bin)
        os.symlink(sys.executable, os.path.join(self.bin, "python"))
        # vLLM's run-batch runs the model itself: its own stub, which asks for no key
        self.engine = StubServer(models=(BATCH_MODEL,), responder=judge).start()
        self.addCleanup(self.engine.stop)
        self.write(os.path.join("bin", "vllm"), FAKE_VLLM.format(
            python=sys.executable, tests=HERE, url=self.engine.url))
        os.chmod(os.path.join(self.bin, "vllm"), 0o755)
        self.tasks = tasks(readme())

    def setup_lines(self):
        """The README's setup block, the URL and key replaced by the stub's."""
        lines = self.tasks[""]
        text = "\n".join(lines)
        self.assertIn(URL_SHOWN, text)
        self.assertIn(KEY_SHOWN, text)
        return text.replace(URL_SHOWN, self.srv.url).replace(KEY_SHOWN, KEY)

    def shell(self, command):
        """What the setup block then `command` do in sh: (exit code, stdout, stderr, the chat
        requests the stub got meanwhile)."""
        env = {k: v for k, v in os.environ.items() if k not in JUDGE_ENV}
        env["PATH"] = self.bin + os.pathsep + env.get("PATH", "")
        env.pop("PYTHONPATH", None)
        script = "set -e\n" + self.setup_lines() + "\n" + command + "\n"
        before = len(self.srv.requests)
        proc = subprocess.run(["sh", "-c", script], cwd=self.clone, env=env,
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=60)
        out = proc.stdout.decode("utf-8")
        err = proc.stderr.decode("utf-8")
        self.assertNotIn(KEY, out + err)
        self.assertKeyInNoFile()
        chats = [r for r in self.srv.requests[before:] if r.json is not None]
        return proc.returncode, out, err, chats

    def assertKeyInNoFile(self):
        for folder, _, names in os.walk(self.clone):
            for name in names:
                with open(os.path.join(folder, name), "rb") as f:
                    self.assertNotIn(KEY.encode(), f.read(), name)

    def commands(self, title, count):
        commands = self.tasks[title]
        self.assertEqual(len(commands), count, commands)
        return commands

    def scored(self):
        with open(os.path.join(self.clone, "scored.jsonl"), encoding="utf-8") as f:
            return [json.loads(line) for line in f]

    def example(self, name):
        with open(os.path.join(self.clone, "examples", name), encoding="utf-8") as f:
            return [json.loads(line) for line in f]

    def run_scored(self, command, records):
        """Run `command`: exit 0, nothing on stdout, the summary on stderr, and in
        scored.jsonl each input record with its fields kept; (records, stderr, chats)."""
        code, out, err, chats = self.shell(command)
        self.assertEqual(code, 0, err)
        self.assertEqual(out, "")
        self.assertIn("minijudge: {} records in ".format(len(records)), err)
        scored = self.scored()
        self.assertEqual([{k: r[k] for k in source} for r, source in zip(scored, records)],
                         records)
        return scored, err, chats

    def test_every_task_the_issue_asks_for_is_there_and_checked(self):
        titles = [t for t in self.tasks if t]
        self.assertEqual(titles, ["Your own field names", "A reference answer",
                                  "Two responses (pairwise)", "Reasons first", "A criterion",
                                  "Several criteria", "Ranking systems", "Conversations and agents",
                                  "A panel of judges", "Figures by category",
                                  "Another tool's judgments", "A batch engine"])

    def test_your_own_field_names(self):
        dry, run = self.commands("Your own field names", 2)
        own = self.example("own_fields.jsonl")
        code, out, err, chats = self.shell(dry)
        self.assertEqual((code, self.srv.requests), (0, []), err)  # --dry-run sends nothing
        for record in own:
            self.assertIn("[Question]\n{prompt}\n".format(**record), out)
            self.assertIn("[The Start of the Response]\n{completion}\n".format(**record), out)
        scored, err, chats = self.run_scored(run, own)
        self.assertEqual([r["judge_status"] for r in scored], ["ok"] * 4)
        self.assertEqual([r["judge_value"] for r in scored], [3] * 4)  # no reference sent
        self.assertIn("fields: no record has field 'answer': judged without a reference", err)
        self.assertEqual(len(chats), 4)
        for record in own:  # each record's question and response in one prompt
            asked = "[Question]\n{prompt}\n".format(**record)
            sent = [c for c in chats if asked in c.prompt and record["completion"] in c.prompt]
            self.assertEqual(len(sent), 1)

    def test_a_server_of_several_models(self):
        # the README: "if it lists several, also `export LLM_JUDGE_MODEL=NAME`"
        self.srv.models = ("judge-model", "other-model")
        (export,) = re.findall(r"also `(export LLM_JUDGE_MODEL=NAME)`", section(
            readme(), "Common tasks"))
        _, run = self.commands("Your own field names", 2)
        code, out, err, chats = self.shell(run)
        self.assertEqual((code, chats), (1, []))
        self.assertIn("lists judge-model, other-model: pass one with model= or --judge-model",
                      err)
        own = self.example("own_fields.jsonl")
        scored, err, chats = self.run_scored(export.replace("NAME", "other-model") + "\n" +
                                             run, own)
        self.assertEqual({chat.json["model"] for chat in chats}, {"other-model"})

    def test_your_own_field_names_misspelt(self):
        _, run = self.commands("Your own field names", 2)
        wrong = run.replace("--question-field prompt", "--question-field qq")
        self.assertNotEqual(wrong, run)
        code, out, err, chats = self.shell(wrong)
        self.assertEqual(chats, [])
        self.assertNotEqual(code, 0)  # every record failed
        for record in self.scored():
            self.assertEqual(record["judge_status"], "bad_record")
            self.assertIn("--question-field qq", record["judge_error"])
            fields = record["judge_error"].split("--question-field qq", 1)[1]
            for name in ("completion", "gold", "prompt", "uid"):
                self.assertIn(name, fields)
            self.assertTrue(record["judge_error"].endswith("; pass --question-field prompt?"))

    def test_a_reference_answer(self):
        rated, binary = self.commands("A reference answer", 2)
        # own_fields.jsonl: q1 and q3 hold their reference, q2 and q4 do not
        own = self.example("own_fields.jsonl")
        scored, err, chats = self.run_scored(rated, own)
        self.assertEqual([r["judge_value"] for r in scored], [5, 2, 5, 2])
        self.assertEqual([r["judge_score"] for r in scored], [1.0, 0.25, 1.0, 0.25])
        for record in own:
            (sent,) = [c.prompt for c in chats if record["completion"] in c.prompt]
            self.assertIn("[Reference Answer]\n{gold}\n".format(**record), sent)
        qa = self.example("qa.jsonl")
        scored, err, chats = self.run_scored(binary, qa)
        for record, source in zip(scored, qa):
            with self.subTest(id=source["id"]):
                if not source["response"]:
                    self.assertEqual(record["judge_status"], "empty_response")
                    continue
                right = source["answer"].lower() in source["response"].lower()
                self.assertEqual(
                    (record["judge_status"], record["judge_value"], record["judge_score"]),
                    ("ok", right, float(right)))

    def test_two_responses_pairwise(self):
        (command,) = self.commands("Two responses (pairwise)", 1)
        pairs = self.example("pairs.jsonl")
        scored, err, chats = self.run_scored(command, pairs)
        self.assertEqual(len(chats), 2 * len(pairs))  # both orders
        for record, pair in zip(scored, pairs):
            a, b = len(pair["response_a"]), len(pair["response_b"])
            expected = "A"
            if b < a:
                expected = "B"
            if a == b:
                expected = "tie"
            self.assertEqual((record["judge_verdict"], record["judge_consistent"]),
                             (expected, True))
        self.assertIn("\n  A's win rate ", err)
        # a judge that always answers [[A]]: the two orders disagree, each pair a tie
        self.srv.responder = lambda request: chat("[[A]]")
        scored, err, chats = self.run_scored(command, pairs)
        self.assertEqual({(r["judge_verdict"], r["judge_consistent"]) for r in scored},
                         {("tie", False)})

    def test_reasons_first(self):
        (command,) = self.commands("Reasons first", 1)
        qa = self.example("qa.jsonl")
        scored, err, chats = self.run_scored(command, qa)
        self.assertTrue(all("First explain your judgement" in c.prompt for c in chats))
        self.assertEqual({c.json["max_tokens"] for c in chats}, {512})
        for record, source in zip(scored, qa):
            if not source["response"]:
                continue
            right = source["answer"].lower() in source["response"].lower()
            self.assertEqual((record["judge_value"], record["judge_explanation"]),
                             ({True: 5, False: 2}[right], EXPLANATION))  # not the [[1]] quoted

    def test_a_criterion(self):
        (command,) = self.commands("A criterion", 1)
        qa = self.example("qa.jsonl")
        scored, err, chats = self.run_scored(command, qa)
        for record, source in zip(scored, qa):
            if not source["response"]:
                continue
            expected = ("Bad", 0.0)
            if source["answer"].lower() in source["response"].lower():
                expected = ("Excellent", 1.0)
            self.assertEqual((record["judge_option"], record["judge_score"]), expected)

    def test_several_criteria(self):
        (command,) = self.commands("Several criteria", 1)
        qa = self.example("qa.jsonl")
        scored, err, chats = self.run_scored(command, qa)
        # right: (2 * 1 + 0.9 + 1) / 4 = 0.975; wrong: (2 * 0 + 0.7 + 0.25) / 4 = 0.2375
        for record, source in zip(scored, qa):
            if not source["response"]:
                self.assertEqual(record["judge_status"], "empty_response")
                continue
            right = source["answer"].lower() in source["response"].lower()
            self.assertEqual(record["judge_score"], {True: 0.975, False: 0.2375}[right])
            self.assertEqual(record["judge_criteria"]["accuracy"]["value"], 5 if right else 1)
        self.assertIn("\n  criteria, over the records judged (95% CIs):\n    accuracy: ", err)

    def test_ranking_systems(self):
        (command,) = self.commands("Ranking systems", 1)
        systems = self.example("systems.jsonl")
        scored, err, chats = self.run_scored(command, systems)
        names = sorted(systems[0]["responses"])
        pairs = len(names) * (len(names) - 1) // 2
        self.assertEqual(len(chats), 2 * pairs * len(systems))  # every pair, both orders
        for record in scored:
            self.assertEqual(sorted(record["judge_ranking"]), names)
        # the judge prefers the shorter answer: model-y's, then model-x's, then model-z's
        self.assertEqual(scored[0]["judge_ranking"], ["model-y", "model-x", "model-z"])
        self.assertIn("\n  ranked over {} comparisons, baseline model-x at 1000 (".format(
            pairs * len(systems)), err)

    def test_conversations_and_agents(self):
        mtbench, agents = self.commands("Conversations and agents", 2)
        turns = self.example("mtbench_turn2.jsonl")
        scored, err, chats = self.run_scored(mtbench, turns)
        self.assertEqual([(r["judge_status"], r["judge_turn"]) for r in scored],
                         [("ok", 2)] * len(turns))
        for record in turns:  # the second turn asked, after the first
            asked = "[The Start of the Conversation So Far]\n[User]\n{}\n".format(
                record["turns"][0])
            (sent,) = [c.prompt for c in chats if asked in c.prompt]
            self.assertIn("[Question]\n{}\n".format(record["turns"][1]), sent)
        runs = self.example("agent_runs.jsonl")
        scored, err, chats = self.run_scored(agents, runs)
        self.assertEqual([(r["run_id"], r["judge_value"]) for r in scored],
                         [("booking-ok", True), ("booking-claimed", False),
                          ("refund-gave-up", False)])

    def test_figures_by_category(self):
        (command,) = self.commands("Figures by category", 1)
        turns = self.example("mtbench_turn2.jsonl")
        scored, err, chats = self.run_scored(command, turns)
        self.assertIn("\n  by category (--group-by): 3 values\n", err)
        for record in turns:
            self.assertIn('\n    "{}"  '.format(record["category"]), err)

    def test_another_tools_judgments(self):
        (command,) = self.commands("Another tool's judgments", 1)
        code, out, err, chats = self.shell(command)
        self.assertEqual((code, out, chats), (0, "", []), err)  # nothing sent
        self.assertIn("\n    large-model 1559.18 (CI [1279.59, 1636.43]), win rate against "
                      "the baseline 0.9615 (", err)
        self.assertIn("\n    small-model 661.96 (CI [382.37, 897.89]), win rate against the "
                      "baseline 0.125 (", err)
        # the README's words say the same figures
        common = section(readme(), "Common tasks")
        start = common.index("**Another tool's judgments.**")
        text = " ".join(common[start:common.index("```sh", start)].split())
        self.assertIn("large-model wins 0.9615 of its games against base-model by its "
                      "Bradley–Terry score (1559.18), small-model 0.125 (661.96)", text)

    def test_a_panel_of_judges(self):
        self.srv.models = tuple(PANEL)
        (command,) = self.commands("A panel of judges", 1)
        qa = self.example("qa.jsonl")
        scored, err, chats = self.run_scored(command, qa)
        asked = [chat.json["model"] for chat in chats]
        self.assertEqual({model: asked.count(model) for model in set(asked)},
                         {model: len(qa) - 1 for model in PANEL})  # one response is empty
        judged = [r for r in scored if r["judge_status"] == "ok"]
        self.assertEqual(len(judged), len(qa) - 1)
        for record in judged:
            panel = record["judge_panel"]
            self.assertEqual(list(panel), ["llama", "qwen", "mistral"])
            self.assertAlmostEqual(record["judge_score"], sum(panel.values()) / 3)
        self.assertIn("jury: the mean of llama, qwen, mistral", err)

    def test_a_batch_engine(self):
        self.srv.models = (BATCH_MODEL,)
        export, engine, imported = self.commands("A batch engine", 3)
        qa = self.example("qa.jsonl")
        code, out, err, chats = self.shell(export)
        self.assertEqual((code, self.srv.requests), (0, []), err)  # nothing sent
        with open(os.path.join(self.clone, "requests.000.jsonl"), encoding="utf-8") as f:
            lines = [json.loads(line) for line in f]
        self.assertEqual(len(lines), len(qa) - 1)  # the empty response needs no request
        self.assertEqual({line["body"]["model"] for line in lines}, {BATCH_MODEL})
        code, out, err, chats = self.shell(engine)
        self.assertEqual((code, chats, self.engine.chat_count), (0, [], len(lines)), err)
        with open(os.path.join(self.clone, "results.000.jsonl"), encoding="utf-8") as f:
            self.assertEqual({json.loads(line)["response"]["status_code"] for line in f},
                             {200})
        batch, err, chats = self.run_scored(imported, qa)
        self.assertEqual(chats, [])  # every reply from the engine's file
        self.assertEqual([r["judge_status"] for r in batch].count("ok"), len(lines))
        # the records an online run with the same options writes
        online, err, chats = self.run_scored(
            "python -m minijudge --judge-model {} examples/qa.jsonl -o scored.jsonl".format(
                BATCH_MODEL), qa)
        self.assertEqual(len(chats), len(lines))
        self.assertEqual(online, batch)
        self.check_an_output_lacking_a_reply(imported, qa)

    def check_an_output_lacking_a_reply(self, imported, qa):
        """With LLM_JUDGE_API_BASE set, what the engine's output lacks, or holds as an error,
        is sent to the server, as the README says."""
        results = os.path.join(self.clone, "results.000.jsonl")
        with open(results, encoding="utf-8") as f:
            lines = [json.loads(line) for line in f]
        lacking, failed = lines[0], lines[1]
        failed["response"].update(status_code=500, body=SERVER_ERROR)
        with open(results, "w", encoding="utf-8") as f:
            f.writelines(json.dumps(line) + "\n" for line in lines[1:])
        with open(os.path.join(self.clone, "requests.000.jsonl"), encoding="utf-8") as f:
            bodies = {r["custom_id"]: r["body"] for r in map(json.loads, f)}
        scored, err, chats = self.run_scored(imported, qa)
        self.assertEqual(sorted(json.dumps(chat.json["messages"]) for chat in chats),
                         sorted(json.dumps(bodies[line["custom_id"]]["messages"])
                                for line in (lacking, failed)))
        self.assertEqual([r["judge_status"] for r in scored].count("ok"), len(lines))

if __name__ == "__main__":
    unittest.main()
