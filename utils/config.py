"""One config system for every script: nested YAML sections, dotted overrides, provenance, TRL validation.

    python grpo_code_execution.py --config configs/grpo_code_execution.yaml --training_args.learning_rate=3e-6 \
        --model.name_or_path Qwen/Qwen2.5-0.5B --resume auto

Precedence, lowest first: dataclass defaults < platform profile < YAML < environment variables (the ones an
issue names, e.g. ``MBPP_EVAL_NUM_QUESTIONS``) < command line. Sections are OmegaConf structured configs, so
values are converted to each field's type and an unknown key fails with one message naming the key, its file
and line, and the valid keys. ``training_args`` maps onto the script's TRL config class (``GRPOConfig``), which
validates its own fields.
"""

from __future__ import annotations

import dataclasses
import difflib
import enum
import os
import sys
import types
import typing
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml
from omegaconf import DictConfig, OmegaConf
from omegaconf.errors import ConfigKeyError, OmegaConfBaseException, ValidationError

from utils import platform as plat


class ConfigError(Exception):
    """A mistake in a config file, override or environment variable. The message says where and how to fix it."""


# ------------------------------------------------------------------------------------------ sections
@dataclass
class ModelSection:
    name_or_path: str = "Qwen/Qwen2.5-1.5B"  # Hub id or local directory
    revision: str | None = None
    dtype: str = "auto"  # auto (from the platform profile) | float32 | bfloat16 | float16
    cache_dir: str | None = None
    trust_remote_code: bool = False
    attn_implementation: str | None = None  # e.g. flash_attention_2 (needs the gpu extra)


@dataclass
class LoraSection:
    enabled: bool = False
    r: int = 16
    alpha: int = 32
    dropout: float = 0.05
    target_modules: list[str] = field(default_factory=lambda: ["q_proj", "k_proj", "v_proj", "o_proj"])


@dataclass
class SandboxSection:
    workers: int = 0  # 0: the usable CPU cores divided among this node's training processes
    timeout_s: float = 5.0
    memory_mb: int = 512
    isolation: str = "auto"  # auto | strict


@dataclass
class EvaluationSection:
    enabled: bool = False
    num_questions: int = 50
    eval_interval_steps: int = 20  # 0: only initial and final
    at_start: bool = True
    at_end: bool = True
    temperature: float = 0.0  # 0: greedy
    max_new_tokens: int = 512
    n_samples: int = 1
    k: list[int] = field(default_factory=lambda: [1])
    timeout_seconds: float = 10.0
    dataset_path: str | None = None  # mbpp.jsonl / sanitized-mbpp.json or their folder; None: the Hub
    sanitized: bool = False
    split: str = "test"
    prompt_format: str = "docstring"  # docstring | three_shot | chat
    selection: str = "first"  # first (by task_id) | random
    seed: int = 0
    batch_size: int = 8
    include_challenge_tests: bool = False


@dataclass
class PlatformSection:
    profile: str = "auto"  # auto | cpu | v100 | a100 | h100 | h200 | cuda
    cluster: str = "auto"  # auto | supercloud | slurm | none


@dataclass
class WandbSection:
    mode: str = "disabled"  # online | offline | disabled
    project: str = "rl-coding-games"
    entity: str | None = None
    run_name: str | None = None
    tags: list[str] = field(default_factory=list)


@dataclass
class VllmSection:
    enabled: bool = False
    mode: str = "colocate"  # colocate | server
    gpu_memory_utilization: float = 0.3
    server_host: str = "0.0.0.0"  # noqa: S104 - the trl vllm-serve address, as TRL names it
    server_port: int = 8000
    tensor_parallel_size: int = 1


@dataclass
class BaseConfig:
    """Sections every script shares. Scripts subclass this and add their own sections."""

    model: ModelSection = field(default_factory=ModelSection)
    lora: LoraSection = field(default_factory=LoraSection)
    sandbox: SandboxSection = field(default_factory=SandboxSection)
    evaluation: EvaluationSection = field(default_factory=EvaluationSection)
    platform: PlatformSection = field(default_factory=PlatformSection)
    wandb: WandbSection = field(default_factory=WandbSection)
    vllm: VllmSection = field(default_factory=VllmSection)
    offline: str = "auto"  # auto | true | false
    seed: int = 42
    resume: str | None = None  # auto | PATH to a checkpoint-N folder
    training_args: dict[str, Any] = field(default_factory=dict)


