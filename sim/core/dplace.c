/* dplace.c: the data placement planner (dplace.h says what it decides). */
#include "dplace.h"

#include "world.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

typedef struct pool {
    int64_t first, size, used; /* ids [first, first + size); used by a partition so far */
    int *holders;              /* nodes, primary first */
    size_t n_holders;
    int64_t own; /* a device's slice: that device, else -1 */
} pool;

struct dplace {
    const scn_scenario *s;
    size_t nd, ns, np;
    pool *pools;
    int *holder_mem;
    unsigned char *down; /* per node up to nd + 1 + 2 ns */
    double *lat;         /* [a * ns + b] WAN route latency between sites, NAN: not yet known */
    int *dev_pool;       /* per device: its own slice's pool, -1 none */
};

static int dev_site(const dplace *p, size_t d)
{
    return p->s->groups[p->s->devices[d].group].site;
}

int dpl_node_site(const dplace *p, int node)
{
    if (node == 0)
        return p->s->server.site;
    if ((size_t)node <= p->nd)
        return dev_site(p, (size_t)node - 1);
    return (int)(((size_t)node - p->nd - 1) % (p->ns ? p->ns : 1));
}

static double site_lat(const dplace *p, int a, int b)
{
    if (a < 0 || b < 0 || a == b)
        return 0;
    double *x = &p->lat[(size_t)a * p->ns + (size_t)b];
    if (isnan(*x)) {
        size_t idx[WORLD_MAX_WAN_HOPS], nh = 0;
        int fw[WORLD_MAX_WAN_HOPS];
        double l = 0;
        *x = world_wan_route(p->s, a, b, idx, fw, &nh, &l) ? INFINITY : l;
    }
    return *x;
}

size_t dpl_n_pools(const dplace *p)
{
    return p ? p->np : 0;
}

int64_t dpl_own(const dplace *p, size_t d)
{
    return p->dev_pool[d] >= 0 && !p->down[d + 1] ? p->pools[p->dev_pool[d]].size : 0;
}

int64_t dpl_pool_size(const dplace *p, size_t k)
{
    return p->pools[k].size;
}

int64_t dpl_pool_first(const dplace *p, size_t k)
{
    return p->pools[k].first;
}

void dpl_holder_set(dplace *p, int node, int up)
{
    if (node >= 0 && (size_t)node <= p->nd + 2 * p->ns)
        p->down[node] = !up;
}

int dpl_holder_for(const dplace *p, size_t k, size_t d, int *cls)
{
    const pool *q = &p->pools[k];
    int best = -1, bc = 3, ds = dev_site(p, d);
    double bl = INFINITY;
    for (size_t h = 0; h < q->n_holders; h++) {
        int node = q->holders[h];
        if (p->down[node])
            continue;
        int hs = dpl_node_site(p, node);
        int c = (size_t)node == d + 1 ? 0 : (hs == ds || hs < 0 || ds < 0) ? 1 : 2;
        double l = c == 2 ? site_lat(p, hs, ds) : 0;
        if (c < bc || (c == bc && l < bl))
            best = node, bc = c, bl = l;
    }
    if (cls)
        *cls = bc;
    return best;
}

void dpl_free(dplace *p)
{
    if (!p)
        return;
    dp_free(p->pools);
    dp_free(p->holder_mem);
    dp_free(p->down);
    dp_free(p->lat);
    dp_free(p->dev_pool);
    dp_free(p);
}

