// Pre-tokenizer regexes of the supported byte-level BPE families, exactly as their
// tokenizer.json files write them (Oniguruma syntax). GGUF names a family by
// tokenizer.ggml.pre and leaves the regex to the reader.
#pragma once

namespace sy::tok {

// GPT-2; Hugging Face's ByteLevel pre-tokenizer with use_regex = true.
inline constexpr const char* kGpt2Pattern =
    R"re('s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+)re";

// Qwen2, Qwen2.5, Qwen3 (GGUF pre "qwen2"): digits one at a time.
inline constexpr const char* kQwen2Pattern =
    R"re((?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)re";

// Llama 3 (GGUF pre "llama-bpe"): digits in groups of up to three.
inline constexpr const char* kLlama3Pattern =
    R"re((?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)re";

}  // namespace sy::tok
