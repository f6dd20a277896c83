/* learner.c: real SGD on the simulated schedule (learner.h). */
#include "learner.h"
#include "lconfig.h"

#include <gsl/gsl_randist.h>
#include <gsl/gsl_rng.h>
#include <math.h>
#include <string.h>

/* Train loss is measured on at most this many training rows (the first
 * ones of the fixed split), so an evaluation costs little on large sets. */
#define TRAIN_LOSS_ROWS 10000
/* A run's evaluations at most (learning.evaluate.every far below the
 * run's length would otherwise fill memory with copies of one model's). */
#define LRN_MAX_EVALS 1000000

struct learner {
    const lrn_cfg *c;
    const ldata *D;
    size_t n;      /* devices */
    uint64_t seed; /* the partition's and the data order's */
    lmodel m;
    size_t P; /* parameters */
    lrn_mode mode;

    double *global;   /* the server's / shared model */
    uint64_t version; /* updates applied to global */
    double **w;       /* LOCAL, ASYNC: each device's own model (lazy) */
    double **g;       /* SYNC, ASYNC: each device's gradient sum (lazy) */
    double *cnt;      /* samples in g[d] */
    double *since;    /* LOCAL: samples since d's last average */
    double *since_g;  /* LOCAL: samples since d's last average into global */
    double **snap;    /* LOCAL: each device's model at the background average's start (lazy) */
    double *snap_w;   /* its weight then (samples since the previous start) */
    uint64_t *read_ver;
    double *scratch; /* P: a gradient; then an average */
    double *ckpt;    /* the last checkpoint's model (NULL: the initial one) */
    size_t *bidx;    /* a batch's indices */
    size_t bcap;

    /* the partition: device d reads part[off[d] .. off[d+1]) */
    int built;
    int64_t *shares;
    size_t *part, *perm, *off, *pos;
    uint64_t *pass;
    gsl_rng *rng;
    double *cum;  /* simulated samples consumed per device */
    double ratio; /* training rows per simulated sample */

    /* evaluations */
    lrn_eval *ev;
    size_t n_ev, cap_ev;
    uint64_t ev_version; /* the global model's version at the last evaluation */
    double next_t;       /* next time-based evaluation (INFINITY: none) */
    double consumed;
    double *tta;
    size_t reached;
    long max_stale;

    /* compression (lrn_set_compress; comp.method LC_NONE: off) */
    lc_cfg comp;
    double **cres;   /* top-k error feedback: each device's residual (lazy) */
    double **cref;   /* delta coding: the last model each device sent (lazy) */
    double **csnap;  /* a background average's snapshots as they arrive (lazy) */
    double *cinit;   /* the initial model (delta coding's first reference) */
    double *cv, *co; /* P each: the vector coded, what arrives */
    size_t *cidx;    /* P: top-k's order */

    double *lr_scale; /* per device (lrn_set_lr_scale; NULL: all 1) */

    /* SYNC: the batches read since the last sync whose gradients are not
     * taken yet.  Every one is at the global model, which nothing changes
     * before the sync (whatever would first calls settle), so lrn_sync
     * takes them where it adds them up, in its order: no gradient array
     * per device, the same bits.  Batch b (1-based) is pb[b - 1]. */
    size_t *prow, n_prow, cap_prow;
    struct pbatch {
        size_t at, k, next; /* rows prow[at .. at + k); the device's next batch (0: none) */
    } * pb;
    size_t n_pb, cap_pb;
    size_t *phead, *ptail; /* per device: first and last batch (0: none) */
    size_t pdev;           /* devices with batches pending */
    double *gbuf, *gtmp;   /* P each: a device's gradient, one batch's */
};

static uint64_t mix(uint64_t x)
{
    x += 0x9e3779b97f4a7c15ULL;
    x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
    x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
    return x ^ (x >> 31);
}

static unsigned long order_seed(uint64_t seed, size_t d, uint64_t pass)
{
    return (unsigned long)mix(mix(seed ^ 0x6c6561726e6572ULL) + mix((uint64_t)d * 0x10001ULL + pass));
}

/* ---- a pass's order ------------------------------------------------------
 * Each device reshuffles its rows at every pass, from GSL's mt19937 seeded
 * with the pass's own seed.  A device with a handful of rows (10^3 devices
 * on the 1,437 digits) passes at almost every batch, and seeding the
 * generator's 624 words and twisting them all for one or two draws was most
 * of a learning run.  A short pass's draws are computed here from the words
 * they need: draw j (j < 227) is word j of the first twist, which reads the
 * seeded words j, j + 1 and j + 397 alone; the same numbers, in the same
 * order, as gsl_rng_set then gsl_ran_shuffle (gsl_rng_uniform_int's
 * scaling and rejection included; tests/test_learn.c compares them). */
#define MT_M       397
#define PASS_DRAWS 200 /* draws this way at most (< 624 - 397); then GSL's own */
#define PASS_SHORT 64  /* rows in a pass taken this way */

static uint32_t mt_temper(uint32_t k)
{
    k ^= k >> 11;
    k ^= (k << 7) & 0x9d2c5680u;
    k ^= (k << 15) & 0xefc60000u;
    k ^= k >> 18;
    return k;
}

/* gsl_ran_shuffle(rng seeded with s, perm, len): 0, or 1 when the pass is
 * not short (or, most rarely, rejections ran past PASS_DRAWS) and perm is
 * untouched. */
static int pass_order_short(size_t *perm, size_t len, unsigned long s)
{
    if (len > PASS_SHORT)
        return 1;
    uint32_t mt[MT_M + PASS_DRAWS + 1];
    size_t seeded = 1, pick[PASS_SHORT], used = 0;
    mt[0] = (uint32_t)((s ? s : 4357) & 0xffffffffUL); /* mt_set's default seed */
    for (size_t i = len - 1; i > 0; i--) {
        unsigned long n = i + 1, scale = 0xffffffffUL / n, k;
        do { /* gsl_rng_uniform_int(r, n) */
            if (used >= PASS_DRAWS)
                return 1;
            size_t j = used++;
            for (; seeded <= j + MT_M; seeded++)
                mt[seeded] = 1812433253u * (mt[seeded - 1] ^ (mt[seeded - 1] >> 30)) + (uint32_t)seeded;
            uint32_t y = (mt[j] & 0x80000000u) | (mt[j + 1] & 0x7fffffffu);
            uint32_t x = mt_temper(mt[j + MT_M] ^ (y >> 1) ^ ((y & 1u) ? 0x9908b0dfu : 0u));
            k = (unsigned long)x / scale;
        } while (k >= n);
        pick[i] = (size_t)k;
    }
    for (size_t i = len - 1; i > 0; i--) {
        size_t t = perm[i];
        perm[i] = perm[pick[i]];
        perm[pick[i]] = t;
    }
    return 0;
}

