"""The config system: types, many overrides, unknown keys, precedence and provenance, TRL validation."""

from __future__ import annotations

import pytest
from trl import GRPOConfig

from utils.config import BaseConfig, ConfigError, load_config, parse_argv
from utils.platform import DeviceInfo

CPU = DeviceInfo(kind="cpu")


def _yaml(tmp_path, text: str) -> str:
    p = tmp_path / "c.yaml"
    p.write_text(text)
    return str(p)


def test_values_get_their_field_types(tmp_path):
    path = _yaml(
        tmp_path,
        "training_args:\n  learning_rate: 1e-4\n  max_steps: '7'\n  output_dir: out\nevaluation:\n  temperature: 0\n",
    )
    r = load_config(BaseConfig, GRPOConfig, ["--config", path], env={}, device=CPU)
    assert isinstance(r.trl_args.learning_rate, float) and r.trl_args.learning_rate == 1e-4
    assert r.trl_args.max_steps == 7
    assert isinstance(r.cfg.evaluation.temperature, float)


def test_many_overrides_in_both_forms(tmp_path):
    path = _yaml(tmp_path, "training_args:\n  output_dir: out\n")
    argv = [
        "--config",
        path,
        "--training_args.learning_rate=3e-6",
        "--training_args.max_steps",
        "11",
        "--model.name_or_path",
        "some/model",
        "--lora.enabled=true",
        "--lora.target_modules=[q_proj,v_proj]",
        "--evaluation.num_questions",
        "5",
        "--seed=3",
        "--resume",
        "auto",
        "--training_args.beta=0.04",
    ]
    r = load_config(BaseConfig, GRPOConfig, argv, env={}, device=CPU)
    assert r.trl_args.learning_rate == 3e-6 and r.trl_args.max_steps == 11 and r.trl_args.beta == 0.04
    assert r.cfg.model.name_or_path == "some/model" and r.cfg.lora.enabled is True
    assert r.cfg.lora.target_modules == ["q_proj", "v_proj"]
    assert (r.cfg.evaluation.num_questions, r.cfg.seed, r.cfg.resume) == (5, 3, "auto")


def test_override_parser_rejects_dangling_flags():
    with pytest.raises(ConfigError, match="needs a value"):
        parse_argv(["--model.name_or_path"])
    with pytest.raises(ConfigError, match="unexpected argument"):
        parse_argv(["model.name_or_path=x"])


def test_unknown_yaml_key_names_file_line_and_valid_keys(tmp_path):
    path = _yaml(tmp_path, "model:\n  name_or_path: x\n  revison: main\n")
    with pytest.raises(ConfigError) as exc:
        load_config(BaseConfig, GRPOConfig, ["--config", path], env={}, device=CPU)
    msg = str(exc.value)
    assert f"{path}:3" in msg and "'model.revison'" in msg and "Did you mean 'revision'" in msg
    assert "name_or_path" in msg and "cache_dir" in msg


def test_unknown_section_and_cli_key(tmp_path):
    with pytest.raises(ConfigError, match="unknown key 'modle'"):
        load_config(BaseConfig, GRPOConfig, ["--modle.name_or_path=x"], env={}, device=CPU)


def test_unknown_training_arg_is_checked_by_trl_class(tmp_path):
    path = _yaml(tmp_path, "training_args:\n  learnin_rate: 1e-5\n")
    with pytest.raises(ConfigError) as exc:
        load_config(BaseConfig, GRPOConfig, ["--config", path], env={}, device=CPU)
    assert "not a field of GRPOConfig" in str(exc.value) and "'learning_rate'" in str(exc.value)
    assert f"{path}:2" in str(exc.value)


def test_wrong_type_is_one_clear_message(tmp_path):
    with pytest.raises(ConfigError, match=r"evaluation\.num_questions"):
        load_config(BaseConfig, GRPOConfig, ["--evaluation.num_questions=many"], env={}, device=CPU)
    with pytest.raises(ConfigError, match=r"training_args\.max_steps"):
        load_config(BaseConfig, GRPOConfig, ["--training_args.max_steps=abc"], env={}, device=CPU)


