#!/usr/bin/env bash
# The main job: set up, build, make the default model, and run the most complete thing
# Switchyard has today: the worker rendering a chat prompt and generating from it on the
# CPU. (The gateway and the HTTP endpoint arrive with issues 3 and 4.)
set -euo pipefail
cd "$(dirname "$0")/.."

bash scripts/setup.sh
model=$(bash scripts/demo_model.sh)

messages=$(mktemp)
trap 'rm -f "$messages"' EXIT
cat >"$messages" <<'JSON'
[{"role": "system", "content": "You are a helpful assistant."},
 {"role": "user", "content": "Name three uses of a railway switchyard."}]
JSON
echo "== prompt (rendered by the model's chat template) =="
build/bin/switchyard-worker chat --model "$model" --messages "$messages" --no-thinking
echo "== generation (greedy, 32 tokens; the demo model's weights are random, so the text is too) =="
build/bin/switchyard-worker generate --model "$model" --messages "$messages" --no-thinking --max-tokens 32 --temperature 0 --json
