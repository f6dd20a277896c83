/* efficiency.c: statistical efficiency (efficiency.h): the update log, the
 * model's parameters, progress by replaying the log, accuracy from the
 * reference curve.  The reading of `learning.efficiency` and of Pollux
 * traces is in efficiency_read.c. */
#include "learn/efficiency_impl.h"

#include <math.h>
#include <string.h>

/* ---- the log -------------------------------------------------------------- */

eff_log *eff_log_new(void)
{
    return dp_calloc(1, sizeof(eff_log));
}

void eff_log_free(eff_log *l)
{
    if (!l)
        return;
    dp_free(l->r);
    dp_free(l);
}

eff_log *eff_log_copy(const eff_log *l)
{
    eff_log *c = eff_log_new();
    if (!c || !l->n)
        return c;
    if (!(c->r = dp_malloc(l->n * sizeof *c->r))) {
        eff_log_free(c);
        return NULL;
    }
    memcpy(c->r, l->r, l->n * sizeof *c->r);
    c->n = c->cap = l->n;
    return c;
}

static int push(eff_log *l, double t, int epoch, eff_kind k, double m, double x, double rho)
{
    if (!l || !isfinite(t) || epoch < 1 || (l->n && (t < l->r[l->n - 1].t || epoch < l->r[l->n - 1].epoch)))
        return DP_EINPUT;
    if (l->n == l->cap) {
        size_t cap = l->cap ? 2 * l->cap : 64;
        eff_rec *r = dp_realloc(l->r, cap * sizeof *r);
        if (!r)
            return DP_ENOMEM;
        l->r = r;
        l->cap = cap;
    }
    l->r[l->n++] = (eff_rec){t, epoch, k, m, x, rho};
    return 0;
}

static int pos(double v)
{
    return isfinite(v) && v > 0;
}

int eff_log_sync(eff_log *l, double t, int epoch, double M)
{
    return pos(M) ? push(l, t, epoch, EFF_SYNC, M, 0, 1) : DP_EINPUT;
}

int eff_log_async(eff_log *l, double t, int epoch, double m, double staleness)
{
    return pos(m) && isfinite(staleness) && staleness >= 0 ? push(l, t, epoch, EFF_ASYNC, m, staleness, 1)
                                                           : DP_EINPUT;
}

int eff_log_local(eff_log *l, double t, int epoch, double H, double M_step, double rho)
{
    return pos(H) && pos(M_step) && pos(rho) && rho <= 1 ? push(l, t, epoch, EFF_LOCAL, M_step, H, rho)
                                                         : DP_EINPUT;
}

size_t eff_log_len(const eff_log *l)
{
    return l ? l->n : 0;
}

double eff_log_time(const eff_log *l, size_t i)
{
    return l->r[i].t;
}

int eff_log_epoch(const eff_log *l, size_t i)
{
    return l->r[i].epoch;
}

eff_kind eff_log_kind(const eff_log *l, size_t i)
{
    return l->r[i].kind;
}

double eff_log_samples(const eff_log *l, size_t i)
{
    const eff_rec *r = &l->r[i];
    return r->kind == EFF_LOCAL ? r->x * r->m : r->m;
}

double eff_log_batch(const eff_log *l, size_t i)
{
    return l->r[i].m;
}

/* ---- parameters ----------------------------------------------------------- */

eff_params *eff_params_new(double M0, double B_noise)
{
    if (!pos(M0) || !(B_noise >= 0))
        return NULL;
    eff_params *p = dp_calloc(1, sizeof *p);
    if (p) {
        p->M0 = M0;
        p->bn = B_noise;
    }
    return p;
}

void eff_params_free(eff_params *p)
{
    if (!p)
        return;
    dp_free(p->bn_epoch);
    dp_free(p->tr_p);
    dp_free(p->tr_b);
    dp_free(p->cu_p);
    dp_free(p->cu_m);
    dp_free(p);
}

static double *dup_arr(const double *a, size_t n, int *fail)
{
    if (!n)
        return NULL;
    double *d = dp_malloc(n * sizeof *d);
    if (!d)
        *fail = 1;
    else
        memcpy(d, a, n * sizeof *d);
    return d;
}

eff_params *eff_params_copy(const eff_params *p)
{
    eff_params *c = dp_malloc(sizeof *c);
    if (!c)
        return NULL;
    *c = *p;
    int fail = 0;
    c->bn_epoch = dup_arr(p->bn_epoch, p->n_bn_epoch, &fail);
    c->tr_p = dup_arr(p->tr_p, p->n_tr, &fail);
    c->tr_b = dup_arr(p->tr_b, p->n_tr, &fail);
    c->cu_p = dup_arr(p->cu_p, p->n_cu, &fail);
    c->cu_m = dup_arr(p->cu_m, p->n_cu, &fail);
    if (fail) {
        eff_params_free(c);
        return NULL;
    }
    return c;
}

