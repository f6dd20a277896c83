/* world.c: scenario -> engine + links + compute model, and the world's
 * own changes: link outages and device availability.
 *
 * Availability: every device starts up; a seeded process draws the next
 * transition from the device's own stream (compute.h cmp_stream) when one
 * happens, so the failures depend on the seed alone, whatever a policy
 * does.  In a world with failures every transfer is tracked by its two
 * ends, so a device going down can cut the flows to and from it (their
 * callbacks never run; bytes already sent count on the links); a transfer
 * started to or from a device that is down never starts and never ends.
 * Worlds without failures keep the direct path (no tracking). */
#include "world.h"

#include <gsl/gsl_randist.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

/* A tracked transfer (worlds with failures). */
typedef struct xf {
    world *w;
    uint64_t id; /* 0: free */
    int from, to;
    int sdev, rdev; /* world_on_flow: the devices sending and receiving (-1: none) */
    net_done_fn done;
    void *ctx;
    struct xf *next_free;
} xf;

#define XF_BLOCK 256

typedef struct wdev {
    world *w;
    size_t d;
    int up;
    double down_since;
    double next_s; /* next transition, INFINITY: none */
    uint64_t ev;
    gsl_rng *rng; /* seeded process; NULL with a trace or always up */
    const trace *tr;
} wdev;

typedef struct outage_ev {
    world *w;
    int link;
    int down;
} outage_ev;

