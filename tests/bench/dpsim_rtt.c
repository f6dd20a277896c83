/* dpsim_rtt: dpsim's side of the RTT-sharing comparison (README.md here):
 * the world of rtt_world.h in sim/core/net.h under network.sharing (maxmin
 * or rtt).  `dpsim_rtt N SEED maxmin|rtt` prints one line per device,
 * "i end_s", in device order. */
#include "net.h"
#include "rtt_world.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static double end_t[RTT_MAX_N];
static sim_engine *eng;

static void on_end(void *ctx, uint64_t id)
{
    (void)id;
    end_t[*(int *)ctx] = sim_now(eng);
}

int main(int argc, char **argv)
{
    rtt_world w;
    if (argc != 4 || rtt_world_make(&w, atoi(argv[1]), strtoull(argv[2], NULL, 10)) ||
        (strcmp(argv[3], "maxmin") && strcmp(argv[3], "rtt"))) {
        fprintf(stderr, "usage: dpsim_rtt N(1-%d) SEED maxmin|rtt\n", RTT_MAX_N);
        return 2;
    }
    eng = sim_engine_new(NULL);
    net *n = net_new(eng, NULL);
    if (!eng || !n || net_set_sharing(n, strcmp(argv[3], "rtt") ? NET_SHARE_MAXMIN : NET_SHARE_RTT))
        return 1;
    int nic = net_link_add(n, w.nic_Bps, NULL, "nic"), wan = net_link_add(n, w.wan_Bps, NULL, "wan");
    static int idx[RTT_MAX_N];
    for (int i = 0; i < w.n; i++) {
        int acc = net_link_add(n, w.acc_Bps[i], NULL, NULL);
        int path[3] = {nic, acc, wan};
        double lat = rtt_world_lat(&w, i);
        idx[i] = i;
        if (!net_flow_start(n, path, i % 2 ? 3 : 2, w.bytes[i], lat, RTT_WINDOW / (2 * lat), on_end, &idx[i]))
            return 1;
    }
    sim_run(eng, INFINITY);
    for (int i = 0; i < w.n; i++)
        printf("%d %.12g\n", i, end_t[i]);
    net_free(n);
    sim_engine_free(eng);
    return 0;
}