dplace *dpl_new(const scn_scenario *s, dp_err *err)
{
    const scn_data *dd = s->data;
    if (!dd)
        return NULL;
    dplace *p = dp_calloc(1, sizeof *p);
    if (!p)
        goto oom;
    p->s = s;
    p->nd = s->n_devices;
    p->ns = s->n_sites;
    size_t np = 0, nh = 0;
    for (size_t i = 0; i < dd->n_parts; i++) {
        const scn_part *x = &dd->parts[i];
        size_t m = 1;
        if (x->at == SCN_AT_GROUP) {
            m = 0;
            for (int g = x->idx; g < x->idx + x->n_groups; g++)
                m += (size_t)s->groups[g].count;
        }
        np += m;
        nh += m * (1 + x->n_replicas);
    }
    if ((double)np * (double)p->nd > 2e8) {
        dp_err_set(err, DP_EINPUT,
                   "dataset.parts: %zu pools of data over %zu devices are past the planner's size "
                   "(devices x pools at most 2e8): give large groups' data to their site instead",
                   np, p->nd);
        dpl_free(p);
        return NULL;
    }
    p->pools = dp_calloc(np ? np : 1, sizeof *p->pools);
    p->holder_mem = dp_calloc(nh ? nh : 1, sizeof *p->holder_mem);
    p->down = dp_calloc(p->nd + 2 * p->ns + 2, 1);
    p->lat = dp_malloc((p->ns * p->ns + 1) * sizeof *p->lat);
    p->dev_pool = dp_malloc((p->nd + 1) * sizeof *p->dev_pool);
    if (!p->pools || !p->holder_mem || !p->down || !p->lat || !p->dev_pool)
        goto oom;
    for (size_t i = 0; i < p->ns * p->ns; i++)
        p->lat[i] = NAN;
    for (size_t d = 0; d < p->nd; d++)
        p->dev_pool[d] = -1;
    /* device index of each group's first member */
    int64_t first = 0;
    int *hm = p->holder_mem;
    for (size_t i = 0; i < dd->n_parts; i++) {
        const scn_part *x = &dd->parts[i];
        if (x->at != SCN_AT_GROUP) {
            pool *q = &p->pools[p->np++];
            *q = (pool){first, x->samples, 0, hm, 1 + x->n_replicas, -1};
            q->holders[0] = x->at == SCN_AT_SERVER ? 0 : (int)(p->nd + 1) + x->idx;
            for (size_t r = 0; r < x->n_replicas; r++)
                q->holders[1 + r] = x->replicas[r] < 0 ? 0 : (int)(p->nd + 1) + x->replicas[r];
            hm += q->n_holders;
            first += x->samples;
            continue;
        }
        /* the members of groups idx.. in device order: devices are expanded group by group */
        size_t d0 = 0;
        while (d0 < p->nd && s->devices[d0].group < x->idx)
            d0++;
        size_t m = 0;
        for (size_t d = d0; d < p->nd && s->devices[d].group < x->idx + x->n_groups; d++)
            m++;
        int64_t each = x->samples / (int64_t)m, extra = x->samples % (int64_t)m;
        for (size_t j = 0; j < m; j++) {
            pool *q = &p->pools[p->np++];
            int64_t sz = each + ((int64_t)j < extra);
            *q = (pool){first, sz, 0, hm, 1, (int64_t)(d0 + j)};
            q->holders[0] = (int)(d0 + j) + 1;
            hm += 1;
            first += sz;
            p->dev_pool[d0 + j] = (int)(p->np - 1);
        }
    }
    return p;
oom:
    dpl_free(p);
    dp_err_set(err, DP_ENOMEM, "out of memory planning where the data is read");
    return NULL;
}

static int add_take(dpl_plan *pl, dpl_take t)
{
    if (t.n <= 0)
        return 0;
    if (pl->n == pl->cap) {
        size_t c = pl->cap ? 2 * pl->cap : 64;
        dpl_take *nt = dp_realloc(pl->takes, c * sizeof *nt);
        if (!nt)
            return DP_ENOMEM;
        pl->takes = nt;
        pl->cap = c;
    }
    pl->takes[pl->n++] = t;
    return 0;
}

void dpl_plan_free(dpl_plan *pl)
{
    dp_free(pl->takes);
    dp_free(pl->off);
    dp_free(pl->lost);
    memset(pl, 0, sizeof *pl);
}

/* Device d's pools of class `cls` in the order it takes them: pool order,
 * or for class 2 nearest first (insertion sort of a small list). */
static size_t order(const dplace *p, size_t d, int cls, int32_t *ord, double *key)
{
    size_t m = 0;
    for (size_t k = 0; k < p->np; k++) {
        const pool *q = &p->pools[k];
        if (q->used >= q->size)
            continue;
        int c, h = dpl_holder_for(p, k, d, &c);
        if (h < 0 || c != cls)
            continue;
        double l = cls == 2 ? site_lat(p, dpl_node_site(p, h), dev_site(p, d)) : 0;
        size_t j = m++;
        while (j > 0 && key[j - 1] > l) {
            key[j] = key[j - 1];
            ord[j] = ord[j - 1];
            j--;
        }
        key[j] = l;
        ord[j] = (int32_t)k;
    }
    return m;
}