/* perm (a pass's rows, in partition order) in the pass's order. */
static void pass_order(learner *L, size_t *perm, size_t len, unsigned long s)
{
    if (len < 2 || !pass_order_short(perm, len, s))
        return; /* one row: the shuffle draws nothing */
    gsl_rng_set(L->rng, s);
    gsl_ran_shuffle(L->rng, perm, len, sizeof *perm);
}

int lrn_test_pass_order(size_t *perm, size_t len, unsigned long s)
{
    return pass_order_short(perm, len, s);
}

double lrn_lr(const learner *L, int epoch)
{
    const lrn_cfg *c = L->c;
    if (c->lr_every <= 0 || epoch <= 1)
        return c->lr;
    return c->lr * pow(c->lr_factor, (double)((epoch - 1) / c->lr_every));
}

/* ---- evaluation --------------------------------------------------------- */

static int eval_at(learner *L, double t, int epoch)
{
    if (L->n_ev && L->ev[L->n_ev - 1].t_s == t && L->ev[L->n_ev - 1].samples == L->consumed)
        return 0; /* the same instant and state: once */
    if (L->n_ev >= LRN_MAX_EVALS)
        return DP_ERUN;
    if (L->n_ev == L->cap_ev) {
        size_t cap = L->cap_ev ? 2 * L->cap_ev : 64;
        lrn_eval *e = dp_realloc(L->ev, cap * sizeof *e);
        if (!e)
            return DP_ENOMEM;
        L->ev = e;
        L->cap_ev = cap;
    }
    lrn_eval *e = &L->ev[L->n_ev];
    memset(e, 0, sizeof *e);
    e->t_s = t;
    e->epoch = epoch;
    e->samples = L->consumed;
    e->epochs = L->consumed / (double)L->D->n_train;
    double acc, tl;
    size_t nt = L->D->n_train < TRAIN_LOSS_ROWS ? L->D->n_train : TRAIN_LOSS_ROWS;
    if (L->n_ev && L->ev_version == L->version) { /* the same model as the last row: its figures */
        e->test_acc = e[-1].test_acc;
        e->test_loss = e[-1].test_loss;
        e->train_loss = e[-1].train_loss;
    } else {
        int rc = lm_pack(&L->m, L->global);
        rc = rc ? rc
                : lm_eval(&L->m, L->global, L->D->x_test, L->D->y_test, L->D->n_test, &e->test_acc,
                          &e->test_loss) ||
                      lm_eval(&L->m, L->global, L->D->x_train, L->D->y_train, nt, &acc, &tl);
        lm_unpack(&L->m);
        if (rc)
            return DP_ENOMEM;
        e->train_loss = tl;
    }
    L->ev_version = L->version;
    L->n_ev++;
    for (size_t k = 0; k < L->c->n_targets; k++)
        if (isnan(L->tta[k]) && e->test_acc >= L->c->targets[k]) {
            L->tta[k] = t;
            L->reached++;
        }
    return 0;
}

/* The time-based evaluations due before t (strictly), or up to t. */
static int flush(learner *L, double t, int epoch, int upto)
{
    while (L->next_t < t || (upto && L->next_t == t)) {
        int rc = eval_at(L, L->next_t, epoch);
        if (rc)
            return rc;
        L->next_t += L->c->eval_every_s;
    }
    return 0;
}

/* ---- partition and data order ------------------------------------------ */

