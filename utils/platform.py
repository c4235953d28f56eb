"""Platform auto-detection: one table of profiles (cpu, v100, a100, h100, h200, generic cuda) and clusters.

A profile is a layer of defaults *under* the user's YAML, environment and command line: it sets only what the
user did not set. GPUs are recognised by compute capability and memory, never by name alone (the seed system
treated an H200 as "unknown, fp16").
"""

from __future__ import annotations

import os
import socket
from dataclasses import dataclass, field

# Values each profile contributes, by config section. ``training_args`` keys are filtered to the fields the
# script's TRL config class has (max_completion_length exists for GRPO, not for SFT).
PROFILES: dict[str, dict] = {
    "cpu": {
        "model": {"dtype": "float32"},
        "training_args": {
            "use_cpu": True,
            "bf16": False,
            "fp16": False,
            "tf32": False,
            "activation_checkpointing": False,
            "per_device_train_batch_size": 8,
            "gradient_accumulation_steps": 1,
            "max_completion_length": 128,
            "dataloader_num_workers": 0,
        },
        "vllm": {"enabled": False},
        "evaluation": {"num_questions": 10, "batch_size": 8},
    },
    "v100": {  # compute capability 7.0: no bf16, no tf32
        "model": {"dtype": "float16"},
        "training_args": {
            "bf16": False,
            "fp16": True,
            "tf32": False,
            "activation_checkpointing": True,
            "per_device_train_batch_size": 4,
            "gradient_accumulation_steps": 4,
            "max_completion_length": 256,
        },
        "vllm": {"gpu_memory_utilization": 0.25},
        "evaluation": {"num_questions": 50, "batch_size": 16},
    },
    "a100": {
        "model": {"dtype": "bfloat16"},
        "training_args": {
            "bf16": True,
            "fp16": False,
            "tf32": True,
            "activation_checkpointing": True,
            "per_device_train_batch_size": 8,
            "gradient_accumulation_steps": 2,
            "max_completion_length": 512,
        },
        "vllm": {"gpu_memory_utilization": 0.3},
        "evaluation": {"num_questions": 100, "batch_size": 32},
    },
    "h100": {
        "model": {"dtype": "bfloat16"},
        "training_args": {
            "bf16": True,
            "fp16": False,
            "tf32": True,
            "activation_checkpointing": True,
            "per_device_train_batch_size": 16,
            "gradient_accumulation_steps": 1,
            "max_completion_length": 512,
        },
        "vllm": {"gpu_memory_utilization": 0.35},
        "evaluation": {"num_questions": 200, "batch_size": 64},
    },
    "h200": {  # 141 GB: larger batches and longer completions fit
        "model": {"dtype": "bfloat16"},
        "training_args": {
            "bf16": True,
            "fp16": False,
            "tf32": True,
            "activation_checkpointing": False,
            "per_device_train_batch_size": 32,
            "gradient_accumulation_steps": 1,
            "max_completion_length": 1024,
        },
        "vllm": {"gpu_memory_utilization": 0.45},
        "evaluation": {"num_questions": 500, "batch_size": 128},
    },
}


@dataclass
class DeviceInfo:
    kind: str  # "cpu" or "cuda"
    name: str = "cpu"
    capability: tuple[int, int] | None = None
    memory_gib: float = 0.0
    count: int = 0


@dataclass
class PlatformInfo:
    device: DeviceInfo
    profile: str
    cluster: str  # "supercloud", "slurm" or "none"
    reason: str
    settings: dict = field(default_factory=dict)

    def table(self) -> str:
        d = self.device
        gpu = (
            f"{d.count} x {d.name} (sm_{d.capability[0]}{d.capability[1]}, {d.memory_gib:.0f} GiB)"
            if d.kind == "cuda" and d.capability
            else "none (CPU)"
        )
        rows = [("GPU", gpu), ("profile", f"{self.profile} ({self.reason})"), ("cluster", self.cluster)]
        width = max(len(k) for k, _ in rows)
        return "\n".join(f"  {k:<{width}}  {v}" for k, v in rows)


def detect_device() -> DeviceInfo:
    try:
        import torch
    except ImportError:
        return DeviceInfo(kind="cpu")
    if not torch.cuda.is_available():
        return DeviceInfo(kind="cpu")
    props = torch.cuda.get_device_properties(0)
    return DeviceInfo(
        kind="cuda",
        name=props.name,
        capability=(props.major, props.minor),
        memory_gib=props.total_memory / 1024**3,
        count=torch.cuda.device_count(),
    )


def profile_for(device: DeviceInfo) -> tuple[str, str]:
    """(profile name, why) for a device, from compute capability and memory."""
    if device.kind != "cuda" or device.capability is None:
        return "cpu", "no CUDA device"
    major, minor = device.capability
    cap = f"sm_{major}{minor}"
    if (major, minor) == (7, 0):
        return "v100", f"{cap}: no bf16, fp16 instead"
    if (major, minor) == (8, 0):
        return "a100", cap
    if (major, minor) == (9, 0):
        if device.memory_gib >= 120:
            return "h200", f"{cap}, {device.memory_gib:.0f} GiB"
        return "h100", f"{cap}, {device.memory_gib:.0f} GiB"
    return "cuda", f"{cap}: generic CUDA profile by capability"


def generic_cuda_profile(device: DeviceInfo) -> dict:
    """For GPUs outside the table (A10, L4, RTX, T4, ...): bf16 only from capability 8.0 on."""
    major = device.capability[0] if device.capability else 0
    bf16 = major >= 8
    big = device.memory_gib >= 40
    return {
        "model": {"dtype": "bfloat16" if bf16 else "float16"},
        "training_args": {
            "bf16": bf16,
            "fp16": not bf16,
            "tf32": bf16,
            "activation_checkpointing": True,
            "per_device_train_batch_size": 8 if big else 4,
            "gradient_accumulation_steps": 2 if big else 4,
            "max_completion_length": 512 if big else 256,
        },
        "vllm": {"gpu_memory_utilization": 0.3},
        "evaluation": {"num_questions": 100 if big else 50, "batch_size": 16},
    }


def detect_cluster(explicit: str = "auto") -> str:
    if explicit != "auto":
        return explicit
    home = os.path.expanduser("~")
    host = socket.gethostname()
    if home.startswith("/home/gridsan/") or os.path.isdir("/home/gridsan") or "supercloud" in host:
        return "supercloud"
    if os.environ.get("SLURM_JOB_ID") or os.environ.get("SLURM_JOBID"):
        return "slurm"
    return "none"


def resolve(profile: str = "auto", cluster: str = "auto", device: DeviceInfo | None = None) -> PlatformInfo:
    device = device or detect_device()
    if profile == "auto":
        name, reason = profile_for(device)
    else:
        if profile not in PROFILES and profile != "cuda":
            valid = ", ".join([*PROFILES, "cuda", "auto"])
            raise ValueError(f"platform.profile: unknown profile {profile!r}; valid: {valid}")
        name, reason = profile, "set in config"
    settings = generic_cuda_profile(device) if name == "cuda" else PROFILES[name]
    return PlatformInfo(device=device, profile=name, cluster=detect_cluster(cluster), reason=reason, settings=settings)
