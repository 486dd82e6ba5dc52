#!/usr/bin/env bash
# One short check of jeirt on a machine with an NVIDIA GPU. From the repository root:
#
#     bash scripts/gpu_check.sh            # install, then tests, recipes, chapter, tokens (about 10-20 minutes)
#     bash scripts/gpu_check.sh tests      # one step: install | offline | tests | recipes | chapter | book |
#                                          #   chapters | tokens
#
# The whole book on a GPU machine without network (a lent one), from a wheelhouse built where PyPI is
# reachable:
#
#     python scripts/gpu_wheelhouse.py     # wheelhouse/ (git-ignored; 51 MiB for Python 3.12): carry it, with
#                                          # data/cache/embeddings (the texts a CPU build encoded, 0.5 MB)
#     bash scripts/gpu_check.sh offline && bash scripts/gpu_check.sh book && bash scripts/gpu_check.sh chapters
#
# Steps:
#   install  a virtual environment .venv-gpu with the CUDA build of torch, then jeirt and its extras;
#            stops unless torch sees a GPU
#   offline  the same without network: a virtual environment on the machine's own Python (its torch,
#            numpy, pandas, scipy, scikit-learn, matplotlib: --system-site-packages), the book's packages
#            from wheelhouse/ alone (pip --no-index), jeirt and the book's package editable; stops unless torch
#            sees a GPU
#   tests    the test suite's device-dependent tests with JEIRT_DEVICE=cuda (everything that trains or
#            predicts on the default device)
#   recipes  JE-IRT on the whole of mmlu_pro (d = 256, MiniLM features, question split seed 0) with the
#            fast recipe and with the paper's, on the GPU (scripts/recipes_side_by_side.py): test accuracy,
#            AUC and seconds to the kept checkpoint, printed and written to $OUT/recipes_mmlu_pro.json
#   chapter  one chapter of the book executed in the full profile (default book/taxonomy.md on mmlu_pro:
#            offline; CHECK_DATASET=embedllm runs it on EmbedLLM, which downloads 3.3 GB and trains with
#            the paper's recipe for 100 epochs: hours, not minutes)
#   book     `make book`'s build (scripts/build_book.py, without make's set-up step, which needs the
#            network) on the device, BOOK_PROFILE (default full): its log in $OUT/book_<device>.log, each
#            page's seconds in $OUT/book_times_<profile>_<device>.json and beside the CPU build's
#            (results/book_times_<profile>_mmlu_pro.json) in $OUT/book_<device>.txt
#   chapters the chapter tests under nbval (tests/test_book.py, smoke profile, as `make test` runs them) on
#            the device, JOBS at a time, each test's seconds in $OUT/chapters_<device>.txt
#   tokens   (needs the Hugging Face hub) how many mmlu_pro questions are longer than 512 ModernBERT tokens
#
# Settings (environment): PYTHON (default python3), VENV (default .venv-gpu), OUT (default results/gpu_check),
# TORCH_SPEC (default torch==2.13.0), TORCH_INDEX (a pip index URL for a CUDA build other than the default
# wheel's), CHAPTER, CHECK_DATASET, MAX_EPOCHS (cut the paper recipe's 100 epochs in the recipes step),
# WHEELHOUSE (default wheelhouse), BOOK_PROFILE (default full), JOBS (default 4),
# DEVICE (default cuda; DEVICE=cpu runs the steps after install on the CPU, to try the script out).
set -euo pipefail
cd "$(dirname "$0")/.."