# Environment variables that set config keys (between YAML and the command line).
ENV_OVERRIDES: dict[str, str] = {
    "MBPP_EVAL_NUM_QUESTIONS": "evaluation.num_questions",
    "MBPP_DATASET_PATH": "evaluation.dataset_path",
    "MBPP_EVAL_INTERVAL_STEPS": "evaluation.eval_interval_steps",
    "MBPP_EVAL_ENABLED": "evaluation.enabled",
    "MBPP_TIMEOUT_SECONDS": "evaluation.timeout_seconds",
    "MBPP_TEMPERATURE": "evaluation.temperature",
    "MBPP_MAX_NEW_TOKENS": "evaluation.max_new_tokens",
}


# ------------------------------------------------------------------------------------------ result
@dataclass
class Resolved:
    cfg: Any  # the script's dataclass instance
    trl_args: Any  # the TRL config object built from training_args
    sources: dict[str, str]  # dotted key -> where its value came from (non-defaults only)
    platform: plat.PlatformInfo
    config_path: str | None
    offline: bool
    training_args: dict = field(default_factory=dict)  # what goes to the TRL config class, after all layers

    def summary(self) -> str:
        lines = ["platform:", self.platform.table(), "settings (not defaults):"]
        flat = _flatten(OmegaConf.to_container(OmegaConf.structured(self.cfg), resolve=True))
        width = max((len(k) for k in self.sources), default=10)
        for key in sorted(self.sources):
            value = _get_trl(self.trl_args, key) if key.startswith("training_args.") else flat.get(key)
            lines.append(f"  {key:<{width}}  {value!r:<28} [{self.sources[key]}]")
        return "\n".join(lines)

    def save(self, path: str | os.PathLike) -> None:
        """Write the resolved config as YAML: every section, and training_args as TRL resolved them."""
        data = OmegaConf.to_container(OmegaConf.structured(self.cfg), resolve=True)
        if self.trl_args is not None:
            given = data.get("training_args", {})
            resolved = _trl_dict(self.trl_args)
            data["training_args"] = {k: resolved.get(k, v) for k, v in given.items()}
            data["training_args"]["output_dir"] = self.trl_args.output_dir
        Path(path).parent.mkdir(parents=True, exist_ok=True)
        with open(path, "w", encoding="utf-8") as f:
            f.write(f"# Resolved config ({self.config_path or 'defaults'}); sources of non-defaults:\n")
            for key in sorted(self.sources):
                f.write(f"#   {key}: {self.sources[key]}\n")
            yaml.safe_dump(data, f, sort_keys=False)


def _get_trl(trl_args, key: str):
    if key.startswith("training_args."):
        return getattr(trl_args, key.split(".", 1)[1], None)
    return None


def _trl_dict(trl_args) -> dict:
    out = {}
    for f in dataclasses.fields(trl_args):
        v = getattr(trl_args, f.name)
        if isinstance(v, enum.Enum):
            v = v.value
        if isinstance(v, (str, int, float, bool, type(None))):
            out[f.name] = v
        elif isinstance(v, (list, tuple)) and all(isinstance(x, (str, int, float, bool)) for x in v):
            out[f.name] = list(v)
    return out


def _flatten(d: dict, prefix: str = "") -> dict[str, Any]:
    out = {}
    for k, v in d.items():
        key = f"{prefix}{k}"
        if isinstance(v, dict) and v:
            out.update(_flatten(v, key + "."))
        else:
            out[key] = v
    return out