static int build_partition(learner *L)
{
    const ldata *D = L->D;
    size_t n = L->n, N = D->n_train;
    const lrn_cfg *c = L->c;
    gsl_rng *r = L->rng;
    gsl_rng_set(r, (unsigned long)mix(L->seed ^ 0x7061727469ULL));
    size_t *all = dp_malloc(N * sizeof *all);
    if (!all)
        return DP_ENOMEM;
    for (size_t i = 0; i < N; i++)
        all[i] = i;
    int rc = 0;
    if (c->partition == LRN_PART_IID || c->partition == LRN_PART_POLICY) {
        gsl_ran_shuffle(r, all, N, sizeof *all);
        /* part sizes: equal (iid) or in proportion to the shares (policy),
         * largest remainders, each at least one row */
        double tot = 0;
        for (size_t d = 0; d < n; d++)
            tot += c->partition == LRN_PART_POLICY && L->shares ? (double)L->shares[d] : 1.0;
        size_t given = 0;
        for (size_t d = 0; d < n; d++) {
            double wgt = c->partition == LRN_PART_POLICY && L->shares ? (double)L->shares[d] : 1.0;
            size_t k = tot > 0 ? (size_t)floor((double)(N - n) * wgt / tot) : 0;
            L->off[d + 1] = k + 1;
            given += k + 1;
        }
        for (size_t d = 0; given < N; d = (d + 1) % n, given++)
            L->off[d + 1]++;
        for (size_t d = 0; d < n; d++)
            L->off[d + 1] += L->off[d];
        memcpy(L->part, all, N * sizeof *all);
    } else if (c->partition == LRN_PART_LABELS) {
        /* McMahan's shards: rows sorted by label, cut into n * k shards,
         * dealt k to a device in a shuffled order */
        size_t k = (size_t)c->labels_per_device, S = n * k, at = 0;
        for (size_t y = 0; y < D->classes; y++)
            for (size_t i = 0; i < N; i++)
                if ((size_t)D->y_train[i] == y)
                    all[at++] = i;
        size_t *sh = dp_malloc(S * sizeof *sh);
        if (!sh) {
            dp_free(all);
            return DP_ENOMEM;
        }
        for (size_t i = 0; i < S; i++)
            sh[i] = i;
        gsl_ran_shuffle(r, sh, S, sizeof *sh);
        at = 0;
        for (size_t d = 0; d < n; d++) {
            L->off[d] = at;
            for (size_t j = 0; j < k; j++) {
                size_t s0 = sh[d * k + j], a = s0 * N / S, b = (s0 + 1) * N / S;
                memcpy(L->part + at, all + a, (b - a) * sizeof *all);
                at += b - a;
            }
        }
        L->off[n] = at;
        dp_free(sh);
    } else { /* Dirichlet(alpha) over labels: per class, shares drawn for every device */
        double *alpha = dp_malloc(n * sizeof *alpha), *p = dp_malloc(n * sizeof *p);
        size_t *cntd = dp_calloc(n * D->classes, sizeof *cntd), *cls = dp_malloc(N * sizeof *cls);
        if (!alpha || !p || !cntd || !cls)
            rc = DP_ENOMEM;
        for (size_t d = 0; !rc && d < n; d++)
            alpha[d] = c->alpha;
        size_t at = 0;
        for (size_t y = 0; !rc && y < D->classes; y++) {
            size_t ny = 0;
            for (size_t i = 0; i < N; i++)
                if ((size_t)D->y_train[i] == y)
                    cls[ny++] = i;
            gsl_ran_shuffle(r, cls, ny, sizeof *cls);
            gsl_ran_dirichlet(r, n, alpha, p);
            size_t given = 0;
            for (size_t d = 0; d < n; d++) {
                cntd[d * D->classes + y] = (size_t)floor(p[d] * (double)ny);
                given += cntd[d * D->classes + y];
            }
            for (size_t d = 0; given < ny; d = (d + 1) % n, given++)
                cntd[d * D->classes + y]++;
            /* keep class y's rows in device order in all[at..at+ny) */
            for (size_t j = 0; j < ny; j++)
                all[at + j] = cls[j];
            at += ny;
        }
        /* regroup by device: device d's rows of every class */
        size_t o = 0;
        for (size_t d = 0; !rc && d < n; d++) {
            L->off[d] = o;
            size_t base = 0;
            for (size_t y = 0; y < D->classes; y++) {
                size_t before = 0, ny = 0;
                for (size_t e = 0; e < n; e++) {
                    if (e < d)
                        before += cntd[e * D->classes + y];
                    ny += cntd[e * D->classes + y];
                }
                memcpy(L->part + o, all + base + before, cntd[d * D->classes + y] * sizeof *all);
                o += cntd[d * D->classes + y];
                base += ny;
            }
        }
        L->off[n] = o;
        dp_free(alpha);
        dp_free(p);
        dp_free(cntd);
        dp_free(cls);
    }
    dp_free(all);
    if (rc)
        return rc;
    for (size_t d = 0; d < n; d++) {
        L->pos[d] = L->off[d + 1] - L->off[d]; /* a new pass at the first read */
        L->pass[d] = 0;
    }
    L->built = 1;
    return 0;
}

int lrn_draw(learner *L, size_t d, size_t k, size_t *idx)
{
    if (!L->built) {
        int rc = build_partition(L);
        if (rc)
            return rc;
    }
    size_t len = L->off[d + 1] - L->off[d];
    if (len == 0)
        return 0;
    size_t *perm = L->perm + L->off[d];
    for (size_t i = 0; i < k; i++) {
        if (L->pos[d] == len) {
            memcpy(perm, L->part + L->off[d], len * sizeof *perm);
            pass_order(L, perm, len, order_seed(L->seed, d, L->pass[d]++));
            L->pos[d] = 0;
        }
        idx[i] = perm[L->pos[d]++];
    }
    return 0;
}

/* ---- the learner -------------------------------------------------------- */

learner *lrn_new(const lrn_cfg *c, const scn_scenario *s, size_t n, uint64_t seed, dp_err *err)
{
    learner *L = dp_calloc(1, sizeof *L);
    if (!L) {
        dp_err_set(err, DP_ENOMEM, "out of memory");
        return NULL;
    }
    L->c = c;
    L->D = c->data;
    L->n = n;
    L->seed = c->has_seed ? c->seed : seed;
    if (lm_init(&L->m, c->model, L->D->dim, L->D->classes, c->hidden, err)) {
        dp_free(L);
        return NULL;
    }
    L->P = L->m.n_params;
    L->global = dp_malloc(L->P * sizeof *L->global);
    L->scratch = dp_malloc(L->P * sizeof *L->scratch);
    L->w = dp_calloc(n, sizeof *L->w);
    L->g = dp_calloc(n, sizeof *L->g);
    L->cnt = dp_calloc(n, sizeof *L->cnt);
    L->since = dp_calloc(n, sizeof *L->since);
    L->since_g = dp_calloc(n, sizeof *L->since_g);
    L->read_ver = dp_calloc(n, sizeof *L->read_ver);
    L->snap = dp_calloc(n, sizeof *L->snap);
    L->snap_w = dp_calloc(n, sizeof *L->snap_w);
    L->part = dp_malloc(L->D->n_train * sizeof *L->part);
    L->perm = dp_malloc(L->D->n_train * sizeof *L->perm);
    L->off = dp_calloc(n + 1, sizeof *L->off);
    L->pos = dp_calloc(n, sizeof *L->pos);
    L->pass = dp_calloc(n, sizeof *L->pass);
    L->cum = dp_calloc(n, sizeof *L->cum);
    L->tta = dp_malloc((c->n_targets ? c->n_targets : 1) * sizeof *L->tta);
    L->rng = gsl_rng_alloc(gsl_rng_mt19937);
    if (!L->global || !L->scratch || !L->w || !L->g || !L->cnt || !L->since || !L->since_g || !L->read_ver ||
        !L->snap || !L->snap_w || !L->part || !L->perm || !L->off || !L->pos || !L->pass || !L->cum ||
        !L->tta || !L->rng) {
        lrn_free(L);
        dp_err_set(err, DP_ENOMEM, "out of memory for the learner");
        return NULL;
    }
    for (size_t k = 0; k < c->n_targets; k++)
        L->tta[k] = NAN;
    lm_init_weights(&L->m, L->global, mix(L->seed ^ 0x696e6974ULL));
    L->ratio = c->samples == LRN_SAMPLES_SAME || s->dataset.samples <= 0
                   ? 1.0
                   : (double)L->D->n_train / (double)s->dataset.samples;
    L->next_t = c->eval_every_s > 0 ? c->eval_every_s : INFINITY;
    if (eval_at(L, 0, 1)) { /* the initial model, at t = 0 */
        lrn_free(L);
        dp_err_set(err, DP_ENOMEM, "out of memory for the learner");
        return NULL;
    }
    return L;
}

