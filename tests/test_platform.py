"""Platform profiles with faked device properties, cluster detection, offline mode."""

from __future__ import annotations

import pytest
from trl import GRPOConfig

from utils.config import BaseConfig, ConfigError, load_config, resolve_offline
from utils.platform import DeviceInfo, detect_cluster, profile_for, resolve


def gpu(name, cap, mem):
    return DeviceInfo(kind="cuda", name=name, capability=cap, memory_gib=mem, count=1)


@pytest.mark.parametrize(
    ("device", "profile", "bf16", "fp16"),
    [
        (gpu("Tesla V100-SXM2-32GB", (7, 0), 32), "v100", False, True),
        (gpu("NVIDIA A100-SXM4-80GB", (8, 0), 80), "a100", True, False),
        (gpu("NVIDIA H100 80GB HBM3", (9, 0), 80), "h100", True, False),
        (gpu("NVIDIA H200", (9, 0), 141), "h200", True, False),
        (gpu("Some Future GPU", (9, 0), 141), "h200", True, False),  # by capability and memory, not name
        (gpu("NVIDIA L4", (8, 9), 24), "cuda", True, False),
        (gpu("Tesla T4", (7, 5), 16), "cuda", False, True),
        (DeviceInfo(kind="cpu"), "cpu", False, False),
    ],
)
def test_profiles_by_capability(device, profile, bf16, fp16):
    info = resolve("auto", "none", device)
    assert info.profile == profile
    # GRPOConfig checks the real hardware, so GPU profiles are checked on the arguments it would get.
    r = load_config(
        BaseConfig, GRPOConfig, ["--training_args.output_dir=/tmp/x"], env={}, device=device, build_trl=profile == "cpu"
    )
    ta = r.training_args
    assert ta["bf16"] is bf16 and ta["fp16"] is fp16
    if profile == "cpu":
        assert r.trl_args.use_cpu and not r.trl_args.activation_checkpointing and r.trl_args.bf16 is False
    if profile == "v100":
        assert r.cfg.model.dtype == "float16" and ta["tf32"] is False
    if profile in ("a100", "h100", "h200"):
        assert r.cfg.model.dtype == "bfloat16" and ta["tf32"] is True


def test_h200_is_never_treated_as_unknown_fp16():
    name, why = profile_for(gpu("NVIDIA H200", (9, 0), 141))
    assert name == "h200" and "sm_90" in why


def test_user_values_beat_the_profile():
    r = load_config(
        BaseConfig,
        GRPOConfig,
        ["--training_args.per_device_train_batch_size=3", "--training_args.output_dir=/tmp/x"],
        env={},
        device=gpu("NVIDIA A100", (8, 0), 80),
        build_trl=False,
    )
    assert r.training_args["per_device_train_batch_size"] == 3
    assert r.sources["training_args.per_device_train_batch_size"] == "command line"
    assert r.training_args["max_completion_length"] == 512
    assert r.sources["training_args.max_completion_length"] == "profile a100"


def test_explicit_profile_overrides_detection():
    r = load_config(
        BaseConfig,
        GRPOConfig,
        ["--platform.profile=v100", "--training_args.output_dir=/tmp/x"],
        env={},
        device=DeviceInfo(kind="cpu"),
        build_trl=False,
    )
    assert r.platform.profile == "v100" and r.training_args["fp16"] is True
    with pytest.raises(ConfigError, match="unknown profile"):
        load_config(BaseConfig, GRPOConfig, ["--platform.profile=tpu"], env={}, device=DeviceInfo(kind="cpu"))


def test_cluster_detection(monkeypatch):
    monkeypatch.delenv("SLURM_JOB_ID", raising=False)
    monkeypatch.delenv("SLURM_JOBID", raising=False)
    assert detect_cluster("supercloud") == "supercloud"
    monkeypatch.setenv("SLURM_JOB_ID", "123")
    assert detect_cluster("auto") in ("slurm", "supercloud")
    monkeypatch.setenv("HOME", "/home/gridsan/someone")
    assert detect_cluster("auto") == "supercloud"


def test_offline_auto():
    assert resolve_offline("auto", "supercloud", {}) is True
    assert resolve_offline("auto", "none", {"HF_HUB_OFFLINE": "1"}) is True
    assert resolve_offline("auto", "slurm", {}) is False
    assert resolve_offline("false", "supercloud", {}) is False
    with pytest.raises(ConfigError):
        resolve_offline("maybe", "none", {})


def test_startup_table_names_gpu_and_profile():
    info = resolve("auto", "none", gpu("NVIDIA H200", (9, 0), 141))
    table = info.table()
    assert "NVIDIA H200" in table and "sm_90" in table and "h200" in table
