"""With two processes (CPU, gloo): training with MBPP evaluation neither deadlocks nor duplicates work: each
rank generates for its own shard, the main process scores and writes once.

`accelerate launch --cpu` starts a single process, so the test launches with torchrun, which is what
`accelerate launch --multi_gpu` runs on GPU nodes; the script sees the same WORLD_SIZE/RANK environment."""

from __future__ import annotations

import json

import pytest

from tests.conftest import run_script, tiny_grpo_args


def test_two_process_training_with_evaluation(tiny_model_dir, mbpp_path, tmp_path):
    out = tmp_path / "run"
    proc = run_script(
        [
            "-m",
            "torch.distributed.run",
            "--nproc_per_node",
            "2",
            "--master_port",
            "29533",
            *tiny_grpo_args(
                tiny_model_dir,
                out,
                "--training_args.max_steps=2",
                "--evaluation.enabled=true",
                f"--evaluation.dataset_path={mbpp_path}",
                "--evaluation.num_questions=5",
                "--evaluation.max_new_tokens=6",
                "--evaluation.eval_interval_steps=1",
            ),
        ],
        timeout=600,
    )
    assert proc.returncode == 0, (proc.stdout[-2000:], proc.stderr[-4000:])
    rows = [json.loads(line) for line in (out / "metrics.jsonl").read_text().splitlines()]
    assert [r["step"] for r in rows if "mbpp_eval/pass_rate" in r] == [0, 1, 2]  # once per phase, not per rank
    assert [r["step"] for r in rows if "rewards/execution/mean" in r] == [1, 2]
    detail = json.loads((out / "eval_results" / "mbpp_step_2_final.json").read_text())
    assert detail["world_size"] == 2
    assert detail["total_problems"] == 5 and detail["num_samples"] == 5  # padding duplicates dropped
    ranks = {s["rank"] for t in detail["per_task"] for s in t["samples"]}
    assert ranks == {0, 1}  # both processes generated their shard


pytestmark = pytest.mark.slow
