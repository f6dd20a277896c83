/* rtt_world.h: the worlds of the RTT-sharing comparison (dpsim_rtt.c,
 * simgrid_rtt.cpp): one server sends a flow to each of N devices at time
 * 0.  Every flow crosses the server's NIC; the devices of the remote half
 * (odd i) also cross one WAN link; each device has its own access link.
 * Latencies differ per device (so RTTs differ on the shared links), and a
 * TCP window of 4 MiB caps each flow at window / (2 x latency), as
 * SimGrid's default TCP-gamma does.  Drawn from `seed` by a 64-bit LCG, the
 * same integers on both sides.  Plain C, included by C and C++. */
#ifndef RTT_WORLD_H
#define RTT_WORLD_H

#include <stdint.h>

#define RTT_MAX_N  64
#define RTT_WINDOW 4194304.0

typedef struct rtt_world {
    int n;
    double nic_Bps, nic_lat;   /* shared by every flow */
    double wan_Bps, wan_lat;   /* shared by the odd devices' flows */
    double acc_Bps[RTT_MAX_N]; /* each device's own link */
    double acc_lat[RTT_MAX_N];
    double bytes[RTT_MAX_N];
} rtt_world;

static inline double rtt_draw(uint64_t *s, double lo, double hi)
{
    *s = *s * 6364136223846793005ull + 1442695040888963407ull;
    return lo + (hi - lo) * (double)(*s >> 11) / 9007199254740992.0;
}

/* 0, or -1 for a bad n. */
static inline int rtt_world_make(rtt_world *w, int n, uint64_t seed)
{
    if (n < 1 || n > RTT_MAX_N)
        return -1;
    uint64_t s = seed * 2654435761u + 1;
    w->n = n;
    w->nic_Bps = rtt_draw(&s, 50e6, 150e6); /* 400 Mbit/s to 1.2 Gbit/s */
    w->nic_lat = 1e-4;
    w->wan_Bps = rtt_draw(&s, 20e6, 60e6);
    w->wan_lat = rtt_draw(&s, 0.02, 0.12);
    for (int i = 0; i < n; i++) {
        w->acc_Bps[i] = rtt_draw(&s, 10e6, 125e6);
        w->acc_lat[i] = rtt_draw(&s, 0.001, 0.05);
        w->bytes[i] = rtt_draw(&s, 5e6, 100e6);
    }
    return 0;
}

/* Device i's path latency (one way). */
static inline double rtt_world_lat(const rtt_world *w, int i)
{
    return w->nic_lat + (i % 2 ? w->wan_lat : 0) + w->acc_lat[i];
}

#endif
