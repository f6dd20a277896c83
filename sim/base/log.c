/* log.c: the --log categories and their line format (log.h). */
#include "log.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

int log_level_of[LOG_NCAT];

static const char *const cat_names[LOG_NCAT] = {"engine", "net", "policy", "solver", "store"};
static const char *const level_names[] = {"off", "error", "warn", "info", "debug", "trace"};
#define N_LEVELS (sizeof level_names / sizeof *level_names)

int log_enable(const char *spec, dp_err *err)
{
    const char *colon = strchr(spec, ':');
    size_t len = colon ? (size_t)(colon - spec) : strlen(spec);
    int lvl = LOG_INFO;
    if (colon) {
        lvl = -1;
        for (size_t k = 0; k < N_LEVELS; k++)
            if (strcmp(colon + 1, level_names[k]) == 0)
                lvl = (int)k;
        if (lvl < 0)
            return dp_err_set(err, DP_EINPUT,
                              "unknown level '%s' in '%s' (want error, warn, info, debug, trace or off)",
                              colon + 1, spec);
    }
    if (len == 3 && strncmp(spec, "all", 3) == 0) {
        for (int c = 0; c < LOG_NCAT; c++)
            log_level_of[c] = lvl;
        return 0;
    }
    for (int c = 0; c < LOG_NCAT; c++)
        if (strlen(cat_names[c]) == len && strncmp(spec, cat_names[c], len) == 0) {
            log_level_of[c] = lvl;
            return 0;
        }
    return dp_err_set(err, DP_EINPUT,
                      "unknown category '%.*s' in '%s' (want engine, net, policy, solver, store or all)",
                      (int)len, spec, spec);
}

void log_write(log_cat cat, log_level lvl, double t_s, const char *fmt, ...)
{
    char line[1024];
    int n;
    if (t_s >= 0)
        n = snprintf(line, sizeof line, "[t=%14.6f s] %s %s: ", t_s, cat_names[cat], level_names[lvl]);
    else
        n = snprintf(line, sizeof line, "[t=%14s  ] %s %s: ", "-", cat_names[cat], level_names[lvl]);
    va_list ap;
    va_start(ap, fmt);
    if (n > 0 && (size_t)n < sizeof line)
        vsnprintf(line + n, sizeof line - (size_t)n, fmt, ap);
    va_end(ap);
    /* one fputs per line, so lines of concurrent writers (sweep jobs) do not interleave mid-line */
    size_t l = strlen(line);
    if (l + 1 < sizeof line) {
        line[l] = '\n';
        line[l + 1] = '\0';
    }
    fputs(line, stderr);
}
