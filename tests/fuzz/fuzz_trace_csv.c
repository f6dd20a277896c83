/* fuzz_trace_csv.c: libFuzzer target for the csv trace reader (body and
 * option byte in fuzz_trace.h). */
#include "fuzz_trace.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    return fuzz_trace_one(TRACE_FMT_CSV, data, size);
}
