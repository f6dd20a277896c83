/* runtime_ff.c: the event loop, the epoch journal and the fast-forward of
 * a periodic world (runtime.c lists the runtime's files and the invariants). */
#include "log.h"
#include "policy.h"
#include "runtime_impl.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

/* ---- epoch boundaries: rebase and fast-forward ------------------------------
 *
 * In a periodic world (prt_periodic) a policy with a steady_state hook ends
 * an epoch, and starts the next from an event at now.  Once that handler
 * has returned, if nothing but events at now is pending (no batch,
 * collective or flow in flight), the engine's clock restarts at 0
 * (sim_rebase, exact) and base grows by the epoch's engine time: one
 * addition per epoch.  From there on, an epoch is the same deterministic
 * function of the state at its start, in engine time, whatever its base.
 *
 * The journal keeps the records of the current epoch (jent, engine times),
 * each compared with the previous epoch's entry it overwrites (on arrival;
 * a J_ACT, which grows while devices change at the same time, when closed).
 * At the boundary after epoch j: if epochs j-1 and j were journaled whole
 * (no unjournaled record, no network traffic), their journals, lengths and
 * event counts are equal bit for bit, and the state now (runtime and
 * policy) equals the state at the start of epoch j, then epoch j+1 would
 * repeat epoch j, and so would every later one: the journal is replayed for
 * the remaining epochs through the same record functions with each epoch's
 * base, which is the arithmetic of the full simulation, so the results are
 * the same bits.  Only the order across independent accumulators may
 * differ (replay_acts_by_device, ring_acc_apply), never the order of the
 * additions into one.  The run gets the statistic fast_forward (a = first
 * replayed epoch, b = last). */

static int ff_enabled = 1;
static policy_progress_fn progress_fn;
static void *progress_ctx;
static volatile sig_atomic_t *interrupt_flag;

void policy_set_fast_forward(int on)
{
    ff_enabled = on != 0;
}

/* Bytes of one epoch's journal (entries and device lists); an epoch with
 * more is simulated, never fast-forwarded. */
#define J_MAX ((size_t)64 << 20)

typedef struct ffj {
    jent *v; /* this epoch's entries; v[n, n_prev) still the previous epoch's */
    size_t n, n_prev, cap;
    int32_t *dv; /* J_ACT's devices as tokens (jrec_act), likewise: dv[nd, nd_prev) the previous epoch's */
    size_t nd, nd_prev, dcap;
    jent open_prev; /* the previous epoch's entry at v[n - 1] while v[n - 1] is an open J_ACT */
    int open;       /* v[n - 1] is a J_ACT still growing, compared when closed */
    int cd_open;    /* v[cd_at] is a J_CDONE still growing (its k), compared when closed */
    size_t cd_at;
    jent cd_prev;     /* the previous epoch's entry at v[cd_at] while open */
    int32_t last_d;   /* the open J_ACT's last device */
    int32_t tok_prev; /* the previous epoch's token at dv[nd - 1] while that token may still grow */
    int tok_open;     /* dv[nd - 1] is the open J_ACT's last token, compared when final */
    int last_kind;    /* of the last entry journaled */
    int n_ends;       /* J_EPOCH entries in this epoch's journal */
    int on;           /* journaling this epoch: it began at a rebase, nothing unjournaled since */
    int match;        /* every entry so far equals the previous epoch's */
    int prev_ok;      /* v[0, n_prev) was a whole epoch */
    double span_prev;
    uint64_t ev0, ev_prev;   /* events at this epoch's start; events of the previous epoch */
    unsigned char *st, *tmp; /* state at this epoch's start (st_n bytes, 0: unknown); scratch */
    size_t st_n, st_cap, tmp_cap;
    prt_sums *ep; /* the running records of the last epoch closed (epoch_close) */
    /* per link: bytes and busy seconds of the epoch just closed (net_fold),
     * and of the one before it */
    double *net_ep, *net_prev;
    size_t n_links;
    int dead;   /* journal given up for the run (too large, out of memory) */
    int replay; /* an epoch may be replayed in this run (ff_can_replay) */
} ffj;

/* A link trace that ends and holds its last value (no loop): the link is
 * constant once its last change has fired. */
static int holds(const trace *tr)
{
    return !tr || !tr->loop;
}

/* Every group's speed constant, every link constant or traced without a
 * loop; no noise, no failures, stragglers or outages: nothing in the world
 * draws random numbers, and once the link traces have ended nothing
 * depends on the absolute time.  Until then a boundary is not clean (the
 * engine holds their next changes, and sim_rebase refuses), so epochs are
 * simulated; from the first clean boundary after their ends the journal
 * runs and an epoch that repeats is fast-forwarded.  A speed trace stays
 * out: batch times are stretched over it at the engine's time, which a
 * rebase restarts.  A looping trace never ends (a period that divides the
 * epoch would need its phase in the compared state: not built). */
static int world_periodic(const scn_scenario *s)
{
    if (scn_is_dynamic(s))
        return 0;
    for (size_t i = 0; i < s->n_groups; i++) {
        const scn_group *g = &s->groups[i];
        if (g->count > 0 &&
            (g->noise_cv > 0 || g->speed_trace || !holds(g->link.up_trace) || !holds(g->link.down_trace)))
            return 0;
    }
    for (size_t i = 0; i < s->n_wan; i++)
        if (!holds(s->wan[i].trace))
            return 0;
    return 1;
}

