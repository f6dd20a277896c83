/* lconfig.c: reading and checking `learning:` (learner.h). */
#include "lconfig.h"
#include "learn/efficiency.h"
#include "yamltree.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

const char *const lrn_model_names[] = {"softmax", "mlp", NULL};
const char *const lrn_partition_names[] = {"iid", "labels", "dirichlet", "policy", NULL};
const char *const lrn_staleness_names[] = {"none", "divide", NULL};
const char *const lrn_samples_names[] = {"epoch", "same", NULL};
const char *const lrn_features_names[] = {"standardize", "unit", NULL};

void lrn_cfg_free(lrn_cfg *c)
{
    if (!c)
        return;
    ldata_free(c->data);
    dp_free(c->targets);
    dp_free(c);
}

void lrn_cfg_describe(const lrn_cfg *c, char *buf, size_t len)
{
    char lr[96], part[64], tg[128] = "";
    if (c->lr_every > 0)
        snprintf(lr, sizeof lr, "lr %g x %g every %d epochs", c->lr, c->lr_factor, c->lr_every);
    else
        snprintf(lr, sizeof lr, "lr %g", c->lr);
    if (c->partition == LRN_PART_LABELS)
        snprintf(part, sizeof part, "labels (%d per device)", c->labels_per_device);
    else if (c->partition == LRN_PART_DIRICHLET)
        snprintf(part, sizeof part, "dirichlet (alpha %g)", c->alpha);
    else
        snprintf(part, sizeof part, "%s", lrn_partition_names[c->partition]);
    for (size_t k = 0; k < c->n_targets; k++) {
        size_t u = strlen(tg);
        snprintf(tg + u, sizeof tg - u, "%s%g", k ? ", " : "", c->targets[k]);
    }
    char model[48];
    if (c->model == LM_MLP)
        snprintf(model, sizeof model, "mlp (hidden %zu)", c->hidden);
    else
        snprintf(model, sizeof model, "softmax");
    snprintf(buf, len, "%s (%zu train / %zu test, %zu x %zu classes), %s, partition %s, %s%s%s%s",
             c->data->name, c->data->n_train, c->data->n_test, c->data->dim, c->data->classes, model, part,
             lr, c->staleness == LRN_STALE_DIVIDE ? ", async lr / staleness" : "",
             c->n_targets ? ", targets " : "", tg);
}

/* The scenario file's directory, against which a relative data path is
 * read (the current directory for a built-in or a string). */
static void base_dir_of(const scn_scenario *s, char *buf, size_t len)
{
    buf[0] = 0;
    if (!s->path || s->path[0] == '<')
        return;
    const char *slash = strrchr(s->path, '/');
    if (!slash)
        return;
    size_t n = (size_t)(slash - s->path);
    if (n == 0)
        n = 1;
    if (n >= len)
        n = len - 1;
    memcpy(buf, s->path, n);
    buf[n] = 0;
}

static int read_lr(const scn_scenario *s, const yt_node *m, lrn_cfg *c, dp_err *err)
{
    const yt_node *v = yt_get(m, "lr");
    c->lr = 0.1;
    c->lr_every = 0;
    c->lr_factor = 1;
    if (!v)
        return 0;
    if (v->kind == YT_SCALAR)
        return scn_read_quantity(s, m, "learning", "lr", SCN_UNIT_NUMBER, 0.1, 0, 1e6, &c->lr, err) < 0
                   ? DP_EINPUT
                   : 0;
    if (v->kind != YT_MAP)
        return scn_read_fail(s, v, "learning.lr", err,
                             "expected a number or {initial, every, factor} (step decay)");
    static const char *const keys[] = {"initial", "every", "factor", NULL};
    int64_t every;
    if (scn_read_keys(s, v, "learning.lr", keys, err) < 0 ||
        scn_read_quantity(s, v, "learning.lr", "initial", SCN_UNIT_NUMBER, 0.1, 0, 1e6, &c->lr, err) < 0 ||
        scn_read_int(s, v, "learning.lr", "every", 0, 0, 1e9, &every, err) < 0 ||
        scn_read_quantity(s, v, "learning.lr", "factor", SCN_UNIT_NUMBER, 1, 0, 1e6, &c->lr_factor, err) < 0)
        return DP_EINPUT;
    c->lr_every = (int)every;
    return 0;
}

