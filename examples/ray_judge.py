"""Judge a JSONL file on a Ray cluster, then summarise it with minijudge's report.

    python examples/ray_judge.py INPUT.jsonl SHARDS/ --judge-url URL [--workers 4]
    python -m minijudge report SHARDS/*.jsonl

One LLMJudge is made here and pickled to each worker, where it opens its own connections.
Each worker judges its batches (a few requests at once) and writes each batch's records, as
``python -m minijudge`` writes them (``scored_record``), to a shard of its own in SHARDS/
(on a cluster, a folder every node can write); ``report`` merges the shards into the
summary a single-process run of INPUT.jsonl gives. Records travel through Ray as JSON text, so that
Arrow does not retype their fields.
"""

import argparse
import concurrent.futures
import json
import os
import sys

import ray

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
import minijudge  # noqa: E402


class JudgeShard:
    """A Ray worker: the judge it was sent; each batch judged becomes a shard, named by its
    first line and renamed into place whole, so a batch Ray runs again (a worker died)
    replaces its shard: no torn line, no record twice."""

    def __init__(self, judge, folder, requests_at_once=8):
        self.judge, self.folder = judge, folder
        self.pool = concurrent.futures.ThreadPoolExecutor(requests_at_once)

    def __call__(self, batch):
        lines = [int(line) for line in batch["line"]]
        records = [json.loads(text) for text in batch["record"]]
        scored = self.pool.map(self.scored, records, lines)
        shard = os.path.join(self.folder, "lines-{:010d}.jsonl".format(lines[0]))
        with open(shard + ".part", "w", encoding="utf-8") as f:
            f.write("".join(json.dumps(record) + "\n" for record in scored))
        os.replace(shard + ".part", shard)
        return {"line": batch["line"]}

    def scored(self, record, line):
        return minijudge.scored_record(self.judge, record, line=line)


def numbered(path):
    """Each record of a JSONL file as JSON text, with its line number (report tells records
    apart by it); blank lines are skipped, as the command line skips them."""
    with open(path, encoding="utf-8") as f:
        return [{"line": n, "record": text} for n, text in enumerate(f, 1) if text.strip()]


def judge_on_ray(path, folder, judge, workers=4, batch_size=1000):
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
