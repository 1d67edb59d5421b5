#!/usr/bin/env python3
"""Golden chat-template renders of tool conversations, from Hugging Face transformers.

For each fixture model (the Qwen3 directory, the Qwen2 GGUF) and each conversation below,
writes NAME.json = {"model", "request", "text"}: `request` is the OpenAI request body as a
client sends it (arguments as JSON strings, "content": null beside tool_calls) and `text`
is what transformers' apply_chat_template(..., tools=..., add_generation_prompt=True,
tokenize=False) renders for it, after the two changes Switchyard makes before rendering
(common/protocol/chat_tools.h): an assistant's null content becomes "" and each call's
`function.arguments` string is parsed into an object. tests/common/tool_template_golden_test.cpp
renders every request through Switchyard's own parser and template engine and compares.

The Qwen2 fixture is a GGUF: its template is read from the file's metadata and rendered
with the Qwen3 directory's tokenizer (the same tokenizer; the templates use no special
token variables).

usage: make_tool_template_goldens.py --fixtures DIR --out DIR
  DIR holds qwen3-tiny/ and qwen2-tiny-bf16.gguf (the unpacked fixtures).
"""
import argparse
import copy
import json
import os
import struct
import sys

WEATHER = {
    "type": "function",
    "function": {
        "name": "get_weather",
        "description": "Current weather for a city",
        "parameters": {
            "type": "object",
            "properties": {
                "city": {"type": "string", "description": "City name, e.g. Zürich"},
                "unit": {"type": "string", "enum": ["celsius", "fahrenheit"]},
            },
            "required": ["city"],
        },
    },
}
TIME = {
    "type": "function",
    "function": {
        "name": "get_time",
        "description": "Local time in a time zone",
        "parameters": {"type": "object", "properties": {"timezone": {"type": "string"}}, "required": ["timezone"]},
    },
}


def call(cid, name, args):
    return {"id": cid, "type": "function", "function": {"name": name, "arguments": json.dumps(args, ensure_ascii=False)}}


USER = {"role": "user", "content": "What is the weather in Paris?"}
ONE_CALL = {"role": "assistant", "content": None, "tool_calls": [call("call_1", "get_weather", {"city": "Paris", "unit": "celsius"})]}
ONE_RESULT = {"role": "tool", "tool_call_id": "call_1", "content": "{\"temperature\": 21, \"sky\": \"clear\"}"}

CONVERSATIONS = {
    "tools_offered": {
        "messages": [{"role": "system", "content": "You are a helpful assistant."}, USER],
        "tools": [WEATHER, TIME],
    },
    "call_and_result": {"messages": [USER, ONE_CALL, ONE_RESULT], "tools": [WEATHER]},
    "parallel_calls": {
        "messages": [
            {"role": "user", "content": "Weather and time in Tokyo?"},
            {"role": "assistant", "content": None,
             "tool_calls": [call("call_a", "get_weather", {"city": "東京"}), call("call_b", "get_time", {"timezone": "Asia/Tokyo"})]},
            {"role": "tool", "tool_call_id": "call_a", "content": "{\"temperature\": 18}"},
            {"role": "tool", "tool_call_id": "call_b", "content": "09:30"},
        ],
        "tools": [WEATHER, TIME],
    },
    "final_answer": {
        "messages": [USER, ONE_CALL, ONE_RESULT,
                     {"role": "assistant", "content": "It is 21 °C and clear in Paris."},
                     {"role": "user", "content": "And tomorrow?"}],
        "tools": [WEATHER],
    },
    "thinking_off": {"messages": [USER, ONE_CALL, ONE_RESULT], "tools": [WEATHER],
                     "chat_template_kwargs": {"enable_thinking": False}},
    "content_beside_calls": {
        "messages": [USER, {"role": "assistant", "content": "Let me check.",
                            "tool_calls": [call("call_1", "get_weather", {"city": "Paris"})]}, ONE_RESULT],
        "tools": [WEATHER],
    },
    "reasoning_replayed": {
        "messages": [USER, {"role": "assistant", "content": None, "reasoning_content": "The user wants the weather.",
                            "tool_calls": [call("call_1", "get_weather", {"city": "Paris"})]}, ONE_RESULT],
        "tools": [WEATHER],
    },
    "no_tools": {"messages": [{"role": "system", "content": "Be brief."}, {"role": "user", "content": "Hi"}]},
}


def gguf_chat_template(path):
    """tokenizer.chat_template from a GGUF v2/v3 file's metadata."""
    with open(path, "rb") as f:
        data = f.read(64 << 20)
    if data[:4] != b"GGUF":
        raise SystemExit(path + ": not a GGUF file")
    off = 8
    _, n_kv = struct.unpack_from("<QQ", data, off)
    off += 16
    fixed = {0: 1, 1: 1, 2: 2, 3: 2, 4: 4, 5: 4, 6: 4, 7: 1, 10: 8, 11: 8, 12: 8}

    def string(o):
        (n,) = struct.unpack_from("<Q", data, o)
        return data[o + 8:o + 8 + n].decode("utf-8"), o + 8 + n

    def skip(t, o):
        if t == 8:
            return string(o)[1]
        if t == 9:
            at, n = struct.unpack_from("<IQ", data, o)
            o += 12
            for _ in range(n):
                o = skip(at, o)
            return o
        return o + fixed[t]

    for _ in range(n_kv):
        key, off = string(off)
        (t,) = struct.unpack_from("<I", data, off)
        off += 4
        if key == "tokenizer.chat_template" and t == 8:
            return string(off)[0]
        off = skip(t, off)
    raise SystemExit(path + ": no tokenizer.chat_template")


def template_messages(messages):
    """The messages as Switchyard hands them to the template."""
    out = copy.deepcopy(messages)
    for m in out:
        if m["role"] == "assistant":
            if m.get("content") is None:
                m["content"] = ""
            for c in m.get("tool_calls") or []:
                if isinstance(c["function"].get("arguments"), str):
                    c["function"]["arguments"] = json.loads(c["function"]["arguments"])
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--fixtures", required=True)
    ap.add_argument("--out", required=True)
    args = ap.parse_args()
    import transformers  # only the device machine has it
    from transformers import AutoTokenizer

    tok = AutoTokenizer.from_pretrained(os.path.join(args.fixtures, "qwen3-tiny"))
    models = {
        "qwen3-tiny": tok.chat_template,
        "qwen2-tiny-bf16.gguf": gguf_chat_template(os.path.join(args.fixtures, "qwen2-tiny-bf16.gguf")),
    }
    os.makedirs(args.out, exist_ok=True)
    written = 0
    for model, template in models.items():
        for name, body in CONVERSATIONS.items():
            request = {"model": "m", **body}
            kwargs = dict(body.get("chat_template_kwargs", {}))
            text = tok.apply_chat_template(template_messages(body["messages"]), tools=body.get("tools"),
                                           chat_template=template, add_generation_prompt=True, tokenize=False, **kwargs)
            stem = model.split(".")[0].replace("-bf16", "")
            with open(os.path.join(args.out, f"{stem}--{name}.json"), "w", encoding="utf-8") as f:
                json.dump({"model": model, "transformers": transformers.__version__, "request": request, "text": text},
                          f, ensure_ascii=False, indent=1)
                f.write("\n")
            written += 1
    print(f"wrote {written} goldens to {args.out} (transformers {transformers.__version__})", file=sys.stderr)


if __name__ == "__main__":
    main()
