/* test_common.h: what the Criterion unit tests (tests/test_*.c) share.
 *
 *  - expect_close(got, want): |got - want| <= REL x max(1, |want|); REL is
 *    1e-9 unless the file defines it before including this header;
 *  - TEST_SUITE_NO_LEAKS(name): the suite `name`, each test checked for
 *    blocks allocated and not freed (dp_alloc_live); a suite with its own
 *    setup calls leak_mark() and leak_check() from it instead;
 *  - load(text, ov, n): a scenario from YAML text (named test.yaml), the
 *    test stopped with the loader's message if it is refused.
 * Include it after <criterion/criterion.h>. */
#ifndef DP_TEST_COMMON_H
#define DP_TEST_COMMON_H

#include <math.h>
#include <string.h>

#include "dp_common.h"
#include "scenario.h"
#include "leaks.h"

#ifndef REL
#define REL 1e-9
#endif

#define expect_close(got, want)                                                                              \
    do {                                                                                                     \
        double g_ = (double)(got), w_ = (double)(want);                                                      \
        cr_expect(fabs(g_ - w_) <= REL * fmax(1.0, fabs(w_)), "%s = %.17g, want %.17g", #got, g_, w_);       \
    } while (0)

static long live0;
static inline void leak_mark(void)
{
    live0 = dp_alloc_live();
}
static inline void leak_check(void)
{
    leaks_verify(live0);
}
#define TEST_SUITE_NO_LEAKS(name) TestSuite(name, .init = leak_mark, .fini = leak_check)

static inline scn_scenario *load(const char *text, const scn_override *ov, size_t n)
{
    dp_err err = {0};
    scn_scenario *s = scn_load_string("test.yaml", text, strlen(text), NULL, ov, n, &err);
    cr_assert(s, "scenario: %s", err.msg);
    return s;
}

#endif
