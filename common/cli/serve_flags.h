// The flags of `switchyard-worker serve` that the gateway's supervisor passes to every
// worker it starts (docs/PROTOCOL.md), parsed and range-checked in one place so that a
// drop-in replacement (the simulated worker) accepts exactly the same ones.
#pragma once

#include <cstdint>
#include <optional>
#include <set>
#include <string>

#include "common/cli/args.h"
#include "common/config/fleet_config.h"

namespace sy::cli {

struct ServeFlags {
  std::string model;              // --model (required)
  std::string host = "127.0.0.1";
  uint16_t port = 8000;           // 0: the OS chooses
  std::string boot_id;            // reported by /ready
  int32_t max_num_seqs = 16;
  int32_t prefill_chunk = 256;
  int32_t block_size = 16;
  std::optional<int32_t> kv_blocks;    // at most one of these two
  std::optional<double> kv_memory_gb;
  std::string served_model_name;  // default: default_model_name(model)
  int32_t http_threads = 2;
  // --numerics auto|deterministic|fast: batch-invariant numerics (a seeded stream
  // continued on another replica draws the same tokens), the fastest kernels, or the
  // backend's default (BackendOptions::deterministic, docs/NUMERICS.md).
  std::optional<bool> deterministic;
  int32_t tp = 1;  // --tp: tensor-parallel ranks (BackendOptions::tp)
  int32_t pcp = 1;  // --pcp: context-parallel ranks (BackendOptions::pcp)
  bool kv_f16 = false;  // --kv-dtype f32|f16: the cpu backend's KV cache type (BackendOptions::cpu_kv_f16)
  // The HTTP listener's limits (--max-header-bytes, --header-timeout-s, ...: the names
  // of replicas.yaml's `limits` fields with dashes), for http::apply_limits.
  LimitsConfig limits;
};

// Names of the valued flags above, to which a program adds its own for Args.
std::set<std::string> serve_flag_names();

// --numerics: true for deterministic, false for fast, none for auto (the default, the
// backend's choice); throws UsageError for another value. The offline commands
// (generate, eval) take it too.
std::optional<bool> read_numerics(const Args& a);
// --kv-dtype f32|f16 (default f32): true for f16; throws UsageError for another value.
// The offline commands take it too.
bool read_kv_f16(const Args& a);
// --tp: tensor-parallel ranks, 1..64 (default 1); throws UsageError outside. The offline
// commands take it too.
int32_t read_tp(const Args& a);
// --pcp: context-parallel ranks, 1..64 (default 1); throws UsageError outside. The offline
// commands take it too.
int32_t read_pcp(const Args& a);

// Reads and checks them; throws UsageError naming the flag.
ServeFlags read_serve_flags(const Args& a);

}  // namespace sy::cli
