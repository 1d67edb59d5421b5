// libFuzzer target: the GGUF header parser on arbitrary bytes. A parse either succeeds
// (and every typed getter then behaves) or raises ModelFileError; anything else — a
// crash, a sanitizer report, another exception — is a bug.
#include <cstddef>
#include <cstdint>

#include "common/error.h"
#include "common/gguf.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  try {
    auto f = sy::gguf::File::parse(data, size, "fuzz-input");
    for (const auto& kv : f->metadata()) {
      try {
        (void)f->get_string(kv.key);
      } catch (const sy::ModelFileError&) {
      }
      (void)f->get_int_or("general.alignment", 0);
    }
    for (const auto& t : f->tensors()) {
      // Reading the first and last byte of every tensor must stay inside the input.
      if (t.nbytes > 0) {
        volatile uint8_t first = t.data[0];
        volatile uint8_t last = t.data[t.nbytes - 1];
        (void)first;
        (void)last;
      }
    }
  } catch (const sy::ModelFileError&) {
  }
  return 0;
}
