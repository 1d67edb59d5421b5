#include "common/telemetry/nvml_library.h"

#include <dlfcn.h>

#include <utility>

namespace sy {
namespace {

// Sets `out` to the address of `name`; the first name not found goes to `missing`.
template <typename Fn>
void resolve(void* handle, const char* name, Fn& out, std::string& missing) {
  out = reinterpret_cast<Fn>(dlsym(handle, name));
  if (!out && missing.empty()) missing = name;
}

std::string error_text(nvml::ErrorStringFn error_string, nvmlReturn_t code) {
  const char* text = error_string(code);
  return std::string(text ? text : "unknown error") + " (" + std::to_string(code) + ")";
}

}  // namespace

NvmlLibrary::NvmlLibrary(void* handle, std::string path, const nvml::Api& api)
    : handle_(handle), path_(std::move(path)), api_(api) {}

NvmlLibrary::~NvmlLibrary() {
  api_.shutdown();
  dlclose(handle_);
}

NvmlLibrary::Opened NvmlLibrary::open(const std::string& path) {
  void* handle = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!handle) {
    const char* why = dlerror();
    return {nullptr, "cannot open " + path + ": " + (why ? why : "unknown error")};
  }
  nvml::Api api;
  std::string missing;  // the first symbol not found
  resolve(handle, "nvmlInit_v2", api.init, missing);
  resolve(handle, "nvmlShutdown", api.shutdown, missing);
  resolve(handle, "nvmlErrorString", api.error_string, missing);
  resolve(handle, "nvmlDeviceGetHandleByPciBusId_v2", api.handle_by_pci_bus_id, missing);
  resolve(handle, "nvmlDeviceGetHandleByIndex_v2", api.handle_by_index, missing);
  resolve(handle, "nvmlDeviceGetUUID", api.uuid, missing);
  resolve(handle, "nvmlDeviceGetName", api.name, missing);
  resolve(handle, "nvmlDeviceGetPowerUsage", api.power_usage, missing);
  resolve(handle, "nvmlDeviceGetEnforcedPowerLimit", api.enforced_power_limit, missing);
  resolve(handle, "nvmlDeviceGetMemoryInfo", api.memory_info, missing);
  resolve(handle, "nvmlDeviceGetUtilizationRates", api.utilization, missing);
  resolve(handle, "nvmlDeviceGetTemperature", api.temperature, missing);
  if (!missing.empty()) {
    dlclose(handle);
    return {nullptr, path + " has no symbol " + missing};
  }
  if (const nvmlReturn_t rc = api.init(); rc != nvml::kSuccess) {
    std::string why = "nvmlInit_v2 failed: " + error_text(api.error_string, rc);
    dlclose(handle);
    return {nullptr, std::move(why)};
  }
  return {std::shared_ptr<const NvmlLibrary>(new NvmlLibrary(handle, path, api)), {}};
}

std::string NvmlLibrary::describe(nvmlReturn_t code) const {
  return error_text(api_.error_string, code);
}

}  // namespace sy
