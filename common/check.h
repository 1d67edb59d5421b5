// Invariant checks that abort with a message. Use them for programming errors, never
// for bad input: bad input gets an error the caller can report.
#pragma once

#include <cstdio>
#include <cstdlib>

#define SY_CHECK(cond)                                                               \
  do {                                                                               \
    if (!(cond)) {                                                                   \
      std::fprintf(stderr, "%s:%d: check failed: %s\n", __FILE__, __LINE__, #cond); \
      std::abort();                                                                  \
    }                                                                                \
  } while (0)

#define SY_CHECK_MSG(cond, ...)                                                      \
  do {                                                                               \
    if (!(cond)) {                                                                   \
      std::fprintf(stderr, "%s:%d: check failed: %s: ", __FILE__, __LINE__, #cond); \
      std::fprintf(stderr, __VA_ARGS__);                                             \
      std::fputc('\n', stderr);                                                      \
      std::abort();                                                                  \
    }                                                                                \
  } while (0)
