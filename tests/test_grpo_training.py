"""grpo_code_execution.py end to end: real TRL training on a tiny local model, resume, user errors."""

from __future__ import annotations

import json

import pytest

from tests.conftest import run_script

BASE = [
    "grpo_code_execution.py",
    "--config",
    "configs/demo_cpu.yaml",
    "--training_args.per_device_train_batch_size=4",
    "--training_args.num_generations=4",
    "--training_args.max_completion_length=16",
    "--training_args.save_steps=1",
    "--sandbox.workers=1",
]


def _rows(path):
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def test_short_run_then_resume(tiny_model_dir, tmp_path):
    out = tmp_path / "run"
    args = [
        *BASE,
        f"--model.name_or_path={tiny_model_dir}",
        f"--training_args.output_dir={out}",
        "--evaluation.enabled=false",
    ]
    first = run_script([*args, "--training_args.max_steps=2"])
    assert first.returncode == 0, first.stderr[-3000:]
    assert "profile" in first.stdout and "[command line]" in first.stdout  # the start-up table
    rows = _rows(out / "metrics.jsonl")
    steps = [r["step"] for r in rows if "rewards/execution/mean" in r]
    assert steps == [1, 2]
    row = next(r for r in rows if "rewards/execution/mean" in r)
    for key in (
        "reward",
        "reward/avg_batch_reward",
        "reward/successful_executions",
        "reward/tier/output",
        "reward/execution_time_s",
        "completions/mean_length",
        "entropy",
    ):
        assert key in row, key
    assert (out / "config.yaml").is_file() and (out / "samples.jsonl").is_file()
    assert (out / "checkpoint-2").is_dir() and (out / "final" / "config.json").is_file()

    # A killed run continues from its last checkpoint: the step count goes on from 2.
    second = run_script([*args, "--training_args.max_steps=3", "--resume", "auto"])
    assert second.returncode == 0, second.stderr[-3000:]
    assert "resume:" in second.stdout and "checkpoint-2" in second.stdout
    steps = [r["step"] for r in _rows(out / "metrics.jsonl") if "rewards/execution/mean" in r]
    assert steps == [1, 2, 3]
    state = json.loads((out / "checkpoint-3" / "trainer_state.json").read_text())
    assert state["global_step"] == 3


def test_config_mistakes_end_in_one_line(tiny_model_dir):
    proc = run_script([*BASE, f"--model.name_or_path={tiny_model_dir}", "--model.nme=x"])
    assert proc.returncode == 2
    assert proc.stderr.strip().startswith("error:") and "Traceback" not in proc.stderr
    assert "unknown key 'model.nme'" in proc.stderr and len(proc.stderr.strip().splitlines()) == 1


def test_offline_missing_model_says_what_where_and_how(tmp_path):
    proc = run_script(
        [
            *BASE,
            "--model.name_or_path=no-such-org/no-such-model",
            "--offline=true",
            f"--training_args.output_dir={tmp_path}",
            "--evaluation.enabled=false",
        ],
        env={"HF_HOME": str(tmp_path / "hf")},
    )
    assert proc.returncode == 2, proc.stderr[-2000:]
    err = proc.stderr.strip()
    assert "Traceback" not in err and len(err.splitlines()) == 1
    assert "'no-such-org/no-such-model' is not available offline" in err
    assert str(tmp_path / "hf") in err and "python -m utils.prefetch --config configs/demo_cpu.yaml" in err


def test_malformed_data_row_names_file_and_line(tiny_model_dir, tmp_path):
    data = tmp_path / "rows.jsonl"
    data.write_text('{"prompt": "Write a program"}\n{"prompt": "x", "tests": "assert f()"}\n')
    proc = run_script(
        [
            *BASE,
            f"--model.name_or_path={tiny_model_dir}",
            f"--data.source={data}",
            f"--training_args.output_dir={tmp_path / 'run'}",
            "--evaluation.enabled=false",
        ]
    )
    assert proc.returncode == 2
    assert f"{data}:2" in proc.stderr and "'tests' must be a list" in proc.stderr
    assert "Traceback" not in proc.stderr


@pytest.mark.usefixtures("mbpp_path")
def test_mbpp_rows_with_tests_reward(tiny_model_dir, tmp_path, mbpp_path):
    out = tmp_path / "run"
    proc = run_script(
        [
            *BASE,
            f"--model.name_or_path={tiny_model_dir}",
            "--data.source=mbpp",
            f"--data.path={mbpp_path}",
            "--rewards.funcs={tests: 1.0, execution: 0.5}",
            f"--training_args.output_dir={out}",
            "--training_args.max_steps=1",
            "--evaluation.enabled=false",
        ]
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    row = next(r for r in _rows(out / "metrics.jsonl") if "rewards/tests/mean" in r)
    assert row["rewards/tests/mean"] == 0.0  # a random tiny model passes no MBPP test, and nothing crashed


def test_lora_with_wandb_offline_and_evaluation(tiny_model_dir, mbpp_path, tmp_path):
    """LoRA adapters train, W&B logs offline into output_dir, and the evaluation sees the adapted model."""
    out = tmp_path / "run"
    proc = run_script(
        [
            *BASE,
            f"--model.name_or_path={tiny_model_dir}",
            f"--training_args.output_dir={out}",
            "--training_args.max_steps=1",
            "--lora.enabled=true",
            "--lora.r=4",
            "--lora.target_modules=[q_proj,v_proj]",
            "--wandb.mode=offline",
            "--evaluation.enabled=true",
            f"--evaluation.dataset_path={mbpp_path}",
            "--evaluation.num_questions=2",
            "--evaluation.max_new_tokens=4",
        ],
        env={"WANDB_MODE": ""},
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert (out / "final" / "adapter_config.json").is_file()  # a peft adapter, not a full model
    runs = list((out / "wandb").glob("offline-run-*"))
    assert runs, "no offline W&B run in output_dir/wandb"
    assert (out / "eval_results" / "mbpp_step_1_final.json").is_file()