# ------------------------------------------------------------------------------------------ parsing
def parse_argv(argv: list[str]) -> tuple[str | None, list[tuple[str, str]]]:
    """``--config PATH`` plus any number of ``--a.b=value`` or ``--a.b value`` overrides, in order."""
    config, overrides = None, []
    i = 0
    while i < len(argv):
        arg = argv[i]
        if not arg.startswith("--") or arg == "--":
            raise ConfigError(f"unexpected argument {arg!r}: overrides look like --section.key=value")
        key, eq, value = arg[2:].partition("=")
        if not eq:
            if i + 1 >= len(argv) or argv[i + 1].startswith("--"):
                raise ConfigError(f"--{key} needs a value: --{key}=VALUE or --{key} VALUE")
            value = argv[i + 1]
            i += 1
        i += 1
        if key == "config":
            config = value
        else:
            overrides.append((key.replace("-", "_"), value))
    return config, overrides


def _yaml_lines(path: str) -> dict[str, int]:
    """Dotted key -> 1-based line in the YAML file, for error messages."""
    lines: dict[str, int] = {}
    try:
        with open(path, encoding="utf-8") as f:
            root = yaml.compose(f)
    except (OSError, yaml.YAMLError):
        return lines

    def walk(node, prefix):
        if isinstance(node, yaml.MappingNode):
            for k, v in node.value:
                key = f"{prefix}{k.value}"
                lines[key] = k.start_mark.line + 1
                walk(v, key + ".")

    walk(root, "")
    return lines


def _load_yaml(path: str) -> dict:
    p = Path(path)
    if not p.is_file():
        raise ConfigError(f"config file not found: {path}")
    try:
        yaml.safe_load(p.read_text(encoding="utf-8"))  # for its error messages with line numbers
        # OmegaConf's loader reads 1e-4 as a float (YAML 1.1 reads it as a string).
        data = OmegaConf.to_container(OmegaConf.load(p)) or {}
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f"{path}:{mark.line + 1}" if mark else path
        raise ConfigError(f"{where}: invalid YAML: {getattr(exc, 'problem', exc)}") from None
    if not isinstance(data, dict):
        raise ConfigError(f"{path}: the top level must be a mapping of sections (model:, training_args:, ...)")
    return data


def _parse_scalar(text: str) -> Any:
    """A command-line or environment value, read as YAML (1e-4 -> float, true -> bool, [a, b] -> list)."""
    try:
        node = OmegaConf.create({"v": yaml.safe_load(text)})
        return node.v if not OmegaConf.is_config(node.v) else OmegaConf.to_container(node.v)
    except (yaml.YAMLError, OmegaConfBaseException):
        return text


def _set(d: dict, dotted: str, value: Any) -> None:
    parts = dotted.split(".")
    for p in parts[:-1]:
        d = d.setdefault(p, {})
        if not isinstance(d, dict):
            raise ConfigError(f"{dotted}: {p!r} is a value, not a section")
    d[parts[-1]] = value


def _merge_layer(base: DictConfig, layer: dict, source: str, lines: dict[str, int] | None = None) -> DictConfig:
    try:
        return OmegaConf.merge(base, OmegaConf.create(layer))
    except ConfigKeyError as exc:
        key = exc.full_key or "?"
        parent_key, _, leaf = key.rpartition(".")
        parent = OmegaConf.select(base, parent_key) if parent_key else base
        valid = list(parent) if isinstance(parent, DictConfig) else []
        close = difflib.get_close_matches(leaf, valid, n=1)
        where = f"{source}:{lines[key]}" if lines and key in lines else source
        hint = f" Did you mean {close[0]!r}?" if close else ""
        section = f"section {parent_key!r}" if parent_key else "the top level"
        raise ConfigError(f"{where}: unknown key {key!r}.{hint} Valid keys of {section}: {', '.join(valid)}") from None
    except ValidationError as exc:
        key = exc.full_key or "?"
        where = f"{source}:{lines[key]}" if lines and key in lines else source
        msg = str(exc).splitlines()[0]
        raise ConfigError(f"{where}: bad value for {key!r}: {msg}") from None


# ------------------------------------------------------------------------------------------ TRL config
def _field_types(cls) -> dict[str, Any]:
    hints = typing.get_type_hints(cls)
    return {f.name: hints.get(f.name, Any) for f in dataclasses.fields(cls) if f.init}