int eff_params_set_noise_epochs(eff_params *p, const double *B, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (!(B[i] >= 0))
            return DP_EINPUT;
    int fail = 0;
    double *d = dup_arr(B, n, &fail);
    if (fail || !n)
        return fail ? DP_ENOMEM : DP_EINPUT;
    dp_free(p->bn_epoch);
    p->bn_epoch = d;
    p->n_bn_epoch = n;
    p->bn_kind = EFF_BN_EPOCH;
    return 0;
}

int eff_params_set_curve(eff_params *p, const double *progress, const double *metric, size_t n)
{
    if (!n)
        return DP_EINPUT;
    for (size_t i = 0; i < n; i++)
        if (!(progress[i] >= 0) || !isfinite(progress[i]) || !isfinite(metric[i]) ||
            (i && !(progress[i] > progress[i - 1])))
            return DP_EINPUT;
    int fail = 0;
    double *cp = dup_arr(progress, n, &fail), *cm = dup_arr(metric, n, &fail);
    if (fail) {
        dp_free(cp);
        dp_free(cm);
        return DP_ENOMEM;
    }
    dp_free(p->cu_p);
    dp_free(p->cu_m);
    p->cu_p = cp;
    p->cu_m = cm;
    p->n_cu = n;
    return 0;
}

void eff_params_set_discounts(eff_params *p, double a, double kappa, int use_rho)
{
    p->a = a;
    p->kappa = kappa;
    p->use_rho = use_rho;
}

double eff_params_m0(const eff_params *p)
{
    return p->M0;
}
eff_bn_kind eff_params_noise_kind(const eff_params *p)
{
    return p->bn_kind;
}
double eff_params_noise(const eff_params *p)
{
    return p->bn;
}
void eff_params_set_noise(eff_params *p, double B)
{
    p->bn = B;
    p->bn_kind = EFF_BN_CONST;
}
double eff_params_a(const eff_params *p)
{
    return p->a;
}
double eff_params_kappa(const eff_params *p)
{
    return p->kappa;
}
int eff_params_use_rho(const eff_params *p)
{
    return p->use_rho;
}
size_t eff_params_curve_len(const eff_params *p)
{
    return p->n_cu;
}
double eff_params_curve_progress(const eff_params *p, size_t i)
{
    return p->cu_p[i];
}
double eff_params_curve_metric(const eff_params *p, size_t i)
{
    return p->cu_m[i];
}
void eff_params_set_curve_metric(eff_params *p, size_t i, double metric)
{
    p->cu_m[i] = metric;
}

/* ---- the model ------------------------------------------------------------ */

double eff_gain(double B, double M0, double M)
{
    if (isinf(B)) /* all noise (grad_sqr = 0): every sample counts fully */
        return M / M0;
    return (B + M0) / (B + M) * (M / M0);
}

double eff_efficiency(double B, double M0, double M)
{
    return eff_gain(B, M0, M) / (M / M0);
}

/* The trace row whose epoch the progress lies in: P[e-1] <= progress <
 * P[e] (AdaptDL's simulator holds row e's statistics until the progress
 * reaches row e's), the last row beyond the trace. */
static size_t trace_row(const eff_params *p, double progress, size_t from)
{
    size_t e = from;
    while (e + 1 < p->n_tr && progress >= p->tr_p[e])
        e++;
    return e;
}

double eff_noise_at(const eff_params *p, double progress, int epoch)
{
    switch (p->bn_kind) {
    case EFF_BN_EPOCH:
        return p->bn_epoch[epoch < 1                        ? 0
                           : (size_t)epoch <= p->n_bn_epoch ? (size_t)epoch - 1
                                                            : p->n_bn_epoch - 1];
    case EFF_BN_TRACE:
        return p->tr_b[trace_row(p, progress, 0)];
    default:
        return p->bn;
    }
}

/* A replay: the progress so far and the trace row it lies in (progress
 * only grows, so the row is found by walking forward). */
typedef struct replay {
    const eff_params *p;
    double prog;
    size_t row;
} replay;