PYTHON=${PYTHON:-python3}
VENV=${VENV:-.venv-gpu}
OUT=${OUT:-results/gpu_check}
TORCH_SPEC=${TORCH_SPEC:-torch==2.13.0}
CHAPTER=${CHAPTER:-book/taxonomy.md}
CHECK_DATASET=${CHECK_DATASET:-mmlu_pro}
WHEELHOUSE=${WHEELHOUSE:-wheelhouse}
BOOK_PROFILE=${BOOK_PROFILE:-full}
JOBS=${JOBS:-4}
DEVICE=${DEVICE:-cuda}
export JEIRT_DEVICE=$DEVICE JEIRT_DATA=${JEIRT_DATA:-$PWD/data}
mkdir -p "$OUT"
OUT=$(cd "$OUT" && pwd)
case $VENV in /*) ;; *) VENV=$PWD/$VENV ;; esac
PY="$VENV/bin/python"
failed=()

check_gpu() {
    [ "$DEVICE" != cuda ] && return  # DEVICE=cpu: trying the script out on a machine without a GPU
    "$PY" - <<'EOF'
import torch
print(f"torch {torch.__version__}, CUDA {torch.version.cuda}, GPU available: {torch.cuda.is_available()}")
if not torch.cuda.is_available():
    raise SystemExit("torch sees no GPU: install a CUDA build that matches the driver "
                     "(TORCH_INDEX=<the PyTorch index for your CUDA version> bash scripts/gpu_check.sh install).")
print("GPU:", torch.cuda.get_device_name(0))
EOF
}

step_install() {
    [ -x "$PY" ] || "$PYTHON" -m venv "$VENV" || return
    "$PY" -m pip install -q --upgrade pip || return
    # The default Linux wheel of torch on PyPI is a CUDA build; TORCH_INDEX picks another CUDA version.
    "$PY" -m pip install -q "$TORCH_SPEC" ${TORCH_INDEX:+--index-url "$TORCH_INDEX"} || return
    "$PY" -m pip install -q -e ".[encoders,minilm,book,dev]" || return
    check_gpu
}

step_offline() {
    # No network: torch and the scientific stack are the machine's own; a package neither has nor the
    # wheelhouse holds is named by pip.
    if [ ! -f "$WHEELHOUSE/requirements.txt" ]; then
        echo "no $WHEELHOUSE/requirements.txt: run 'python scripts/gpu_wheelhouse.py' where PyPI is reachable" \
            "and carry $WHEELHOUSE/ beside the tree" >&2
        return 1
    fi
    [ -x "$PY" ] || "$PYTHON" -m venv --system-site-packages "$VENV" || return
    "$PY" -m pip install -q --no-index --find-links "$WHEELHOUSE" -r "$WHEELHOUSE/requirements.txt" || return
    "$PY" -m pip install -q --no-index --no-deps --no-build-isolation -e . -e book || return  # jeirt, jeirt_book
    "$PY" -c "import jeirt, jeirt_book, jupyter_book, nbval, torch; print('jeirt', jeirt.__version__, 'torch', torch.__version__)" \
        || return
    check_gpu
}

step_tests() {
    # The tests that train, predict or onboard on the default device, which JEIRT_DEVICE makes the GPU.
    "$PY" -m pytest -q -p no:cacheprovider tests/test_model.py tests/test_train.py tests/test_estimator.py \
        tests/test_baselines.py tests/test_probes.py tests/test_irt.py tests/test_speed.py tests/test_hostile.py \
        2>&1 | tee "$OUT/tests_$DEVICE.txt" | tail -n 15
}

step_recipes() {
    # The side-by-side of scripts/recipes_side_by_side.py (the CPU one is results/recipes_mmlu_pro.json),
    # on the GPU; MAX_EPOCHS cuts the paper recipe's 100 epochs (recorded in the file).
    "$PY" scripts/recipes_side_by_side.py --dataset mmlu_pro --encoder all-MiniLM-L6-v2 --seed 0 \
        --out "$OUT/recipes_mmlu_pro.json" ${MAX_EPOCHS:+--paper-max-epochs "$MAX_EPOCHS"}
}

step_chapter() {
    local name
    name=$(basename "$CHAPTER" .md)
    local start=$SECONDS
    local notebook="$OUT/${name}_full_${CHECK_DATASET}.ipynb"
    "$VENV/bin/jupytext" --to ipynb "$CHAPTER" --output "$notebook" || return
    (cd "$(dirname "$CHAPTER")" && JEIRT_PROFILE=full JEIRT_DATASET=$CHECK_DATASET \
        "$VENV/bin/jupyter-execute" --inplace --timeout=-1 "$notebook") || return  # in the page's folder, as the book
    echo "$CHAPTER, full profile on $CHECK_DATASET: $((SECONDS - start)) s" | tee "$OUT/${name}_full_${CHECK_DATASET}.txt"
}

step_book() {
    local times="$OUT/book_times_${BOOK_PROFILE}_$DEVICE.json" built=0
    JEIRT_PROFILE=$BOOK_PROFILE "$PY" scripts/build_book.py >"$OUT/book_$DEVICE.log" 2>&1 || built=$?
    tail -n 5 "$OUT/book_$DEVICE.log"
    "$PY" scripts/page_times.py --json "$times" >/dev/null || return
    "$PY" - "$times" "results/book_times_${BOOK_PROFILE}_mmlu_pro.json" <<'EOF' | tee "$OUT/book_$DEVICE.txt"
import json, os, sys
here = json.load(open(sys.argv[1]))
cpu = json.load(open(sys.argv[2])) if os.path.exists(sys.argv[2]) else {"pages_seconds": {}, "build": {}}
print(f"{'page':<16} {'this build (s)':>15} {'CPU build (s)':>14} {'CPU / this':>11}")
for page, seconds in sorted(here["pages_seconds"].items(), key=lambda kv: -kv[1]):
    before = cpu["pages_seconds"].get(page, float("nan"))
    print(f"{page:<16} {seconds:>15.1f} {before:>14.1f} {before / max(seconds, 1e-9):>10.1f}x")
print(f"{'all pages':<16} {here['pages_total_seconds']:>15.1f} {cpu.get('pages_total_seconds', float('nan')):>14.1f}")
build = here["build"]
print("this build:", build.get("settings", {}).get("device"), build.get("cpu_cores"), "cores,", build.get("platform"))
print("CPU build:", f"{sys.argv[2]}:", cpu["build"].get("cpu_cores"), "cores,", cpu["build"].get("note", "(none)"))
EOF
    return "$built"
}

step_chapters() {
    local tested=0
    "$PY" -m pytest -q -p no:cacheprovider -n "$JOBS" --durations=0 tests/test_book.py -k test_chapter_runs \
        >"$OUT/chapters_$DEVICE.txt" 2>&1 || tested=$?
    tail -n 25 "$OUT/chapters_$DEVICE.txt"
    return "$tested"
}

step_tokens() {
    "$PY" scripts/token_lengths.py --dataset mmlu_pro --tokenizer answerdotai/ModernBERT-large \
        --json "$OUT/token_lengths_mmlu_pro_modernbert.json"
}

run() {  # run a step, note a failure and go on, so that one report shows every step
    echo "== $1 ($(date -u +%H:%M:%S))"
    if ! "step_$1"; then failed+=("$1"); echo "== $1 FAILED"; fi
}

case "${1:-all}" in
    all) echo "== install"; step_install; for s in tests recipes chapter tokens; do run "$s"; done ;;
    offline) echo "== offline"; step_offline ;;
    install|tests|recipes|chapter|book|chapters|tokens) run "$1" ;;
    *) echo "unknown step '$1'; expected all, install, offline, tests, recipes, chapter, book, chapters or tokens" >&2
       exit 2 ;;
esac
echo "results in $OUT"
if [ ${#failed[@]} -gt 0 ]; then echo "failed: ${failed[*]}"; exit 1; fi
