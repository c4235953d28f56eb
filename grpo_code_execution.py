"""GRPO with rewards from executing the model's code in the sandbox.

What it trains: a causal LM (full weights or LoRA) with TRL's GRPOTrainer. Each completion's code runs in
``sandbox/`` and is scored by named reward functions with YAML weights: ``execution`` (ran and printed +1.0,
ran silently +0.5, syntax error -0.5, runtime error or timeout -1.0), ``tests`` (fraction of the row's test cases
passed, e.g. MBPP train split) and ``format`` (a fenced python block).

Run it:
    python grpo_code_execution.py --config configs/grpo_code_execution.yaml
    python grpo_code_execution.py --config configs/grpo_code_execution.yaml --training_args.learning_rate=3e-6
    accelerate launch --config_file configs/accelerate/multi_gpu.yaml grpo_code_execution.py --config ...
    sbatch slurm/grpo_code_execution.sbatch configs/grpo_code_execution.yaml
    make demo                                # offline, CPU: tiny model, configs/demo_cpu.yaml
    python grpo_code_execution.py --config ... --resume auto    # continue a killed run

Metrics (W&B and output_dir/metrics.jsonl): TRL's own (reward, reward_std, rewards/<fn>/mean, kl, entropy,
completions/*, ...), plus reward/avg_batch_reward, reward/successful_executions, reward/tier/<tier> shares,
reward/infra_failures, reward/execution_time_s, and mbpp_eval/* when evaluation is enabled. Sample completions
go to output_dir/samples.jsonl; the resolved config to output_dir/config.yaml.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass, field

from trl import GRPOConfig, GRPOTrainer

from utils.config import BaseConfig, ConfigError, Resolved, cli_main


# ---------------------------------------------------------------------------------------------- config
@dataclass
class DataSection:
    source: str = "builtin"  # builtin | demo | mbpp | path/to/rows.jsonl | a Hugging Face dataset id
    path: str | None = None  # mbpp: local mbpp.jsonl or its folder (default: the Hub)
    split: str = "train"
    sanitized: bool = False
    prompt_column: str = "prompt"
    num_samples: int | None = None
    chat_template: bool = False  # prompts as chat messages (instruct models)
    system_prompt: str | None = None


@dataclass
class TiersSection:
    success_output: float = 1.0
    success_no_output: float = 0.5
    syntax_error: float = -0.5
    runtime_error: float = -1.0
    timeout: float = -1.0
    no_code: float = -1.0


@dataclass
class RewardsSection:
    funcs: dict[str, float] = field(default_factory=lambda: {"execution": 1.0})
    extraction: str = "auto"  # first_block | last_block | whole | auto
    tiers: TiersSection = field(default_factory=TiersSection)
    samples_per_step: int = 4  # completions written to output_dir/samples.jsonl each step


@dataclass
class Config(BaseConfig):
    data: DataSection = field(default_factory=DataSection)
    rewards: RewardsSection = field(default_factory=RewardsSection)


# ---------------------------------------------------------------------------------------------- trainer
class CodeExecutionGRPOTrainer(GRPOTrainer):
    """GRPOTrainer plus the weighted batch reward as a metric and sample completions on disk."""

    def __init__(self, *args, samples_per_step: int = 4, **kwargs):
        super().__init__(*args, **kwargs)
        self.samples_per_step = samples_per_step

    def _calculate_rewards(self, inputs, prompts, completions, completion_ids_list):
        rewards_per_func = super()._calculate_rewards(inputs, prompts, completions, completion_ids_list)
        weights = self.reward_weights.to(rewards_per_func.device).unsqueeze(0)
        total = (rewards_per_func * weights).nansum(dim=1)
        mode = "train" if self.model.training else "eval"
        self._metrics[mode]["reward/avg_batch_reward"].append(total.mean().item())
        if self.accelerator.is_main_process and self.samples_per_step > 0:
            start = self.accelerator.process_index * len(prompts)  # rewards are gathered from all processes
            self._save_samples(prompts, completions, rewards_per_func[start : start + len(prompts)])
        return rewards_per_func

    def _save_samples(self, prompts, completions, local_rewards):
        os.makedirs(self.args.output_dir, exist_ok=True)
        with open(os.path.join(self.args.output_dir, "samples.jsonl"), "a", encoding="utf-8") as f:
            for i in range(min(self.samples_per_step, len(prompts))):
                row = {
                    "step": self.state.global_step,
                    "prompt": prompts[i],
                    "completion": completions[i],
                    "rewards": dict(zip(self.reward_func_names, local_rewards[i].tolist())),
                }
                f.write(json.dumps(row, default=str) + "\n")


# ---------------------------------------------------------------------------------------------- train
def run(resolved: Resolved) -> None:
    from evaluation.callback import MBPPEvaluationCallback
    from rewards import ExecutionTiers, build_reward_funcs
    from sandbox import IsolationError, Sandbox, default_workers
    from utils.callbacks import MetricsJsonlCallback
    from utils.data import build_dataset
    from utils.offline import load_causal_lm, load_tokenizer, peft_config
    from utils.training import startup

    cfg, args = resolved.cfg, resolved.trl_args
    resume = startup(resolved, "grpo_code_execution")

    # data (and the MBPP evaluation set: a missing dataset fails here, before any model is loaded)
    eval_cb = MBPPEvaluationCallback(cfg.evaluation, output_dir=args.output_dir) if cfg.evaluation.enabled else None
    tokenizer = load_tokenizer(cfg.model, resolved.offline, resolved.config_path)
    dataset = build_dataset(cfg.data, resolved.offline, min_rows=args.generation_batch_size // args.num_generations)
    model = load_causal_lm(cfg.model, resolved.offline, resolved.config_path)

    # rewards (everything model-written runs in the sandbox)
    try:
        sandbox = Sandbox(
            workers=cfg.sandbox.workers or default_workers(),
            timeout_s=cfg.sandbox.timeout_s,
            memory_mb=cfg.sandbox.memory_mb,
            isolation=cfg.sandbox.isolation,
        )
    except IsolationError as exc:
        raise ConfigError(f"sandbox.isolation=strict: {exc}") from None
    with sandbox:
        tiers = ExecutionTiers(**vars(cfg.rewards.tiers))
        try:
            funcs, weights = build_reward_funcs(dict(cfg.rewards.funcs), sandbox, tiers, cfg.rewards.extraction)
        except ValueError as exc:
            raise ConfigError(str(exc)) from None
        args.reward_weights = weights

        callbacks = [MetricsJsonlCallback(args.output_dir)]
        if eval_cb is not None:
            eval_cb.sandbox = sandbox
            callbacks.append(eval_cb)

        # trainer subclass
        trainer = CodeExecutionGRPOTrainer(
            model=model,
            reward_funcs=funcs,
            args=args,
            train_dataset=dataset,
            processing_class=tokenizer,
            peft_config=peft_config(cfg.lora),
            callbacks=callbacks,
            samples_per_step=cfg.rewards.samples_per_step,
        )

        if eval_cb is not None:
            eval_cb.attach(trainer)

        # train
        trainer.train(resume_from_checkpoint=resume)
        trainer.save_model(os.path.join(args.output_dir, "final"))
        if trainer.accelerator.is_main_process:
            tokenizer.save_pretrained(os.path.join(args.output_dir, "final"))


def main(argv: list[str] | None = None) -> int:
    return cli_main(run, Config, GRPOConfig, argv=argv)


if __name__ == "__main__":
    raise SystemExit(main())
