"""minijudge's input records from MT-Bench's or Arena-Hard's published folder layout.

    python examples/from_published_layout.py mt-bench DIR > mt_records.jsonl
    python examples/from_published_layout.py arena-hard DIR --baseline NAME > pairs.jsonl

DIR holds question.jsonl and model_answer/, one answer file a model (FastChat's
fastchat/llm_judge/data/mt_bench/, arena-hard-auto's data/arena-hard-v0.1/).

mt-bench: one conversation record a model and question: question_id, category, model,
turns (the questions) and answers (that model's reply to each), for `--turn 1`, `--turn 2`.
arena-hard: one pairwise record a model (the baseline aside) and question: question_id,
category, cluster, question, response_a (the baseline's answer), response_b (the model's),
model_a (the baseline), model_b (the model), for `--mode pairwise`.

Nothing is dropped without a word: a question a model did not answer is still written,
its answers null (minijudge judges it `bad_record`, counted in the summary), and said on
stderr; so is an answer to a question the question file does not hold (skipped: there is
nothing to ask), an answer given twice (the last line is kept) and an answer with more
turns than its question (the extra ones left out) or fewer (those it lacks null). A missing question file, answer folder or baseline's answer file,
or a line that is not a JSON object, stops the script (exit 1) naming the file and line.

Python 3.8+, standard library only.
"""
import argparse
import glob
import json
import os
import sys

PROG = "from_published_layout"


class LayoutError(Exception):
    """The layout cannot be read: the message names the file (and line)."""


def warn(message):
    print("{}: {}".format(PROG, message), file=sys.stderr)


def read_lines(path):
    """[(line number, JSON object)] of a JSONL file; LayoutError for anything else."""
    if not os.path.isfile(path):
        raise LayoutError("no file {}".format(path))
    found = []
    with open(path, encoding="utf-8") as f:
        for number, text in enumerate(f, 1):
            if not text.strip():
                continue
            try:
                value = json.loads(text)
            except ValueError as e:
                raise LayoutError("{}:{}: not JSON ({})".format(path, number, e))
            if not isinstance(value, dict):
                raise LayoutError("{}:{}: a {}, expected a JSON object".format(
                    path, number, type(value).__name__))
            found.append((number, value))
    return found


def text_of(turn):
    """A turn's text: MT-Bench writes it as a string, Arena-Hard as {"content": ...}."""
    if isinstance(turn, dict):
        return turn.get("content")
    return turn


def question_id(value, path, number):
    if "question_id" not in value:
        raise LayoutError("{}:{}: no question_id".format(path, number))
    key = value["question_id"]
    if not isinstance(key, (str, int)) or isinstance(key, bool):
        raise LayoutError("{}:{}: question_id is a {}, expected text or a whole number"
                          .format(path, number, type(key).__name__))
    return key


def read_questions(folder):
    """{question_id: question line}, in the file's order."""
    path = os.path.join(folder, "question.jsonl")
    questions = {}
    for number, value in read_lines(path):
        key = question_id(value, path, number)
        if key in questions:
            raise LayoutError("{}:{}: question {!r} again".format(path, number, key))
        if not isinstance(value.get("turns"), list) or not value["turns"]:
            raise LayoutError("{}:{}: turns must be a list of the questions".format(
                path, number))
        questions[key] = value
    return questions


def read_answers(path, questions):
    """(model, {question_id: [turn texts]}) of one answer file."""
    model = os.path.splitext(os.path.basename(path))[0]
    answers = {}
    for number, value in read_lines(path):
        key = question_id(value, path, number)
        where = "{}:{}".format(path, number)
        if value.get("model_id") not in (None, model):
            raise LayoutError("{}: model_id {!r} in the answer file of {!r}".format(
                where, value["model_id"], model))
        if key not in questions:
            warn("{}: an answer to question {!r}, which question.jsonl does not hold: "
                 "skipped".format(where, key))
            continue
        choices = value.get("choices")
        if not (isinstance(choices, list) and choices and isinstance(choices[0], dict)
                and isinstance(choices[0].get("turns"), list)):
            raise LayoutError("{}: choices[0].turns must be the list of the answer's "
                              "turns".format(where))
        if key in answers:
            warn("{}: question {!r} answered again; the last answer is kept".format(
                where, key))
        answers[key] = [text_of(turn) for turn in choices[0]["turns"]]
    return model, answers


