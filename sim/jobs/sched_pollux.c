/* sched_pollux.c: goodput-driven elastic allocation, after Pollux (OSDI
 * 2021).  Each job may run on min_dev..max_dev devices; its goodput on k
 * devices is its throughput there (the simulator's estimate: the job alone
 * on k devices, alone_k[k]) times its statistical efficiency at the global
 * batch it would train with (batch_k[k]): Pollux/AdaptDL's
 * efficiency(M) = (B + M0) / (B + M), sim/learn/efficiency.h.  A job's
 * speedup on k devices is goodput(k) / goodput(its fair share), the fair
 * share being floor(devices / jobs served), clamped to its range.
 *
 * A decision serves jobs in arrival order while their min_dev fit (the
 * rest wait), then gives the served jobs the counts that maximise the
 * weighted power mean, p = -1, of their speedups:
 *     (sum w_j / s_j / sum w_j)^-1,  i.e. minimise  sum_j w_j / s_j(k_j)
 * subject to sum k_j <= devices.  The objective is a sum of one term per
 * job, so an exact dynamic programme over (jobs, devices used) finds the
 * optimum: O(m N K) time and O(m N) memory for m jobs, N devices and K =
 * the widest range (160 jobs x 64 devices x 64 counts: 655,360 steps).
 * Pollux searches with a genetic algorithm; the programme is exact and
 * deterministic (ties go to a job's current count, then to fewer devices,
 * then to the earlier job), and needs no tuning.
 *
 * Changing a running job's count costs a restart, as pre-emption does, so
 * a count other than the one it holds is charged: its speedup is scaled
 * by R / (R + restart + lost), R its time alone on the new count for the
 * epochs left, lost the work of its current epoch (in_epoch_s).  A job
 * that ran before pays the restart on any count (its checkpoint's load). */
#include "learn/efficiency.h"
#include "sched.h"

#include <math.h>

static int cmp(const sched_job *a, const sched_job *b, const sched_ctx *c)
{
    (void)c;
    return sched_by_arrival(a, b);
}

static void order(const sched_ctx *c, const sched_job *jobs, size_t m, size_t *out)
{
    sched_sort(jobs, m, out, cmp, c);
}

static int can_run(const sched_job *j, int k)
{
    return k >= j->min_dev && k <= j->max_dev && isfinite(j->alone_k[k]) && j->alone_k[k] > 0;
}

/* Goodput on k devices, up to the job's constant (its samples to train). */
static double goodput(const sched_job *j, int k)
{
    double eff = j->ref_batch > 0 ? eff_efficiency(j->noise_scale, j->ref_batch, j->batch_k[k]) : 1;
    return eff / j->alone_k[k];
}

/* The least count the job can run on, 0 when none. */
static int least(const sched_job *j)
{
    for (int k = j->min_dev; k <= j->max_dev; k++)
        if (can_run(j, k))
            return k;
    return 0;
}

/* The count nearest to want the job can run on (lower first on a tie). */
static int nearest(const sched_job *j, int want)
{
    for (int d = 0; d <= j->max_dev; d++) {
        if (can_run(j, want - d))
            return want - d;
        if (can_run(j, want + d))
            return want + d;
    }
    return 0;
}

double sched_pollux_speedup(const sched_job *j, int k, int fair, double restart_s)
{
    if (k == 0 || !can_run(j, k))
        return 0;
    double s = goodput(j, k) / goodput(j, fair);
    double R = j->alone_k[k] * (double)(j->epochs - j->epochs_done) / j->epochs;
    double lost = 0;
    if (j->held > 0 && k != j->held)
        lost = restart_s + j->in_epoch_s;
    else if (j->held == 0 && j->resumes)
        lost = restart_s;
    return lost > 0 ? s * R / (R + lost) : s;
}

int sched_pollux_fair(const sched_job *j, size_t n_devices, size_t served)
{
    int f = (int)(n_devices / (served ? served : 1));
    return nearest(j, f < j->min_dev ? j->min_dev : f > j->max_dev ? j->max_dev : f);
}

static void allocate(const sched_ctx *c, const sched_job *jobs, size_t m, int *count)
{
    int N = (int)c->n_devices;
    size_t *ord = dp_malloc((m + 1) * sizeof *ord), *srv = dp_malloc((m + 1) * sizeof *srv);
    int *fair = dp_malloc((m + 1) * sizeof *fair),
        *pick = dp_malloc((m + 1) * (size_t)(N + 1) * sizeof *pick);
    double *best = dp_malloc(2 * (size_t)(N + 1) * sizeof *best);
    for (size_t k = 0; k < m; k++)
        count[k] = 0;
    if (!ord || !srv || !fair || !pick || !best)
        goto out; /* out of memory: nobody runs this decision (the driver's next one tries again) */
    /* the jobs served: arrival order while their least counts fit */
    order(c, jobs, m, ord);
    size_t ns = 0;
    int used = 0;
    for (size_t o = 0; o < m; o++) {
        int l = least(&jobs[ord[o]]);
        if (l > 0 && used + l <= N) {
            used += l;
            srv[ns++] = ord[o];
        }
    }
    for (size_t i = 0; i < ns; i++)
        fair[i] = sched_pollux_fair(&jobs[srv[i]], c->n_devices, ns);
    /* best[n]: the least sum of w / s over the jobs so far on at most n
     * devices; pick[i][n]: job i's count there */
    double *prev = best, *cur = best + N + 1;
    for (int n = 0; n <= N; n++)
        prev[n] = 0;
    for (size_t i = 0; i < ns; i++) {
        const sched_job *j = &jobs[srv[i]];
        for (int n = 0; n <= N; n++) {
            double b = INFINITY;
            int bk = 0;
            /* the count it holds first, then ascending: a later candidate
             * must be better by more than rounding to win */
            for (int q = -1; q <= j->max_dev; q++) {
                int k = q < 0 ? j->held : q;
                if ((q >= 0 && k == j->held) || k < j->min_dev || k > n || !isfinite(prev[n - k]))
                    continue;
                double s = sched_pollux_speedup(j, k, fair[i], c->opts->restart_s);
                if (!(s > 0))
                    continue;
                double v = prev[n - k] + j->weight / s;
                if (v < b - 1e-12 * fabs(b) || !isfinite(b)) {
                    b = v;
                    bk = k;
                }
            }
            cur[n] = b;
            pick[i * (size_t)(N + 1) + (size_t)n] = bk;
        }
        double *t = prev;
        prev = cur;
        cur = t;
    }
    /* back from the whole world */
    for (size_t i = ns, n = (size_t)N; i-- > 0;) {
        int k = pick[i * (size_t)(N + 1) + n];
        count[srv[i]] = k;
        n -= (size_t)k;
    }
out:
    dp_free(ord);
    dp_free(srv);
    dp_free(fair);
    dp_free(pick);
    dp_free(best);
}

const sched_def sched_pollux = {
    .name = "pollux",
    .label = "Pollux goodput",
    .color = "#E69F00",
    .summary = "Pollux: elastic counts, best power mean of goodput speedups",
    .preempt = 1,
    .needs_alone = 1,
    .order = order,
    .allocate = allocate,
};