def test_precedence_cli_env_yaml_profile_defaults(tmp_path):
    path = _yaml(
        tmp_path,
        "evaluation:\n  num_questions: 20\n  temperature: 0.3\n  max_new_tokens: 64\n"
        "training_args:\n  per_device_train_batch_size: 2\n  num_generations: 2\n",
    )
    env = {"MBPP_EVAL_NUM_QUESTIONS": "30", "MBPP_TEMPERATURE": "0.7"}
    r = load_config(BaseConfig, GRPOConfig, ["--config", path, "--evaluation.num_questions=40"], env=env, device=CPU)
    assert r.cfg.evaluation.num_questions == 40 and r.sources["evaluation.num_questions"] == "command line"
    assert r.cfg.evaluation.temperature == 0.7
    assert r.sources["evaluation.temperature"] == "env MBPP_TEMPERATURE"
    assert r.cfg.evaluation.max_new_tokens == 64 and r.sources["evaluation.max_new_tokens"] == "yaml"
    # The profile fills only what the user did not set.
    assert r.trl_args.per_device_train_batch_size == 2
    assert r.trl_args.use_cpu is True and r.sources["training_args.use_cpu"] == "profile cpu"
    assert r.cfg.evaluation.batch_size == 8 and r.sources["evaluation.batch_size"] == "profile cpu"
    assert "evaluation.k" not in r.sources  # defaults are not listed
    summary = r.summary()
    assert "[env MBPP_TEMPERATURE]" in summary and "[command line]" in summary


def test_all_mbpp_environment_overrides(tmp_path):
    env = {
        "MBPP_EVAL_NUM_QUESTIONS": "3",
        "MBPP_DATASET_PATH": "/data/mbpp",
        "MBPP_EVAL_INTERVAL_STEPS": "7",
        "MBPP_EVAL_ENABLED": "true",
        "MBPP_TIMEOUT_SECONDS": "4",
        "MBPP_TEMPERATURE": "0.2",
        "MBPP_MAX_NEW_TOKENS": "99",
    }
    e = load_config(BaseConfig, GRPOConfig, [], env=env, device=CPU).cfg.evaluation
    assert (e.num_questions, e.dataset_path, e.eval_interval_steps, e.enabled) == (3, "/data/mbpp", 7, True)
    assert (e.timeout_seconds, e.temperature, e.max_new_tokens) == (4.0, 0.2, 99)


def test_resolved_config_is_written(tmp_path):
    out = tmp_path / "run"
    r = load_config(
        BaseConfig,
        GRPOConfig,
        [f"--training_args.output_dir={out}", "--training_args.learning_rate=2e-5"],
        env={},
        device=CPU,
    )
    r.save(out / "config.yaml")
    text = (out / "config.yaml").read_text()
    assert "learning_rate: 2.0e-05" in text and "training_args.learning_rate: command line" in text
    import yaml

    data = yaml.safe_load(text)
    assert data["training_args"]["output_dir"] == str(out) and data["model"]["dtype"] == "float32"


def test_wandb_and_vllm_sections_pass_through(tmp_path):
    r = load_config(
        BaseConfig,
        GRPOConfig,
        ["--wandb.mode=offline", "--vllm.enabled=true", "--vllm.mode=server", "--vllm.server_port=9000"],
        env={},
        device=CPU,
    )
    assert r.trl_args.report_to == ["wandb"]
    assert r.trl_args.use_vllm is True and r.trl_args.vllm_mode == "server" and r.trl_args.vllm_server_port == 9000
    with pytest.raises(ConfigError, match=r"wandb\.mode"):
        load_config(BaseConfig, GRPOConfig, ["--wandb.mode=sometimes"], env={}, device=CPU)


def test_missing_config_file():
    with pytest.raises(ConfigError, match="config file not found"):
        load_config(BaseConfig, GRPOConfig, ["--config", "/nonexistent.yaml"], env={}, device=CPU)


def test_shipped_configs_resolve():
    import glob

    from tests.conftest import REPO

    for path in glob.glob(str(REPO / "configs" / "*.yaml")):
        if "accelerate" in path:
            continue
        from grpo_code_execution import Config

        r = load_config(Config, GRPOConfig, ["--config", path], env={}, device=CPU)
        assert r.trl_args.output_dir
