"""Inference on the embedded model: turn-synchronous self-conditioning against chain by chain,
and resuming a killed run from the response cache.

    python benchmarks/bench_inference.py [--home DIR] [--chains 24] [--threads 1]

Chains come from the evaluation sample of a home built by `chronoscope run` (one is built in
a temporary folder up to `eval_sample` when --home is not given). Reports:
1. self-conditioned, turn-synchronous (turn t of every chain in one batch) vs chain by chain
   (batch size 1, as the reference does) on the same chains, no cache: wall time, the speed-up,
   and whether every output is identical (fp32 greedy decoding is batch-invariant);
2. gold-context predictions in a child process killed once the cache holds half of them; the
   rerun's backend calls (= the rest), and a third run's (= 0).
"""

from __future__ import annotations

import argparse
import os
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pyarrow.parquet as pq

from chronoscope_dagster.evaluation.inference import chains_from_turns, predict
from chronoscope_dagster.evaluation.prompts import Setting
from chronoscope_dagster.llm.base import Decoding
from chronoscope_dagster.llm.cache import CachedChat, ResponseCache
from chronoscope_dagster.llm.registry import parse_entry
from chronoscope_dagster.warehouse import Warehouse

GREEDY = Decoding()


def sample_chains(home: Path, count: int):
    store = Warehouse(home)
    sample = pq.read_table(store.data_path("eval_sample")).column("chain_id").to_pylist()
    wanted = set(sorted(sample)[:count])
    turns = pq.read_table(store.data_path("turns"))
    rows = [i for i, c in enumerate(turns.column("chain_id").to_pylist()) if c in wanted]
    return chains_from_turns(turns.take(rows))


def local_backend(threads: int):
    return parse_entry(
        {
            "name": "local",
            "backend": "local",
            "model": "smollm2-135m-instruct",
            "options": {"threads": threads, "batch_size": 16},
        }
    ).build()


def build_home() -> Path:
    import dagster as dg

    from chronoscope_dagster.orchestration import run_selection

    home = Path(tempfile.mkdtemp(prefix="bench-inference-"))
    print(f"building the embedded sample's evaluation sample in {home} ...", flush=True)
    run_selection(
        home=str(home),
        selection="eval_sample",
        instance=dg.DagsterInstance.ephemeral(),
        echo=lambda _: None,
    )
    return home


def compare_self_conditioned(chains, threads: int) -> None:
    backend = local_backend(threads)
    backend.complete([chains[0].request(0, Setting.QUESTIONS_ONLY, ())], GREEDY)
    timings, outputs = {}, {}
    for name, synchronous in (("turn-synchronous", True), ("chain-by-chain", False)):
        started = time.perf_counter()
        predictions = predict(
            chains,
            Setting.SELF_CONDITIONED,
            CachedChat(backend, None),
            GREEDY,
            turn_synchronous=synchronous,
        )
        timings[name] = time.perf_counter() - started
        outputs[name] = [(p.chain_id, p.turn_index, p.completion.candidates) for p in predictions]
        print(f"  {name:17s} {len(predictions):4d} turns in {timings[name]:7.1f} s", flush=True)
    same = outputs["turn-synchronous"] == outputs["chain-by-chain"]
    differing = sum(
        a != b for a, b in zip(outputs["turn-synchronous"], outputs["chain-by-chain"], strict=True)
    )
    print(
        f"  speed-up {timings['chain-by-chain'] / timings['turn-synchronous']:.2f}x; "
        f"identical outputs: {same} ({differing} of {len(outputs['chain-by-chain'])} differ)"
    )


def child(home: Path, count: int, cache_path: Path, threads: int) -> None:
    chains = sample_chains(home, count)
    chat = CachedChat(local_backend(threads), ResponseCache(cache_path), chunk_size=8)
    predict(chains, Setting.GOLD_CONTEXT, chat, GREEDY)


def resume(home: Path, chains, count: int, threads: int) -> None:
    total = sum(len(c.questions) - 1 for c in chains)
    with tempfile.TemporaryDirectory() as folder:
        cache_path = Path(folder) / "responses.sqlite"
        command = [sys.executable, __file__, "--child", "--home", str(home)]
        command += ["--chains", str(count), "--threads", str(threads), "--cache", str(cache_path)]
        process = subprocess.Popen(command, start_new_session=True)
        cached = 0
        while process.poll() is None:
            time.sleep(0.5)
            if cache_path.exists():
                cache = ResponseCache(cache_path)
                cached = len(cache)
                cache.close()
                if cached >= total // 2:
                    os.killpg(process.pid, signal.SIGKILL)
                    break
        process.wait()
        print(f"  killed the child with {cached} of {total} answers cached")
        for attempt in ("rerun", "third run"):
            chat = CachedChat(local_backend(threads), ResponseCache(cache_path))
            started = time.perf_counter()
            predict(
                chains,
                Setting.GOLD_CONTEXT,
                chat,
                GREEDY,
            )
            print(
                f"  {attempt}: {chat.usage.calls} backend calls, {chat.stats.hits} cache hits, "
                f"{time.perf_counter() - started:.1f} s"
            )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--home", type=Path)
    parser.add_argument("--chains", type=int, default=24)
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--cache", type=Path, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        child(args.home, args.chains, args.cache, args.threads)
        return
    home = args.home or build_home()
    chains = sample_chains(home, args.chains)
    print(
        f"{len(chains)} chains, {sum(len(c.questions) for c in chains)} turns, "
        f"threads={args.threads}"
    )
    print("self-conditioned:")
    compare_self_conditioned(chains, args.threads)
    print("cache resume (gold context):")
    resume(home, chains, args.chains, args.threads)


if __name__ == "__main__":
    main()