/* n steps (n may be fractional) of batch M, each worth w x gain(M). */
static void steps(replay *r, int epoch, double n, double M, double w)
{
    const eff_params *p = r->p;
    if (p->bn_kind != EFF_BN_TRACE) {
        r->prog += n * w * eff_gain(eff_noise_at(p, r->prog, epoch), p->M0, M);
        return;
    }
    /* The noise scale changes at the trace's rows: take the steps up to the
     * next row boundary at once, then the rest at the next row's. */
    while (n > 0) {
        r->row = trace_row(p, r->prog, r->row);
        double inc = w * eff_gain(p->tr_b[r->row], p->M0, M);
        double k = n;
        if (r->row + 1 < p->n_tr && inc > 0) {
            double to_edge = ceil((p->tr_p[r->row] - r->prog) / inc);
            if (to_edge < 1)
                to_edge = 1;
            if (to_edge < k)
                k = to_edge;
        }
        r->prog += k * inc;
        n -= k;
        if (!(inc > 0))
            break;
    }
}

static void apply(replay *r, const eff_rec *x)
{
    const eff_params *p = r->p;
    switch (x->kind) {
    case EFF_SYNC:
        steps(r, x->epoch, 1, x->m, 1);
        break;
    case EFF_ASYNC:
        steps(r, x->epoch, 1, x->m, p->a > 0 ? pow(1 + x->x, -p->a) : 1);
        break;
    case EFF_LOCAL: {
        double H = x->x, psi = 1 / (1 + p->kappa * (H > 1 ? H - 1 : 0));
        steps(r, x->epoch, H, x->m, psi * (p->use_rho ? x->rho : 1));
        break;
    }
    }
}

/* Records i.. that are the same synchronous step as record i (batch and
 * epoch), up to n: replayed as one run of steps (a schedule is mostly such
 * runs, and a fit replays it many times). */
static size_t same_run(const eff_log *l, size_t i, size_t n)
{
    const eff_rec *x = &l->r[i];
    size_t j = i + 1;
    if (x->kind == EFF_SYNC)
        while (j < n && l->r[j].kind == EFF_SYNC && l->r[j].m == x->m && l->r[j].epoch == x->epoch)
            j++;
    return j - i;
}

/* Records [from, to) replayed into r. */
static void replay_range(replay *r, const eff_log *l, size_t from, size_t to)
{
    for (size_t i = from; i < to;) {
        size_t k = same_run(l, i, to);
        if (k > 1)
            steps(r, l->r[i].epoch, (double)k, l->r[i].m, 1);
        else
            apply(r, &l->r[i]);
        i += k;
    }
}

double eff_progress(const eff_params *p, const eff_log *l, size_t n_records)
{
    replay r = {p, 0, 0};
    replay_range(&r, l, 0, n_records < eff_log_len(l) ? n_records : eff_log_len(l));
    return r.prog;
}

void eff_progress_all(const eff_params *p, const eff_log *l, double *out)
{
    replay r = {p, 0, 0};
    for (size_t i = 0; i < eff_log_len(l); i++) {
        apply(&r, &l->r[i]);
        out[i] = r.prog;
    }
}

double eff_metric(const eff_params *p, double progress)
{
    size_t n = p->n_cu;
    if (!n)
        return NAN;
    if (progress <= p->cu_p[0])
        return p->cu_m[0];
    if (progress >= p->cu_p[n - 1])
        return p->cu_m[n - 1];
    size_t lo = 0, hi = n - 1; /* cu_p[lo] < progress < cu_p[hi] */
    while (hi - lo > 1) {
        size_t mid = lo + (hi - lo) / 2;
        if (p->cu_p[mid] <= progress)
            lo = mid;
        else
            hi = mid;
    }
    double f = (progress - p->cu_p[lo]) / (p->cu_p[hi] - p->cu_p[lo]);
    return p->cu_m[lo] + f * (p->cu_m[hi] - p->cu_m[lo]);
}

double eff_time_to(const eff_params *p, const eff_log *l, double target)
{
    replay r = {p, 0, 0};
    for (size_t i = 0; i < eff_log_len(l); i++) {
        apply(&r, &l->r[i]);
        if (eff_metric(p, r.prog) >= target)
            return l->r[i].t;
    }
    return NAN;
}

double eff_metric_at_epoch(const eff_params *p, const eff_log *l, int epoch)
{
    replay r = {p, 0, 0};
    size_t n = 0, len = eff_log_len(l);
    while (n < len && l->r[n].epoch <= epoch)
        n++;
    /* reached: some record of epoch `epoch` or later */
    if (epoch < 1 || !len || l->r[len - 1].epoch < epoch)
        return NAN;
    replay_range(&r, l, 0, n);
    return eff_metric(p, r.prog);
}
