"""Start-up and checkpoint helpers shared by the training scripts."""

from __future__ import annotations

import os

from utils.config import ConfigError, Resolved
from utils.offline import setup_environment


def resolve_resume(resume: str | None, output_dir: str) -> str | None:
    """``--resume auto`` picks the last ``checkpoint-N`` in output_dir (None when there is none yet);
    ``--resume PATH`` must be a checkpoint folder."""
    if not resume:
        return None
    if resume == "auto":
        from transformers.trainer_utils import get_last_checkpoint

        return get_last_checkpoint(output_dir) if os.path.isdir(output_dir) else None
    if not os.path.isdir(resume):
        raise ConfigError(f"resume: checkpoint folder not found: {resume} (use --resume auto to pick the last one)")
    return resume


def startup(resolved: Resolved, script: str) -> str | None:
    """Environment, seed, the start-up table and ``output_dir/config.yaml``; returns the checkpoint to resume."""
    from transformers import set_seed

    cfg, args = resolved.cfg, resolved.trl_args
    notes = setup_environment(cfg, resolved.offline, args.output_dir)
    set_seed(cfg.seed)
    resume = resolve_resume(cfg.resume, args.output_dir)
    if int(os.environ.get("RANK", "0")) == 0:
        print(f"== {script} ==")
        print(resolved.summary())
        for note in notes:
            print(f"  note: {note}")
        if cfg.resume:
            print(f"  resume: {resume or 'no checkpoint yet in ' + args.output_dir + ', starting fresh'}")
        resolved.save(os.path.join(args.output_dir, "config.yaml"))
    return resume