/* Can a run of E epochs replay one?  An epoch replays at the boundary
 * after epoch j when epochs j - 1 and j were journaled and j < E; epoch 1
 * never is (journal_read), so from E = 4 on (epochs 2 and 3 compared,
 * epoch 4 replayed).  Below that a boundary only folds the running records
 * (the same arithmetic): the epoch's subtotals, the links' and the state's
 * snapshots are not kept (16 MB of C-ADP's 2 epochs at 10^5 devices). */
static int ff_can_replay(int E)
{
    return E >= 4;
}

void ff_init(prt *rt)
{
    /* one epoch has no boundary to fold at or replay from (its end ends
     * the run): nothing to keep, 144 MB at 10^6 devices */
    if (rt->ff || !rt->pdef || !rt->pdef->steady_state || rt->s->training.epochs < 2 ||
        !world_periodic(rt->s) || learn_on(rt) || /* the learner needs every update: no replay */
        rt->energy)                               /* energy: every interval is integrated as it happens */
        return;
    ffj *f = dp_calloc(1, sizeof *f);
    int replay = ff_can_replay(rt->s->training.epochs);
    prt_sums *tot = sums_new(rt->n), *ep = replay ? sums_new(rt->n) : NULL;
    if (f && replay) {
        f->replay = 1;
        f->n_links = net_link_count(world_net(rt->w));
        f->net_ep = dp_calloc(2 * f->n_links + 1, sizeof *f->net_ep);
        f->net_prev = dp_calloc(2 * f->n_links + 1, sizeof *f->net_prev);
    }
    if (!f || !tot ||
        (replay && (!f->net_ep || !f->net_prev || !ep))) { /* not periodic then: simulated as before */
        if (f) {
            dp_free(f->net_ep);
            dp_free(f->net_prev);
        }
        dp_free(f);
        sums_free(tot);
        sums_free(ep);
        return;
    }
    f->ep = ep;
    rt->ff = f;
    rt->tot = tot;
    rt->periodic = 1;
}

void ff_free(prt *rt)
{
    ffj *f = rt->ff;
    if (!f)
        return;
    dp_free(f->v);
    dp_free(f->dv);
    dp_free(f->st);
    dp_free(f->tmp);
    dp_free(f->net_ep);
    dp_free(f->net_prev);
    sums_free(f->ep);
    dp_free(f);
}

static int same_bits(double a, double b)
{
    return memcmp(&a, &b, sizeof a) == 0;
}

static void jdrop(ffj *f)
{
    f->dead = 1;
    f->on = 0;
    dp_free(f->v);
    dp_free(f->dv);
    f->v = NULL;
    f->dv = NULL;
    f->n = f->n_prev = f->cap = 0;
    f->nd = f->nd_prev = f->dcap = 0;
    f->open = 0;
    f->cd_open = 0;
    f->tok_open = 0;
}

/* Room for one more item of `size` bytes in *buf (cap items); 0 when the
 * journal would pass J_MAX or memory is out (the journal is dropped). */
static int jroom(ffj *f, void **buf, size_t *cap, size_t used, size_t size)
{
    if (used < *cap)
        return 1;
    size_t nc = *cap ? 2 * *cap : 4096;
    size_t total = (f->cap * sizeof *f->v + f->dcap * sizeof *f->dv) + (nc - *cap) * size;
    void *nb = total <= J_MAX ? dp_realloc(*buf, nc * size) : NULL;
    if (!nb) {
        jdrop(f);
        return 0;
    }
    *buf = nb;
    *cap = nc;
    return 1;
}

/* The token at dv[nd - 1] is final: compare it with the previous
 * epoch's token it overwrote. */
static void jtok_close(ffj *f)
{
    if (f->tok_open && (f->nd > f->nd_prev || f->dv[f->nd - 1] != f->tok_prev))
        f->match = 0;
    f->tok_open = 0;
}

/* The open J_ACT at v[n - 1] is complete: compare it (and its last token)
 * with the previous epoch's entry it overwrote. */
static void jclose(ffj *f)
{
    jtok_close(f);
    if (f->open && (f->n > f->n_prev || memcmp(&f->v[f->n - 1], &f->open_prev, sizeof(jent)) != 0))
        f->match = 0;
    f->open = 0;
}

/* The open J_CDONE at v[cd_at] is complete: compare it with the previous
 * epoch's entry it overwrote. */
static void jcd_close(ffj *f)
{
    if (f->cd_open && (f->cd_at >= f->n_prev || memcmp(&f->v[f->cd_at], &f->cd_prev, sizeof(jent)) != 0))
        f->match = 0;
    f->cd_open = 0;
}

/* Fold e into the journal's last entries instead of appending it, when
 * replaying it there is the same arithmetic (runtime_impl.h's jent):
 *  - a J_CSTART at the time of the open J_ACT of COMPUTE (a device set to
 *    compute, then its batch started): the J_ACT's k counts it.  Its
 *    replay, busy_advance_to(r) and computing += n, reads and writes
 *    neither a device's records nor the activities, and a second
 *    busy_advance_to(r) adds computing * 0;
 *  - a J_CDONE of device d + k + 1 after the open J_CDONE of devices
 *    d .. d + k with the same batch (n, step, start, end, part), with at
 *    most the open J_ACT between (devices of a group ending together and
 *    going to wait): its k grows.  compute_done_at touches device d's
 *    compute records and the shared sums (the same values added in the
 *    same order), never the activities the J_ACT replays.
 * Without symmetry the journal of DDP at 10^3 devices was 547,000
 * entries (21 MB) an epoch, two per device and batch.  1 if folded. */
