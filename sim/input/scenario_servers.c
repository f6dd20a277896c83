/* scenario_servers.c: the top-level `servers:` list, regional parameter
 * servers (scenarios/README.md "Regional servers"; docs/MODEL.md section 1):
 *
 *   servers:
 *     - { site: eu, nic: { up: 10Gbps, down: 10Gbps }, aggregate_rate: 4GB/s }
 *     - { site: us }
 *
 * Each sits in a known site, at most one per site; its NIC and averaging
 * rate are as `server:`'s (absent: unlimited). */
#include "scenario_impl.h"

#include <math.h>

int scni_conv_servers(cv *c, const yt_node *list)
{
    static const char *const keys[] = {"site", "nic", "aggregate_rate", NULL};
    static const char *const req[] = {"site", NULL};
    static const char *const nickeys[] = {"up", "down", NULL};
    scn_scenario *s = c->s;
    char g[80];
    int r;
    if (yt_is_null(list))
        return 0;
    if (list->kind != YT_SEQ)
        return scni_fail(c, list, "servers", "a list of regional servers (got %s)",
                         scni_got(list, g, sizeof g));
    if (!s->n_sites)
        return scni_fail(c, list, "servers",
                         "regional servers sit in sites: give sites first (got no sites)");
    if (list->n > SCN_MAX_SITES)
        return scni_fail(c, list, "servers", "at most one server per site, %d sites at most (got %zu)",
                         SCN_MAX_SITES, list->n);
    if (list->n && !(s->servers = dp_calloc(list->n, sizeof *s->servers)))
        return scni_oom(c);
    for (size_t i = 0; i < list->n; i++) {
        const yt_node *it = list->items[i], *n;
        char kp[64], nk[80];
        snprintf(kp, sizeof kp, "servers[%zu]", i);
        snprintf(nk, sizeof nk, "%s.nic", kp);
        struct scn_rserver *v = &s->servers[i];
        v->nic_up_Bps = v->nic_down_Bps = v->aggregate_Bps = INFINITY;
        if ((r = scni_check_map(c, it, kp, keys, req)) < 0 ||
            (r = scni_get_scalar(c, it, kp, "site", 1, &n)) < 0)
            return r;
        char sk[80];
        snprintf(sk, sizeof sk, "%s.site", kp);
        if ((v->site = scni_site_index(s, n->text)) < 0)
            return scni_unknown_site(c, n, sk);
        for (size_t j = 0; j < i; j++)
            if (s->servers[j].site == v->site)
                return scni_fail(c, n, sk,
                                 "one regional server per site: servers[%zu] is in %s already (got %s)", j,
                                 s->sites[v->site], n->text);
        const yt_node *nic = yt_get(it, "nic");
        if (!yt_is_null(nic) && ((r = scni_check_map(c, nic, nk, nickeys, NULL)) < 0 ||
                                 (r = scni_get_pos(c, nic, nk, "up", SCN_UNIT_BANDWIDTH, 0, INFINITY, 0,
                                                   1e300, &v->nic_up_Bps)) < 0 ||
                                 (r = scni_get_pos(c, nic, nk, "down", SCN_UNIT_BANDWIDTH, 0, INFINITY, 0,
                                                   1e300, &v->nic_down_Bps)) < 0))
            return r;
        if ((r = scni_get_pos(c, it, kp, "aggregate_rate", SCN_UNIT_RATE, 0, INFINITY, 0, 1e300,
                              &v->aggregate_Bps)) < 0)
            return r;
        s->n_servers = i + 1;
    }
    return 0;
}
