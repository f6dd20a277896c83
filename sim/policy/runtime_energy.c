/* runtime_energy.c: each device's energy and battery (docs/MODEL.md
 * section 11; scenarios/README.md "Energy").
 *
 * A device with `power:` draws the power of its current activity (the
 * timeline's: computing, sending, receiving data or the model, waiting =
 * idle) while it is up, nothing while it is down; computing, it also draws
 * its radio's while a transfer of its own is under way (world_on_flow:
 * transmit power sending, receive power receiving).  Its energy is that
 * power integrated over the run, piecewise: the runtime calls energy_switch
 * at every activity change and energy_updown at every change of state, and
 * the world on_flow at a transfer's start and end, so a
 * transfer slowed by sharing a link keeps its device in `send` longer and
 * costs more.  A battery starts at `charge` x capacity; when it reaches
 * its cutoff (an event at the exact instant its current draw empties it)
 * the device goes down (world_dev_set), and, with a charger, comes back
 * when charged to `resume` at the charger's rate (plugged in at once;
 * Bernoulli, plugged in at each `every` with probability p, from its own
 * seeded stream; or while a trace says 1).  A device charges only while
 * down.
 *
 * Worlds with energy are simulated event by event (runtime_ff.c: no epoch
 * replay), so every interval passes through here.
 */
#include "runtime_energy.h"

#include "runtime_impl.h"

#include <gsl/gsl_rng.h>
#include <math.h>

#include "trace.h"

typedef struct en_dev {
    prt *rt;
    size_t d;
    const scn_energy *cfg;
    double j[RES_ACT_COUNT]; /* joules drawn in each activity */
    double t;                /* absolute time the records are brought up to */
    int up;
    double charge_j; /* battery: energy now */
    double cutoff_j; /* leaves at this */
    uint64_t ev;     /* battery: the pending empty / charged / plug-in check */
    int plugged;     /* charging */
    int drops;       /* times it left at its cutoff */
    double first_drop_s;
    gsl_rng *rng; /* Bernoulli charger */
    int tx, rx;   /* transfers it sends, receives now (world_on_flow) */
} en_dev;

struct prt_energy {
    en_dev *dev;
    size_t n;
    int any_battery;
};

static double power_of(const scn_energy *e, res_activity a)
{
    switch (a) {
    case RES_ACT_COMPUTE:
        return e->compute_w;
    case RES_ACT_SEND:
        return e->transmit_w;
    case RES_ACT_RECV_DATA:
    case RES_ACT_RECV_MODEL:
        return e->receive_w;
    default:
        return e->idle_w;
    }
}

/* While computing, the radio's power adds to the processor's: transmit
 * power while a transfer leaves the device, receive power while one
 * arrives (both when both).  In the other activities the timeline's one
 * power holds (a send is already at transmit power). */
static double radio_w(const en_dev *v, res_activity a)
{
    if (a != RES_ACT_COMPUTE)
        return 0;
    return (v->tx > 0 ? v->cfg->transmit_w : 0) + (v->rx > 0 ? v->cfg->receive_w : 0);
}

static double power_now(const en_dev *v, res_activity a)
{
    return power_of(v->cfg, a) + radio_w(v, a);
}

/* Bring device v's records to absolute time now, in activity a: up, it
 * draws its activity's power (and its radio's, computing); down and
 * plugged in, it charges. */
static void accrue(en_dev *v, res_activity a, double now)
{
    double dt = now - v->t;
    v->t = now;
    if (!(dt > 0))
        return;
    if (!v->up) {
        if (v->plugged)
            v->charge_j = fmin(v->charge_j + v->cfg->charge_w * dt, v->cfg->capacity_j);
        return;
    }
    double e = power_of(v->cfg, a) * dt;
    v->j[a] += e;
    if (radio_w(v, a) > 0) { /* overlapped with compute: the radio's share in its own activity */
        double tx = v->tx > 0 ? v->cfg->transmit_w * dt : 0, rx = v->rx > 0 ? v->cfg->receive_w * dt : 0;
        v->j[RES_ACT_SEND] += tx;
        v->j[RES_ACT_RECV_DATA] += rx;
        e += tx + rx;
    }
    if (v->cfg->battery)
        v->charge_j = fmax(v->charge_j - e, v->cutoff_j);
}

static void on_battery(sim_engine *e, void *ctx, uint64_t id);

static void unschedule(en_dev *v)
{
    if (v->ev)
        sim_cancel(v->rt->e, v->ev);
    v->ev = 0;
}

static void schedule_at(en_dev *v, double t)
{
    v->ev = sim_at(v->rt->e, t, on_battery, v);
    if (!v->ev)
        fail_oom(v->rt);
}

/* A battery device up, drawing p: its cutoff's instant. */
static void plan_empty(en_dev *v, double now, double p)
{
    unschedule(v);
    if (!v->up || !(p > 0))
        return;
    schedule_at(v, now + (v->charge_j - v->cutoff_j) / p);
}