def _coerce(value: Any, tp: Any) -> Any:
    """Convert a YAML/CLI value to a TRL field's declared type (the seed system passed '1e-4' as a string)."""
    origin = typing.get_origin(tp)
    if origin in (typing.Union, types.UnionType):
        args = [a for a in typing.get_args(tp) if a is not type(None)]
        if value is None:
            return None
        for a in args:
            try:
                return _coerce(value, a)
            except (TypeError, ValueError):
                continue
        return value
    if tp is bool:
        if isinstance(value, bool):
            return value
        if isinstance(value, str) and value.lower() in ("true", "false", "1", "0", "yes", "no"):
            return value.lower() in ("true", "1", "yes")
        raise ValueError(f"expected true/false, got {value!r}")
    if tp is int:
        if isinstance(value, bool):
            raise ValueError("expected an integer")
        if isinstance(value, float) and value.is_integer():
            return int(value)
        if not isinstance(value, (int, str)):
            raise ValueError(f"expected an integer, got {value!r}")
        return int(value)
    if tp is float:
        if isinstance(value, bool):
            raise ValueError("expected a number")
        return float(value)
    if tp is str:
        if isinstance(value, (dict, list)):
            raise ValueError(f"expected a string, got {type(value).__name__}")
        return str(value)
    return value


def build_trl_args(trl_cls, training_args: dict, sources: dict[str, str], lines: dict[str, int], path: str | None):
    types_ = _field_types(trl_cls)
    kwargs = {}
    for key, value in training_args.items():
        src = sources.get(f"training_args.{key}", "defaults")
        where = f"{path}:{lines[f'training_args.{key}']}" if src == "yaml" and path else src
        if key not in types_:
            close = difflib.get_close_matches(key, list(types_), n=3)
            hint = f" Did you mean {' or '.join(repr(c) for c in close)}?" if close else ""
            raise ConfigError(
                f"{where}: training_args.{key} is not a field of {trl_cls.__name__}.{hint} "
                f"See `python -c 'import trl; help(trl.{trl_cls.__name__})'` for its {len(types_)} fields."
            )
        try:
            kwargs[key] = _coerce(value, types_[key])
        except (TypeError, ValueError) as exc:
            raise ConfigError(f"{where}: training_args.{key}: {exc}") from None
    try:
        return trl_cls(**kwargs)
    except (ValueError, TypeError) as exc:
        raise ConfigError(f"{path or 'config'}: training_args rejected by {trl_cls.__name__}: {exc}") from None


