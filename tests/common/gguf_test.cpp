#include "common/gguf.h"

#include <gtest/gtest.h>

TEST(Gguf, Placeholder) {}
