/* runtime_sym.c: exact symmetry (issue 39; runtime_perf.h).
 *
 * With 10^5 devices of a few kinds, a synchronous policy runs the same
 * batch on thousands of identical devices at the same instant and every
 * collective changes thousands of identical records.  Devices that are
 * identical in every parameter and record move as one class: its first
 * device, the representative, runs the class's events once and its
 * records stand for every member's; the followers' own records are stale
 * until sym_flush copies them in (before anything reads every device's
 * records: an epoch boundary's fold, the results) or until one of them is
 * touched alone (sym_split: its class goes back to devices alone, each
 * with the records it would have had).
 *
 * Why the results are the same bits.  A class is a run of consecutive
 * devices (consecutive in the ring too: the full ring is device order),
 * so its members' events, which the full simulation runs one after the
 * other at one instant in device order, are one event at that place in the
 * order.  What such an event adds to a record of one device is added to the
 * representative's alone, which is the same arithmetic as each member's
 * own; what it adds to a shared accumulator is added once per member, in
 * a row, as the members' events would have (compute_done_at); counts
 * (devices computing, events) move by the class size.  A member's records
 * also depend on its ring neighbours' links (collective.c's per-edge
 * times): members have both neighbours in their own group, so every edge
 * of theirs is the same; devices at a group's edge of the ring, the first
 * TL_DEVICES (the timeline's own), and any device with noise, a trace,
 * stragglers or a record unlike its neighbour's stay alone.
 *
 * Only sync.c starts it (prt_sym_begin), for its own groups without hooks
 * or failures; a run with a learner, failures, a segment hook, data where
 * it lives (dataset.parts) or devices' energy never does.
 * DPSIM_NO_SYMMETRY=1 keeps every device alone (tests compare). */
#include "runtime_impl.h"

#include <string.h>

static int sym_off = -1;

static int sym_disabled(void)
{
    if (sym_off < 0)
        sym_off = dp_env_flag("DPSIM_NO_SYMMETRY");
    return sym_off;
}

static int same_bits(const void *a, const void *b, size_t n)
{
    return memcmp(a, b, n) == 0;
}

/* Device d's records (the ones a follower's flush copies) equal r's. */
static int same_records(const prt *rt, size_t r, size_t d)
{
    return rt->act[d] == rt->act[r] && same_bits(&rt->act_since[d], &rt->act_since[r], sizeof(double)) &&
           same_bits(rt->act_time + d * RES_ACT_COUNT, rt->act_time + r * RES_ACT_COUNT,
                     RES_ACT_COUNT * sizeof(double)) &&
           same_bits(&rt->busy_compute[d], &rt->busy_compute[r], sizeof(double)) &&
           rt->batches[d] == rt->batches[r] &&
           same_bits(&rt->coll_bytes[d], &rt->coll_bytes[r], sizeof(double)) &&
           same_bits(&rt->coll_busy_s[d], &rt->coll_busy_s[r], sizeof(double)) &&
           same_bits(&rt->coll_recv_s[d], &rt->coll_recv_s[r], sizeof(double)) &&
           same_bits(&rt->server_bytes[d], &rt->server_bytes[r], sizeof(double)) &&
           same_bits(&rt->part_done[d], &rt->part_done[r], sizeof(double)) && rt->left[d] == rt->left[r] &&
           rt->share[d] == rt->share[r] && rt->coll_dev[d] == rt->coll_dev[r] &&
           rt->pending[d] == rt->pending[r];
}

static void copy_records(prt *rt, size_t r, size_t d)
{
    rt->act[d] = rt->act[r];
    rt->act_since[d] = rt->act_since[r];
    memcpy(rt->act_time + d * RES_ACT_COUNT, rt->act_time + r * RES_ACT_COUNT,
           RES_ACT_COUNT * sizeof(double));
    rt->busy_compute[d] = rt->busy_compute[r];
    rt->batches[d] = rt->batches[r];
    rt->coll_bytes[d] = rt->coll_bytes[r];
    rt->coll_busy_s[d] = rt->coll_busy_s[r];
    rt->coll_recv_s[d] = rt->coll_recv_s[r];
    rt->server_bytes[d] = rt->server_bytes[r];
    rt->part_done[d] = rt->part_done[r];
    rt->left[d] = rt->left[r];
    rt->coll_dev[d] = rt->coll_dev[r];
    coll_sym_links(rt, r, d); /* its ring links, when collectives account the representative's only */
}