/* A battery device down, its charge up to now: whether it is plugged in
 * now, and its next event (charged; a Bernoulli check; the trace's next
 * change), which is returned (INFINITY: it never comes back). */
static double plan_charge(en_dev *v, double now)
{
    unschedule(v);
    const scn_energy *c = v->cfg;
    double full = (c->resume * c->capacity_j - v->charge_j) / c->charge_w, t = INFINITY;
    switch (c->charging) {
    case SCN_CHARGE_RATE:
        v->plugged = 1;
        t = now + full;
        break;
    case SCN_CHARGE_BERNOULLI:
        t = now + (v->plugged ? full : c->every_s);
        break;
    case SCN_CHARGE_TRACE: {
        double val;
        v->plugged = trace_value_at(c->plug_trace, now) > 0.5;
        double change = trace_next_change(c->plug_trace, now, &val);
        t = v->plugged ? fmin(now + full, change) : change;
        break;
    }
    default:
        return INFINITY;
    }
    if (isfinite(t))
        schedule_at(v, t);
    return t;
}

static void on_battery(sim_engine *e, void *ctx, uint64_t id)
{
    (void)id;
    en_dev *v = ctx;
    prt *rt = v->rt;
    double now = sim_now(e);
    v->ev = 0;
    if (rt->failed || rt->finished)
        return;
    const scn_energy *c = v->cfg;
    accrue(v, rt->act[v->d], now);
    if (v->up) { /* at its cutoff */
        v->charge_j = v->cutoff_j;
        v->drops++;
        if (v->drops == 1)
            v->first_drop_s = now;
        v->up = 0;
        v->plugged = 0;
        world_dev_set(rt->w, v->d, 0, plan_charge(v, now));
        return;
    }
    if (!(v->plugged && v->charge_j >= c->resume * c->capacity_j * (1 - 1e-12))) {
        if (c->charging == SCN_CHARGE_BERNOULLI && !v->plugged && gsl_rng_uniform(v->rng) < c->p)
            v->plugged = 1; /* a check: plugged in now? */
        world_dev_set(rt->w, v->d, 0, plan_charge(v, now));
        return;
    }
    /* charged */
    v->charge_j = fmax(v->charge_j, c->resume * c->capacity_j);
    v->plugged = 0;
    v->up = 1;
    world_dev_set(rt->w, v->d, 1, INFINITY);
    if (v->up && !v->ev) /* the policy may have changed its activity (planned there) */
        plan_empty(v, now, power_now(v, rt->act[v->d]));
}

void energy_switch(prt *rt, size_t d, res_activity a, double now)
{
    en_dev *v = &rt->energy->dev[d];
    if (!v->cfg)
        return;
    accrue(v, rt->act[d], now);
    if (v->cfg->battery && v->up)
        plan_empty(v, now, power_now(v, a));
}

/* One device's count of transfers changes by `by`: its power changes only
 * while it computes and the count leaves or reaches 0 (so runs whose
 * devices never compute while a transfer is under way keep their bits). */
static void flow_count(prt *rt, int d, int *(*which)(en_dev *), int by)
{
    if (d < 0 || (size_t)d >= rt->n)
        return;
    en_dev *v = &rt->energy->dev[d];
    if (!v->cfg)
        return;
    int *k = which(v);
    int changes = rt->act[d] == RES_ACT_COMPUTE && (*k == 0 || *k + by == 0);
    if (changes)
        accrue(v, rt->act[d], abs_now(rt));
    *k += by;
    if (*k < 0)
        *k = 0;
    if (changes && v->cfg->battery && v->up)
        plan_empty(v, abs_now(rt), power_now(v, rt->act[d]));
}

static int *tx_of(en_dev *v)
{
    return &v->tx;
}

static int *rx_of(en_dev *v)
{
    return &v->rx;
}

static void on_flow(void *ctx, int sdev, int rdev, int on)
{
    prt *rt = ctx;
    if (rt->failed || rt->finished)
        return;
    flow_count(rt, sdev, tx_of, on ? 1 : -1);
    flow_count(rt, rdev, rx_of, on ? 1 : -1);
}

void energy_updown(prt *rt, size_t d, int up)
{
    en_dev *v = &rt->energy->dev[d];
    if (!v->cfg)
        return;
    double now = abs_now(rt);
    accrue(v, rt->act[d], now);
    v->up = up;
    v->t = now;
}

