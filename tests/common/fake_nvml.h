// A test double of the driver's libnvidia-ml.so.1 (tests/common/fake_nvml.cpp, built as a
// shared library): nvml_api.h's entry points over two GPUs with canned readings. A test
// opens it by path, as production opens the real one, and sets the readings through
// the state that the exported fake_nvml_state() returns. A process a test cannot reach
// into (a gateway) gets GPU 0's power from the file $FAKE_NVML_POWER_FILE names
// (milliwatts, read at every nvmlDeviceGetPowerUsage).
#pragma once

#include "common/telemetry/nvml_api.h"

struct FakeNvmlGpu {
  char bus_id[32];  // as NVML writes it: "00000000:3B:00.0"
  char uuid[64];
  char name[64];
  unsigned int power_mw;
  unsigned int power_limit_mw;
  unsigned long long memory_total;
  unsigned long long memory_used;
  unsigned int utilization_percent;
  unsigned int temperature_c;
  nvmlReturn_t power_result;  // what nvmlDeviceGetPowerUsage returns
};

struct FakeNvmlState {
  nvmlReturn_t init_result;  // what nvmlInit_v2 returns
  int init_calls;
  int shutdown_calls;
  int power_reads;  // nvmlDeviceGetPowerUsage calls
  FakeNvmlGpu gpus[2];
};

extern "C" {
// The state every entry point reads; fake_nvml_reset() restores the canned one.
FakeNvmlState* fake_nvml_state();
void fake_nvml_reset();
}
