"""Generating MBPP completions with the model being trained (HF generate) or a vLLM engine."""

from __future__ import annotations

from collections.abc import Sequence

from evaluation.mbpp import Problem, build_prompt
from utils.extraction import DEFAULT_STOPS, truncate_at_stops


def prompts_for(problems: Sequence[Problem], fmt: str, tokenizer=None, shots: Sequence[Problem] = ()) -> list[str]:
    """Prompt strings; chat prompts go through the tokenizer's chat template."""
    out = []
    for p in problems:
        prompt = build_prompt(p, fmt, shots)
        if fmt == "chat":
            if tokenizer is None or not getattr(tokenizer, "chat_template", None):
                raise ValueError("prompt_format 'chat' needs a tokenizer with a chat template (an instruct model)")
            prompt = tokenizer.apply_chat_template(prompt, add_generation_prompt=True, tokenize=False)
        out.append(prompt)
    return out


def stops_for(fmt: str) -> tuple[str, ...]:
    # Chat answers are fenced blocks: extraction takes the block, nothing to cut.
    return () if fmt == "chat" else DEFAULT_STOPS


def hf_generate(
    model,
    tokenizer,
    prompts: Sequence[str],
    *,
    max_new_tokens: int,
    temperature: float = 0.0,
    n: int = 1,
    batch_size: int = 8,
    stops: Sequence[str] = DEFAULT_STOPS,
    progress: bool = True,
) -> list[list[str]]:
    """``n`` completions per prompt with ``model.generate`` (left padding, greedy when temperature is 0)."""
    import torch
    from tqdm.auto import tqdm

    side = tokenizer.padding_side
    tokenizer.padding_side = "left"
    if tokenizer.pad_token is None:
        tokenizer.pad_token = tokenizer.eos_token
    sample = temperature > 0
    if not sample and n > 1:
        raise ValueError("n_samples > 1 needs temperature > 0 (greedy decoding gives n identical samples)")
    out: list[list[str]] = []
    device = next(model.parameters()).device
    try:
        bar = tqdm(total=len(prompts), desc="MBPP generate", disable=not progress, leave=False)
        for i in range(0, len(prompts), batch_size):
            batch = list(prompts[i : i + batch_size])
            enc = tokenizer(batch, return_tensors="pt", padding=True, add_special_tokens=False).to(device)
            kwargs = {"do_sample": True, "temperature": temperature, "top_p": 1.0} if sample else {"do_sample": False}
            with torch.no_grad():
                gen = model.generate(
                    **enc,
                    max_new_tokens=max_new_tokens,
                    num_return_sequences=n,
                    pad_token_id=tokenizer.pad_token_id,
                    eos_token_id=tokenizer.eos_token_id,
                    **kwargs,
                )
            texts = tokenizer.batch_decode(gen[:, enc["input_ids"].shape[1] :], skip_special_tokens=True)
            for j in range(len(batch)):
                out.append([truncate_at_stops(t, stops) for t in texts[j * n : (j + 1) * n]])
            bar.update(len(batch))
        bar.close()
    finally:
        tokenizer.padding_side = side
    return out
