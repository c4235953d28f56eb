"""``python -m utils.plots OUTPUT_DIR [--out DIR]``: PNG curves from a run's metrics.jsonl.

Writes reward.png (total and per reward function), tiers.png (execution outcome shares), length.png
(completion length) and, when the run evaluated on MBPP, mbpp.png (pass rate by step).
"""

from __future__ import annotations

import argparse
from pathlib import Path

from utils.callbacks import read_metrics


def _series(rows: list[dict], key: str) -> tuple[list[int], list[float]]:
    pts = [(r["step"], r[key]) for r in rows if isinstance(r.get(key), (int, float))]
    return [p[0] for p in pts], [p[1] for p in pts]


def _plot(path: Path, title: str, rows: list[dict], keys: list[str], ylabel: str) -> Path | None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    drawn = False
    fig, ax = plt.subplots(figsize=(7, 4))
    for key in keys:
        xs, ys = _series(rows, key)
        if xs:
            ax.plot(xs, ys, marker="o" if len(xs) < 15 else None, label=key)
            drawn = True
    if not drawn:
        plt.close(fig)
        return None
    ax.set_title(title)
    ax.set_xlabel("step")
    ax.set_ylabel(ylabel)
    ax.grid(alpha=0.3)
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path


def plot_run(run_dir: str | Path, out_dir: str | Path | None = None) -> list[Path]:
    run_dir = Path(run_dir)
    out = Path(out_dir or run_dir)
    out.mkdir(parents=True, exist_ok=True)
    rows = read_metrics(str(run_dir))
    if not rows:
        raise SystemExit(f"no metrics.jsonl in {run_dir}")
    keys = sorted({k for r in rows for k in r})
    made = [
        _plot(
            out / "reward.png",
            "reward",
            rows,
            ["reward", *[k for k in keys if k.startswith("rewards/") and k.endswith("/mean")]],
            "reward",
        ),
        _plot(
            out / "tiers.png",
            "execution outcomes (share of completions)",
            rows,
            [k for k in keys if k.startswith("reward/tier/")],
            "share",
        ),
        _plot(
            out / "length.png",
            "completion length",
            rows,
            ["completions/mean_length", "completions/mean_terminated_length"],
            "tokens",
        ),
        _plot(out / "mbpp.png", "MBPP pass rate", rows, ["mbpp_eval/pass_rate"], "pass rate"),
    ]
    return [p for p in made if p is not None]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m utils.plots", description=__doc__.split("\n")[0])
    parser.add_argument("output_dir", help="a run's output_dir (holds metrics.jsonl)")
    parser.add_argument("--out", help="where to write the PNGs (default: output_dir)")
    args = parser.parse_args(argv)
    for p in plot_run(args.output_dir, args.out):
        print(p)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
