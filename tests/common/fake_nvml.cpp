// The test double that fake_nvml.h describes. Built twice: whole (sy_fake_nvml), and
// without nvmlDeviceGetTemperature (sy_fake_nvml_partial, FAKE_NVML_WITHOUT_TEMPERATURE)
// for the loader's missing-symbol path.
#include "tests/common/fake_nvml.h"

#include <cstdio>
#include <cstdlib>
#include <cstring>

namespace {

FakeNvmlState g_state;

// Bus ids are compared as numbers: CUDA writes "0000:3B:00.0", NVML "00000000:3b:00.0".
bool same_bus_id(const char* a, const char* b) {
  unsigned x[4], y[4];
  return std::sscanf(a, "%x:%x:%x.%x", &x[0], &x[1], &x[2], &x[3]) == 4 &&
         std::sscanf(b, "%x:%x:%x.%x", &y[0], &y[1], &y[2], &y[3]) == 4 &&
         std::memcmp(x, y, sizeof x) == 0;
}

FakeNvmlGpu* gpu(nvmlDevice_t device) { return reinterpret_cast<FakeNvmlGpu*>(device); }

nvmlReturn_t copy_string(const char* s, char* out, unsigned int length) {
  if (std::strlen(s) + 1 > length) return 7;  // NVML_ERROR_INSUFFICIENT_SIZE
  std::strcpy(out, s);
  return 0;
}

}  // namespace

extern "C" {

FakeNvmlState* fake_nvml_state() { return &g_state; }

void fake_nvml_reset() {
  g_state = FakeNvmlState{};
  g_state.gpus[0] = {"00000000:3B:00.0", "GPU-0b5e7c1a-1111-2222-3333-444455556666", "NVIDIA H200",
                     123456, 700000, 150754820096ull, 1073741824ull, 37, 41, 0};
  g_state.gpus[1] = {"00000000:86:00.0", "GPU-9f00aa17-7777-8888-9999-000011112222", "NVIDIA H200",
                     0, 650000, 150754820096ull, 536870912ull, 100, 67, 3 /* NOT_SUPPORTED */};
}

nvmlReturn_t nvmlInit_v2() {
  if (g_state.gpus[0].bus_id[0] == '\0') fake_nvml_reset();  // first use
  ++g_state.init_calls;
  return g_state.init_result;
}

nvmlReturn_t nvmlShutdown() {
  ++g_state.shutdown_calls;
  return 0;
}

const char* nvmlErrorString(nvmlReturn_t code) {
  switch (code) {
    case 0: return "Success";
    case 3: return "Not Supported";
    case 6: return "Not Found";
    case 9: return "Driver Not Loaded";
    default: return "Unknown Error";
  }
}

nvmlReturn_t nvmlDeviceGetHandleByPciBusId_v2(const char* bus_id, nvmlDevice_t* device) {
  for (FakeNvmlGpu& g : g_state.gpus) {
    if (same_bus_id(bus_id, g.bus_id)) {
      *device = reinterpret_cast<nvmlDevice_t>(&g);
      return 0;
    }
  }
  return 6;  // NVML_ERROR_NOT_FOUND
}

nvmlReturn_t nvmlDeviceGetHandleByIndex_v2(unsigned int index, nvmlDevice_t* device) {
  if (index >= sizeof g_state.gpus / sizeof g_state.gpus[0]) return 2;  // NVML_ERROR_INVALID_ARGUMENT
  *device = reinterpret_cast<nvmlDevice_t>(&g_state.gpus[index]);
  return 0;
}

nvmlReturn_t nvmlDeviceGetUUID(nvmlDevice_t d, char* out, unsigned int n) { return copy_string(gpu(d)->uuid, out, n); }
nvmlReturn_t nvmlDeviceGetName(nvmlDevice_t d, char* out, unsigned int n) { return copy_string(gpu(d)->name, out, n); }

nvmlReturn_t nvmlDeviceGetPowerUsage(nvmlDevice_t d, unsigned int* mw) {
  ++g_state.power_reads;
  if (gpu(d)->power_result != 0) return gpu(d)->power_result;
  *mw = gpu(d)->power_mw;
  // Scripted power for a process a test cannot reach into (a gateway that opened this
  // library): GPU 0 draws the milliwatts written in $FAKE_NVML_POWER_FILE, read afresh.
  if (const char* path = std::getenv("FAKE_NVML_POWER_FILE"); path && d == reinterpret_cast<nvmlDevice_t>(&g_state.gpus[0])) {
    if (FILE* f = std::fopen(path, "r")) {
      unsigned int v = 0;
      if (std::fscanf(f, "%u", &v) == 1) *mw = v;
      std::fclose(f);
    }
  }
  return 0;
}

nvmlReturn_t nvmlDeviceGetEnforcedPowerLimit(nvmlDevice_t d, unsigned int* mw) {
  *mw = gpu(d)->power_limit_mw;
  return 0;
}

nvmlReturn_t nvmlDeviceGetMemoryInfo(nvmlDevice_t d, nvmlMemory_t* m) {
  m->total = gpu(d)->memory_total;
  m->used = gpu(d)->memory_used;
  m->free = m->total - m->used;
  return 0;
}

nvmlReturn_t nvmlDeviceGetUtilizationRates(nvmlDevice_t d, nvmlUtilization_t* u) {
  u->gpu = gpu(d)->utilization_percent;
  u->memory = 0;
  return 0;
}

#ifndef FAKE_NVML_WITHOUT_TEMPERATURE
nvmlReturn_t nvmlDeviceGetTemperature(nvmlDevice_t d, int sensor, unsigned int* c) {
  if (sensor != 0) return 2;  // NVML_ERROR_INVALID_ARGUMENT: only the die sensor exists
  *c = gpu(d)->temperature_c;
  return 0;
}
#endif

}  // extern "C"