static int jfold(ffj *f, const jent *e)
{
    jent *last = f->n ? &f->v[f->n - 1] : NULL;
    if (e->kind == J_CSTART && f->open && last->a == RES_ACT_COMPUTE && same_bits(last->r, e->r) &&
        last->k <= UINT32_MAX - (uint32_t)e->n) {
        last->k += (uint32_t)e->n;
        return 1;
    }
    if (e->kind != J_CDONE || !f->cd_open || !(f->cd_at + 1 == f->n || (f->cd_at + 2 == f->n && f->open)))
        return 0;
    jent *c = &f->v[f->cd_at];
    if (c->a != e->a || c->n != e->n || !same_bits(c->r, e->r) || !same_bits(c->r0, e->r0) ||
        !same_bits(c->v1, e->v1) || c->k >= INT32_MAX - 1 || (int64_t)c->d + c->k + 1 != e->d)
        return 0;
    c->k++;
    return 1;
}

/* Append e (compared with the previous epoch's entry it overwrites, bit
 * for bit, now or when closed for an open J_ACT or J_CDONE), or fold it
 * into the last entries (jfold). */
void jrec(prt *rt, jent e)
{
    ffj *f = rt->ff;
    if (!f || !f->on || jfold(f, &e))
        return;
    jclose(f);
    if (f->cd_open &&
        !(e.kind == J_ACT && f->cd_at + 1 == f->n)) /* a J_ACT right after it may grow with it */
        jcd_close(f);
    if (!jroom(f, (void **)&f->v, &f->cap, f->n, sizeof *f->v))
        return;
    jent *slot = &f->v[f->n];
    if (e.kind == J_ACT) {
        f->open = 1;
        f->open_prev = f->n < f->n_prev ? *slot : (jent){0};
    } else if (e.kind == J_CDONE) {
        f->cd_open = 1;
        f->cd_at = f->n;
        f->cd_prev = f->n < f->n_prev ? *slot : (jent){0};
    } else if (f->n >= f->n_prev || memcmp(slot, &e, sizeof e) != 0)
        f->match = 0;
    *slot = e;
    f->n++;
    f->last_kind = e.kind;
    f->n_ends += e.kind == J_EPOCH;
}

/* Device d changes to activity a now: appended to the open J_ACT when it
 * is for the same activity at the same time, else a new J_ACT.  A J_ACT's
 * devices are tokens from dv[d]: a device id (>= 0), then, when the ones
 * after it in the entry are the next ids, -k for the k of them (a
 * collective's members change in device order: 10^7 ids an epoch at 10^3
 * devices without symmetry are 10^4 tokens).  A token that may still grow
 * is compared when final (jtok_close). */
void jrec_act(prt *rt, size_t d, res_activity a)
{
    ffj *f = rt->ff;
    if (!f || !f->on)
        return;
    double now = sim_now(rt->e);
    jent *last = f->open ? &f->v[f->n - 1] : NULL;
    if (!last || last->a != (uint8_t)a || !same_bits(last->r, now)) {
        jrec(rt, (jent){.kind = J_ACT, .a = (uint8_t)a, .d = (int32_t)f->nd, .r = now});
        if (!f->on)
            return;
        last = &f->v[f->n - 1];
    }
    int32_t id = (int32_t)d;
    if (last->n > 0 && id == f->last_d + 1 && f->dv[f->nd - 1] > 1 - INT32_MAX) {
        if (f->dv[f->nd - 1] < 0) {
            f->dv[f->nd - 1]--; /* the run grows */
        } else {
            if (!jroom(f, (void **)&f->dv, &f->dcap, f->nd, sizeof *f->dv))
                return;
            jtok_close(f);
            f->tok_prev = f->nd < f->nd_prev ? f->dv[f->nd] : 0;
            f->tok_open = 1;
            f->dv[f->nd++] = -1;
        }
    } else {
        if (!jroom(f, (void **)&f->dv, &f->dcap, f->nd, sizeof *f->dv))
            return;
        jtok_close(f);
        if (f->nd >= f->nd_prev || f->dv[f->nd] != id)
            f->match = 0;
        f->dv[f->nd++] = id; /* final: the next id of a run goes into a token after it */
    }
    f->last_d = id;
    last->n++;
}

/* The run of consecutive device ids at token *p of a J_ACT with `left`
 * devices still to read: its first id into *first, its length returned;
 * *p moves past it. */
static int32_t jrun(const int32_t *dv, size_t *p, int32_t *first, int32_t left)
{
    *first = dv[(*p)++];
    if (left > 1 && dv[*p] < 0)
        return 1 - dv[(*p)++];
    return 1;
}

void jbreak(prt *rt)
{
    if (rt->ff)
        rt->ff->on = 0;
}

static int put(unsigned char **buf, size_t *cap, size_t *off, const void *src, size_t len)
{
    if (*off + len > *cap) {
        size_t nc = *cap ? *cap : 256;
        while (nc < *off + len)
            nc *= 2;
        unsigned char *nb = dp_realloc(*buf, nc);
        if (!nb)
            return DP_ENOMEM;
        *buf = nb;
        *cap = nc;
    }
    memcpy(*buf + *off, src, len);
    *off += len;
    return 0;
}

/* The state that decides the run's future at a boundary, into f->tmp:
 * the runtime's (per device: share, left, activity, collectives, part of a
 * batch, transfers pending; what is in flight; pending events) then the
 * policy's; the policy's alone when no epoch can replay (nothing compares
 * it).  Its size, 0 when the policy cannot tell, (size_t)-1 when out of
 * memory. */
