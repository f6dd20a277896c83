/* world.c: scenario -> engine + links + compute model. */
#include "world.h"

#include <math.h>
#include <stdio.h>

struct world {
    const scn_scenario *s;
    sim_engine *e;
    net *n;
    cmp_model *c;
    size_t nd;
    int *up, *down, *pup, *pdown; /* per device */
    int nic_up, nic_down;         /* -1 when unlimited */
    int *wan;                     /* [a * n_sites + b] directed link a -> b, -1 none */
    double *wan_lat;
};

static int add(world *w, double cap, const trace *tr, const char *fmt, const char *name, dp_err *err)
{
    char buf[160];
    snprintf(buf, sizeof buf, fmt, name);
    int l = net_link_add(w->n, cap, tr, buf);
    if (l < 0)
        dp_err_set(err, DP_ENOMEM, "world: cannot add link %s", buf);
    return l;
}

world *world_new(const scn_scenario *s, uint64_t seed, dp_err *err)
{
    world *w = dp_calloc(1, sizeof *w);
    if (!w) {
        dp_err_set(err, DP_ENOMEM, "world: out of memory");
        return NULL;
    }
    w->s = s;
    w->nd = s->n_devices;
    size_t ns = s->n_sites;
    if (!(w->e = sim_engine_new(err)) || !(w->n = net_new(w->e, err)) || !(w->c = cmp_new(s, seed, err)))
        goto fail;
    w->up = dp_calloc(w->nd + 1, sizeof(int));
    w->down = dp_calloc(w->nd + 1, sizeof(int));
    w->pup = dp_calloc(w->nd + 1, sizeof(int));
    w->pdown = dp_calloc(w->nd + 1, sizeof(int));
    w->wan = dp_calloc(ns * ns + 1, sizeof(int));
    w->wan_lat = dp_calloc(ns * ns + 1, sizeof(double));
    if (!w->up || !w->down || !w->pup || !w->pdown || !w->wan || !w->wan_lat) {
        dp_err_set(err, DP_ENOMEM, "world: out of memory");
        goto fail;
    }
    w->nic_up = w->nic_down = -1;
    if (isfinite(s->server.nic_up_Bps) &&
        (w->nic_up = add(w, s->server.nic_up_Bps, NULL, "server.nic.up%s", "", err)) < 0)
        goto fail;
    if (isfinite(s->server.nic_down_Bps) &&
        (w->nic_down = add(w, s->server.nic_down_Bps, NULL, "server.nic.down%s", "", err)) < 0)
        goto fail;
    for (size_t i = 0; i < ns * ns; i++)
        w->wan[i] = -1;
    for (size_t k = 0; k < s->n_wan; k++) {
        const scn_wan *x = &s->wan[k];
        char nm[160];
        snprintf(nm, sizeof nm, "%s-%s", s->sites[x->site_a], s->sites[x->site_b]);
        int ab = add(w, x->bandwidth_Bps, x->trace, "wan.%s.fwd", nm, err);
        int ba = ab < 0 ? -1 : add(w, x->bandwidth_Bps, x->trace, "wan.%s.rev", nm, err);
        if (ab < 0 || ba < 0)
            goto fail;
        w->wan[(size_t)x->site_a * ns + (size_t)x->site_b] = ab;
        w->wan[(size_t)x->site_b * ns + (size_t)x->site_a] = ba;
        w->wan_lat[(size_t)x->site_a * ns + (size_t)x->site_b] = x->latency_s;
        w->wan_lat[(size_t)x->site_b * ns + (size_t)x->site_a] = x->latency_s;
    }
    for (size_t d = 0; d < w->nd; d++) {
        const scn_group *g = &s->groups[s->devices[d].group];
        const char *nm = s->devices[d].name;
        if ((w->up[d] = add(w, g->link.up_Bps, g->link.up_trace, "%s.up", nm, err)) < 0 ||
            (w->down[d] = add(w, g->link.down_Bps, g->link.down_trace, "%s.down", nm, err)) < 0)
            goto fail;
        w->pup[d] = w->pdown[d] = -1;
        if (s->interconnect.bandwidth_Bps > 0 &&
            ((w->pup[d] = add(w, s->interconnect.bandwidth_Bps, NULL, "%s.peer.up", nm, err)) < 0 ||
             (w->pdown[d] = add(w, s->interconnect.bandwidth_Bps, NULL, "%s.peer.down", nm, err)) < 0))
            goto fail;
    }
    return w;
fail:
    world_free(w);
    return NULL;
}

