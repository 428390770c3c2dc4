"""--dry-run's estimate covers every judge of a --judges panel, each at its own template and
price (it counted the first judge alone: a panel of three was estimated at a third)."""
import json
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))
sys.path.insert(0, HERE)
from stub import StubTestCase, run_main  # noqa: E402
from stub import chat  # noqa: E402
from test_cost import MOST_WHY, USAGE, by_hand, most_by_hand  # noqa: E402


def either(request):
    """A binary question answered yes, a rating 4; each with the same usage."""
    if "yes" in request.messages[-1]["content"].lower():
        return chat("Yes", usage=dict(USAGE))
    return chat("Rating: 4", usage=dict(USAGE))


class PanelDryRunTest(StubTestCase):
    def setUp(self):
        super().setUp()
        self.srv.responder = either
        self.data = self.write_jsonl("in.jsonl", [
            {"question": "What is 2+2?", "response": "4", "answer": "4"},
            {"question": "q", "response": ""},  # empty: nothing sent, nothing counted
            {"question": "Name a prime above " + "ten " * 50, "response": "eleven",
             "answer": "13"}])
        self.judges = self.write("judges.json", json.dumps([
            {"name": "a", "url": self.srv.url, "options": {"price": [3, 15]}},
            {"name": "b", "url": self.srv.url, "template": "binary",
             "options": {"price": "1,2", "max_tokens": 8, "repeats": 2}}]))

    def sent(self):
        """Each judge's prompts, as a real run sends them: {name: [messages, ...]}."""
        code, _, err = run_main(["--judges", self.judges, "--no-preflight", "--concurrency",
                                 "1", "-o", self.path("out.jsonl"), self.data])
        self.assertEqual(code, 0, err)
        chats = [r for r in self.srv.requests if r.path.endswith("/chat/completions")]
        binary = [r.messages for r in chats if "yes" in r.messages[-1]["content"].lower()]
        rating = [r.messages for r in chats if r.messages not in binary]
        return rating, binary

    def test_every_judge_is_counted_at_its_own_price(self):
        code, _, err = run_main(["--judges", self.judges, "--dry-run", self.data])
        self.assertEqual(code, 0, err)
        self.assertEqual(self.srv.chat_count, 0)
        rating, binary = self.sent()
        self.assertEqual((len(rating), len(binary)), (2, 4))
        a_tokens = sum(by_hand(m) for m in rating)
        b_tokens = sum(by_hand(m) for m in binary)
        a_cost = (a_tokens * 3 + 2 * 16 * 15) / 1e6
        b_cost = (b_tokens * 1 + 4 * 8 * 2) / 1e6
        a_most = (sum(most_by_hand(m) for m in rating) * 3 + 2 * 16 * 15) / 1e6
        b_most = (sum(most_by_hand(m) for m in binary) * 1 + 4 * 8 * 2) / 1e6
        lines = err.splitlines()[-3:]
        self.assertEqual(lines[0], "minijudge: --dry-run: judge a: 2 requests, about {} prompt "
                         "tokens and at most 32 completion tokens; about ${:.6f} at --price "
                         "3,15, at most ${:.6f}".format(a_tokens, a_cost, a_most))
        self.assertEqual(lines[1], "minijudge: --dry-run: judge b: 4 requests, about {} prompt "
                         "tokens and at most 32 completion tokens; about ${:.6f} at --price "
                         "1,2, at most ${:.6f}".format(b_tokens, b_cost, b_most))
        self.assertEqual(lines[2], "minijudge: --dry-run: 6 requests, about {} prompt tokens "
                         "(estimated: a token per 4 characters) and at most 64 completion "
                         "tokens (max_tokens); about ${:.6f} at the judges' prices, at most "
                         "${:.6f}{}".format(a_tokens + b_tokens, a_cost + b_cost,
                                            a_most + b_most, MOST_WHY))

    def test_a_judge_without_a_price_is_named_and_not_priced(self):
        self.judges = self.write("judges.json", json.dumps([
            {"name": "a", "url": self.srv.url, "options": {"price": [3, 15]}},
            {"name": "b", "url": self.srv.url}]))
        code, _, err = run_main(["--judges", self.judges, "--dry-run", self.data])
        self.assertEqual(code, 0, err)
        self.assertRegex(err.splitlines()[-2], r"^minijudge: --dry-run: judge b: 2 requests, "
                         r"about \d+ prompt tokens and at most 32 completion tokens$")
        self.assertRegex(err.splitlines()[-1], r"^minijudge: --dry-run: 4 requests, about \d+ "
                         r"prompt tokens \(estimated: a token per 4 characters\) and at most "
                         r"64 completion tokens \(max_tokens\); about \$\d\.\d{6} at the "
                         r"judges' prices, at most \$\d\.\d{6} \(a token per prompt byte: what "
                         r"--max-cost reserves\), judge b not counted \(no --price\)$")