void lrn_free(learner *L)
{
    if (!L)
        return;
    for (size_t d = 0; d < L->n; d++) {
        if (L->w)
            dp_free(L->w[d]);
        if (L->g)
            dp_free(L->g[d]);
        if (L->snap)
            dp_free(L->snap[d]);
    }
    for (size_t d = 0; d < L->n; d++) {
        if (L->cres)
            dp_free(L->cres[d]);
        if (L->cref)
            dp_free(L->cref[d]);
        if (L->csnap)
            dp_free(L->csnap[d]);
    }
    dp_free(L->csnap);
    dp_free(L->lr_scale);
    dp_free(L->prow);
    dp_free(L->pb);
    dp_free(L->phead);
    dp_free(L->ptail);
    dp_free(L->gbuf);
    dp_free(L->gtmp);
    dp_free(L->cres);
    dp_free(L->cref);
    dp_free(L->cinit);
    dp_free(L->cv);
    dp_free(L->co);
    dp_free(L->cidx);
    dp_free(L->snap);
    dp_free(L->snap_w);
    dp_free(L->w);
    dp_free(L->g);
    dp_free(L->global);
    dp_free(L->scratch);
    dp_free(L->ckpt);
    dp_free(L->bidx);
    dp_free(L->cnt);
    dp_free(L->since);
    dp_free(L->since_g);
    dp_free(L->read_ver);
    dp_free(L->shares);
    dp_free(L->part);
    dp_free(L->perm);
    dp_free(L->off);
    dp_free(L->pos);
    dp_free(L->pass);
    dp_free(L->cum);
    dp_free(L->ev);
    dp_free(L->tta);
    if (L->rng)
        gsl_rng_free(L->rng);
    lm_free(&L->m);
    dp_free(L);
}

static int settle(learner *L);
static void taken(learner *L, size_t d);

int lrn_set_mode(learner *L, lrn_mode m)
{
    if (settle(L))
        return DP_ENOMEM;
    L->mode = m;
    if (m == LRN_SYNC)
        return 0;
    for (size_t d = 0; d < L->n; d++) /* the initial model (version 0) on every device */
        if (!L->w[d] && !(L->w[d] = dp_malloc(L->P * sizeof(double))))
            return DP_ENOMEM;
        else
            memcpy(L->w[d], L->global, L->P * sizeof(double)), L->read_ver[d] = L->version;
    return 0;
}

void lrn_set_shares(learner *L, const int64_t *share)
{
    if (L->built || L->c->partition != LRN_PART_POLICY)
        return;
    if (!L->shares)
        L->shares = dp_malloc(L->n * sizeof *L->shares);
    if (L->shares)
        memcpy(L->shares, share, L->n * sizeof *share);
}

/* Device d's own model, made from the global one on first use. */
static double *own(learner *L, size_t d)
{
    if (!L->w[d]) {
        L->w[d] = dp_malloc(L->P * sizeof(double));
        if (L->w[d]) {
            memcpy(L->w[d], L->global, L->P * sizeof(double));
            L->read_ver[d] = L->version;
        }
    }
    return L->w[d];
}

static double *grad(learner *L, size_t d)
{
    if (!L->g[d])
        L->g[d] = dp_calloc(L->P, sizeof(double));
    return L->g[d];
}

/* Room for a batch of k indices in L->bidx.  0 or DP_ENOMEM. */
static int batch_room(learner *L, size_t k)
{
    if (k <= L->bcap)
        return 0;
    size_t *b = dp_realloc(L->bidx, k * sizeof *b);
    if (!b)
        return DP_ENOMEM;
    L->bidx = b;
    L->bcap = k;
    return 0;
}

/* ---- SYNC's pending batches (the struct's comment) ---------------------- */

/* Keep device d's batch of k rows (L->bidx) for the sync. */
static int defer(learner *L, size_t d, size_t k)
{
    if (!L->phead &&
        (!(L->phead = dp_calloc(L->n, sizeof *L->phead)) || !(L->ptail = dp_calloc(L->n, sizeof *L->ptail))))
        return DP_ENOMEM;
    if (dp_grow((void **)&L->prow, &L->cap_prow, L->n_prow + k, sizeof *L->prow, 256) ||
        dp_grow((void **)&L->pb, &L->cap_pb, L->n_pb + 1, sizeof *L->pb, 256))
        return DP_ENOMEM;
    memcpy(L->prow + L->n_prow, L->bidx, k * sizeof *L->prow);
    L->pb[L->n_pb] = (struct pbatch){L->n_prow, k, 0};
    L->n_prow += k;
    size_t b = ++L->n_pb;
    if (L->ptail[d])
        L->pb[L->ptail[d] - 1].next = b;
    else
        L->phead[d] = b, L->pdev++;
    L->ptail[d] = b;
    return 0;
}

/* Device d's list emptied (its batches taken). */
static void taken(learner *L, size_t d)
{
    L->phead[d] = L->ptail[d] = 0;
    if (--L->pdev == 0)
        L->n_prow = L->n_pb = 0;
}

/* Device d's pending gradients, summed as lrn_step summed them (the first
 * batch's, then each next one's added), into g. */
static int take(learner *L, size_t d, double *g)
{
    const ldata *D = L->D;
    for (size_t b = L->phead[d], first = 1; b; b = L->pb[b - 1].next, first = 0) {
        const struct pbatch *p = &L->pb[b - 1];
        if (isnan(lm_grad_sum(&L->m, L->global, D->x_train, D->y_train, L->prow + p->at, p->k,
                              first ? g : L->gtmp)))
            return DP_ENOMEM;
        if (!first)
            for (size_t j = 0; j < L->P; j++)
                g[j] += L->gtmp[j];
    }
    taken(L, d);
    return 0;
}

/* Every pending gradient into its device's array, as before deferral:
 * before anything but a whole sync changes the global model. */
static int settle(learner *L)
{
    for (size_t d = 0; L->pdev && d < L->n; d++)
        if (L->phead[d]) {
            double *g = grad(L, d);
            int rc = g ? take(L, d, g) : DP_ENOMEM;
            if (rc)
                return rc;
        }
    return 0;
}