static int read_targets(const scn_scenario *s, const yt_node *m, lrn_cfg *c, dp_err *err)
{
    const yt_node *v = yt_get(m, "targets");
    if (!v || yt_is_null(v))
        return 0;
    const yt_node *one = v;
    size_t n = v->kind == YT_SEQ ? v->n : 1;
    if (v->kind == YT_MAP)
        return scn_read_fail(s, v, "learning.targets", err, "expected a list of accuracies in (0, 1]");
    c->targets = dp_calloc(n ? n : 1, sizeof *c->targets);
    if (!c->targets)
        return dp_err_set(err, DP_ENOMEM, "out of memory");
    for (size_t k = 0; k < n; k++) {
        if (v->kind == YT_SEQ)
            one = v->items[k];
        char *e = NULL;
        double x = one->kind == YT_SCALAR ? strtod(one->text, &e) : NAN;
        if (one->kind != YT_SCALAR || e == one->text || *e || !(x > 0 && x <= 1))
            return scn_read_fail(s, one, "learning.targets", err,
                                 "a target is a test accuracy in (0, 1], e.g. 0.95 (got %.40s)",
                                 one->kind == YT_SCALAR ? one->text : "a mapping or list");
        for (size_t j = 0; j < k; j++)
            if (c->targets[j] >= x)
                return scn_read_fail(s, one, "learning.targets", err, "targets must increase (%g after %g)",
                                     x, c->targets[j]);
        c->targets[k] = x;
    }
    c->n_targets = n;
    return 0;
}