static size_t state_now(prt *rt)
{
    ffj *f = rt->ff;
    size_t off = 0, n = rt->n, pend = sim_pending(rt->e);
    int ints[4] = {TL(rt)->computing != 0, rt->coll_active, rt->analytic_approx, 0};
    if (f->replay && (put(&f->tmp, &f->tmp_cap, &off, rt->share, n * sizeof *rt->share) ||
                      put(&f->tmp, &f->tmp_cap, &off, rt->left, n * sizeof *rt->left) ||
                      put(&f->tmp, &f->tmp_cap, &off, rt->act, n * sizeof *rt->act) ||
                      put(&f->tmp, &f->tmp_cap, &off, rt->coll_dev, n * sizeof *rt->coll_dev) ||
                      put(&f->tmp, &f->tmp_cap, &off, rt->part_done, n * sizeof *rt->part_done) ||
                      put(&f->tmp, &f->tmp_cap, &off, rt->pending, n * sizeof *rt->pending) ||
                      put(&f->tmp, &f->tmp_cap, &off, ints, sizeof ints) ||
                      put(&f->tmp, &f->tmp_cap, &off, &pend, sizeof pend) ||
                      put(&f->tmp, &f->tmp_cap, &off, &rt->gen, sizeof rt->gen)))
        return (size_t)-1;
    for (;;) {
        size_t room = f->tmp_cap - off;
        size_t k = rt->pdef->steady_state(rt, rt->popts, f->tmp ? f->tmp + off : NULL, room);
        if (k == 0)
            return 0;
        if (k <= room)
            return off + k;
        size_t need = off + k;
        unsigned char *nb = dp_realloc(f->tmp, need);
        if (!nb)
            return (size_t)-1;
        f->tmp = nb;
        f->tmp_cap = need;
    }
}

/* A clean boundary at engine time span, where the engine restarts at 0:
 * every device's current interval closes at span (and goes on from 0), the
 * running records fold into rt->tot, and into *ep too when given (the
 * epoch's subtotals). */
static void epoch_close(prt *rt, double span, prt_sums *ep)
{
    timeline *tl = TL(rt);
    sym_flush(rt); /* the fold reads every device's records */
    for (size_t d = 0; d < rt->n; d++) {
        res_activity cur = rt->act[d];
        double since = rt->act_since[d], *S = rt->act_time + d * RES_ACT_COUNT;
        if (tl->coarse && d < tl->ndev)
            tl_edges(rt, d, cur, since, span, S);
        S[cur] += span - since;
        rt->act_since[d] = 0;
    }
    busy_advance_to(rt, span);
    tl->busy_t = 0;
    prt_sums run = running(rt);
    if (ep)
        sums_add(ep, &run, rt->n, 1);
    sums_add(rt->tot, &run, rt->n, 0);
    running_zero(rt);
}

/* One journaled epoch's activity intervals per timeline device, for the
 * bin edges inside a replayed epoch.  A device whose intervals are its
 * predecessor's (the same activity at the epoch's start, then the same
 * changes at the same times: the timeline's identical devices, 64 copies
 * of 10^4 intervals at 10^3 devices) shares its slot, slot[d]: slot s's
 * intervals are k in [off[s], off[s + 1]) in time order, the last ending
 * at the epoch's end; interval k ran activity a[k] from the previous one's
 * end (0 for the first) to t[k].  The running times at the start of
 * intervals 0, DC_EVERY, 2 DC_EVERY, ... are kept (chk, from chk_off[s]);
 * at any other interval they are added up from the one before it, with the
 * simulation's additions in its order (dc_running). */
#define DC_EVERY 64

typedef struct dev_changes {
    size_t *slot, *off, *chk_off;
    uint64_t *h; /* while built: per device, a hash of its changes */
    size_t *pos; /* while built: per device, its changes counted or filled */
    int differ;  /* while built: a device's changes are not its slot's */
    double *t, *chk;
    uint8_t *a;
    double *done; /* per J_CDONE of the journal: start, end (engine times), FLOP, devices */
    size_t n_done;
} dev_changes;

static void dev_changes_free(dev_changes *c)
{
    dp_free(c->slot);
    dp_free(c->h);
    dp_free(c->pos);
    dp_free(c->off);
    dp_free(c->chk_off);
    dp_free(c->t);
    dp_free(c->chk);
    dp_free(c->a);
    dp_free(c->done);
}

static inline double dc_since(const dev_changes *c, size_t s, size_t k)
{
    return k == c->off[s] ? 0 : c->t[k - 1];
}

/* Slot s's running times at the start of its interval k into S. */
static void dc_running(const dev_changes *c, size_t s, size_t k, double *S)
{
    size_t i = k - c->off[s], j = c->off[s] + i / DC_EVERY * DC_EVERY;
    memcpy(S, c->chk + (c->chk_off[s] + i / DC_EVERY) * RES_ACT_COUNT, RES_ACT_COUNT * sizeof *S);
    for (; j < k; j++)
        S[c->a[j]] += c->t[j] - dc_since(c, s, j);
}

/* The batches' FLOPS from the journal's J_CDONE entries, in journal order;
 * one that repeats the one before it (the same times and FLOP: devices of
 * one group ending together, without symmetry) adds its devices to it,
 * which prt_add_flops_k adds the same way.  0 or DP_ENOMEM. */