void world_free(world *w)
{
    if (!w)
        return;
    net_free(w->n);
    sim_engine_free(w->e);
    cmp_free(w->c);
    dp_free(w->up);
    dp_free(w->down);
    dp_free(w->pup);
    dp_free(w->pdown);
    dp_free(w->wan);
    dp_free(w->wan_lat);
    dp_free(w);
}

sim_engine *world_engine(world *w)
{
    return w->e;
}
net *world_net(world *w)
{
    return w->n;
}
cmp_model *world_compute(world *w)
{
    return w->c;
}
size_t world_n_devices(const world *w)
{
    return w->nd;
}
int world_dev_up(const world *w, size_t d)
{
    return w->up[d];
}
int world_dev_down(const world *w, size_t d)
{
    return w->down[d];
}
int world_dev_peer_up(const world *w, size_t d)
{
    return w->pup[d];
}
int world_dev_peer_down(const world *w, size_t d)
{
    return w->pdown[d];
}

static int site_of(const world *w, int node)
{
    return node == 0 ? w->s->server.site : w->s->groups[w->s->devices[node - 1].group].site;
}

int world_path(const world *w, int from, int to, int *links, size_t *n_links, double *latency_s)
{
    int nn = (int)w->nd;
    if (from == to || from < 0 || to < 0 || from > nn || to > nn)
        return DP_EINPUT;
    size_t k = 0;
    double lat = 0;
    int peer = from > 0 && to > 0 && w->s->interconnect.bandwidth_Bps > 0;
    /* sender's access */
    if (from == 0) {
        if (w->nic_up >= 0)
            links[k++] = w->nic_up;
    } else {
        links[k++] = peer ? w->pup[from - 1] : w->up[from - 1];
        lat +=
            peer ? w->s->interconnect.latency_s : w->s->groups[w->s->devices[from - 1].group].link.latency_s;
    }
    /* WAN between sites; a pair with no WAN entry is a direct (unconstrained) path */
    int sa = site_of(w, from), sb = site_of(w, to);
    if (sa >= 0 && sb >= 0 && sa != sb) {
        size_t ix = (size_t)sa * w->s->n_sites + (size_t)sb;
        if (w->wan[ix] >= 0) {
            links[k++] = w->wan[ix];
            lat += w->wan_lat[ix];
        }
    }
    /* receiver's access */
    if (to == 0) {
        if (w->nic_down >= 0)
            links[k++] = w->nic_down;
    } else {
        links[k++] = peer ? w->pdown[to - 1] : w->down[to - 1];
        lat += peer ? w->s->interconnect.latency_s : w->s->groups[w->s->devices[to - 1].group].link.latency_s;
    }
    *n_links = k;
    *latency_s = lat;
    return 0;
}

uint64_t world_transfer(world *w, int from, int to, double bytes, net_done_fn done, void *ctx)
{
    int links[NET_MAX_PATH];
    size_t nl;
    double lat;
    if (world_path(w, from, to, links, &nl, &lat))
        return 0;
    double cap = INFINITY;
    if (w->s->network.tcp_window_bytes > 0 && lat > 0)
        cap = w->s->network.tcp_window_bytes / (2 * lat);
    return net_flow_start(w->n, links, nl, bytes, lat, cap, done, ctx);
}