int lrn_cfg_read(const scn_scenario *s, lrn_cfg **out, dp_err *err)
{
    *out = NULL;
    const yt_node *m = scn_learning(s);
    if (!m)
        return 0;
    static const char *const keys[] = {
        "data",           "test_fraction", "model",    "hidden",     "partition", "labels_per_device",
        "alpha",          "seed",          "lr",       "staleness",  "evaluate",  "targets",
        "stop_at_target", "samples",       "features", "efficiency", NULL};
    if (scn_read_keys(s, m, "learning", keys, err) < 0)
        return DP_EINPUT;
    /* `efficiency`: the statistical-efficiency model's (efficiency.h),
     * checked here so that check and run refuse it as they refuse the rest;
     * alone, it asks for no SGD learner */
    const yt_node *em = yt_get(m, "efficiency");
    if (em) {
        eff_params *ep = NULL;
        if (eff_params_read(s, em, "learning.efficiency", &ep, err) < 0)
            return DP_EINPUT;
        eff_params_free(ep);
        if (m->n == 1)
            return 0;
    }
    lrn_cfg *c = dp_calloc(1, sizeof *c);
    if (!c)
        return dp_err_set(err, DP_ENOMEM, "out of memory");
    int model, part, stale, samples, stop;
    int64_t hidden, lpd, seed;
    const yt_node *ev = yt_get(m, "evaluate");
    int has_seed;
    if (scn_read_quantity(s, m, "learning", "test_fraction", SCN_UNIT_NUMBER, 0.2, 0, 0.99, &c->test_fraction,
                          err) < 0 ||
        scn_read_enum(s, m, "learning", "model", lrn_model_names, LM_SOFTMAX, &model, err) < 0 ||
        scn_read_int(s, m, "learning", "hidden", 64, 1, 100000, &hidden, err) < 0 ||
        scn_read_enum(s, m, "learning", "partition", lrn_partition_names, LRN_PART_IID, &part, err) < 0 ||
        scn_read_int(s, m, "learning", "labels_per_device", 2, 1, 100000, &lpd, err) < 0 ||
        scn_read_quantity(s, m, "learning", "alpha", SCN_UNIT_NUMBER, 0.5, 0, 1e6, &c->alpha, err) < 0 ||
        (has_seed = scn_read_int(s, m, "learning", "seed", 0, 0, 9007199254740992.0, &seed, err)) < 0 ||
        read_lr(s, m, c, err) < 0 ||
        scn_read_enum(s, m, "learning", "staleness", lrn_staleness_names, LRN_STALE_NONE, &stale, err) < 0 ||
        read_targets(s, m, c, err) < 0 ||
        scn_read_bool(s, m, "learning", "stop_at_target", 0, &stop, err) < 0 ||
        scn_read_enum(s, m, "learning", "samples", lrn_samples_names, LRN_SAMPLES_EPOCH, &samples, err) < 0 ||
        scn_read_enum(s, m, "learning", "features", lrn_features_names, LRN_FEAT_STANDARDIZE, &c->features,
                      err) < 0)
        goto bad;
    c->model = (lm_kind)model;
    c->hidden = (size_t)hidden;
    c->partition = part;
    c->labels_per_device = (int)lpd;
    c->has_seed = has_seed == 1;
    c->seed = (uint64_t)seed;
    c->staleness = stale;
    c->stop_at_target = stop;
    c->samples = samples;
    c->eval_epochs = 1;
    c->eval_every_s = 0;
    if (ev) {
        static const char *const ekeys[] = {"epochs", "every", NULL};
        int64_t ee;
        if (ev->kind != YT_MAP) {
            scn_read_fail(s, ev, "learning.evaluate", err, "expected {epochs: K} and/or {every: TIME}");
            goto bad;
        }
        int has_every;
        if (scn_read_keys(s, ev, "learning.evaluate", ekeys, err) < 0 ||
            scn_read_int(s, ev, "learning.evaluate", "epochs", 0, 0, 1e9, &ee, err) < 0 ||
            (has_every = scn_read_quantity(s, ev, "learning.evaluate", "every", SCN_UNIT_TIME, 0, 0, 1e15,
                                           &c->eval_every_s, err)) < 0)
            goto bad;
        c->eval_epochs = (int)ee;
        if (!has_every)
            c->eval_every_s = 0;
        if (c->eval_epochs == 0 && c->eval_every_s == 0) {
            scn_read_fail(s, ev, "learning.evaluate", err, "evaluates never: give epochs >= 1 or every > 0");
            goto bad;
        }
    }
    if (c->stop_at_target && c->n_targets == 0) {
        scn_read_fail(s, yt_get_key(m, "stop_at_target"), "learning.stop_at_target", err,
                      "stop_at_target needs learning.targets");
        goto bad;
    }
    const yt_node *dn = yt_get(m, "data");
    const char *src = "digits";
    if (dn) {
        if (dn->kind != YT_SCALAR || !dn->text[0]) {
            scn_read_fail(s, dn, "learning.data", err,
                          "expected digits, fashion-mnist, a CSV file or a directory of IDX files");
            goto bad;
        }
        src = dn->text;
    }
    char dir[4096];
    base_dir_of(s, dir, sizeof dir);
    dp_err e2 = {0};
    c->data = ldata_load(src, dir, c->test_fraction, &e2);
    if (!c->data) {
        if (dn)
            scn_read_fail(s, dn, "learning.data", err, "%s", e2.msg);
        else
            dp_err_set(err, e2.code ? e2.code : DP_EINPUT, "learning.data: %s", e2.msg);
        if (err && e2.code == DP_ENOMEM)
            err->code = DP_ENOMEM;
        goto bad;
    }
    if (c->features == LRN_FEAT_STANDARDIZE)
        ldata_standardize(c->data);
    if (c->partition == LRN_PART_LABELS && (size_t)c->labels_per_device > c->data->classes) {
        scn_read_fail(s, yt_get(m, "labels_per_device"), "learning.labels_per_device", err,
                      "%d labels per device, the data set has %zu classes", c->labels_per_device,
                      c->data->classes);
        goto bad;
    }
    if ((size_t)s->n_devices > c->data->n_train) {
        scn_read_fail(s, m, "learning", err,
                      "%zu devices but only %zu training samples in %s: each needs one", (size_t)s->n_devices,
                      c->data->n_train, c->data->name);
        goto bad;
    }
    *out = c;
    return 0;
bad:
    lrn_cfg_free(c);
    return err && err->code ? err->code : DP_EINPUT;
}