int lrn_step(learner *L, double t, int epoch, size_t d, double samples)
{
    int rc = flush(L, t, epoch, 0);
    if (rc)
        return rc;
    /* this step's training rows: the device's running total, scaled, so
     * that an epoch of the schedule is one pass over the training set */
    double before = L->cum[d];
    L->cum[d] += samples;
    size_t k = (size_t)(floor(L->cum[d] * L->ratio) - floor(before * L->ratio));
    if (k == 0)
        return 0;
    if ((rc = batch_room(L, k)) || (rc = lrn_draw(L, d, k, L->bidx)))
        return rc;
    if (L->off[d + 1] == L->off[d])
        return 0; /* an empty part (a Dirichlet draw can give none) */
    const ldata *D = L->D;
    L->consumed += (double)k;
    if (L->mode == LRN_LOCAL) {
        double *w = own(L, d);
        if (!w)
            return DP_ENOMEM;
        if (isnan(lm_grad_sum(&L->m, w, D->x_train, D->y_train, L->bidx, k, L->scratch)))
            return DP_ENOMEM;
        double lr = lrn_lr(L, epoch) * (L->lr_scale ? L->lr_scale[d] : 1), nk = (double)k;
        for (size_t j = 0; j < L->P; j++)
            w[j] -= lr * (L->scratch[j] / nk);
        L->since[d] += nk;
        L->since_g[d] += nk;
        return 0;
    }
    if (L->mode == LRN_SYNC && (L->cnt[d] == 0 || (L->phead && L->phead[d]))) {
        if ((!L->gbuf && !(L->gbuf = dp_malloc(L->P * sizeof *L->gbuf))) ||
            (!L->gtmp && !(L->gtmp = dp_malloc(L->P * sizeof *L->gtmp))) || defer(L, d, k))
            return DP_ENOMEM;
        L->cnt[d] += (double)k;
        return 0;
    }
    const double *at = L->mode == LRN_ASYNC ? own(L, d) : L->global;
    double *g = grad(L, d);
    if (!at || !g)
        return DP_ENOMEM;
    if (L->cnt[d] == 0) {
        if (isnan(lm_grad_sum(&L->m, at, D->x_train, D->y_train, L->bidx, k, g)))
            return DP_ENOMEM;
    } else {
        if (isnan(lm_grad_sum(&L->m, at, D->x_train, D->y_train, L->bidx, k, L->scratch)))
            return DP_ENOMEM;
        for (size_t j = 0; j < L->P; j++)
            g[j] += L->scratch[j];
    }
    L->cnt[d] += (double)k;
    return 0;
}

/* ---- statistics for policies (learner.h) -------------------------------- */

static size_t member(const size_t *members, size_t i);
static const double *sent_with(learner *L, const lc_cfg *c, size_t d, const double *x, double scale,
                               int model);
static const double *sent(learner *L, size_t d, const double *x, double scale, int model);

int lrn_probe(learner *L, size_t d, int at_global, size_t k, double *g, double *loss)
{
    if (!L->built) {
        int rc = build_partition(L);
        if (rc)
            return rc;
    }
    if (k == 0 || L->off[d + 1] == L->off[d]) {
        if (g)
            memset(g, 0, L->P * sizeof *g);
        *loss = 0;
        return 0;
    }
    if (batch_room(L, k))
        return DP_ENOMEM;
    /* the next k rows, then the stream put back: a pass that began here
     * is begun again, from the same seed, by the next real read */
    size_t pos = L->pos[d];
    uint64_t pass = L->pass[d];
    int rc = lrn_draw(L, d, k, L->bidx);
    if (rc)
        return rc;
    if (L->pass[d] != pass) {
        size_t len = L->off[d + 1] - L->off[d];
        size_t *perm = L->perm + L->off[d];
        /* the order of the pass under way, rebuilt (its shuffle's seed) */
        memcpy(perm, L->part + L->off[d], len * sizeof *perm);
        if (pass > 0) {
            pass_order(L, perm, len, order_seed(L->seed, d, pass - 1));
        }
    }
    L->pos[d] = pos;
    L->pass[d] = pass;
    const double *w = !at_global && L->w[d] ? L->w[d] : L->global;
    double *gs = g ? g : L->scratch;
    double sum = lm_grad_sum(&L->m, w, L->D->x_train, L->D->y_train, L->bidx, k, gs);
    if (isnan(sum))
        return DP_ENOMEM;
    if (g)
        for (size_t j = 0; j < L->P; j++)
            g[j] /= (double)k;
    *loss = sum / (double)k;
    return 0;
}

const double *lrn_device_weights(const learner *L, size_t d)
{
    return d < L->n ? L->w[d] : L->global;
}

size_t lrn_n_params(const learner *L)
{
    return L->P;
}

int lrn_set_lr_scale(learner *L, size_t d, double f)
{
    if (!L->lr_scale) {
        if (!(L->lr_scale = dp_malloc(L->n * sizeof *L->lr_scale)))
            return DP_ENOMEM;
        for (size_t e = 0; e < L->n; e++)
            L->lr_scale[e] = 1;
    }
    L->lr_scale[d] = f;
    return 0;
}

int lrn_average_weighted(learner *L, double t, int epoch, const size_t *members, size_t m,
                         const double *weights)
{
    int rc = flush(L, t, epoch, 0);
    if (rc || (rc = settle(L)))
        return rc;
    double tot = 0;
    for (size_t i = 0; i < m; i++)
        tot += weights[i];
    if (!(tot > 0))
        return 0;
    double *avg = L->scratch;
    memset(avg, 0, L->P * sizeof *avg);
    for (size_t i = 0; i < m; i++) {
        size_t d = member(members, i);
        double *w = own(L, d);
        if (!w)
            return DP_ENOMEM;
        const double *x = sent(L, d, w, 1, 1);
        if (!x)
            return DP_ENOMEM;
        double a = weights[i] / tot;
        for (size_t j = 0; j < L->P; j++)
            avg[j] += a * x[j];
    }
    memcpy(L->global, avg, L->P * sizeof *avg);
    L->version++;
    for (size_t i = 0; i < m; i++) {
        size_t d = member(members, i);
        memcpy(L->w[d], avg, L->P * sizeof *avg);
        L->read_ver[d] = L->version;
        L->since[d] = L->since_g[d] = 0;
    }
    return 0;
}