static int done_build(prt *rt, dev_changes *c)
{
    ffj *f = rt->ff;
    size_t nd = 0;
    for (size_t i = 0; i < f->n; i++)
        nd += f->v[i].kind == J_CDONE;
    if (!(c->done = dp_calloc(4 * nd + 1, sizeof *c->done)))
        return DP_ENOMEM;
    for (size_t i = 0; i < f->n; i++) {
        const jent *e = &f->v[i];
        if (e->kind != J_CDONE)
            continue;
        double x[4] = {e->r0, e->r, batch_flops(rt, e->n, e->v1), 0};
        for (uint32_t j = 0; j <= e->k; j++)
            x[3] += (double)sym_mult(rt, (size_t)e->d + j); /* the devices it stands for */
        double *last = c->n_done ? c->done + 4 * (c->n_done - 1) : NULL;
        if (last && memcmp(last, x, 3 * sizeof *x) == 0 && last[3] + x[3] <= 0x1p52)
            last[3] += x[3];
        else
            memcpy(c->done + 4 * c->n_done++, x, sizeof x);
    }
    if (c->n_done < nd) { /* give back what the merges saved */
        double *nb = dp_realloc(c->done, (4 * c->n_done + 1) * sizeof *c->done);
        if (nb)
            c->done = nb;
    }
    return 0;
}

/* Calls fn(c, d0, d1, e) for each run [d0, d1) of timeline devices of each
 * J_ACT entry e, in journal order. */
static void act_runs(const ffj *f, size_t nt, dev_changes *c,
                     void (*fn)(dev_changes *, size_t, size_t, const jent *))
{
    for (size_t i = 0; i < f->n; i++) {
        const jent *e = &f->v[i];
        if (e->kind != J_ACT)
            continue;
        size_t p = (size_t)e->d;
        for (int32_t left = e->n, d0; left > 0;) {
            int32_t k = jrun(f->dv, &p, &d0, left);
            left -= k;
            if ((size_t)d0 < nt)
                fn(c, (size_t)d0, (size_t)d0 + (size_t)k < nt ? (size_t)d0 + (size_t)k : nt, e);
        }
    }
}

/* act_runs' callbacks: each device's changes counted and hashed (pos, h);
 * then filled (t, a) by the first device of each slot and checked by the
 * others (exact: a hash that matched by chance only costs the fast path,
 * differ). */
static void run_hash(dev_changes *c, size_t d0, size_t d1, const jent *e)
{
    uint64_t r;
    memcpy(&r, &e->r, sizeof r);
    for (size_t d = d0; d < d1; d++) {
        c->pos[d]++;
        c->h[d] = (c->h[d] ^ r ^ ((uint64_t)e->a << 60)) * 0x100000001b3u + (c->h[d] >> 29);
    }
}

static void run_fill(dev_changes *c, size_t d0, size_t d1, const jent *e)
{
    for (size_t d = d0; d < d1; d++) {
        size_t s = c->slot[d], at = c->off[s] + c->pos[d]++;
        if (d == 0 || c->slot[d - 1] != s) {
            c->t[at] = e->r;
            c->a[at] = e->a;
        } else if (!same_bits(c->t[at], e->r) || c->a[at] != e->a) {
            c->differ = 1;
        }
    }
}

/* From the journal (the epoch just closed, of span engine seconds; each
 * device's activity now is the one it had at the epoch's start).  0,
 * DP_ENOMEM, or 1 when a device's subtotals would not be the epoch's
 * (never expected: the caller then replays in journal order). */
static int dev_changes_build(prt *rt, dev_changes *c, double span)
{
    ffj *f = rt->ff;
    size_t nt = TL(rt)->ndev;
    *c = (dev_changes){0};
    c->slot = dp_calloc(nt + 1, sizeof *c->slot);
    c->h = dp_calloc(nt + 1, sizeof *c->h);
    c->pos = dp_calloc(nt + 1, sizeof *c->pos);
    c->off = dp_calloc(nt + 1, sizeof *c->off);
    c->chk_off = dp_calloc(nt + 1, sizeof *c->chk_off);
    if (!c->slot || !c->h || !c->pos || !c->off || !c->chk_off || done_build(rt, c))
        return DP_ENOMEM;
    /* the slots: device d shares d - 1's when its changes look the same */
    act_runs(f, nt, c, run_hash);
    size_t ns = 0, n_prev = 0;
    for (size_t d = 0; d < nt; d++) {
        size_t n = c->pos[d];
        if (d == 0 || rt->act[d] != rt->act[d - 1] || c->h[d] != c->h[d - 1] || n != n_prev) {
            size_t m = n + 1; /* the epoch's end */
            c->chk_off[ns + 1] = c->chk_off[ns] + (m + DC_EVERY - 1) / DC_EVERY;
            c->off[ns + 1] = c->off[ns] + m;
            ns++;
        }
        c->slot[d] = ns - 1;
        c->pos[d] = 0;
        n_prev = n;
    }
    size_t m = c->off[ns], n_chk = c->chk_off[ns];
    c->t = dp_calloc(m + 1, sizeof *c->t);
    c->a = dp_calloc(m + 1, sizeof *c->a);
    c->chk = dp_calloc((n_chk + 1) * RES_ACT_COUNT, sizeof *c->chk);
    if (!c->t || !c->a || !c->chk)
        return DP_ENOMEM;
    /* first each interval's end and the activity after it */
    act_runs(f, nt, c, run_fill);
    dp_free(c->h);
    dp_free(c->pos);
    c->h = NULL;
    c->pos = NULL;
    if (c->differ)
        return 1;
    /* then, slot by slot, the activity during each interval and the
     * running times as the simulation added them, which must be each of
     * its devices' */
    double S[RES_ACT_COUNT];
    for (size_t d = 0; d < nt; d++) {
        size_t s = c->slot[d];
        if (d > 0 && c->slot[d - 1] == s) {
            if (memcmp(S, f->ep->act_time + d * RES_ACT_COUNT, sizeof S) != 0)
                return 1;
            continue;
        }
        size_t end = c->off[s + 1] - 1;
        c->t[end] = span;
        memset(S, 0, sizeof S);
        res_activity cur = rt->act[d];
        for (size_t k = c->off[s]; k <= end; k++) {
            res_activity next = k < end ? (res_activity)c->a[k] : cur;
            if ((k - c->off[s]) % DC_EVERY == 0)
                memcpy(c->chk + (c->chk_off[s] + (k - c->off[s]) / DC_EVERY) * RES_ACT_COUNT, S, sizeof S);
            c->a[k] = (uint8_t)cur;
            S[cur] += c->t[k] - dc_since(c, s, k);
            cur = next;
        }
        if (cur != rt->act[d] || memcmp(S, f->ep->act_time + d * RES_ACT_COUNT, sizeof S) != 0)
            return 1;
    }
    return 0;
}

