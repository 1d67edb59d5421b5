#!/usr/bin/env bash
# The main job: set up, build, make the default model, then run the gateway and its
# fleet (replicas.yaml: two CPU workers on the default model) in the foreground, serving
# the OpenAI API on the printed URL until Ctrl-C (the gateway then drains and stops its
# workers). Pass gateway flags through, e.g. `bash scripts/run.sh --model my.gguf`.
set -euo pipefail
cd "$(dirname "$0")/.."

bash scripts/setup.sh
model=$(bash scripts/demo_model.sh)

cat <<MSG

Starting switchyard-gateway with replicas.yaml (model: ${model}).
The demo model has Qwen3-0.6B's shape and real tokenizer but random weights: its text
is noise. To serve a real model: bash scripts/run.sh --model /path/to/model.gguf

Once the replicas are ready, try:
  curl -s http://127.0.0.1:8080/v1/chat/completions -H 'Content-Type: application/json' \\
    -d '{"messages":[{"role":"user","content":"Hello"}],"max_tokens":16}'
Dashboard: http://127.0.0.1:8081/dashboard   Status: http://127.0.0.1:8081/admin/status

MSG
exec build/bin/switchyard-gateway --config replicas.yaml "$@"