int dpl_plan_make(dplace *p, const int64_t *demand, const int *skip, dpl_plan *out)
{
    memset(out, 0, sizeof *out);
    size_t nd = p->nd;
    int64_t D = p->s->dataset.samples;
    /* takes per device are gathered per pass, then laid out per device */
    dpl_plan tmp = {0};
    int64_t *need = dp_calloc(nd + 1, sizeof *need);
    size_t *owner = NULL, *cnt = dp_calloc(nd + 1, sizeof *cnt);
    int32_t *ord = dp_malloc((p->np + 1) * sizeof *ord);
    double *key = dp_malloc((p->np + 1) * sizeof *key);
    out->off = dp_calloc(nd + 1, sizeof *out->off);
    out->lost = dp_calloc(nd + 1, sizeof *out->lost);
    int rc = DP_ENOMEM;
    if (!need || !cnt || !ord || !key || !out->off || !out->lost)
        goto done;
    for (size_t k = 0; k < p->np; k++)
        p->pools[k].used = 0;
    size_t owner_cap = 0;
#define TAKE(dev, t)                                                                                         \
    do {                                                                                                     \
        size_t before = tmp.n;                                                                               \
        if (add_take(&tmp, (t)))                                                                             \
            goto done;                                                                                       \
        if (tmp.n > before) {                                                                                \
            if (tmp.n > owner_cap) {                                                                         \
                size_t c = owner_cap ? 2 * owner_cap : 64;                                                   \
                size_t *no = dp_realloc(owner, c * sizeof *no);                                              \
                if (!no)                                                                                     \
                    goto done;                                                                               \
                owner = no, owner_cap = c;                                                                   \
            }                                                                                                \
            owner[tmp.n - 1] = (dev);                                                                        \
            cnt[dev]++;                                                                                      \
        }                                                                                                    \
    } while (0)
    for (size_t d = 0; d < nd; d++)
        need[d] = skip && skip[d] ? 0 : demand[d];
    /* replicated: every pool whole, from its nearest holder, none used up */
    for (size_t d = 0; d < nd; d++) {
        if (need[d] < D)
            continue;
        for (size_t k = 0; k < p->np; k++) {
            const pool *q = &p->pools[k];
            int h = dpl_holder_for(p, k, d, NULL);
            if (h < 0)
                out->lost[d] += q->size;
            else
                TAKE(d, ((dpl_take){(int32_t)k, h, q->first, q->size}));
        }
        need[d] = 0;
    }
    /* a partition: own slice, then the device's site, then the nearest sites */
    for (int pass = 0; pass < 3; pass++)
        for (size_t d = 0; d < nd; d++) {
            if (need[d] <= 0)
                continue;
            size_t m;
            if (pass == 0) {
                m = 0;
                int k = p->dev_pool[d];
                if (k >= 0 && !p->down[d + 1])
                    ord[m++] = k;
            } else {
                m = order(p, d, pass, ord, key);
            }
            for (size_t j = 0; j < m && need[d] > 0; j++) {
                pool *q = &p->pools[ord[j]];
                int64_t n = q->size - q->used < need[d] ? q->size - q->used : need[d];
                if (n <= 0)
                    continue;
                int h = pass == 0 ? (int)d + 1 : dpl_holder_for(p, (size_t)ord[j], d, NULL);
                TAKE(d, ((dpl_take){ord[j], h, q->first + q->used, n}));
                q->used += n;
                need[d] -= n;
            }
        }
    for (size_t d = 0; d < nd; d++)
        out->lost[d] += need[d] > 0 ? need[d] : 0;
#undef TAKE
    /* lay the takes out per device, each device's in the order taken */
    out->takes = dp_malloc((tmp.n ? tmp.n : 1) * sizeof *out->takes);
    if (!out->takes)
        goto done;
    out->n = out->cap = tmp.n;
    for (size_t d = 0; d < nd; d++)
        out->off[d + 1] = out->off[d] + cnt[d];
    memset(cnt, 0, (nd + 1) * sizeof *cnt);
    for (size_t i = 0; i < tmp.n; i++) {
        size_t d = owner[i];
        out->takes[out->off[d] + cnt[d]++] = tmp.takes[i];
    }
    rc = 0;
done:
    dp_free(tmp.takes);
    dp_free(need);
    dp_free(owner);
    dp_free(cnt);
    dp_free(ord);
    dp_free(key);
    if (rc)
        dpl_plan_free(out);
    return rc;
}

double dpl_path_rate(const scn_scenario *s, const dplace *p, int from, size_t d, double *lat)
{
    size_t nd = s->n_devices;
    const scn_group *g = &s->groups[s->devices[d].group];
    double r = g->link.down_Bps, l = g->link.latency_s;
    int hs = p ? dpl_node_site(p, from) : s->server.site, ds = g->site;
    if (from == 0) {
        r = fmin(r, s->server.nic_up_Bps);
    } else if ((size_t)from <= nd) {
        const scn_group *h = &s->groups[s->devices[from - 1].group];
        r = fmin(r, h->link.up_Bps);
        l += h->link.latency_s;
    } else {
        r = fmin(r, s->data->store[hs].read_Bps);
        l += s->data->store[hs].latency_s;
    }
    if (hs >= 0 && ds >= 0 && hs != ds) {
        size_t idx[WORLD_MAX_WAN_HOPS], nh = 0;
        int fw[WORLD_MAX_WAN_HOPS];
        double wl = 0;
        if (!world_wan_route(s, hs, ds, idx, fw, &nh, &wl)) {
            for (size_t k = 0; k < nh; k++)
                r = fmin(r, s->wan[idx[k]].bandwidth_Bps);
            l += wl;
        }
    }
    if (s->network.tcp_window_bytes > 0 && l > 0)
        r = fmin(r, s->network.tcp_window_bytes / (2 * l));
    *lat = l;
    return r;
}

double dpl_read_rate(const scn_scenario *s, const dplace *p, size_t d)
{
    double lat;
    if (!p)
        return dpl_path_rate(s, NULL, 0, d, &lat);
    int best = -1, bc = 3;
    double bl = INFINITY;
    for (size_t k = 0; k < p->np; k++) {
        int c, h = dpl_holder_for(p, k, d, &c);
        if (h < 0 || h == (int)d + 1)
            continue;
        dpl_path_rate(s, p, h, d, &lat);
        if (c < bc || (c == bc && lat < bl))
            best = h, bc = c, bl = lat;
    }
    return best >= 0 ? dpl_path_rate(s, p, best, d, &lat) : 0;
}