/* ---- compression -------------------------------------------------------- */

/* The buffers a coded send needs (any method: the run's or a policy's own
 * coder, lrn_merge).  0 or DP_ENOMEM. */
static int comp_room(learner *L)
{
    if (!L->cres)
        L->cres = dp_calloc(L->n, sizeof *L->cres);
    if (!L->cref)
        L->cref = dp_calloc(L->n, sizeof *L->cref);
    if (!L->csnap)
        L->csnap = dp_calloc(L->n, sizeof *L->csnap);
    if (!L->cv)
        L->cv = dp_malloc(L->P * sizeof(double));
    if (!L->co)
        L->co = dp_malloc(L->P * sizeof(double));
    if (!L->cidx)
        L->cidx = dp_malloc(L->P * sizeof(size_t));
    return L->cres && L->cref && L->csnap && L->cinit && L->cv && L->co && L->cidx ? 0 : DP_ENOMEM;
}

int lrn_set_compress(learner *L, const lc_cfg *c)
{
    L->comp = *c;
    /* the initial model, delta coding's first reference, kept whatever the
     * run's method: a policy's own coder (lrn_merge) may code deltas later */
    if (!L->cinit && (L->cinit = dp_malloc(L->P * sizeof(double))))
        memcpy(L->cinit, L->global, L->P * sizeof(double));
    if (!L->cinit)
        return DP_ENOMEM;
    if (c->method == LC_NONE)
        return 0;
    return comp_room(L);
}

/* What arrives when device d sends x (a model when `model`, else a
 * gradient) scaled by 1/scale, coded with c: x itself without compression,
 * else the transform of it (learner.h), in L->co, valid until the next
 * call.  NULL when out of memory. */
static const double *sent_with(learner *L, const lc_cfg *c, size_t d, const double *x, double scale,
                               int model)
{
    size_t P = L->P;
    if (c->method == LC_NONE)
        return x;
    double *v = L->cv, *ref = NULL, *res = NULL;
    if (model && c->delta) {
        if (!L->cref[d] && (L->cref[d] = dp_malloc(P * sizeof(double))))
            memcpy(L->cref[d], L->cinit, P * sizeof(double));
        if (!(ref = L->cref[d]))
            return NULL;
        for (size_t j = 0; j < P; j++)
            v[j] = x[j] - ref[j];
    } else if (scale != 1) {
        for (size_t j = 0; j < P; j++)
            v[j] = x[j] / scale;
    } else {
        memcpy(v, x, P * sizeof *v);
    }
    if (c->method == LC_TOPK && c->error_feedback) {
        if (!L->cres[d] && !(L->cres[d] = dp_calloc(P, sizeof(double))))
            return NULL;
        res = L->cres[d];
        for (size_t j = 0; j < P; j++)
            v[j] += res[j];
    }
    lc_apply(c, v, P, L->co, L->cidx);
    if (res)
        for (size_t j = 0; j < P; j++)
            res[j] = v[j] - L->co[j];
    if (ref)
        for (size_t j = 0; j < P; j++)
            L->co[j] = ref[j] = ref[j] + L->co[j];
    return L->co;
}

/* With the run's compression. */
static const double *sent(learner *L, size_t d, const double *x, double scale, int model)
{
    return sent_with(L, &L->comp, d, x, scale, model);
}

static size_t member(const size_t *members, size_t i)
{
    return members ? members[i] : i;
}

int lrn_sync(learner *L, double t, int epoch, const size_t *members, size_t m, lrn_weighting wt)
{
    int rc = flush(L, t, epoch, 0);
    if (rc)
        return rc;
    if (!members)
        m = L->n;
    if (L->pdev) { /* a device outside the sync would see the model move under its batches */
        size_t in = 0;
        for (size_t i = 0; i < m; i++)
            in += L->phead[member(members, i)] != 0;
        if (in != L->pdev && (rc = settle(L)))
            return rc;
    }
    double *avg = L->scratch, tot = 0;
    size_t contributing = 0;
    memset(avg, 0, L->P * sizeof *avg);
    if (L->pdev > 1 && (rc = lm_pack(&L->m, L->global))) /* every pending batch is at it */
        return rc;
    for (size_t i = 0; i < m; i++) {
        size_t d = member(members, i);
        size_t pb = L->phead ? L->phead[d] : 0;
        if (L->cnt[d] == 0 || (!L->g[d] && !pb))
            continue;
        contributing++;
        const double *g = L->g[d];
        if (pb && L->comp.method == LC_NONE && !L->pb[pb - 1].next) { /* one batch: added as it is taken */
            const ldata *D = L->D;
            const struct pbatch *p = &L->pb[pb - 1];
            if ((rc = lm_grad_add(&L->m, L->global, D->x_train, D->y_train, L->prow + p->at, p->k,
                                  wt == LRN_PER_RANK ? L->cnt[d] : 1, avg, L->gtmp)))
                goto fail;
            taken(L, d);
            tot += L->cnt[d];
            L->cnt[d] = 0;
            continue;
        }
        if (pb) {
            if ((rc = take(L, d, L->gbuf)))
                goto fail;
            g = L->gbuf;
        }
        if (L->comp.method != LC_NONE) { /* what arrives: the mean (per rank) or the sum, coded */
            const double *x = sent(L, d, g, wt == LRN_PER_RANK ? L->cnt[d] : 1, 0);
            if (!x)
                goto fail;
            for (size_t j = 0; j < L->P; j++)
                avg[j] += x[j];
        } else if (wt == LRN_PER_RANK) {
            double c = L->cnt[d];
            for (size_t j = 0; j < L->P; j++)
                avg[j] += g[j] / c;
        } else {
            for (size_t j = 0; j < L->P; j++)
                avg[j] += g[j];
        }
        tot += L->cnt[d];
        L->cnt[d] = 0;
    }
    lm_unpack(&L->m);
    if (!contributing)
        return 0;
    /* PyTorch divides the summed per-rank means by the world size, ranks
     * that joined with no samples included */
    double div = wt == LRN_PER_RANK ? (double)m : tot, lr = lrn_lr(L, epoch);
    for (size_t j = 0; j < L->P; j++)
        L->global[j] -= lr * (avg[j] / div);
    L->version++;
    return 0;
fail:
    lm_unpack(&L->m);
    return rc ? rc : DP_ENOMEM;
}

