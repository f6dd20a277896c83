/* commlight.c: statistics and helpers of the communication-light policies
 * (commlight.h). */
#include "commlight.h"

#include <limits.h>
#include <math.h>
#include <string.h>

const char *const cl_sync_names[] = {"ring", "server", NULL};

int cl_stats_init(cl_stats *st, size_t n)
{
    memset(st, 0, sizeof *st);
    st->n = n;
    st->steps = dp_calloc(n ? n : 1, sizeof *st->steps);
    return st->steps ? 0 : DP_ENOMEM;
}

void cl_stats_free(cl_stats *st)
{
    if (st)
        dp_free(st->steps);
}

size_t cl_bin(int64_t v, int64_t *edge)
{
    if (v < 0)
        v = 0;
    if (v < 64) {
        *edge = v;
        return (size_t)v;
    }
    int k = 63 - __builtin_clzll((unsigned long long)v); /* the highest bit set: v >= 64 */
    *edge = (int64_t)1 << k;
    return (size_t)(64 + (k - 6)); /* k >= 6 here: bins 64..121 */
}

static void hist_add(cl_hist *h, int64_t v)
{
    int64_t edge;
    h->count[cl_bin(v, &edge)]++;
}

void cl_update(cl_stats *st, int64_t batch, int64_t devices, int64_t staleness)
{
    hist_add(&st->batch, batch);
    hist_add(&st->devices, devices);
    hist_add(&st->staleness, staleness);
    st->updates++;
    st->batch_sum += (double)batch;
    st->stale_sum += (double)staleness;
    if (staleness > st->stale_max)
        st->stale_max = staleness;
}

/* Class of every link of the world: device access and peer links by index,
 * the rest by name (WAN links are "wan.A-B.fwd/rev", the server NIC
 * "server.nic.*"). */
static cl_class link_class(world *w, const int *cls, int l)
{
    if (cls[l] >= 0)
        return (cl_class)cls[l];
    const char *nm = net_link_name(world_net(w), l);
    return strncmp(nm, "wan.", 4) == 0 ? CL_WAN : CL_ACCESS;
}

static int *classes(world *w, size_t n)
{
    size_t L = net_link_count(world_net(w));
    int *cls = dp_malloc((L ? L : 1) * sizeof *cls);
    if (!cls)
        return NULL;
    for (size_t l = 0; l < L; l++)
        cls[l] = -1;
    for (size_t d = 0; d < n; d++) {
        cls[world_dev_up(w, d)] = CL_ACCESS;
        cls[world_dev_down(w, d)] = CL_ACCESS;
        if (world_dev_peer_up(w, d) >= 0)
            cls[world_dev_peer_up(w, d)] = CL_INTERCONNECT;
        if (world_dev_peer_down(w, d) >= 0)
            cls[world_dev_peer_down(w, d)] = CL_INTERCONNECT;
    }
    return cls;
}

void cl_tally_ring(prt *rt, cl_stats *st, const size_t *members, size_t m, coll_kind k, double bytes)
{
    if (m < 2)
        return;
    world *w = prt_world(rt);
    int *cls = classes(w, prt_n(rt));
    if (!cls) {
        prt_fail(rt, DP_ENOMEM, "out of memory counting collective bytes");
        return;
    }
    double rounds = k == COLL_ALLREDUCE ? 2.0 * (double)(m - 1) : (double)(m - 1);
    double per_edge = rounds * bytes / (double)m;
    for (size_t i = 0; i < m; i++) {
        size_t a = members ? members[i] : i, b = members ? members[(i + 1) % m] : (i + 1) % m;
        int links[NET_MAX_PATH];
        size_t nl = 0;
        double lat;
        if (world_path(w, (int)a + 1, (int)b + 1, links, &nl, &lat))
            continue;
        for (size_t j = 0; j < nl; j++)
            st->analytic[link_class(w, cls, links[j])] += per_edge;
    }
    dp_free(cls);
}

static int emit_hist(prt *rt, const char *name, const cl_hist *h)
{
    for (size_t k = 0; k < CL_HIST_BINS; k++) {
        if (!h->count[k])
            continue;
        int64_t edge = k < 64 ? (int64_t)k : (int64_t)1 << (k - 64 + 6);
        if (prt_stat(rt, name, RES_SCOPE_BIN, (int64_t)k, edge, (double)h->count[k]))
            return DP_ENOMEM;
    }
    return 0;
}

