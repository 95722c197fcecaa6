"""Write a model folder that vLLM loads with ``load_format="dummy"``: random weights, real shapes.

Throughput depends on a model's shapes, not on its weights, so a GPU run needs no download:
a stock config.json (the published Qwen2.5 architecture values) next to a real Qwen tokenizer
and chat template — copied from any Qwen2.5 folder, by default the prepared embedded judge —
is all vLLM reads before it fills the weights with random values. Verdicts from such a model
are noise; only the speed figures mean anything.

    python -m benchmarks.lib.dummy_model --preset qwen2.5-1.5b --out /tmp/qwen2.5-1.5b-dummy
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
from pathlib import Path

from grader.config import JudgeSettings, Settings
from grader.packaged import PACKAGED_MODELS

# Published Qwen2.5 Instruct configurations (architecture values only).
_QWEN2 = {
    "architectures": ["Qwen2ForCausalLM"],
    "model_type": "qwen2",
    "hidden_act": "silu",
    "attention_dropout": 0.0,
    "bos_token_id": 151643,
    "eos_token_id": 151645,
    "initializer_range": 0.02,
    "max_position_embeddings": 32768,
    "rms_norm_eps": 1e-06,
    "rope_theta": 1000000.0,
    "sliding_window": 32768,
    "use_sliding_window": False,
    "use_cache": True,
    "torch_dtype": "bfloat16",
    # as published; without it transformers suspects a Mistral tokenizer and warns
    "transformers_version": "4.43.1",
}
PRESETS: dict[str, dict] = {
    "qwen2.5-1.5b": {
        **_QWEN2,
        "hidden_size": 1536,
        "intermediate_size": 8960,
        "num_hidden_layers": 28,
        "max_window_layers": 21,
        "num_attention_heads": 12,
        "num_key_value_heads": 2,
        "tie_word_embeddings": True,
        "vocab_size": 151936,
    },
    "qwen2.5-7b": {
        **_QWEN2,
        "hidden_size": 3584,
        "intermediate_size": 18944,
        "num_hidden_layers": 28,
        "max_window_layers": 28,
        "num_attention_heads": 28,
        "num_key_value_heads": 4,
        "tie_word_embeddings": False,
        "vocab_size": 152064,
    },
}
TOKENIZER_FILES = (
    "tokenizer.json",
    "tokenizer_config.json",
    "chat_template.jinja",
    "generation_config.json",
    "vocab.json",
    "merges.txt",
)


def default_tokenizer_folder() -> Path | None:
    """The prepared embedded judge, if this machine has converted it (no conversion here)."""
    spec = PACKAGED_MODELS[JudgeSettings.model_fields["model"].default]
    folder = Settings().cache.dir / "models" / spec.folder_name
    return folder if (folder / "tokenizer.json").is_file() else None


def write_dummy(preset: str, tokenizer_from: Path, out: Path) -> Path:
    copied = [name for name in TOKENIZER_FILES if (tokenizer_from / name).is_file()]
    if "tokenizer.json" not in copied and "vocab.json" not in copied:
        raise SystemExit(f"{tokenizer_from}: no tokenizer files (tokenizer.json or vocab.json)")
    out.mkdir(parents=True, exist_ok=True)
    for name in copied:
        shutil.copyfile(tokenizer_from / name, out / name)
    config = {**PRESETS[preset], "_dummy_note": f"random weights, {preset} shapes"}
    (out / "config.json").write_text(json.dumps(config, indent=2) + "\n", encoding="utf-8")
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--preset", choices=sorted(PRESETS), default="qwen2.5-1.5b")
    parser.add_argument("--out", type=Path, required=True, help="the folder to write")
    parser.add_argument(
        "--tokenizer-from",
        type=Path,
        default=None,
        help="a Qwen2.5 folder to copy the tokenizer from (default: the prepared embedded judge)",
    )
    args = parser.parse_args()
    source = args.tokenizer_from or default_tokenizer_folder()
    if source is None:
        sys.exit(
            "no tokenizer: pass --tokenizer-from FOLDER (any Qwen2.5 model folder) or prepare "
            "the embedded judge first"
        )
    print(write_dummy(args.preset, source, args.out))


if __name__ == "__main__":
    main()
