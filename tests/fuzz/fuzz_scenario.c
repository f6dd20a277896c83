/* fuzz_scenario.c: libFuzzer target for the scenario loader.
 *
 * The input is a scenario file's text.  scn_load_string must return a
 * scenario or NULL with a message; anything else (a crash, a sanitizer
 * report, a leak, a hang) is a bug.  A loaded scenario is also summarised,
 * as `dpsim check` would, so the code reading the converted structs is
 * covered too.  Relative trace paths resolve against the working directory:
 * run it from scenarios/ so the seeds' `../traces/...` exist (elsewhere a
 * missing trace is an ordinary error). */
#include "scenario.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static FILE *sink;
    if (!sink)
        sink = fopen("/dev/null", "w");
    long live = dp_alloc_live();
    dp_err err = {0};
    scn_scenario *s = scn_load_string("fuzz.yaml", (const char *)data, size, NULL, NULL, 0, &err);
    if (s) {
        if (sink)
            scn_print_summary(s, (int)(size & 1), sink); /* the short form and --all */
        scn_free(s);
    } else if (!err.msg[0]) {
        /* every failure must say why */
        abort();
    }
    if (dp_alloc_live() != live) /* a leak the library's own counter sees */
        abort();
    return 0;
}