/* The bin edges of timeline device d inside a replayed epoch of span
 * engine seconds: each from the interval that holds it (the first ending
 * at or after it, as in the simulation, where an interval's edges are
 * computed when it ends), found by bisection. */
static void replay_edges(prt *rt, const dev_changes *c, size_t d, double span)
{
    timeline *tl = TL(rt);
    size_t s = c->slot[d], lo = c->off[s], hi = c->off[s + 1];
    double S[RES_ACT_COUNT];
    for (;;) {
        if (tl->next_edge[d] > TL_BINS)
            tl_widen(tl);
        double xr = (double)tl->next_edge[d] * tl->res_s - rt->base;
        if (xr > span)
            return;
        size_t l = lo, h = hi - 1; /* c->t[hi - 1] == span >= xr */
        while (l < h) {
            size_t mid = l + (h - l) / 2;
            if (c->t[mid] >= xr)
                h = mid;
            else
                l = mid + 1;
        }
        dc_running(c, s, l, S);
        tl_edges(rt, d, (res_activity)c->a[l], dc_since(c, s, l), c->t[l], S);
        lo = l + 1 < hi ? l + 1 : hi - 1;
    }
}

/* Replay the journal v[0, n) (one epoch of `span` engine seconds and `ev`
 * events, just closed) for every epoch left, each with its own base.  With
 * histograms (and no segment hook) an epoch costs its bin edges, its FLOPS
 * bins and one addition per record (the epoch's subtotals, f->ep);
 * otherwise every record is replayed in journal order, as simulated. */
static void ff_replay(prt *rt, double span, uint64_t ev)
{
    ffj *f = rt->ff;
    timeline *tl = TL(rt);
    int first = rt->epoch;
    dev_changes ch = {0};
    int by_sums = 0, built = 0;
    const int32_t *dv = f->dv;
    while (!rt->finished && !rt->failed) {
        double base = rt->base;
        if (!built && tl->coarse &&
            !rt_segment_fn) { /* histograms on (perhaps since the last epoch replayed) */
            built = 1;
            int rc = dev_changes_build(rt, &ch, span);
            if (rc == DP_ENOMEM) {
                fail_oom(rt);
                break;
            }
            by_sums = rc == 0;
        }
        if (by_sums) {
            for (size_t d = 0; d < tl->ndev; d++)
                replay_edges(rt, &ch, d, span);
            /* the batches' FLOPS bins and the epoch's end (the journal's last entry) */
            for (size_t k = 0; k < ch.n_done; k++) {
                const double *x = ch.done + 4 * k;
                prt_add_flops_k(rt, base + x[0], base + x[1], x[2], (size_t)x[3]);
            }
            end_epoch_at(rt, base + f->v[f->n - 1].r);
            sums_add(rt->tot, f->ep, rt->n, 0);
        }
        for (size_t i = 0; i < f->n && !by_sums && !rt->failed; i++) {
            const jent *e = &f->v[i];
            switch (e->kind) {
            case J_ACT: {
                size_t p = (size_t)e->d;
                for (int32_t left = e->n, d0; left > 0;) {
                    int32_t k = jrun(dv, &p, &d0, left);
                    for (int32_t j = 0; j < k; j++)
                        set_act_at(rt, (size_t)(d0 + j), (res_activity)e->a, e->r);
                    left -= k;
                }
                if (e->k) { /* its J_CSTARTs (jfold) */
                    busy_advance_to(rt, e->r);
                    tl->computing += e->k;
                }
                break;
            }
            case J_CSTART:
                busy_advance_to(rt, e->r);
                tl->computing += (size_t)e->n; /* the devices it stands for */
                break;
            case J_CDONE:
                for (uint32_t j = 0; j <= e->k; j++)
                    compute_done_at(rt, (size_t)e->d + j, e->r0, e->r, e->n, e->v1, e->a, base);
                break;
            case J_RING:
                coll_ring_account(rt, e->v1, e->n);
                break;
            case J_COLL:
                rt->coll_bytes[e->d] += e->v1;
                rt->coll_busy_s[e->d] += e->r0;
                rt->coll_recv_s[e->n] += e->r0;
                break;
            case J_SRV:
                rt->server_bytes[e->d] += e->v1;
                break;
            default: /* J_EPOCH, the journal's last entry */
                end_epoch_at(rt, base + e->r);
                break;
            }
        }
        if (!by_sums)
            epoch_close(rt, span, NULL);
        net_fold_add(world_net(rt->w), f->net_ep);
        rt->ff_events += ev;
        rt->base = base + span; /* the next epoch's origin; after the last, Ttotal */
        tl->gen++;
        /* millions of epochs replay for seconds: progress and interrupts as
         * in the event loop, every 1024 epochs */
        if (((rt->epoch - first) & 1023) == 1023 && !rt->finished && !rt->failed) {
            if (progress_fn) {
                double work = (double)rt->s->training.epochs;
                progress_fn(progress_ctx, rt->base, prt_events(rt) + rt->ff_events,
                            work > 0 ? (rt->epoch - 1) / work : 0);
            }
            if (policy_interrupted())
                prt_fail(rt, DP_ERUN,
                         "interrupted at simulated t = %.6g s (replaying epoch %d); this run was not stored",
                         rt->base, rt->epoch);
        }
    }
    dev_changes_free(&ch);
    int last = rt->s->training.epochs;
    DP_LOG(LOG_POLICY, LOG_INFO, rt->base, "%s: fast_forward: epochs %d-%d repeat epoch %d", rt->r->policy,
           first, last, first - 1);
    if (!rt->failed)
        prt_stat(rt, "fast_forward", RES_SCOPE_RUN, first, last, last - first + 1);
    if (progress_fn)
        progress_fn(progress_ctx, rt->base, prt_events(rt) + rt->ff_events, 1.0);
}