/* lrn_average with each member's model coded with c (LC_NONE: exact);
 * `group`: the members keep the version they last read (a group's own
 * average, lrn_group_average: its pushes' staleness counts from the
 * group's download). */
static int average_coded(learner *L, double t, int epoch, const size_t *members, size_t m, int into_global,
                         int to_members, const lc_cfg *c, int group)
{
    int rc = flush(L, t, epoch, 0);
    if (rc || (rc = settle(L)))
        return rc;
    if (!members)
        m = L->n;
    double *since = into_global ? L->since_g : L->since, tot = 0;
    size_t with = 0, one = 0;
    for (size_t i = 0; i < m; i++) {
        size_t d = member(members, i);
        if (since[d] > 0 && L->w[d]) {
            tot += since[d];
            with++;
            one = d;
        }
    }
    double *avg = L->scratch;
    if (with == 1) {
        const double *w = sent_with(L, c, one, L->w[one], 1, 1);
        if (!w)
            return DP_ENOMEM;
        memcpy(avg, w, L->P * sizeof *avg); /* one model: itself, bit for bit */
    } else if (with > 1) {
        memset(avg, 0, L->P * sizeof *avg);
        for (size_t i = 0; i < m; i++) {
            size_t d = member(members, i);
            if (since[d] > 0 && L->w[d]) {
                double a = since[d] / tot;
                const double *w = sent_with(L, c, d, L->w[d], 1, 1);
                if (!w)
                    return DP_ENOMEM;
                for (size_t j = 0; j < L->P; j++)
                    avg[j] += a * w[j];
            }
        }
    }
    if (with && into_global) {
        memcpy(L->global, avg, L->P * sizeof *avg);
        L->version++;
    }
    for (size_t i = 0; i < m; i++) {
        size_t d = member(members, i);
        if (to_members && (with || into_global)) {
            double *w = own(L, d);
            if (!w)
                return DP_ENOMEM;
            memcpy(w, with ? avg : L->global, L->P * sizeof *w);
            if (!group)
                L->read_ver[d] = L->version;
        }
        L->since[d] = 0;
        if (into_global)
            L->since_g[d] = 0;
    }
    return 0;
}

int lrn_average(learner *L, double t, int epoch, const size_t *members, size_t m, int into_global,
                int to_members)
{
    return average_coded(L, t, epoch, members, m, into_global, to_members, &L->comp, 0);
}

int lrn_group_average(learner *L, double t, int epoch, const size_t *members, size_t m)
{
    static const lc_cfg exact = {.method = LC_NONE};
    return average_coded(L, t, epoch, members, m, 0, 1, &exact, 1);
}

long lrn_merge(learner *L, double t, int epoch, size_t d, double alpha, const lc_cfg *c)
{
    int rc = flush(L, t, epoch, 0);
    if (rc || (rc = settle(L)))
        return rc;
    if (!c)
        c = &L->comp;
    if (c->method != LC_NONE && (rc = comp_room(L)))
        return rc;
    double *w = own(L, d);
    const double *x = w ? sent_with(L, c, d, w, 1, 1) : NULL;
    if (!x)
        return DP_ENOMEM;
    for (size_t j = 0; j < L->P; j++)
        L->global[j] = (1 - alpha) * L->global[j] + alpha * x[j];
    long s = (long)(L->version - L->read_ver[d]);
    L->version++;
    L->since[d] = L->since_g[d] = 0;
    if (s > L->max_stale)
        L->max_stale = s;
    return s;
}

int lrn_mix_global(learner *L, double t, int epoch, const size_t *members, size_t m, double beta)
{
    int rc = flush(L, t, epoch, 0);
    if (rc)
        return rc;
    for (size_t i = 0; i < m; i++) {
        double *w = own(L, members[i]);
        if (!w)
            return DP_ENOMEM;
        for (size_t j = 0; j < L->P; j++)
            w[j] = (1 - beta) * w[j] + beta * L->global[j];
    }
    return 0;
}

long lrn_push(learner *L, double t, int epoch, size_t d)
{
    int rc = flush(L, t, epoch, 0);
    if (rc || (rc = settle(L)))
        return rc;
    long s = (long)(L->version - L->read_ver[d]);
    if (L->cnt[d] == 0 || !L->g[d]) {
        L->version++; /* an empty push is still an update of the server's clock */
        return s;
    }
    double lr = lrn_lr(L, epoch), c = L->cnt[d];
    if (L->c->staleness == LRN_STALE_DIVIDE && s > 1)
        lr /= (double)s;
    const double *g = L->g[d];
    if (L->comp.method != LC_NONE) {
        const double *x = sent(L, d, g, c, 0);
        if (!x)
            return DP_ENOMEM;
        for (size_t j = 0; j < L->P; j++)
            L->global[j] -= lr * x[j];
    } else {
        for (size_t j = 0; j < L->P; j++)
            L->global[j] -= lr * (g[j] / c);
    }
    L->cnt[d] = 0;
    L->version++;
    if (s > L->max_stale)
        L->max_stale = s;
    return s;
}

int lrn_average_begin(learner *L, double t, int epoch, const size_t *members, size_t m)
{
    int rc = flush(L, t, epoch, 0);
    if (rc || (rc = settle(L)))
        return rc;
    for (size_t i = 0; i < m; i++) {
        size_t d = member(members, i);
        double *w = own(L, d);
        if (!L->snap[d])
            L->snap[d] = dp_malloc(L->P * sizeof(double));
        if (!w || !L->snap[d])
            return DP_ENOMEM;
        memcpy(L->snap[d], w, L->P * sizeof(double));
        if (L->comp.method !=
            LC_NONE) { /* what arrives, beside the exact snapshot the steps since start from */
            if (!L->csnap[d] && !(L->csnap[d] = dp_malloc(L->P * sizeof(double))))
                return DP_ENOMEM;
            const double *x = L->since[d] > 0 ? sent(L, d, w, 1, 1) : w;
            if (!x)
                return DP_ENOMEM;
            memcpy(L->csnap[d], x, L->P * sizeof(double));
        }
        L->snap_w[d] = L->since[d];
        L->since[d] = 0;
    }
    return 0;
}

