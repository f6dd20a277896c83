/* leaks.h: the check every test suite's teardown makes, that a test freed
 * what it allocated (dp_alloc_live counts blocks from dp_malloc and kin).
 *
 * Criterion 2.4 reports an assertion that fails in a suite's .fini but
 * still counts the test as passed and exits 0, so a leak found there
 * aborts instead: the test shows as crashed in its teardown and the binary
 * exits non-zero.  The built-in digits data set is parsed once a process
 * and kept on purpose (sim/learn/ldata.c): released first, not counted. */
#ifndef DP_TEST_LEAKS_H
#define DP_TEST_LEAKS_H

#include "dp_common.h"
#include "learn/ldata.h"

#include <stdio.h>
#include <stdlib.h>

static inline void leaks_verify(long live_before)
{
    ldata_cache_free();
    long leaked = dp_alloc_live() - live_before;
    if (leaked != 0) {
        fprintf(stderr, "leaked %ld blocks (allocated during the test, never freed)\n", leaked);
        abort();
    }
}

#endif