/* Is epoch j (of E) worth journaling?  Its journal is read at the boundary
 * after it, against epoch j - 1's (from epoch 3 on: epoch 1 starts at no
 * rebase, so is never journaled), or at the boundary after j + 1, and only
 * when an epoch is left to replay.  Journaling the others changes no
 * result, but the last epoch of a 2-epoch run of DDP on 10^3 devices
 * journaled 50 MB. */
static int journal_read(int j, int E)
{
    return j + 1 < E || (j >= 3 && j < E);
}

/* After the handler that ended an epoch: rebase if the boundary is clean,
 * then fast-forward or start journaling the new epoch.  0, or DP_ENOMEM
 * (the run failed). */
static int ff_boundary(prt *rt)
{
    rt->boundary = 0;
    ffj *f = rt->ff;
    double span = sim_now(rt->e);
    uint64_t ev = prt_events(rt);
    int whole = f->on && f->n > 0 && f->last_kind == J_EPOCH && f->n_ends == 1;
    net *nt = world_net(rt->w);
    size_t sn = 0;
    /* one job of many (its own clock domain, engine_group.h): its own
     * flows only, and no world trace pending (a single run's engine would
     * hold its next change and refuse the rebase) */
    int clean = TL(rt)->computing == 0 && rt->coll_active == 0 &&
                (rt->shared ? net_dom_flows(nt) == 0 && net_trace_events(nt) == 0
                            : net_flows_active(nt) == 0 && net_flows_pending(nt) == 0);
    if (clean && (sn = state_now(rt)) == (size_t)-1) {
        fail_oom(rt);
        return DP_ENOMEM;
    }
    if (!clean || sn == 0 || sim_rebase(rt->e)) {
        /* not a clean boundary: time goes on from here, unjournaled */
        f->on = 0;
        f->prev_ok = 0;
        f->st_n = 0;
        return 0;
    }
    if (rt->shared)
        net_dom_rebased(nt, span);
    epoch_close(rt, span, f->ep);
    double *np = f->net_prev;
    f->net_prev = f->net_ep;
    f->net_ep = np;
    net_fold(nt, f->net_ep); /* no flow is active: a clean boundary */
    rt->base += span;
    TL(rt)->gen++; /* edges' engine times move with the base */
    int repeats = f->replay && whole && f->prev_ok && f->match && f->n == f->n_prev && f->nd == f->nd_prev &&
                  same_bits(span, f->span_prev) && ev - f->ev0 == f->ev_prev && sn == f->st_n &&
                  memcmp(f->tmp, f->st, sn) == 0 &&
                  memcmp(f->net_ep, f->net_prev, 2 * f->n_links * sizeof *f->net_ep) == 0;
    /* not for one job of many: other jobs on shared links could change
     * what an epoch does; its clock restarts, it is simulated */
    if (repeats && ff_enabled && !rt->shared) {
        /* v holds the epoch just ended; base is already the next one's origin */
        ff_replay(rt, span, ev - f->ev0);
        return rt->failed ? DP_ENOMEM : 0;
    }
    f->prev_ok = whole;
    f->n_prev = whole ? f->n : 0;
    f->nd_prev = whole ? f->nd : 0;
    f->span_prev = span;
    f->ev_prev = ev - f->ev0;
    unsigned char *t = f->st;
    size_t tc = f->st_cap;
    f->st = f->tmp;
    f->st_cap = f->tmp_cap;
    f->st_n = sn;
    f->tmp = t;
    f->tmp_cap = tc;
    f->n = 0;
    f->nd = 0;
    f->open = 0;
    f->cd_open = 0;
    f->tok_open = 0;
    f->n_ends = 0;
    f->match = 1;
    f->on =
        !f->dead && !rt->shared && journal_read(rt->epoch, rt->s->training.epochs); /* shared: no replay */
    f->ev0 = ev;
    return 0;
}

/* ---- run and results ---------------------------------------------------------- */

void policy_set_interrupt(volatile sig_atomic_t *flag)
{
    interrupt_flag = flag;
}

int policy_interrupted(void)
{
    return interrupt_flag && *interrupt_flag;
}

void policy_set_progress(policy_progress_fn fn, void *ctx)
{
    progress_fn = fn;
    progress_ctx = ctx;
}

/* A world with a looping trace never runs out of events, so "nothing left
 * to happen" below never fires when a flow sits on a link that dropped to 0
 * for good (a trace that ends at 0) while another link's trace keeps
 * changing.  When the engine holds nothing but trace changes, no device
 * computes and every flow crosses such a dead link, nothing can ever move
 * again: the run ends with the stall message instead of running to the
 * event limit.  Checked with the progress line, every 4096 events.  A
 * change on an idle link queues a re-share at its instant (net_share.c,
 * reshare_light), so half the checks of a world whose only live trace is
 * such a link's see one: it counts with the trace changes (missing it,
 * a dead download beside an idle looping upload ran to the limit). */