struct world {
    const scn_scenario *s;
    sim_engine *e;
    net *n;
    cmp_model *c;
    size_t nd;
    /* per device, what a route needs in one place (world_path touches one
     * cache line per device instead of five arrays and its group) */
    struct wroute {
        int up, down, pup, pdown; /* its links; pup/pdown -1 without an interconnect */
        int site;                 /* its group's */
        double lat;               /* its access links' latency */
    } * r;
    int nic_up, nic_down; /* -1 when unlimited */
    /* with scenario data (dataset.storage, .caches): per site, the read
     * link of its storage (nodes nd + 1 + S + site, S the regional servers
     * below) and of its cache (nodes nd + 1 + S + n_sites + site); -1
     * unlimited.  NULL without. */
    int *xread;
    /* regional servers (scenario `servers:`): node nd + 1 + k has NIC
     * links rs_up[k], rs_down[k] (-1 when unlimited), after every device's */
    int *rs_up, *rs_down;
    /* device d's access (and peer) links are dev_link0 + per_dev * d + k,
     * k = up, down (, peer up, peer down): named when asked (dev_link_name) */
    int dev_link0, per_dev;
    int *wan; /* [a * n_sites + b] directed link a -> b, -1 none */
    double *wan_lat;
    /* Site pairs with no WAN entry of their own but a route over others:
     * [a * n_sites + b] offset into route_links (-1: no route), hop count,
     * latency. */
    int *route_off;
    unsigned char *route_n;
    double *route_lat;
    int *route_links;
    size_t n_route_links;
    /* the dynamic world */
    int track;             /* failures possible: transfers tracked */
    world_flow_fn flow_fn; /* world_on_flow (transfers tracked for it too) */
    void *flow_ctx;
    wdev *dev; /* per device */
    xf **xblocks;
    size_t n_xblocks;
    xf *xfree;
    uint64_t dead_id; /* ids of transfers that never start, counting down */
    outage_ev *oev;
    size_t n_oev;
    world_dev_fn dev_fn;
    void *dev_ctx;
    int failures;
    double cut_bytes;
    int view; /* world_new_view: engine, links and routes are the parent's */
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
    for (size_t k = 0; k < s->n_servers; k++)
        used[s->servers[k].site] = 1;
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

/* A link named a followed by b (no format: two per device were a tenth of
 * setting up a world of 10^6 devices). */
static int add(world *w, double cap, const trace *tr, const char *a, const char *b, dp_err *err)
{
    char buf[160];
    size_t na = strnlen(a, sizeof buf - 1), nb = strnlen(b, sizeof buf - 1 - na);
    memcpy(buf, a, na);
    memcpy(buf + na, b, nb);
    buf[na + nb] = '\0';
    int l = net_link_add(w->n, cap, tr, buf);
    if (l < 0)
        dp_err_set(err, DP_ENOMEM, "world: cannot add link %s", buf);
    return l;
}

static int dyn_init(world *w, uint64_t seed, dp_err *err);

/* A device link's name, as a named one would have been ("<device>.up",
 * ".down", ".peer.up", ".peer.down"; at most 159 bytes). */
static const char *dev_link_name(void *ctx, int link, char *buf, size_t cap)
{
    static const char *const sfx[] = {".up", ".down", ".peer.up", ".peer.down"};
    const world *w = ctx;
    int dev, dir;
    world_link_owner(w, link, &dev, &dir);
    if (dev < 0 || cap == 0)
        return "link";
    snprintf(buf, cap < 160 ? cap : 160, "%s%s", w->s->devices[dev].name, sfx[dir]);
    return buf;
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
    if (net_set_sharing(w->n, s->network.sharing == SCN_SHARE_RTT ? NET_SHARE_RTT : NET_SHARE_MAXMIN)) {
        dp_err_set(err, DP_EINPUT, "world: unknown network.sharing");
        goto fail;
    }
    w->r = dp_calloc(w->nd + 1, sizeof *w->r);
    w->wan = dp_calloc(ns * ns + 1, sizeof(int));
    w->wan_lat = dp_calloc(ns * ns + 1, sizeof(double));
    if (!w->r || !w->wan || !w->wan_lat) {
        dp_err_set(err, DP_ENOMEM, "world: out of memory");
        goto fail;
    }
    w->nic_up = w->nic_down = -1;
    if (isfinite(s->server.nic_up_Bps) &&
        (w->nic_up = add(w, s->server.nic_up_Bps, NULL, "server.nic.up", "", err)) < 0)
        goto fail;
    if (isfinite(s->server.nic_down_Bps) &&
        (w->nic_down = add(w, s->server.nic_down_Bps, NULL, "server.nic.down", "", err)) < 0)
        goto fail;
    for (size_t i = 0; i < ns * ns; i++)
        w->wan[i] = -1;
    for (size_t k = 0; k < s->n_wan; k++) {
        const scn_wan *x = &s->wan[k];
        char nm[160];
        snprintf(nm, sizeof nm, "wan.%s-%s", s->sites[x->site_a], s->sites[x->site_b]);
        int ab = add(w, x->bandwidth_Bps, x->trace, nm, ".fwd", err);
        int ba = ab < 0 ? -1 : add(w, x->bandwidth_Bps, x->trace, nm, ".rev", err);
        if (ab < 0 || ba < 0)
            goto fail;
        w->wan[(size_t)x->site_a * ns + (size_t)x->site_b] = ab;
        w->wan[(size_t)x->site_b * ns + (size_t)x->site_a] = ba;
        w->wan_lat[(size_t)x->site_a * ns + (size_t)x->site_b] = x->latency_s;
        w->wan_lat[(size_t)x->site_b * ns + (size_t)x->site_a] = x->latency_s;
    }
    w->dev_link0 = (int)net_link_count(w->n);
    w->per_dev = s->interconnect.bandwidth_Bps > 0 ? 4 : 2;
    net_set_namer(w->n, dev_link_name, w);
    for (size_t d = 0; d < w->nd; d++) {
        const scn_group *g = &s->groups[s->devices[d].group];
        struct wroute *r = &w->r[d];
        r->site = g->site;
        r->lat = g->link.latency_s;
        r->pup = r->pdown = -1;
        if ((r->up = net_link_add(w->n, g->link.up_Bps, g->link.up_trace, NULL)) < 0 ||
            (r->down = net_link_add(w->n, g->link.down_Bps, g->link.down_trace, NULL)) < 0 ||
            (w->per_dev == 4 &&
             ((r->pup = net_link_add(w->n, s->interconnect.bandwidth_Bps, NULL, NULL)) < 0 ||
              (r->pdown = net_link_add(w->n, s->interconnect.bandwidth_Bps, NULL, NULL)) < 0))) {
            dp_err_set(err, DP_ENOMEM, "world: cannot add the links of device %s", s->devices[d].name);
            goto fail;
        }
    }
    if (s->n_servers) {
        w->rs_up = dp_malloc(s->n_servers * sizeof *w->rs_up);
        w->rs_down = dp_malloc(s->n_servers * sizeof *w->rs_down);
        if (!w->rs_up || !w->rs_down) {
            dp_err_set(err, DP_ENOMEM, "world: out of memory");
            goto fail;
        }
        for (size_t k = 0; k < s->n_servers; k++) {
            const struct scn_rserver *v = &s->servers[k];
            char nm[160];
            snprintf(nm, sizeof nm, "server.%s.nic", s->sites[v->site]);
            w->rs_up[k] = w->rs_down[k] = -1;
            if ((isfinite(v->nic_up_Bps) &&
                 (w->rs_up[k] = add(w, v->nic_up_Bps, NULL, nm, ".up", err)) < 0) ||
                (isfinite(v->nic_down_Bps) &&
                 (w->rs_down[k] = add(w, v->nic_down_Bps, NULL, nm, ".down", err)) < 0))
                goto fail;
        }
    }
    if (s->data && ns) { /* after every other link: their indices stay as they were */
        if (!(w->xread = dp_calloc(2 * ns, sizeof(int)))) {
            dp_err_set(err, DP_ENOMEM, "world: out of memory");
            goto fail;
        }
        for (size_t k = 0; k < 2 * ns; k++) {
            double cap = k < ns ? s->data->store[k].read_Bps : s->data->cache[k - ns].read_Bps;
            w->xread[k] = -1;
            if (isfinite(cap) &&
                (w->xread[k] = add(w, cap, NULL, k < ns ? "storage." : "cache.", s->sites[k % ns], err)) < 0)
                goto fail;
        }
    }
    if (dyn_init(w, seed, err))
        goto fail;
    if (build_routes(w, err))
        goto fail;
    return w;
fail:
    world_free(w);
    return NULL;
}

/* A job's view of a shared world (world.h): a copy of the parent's record
 * that borrows its engine, network, WAN and routes, with its own device
 * table (the parent's routes of the devices it was given, in that order),
 * its own compute model (the sub-scenario's devices, so a job alone on the
 * same devices computes the same bits) and its own transfer tracking (so a
 * job stopped by its scheduler cuts only its own flows). */
world *world_new_view(world *parent, const scn_scenario *sub, const size_t *map, uint64_t seed, dp_err *err)
{
    world *w = dp_malloc(sizeof *w);
    if (!w) {
        dp_err_set(err, DP_ENOMEM, "world: out of memory");
        return NULL;
    }
    *w = *parent;
    w->view = 1;
    w->nd = sub->n_devices;
    w->c = NULL;
    w->dev = NULL;
    w->xblocks = NULL;
    w->n_xblocks = 0;
    w->xfree = NULL;
    w->dead_id = UINT64_MAX;
    w->dev_fn = NULL;
    w->flow_fn = NULL;
    w->failures = 0;
    w->cut_bytes = 0;
    w->track = 1;
    w->r = dp_calloc(w->nd + 1, sizeof *w->r);
    w->dev = dp_calloc(w->nd + 1, sizeof *w->dev);
    if (!w->r || !w->dev)
        dp_err_set(err, DP_ENOMEM, "world: out of memory");
    if (!w->r || !w->dev || !(w->c = cmp_new(sub, seed, err))) {
        world_free(w);
        return NULL;
    }
    for (size_t d = 0; d < w->nd; d++) {
        w->r[d] = parent->r[map[d]];
        w->dev[d] = (wdev){.w = w, .d = d, .up = 1, .next_s = INFINITY};
    }
    return w;
}

void world_free(world *w)
{
    if (!w)
        return;
    if (w->view) {
        cmp_free(w->c);
        dp_free(w->r);
        dp_free(w->dev);
        for (size_t b = 0; b < w->n_xblocks; b++)
            dp_free(w->xblocks[b]);
        dp_free(w->xblocks);
        dp_free(w);
        return;
    }
    net_free(w->n);
    sim_engine_free(w->e);
    cmp_free(w->c);
    dp_free(w->r);
    dp_free(w->rs_up);
    dp_free(w->rs_down);
    dp_free(w->wan);
    dp_free(w->wan_lat);
    dp_free(w->xread);
    dp_free(w->route_off);
    dp_free(w->route_n);
    dp_free(w->route_lat);
    dp_free(w->route_links);
    for (size_t d = 0; w->dev && d < w->nd; d++)
        if (w->dev[d].rng)
            gsl_rng_free(w->dev[d].rng);
    dp_free(w->dev);
    for (size_t b = 0; b < w->n_xblocks; b++)
        dp_free(w->xblocks[b]);
    dp_free(w->xblocks);
    dp_free(w->oev);
    dp_free(w);
}

void world_view_set_engine(world *view, sim_engine *e)
{
    if (view->view)
        view->e = e;
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
int world_dev_up(const world *w, size_t d)
{
    return w->r[d].up;
}
int world_dev_down(const world *w, size_t d)
{
    return w->r[d].down;
}
int world_dev_peer_up(const world *w, size_t d)
{
    return w->r[d].pup;
}
int world_dev_peer_down(const world *w, size_t d)
{
    return w->r[d].pdown;
}

static int site_of(const world *w, int node)
{
    if (node == 0)
        return w->s->server.site;
    if ((size_t)node <= w->nd)
        return w->r[node - 1].site;
    if ((size_t)node <= w->nd + w->s->n_servers) /* a regional server */
        return w->s->servers[(size_t)node - w->nd - 1].site;
    /* a site's storage or cache */
    return (int)(((size_t)node - w->nd - 1 - w->s->n_servers) % w->s->n_sites);
}

int world_store_node(const world *w, int site, int cache)
{
    if (!w->xread || site < 0 || (size_t)site >= w->s->n_sites)
        return -1;
    return (int)(w->nd + 1 + w->s->n_servers + (cache ? w->s->n_sites : 0) + (size_t)site);
}

void world_prefetch_dev(const world *w, size_t d, int down)
{
    if (d >= w->nd || w->view)
        return;
    __builtin_prefetch(&w->r[d]);
    int l0 = w->dev_link0 + w->per_dev * (int)d; /* up, then down (world_new) */
    net_link_prefetch(w->n, l0);
    if (down)
        net_link_prefetch(w->n, l0 + 1);
}

int world_path(const world *w, int from, int to, int *links, size_t *n_links, double *latency_s)
{
    int nn = (int)w->nd, nsrv = (int)w->s->n_servers, nx = w->xread ? 2 * (int)w->s->n_sites : 0;
    if (from == to || from < 0 || to < 0 || from > nn + nsrv + nx || to > nn + nsrv)
        return DP_EINPUT;
    size_t k = 0;
    double lat = 0;
    int peer = from > 0 && to > 0 && from <= nn && to <= nn && w->s->interconnect.bandwidth_Bps > 0;
    /* sender's access */
    if (from > nn + nsrv) { /* a site's storage or cache: its read link */
        int x = from - nn - nsrv - 1;
        if (w->xread[x] >= 0)
            links[k++] = w->xread[x];
        if (x < nx / 2)
            lat += w->s->data->store[x].latency_s;
    } else if (from == 0) {
        if (w->nic_up >= 0)
            links[k++] = w->nic_up;
    } else if (from > nn) { /* a regional server */
        if (w->rs_up[from - nn - 1] >= 0)
            links[k++] = w->rs_up[from - nn - 1];
    } else {
        links[k++] = peer ? w->r[from - 1].pup : w->r[from - 1].up;
        lat += peer ? w->s->interconnect.latency_s : w->r[from - 1].lat;
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
    } else if (to > nn) {
        if (w->rs_down[to - nn - 1] >= 0)
            links[k++] = w->rs_down[to - nn - 1];
    } else {
        links[k++] = peer ? w->r[to - 1].pdown : w->r[to - 1].down;
        lat += peer ? w->s->interconnect.latency_s : w->r[to - 1].lat;
    }
    *n_links = k;
    *latency_s = lat;
    return 0;
}

/* world_on_flow's hook at a tracked transfer's end (done, cancelled or cut). */
static void flow_end(const xf *x)
{
    if (x->w->flow_fn && (x->sdev >= 0 || x->rdev >= 0))
        x->w->flow_fn(x->w->flow_ctx, x->sdev, x->rdev, 0);
}

static void on_xf_done(void *ctx, uint64_t id)
{
    (void)id;
    xf *x = ctx;
    world *w = x->w;
    net_done_fn done = x->done;
    void *c = x->ctx;
    uint64_t fid = x->id;
    flow_end(x);
    x->id = 0;
    x->next_free = w->xfree;
    w->xfree = x;
    if (done)
        done(c, fid);
}

static xf *xf_alloc(world *w)
{
    if (!w->xfree) {
        xf **nb = dp_realloc(w->xblocks, (w->n_xblocks + 1) * sizeof *nb);
        if (!nb)
            return NULL;
        w->xblocks = nb;
        xf *blk = dp_calloc(XF_BLOCK, sizeof *blk);
        if (!blk)
            return NULL;
        w->xblocks[w->n_xblocks++] = blk;
        for (int i = XF_BLOCK - 1; i >= 0; i--) {
            blk[i].w = w;
            blk[i].next_free = w->xfree;
            w->xfree = &blk[i];
        }
    }
    xf *x = w->xfree;
    w->xfree = x->next_free;
    return x;
}

/* A flow tracked by its ends (from, to: nodes, -1 for none), so cut() can
 * find it. */
static uint64_t tracked_start(world *w, int from, int to, const int *links, size_t nl, double bytes,
                              double delay_s, double cap, net_done_fn done, void *ctx)
{
    xf *x = xf_alloc(w);
    if (!x)
        return 0;
    uint64_t id = net_flow_start(w->n, links, nl, bytes, delay_s, cap, on_xf_done, x);
    if (!id) {
        x->next_free = w->xfree;
        w->xfree = x;
        return 0;
    }
    *x = (xf){w, id, from, to, -1, -1, done, ctx, NULL};
    if (w->flow_fn) { /* its sending and receiving devices: its ends, or its first and last links' owners */
        int dev, dir;
        if (from > 0 && (size_t)from <= w->nd)
            x->sdev = from - 1;
        else if (from < 0 && nl && (world_link_owner(w, links[0], &dev, &dir), dev >= 0) &&
                 (dir == 0 || dir == 2))
            x->sdev = dev;
        if (to > 0 && (size_t)to <= w->nd)
            x->rdev = to - 1;
        else if (to < 0 && nl && (world_link_owner(w, links[nl - 1], &dev, &dir), dev >= 0) &&
                 (dir == 1 || dir == 3))
            x->rdev = dev;
        if (x->sdev >= 0 || x->rdev >= 0)
            w->flow_fn(w->flow_ctx, x->sdev, x->rdev, 1);
    }
    return id;
}

void world_on_flow(world *w, world_flow_fn fn, void *ctx)
{
    w->flow_fn = fn;
    w->flow_ctx = ctx;
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
    if (!w->track && !w->flow_fn)
        return net_flow_start(w->n, links, nl, bytes, lat, cap, done, ctx);
    if (w->track && ((from > 0 && (size_t)from <= w->nd && !w->dev[from - 1].up) ||
                     (to > 0 && (size_t)to <= w->nd && !w->dev[to - 1].up)))
        return w->dead_id--; /* an end is down: nothing moves, nothing ends */
    return tracked_start(w, from, to, links, nl, bytes, lat, cap, done, ctx);
}

uint64_t world_flow_start(world *w, const int *links, size_t nl, double bytes, double delay_s, double cap,
                          net_done_fn done, void *ctx)
{
    if (!w->view && !w->flow_fn)
        return net_flow_start(w->n, links, nl, bytes, delay_s, cap, done, ctx);
    return tracked_start(w, -1, -1, links, nl, bytes, delay_s, cap, done, ctx);
}

/* Cut every tracked transfer with an end at `node` (< 0: every one). */
static void cut(world *w, int node)
{
    for (size_t b = 0; b < w->n_xblocks; b++)
        for (int i = 0; i < XF_BLOCK; i++) {
            xf *x = &w->xblocks[b][i];
            if (!x->id || (node >= 0 && x->from != node && x->to != node))
                continue;
            double sent = 0;
            net_flow_cancel(w->n, x->id, &sent);
            w->cut_bytes += sent;
            flow_end(x);
            x->id = 0;
            x->next_free = w->xfree;
            w->xfree = x;
        }
}

int world_cancel(world *w, uint64_t id, double *sent_bytes)
{
    for (size_t b = 0; (w->track || w->flow_fn) && b < w->n_xblocks; b++)
        for (int i = 0; i < XF_BLOCK; i++) {
            xf *x = &w->xblocks[b][i];
            if (x->id != id)
                continue;
            int rc = net_flow_cancel(w->n, id, sent_bytes);
            flow_end(x);
            x->id = 0;
            x->next_free = w->xfree;
            w->xfree = x;
            return rc;
        }
    return net_flow_cancel(w->n, id, sent_bytes);
}

void world_cut_all(world *w)
{
    cut(w, -1);
}

/* ---- availability and outages ------------------------------------------- */

static void on_dev_change(sim_engine *e, void *ctx, uint64_t id);

/* Draw or read device d's next transition and schedule it. */
static int dev_schedule(wdev *v)
{
    world *w = v->w;
    double now = sim_now(w->e);
    const scn_avail *a = &w->s->groups[w->s->devices[v->d].group].avail;
    if (v->rng) {
        v->next_s = now + gsl_ran_exponential(v->rng, v->up ? a->mtbf_s : a->mttr_s);
    } else {
        double val;
        v->next_s = trace_next_change(v->tr, now, &val);
    }
    v->ev = 0;
    if (isfinite(v->next_s) && !(v->ev = sim_at(w->e, v->next_s, on_dev_change, v)))
        return DP_ENOMEM;
    return 0;
}

static void on_dev_change(sim_engine *e, void *ctx, uint64_t id)
{
    (void)id;
    wdev *v = ctx;
    world *w = v->w;
    double now = sim_now(e);
    int up = v->rng ? !v->up : trace_value_at(v->tr, now) > 0.5;
    if (up != v->up) {
        v->up = up;
        if (!up) {
            w->failures++;
            v->down_since = now;
            cut(w, (int)v->d + 1);
        }
    }
    dev_schedule(v); /* out of memory: the device stays as it is */
    if (w->dev_fn)
        w->dev_fn(w->dev_ctx, v->d, up);
}

static void on_outage(sim_engine *e, void *ctx, uint64_t id)
{
    (void)e;
    (void)id;
    outage_ev *o = ctx;
    net_link_set_down(o->w->n, o->link, o->down);
}

static size_t add_outages(world *w, int link, const scn_outages *o, size_t k)
{
    for (size_t i = 0; i < o->n; i++) {
        if (w->oev) {
            w->oev[k] = (outage_ev){w, link, 1};
            w->oev[k + 1] = (outage_ev){w, link, 0};
            if (!sim_at(w->e, o->start_s[i], on_outage, &w->oev[k]) ||
                !sim_at(w->e, o->end_s[i], on_outage, &w->oev[k + 1]))
                return (size_t)-1;
        }
        k += 2;
    }
    return k;
}

static int dyn_init(world *w, uint64_t seed, dp_err *err)
{
    const scn_scenario *s = w->s;
    w->dead_id = UINT64_MAX;
    w->track = scn_has_failures(s);
    /* no device can go down: no per-device records (every device is up
     * for good; 56 MB at 10^6 devices) */
    if (w->track && !(w->dev = dp_calloc(w->nd ? w->nd : 1, sizeof *w->dev)))
        return dp_err_set(err, DP_ENOMEM, "world: out of memory");
    for (size_t d = 0; w->dev && d < w->nd; d++) {
        wdev *v = &w->dev[d];
        const scn_avail *a = &s->groups[s->devices[d].group].avail;
        *v = (wdev){w, d, 1, 0, INFINITY, 0, NULL, NULL};
        if (a->trace) {
            v->tr = a->trace;
            /* a device down from the start goes down at t = 0, once the policy has started */
            if (trace_value_at(a->trace, 0) < 0.5) {
                v->next_s = 0;
                if (!(v->ev = sim_at(w->e, 0, on_dev_change, v)))
                    return dp_err_set(err, DP_ENOMEM, "world: out of memory");
            } else if (dev_schedule(v)) {
                return dp_err_set(err, DP_ENOMEM, "world: out of memory");
            }
        } else if (a->mtbf_s > 0) {
            if (!(v->rng = cmp_stream(seed, d, CMP_STREAM_AVAILABILITY)) || dev_schedule(v))
                return dp_err_set(err, DP_ENOMEM, "world: out of memory");
        }
    }
    /* outages: count, allocate, schedule */
    for (int pass = 0; pass < 2; pass++) {
        size_t k = 0;
        for (size_t d = 0; d < w->nd; d++) {
            const scn_outages *o = &s->groups[s->devices[d].group].link.outages;
            k = add_outages(w, w->r[d].up, o, k);
            k = k == (size_t)-1 ? k : add_outages(w, w->r[d].down, o, k);
            if (k == (size_t)-1)
                return dp_err_set(err, DP_ENOMEM, "world: out of memory");
        }
        for (size_t i = 0; i < s->n_wan; i++) {
            size_t ns = s->n_sites, a = (size_t)s->wan[i].site_a, b = (size_t)s->wan[i].site_b;
            k = add_outages(w, w->wan[a * ns + b], &s->wan[i].outages, k);
            k = k == (size_t)-1 ? k : add_outages(w, w->wan[b * ns + a], &s->wan[i].outages, k);
            if (k == (size_t)-1)
                return dp_err_set(err, DP_ENOMEM, "world: out of memory");
        }
        if (pass == 0) {
            w->n_oev = k;
            if (k && !(w->oev = dp_calloc(k, sizeof *w->oev)))
                return dp_err_set(err, DP_ENOMEM, "world: out of memory");
            if (!k)
                break;
        }
    }
    return 0;
}

void world_link_owner(const world *w, int link, int *dev, int *dir)
{
    *dev = -2; /* a WAN link */
    *dir = 0;
    for (size_t k = 0; w->xread && k < 2 * w->s->n_sites; k++)
        if (w->xread[k] == link) { /* a site's storage (dir 0) or cache (dir 1) */
            *dev = -3;
            *dir = k >= w->s->n_sites;
            return;
        }
    if (link == w->nic_up || link == w->nic_down) {
        *dev = -1;
        *dir = link == w->nic_down;
        return;
    }
    for (size_t k = 0; k < w->s->n_servers; k++)
        if (link == w->rs_up[k] || link == w->rs_down[k]) { /* a regional server's NIC */
            *dev = -1;
            *dir = link == w->rs_down[k];
            return;
        }
    if (w->view) { /* a job's view: its devices' links by its own indices (no other device's is on its paths)
                    */
        for (size_t d = 0; d < w->nd; d++) {
            const int l[4] = {w->r[d].up, w->r[d].down, w->r[d].pup, w->r[d].pdown};
            for (int k = 0; k < 4; k++)
                if (l[k] == link) {
                    *dev = (int)d;
                    *dir = k;
                    return;
                }
        }
    } else if (link >= w->dev_link0 && (size_t)(link - w->dev_link0) < (size_t)w->per_dev * w->nd) {
        *dev = (link - w->dev_link0) / w->per_dev; /* added in this order (world_new) */
        *dir = (link - w->dev_link0) % w->per_dev;
        return;
    }
    size_t ns = w->s->n_sites;
    for (size_t i = 0; i < w->s->n_wan; i++) {
        size_t a = (size_t)w->s->wan[i].site_a, b = (size_t)w->s->wan[i].site_b;
        if (w->wan[a * ns + b] == link || w->wan[b * ns + a] == link) {
            *dir = w->wan[b * ns + a] == link;
            return;
        }
    }
}

/* 1 if one of o's intervals overlaps [t0, t1]. */
static int outage_in(const scn_outages *o, double t0, double t1)
{
    for (size_t i = 0; i < o->n; i++)
        if (o->start_s[i] <= t1 && o->end_s[i] >= t0)
            return 1;
    return 0;
}

int world_has_outages(const world *w)
{
    return w->n_oev > 0;
}

int world_link_outage_in(const world *w, int link, double t0, double t1)
{
    if (!w->n_oev || link == w->nic_up || link == w->nic_down) /* the NIC has no outages */
        return 0;
    for (size_t k = 0; k < w->s->n_servers; k++)
        if (link == w->rs_up[k] || link == w->rs_down[k])
            return 0;
    const scn_scenario *s = w->s;
    if (link >= w->dev_link0 && (size_t)(link - w->dev_link0) < (size_t)w->per_dev * w->nd) {
        size_t d = (size_t)((link - w->dev_link0) / w->per_dev);
        int dir = (link - w->dev_link0) % w->per_dev;
        return dir < 2 && outage_in(&s->groups[s->devices[d].group].link.outages, t0, t1);
    }
    size_t ns = s->n_sites;
    for (size_t i = 0; i < s->n_wan; i++) {
        size_t a = (size_t)s->wan[i].site_a, b = (size_t)s->wan[i].site_b;
        if (w->wan[a * ns + b] == link || w->wan[b * ns + a] == link)
            return outage_in(&s->wan[i].outages, t0, t1);
    }
    return 0;
}

int world_server_of(const world *w, size_t d)
{
    int site = w->r[d].site;
    for (size_t k = 0; site >= 0 && k < w->s->n_servers; k++)
        if (w->s->servers[k].site == site)
            return (int)(w->nd + 1 + k);
    return 0;
}

int world_dev_set(world *w, size_t d, int up, double next_s)
{
    if (!w->dev)
        return 0;
    wdev *v = &w->dev[d];
    v->next_s = next_s;
    if (v->up == up)
        return 0;
    v->up = up;
    if (!up) {
        w->failures++;
        v->down_since = sim_now(w->e);
        cut(w, (int)d + 1);
    }
    if (w->dev_fn)
        w->dev_fn(w->dev_ctx, d, up);
    return 1;
}

void world_on_device(world *w, world_dev_fn fn, void *ctx)
{
    w->dev_fn = fn;
    w->dev_ctx = ctx;
}
int world_dev_is_up(const world *w, size_t d)
{
    return !w->dev || w->dev[d].up;
}
double world_dev_next_change(const world *w, size_t d)
{
    return w->dev ? w->dev[d].next_s : INFINITY;
}
double world_dev_down_since(const world *w, size_t d)
{
    return w->dev ? w->dev[d].down_since : 0;
}
int world_failures(const world *w)
{
    return w->failures;
}
double world_cut_bytes(const world *w)
{
    return w->cut_bytes;
}