int energy_open(prt *rt, uint64_t seed, dp_err *err)
{
    const scn_scenario *s = rt->s;
    int any = 0;
    for (size_t i = 0; i < s->n_groups && !any; i++)
        any = s->groups[i].count > 0 && s->groups[i].energy.on;
    if (!any)
        return 0;
    prt_energy *en = dp_calloc(1, sizeof *en);
    if (!en || !(en->dev = dp_calloc(rt->n ? rt->n : 1, sizeof *en->dev))) {
        dp_free(en);
        return dp_err_set(err, DP_ENOMEM, "out of memory");
    }
    rt->energy = en;
    en->n = rt->n;
    world_on_flow(rt->w, on_flow, rt);
    for (size_t d = 0; d < rt->n; d++) {
        en_dev *v = &en->dev[d];
        const scn_energy *c = &s->groups[s->devices[d].group].energy;
        /* from the run's start (0 but for a job of many: sim/jobs) */
        *v = (en_dev){.rt = rt, .d = d, .up = 1, .first_drop_s = -1, .t = rt->base + sim_now(rt->e)};
        if (!c->on)
            continue;
        v->cfg = c;
        if (!c->battery)
            continue;
        en->any_battery = 1;
        v->charge_j = c->charge * c->capacity_j;
        v->cutoff_j = c->cutoff * c->capacity_j;
        if (c->charging == SCN_CHARGE_BERNOULLI && !(v->rng = cmp_stream(seed, d, CMP_STREAM_CHARGER)))
            return dp_err_set(err, DP_ENOMEM, "out of memory");
        plan_empty(v, 0, c->idle_w); /* every device starts waiting */
        if (rt->failed)
            return dp_err_set(err, DP_ENOMEM, "out of memory");
    }
    return 0;
}

void energy_close(prt *rt)
{
    prt_energy *en = rt->energy;
    if (!en)
        return;
    if (rt->w)
        world_on_flow(rt->w, NULL, NULL);
    for (size_t d = 0; d < en->n; d++)
        if (en->dev[d].rng)
            gsl_rng_free(en->dev[d].rng);
    dp_free(en->dev);
    dp_free(en);
    rt->energy = NULL;
}

double prt_energy_left(const prt *rt, size_t d)
{
    if (!rt->energy || !rt->energy->dev[d].cfg || !rt->energy->dev[d].cfg->battery)
        return INFINITY;
    const en_dev *v = &rt->energy->dev[d];
    double now = abs_now(rt), e = v->charge_j;
    if (v->up && now > v->t)
        e -= power_now(v, rt->act[d]) * (now - v->t);
    return fmax(e - v->cutoff_j, 0);
}

double prt_energy_soc(const prt *rt, size_t d)
{
    if (!rt->energy || !rt->energy->dev[d].cfg || !rt->energy->dev[d].cfg->battery)
        return 1;
    const en_dev *v = &rt->energy->dev[d];
    return (prt_energy_left(rt, d) + v->cutoff_j) / v->cfg->capacity_j;
}

const scn_energy *prt_energy_of(const prt *rt, size_t d)
{
    return rt->energy ? rt->energy->dev[d].cfg : NULL;
}

/* The records as statistics (scenarios/README.md "Energy"), once every
 * device's interval is closed at the run's end. */
int energy_results(prt *rt, res_run *r)
{
    prt_energy *en = rt->energy;
    if (!en)
        return 0;
    static const char *const names[RES_ACT_COUNT] = {
        "energy.receive_j", "energy.receive_j", "energy.compute_j", "energy.transmit_j", "energy.idle_j"};
    double by[RES_ACT_COUNT] = {0}, total = 0, first = -1;
    int drops = 0, dropped = 0;
    for (size_t d = 0; d < en->n; d++) {
        const en_dev *v = &en->dev[d];
        if (!v->cfg)
            continue;
        double j = 0;
        for (int a = 0; a < RES_ACT_COUNT; a++) {
            j += v->j[a];
            by[a] += v->j[a];
        }
        total += j;
        if (res_add_stat(r, "energy_j", RES_SCOPE_DEVICE, (int64_t)d, 0, j))
            return DP_ENOMEM;
        if (!v->cfg->battery)
            continue;
        if (res_add_stat(r, "battery.soc", RES_SCOPE_DEVICE, (int64_t)d, 0,
                         v->charge_j / v->cfg->capacity_j) ||
            (v->drops &&
             res_add_stat(r, "battery.first_drop_s", RES_SCOPE_DEVICE, (int64_t)d, 0, v->first_drop_s)))
            return DP_ENOMEM;
        drops += v->drops;
        dropped += v->drops > 0;
        if (v->drops && (first < 0 || v->first_drop_s < first))
            first = v->first_drop_s;
    }
    if (res_add_stat(r, "energy.total_j", RES_SCOPE_RUN, 0, 0, total))
        return DP_ENOMEM;
    for (int a = 0; a < RES_ACT_COUNT; a++) {
        if (a == RES_ACT_RECV_DATA)
            continue; /* counted with RECV_MODEL below */
        double x = a == RES_ACT_RECV_MODEL ? by[RES_ACT_RECV_DATA] + by[RES_ACT_RECV_MODEL] : by[a];
        if (res_add_stat(r, names[a], RES_SCOPE_RUN, 0, 0, x))
            return DP_ENOMEM;
    }
    if (en->any_battery && (res_add_stat(r, "battery.drops", RES_SCOPE_RUN, 0, 0, drops) ||
                            res_add_stat(r, "battery.devices_dropped", RES_SCOPE_RUN, 0, 0, dropped) ||
                            res_add_stat(r, "battery.first_drop_s", RES_SCOPE_RUN, 0, 0, first)))
        return DP_ENOMEM;
    return 0;
}