static int stalled_for_good(prt *rt)
{
    net *n = world_net(rt->w);
    char dead[256];
    if (rt->finished || rt->failed || TL(rt)->computing > 0 || net_trace_events(n) == 0 ||
        sim_pending(rt->e) != net_trace_events(n) + (size_t)net_reshare_pending(n) ||
        !net_stuck_for_good(n, dead, sizeof dead))
        return 0;
    prt_fail(rt, DP_ERUN,
             "simulation stalled at t = %.6g s with %zu transfer(s) unfinished: zero capacity with no "
             "recovery on %s (its trace stays at 0; only other links' traces still change)",
             abs_now(rt), net_flows_active(n), dead);
    return 1;
}

/* The share of the run done, for the progress line: samples processed over
 * samples to process, held inside the current epoch's band.  Work redone
 * after a device left (lbbsp, availability) is processed twice, so the raw
 * ratio alone can pass 100% (234% was seen); the band keeps the figure
 * honest without an O(devices) sum. */
static double progress_of(const prt *rt)
{
    int epochs = rt->s->training.epochs;
    double work = (double)rt->s->dataset.samples * epochs;
    if (!(work > 0) || epochs <= 0)
        return 0;
    double lo = (double)(rt->epoch - 1) / epochs, hi = (double)rt->epoch / epochs;
    double f = rt->samples_done / work;
    return f < lo ? lo : f > hi ? (hi > 1 ? 1 : hi) : f;
}

int prt_boundary(prt *rt)
{
    if (!rt->boundary || rt->finished || rt->failed)
        return 0;
    return ff_boundary(rt);
}

int prt_run(prt *rt)
{
    ff_init(rt);
    /* Polling the flag every 4096 events keeps the check off the hot path
     * and still stops within microseconds of host time. */
    uint64_t k = 0;
    while (!rt->finished && !rt->failed && sim_step(rt->e)) {
        DP_LOG(LOG_ENGINE, LOG_TRACE, abs_now(rt), "event %llu done, %zu pending",
               (unsigned long long)prt_events(rt), sim_pending(rt->e));
        if (rt->boundary && !rt->finished && !rt->failed && ff_boundary(rt))
            break; /* out of memory (the run failed) */
        if ((++k & 4095) != 0)
            continue;
        if (progress_fn)
            progress_fn(progress_ctx, abs_now(rt), prt_events(rt), progress_of(rt));
        if (policy_interrupted())
            return dp_err_set(rt->err, DP_ERUN,
                              "interrupted at simulated t = %.6g s; this run was not stored", abs_now(rt));
        /* The network stalled for good (out of memory): in a world whose
         * devices keep failing and recovering the queue never empties, so
         * the run would go on to the event limit. */
        if (net_out_of_memory(world_net(rt->w)))
            break;
        if (stalled_for_good(rt))
            return rt->err ? rt->err->code : DP_ERUN;
        if (prt_events(rt) >= PRT_MAX_EVENTS)
            return dp_err_set(rt->err, DP_ERUN,
                              "stopped after %llu events (the limit on events per run) at simulated "
                              "t = %.6g s of a run this large; use fewer epochs or devices, or analytic "
                              "collectives",
                              (unsigned long long)prt_events(rt), abs_now(rt));
    }
    if (rt->failed)
        return rt->err ? rt->err->code : DP_ERUN;
    if (sim_error(rt->e)) /* e.g. a trace change or a completion could not be scheduled */
        return dp_err_set(rt->err, DP_ERUN,
                          "stopped at simulated t = %.6g s: an event could not be scheduled (%s); "
                          "this run was not stored",
                          abs_now(rt), sim_error(rt->e) == DP_ENOMEM ? "out of memory" : "invalid time");
    if (!rt->finished && net_out_of_memory(world_net(rt->w)))
        return dp_err_set(rt->err, DP_ENOMEM,
                          "stopped at simulated t = %.6g s: out of memory computing the network's shares; "
                          "this run was not stored",
                          abs_now(rt));
    if (!rt->finished) {
        net *n = world_net(rt->w);
        char stuck[512] = "";
        size_t len = 0;
        for (size_t l = 0; l < net_link_count(n) && len < sizeof stuck - 80; l++)
            if (net_link_capacity(n, (int)l) == 0)
                len += (size_t)snprintf(stuck + len, sizeof stuck - len, "%s%s", len ? ", " : "",
                                        net_link_name(n, (int)l));
        return dp_err_set(rt->err, DP_ERUN,
                          "simulation stalled at t = %.6g s with %zu transfer(s) unfinished: %s%s",
                          abs_now(rt), net_flows_active(n) + net_flows_pending(n),
                          len ? "zero capacity with no recovery on " : "nothing left to happen", stuck);
    }
    /* Ttraining = T - Tsend of two absolute doubles: when it is under 2^20
     * steps of T (e.g. 1 s after a Tsend of 8e9 s), it, the utilisation and
     * TFLOPS have lost most of their digits (or are 0).  Refused. */
    double T = abs_now(rt), step = nextafter(T, INFINITY) - T;
    if (rt->tsend_s > 0 && T - rt->tsend_s < ldexp(step, 20))
        return dp_err_set(
            rt->err, DP_ERUN,
            "training took %.3g s after Tsend = %.6g s, where a time is resolved to %.2g s only: "
            "Ttraining, utilisation and TFLOPS would lose most of their digits; shorten the "
            "transfers (slow links, huge samples) or scale the scenario's times; this run was "
            "not stored",
            T - rt->tsend_s, rt->tsend_s, step);
    return 0;
}