/* Device d's parameters allow it to follow its predecessor d - 1: the
 * same group as both ring neighbours, plain compute, links without traces. */
static int may_follow(prt *rt, size_t d)
{
    size_t n = rt->n, next = d + 1 < n ? d + 1 : 0;
    int g = rt->s->devices[d].group;
    if (rt->s->devices[d - 1].group != g || rt->s->devices[next].group != g)
        return 0;
    if (!cmp_plain(world_compute(rt->w), d) || TL(rt)->cslots[d].ev || TL(rt)->cslots[d - 1].ev)
        return 0;
    const net *nt = world_net(rt->w);
    int links[4] = {world_dev_up(rt->w, d), world_dev_down(rt->w, d), world_dev_peer_up(rt->w, d),
                    world_dev_peer_down(rt->w, d)};
    for (int j = 0; j < 4; j++)
        if (links[j] >= 0 && net_link_has_trace(nt, links[j]))
            return 0;
    return 1;
}

static int reps_rebuild(prt *rt)
{
    rt->n_sym_reps = 0;
    for (size_t d = 0; d < rt->n; d++)
        if (rt->sym_rep[d] == d)
            rt->sym_reps[rt->n_sym_reps++] = d;
    return 0;
}

static void sym_free(prt *rt)
{
    dp_free(rt->sym_rep);
    dp_free(rt->sym_k);
    dp_free(rt->sym_reps);
    rt->sym_rep = NULL;
    rt->sym_k = NULL;
    rt->sym_reps = NULL;
    rt->n_sym_reps = 0;
}

int prt_sym_begin(prt *rt)
{
    if (rt->sym_rep)
        return 1;
    if (rt->sym_tried)
        return 0; /* once a run: a world without classes is not scanned at every step */
    rt->sym_tried = 1;
    size_t n = rt->n;
    /* data where it lives (runtime_data.c) and devices' energy
     * (runtime_energy.c, at every activity change) keep records of their own */
    if (sym_disabled() || n <= TL_DEVICES + 1 || learn_on(rt) || rt->may_fail || rt_segment_fn ||
        TL(rt)->ndev > TL_DEVICES || rt->data || rt->energy)
        return 0;
    rt->sym_rep = dp_malloc(n * sizeof *rt->sym_rep);
    rt->sym_k = dp_malloc(n * sizeof *rt->sym_k);
    rt->sym_reps = dp_malloc(n * sizeof *rt->sym_reps);
    if (!rt->sym_rep || !rt->sym_k || !rt->sym_reps) {
        sym_free(rt);
        return 0; /* alone, as without symmetry */
    }
    size_t followers = 0;
    for (size_t d = 0; d < n; d++) {
        rt->sym_rep[d] = d;
        rt->sym_k[d] = 1;
        /* a representative must itself have its predecessor in its group
         * (its receiving edge is then its followers'): d - 1 may lead d
         * only when d - 1 could itself follow */
        if (d > TL_DEVICES && may_follow(rt, d) && may_follow(rt, d - 1)) {
            size_t r = rt->sym_rep[d - 1];
            if (r >= TL_DEVICES && rt->sym_k[r] < UINT32_MAX && same_records(rt, r, d)) {
                rt->sym_rep[d] = r;
                rt->sym_k[r]++;
                followers++;
            }
        }
    }
    if (!followers) {
        sym_free(rt);
        return 0;
    }
    reps_rebuild(rt);
    return 1;
}

const size_t *prt_sym_reps(const prt *rt, size_t *count)
{
    *count = rt->n_sym_reps;
    return rt->sym_rep ? rt->sym_reps : NULL;
}

size_t prt_sym_count(const prt *rt, size_t d)
{
    return sym_mult(rt, d);
}

void sym_flush(prt *rt)
{
    if (!rt->sym_rep)
        return;
    for (size_t d = 0; d < rt->n; d++)
        if (rt->sym_rep[d] != d)
            copy_records(rt, rt->sym_rep[d], d);
}

void sym_split(prt *rt, size_t d)
{
    if (!rt->sym_rep)
        return;
    size_t r = rt->sym_rep[d];
    for (size_t f = r + 1; f < rt->n && rt->sym_rep[f] == r; f++) {
        copy_records(rt, r, f);
        rt->sym_rep[f] = f;
        rt->sym_k[f] = 1;
    }
    rt->sym_k[r] = 1;
    reps_rebuild(rt);
}

void sym_end(prt *rt)
{
    sym_flush(rt);
    sym_free(rt);
}
