/* scenario_energy.c: a device group's `power:` and `battery:` (scenarios/README.md
 * "Energy"; docs/MODEL.md section 11).  Watts, milliamp-hours, volts and
 * percentages are read here, with their own small unit tables: no other
 * key takes them, so the shared parser (units.c) does not learn them.
 *
 *   power:   { compute: 6.33W, transmit: 1.2W, receive: 0.8W, idle: 0.1W }
 *   battery: { capacity: 5000mAh, voltage: 3.85V, charge: 30%, cutoff: 5%,
 *              charging: { rate: 10W, resume: 80%, every: 1h, probability: 0.3 } }
 */
#include "scenario_impl.h"
#include "units.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

typedef struct eunit {
    const char *name;
    double factor;
} eunit;

static const eunit watts[] = {{"W", 1}, {"mW", 1e-3}, {"kW", 1e3}, {NULL, 0}};
/* capacity: charge (needs a voltage) or energy */
static const eunit charges[] = {{"mAh", 3.6}, {"Ah", 3600}, {NULL, 0}}; /* coulombs */
static const eunit energies[] = {{"Wh", 3600}, {"mWh", 3.6}, {"kWh", 3.6e6},
                                 {"J", 1},     {"kJ", 1e3},  {NULL, 0}};
static const eunit volts[] = {{"V", 1}, {"mV", 1e-3}, {NULL, 0}};
static const eunit fractions[] = {{"%", 0.01}, {"", 1}, {NULL, 0}};

/* The number of node n in one of the units of tab (a bare number only when
 * tab lists ""): 1 and *out, 0 when its unit is in none of them, or a
 * failure. */
static int eq_parse(const char *text, const eunit *tab, double *out)
{
    size_t k = units_number_len(text);
    if (!k)
        return -1;
    const char *u = text + k;
    while (*u == ' ')
        u++;
    for (size_t i = 0; tab[i].name; i++)
        if (!strcmp(u, tab[i].name)) {
            *out = strtod(text, NULL) * tab[i].factor;
            return isfinite(*out) ? 1 : -1;
        }
    return 0;
}

/* m[key] as a quantity of tab, >= 0 (> 0 when positive), at most max:
 * 1 (found), 0 (absent) or an error. */
static int eq_get(cv *c, const yt_node *m, const char *path, const char *key, const eunit *tab,
                  const char *units, int positive, double max, double *out)
{
    const yt_node *n;
    int r = scni_get_scalar(c, m, path, key, 0, &n);
    if (r <= 0)
        return r;
    char kp[340], g[80];
    scni_join(kp, sizeof kp, path, key);
    int p = eq_parse(n->text, tab, out);
    if (p < 0)
        return scni_fail(c, n, kp, "not a number with a unit (%s) (got %s)", units, scni_got(n, g, sizeof g));
    if (p == 0)
        return scni_fail(c, n, kp, "unknown unit: give %s (got %s)", units, scni_got(n, g, sizeof g));
    if (positive ? !(*out > 0) : !(*out >= 0))
        return scni_fail(c, n, kp, "must be %s (got %s)", positive ? "> 0" : ">= 0",
                         scni_got(n, g, sizeof g));
    if (*out > max)
        return scni_fail(c, n, kp, "must be at most %g (got %s)", max, scni_got(n, g, sizeof g));
    return 1;
}

static int get_frac(cv *c, const yt_node *m, const char *path, const char *key, double def, double *out)
{
    *out = def;
    return eq_get(c, m, path, key, fractions, "a percentage such as 30% or a fraction in [0, 1]", 0, 1, out);
}

static int get_power(cv *c, const yt_node *n, const char *path, scn_energy *e)
{
    static const char *const keys[] = {"compute", "transmit", "receive", "idle", NULL};
    char kp[320];
    int r, any = 0;
    scni_join(kp, sizeof kp, path, "power");
    if ((r = scni_check_map(c, n, kp, keys, NULL)) < 0)
        return r;
    double *w[] = {&e->compute_w, &e->transmit_w, &e->receive_w, &e->idle_w};
    for (int k = 0; k < 4; k++) {
        if ((r = eq_get(c, n, kp, keys[k], watts, "W, mW or kW", 0, 1e6, w[k])) < 0)
            return r;
        any += r;
    }
    if (!any)
        return scni_fail(c, n, kp,
                         "give at least one of compute, transmit, receive, idle (got an empty mapping)");
    e->on = 1;
    return 1;
}