def answer_files(folder):
    found = sorted(glob.glob(os.path.join(folder, "model_answer", "*.jsonl")))
    if not found:
        raise LayoutError("no answer files: {} holds no .jsonl file".format(
            os.path.join(folder, "model_answer")))
    return found


def answered(model, key, answers, turns, path):
    """The model's answer to a question, one text a turn; a missing one said and None."""
    given = answers.get(key)
    if given is None:
        warn("{}: {} has no answer to question {!r}: its record is written with no answer "
             "(minijudge: bad_record)".format(path, model, key))
        return [None] * len(turns)
    if len(given) != len(turns):
        warn("{}: {}'s answer to question {!r} has {} turns, the question {}: {}".format(
            path, model, key, len(given), len(turns),
            "the extra turns are left out" if len(given) > len(turns) else
            "the turns it lacks are written with no answer (minijudge: bad_record)"))
    return (given + [None] * len(turns))[:len(turns)]


def mt_bench(folder):
    questions = read_questions(folder)
    for path in answer_files(folder):
        model, answers = read_answers(path, questions)
        for key, question in questions.items():
            turns = [text_of(turn) for turn in question["turns"]]
            yield {"question_id": key, "category": question.get("category"),
                   "model": model, "turns": turns,
                   "answers": answered(model, key, answers, turns, path)}


def arena_hard(folder, baseline):
    questions = read_questions(folder)
    paths = answer_files(folder)
    by_model = {}
    for path in paths:
        model, answers = read_answers(path, questions)
        by_model[model] = (answers, path)
    if baseline not in by_model:
        raise LayoutError("no answer file of the baseline {!r}: {} holds {}".format(
            baseline, os.path.join(folder, "model_answer"), ", ".join(sorted(by_model))))
    base_answers, base_path = by_model.pop(baseline)
    for model, (answers, path) in sorted(by_model.items()):
        for key, question in questions.items():
            turns = [text_of(turn) for turn in question["turns"]]
            if len(turns) > 1:
                warn("question {!r} has {} turns: its first alone is asked".format(
                    key, len(turns)))
            a = answered(baseline, key, base_answers, turns[:1], base_path)[0]
            b = answered(model, key, answers, turns[:1], path)[0]
            yield {"question_id": key, "category": question.get("category"),
                   "cluster": question.get("cluster"), "question": turns[0],
                   "response_a": a, "response_b": b, "model_a": baseline, "model_b": model}


def main(argv=None):
    parser = argparse.ArgumentParser(prog=PROG, description=__doc__.split("\n\n")[0])
    parser.add_argument("layout", choices=("mt-bench", "arena-hard"))
    parser.add_argument("folder", help="the folder of question.jsonl and model_answer/")
    parser.add_argument("--baseline", help="arena-hard: the model every other is compared "
                                           "with (gpt-4-0314 in v0.1)")
    args = parser.parse_args(argv)
    if args.layout == "arena-hard" and not args.baseline:
        parser.error("arena-hard needs --baseline NAME, the model of an answer file")
    if args.layout == "mt-bench" and args.baseline:
        parser.error("--baseline is for arena-hard; MT-Bench's single grades have none")
    try:
        records = (mt_bench(args.folder) if args.layout == "mt-bench"
                   else arena_hard(args.folder, args.baseline))
        for record in records:
            sys.stdout.write(json.dumps(record, ensure_ascii=False) + "\n")
    except LayoutError as e:
        sys.exit("{}: {}".format(PROG, e))


if __name__ == "__main__":
    main()
