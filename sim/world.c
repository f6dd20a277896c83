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
    /* Site pairs with no WAN entry of their own but a route over others:
     * [a * n_sites + b] offset into route_links (-1: no route), hop count,
     * latency. */
    int *route_off;
    unsigned char *route_n;
    double *route_lat;
    int *route_links;
    size_t n_route_links;
};

int world_wan_route(const scn_scenario *s, int a, int b, size_t *wan_idx, int *forward, size_t *n_hops,
                    double *latency_s)
{
    size_t ns = s->n_sites, H = WORLD_MAX_WAN_HOPS;
    *n_hops = 0;
    *latency_s = 0;
    if (a < 0 || b < 0 || a == b || (size_t)a >= ns || (size_t)b >= ns)
        return 0;
    for (size_t k = 0; k < s->n_wan; k++) { /* a pair's own link, whatever its latency */
        const scn_wan *x = &s->wan[k];
        if ((x->site_a == a && x->site_b == b) || (x->site_a == b && x->site_b == a)) {
            wan_idx[0] = k;
            forward[0] = x->site_a == a;
            *n_hops = 1;
            *latency_s = x->latency_s;
            return 0;
        }
    }
    /* Least latency over walks of exactly h links, h = 1..H (layered
     * Bellman-Ford); the fewest hops among equal latencies; ties between
     * links go to the first listed.  par[h][v]: the link (2k + reversed)
     * that reached v with h hops. */
    double *dist = dp_malloc((H + 1) * ns * sizeof *dist);
    long *par = dp_malloc((H + 1) * ns * sizeof *par);
    if (!dist || !par) {
        dp_free(dist);
        dp_free(par);
        return DP_ENOMEM;
    }
    for (size_t i = 0; i < (H + 1) * ns; i++) {
        dist[i] = INFINITY;
        par[i] = -1;
    }
    dist[a] = 0;
    size_t best_h = 0;
    for (size_t h = 1; h <= H; h++) {
        const double *dp = dist + (h - 1) * ns;
        double *dc = dist + h * ns;
        long *pc = par + h * ns;
        for (size_t k = 0; k < s->n_wan; k++)
            for (int rev = 0; rev < 2; rev++) {
                const scn_wan *x = &s->wan[k];
                int u = rev ? x->site_b : x->site_a, v = rev ? x->site_a : x->site_b;
                double c = dp[u] + x->latency_s;
                if (c < dc[v]) {
                    dc[v] = c;
                    pc[v] = (long)(2 * k + (size_t)rev);
                }
            }
        if (dc[b] < INFINITY && (best_h == 0 || dc[b] < dist[best_h * ns + (size_t)b]))
            best_h = h;
    }
    int rc = 0;
    if (best_h == 0) {
        /* nothing within H links: either no route at all (a direct,
         * unconstrained path, as for a pair without WAN) or a longer one */
        double *reach = dp_calloc(ns, sizeof *reach);
        size_t *stack = dp_malloc(ns * sizeof *stack);
        if (!reach || !stack) {
            rc = DP_ENOMEM;
        } else {
            size_t top = 0;
            reach[a] = 1;
            stack[top++] = (size_t)a;
            while (top > 0) {
                size_t u = stack[--top];
                for (size_t k = 0; k < s->n_wan; k++) {
                    const scn_wan *x = &s->wan[k];
                    int v = (size_t)x->site_a == u ? x->site_b : (size_t)x->site_b == u ? x->site_a : -1;
                    if (v >= 0 && !reach[v]) {
                        reach[v] = 1;
                        stack[top++] = (size_t)v;
                    }
                }
            }
            if (reach[b])
                rc = DP_EINPUT;
        }
        dp_free(reach);
        dp_free(stack);
    } else {
        *n_hops = best_h;
        *latency_s = dist[best_h * ns + (size_t)b];
        int v = b;
        for (size_t h = best_h; h >= 1; h--) {
            long e = par[h * ns + (size_t)v];
            size_t k = (size_t)e / 2;
            int rev = (int)(e % 2);
            wan_idx[h - 1] = k;
            forward[h - 1] = !rev;
            v = rev ? s->wan[k].site_b : s->wan[k].site_a;
        }
    }
    dp_free(dist);
    dp_free(par);
    return rc;
}

