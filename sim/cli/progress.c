/* progress.c: how far a long simulation is (cli.h).
 *
 * The runtime calls back every 4096 events (policy_set_progress); this file
 * rate-limits by host time: on a terminal it redraws one line every 0.2 s,
 * elsewhere (a log file, CI) it prints a line every 5 s, so short runs print
 * nothing.  The end is estimated from the fraction of the samples processed:
 * simulated end ~ now / fraction, ETA ~ elapsed x (1 - fraction) / fraction
 * (the data-sending phase has no fraction yet and shows none).  Below 2%
 * of the samples no end or ETA is shown: extrapolated from a fraction that
 * small (C-ADP on 10^6 devices: 0.2% after a first second of simulated
 * time, most samples ending near the end) it said an hour for an 8-second
 * run. */
#include "cli/cli.h"
#include "policy/policy.h"

#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#define PROGRESS_MIN_FRAC 0.02

static struct {
    int on, tty, drawn;
    char what[96];
    double t0, last, every;
} pg;

static void on_progress(void *ctx, double now_s, uint64_t events, double frac)
{
    (void)ctx;
    double w = cli_wall_s();
    if (w - pg.last < pg.every)
        return;
    pg.last = w;
    double el = w - pg.t0;
    char est[96] = "sending data";
    if (frac >= PROGRESS_MIN_FRAC && frac <= 1)
        snprintf(est, sizeof est, "of ~%.4g s simulated (%.1f%%), ETA %.0f s", now_s / frac, 100 * frac,
                 el * (1 - frac) / frac);
    else if (frac > 0) /* too early to extrapolate (C-ADP's devices finish their samples near the end) */
        snprintf(est, sizeof est, "(%.1f%% of the samples), ETA after %.0f%%", 100 * frac,
                 100 * PROGRESS_MIN_FRAC);
    fprintf(stderr, "%s%s: t = %.4g s %s, %.3g events/s%s", pg.tty ? "\r\033[K" : "", pg.what, now_s, est,
            el > 0 ? (double)events / el : 0.0, pg.tty ? "" : "\n");
    fflush(stderr);
    pg.drawn = 1;
}

void cli_progress_init(int quiet)
{
    pg.on = !quiet;
    pg.tty = isatty(STDERR_FILENO);
    pg.every = pg.tty ? 0.2 : 5.0;
    /* tests (and impatient logs) may ask for another period */
    const char *e = getenv("DPSIM_PROGRESS_EVERY");
    if (e && atof(e) >= 0)
        pg.every = atof(e);
    policy_set_progress(pg.on ? on_progress : NULL, NULL);
}

void cli_progress_begin(const char *what)
{
    snprintf(pg.what, sizeof pg.what, "%s", what);
    pg.t0 = cli_wall_s();
    /* the first line after one period, so runs shorter than that stay silent */
    pg.last = pg.t0;
    pg.drawn = 0;
}

void cli_progress_end(void)
{
    if (pg.on && pg.tty && pg.drawn)
        fputs("\r\033[K", stderr);
    pg.drawn = 0;
}
