/* runlog.c: update logs derived from runs (runlog.h). */
#include "cli/runlog.h"
#include "policy/policy.h"

#include <math.h>
#include <string.h>

/* The epoch e's span in simulated time (1-based): from the previous
 * epoch's end, or from the end of the data distribution. */
static void epoch_span(const res_run *r, size_t e, double *t0, double *t1)
{
    *t0 = e == 1 ? r->tsend_s : r->epochs[e - 2].end_s;
    *t1 = r->epochs[e - 1].end_s;
}

static int batch_of(const scn_scenario *s, size_t d)
{
    return s->groups[s->devices[d].group].batch;
}

/* Synchronous data parallelism with Join, `accum` micro-steps per update. */
static int sync_log(const scn_scenario *s, const res_run *r, int64_t accum, eff_log *l)
{
    int64_t steps = 0;
    for (size_t d = 0; d < r->n_devices; d++) {
        int64_t b = batch_of(s, d), k = (r->devices[d].samples + b - 1) / b;
        steps = k > steps ? k : steps;
    }
    int64_t updates = (steps + accum - 1) / accum;
    for (size_t e = 1; e <= r->n_epochs; e++) {
        double t0, t1;
        epoch_span(r, e, &t0, &t1);
        for (int64_t u = 0; u < updates; u++) {
            double M = 0;
            for (int64_t k = u * accum; k < (u + 1) * accum && k < steps; k++)
                for (size_t d = 0; d < r->n_devices; d++) {
                    int64_t b = batch_of(s, d), left = r->devices[d].samples - k * b;
                    M += (double)(left < 0 ? 0 : left < b ? left : b);
                }
            int rc = eff_log_sync(l, t0 + (t1 - t0) * (double)(u + 1) / (double)updates, (int)e, M);
            if (rc)
                return rc;
        }
    }
    return 0;
}

/* C-ADP: one average per epoch, at its end, of the devices with a share. */
static int cadp_log(const scn_scenario *s, const res_run *r, eff_log *l)
{
    double M = 0, D = 0, n = 0;
    for (size_t d = 0; d < r->n_devices; d++)
        if (r->devices[d].samples > 0) {
            M += batch_of(s, d);
            D += (double)r->devices[d].samples;
            n++;
        }
    if (!(M > 0))
        return DP_EINPUT;
    for (size_t e = 1; e <= r->n_epochs; e++) {
        int rc = eff_log_local(l, r->epochs[e - 1].end_s, (int)e, D / M, M, n / (double)r->n_devices);
        if (rc)
            return rc;
    }
    return 0;
}

int runlog_single(double D, double b, int epochs, eff_log *l)
{
    double steps = ceil(D / b), t = 0;
    for (int e = 1; e <= epochs; e++)
        for (double k = 0; k < steps; k++) {
            double left = D - k * b;
            int rc = eff_log_sync(l, ++t, e, left < b ? left : b);
            if (rc)
                return rc;
        }
    return 0;
}

int runlog_derive(const scn_scenario *s, const res_run *r, eff_log **out, dp_err *err)
{
    *out = NULL;
    if (r->learn_log) { /* the runtime logged the run's own updates */
        if (!(*out = eff_log_copy(r->learn_log)))
            return dp_err_set(err, DP_ENOMEM, "out of memory");
        return 0;
    }
    int sync = !strcmp(r->policy, "ddp") || !strcmp(r->policy, "deepspeed"),
        cadp = !strcmp(r->policy, "cadp");
    if (!sync && !cadp)
        return dp_err_set(err, DP_EINPUT,
                          "%s: its updates are not derived from its run here (ddp, deepspeed and cadp are); "
                          "the runtime's update stream will log every policy",
                          r->policy);
    if (!r->n_epochs || r->n_devices != s->n_devices)
        return dp_err_set(err, DP_EINPUT, "%s: the run has no epochs to derive updates from", r->policy);
    eff_log *l = eff_log_new();
    if (!l)
        return dp_err_set(err, DP_ENOMEM, "out of memory");
    int64_t accum = 1;
    if (!strcmp(r->policy, "deepspeed")) {
        const policy_def *pd = policy_find("deepspeed");
        double ga = pd ? policy_option_num(pd, s, "grad_accum") : 1;
        accum = ga >= 1 ? (int64_t)ga : 1;
    }
    int rc = cadp ? cadp_log(s, r, l) : sync_log(s, r, accum, l);
    if (rc) {
        eff_log_free(l);
        return dp_err_set(err, rc, "%s: cannot derive its updates (%s)", r->policy,
                          rc == DP_ENOMEM ? "out of memory" : "no device with a share");
    }
    *out = l;
    return 0;
}