int lrn_average_end(learner *L, double t, int epoch, const size_t *members, size_t m)
{
    int rc = flush(L, t, epoch, 0);
    if (rc || (rc = settle(L)))
        return rc;
    double tot = 0;
    size_t with = 0, one = 0;
    for (size_t i = 0; i < m; i++) {
        size_t d = member(members, i);
        if (L->snap[d] && L->snap_w[d] > 0)
            tot += L->snap_w[d], with++, one = d;
    }
    if (!with)
        return 0;
    double *avg = L->scratch;
    double **arrived = L->comp.method != LC_NONE ? L->csnap : L->snap;
    if (with == 1) {
        memcpy(avg, arrived[one], L->P * sizeof *avg);
    } else {
        memset(avg, 0, L->P * sizeof *avg);
        for (size_t i = 0; i < m; i++) {
            size_t d = member(members, i);
            if (L->snap[d] && L->snap_w[d] > 0) {
                double a = L->snap_w[d] / tot;
                for (size_t j = 0; j < L->P; j++)
                    avg[j] += a * arrived[d][j];
            }
        }
    }
    memcpy(L->global, avg, L->P * sizeof *avg);
    L->version++;
    for (size_t i = 0; i < m; i++) {
        size_t d = member(members, i);
        if (!L->snap[d] || !L->w[d])
            continue;
        double *w = L->w[d];
        const double *sn = L->snap[d];
        for (size_t j = 0; j < L->P; j++) /* the average plus its own steps since the snapshot */
            w[j] = avg[j] + (w[j] - sn[j]);
        L->snap_w[d] = 0;
        L->since_g[d] = L->since[d];
    }
    return 0;
}

int lrn_pull(learner *L, double t, size_t d)
{
    (void)t;
    double *w = own(L, d);
    if (!w)
        return DP_ENOMEM;
    memcpy(w, L->global, L->P * sizeof *w);
    L->read_ver[d] = L->version;
    return 0;
}

int lrn_lose(learner *L, double t, size_t d)
{
    (void)t;
    if (L->phead && L->phead[d]) /* its batches are lost with it */
        taken(L, d);
    L->cnt[d] = 0;
    L->since[d] = 0;
    L->since_g[d] = 0;
    if (L->w[d]) {
        memcpy(L->w[d], L->global, L->P * sizeof(double));
        L->read_ver[d] = L->version;
    }
    return 0;
}

int lrn_checkpoint(learner *L)
{
    if (!L->ckpt && !(L->ckpt = dp_malloc(L->P * sizeof(double))))
        return DP_ENOMEM;
    memcpy(L->ckpt, L->global, L->P * sizeof(double));
    return 0;
}

int lrn_restore(learner *L, double t, int epoch)
{
    int rc = flush(L, t, epoch, 0);
    if (rc)
        return rc;
    if (L->pdev) { /* every batch since is lost */
        memset(L->phead, 0, L->n * sizeof *L->phead);
        memset(L->ptail, 0, L->n * sizeof *L->ptail);
        L->pdev = L->n_prow = L->n_pb = 0;
    }
    if (L->ckpt)
        memcpy(L->global, L->ckpt, L->P * sizeof(double));
    else
        lm_init_weights(&L->m, L->global, mix(L->seed ^ 0x696e6974ULL));
    L->version++;
    for (size_t d = 0; d < L->n; d++) {
        L->cnt[d] = L->since[d] = L->since_g[d] = 0;
        if (L->w[d])
            memcpy(L->w[d], L->global, L->P * sizeof(double)), L->read_ver[d] = L->version;
    }
    return 0;
}

int lrn_resume(learner *L, double t, int epoch, const double *w, double consumed, double next_t,
               const double *tta)
{
    if (w) {
        memcpy(L->global, w, L->P * sizeof *w);
        L->version++; /* another model than the initial one's evaluation */
    }
    L->consumed = consumed;
    L->next_t = isnan(next_t) ? (L->c->eval_every_s > 0 ? t + L->c->eval_every_s : INFINITY) : next_t;
    L->n_ev = 0;
    L->reached = 0;
    for (size_t k = 0; k < L->c->n_targets; k++) {
        L->tta[k] = tta ? tta[k] : NAN;
        L->reached += !isnan(L->tta[k]);
    }
    int rc = flush(L, t, epoch, 0); /* the grid's instants while the job waited: its checkpoint's model */
    return rc ? rc : eval_at(L, t, epoch);
}

int lrn_flush(learner *L, double t, int epoch)
{
    return flush(L, t, epoch, 1);
}

double lrn_consumed(const learner *L)
{
    return L->consumed;
}

double lrn_next_eval(const learner *L)
{
    return L->next_t;
}

int lrn_epoch_end(learner *L, double t, int epoch)
{
    int rc = flush(L, t, epoch, 1);
    if (!rc && L->c->eval_epochs > 0 && epoch % L->c->eval_epochs == 0)
        rc = eval_at(L, t, epoch);
    return rc;
}

int lrn_finish(learner *L, double t, int epoch)
{
    int rc = flush(L, t, epoch, 1);
    if (!rc && (!L->n_ev || L->ev[L->n_ev - 1].t_s < t))
        rc = eval_at(L, t, epoch);
    return rc;
}

int lrn_done(const learner *L)
{
    return L->c->stop_at_target && L->c->n_targets && L->reached == L->c->n_targets;
}

size_t lrn_n_evals(const learner *L)
{
    return L->n_ev;
}

const lrn_eval *lrn_evals(const learner *L)
{
    return L->ev;
}

size_t lrn_n_targets(const learner *L)
{
    return L->c->n_targets;
}

double lrn_target(const learner *L, size_t k)
{
    return L->c->targets[k];
}

double lrn_tta(const learner *L, size_t k)
{
    return L->tta[k];
}

const double *lrn_weights(const learner *L, size_t *n_params)
{
    if (n_params)
        *n_params = L->P;
    return L->global;
}

long lrn_max_staleness(const learner *L)
{
    return L->max_stale;
}

const struct ldata *lrn_data(const learner *L)
{
    return L->D;
}

struct lmodel *lrn_model(learner *L)
{
    return &L->m;
}
