"""Hold minijudge.py to the complexity of the libraries it learns from (issues 29, 45).

    python .ci/complexity.py minijudge.py

Reads lizard's per-function figures (a dev-only tool: pip install lizard) and fails if
the average cyclomatic complexity is over MAX_AVERAGE_CCN, a function's is over MAX_CCN,
a function has more than 60 lines of code, or the file grows past MAX_LINES. Prints the
figures and the gaps to issue 45's goals either way.

The ceilings are ratchets at what the file measures, so it cannot grow unnoticed: a
change that must raise one does it in its own commit, saying what it bought. Issue 45's
restructure folded 1,056 functions of 9 lines into 652 of 12 (names used once 63% -> 43%),
which raised the average CCN from 3.9 to 5.02 and brought the file from 13,632 lines to
about 10,950; its goals, 5.0 and 10,000 lines, are printed until met.
"""
import csv
import io
import subprocess
import sys

# 5.02 at issue 45's end, 5.03 with issue 46's two checks; 4.999 after issue 45's sixth round
# (shared checks, a branch chosen once a run instead of a record): the goal is the ceiling now
MAX_AVERAGE_CCN = 5.0
GOAL_AVERAGE_CCN = 5.0
MAX_CCN = 15
MAX_NLOC = 60
# issue 46 bought +1,660: its statistics API and report --layout (+612), --explain (+120),
# pairs under a criterion and the seeds' rows (+193), --rubric (+437), rankings at arena
# scale (+155), hostile passes and their leftovers (+80), report --mixed's rubrics (+36);
# issue 45's sixth round took 160 out (12,278), then gave 88 back: the contracts of 92 functions
# (what each returns, which statuses, the retry rules, the estimate's rule) its cuts had lost;
# the seventh round's sharing and folds took 45 more (12,321)
MAX_LINES = 12370
GOAL_LINES = 10000


def main(path):
    out = subprocess.run([sys.executable, "-m", "lizard", "--csv", path], check=True,
                         capture_output=True, text=True).stdout
    rows = list(csv.reader(io.StringIO(out)))
    # lizard's CSV: NLOC, CCN, tokens, parameters, length, location, file, name, ...
    functions = [(int(row[1]), int(row[0]), row[7], row[5].split("@")[1]) for row in rows]
    with open(path, encoding="utf-8") as f:
        lines = sum(1 for _ in f)
    average = sum(ccn for ccn, _, _, _ in functions) / len(functions)
    worst = max(functions)
    longest = max(functions, key=lambda fn: fn[1])
    print("{}: {} lines, {} functions, average CCN {:.3f}, worst CCN {} ({}), longest {} "
          "NLOC ({})".format(path, lines, len(functions), average, worst[0], worst[2],
                             longest[1], longest[2]))
    problems = []
    if average > MAX_AVERAGE_CCN:
        problems.append("average CCN {:.2f} is over {}".format(average, MAX_AVERAGE_CCN))
    for ccn, nloc, name, where in functions:
        if ccn > MAX_CCN:
            problems.append("{} (line {}) has CCN {}, over {}".format(name, where.split("-")[0],
                                                                      ccn, MAX_CCN))
        if nloc > MAX_NLOC:
            problems.append("{} (line {}) has {} lines of code, over {}".format(
                name, where.split("-")[0], nloc, MAX_NLOC))
    if lines > GOAL_LINES:
        print("complexity: the file has {} lines; issue 45's goal is {}: not met".format(
            lines, GOAL_LINES))
    if average > GOAL_AVERAGE_CCN:
        print("complexity: average CCN {:.3f}; issue 45's goal is {}: not met".format(
            average, GOAL_AVERAGE_CCN))
    if lines > MAX_LINES:
        problems.append("the file has {} lines, over {}".format(lines, MAX_LINES))
    for problem in problems:
        print("complexity: " + problem)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