/* Routes for the site pairs in use that lack a WAN entry of their own. */
static int build_routes(world *w, dp_err *err)
{
    const scn_scenario *s = w->s;
    size_t ns = s->n_sites;
    if (ns < 3 || s->n_wan == 0)
        return 0; /* two sites: their own link or none */
    char *used = dp_calloc(ns, 1);
    w->route_off = dp_malloc(ns * ns * sizeof *w->route_off);
    w->route_n = dp_calloc(ns * ns, 1);
    w->route_lat = dp_calloc(ns * ns, sizeof *w->route_lat);
    int rc = 0;
    if (!used || !w->route_off || !w->route_n || !w->route_lat) {
        rc = dp_err_set(err, DP_ENOMEM, "world: out of memory for %zu sites", ns);
        goto done;
    }
    for (size_t i = 0; i < ns * ns; i++)
        w->route_off[i] = -1;
    if (s->server.site >= 0)
        used[s->server.site] = 1;
    for (size_t g = 0; g < s->n_groups; g++)
        if (s->groups[g].site >= 0 && s->groups[g].count > 0)
            used[s->groups[g].site] = 1;
    for (size_t a = 0; a < ns; a++)
        for (size_t b = 0; b < ns && !rc; b++) {
            if (a == b || !used[a] || !used[b] || w->wan[a * ns + b] >= 0)
                continue;
            size_t idx[WORLD_MAX_WAN_HOPS], nh;
            int fwd[WORLD_MAX_WAN_HOPS];
            double lat;
            int r = world_wan_route(s, (int)a, (int)b, idx, fwd, &nh, &lat);
            if (r == DP_EINPUT) {
                rc = dp_err_set(err, DP_EINPUT,
                                "wan: sites %s and %s are connected only over more than %d WAN links; add a "
                                "wan entry between them or a shorter route",
                                s->sites[a], s->sites[b], WORLD_MAX_WAN_HOPS);
                break;
            }
            if (r) {
                rc = dp_err_set(err, DP_ENOMEM, "world: out of memory routing sites");
                break;
            }
            if (nh == 0)
                continue;
            int *nl = dp_realloc(w->route_links, (w->n_route_links + nh) * sizeof *nl);
            if (!nl) {
                rc = dp_err_set(err, DP_ENOMEM, "world: out of memory routing sites");
                break;
            }
            w->route_links = nl;
            w->route_off[a * ns + b] = (int)w->n_route_links;
            w->route_n[a * ns + b] = (unsigned char)nh;
            w->route_lat[a * ns + b] = lat;
            for (size_t h = 0; h < nh; h++) {
                const scn_wan *x = &s->wan[idx[h]];
                size_t u = (size_t)(fwd[h] ? x->site_a : x->site_b),
                       v = (size_t)(fwd[h] ? x->site_b : x->site_a);
                w->route_links[w->n_route_links++] = w->wan[u * ns + v];
            }
        }
done:
    dp_free(used);
    return rc;
}

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
    if (build_routes(w, err))
        goto fail;
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
    dp_free(w->route_off);
    dp_free(w->route_n);
    dp_free(w->route_lat);
    dp_free(w->route_links);
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
    /* WAN between sites: the pair's own link, else the least-latency route
     * over other sites' links; sites no WAN links connect have a direct
     * (unconstrained) path */
    int sa = site_of(w, from), sb = site_of(w, to);
    if (sa >= 0 && sb >= 0 && sa != sb) {
        size_t ix = (size_t)sa * w->s->n_sites + (size_t)sb;
        if (w->wan[ix] >= 0) {
            links[k++] = w->wan[ix];
            lat += w->wan_lat[ix];
        } else if (w->route_off && w->route_off[ix] >= 0) {
            for (size_t h = 0; h < w->route_n[ix]; h++)
                links[k++] = w->route_links[(size_t)w->route_off[ix] + h];
            lat += w->route_lat[ix];
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