int cl_emit(prt *rt, const cl_stats *st)
{
    world *w = prt_world(rt);
    int *cls = classes(w, prt_n(rt));
    if (!cls)
        return prt_fail(rt, DP_ENOMEM, "out of memory counting link bytes");
    double bytes[3] = {st->analytic[0], st->analytic[1], st->analytic[2]};
    net *nt = world_net(w);
    for (size_t l = 0; l < net_link_count(nt); l++)
        bytes[link_class(w, cls, (int)l)] += net_link_bytes(nt, (int)l);
    dp_free(cls);
    if (prt_stat(rt, "rounds", RES_SCOPE_RUN, 0, 0, (double)st->rounds) ||
        prt_stat(rt, "bytes.access", RES_SCOPE_RUN, 0, 0, bytes[CL_ACCESS]) ||
        prt_stat(rt, "bytes.wan", RES_SCOPE_RUN, 0, 0, bytes[CL_WAN]) ||
        prt_stat(rt, "bytes.interconnect", RES_SCOPE_RUN, 0, 0, bytes[CL_INTERCONNECT]) ||
        prt_stat(rt, "updates", RES_SCOPE_RUN, 0, 0, (double)st->updates) ||
        prt_stat(rt, "update.batch_mean", RES_SCOPE_RUN, 0, 0,
                 st->updates ? st->batch_sum / (double)st->updates : 0) ||
        prt_stat(rt, "update.staleness_mean", RES_SCOPE_RUN, 0, 0,
                 st->updates ? st->stale_sum / (double)st->updates : 0) ||
        prt_stat(rt, "update.staleness_max", RES_SCOPE_RUN, 0, 0, (double)st->stale_max))
        return DP_ENOMEM;
    for (size_t d = 0; d < st->n; d++)
        if (prt_stat(rt, "local_steps", RES_SCOPE_DEVICE, (int64_t)d, 0, (double)st->steps[d]))
            return DP_ENOMEM;
    if (emit_hist(rt, "update.batch", &st->batch) || emit_hist(rt, "update.devices", &st->devices) ||
        emit_hist(rt, "update.staleness", &st->staleness))
        return DP_ENOMEM;
    return 0;
}

int cl_max_batch(const scn_scenario *s, size_t d, int cap)
{
    const scn_group *g = &s->groups[s->devices[d].group];
    double act = s->model.activation_bytes_per_sample;
    double room = g->memory_bytes - s->model.state_factor * s->model.model_bytes;
    double fit = act > 0 ? floor(room / act) : (double)INT_MAX;
    if (fit > (double)cap)
        fit = (double)cap;
    return fit < 1 ? 1 : (int)fit;
}

int cl_distribute(prt *rt, int equal, void *devs, size_t dev_size, size_t *parts, size_t *n_parts,
                  prt_fn on_ready)
{
    size_t n = prt_n(rt);
    double *bytes = dp_calloc(n, sizeof *bytes);
    int *skip = dp_calloc(n, sizeof *skip);
    void **ctx = dp_calloc(n, sizeof *ctx);
    int rc = 0;
    if (!bytes || !skip || !ctx) {
        rc = dp_err_set(prt_err(rt), DP_ENOMEM, "out of memory for %zu devices", n);
        goto done;
    }
    if (equal)
        equal_split(rt, PRT_DATA_SHARD, bytes);
    if (n_parts)
        *n_parts = 0;
    for (size_t d = 0; d < n; d++) {
        bytes[d] = (double)prt_share(rt)[d] * prt_scn(rt)->dataset.sample_bytes;
        ctx[d] = (char *)devs + d * dev_size;
        skip[d] = prt_share(rt)[d] == 0;
        prt_left(rt)[d] = prt_share(rt)[d];
        if (!skip[d] && parts)
            parts[(*n_parts)++] = d;
    }
    rc = prt_distribute(rt, bytes, skip, on_ready, ctx);
done:
    dp_free(bytes);
    dp_free(skip);
    dp_free(ctx);
    return rc;
}

int cl_equal_shares(prt *rt)
{
    size_t n = prt_n(rt);
    double *bytes = dp_calloc(n ? n : 1, sizeof *bytes); /* equal_split's, unused: cl_distribute sends */
    if (!bytes)
        return dp_err_set(prt_err(rt), DP_ENOMEM, "out of memory for %zu devices", n);
    equal_split(rt, PRT_DATA_SHARD, bytes);
    dp_free(bytes);
    return 0;
}

int cl_none_up(prt *rt, const size_t *parts, size_t n)
{
    world *w = prt_world(rt);
    int up = 0, can = 0;
    size_t last = n ? parts[0] : 0;
    for (size_t i = 0; i < n; i++) {
        size_t d = parts[i];
        up |= prt_device_up(rt, d);
        can |= isfinite(world_dev_next_change(w, d));
        if (world_dev_down_since(w, d) > world_dev_down_since(w, last))
            last = d;
    }
    if (!up && !can)
        prt_fail(
            rt, DP_ERUN,
            "every device is down for good at t = %.6g s (the last, %s, went down at t = %.6g s): nothing "
            "can resume the job",
            prt_now(rt), prt_scn(rt)->devices[last].name, world_dev_down_since(w, last));
    return !up;
}

double cl_aggregate_s(const prt *rt, double models)
{
    const scn_scenario *s = prt_scn(rt);
    return isfinite(s->server.aggregate_Bps) ? models * s->model.model_bytes / s->server.aggregate_Bps : 0;
}

