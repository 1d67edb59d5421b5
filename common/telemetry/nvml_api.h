// The part of NVML's C API (nvml.h, the NVIDIA Management Library in the driver's
// libnvidia-ml.so.1) that GPU telemetry calls. Declared here, with nvml.h's values and
// layouts, so that building needs neither nvml.h nor the driver: the library is opened
// at run time (nvml_library.h) and a machine without it serves without GPU series.
#pragma once

extern "C" {

typedef struct nvmlDevice_st* nvmlDevice_t;
typedef int nvmlReturn_t;  // nvml.h's nvmlReturn_enum (an int-sized C enum)

typedef struct nvmlMemory_st {  // bytes
  unsigned long long total;
  unsigned long long free;
  unsigned long long used;
} nvmlMemory_t;

typedef struct nvmlUtilization_st {  // percent of the last sample period
  unsigned int gpu;     // time one or more kernels ran
  unsigned int memory;  // time device memory was read or written
} nvmlUtilization_t;

}  // extern "C"

namespace sy::nvml {

constexpr nvmlReturn_t kSuccess = 0;  // NVML_SUCCESS; any other value is an error
constexpr int kTemperatureGpu = 0;      // NVML_TEMPERATURE_GPU, the die sensor
constexpr unsigned kStringBuffer = 96;  // NVML_DEVICE_UUID_V2_BUFFER_SIZE and _NAME_V2_

// One pointer type per entry point, named as the symbol.
using InitFn = nvmlReturn_t (*)();
using ShutdownFn = nvmlReturn_t (*)();
using ErrorStringFn = const char* (*)(nvmlReturn_t);
using HandleByPciBusIdFn = nvmlReturn_t (*)(const char* bus_id, nvmlDevice_t* device);
using HandleByIndexFn = nvmlReturn_t (*)(unsigned int index, nvmlDevice_t* device);
using StringFn = nvmlReturn_t (*)(nvmlDevice_t device, char* out, unsigned int length);
using UintFn = nvmlReturn_t (*)(nvmlDevice_t device, unsigned int* out);
using MemoryInfoFn = nvmlReturn_t (*)(nvmlDevice_t device, nvmlMemory_t* out);
using UtilizationFn = nvmlReturn_t (*)(nvmlDevice_t device, nvmlUtilization_t* out);
using TemperatureFn = nvmlReturn_t (*)(nvmlDevice_t device, int sensor, unsigned int* out);

// The entry points, resolved by name (nvml_library.cpp's table lists the symbols).
struct Api {
  InitFn init = nullptr;                           // nvmlInit_v2
  ShutdownFn shutdown = nullptr;                   // nvmlShutdown
  ErrorStringFn error_string = nullptr;            // nvmlErrorString
  HandleByPciBusIdFn handle_by_pci_bus_id = nullptr;  // nvmlDeviceGetHandleByPciBusId_v2
  HandleByIndexFn handle_by_index = nullptr;       // nvmlDeviceGetHandleByIndex_v2 (NVML's order: PCI bus)
  StringFn uuid = nullptr;                         // nvmlDeviceGetUUID
  StringFn name = nullptr;                         // nvmlDeviceGetName
  UintFn power_usage = nullptr;                    // nvmlDeviceGetPowerUsage, milliwatts
  UintFn enforced_power_limit = nullptr;           // nvmlDeviceGetEnforcedPowerLimit, milliwatts
  MemoryInfoFn memory_info = nullptr;              // nvmlDeviceGetMemoryInfo
  UtilizationFn utilization = nullptr;             // nvmlDeviceGetUtilizationRates
  TemperatureFn temperature = nullptr;             // nvmlDeviceGetTemperature, degrees Celsius
};

}  // namespace sy::nvml
