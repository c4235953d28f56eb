"""MBPP evaluation during training: initial (before the first step), every N steps, and final.

    cb = MBPPEvaluationCallback(cfg.evaluation, sandbox=sandbox, output_dir=args.output_dir)
    trainer = SomeTrainer(..., callbacks=[cb]); cb.attach(trainer)

It evaluates the weights being trained (the unwrapped model, LoRA adapters included; with vLLM, after syncing
the weights into the engine). Under ``accelerate launch`` every rank generates for its own shard of the problems
(equal-sized shards, so collective calls line up under ZeRO-3), the main process scores them in the sandbox,
and every rank logs the same numbers. Metrics ``mbpp_eval/*`` go through ``transformers.Trainer.log`` at the
current global step with ``control.should_log`` saved and restored, so TRL's own log for that step is kept
(calling the GRPO trainer's ``log()`` from a callback would flush and drop it). Each evaluation also writes
``output_dir/eval_results/mbpp_step_{step}_{phase}.json``.
"""

from __future__ import annotations

import json
import math
import os
import time

from transformers import Trainer, TrainerCallback

from evaluation import mbpp
from evaluation.generation import hf_generate, prompts_for, stops_for
from evaluation.scoring import score_samples, summary_line
from utils.config import ConfigError


class MBPPEvaluationCallback(TrainerCallback):
    def __init__(self, cfg, sandbox=None, output_dir: str | None = None, trainer=None):
        self.cfg = cfg
        self.sandbox = sandbox
        self.output_dir = output_dir
        self.trainer = trainer
        try:
            problems = mbpp.load(cfg.dataset_path, sanitized=cfg.sanitized, split=cfg.split)
            self.problems = mbpp.select(problems, cfg.num_questions, cfg.selection, cfg.seed)
            self.shots = mbpp.few_shot_examples(cfg.dataset_path) if cfg.prompt_format == "three_shot" else []
            mbpp.build_prompt(self.problems[0], cfg.prompt_format, self.shots)  # a bad format fails now
        except mbpp.DatasetError as exc:
            raise ConfigError(f"evaluation: {exc}") from None
        self._done: set[tuple[int, str]] = set()
        self._owns_sandbox = False

    def attach(self, trainer) -> MBPPEvaluationCallback:
        self.trainer = trainer
        return self

    # ------------------------------------------------------------------ events
    def on_train_begin(self, args, state, control, **kwargs):
        if self.cfg.at_start and state.global_step == 0:
            self.evaluate("initial", control)

    def on_step_end(self, args, state, control, **kwargs):
        every = self.cfg.eval_interval_steps
        if every and state.global_step % every == 0 and not (self.cfg.at_end and state.global_step == state.max_steps):
            self.evaluate("interval", control)

    def on_train_end(self, args, state, control, **kwargs):
        if self.cfg.at_end:
            self.evaluate("final", control)
        if self._owns_sandbox:
            self.sandbox.close()
            self.sandbox, self._owns_sandbox = None, False

    # ------------------------------------------------------------------ evaluation
    def evaluate(self, phase: str, control=None) -> dict | None:
        trainer = self.trainer
        if trainer is None:
            raise RuntimeError("MBPPEvaluationCallback.attach(trainer) was not called")
        step = trainer.state.global_step
        if (step, phase) in self._done:
            return None
        self._done.add((step, phase))
        acc = trainer.accelerator
        start = time.perf_counter()
        mine = self._shard(acc.process_index, acc.num_processes)
        local = self._generate(trainer, [self.problems[i] for i in mine])
        samples = [
            {
                "task_id": self.problems[i].task_id,
                "prompt": prompt,
                "completion": c,
                "index": j,
                "rank": acc.process_index,
            }
            for i, (prompt, comps) in zip(mine, local)
            for j, c in enumerate(comps)
        ]
        if acc.num_processes > 1:
            from accelerate.utils import gather_object

            samples = gather_object(samples)
        metrics: dict = {}
        if acc.is_main_process:
            seen, unique = set(), []
            for s in samples:  # shards were padded with repeats to equal length
                key = (s["task_id"], s["index"])
                if key not in seen:
                    seen.add(key)
                    unique.append(s)
            result = score_samples(
                self.problems,
                unique,
                self._sandbox(),
                include_challenge=self.cfg.include_challenge_tests,
                ks=self.cfg.k,
                timeout_s=self.cfg.timeout_seconds,
            )
            elapsed = time.perf_counter() - start
            metrics = {
                "mbpp_eval/pass_rate": result["pass@1"],
                "mbpp_eval/problems_passed": result["problems_passed"],
                "mbpp_eval/total_problems": result["total_problems"],
                "mbpp_eval/eval_time_s": round(elapsed, 3),
                **{f"mbpp_eval/{k}": v for k, v in result["pass@k"].items() if k != "pass@1"},
            }
            result["world_size"] = acc.num_processes
            self._write(step, phase, result, metrics)
            print(f"[mbpp_eval] step {step} ({phase}): {summary_line(result)}", flush=True)
        if acc.num_processes > 1:
            from accelerate.utils import broadcast_object_list

            holder = [metrics]
            broadcast_object_list(holder, from_process=0)
            metrics = holder[0]
        self._log(trainer, metrics, control)
        return metrics

    def _shard(self, rank: int, world: int) -> list[int]:
        n = len(self.problems)
        per = math.ceil(n / world)
        idx = list(range(rank, n, world))
        while len(idx) < per:  # equal-sized shards: every rank makes the same number of generate calls
            idx.append(idx[-1] if idx else 0)
        return idx

    def _generate(self, trainer, problems) -> list[tuple[str, list[str]]]:
        cfg = self.cfg
        tokenizer = trainer.processing_class
        prompts = prompts_for(problems, cfg.prompt_format, tokenizer, self.shots)
        if getattr(trainer.args, "use_vllm", False) and getattr(trainer, "vllm_generation", None) is not None:
            comps = self._vllm_generate(trainer, prompts)
        else:
            from trl.models.utils import unwrap_model_for_generation

            with unwrap_model_for_generation(trainer.model_wrapped, trainer.accelerator) as model:
                was_training = model.training
                model.eval()
                comps = hf_generate(
                    model,
                    tokenizer,
                    prompts,
                    max_new_tokens=cfg.max_new_tokens,
                    temperature=cfg.temperature,
                    n=cfg.n_samples,
                    batch_size=cfg.batch_size,
                    stops=stops_for(cfg.prompt_format),
                    progress=trainer.accelerator.is_main_process,
                )
                model.train(was_training)
        return list(zip(prompts, comps))

    def _vllm_generate(self, trainer, prompts: list[str]) -> list[list[str]]:
        """Generate with the trainer's vLLM engine after pushing the current weights into it."""
        from utils.extraction import truncate_at_stops

        vg = trainer.vllm_generation
        if getattr(trainer, "_last_loaded_step", None) != trainer.state.global_step:
            vg.sync_weights()
            trainer._last_loaded_step = trainer.state.global_step
        tok = trainer.processing_class
        ids = [tok(p, add_special_tokens=False)["input_ids"] for p in prompts]
        saved = (vg.temperature, vg.max_completion_length)
        vg.temperature, vg.max_completion_length = max(self.cfg.temperature, 0.0), self.cfg.max_new_tokens
        try:
            n = self.cfg.n_samples
            repeated = [p for p in ids for _ in range(n)]
            _, completion_ids, _, _ = vg.generate(repeated, None, num_generations=n)
        finally:
            vg.temperature, vg.max_completion_length = saved
        texts = tok.batch_decode(completion_ids, skip_special_tokens=True)
        stops = stops_for(self.cfg.prompt_format)
        return [[truncate_at_stops(t, stops) for t in texts[i * n : (i + 1) * n]] for i in range(len(prompts))]

    def _sandbox(self):
        if self.sandbox is None:
            from sandbox import Sandbox, default_workers

            self.sandbox = Sandbox(workers=default_workers(), timeout_s=self.cfg.timeout_seconds)
            self._owns_sandbox = True
        return self.sandbox

    def _write(self, step: int, phase: str, result: dict, metrics: dict) -> None:
        out_dir = os.path.join(self.output_dir or self.trainer.args.output_dir, "eval_results")
        os.makedirs(out_dir, exist_ok=True)
        path = os.path.join(out_dir, f"mbpp_step_{step}_{phase}.json")
        with open(path, "w", encoding="utf-8") as f:
            json.dump({"step": step, "phase": phase, "config": _plain(self.cfg), **metrics, **result}, f, indent=1)

    @staticmethod
    def _log(trainer, metrics: dict, control) -> None:
        """Log through the base Trainer.log: reporters and metrics.jsonl see it at this step, and the
        GRPO trainer's buffered metrics stay for its own log of this step."""
        if not metrics:
            return
        saved = control.should_log if control is not None else None
        Trainer.log(trainer, dict(metrics))
        if control is not None:
            control.should_log = saved
            trainer.control.should_log = saved


def _plain(cfg) -> dict:
    from dataclasses import asdict, is_dataclass

    return asdict(cfg) if is_dataclass(cfg) else dict(cfg)