static int get_charging(cv *c, const yt_node *n, const char *path, scn_energy *e)
{
    static const char *const keys[] = {"rate", "resume", "every", "probability", "trace", NULL};
    static const char *const req[] = {"rate", NULL};
    char kp[340];
    int r;
    scni_join(kp, sizeof kp, path, "charging");
    if ((r = scni_check_map(c, n, kp, keys, req)) < 0)
        return r;
    if ((r = eq_get(c, n, kp, "rate", watts, "W, mW or kW", 1, 1e6, &e->charge_w)) < 0 ||
        (r = get_frac(c, n, kp, "resume", 1, &e->resume)) < 0)
        return r;
    e->charging = SCN_CHARGE_RATE;
    int has_every = !yt_is_null(yt_get(n, "every")), has_p = !yt_is_null(yt_get(n, "probability"));
    if (has_every != has_p)
        return scni_fail(c, n, kp, "a Bernoulli charger needs both every and probability (got only %s)",
                         has_every ? "every" : "probability");
    const yt_node *tn = yt_get(n, "trace");
    if (!yt_is_null(tn) && has_every)
        return scni_fail(c, tn, kp,
                         "a charger follows a trace or a Bernoulli process, not both (got trace and every)");
    if (!yt_is_null(tn)) {
        if ((r = scni_get_trace(c, tn, kp, "trace", 0, &e->plug_trace)) < 0)
            return r;
        e->charging = SCN_CHARGE_TRACE;
        for (size_t k = 0; k < e->plug_trace->n; k++)
            if (e->plug_trace->value[k] != 0 && e->plug_trace->value[k] != 1)
                return scni_fail(c, tn, kp,
                                 "a charging trace holds 1 (plugged in) or 0 only (got %g at t = %g s)",
                                 e->plug_trace->value[k], e->plug_trace->t_s[k]);
    }
    if (has_every) {
        e->charging = SCN_CHARGE_BERNOULLI;
        if ((r = scni_get_pos(c, n, kp, "every", SCN_UNIT_TIME, 1, 0, 0, 1e12, &e->every_s)) < 0 ||
            (r = scni_get_pos(c, n, kp, "probability", SCN_UNIT_NUMBER, 1, 0, 0, 1, &e->p)) < 0)
            return r;
    }
    if (!(e->resume > e->cutoff)) {
        char rk[360], g[80];
        scni_join(rk, sizeof rk, kp, "resume");
        const yt_node *rn = yt_get(n, "resume");
        return scni_fail(c, rn ? rn : n, rk, "a device comes back above its cutoff (%g%%) (got %s)",
                         e->cutoff * 100, rn ? scni_got(rn, g, sizeof g) : "100%");
    }
    return 1;
}

static int get_battery(cv *c, const yt_node *n, const char *path, scn_energy *e)
{
    static const char *const keys[] = {"capacity", "voltage", "charge", "cutoff", "charging", NULL};
    static const char *const req[] = {"capacity", NULL};
    char kp[320], g[80];
    int r;
    scni_join(kp, sizeof kp, path, "battery");
    if ((r = scni_check_map(c, n, kp, keys, req)) < 0)
        return r;
    double cap, volt = 0;
    const yt_node *cn = yt_get(n, "capacity");
    int is_charge = cn && cn->text && eq_parse(cn->text, charges, &cap) == 1;
    if ((r = eq_get(c, n, kp, "voltage", volts, "V or mV", 1, 1e4, &volt)) < 0)
        return r;
    if (is_charge) {
        if ((r = eq_get(c, n, kp, "capacity", charges, "mAh or Ah with a voltage, or Wh, mWh, kWh, J, kJ", 1,
                        1e12, &cap)) < 0)
            return r;
        if (!volt)
            return scni_fail(c, cn, kp, "a capacity in mAh or Ah needs a voltage (got %s and no voltage)",
                             scni_got(cn, g, sizeof g));
        e->capacity_j = cap * volt;
    } else {
        if ((r = eq_get(c, n, kp, "capacity", energies, "mAh or Ah with a voltage, or Wh, mWh, kWh, J, kJ", 1,
                        1e15, &cap)) < 0)
            return r;
        e->capacity_j = cap;
    }
    if ((r = get_frac(c, n, kp, "charge", 1, &e->charge)) < 0 ||
        (r = get_frac(c, n, kp, "cutoff", 0, &e->cutoff)) < 0)
        return r;
    if (!(e->charge > e->cutoff)) {
        char ck[340];
        scni_join(ck, sizeof ck, kp, "charge");
        const yt_node *qn = yt_get(n, "charge");
        return scni_fail(c, qn ? qn : n, ck, "a device starts above its cutoff (%g%%) (got %s)",
                         e->cutoff * 100, qn ? scni_got(qn, g, sizeof g) : "100%");
    }
    const yt_node *ch = yt_get(n, "charging");
    if (!yt_is_null(ch) && (r = get_charging(c, ch, kp, e)) < 0)
        return r;
    e->battery = 1;
    return 1;
}

int scni_get_energy(cv *c, const yt_node *power, const yt_node *battery, const char *path, scn_group *g,
                    int own_avail, const yt_node *avail_key)
{
    int r;
    g->energy = (scn_energy){0};
    if (!yt_is_null(power) && (r = get_power(c, power, path, &g->energy)) < 0)
        return r;
    if (yt_is_null(battery))
        return 0;
    char kp[320];
    scni_join(kp, sizeof kp, path, "battery");
    if (!g->energy.on)
        return scni_fail(c, battery, kp,
                         "a battery needs the device's power figures: add power: { compute, transmit, idle } "
                         "(got a battery and no power)");
    if (own_avail)
        return scni_fail(
            c, avail_key, kp,
            "a battery drives the device's availability: give a battery or availability, not both "
            "(got both)");
    return get_battery(c, battery, path, &g->energy);
}
