// libFuzzer target: see tests/fuzz/fuzz_entries.h (built with -DDL_FUZZ=ON, run by make fuzz).
#include "tests/fuzz/fuzz_entries.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) { return dl::fuzz::fuzz_merge(data, size); }
