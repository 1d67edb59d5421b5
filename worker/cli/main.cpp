// switchyard-worker: the engine's command line. Subcommands tokenize, chat, eval,
// generate and make-model; `serve` comes with the HTTP server.
#include <cstdio>
#include <cstring>
#include <exception>
#include <string>
#include <vector>

#include "common/error.h"
#include "common/cli/args.h"
#include "worker/cli/commands.h"

namespace {

const char kUsage[] =
    "usage: switchyard-worker COMMAND [options]\n"
    "\n"
    "commands (M is a GGUF file or a Hugging Face model directory):\n"
    "  tokenize   --model M --text T [--add-special]\n"
    "  chat       --model M --messages FILE.json [--tools FILE.json] [--tool-choice C] [--template-kwargs JSON] [--no-thinking]\n"
    "  eval       --model M --prompt-ids 1,2,3 --logits-out F [--last-only] [--device cpu|cuda[:N]]\n"
    "             [--numerics auto|deterministic|fast] [--tp N] [--pcp N] [--kv-dtype f32|f16]\n"
    "  generate   --model M (--prompt T | --prompt-ids 1,2,3 | --messages FILE.json [--no-thinking])\n"
    "             --max-tokens N [--temperature 0] [--json] [--ignore-eos] [--prefill-chunk N]\n"
    "             [--device cpu|cuda[:N]] [--numerics auto|deterministic|fast] [--tp N] [--pcp N] [--kv-dtype f32|f16]\n"
    "  make-model --arch qwen3|llama|qwen2 --preset NAME --tokenizer-from GGUF_OR_TOKENIZER_JSON\n"
    "             --out F.gguf [--type bf16|f16|f32|q8_0|q4_0|q4_k_m|q6_k] [--seed N]\n"
    "  serve      --model M [--host 127.0.0.1] [--port 8000] [--boot-id ID] [--max-num-seqs 16]\n"
    "             [--kv-blocks N | --kv-memory-gb X] [--prefill-chunk 256] [--block-size 16]\n"
    "             [--served-model-name NAME] [--http-threads 2] [--no-prefix-caching]\n"
    "             [--chat-template-kwargs JSON]  (template variables for every chat request that\n"
    "             does not set them, e.g. '{\"enable_thinking\": false}')\n"
    "             [--device cpu|cuda[:N]]  (cuda: without a KV flag, 90% of the free device memory)\n"
    "             [--tp N]  (tensor-parallel ranks; cpu: threads of this process)\n"
    "             [--pcp N]  (context-parallel ranks: the prompt split over N × tp ranks, each\n"
    "             holding 1/N of the KV; KV flags are per rank; cuda: one device per rank)\n"
    "             [--numerics auto|deterministic|fast]  (batch-invariant or fastest kernels; auto:\n"
    "             the backend's default, cpu deterministic, cuda fast; docs/NUMERICS.md)\n"
    "             [--kv-dtype f32|f16]  (cpu: the KV cache in float32, the default, or IEEE half:\n"
    "             half the bytes per token, each key and value rounded once; not with --pcp)\n"
    "             [--kv-host-gb X]  (host memory per rank that keeps prefix blocks evicted from the\n"
    "             KV cache, copied back on a hit instead of recomputed; cuda: pinned;\n"
    "             allocated in the background, in use once allocated)\n";

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2 || std::strcmp(argv[1], "--help") == 0 || std::strcmp(argv[1], "-h") == 0) {
    std::fputs(kUsage, argc < 2 ? stderr : stdout);
    return argc < 2 ? 2 : 0;
  }
  const std::string command = argv[1];
  const std::vector<std::string> rest(argv + 2, argv + argc);
  try {
    if (command == "tokenize") return sy::cli::run_tokenize(rest);
    if (command == "chat") return sy::cli::run_chat_prompt(rest);
    if (command == "eval") return sy::cli::run_eval(rest);
    if (command == "generate") return sy::cli::run_generate(rest);
    if (command == "make-model") return sy::cli::run_make_model(rest);
    if (command == "serve") return sy::cli::run_serve(rest);
    std::fprintf(stderr, "error: unknown command '%s'\n\n%s", command.c_str(), kUsage);
    return 2;
  } catch (const sy::cli::UsageError& e) {
    std::fprintf(stderr, "error: %s\n\n%s", e.what(), kUsage);
    return 2;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "error: %s\n", e.what());
    return 1;
  }
}
