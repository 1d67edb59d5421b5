// NVML opened at run time: dlopen of the driver's library, every entry point that
// nvml_api.h lists resolved by dlsym, then nvmlInit_v2. Nothing links libnvidia-ml, so
// a build or a machine without an NVIDIA driver runs; open() then says why there is no
// NVML and the caller serves without GPU telemetry.
#pragma once

#include <memory>
#include <string>

#include "common/telemetry/nvml_api.h"

namespace sy {

class NvmlLibrary {
 public:
  static constexpr const char* kDefaultPath = "libnvidia-ml.so.1";

  struct Opened {
    std::shared_ptr<const NvmlLibrary> library;  // null when NVML is unavailable
    std::string error;                           // why, one line; empty on success
  };
  // Opens the library at `path` (a file name is searched as dlopen searches), resolves
  // the entry points and initializes NVML. Never throws for a missing or broken library.
  static Opened open(const std::string& path = kDefaultPath);

  ~NvmlLibrary();  // nvmlShutdown, then dlclose
  NvmlLibrary(const NvmlLibrary&) = delete;
  NvmlLibrary& operator=(const NvmlLibrary&) = delete;

  const nvml::Api& api() const { return api_; }
  const std::string& path() const { return path_; }
  // nvmlErrorString's text for `code`, with the code.
  std::string describe(nvmlReturn_t code) const;

 private:
  NvmlLibrary(void* handle, std::string path, const nvml::Api& api);

  void* handle_;
  std::string path_;
  nvml::Api api_;
};

}  // namespace sy