# ------------------------------------------------------------------------------------------ entry point
def load_config(
    schema: type,
    trl_cls: type | None,
    argv: list[str] | None = None,
    *,
    default_config: str | None = None,
    env: dict[str, str] | None = None,
    device: plat.DeviceInfo | None = None,
    build_trl: bool = True,
) -> Resolved:
    """Resolve a script's config from ``argv`` (``sys.argv[1:]`` by default). Raises ``ConfigError``."""
    argv = sys.argv[1:] if argv is None else argv
    env = os.environ if env is None else env
    path, overrides = parse_argv(argv)
    path = path or default_config
    base = OmegaConf.structured(schema)

    # Layers, lowest first. The platform profile depends on the platform section of the others.
    yaml_layer: dict = _load_yaml(path) if path else {}
    lines = _yaml_lines(path) if path else {}
    env_layer: dict = {}
    env_sources: dict[str, str] = {}
    for var, key in ENV_OVERRIDES.items():
        if env.get(var) not in (None, "") and OmegaConf.select(base, key, default="__missing__") != "__missing__":
            _set(env_layer, key, _parse_scalar(env[var]))
            env_sources[key] = f"env {var}"
    cli_layer: dict = {}
    for key, value in overrides:
        _set(cli_layer, key, _parse_scalar(value))

    merged = base
    for layer, source, ln in (
        (yaml_layer, path or "yaml", lines),
        (env_layer, "environment", None),
        (cli_layer, "command line", None),
    ):
        merged = _merge_layer(merged, layer, source, ln)
    try:
        info = plat.resolve(merged.platform.profile, merged.platform.cluster, device)
    except ValueError as exc:
        raise ConfigError(str(exc)) from None

    trl_fields = set(_field_types(trl_cls)) if trl_cls is not None else set()
    profile_layer = {
        section: ({k: v for k, v in values.items() if k in trl_fields} if section == "training_args" else dict(values))
        for section, values in info.settings.items()
        if section in base
    }
    final = base
    for layer, source, ln in (
        (profile_layer, f"profile {info.profile}", None),
        (yaml_layer, path or "yaml", lines),
        (env_layer, "environment", None),
        (cli_layer, "command line", None),
    ):
        final = _merge_layer(final, layer, source, ln)

    sources: dict[str, str] = {}
    for source, layer in (
        (f"profile {info.profile}", profile_layer),
        ("yaml", yaml_layer),
        ("environment", env_layer),
        ("command line", cli_layer),
    ):
        for key in _flatten(layer):
            sources[key] = env_sources.get(key, source) if source == "environment" else source
    # Dict-valued fields (training_args) hold a nested mapping only through the merged layers above.
    cfg = OmegaConf.to_object(final)
    offline = resolve_offline(cfg.offline, info.cluster, env)
    trl_args = None
    training_args = dict(cfg.training_args)
    if trl_cls is not None:
        training_args.setdefault("seed", cfg.seed)
        _apply_reporting(training_args, cfg, trl_fields, offline)
        _apply_vllm(training_args, cfg, trl_fields)
        if build_trl:  # tests of GPU profiles on a CPU machine stop here: TRL checks the hardware
            trl_args = build_trl_args(trl_cls, training_args, sources, lines, path)
    return Resolved(
        cfg=cfg,
        trl_args=trl_args,
        sources=sources,
        platform=info,
        config_path=path,
        offline=offline,
        training_args=training_args,
    )


def resolve_offline(setting: str | bool, cluster: str, env=os.environ) -> bool:
    value = str(setting).lower()
    if value in ("true", "1", "yes"):
        return True
    if value in ("false", "0", "no"):
        return False
    if value != "auto":
        raise ConfigError(f"offline: expected auto, true or false, got {setting!r}")
    return cluster == "supercloud" or env.get("HF_HUB_OFFLINE") == "1"


def _apply_reporting(training_args: dict, cfg, trl_fields: set[str], offline: bool) -> None:
    """report_to and run_name from the wandb section, unless training_args sets them explicitly."""
    mode = cfg.wandb.mode
    if mode not in ("online", "offline", "disabled"):
        raise ConfigError(f"wandb.mode: expected online, offline or disabled, got {mode!r}")
    if "report_to" in trl_fields:
        training_args.setdefault("report_to", "none" if mode == "disabled" else "wandb")
    if cfg.wandb.run_name and "run_name" in trl_fields:
        training_args.setdefault("run_name", cfg.wandb.run_name)


def _apply_vllm(training_args: dict, cfg, trl_fields: set[str]) -> None:
    """The vllm section passes through to TRL's use_vllm / vllm_* fields (training_args wins if set)."""
    v = cfg.vllm
    if v.mode not in ("colocate", "server"):
        raise ConfigError(f"vllm.mode: expected colocate or server, got {v.mode!r}")
    mapping = {
        "use_vllm": v.enabled,
        "vllm_mode": v.mode,
        "vllm_gpu_memory_utilization": v.gpu_memory_utilization,
        "vllm_server_host": v.server_host,
        "vllm_server_port": v.server_port,
        "vllm_tensor_parallel_size": v.tensor_parallel_size,
    }
    for key, value in mapping.items():
        if key in trl_fields:
            training_args.setdefault(key, value)


def cli_main(
    run, schema: type, trl_cls: type | None, argv: list[str] | None = None, default_config: str | None = None
) -> int:
    """Shared ``main()`` wrapper: a user's config mistake ends in one clear line, not a traceback."""
    try:
        run(load_config(schema, trl_cls, argv, default_config=default_config))
    except ConfigError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    return 0
