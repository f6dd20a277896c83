/* lbb.c: LBB (Yao et al., "LBB: load-balanced batching for efficient
 * distributed learning on heterogeneous GPU servers", J. Supercomputing
 * 2024), in the load-balancing family (lbsync.h).  It starts from the
 * equal-finish split on the profile (a least-squares cubic through each
 * batch_table of at least 4 points, else the nominal costs).  After every
 * iteration: if the slowest device's compute time exceeds the fastest's by
 * more than `threshold`, it re-solves the equal-finish split from a linear
 * model t = a + k b fitted to each device's last `window` measured (batch,
 * time) pairs; otherwise it moves `quantum` samples from the slowest
 * device to the fastest, when that does not make the fastest slower than
 * the slowest was (a move that only swaps their roles is not made). */
#include "lbsync.h"

#include <math.h>

static const popt lbb_table[] = {
    LB_COMMON_OPTS,
    {"threshold", NULL, POPT_QUANTITY, SCN_UNIT_NUMBER, offsetof(lb_opts, threshold), 0.05, -1, 100, NULL,
     "relative gap between the slowest and fastest compute time that triggers a re-solve"},
    {"window", NULL, POPT_INT, SCN_UNIT_NUMBER, offsetof(lb_opts, window), 8, 1, 1000, NULL,
     "measured (batch, time) pairs per device in the linear fit"},
    {"quantum", NULL, POPT_INT, SCN_UNIT_NUMBER, offsetof(lb_opts, quantum), 1, 1, 1000000, NULL,
     "samples moved from the slowest to the fastest device below the threshold"},
    {NULL, NULL, 0, 0, 0, 0, 0, 0, NULL, NULL},
};

typedef struct lbb_state {
    int W;
    double *hb, *ht; /* n * W: ring of (batch, time) per device */
    int *count, *pos;
    double *a, *k;
} lbb_state;

static void lbb_release(void *p)
{
    lbb_state *ls = p;
    if (!ls)
        return;
    dp_free(ls->hb);
    dp_free(ls->ht);
    dp_free(ls->count);
    dp_free(ls->pos);
    dp_free(ls->a);
    dp_free(ls->k);
    dp_free(ls);
}

static void *lbb_alloc(lb *st)
{
    size_t n = lb_n(st);
    lbb_state *ls = dp_calloc(1, sizeof *ls);
    if (!ls)
        return NULL;
    ls->W = lb_o(st)->window;
    ls->hb = dp_calloc(n * (size_t)ls->W, sizeof *ls->hb);
    ls->ht = dp_calloc(n * (size_t)ls->W, sizeof *ls->ht);
    ls->count = dp_calloc(n, sizeof *ls->count);
    ls->pos = dp_calloc(n, sizeof *ls->pos);
    ls->a = dp_calloc(n, sizeof *ls->a);
    ls->k = dp_calloc(n, sizeof *ls->k);
    if (!ls->hb || !ls->ht || !ls->count || !ls->pos || !ls->a || !ls->k) {
        lbb_release(ls);
        return NULL;
    }
    return ls;
}

static int lbb_init(lb *st)
{
    return lb_solve_nominal(st, 1);
}

/* Least squares t = a + k b over device d's window; with a single batch
 * size (or a non-increasing fit) the proportional model t = k b through
 * the window's means.  Without any measurement, the nominal cost's slope
 * at the group's batch. */
static void fit(lb *st, lbb_state *ls, size_t d)
{
    int m = ls->count[d];
    const double *hb = ls->hb + d * (size_t)ls->W, *ht = ls->ht + d * (size_t)ls->W;
    ls->a[d] = 0;
    if (m == 0) {
        ls->k[d] = lb_cost(st, d, 1.0);
        return;
    }
    double sb = 0, stt = 0, sbb = 0, sbt = 0;
    for (int i = 0; i < m; i++) {
        sb += hb[i];
        stt += ht[i];
        sbb += hb[i] * hb[i];
        sbt += hb[i] * ht[i];
    }
    double den = m * sbb - sb * sb;
    if (m >= 2 && den > 1e-9 * sbb * m) {
        double k = (m * sbt - sb * stt) / den;
        double a = (stt - k * sb) / m;
        if (k > 0 && a >= 0) {
            ls->k[d] = k;
            ls->a[d] = a;
            return;
        }
    }
    ls->k[d] = stt / sb;
}

static int lbb_iter_end(lb *st)
{
    size_t n = lb_n(st);
    lbb_state *ls = lb_method_state(st);
    const int *cur = lb_cur(st), *cap = lb_cap(st);
    const double *t = lb_t(st);
    size_t slow = 0, fast = 0;
    while (fast + 1 < n && cap[fast] == 0) /* cap 0: out of the job (a failure), not the fastest */
        fast++;
    slow = fast;
    for (size_t d = 0; d < n; d++) {
        if (cap[d] == 0)
            continue;
        if (cur[d] > 0 && t[d] > 0) {
            size_t i = d * (size_t)ls->W + (size_t)ls->pos[d];
            ls->hb[i] = cur[d];
            ls->ht[i] = t[d];
            ls->pos[d] = (ls->pos[d] + 1) % ls->W;
            if (ls->count[d] < ls->W)
                ls->count[d]++;
        }
        if (t[d] > t[slow])
            slow = d;
        if (t[d] < t[fast])
            fast = d;
    }
    if (t[slow] > (1 + lb_o(st)->threshold) * t[fast]) {
        for (size_t d = 0; d < n; d++)
            fit(st, ls, d);
        lb_solve_linear(st, ls->a, ls->k);
        lb_apply(st);
        return 0;
    }
    const int *b = lb_b(st);
    int q = lb_o(st)->quantum;
    if (q > b[slow])
        q = b[slow];
    if (q > cap[fast] - b[fast])
        q = cap[fast] - b[fast];
    if (q <= 0 || slow == fast || cur[fast] <= 0)
        return 0;
    /* predicted time of the fastest after the move, at its measured speed */
    double tf = t[fast] * (b[fast] + q) / cur[fast];
    if (tf >= t[slow])
        return 0;
    double *x = lb_x(st);
    for (size_t d = 0; d < n; d++)
        x[d] = b[d];
    x[slow] -= q;
    x[fast] += q;
    lb_apply(st); /* integral already: rounding keeps it */
    return 0;
}

static const lb_method lbb_method = {
    .init = lbb_init,
    .iter_end = lbb_iter_end,
    .alloc = lbb_alloc,
    .free = lbb_release,
};

const policy_def policy_lbb = {
    .name = "lbb",
    .label = "LBB",
    .color = "#332288",
    .summary =
        "LBB (Yao et al. 2024): profile-based split, re-solved or nudged every iteration (beyond the paper)",
    .opts = lbb_table,
    .opts_size = sizeof(lb_opts),
    .family = &lbb_method,
    LB_POLICY_HOOKS,
};
