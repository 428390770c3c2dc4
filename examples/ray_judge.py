"""Judge a JSONL file on a Ray cluster, then summarise it with minijudge's report.

    python examples/ray_judge.py INPUT.jsonl SHARDS/ --judge-url URL [--workers 4]
    python -m minijudge report SHARDS/*.jsonl

One LLMJudge is made here and pickled to each worker, where it opens its own connections.
Each worker judges its batches (a few requests at once) and appends the records, as
``python -m minijudge`` writes them (``scored_record``), to its own shard in SHARDS/ (on a
cluster, a folder every node can write); ``report`` merges the shards into the summary a
single-process run of INPUT.jsonl gives. Records travel through Ray as JSON text, so that
Arrow does not retype their fields.
"""

import argparse
import concurrent.futures
import json
import os
import sys
import uuid

import ray

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
import minijudge  # noqa: E402


class JudgeShard:
    """A Ray worker: the judge it was sent, and a shard of its own to write."""

    def __init__(self, judge, folder, requests_at_once=8):
        self.judge = judge
        name = "shard-{}.jsonl".format(uuid.uuid4().hex[:12])
        self.shard = open(os.path.join(folder, name), "a", encoding="utf-8")
        self.pool = concurrent.futures.ThreadPoolExecutor(requests_at_once)

    def __call__(self, batch):
        lines = [int(line) for line in batch["line"]]
        records = [json.loads(text) for text in batch["record"]]
        scored = self.pool.map(self.scored, records, lines)
        self.shard.write("".join(json.dumps(record) + "\n" for record in scored))
        self.shard.flush()
        return {"line": batch["line"]}

    def scored(self, record, line):
        return minijudge.scored_record(self.judge, record, line=line)


def numbered(path):
    """Each record of a JSONL file as JSON text, with its line number (report tells records
    apart by it); blank lines are skipped, as the command line skips them."""
    with open(path, encoding="utf-8") as f:
        return [{"line": n, "record": text} for n, text in enumerate(f, 1) if text.strip()]


def judge_on_ray(path, folder, judge, workers=4, batch_size=500):
    os.makedirs(folder, exist_ok=True)
    dataset = ray.data.from_items(numbered(path))
    judged = dataset.map_batches(
        JudgeShard, fn_constructor_kwargs={"judge": judge, "folder": folder},
        compute=ray.data.ActorPoolStrategy(size=workers), batch_size=batch_size)
    return judged.count()  # runs the pipeline; the records are in the shards


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("input")
    parser.add_argument("shards")
    parser.add_argument("--judge-url", required=True)
    parser.add_argument("--workers", type=int, default=4)
    args = parser.parse_args(argv)
    ray.init(num_cpus=args.workers, include_dashboard=False,
             runtime_env={"py_modules": [minijudge]})  # the workers import this minijudge
    judge = minijudge.LLMJudge(args.judge_url)
    count = judge_on_ray(args.input, args.shards, judge, workers=args.workers)
    print("judged {} records into {}".format(count, args.shards))


if __name__ == "__main__":
    main()