void cl_upload(prt *rt, size_t d, double bytes, net_done_fn done, void *ctx)
{
    prt_set_act(rt, d, RES_ACT_SEND);
    prt_add_server_bytes(rt, d, bytes);
    if (!world_transfer(prt_world(rt), (int)d + 1, 0, bytes, done, ctx))
        prt_fail(rt, DP_ENOMEM, "out of memory");
}

void cl_download(prt *rt, size_t d, double bytes, net_done_fn done, void *ctx)
{
    prt_set_act(rt, d, RES_ACT_RECV_MODEL);
    prt_add_server_bytes(rt, d, bytes);
    if (!world_transfer(prt_world(rt), 0, (int)d + 1, bytes, done, ctx))
        prt_fail(rt, DP_ENOMEM, "out of memory");
}

/* ---- the parameter server (asyncps, ep4ddl) ---- */

int cl_ps_init(prt *rt, cl_ps *ps, prt_fn applied)
{
    const scn_scenario *s = prt_scn(rt);
    size_t n = prt_n(rt);
    *ps = (cl_ps){.applied = applied};
    ps->agg_s = isfinite(s->server.aggregate_Bps) ? s->model.model_bytes / s->server.aggregate_Bps : 0;
    ps->next = dp_calloc(n ? n : 1, sizeof *ps->next);
    return ps->next ? 0 : DP_ENOMEM;
}

void cl_ps_free(cl_ps *ps)
{
    dp_free(ps->next);
    ps->next = NULL;
}

void cl_ps_send(prt *rt, size_t d, net_done_fn on_push, void *ctx)
{
    cl_upload(rt, d, prt_wire_bytes(rt, prt_scn(rt)->model.model_bytes), on_push,
              ctx); /* the gradient, as compressed */
}

static void ps_serve(prt *rt, cl_ps *ps)
{
    ps->busy = 1;
    if (prt_at(rt, prt_now(rt) + ps->agg_s, ps->applied, NULL))
        prt_fail(rt, DP_ENOMEM, "out of memory");
}

void cl_ps_arrive(prt *rt, cl_ps *ps, size_t d)
{
    ps->next[d] = 0;
    if (ps->tail)
        ps->next[ps->tail - 1] = d + 1;
    else
        ps->head = d + 1;
    ps->tail = d + 1;
    if (!ps->busy)
        ps_serve(rt, ps);
}

size_t cl_ps_pop(cl_ps *ps)
{
    size_t d = ps->head - 1;
    ps->head = ps->next[d];
    if (!ps->head)
        ps->tail = 0;
    ps->busy = 0;
    return d;
}

void cl_ps_apply(prt *rt, cl_ps *ps, cl_stats *st, size_t d, int64_t samples, int64_t pulled)
{
    cl_update(st, samples, 1, ps->version - pulled);
    prt_learn_push(rt, d); /* the update stream: staleness counted from its pull */
    ps->version++;
    st->rounds++;
}

int cl_ps_next(prt *rt, cl_ps *ps)
{
    if (!ps->head)
        return 0;
    ps_serve(rt, ps);
    return 1;
}

int cl_resend_begin(prt *rt, cl_resend *r)
{
    size_t n = prt_n(rt);
    r->bytes = dp_calloc(n, sizeof *r->bytes);
    r->skip = dp_calloc(n, sizeof *r->skip);
    r->ctx = dp_calloc(n, sizeof *r->ctx);
    r->any = 0;
    if (!r->bytes || !r->skip || !r->ctx)
        return prt_fail(rt, DP_ENOMEM, "out of memory");
    for (size_t d = 0; d < n; d++)
        r->skip[d] = 1;
    return 0;
}

void cl_resend_add(prt *rt, cl_resend *r, size_t d, void *ctx, int has_data)
{
    r->skip[d] = 0;
    r->ctx[d] = ctx;
    r->bytes[d] = has_data ? 0 : (double)prt_share(rt)[d] * prt_scn(rt)->dataset.sample_bytes;
    r->any = 1;
}

int cl_resend_send(prt *rt, cl_resend *r, prt_fn done)
{
    if (r->any && prt_resend(rt, r->bytes, r->skip, done, r->ctx))
        return prt_fail(rt, DP_ENOMEM, "out of memory");
    return 0;
}

void cl_resend_free(cl_resend *r)
{
    dp_free(r->bytes);
    dp_free(r->skip);
    dp_free(r->ctx);
}

int64_t cl_skip_left(prt *rt, size_t d)
{
    int64_t left = prt_left(rt)[d];
    prt_left(rt)[d] = 0;
    return left;
}

int cl_keeps_data(const prt *rt, size_t d)
{
    const scn_scenario *s = prt_scn(rt);
    return s->groups[s->devices[d].group].avail.data_persists;
}

int cl_take(prt *rt, size_t d, int b)
{
    int64_t *left = prt_left(rt);
    size_t from = d;
    if (left[d] == 0)
        for (size_t e = 0; e < prt_n(rt); e++)
            if (left[e] > left[from])
                from = e;
    int64_t k = left[from] < b ? left[from] : b;
    left[from] -= k;
    return (int)k;
}
