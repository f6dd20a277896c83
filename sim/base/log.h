/* log.h: --log CATEGORY[:LEVEL]: diagnostic lines on stderr, stamped with
 * simulated time, for looking inside a run.
 *
 * Off by default and free when off: DP_LOG tests one global int per
 * category before evaluating its arguments or formatting anything, so a
 * call in a hot loop costs a load and a compare.  Logging never changes
 * what is simulated (it only reads), so runs stay bit-identical with it on.
 *
 * Line format:  [t=  123.456789 s] net debug: flow 3 done (1.2e+06 B)
 * (t is "-" for lines outside a simulation, e.g. the store's). */
#ifndef DP_LOG_H
#define DP_LOG_H

#include "dp_common.h"

typedef enum { LOG_ENGINE, LOG_NET, LOG_POLICY, LOG_SOLVER, LOG_STORE, LOG_NCAT } log_cat;
typedef enum { LOG_OFF = 0, LOG_ERROR, LOG_WARN, LOG_INFO, LOG_DEBUG, LOG_TRACE } log_level;

/* The level enabled per category (LOG_OFF unless --log asked). */
extern int log_level_of[LOG_NCAT];

/* Enable from a spec "CATEGORY[:LEVEL]" or "all[:LEVEL]" (LEVEL: error,
 * warn, info, debug, trace; default info); may be called once per --log.
 * 0, or DP_EINPUT with a message naming the bad word and the choices. */
int log_enable(const char *spec, dp_err *err);
/* Write one line (use DP_LOG, which checks the level first).  t_s < 0 prints
 * no simulated time. */
void log_write(log_cat cat, log_level lvl, double t_s, const char *fmt, ...) DP_PRINTF(4, 5);

#define DP_LOG(cat, lvl, t_s, ...)                                                                           \
    do {                                                                                                     \
        if (log_level_of[(cat)] >= (lvl))                                                                    \
            log_write((cat), (lvl), (t_s), __VA_ARGS__);                                                     \
    } while (0)

#endif
