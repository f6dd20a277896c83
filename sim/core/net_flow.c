/* net_flow.c: flows: their records (in fixed chunks), start, latency
 * phase, cancel, and their ends reported in start order (net_impl.h). */
#include "net_impl.h"

/* ---- flows ------------------------------------------------------------------ */

static uint64_t flow_id(const flow *f)
{
    return ((uint64_t)f->gen << 32) | f->index;
}

/* One more chunk of CHUNK zeroed flows (for flow_alloc or net_reserve);
 * NULL when out of memory. */
static flow *chunk_add(net *n)
{
    if (grow((void **)&n->chunks, &n->cap_chunks, n->n_chunks + 1, sizeof(flow *)))
        return NULL;
    flow *c = dp_calloc(CHUNK, sizeof(flow));
    if (c)
        n->chunks[n->n_chunks++] = c;
    return c;
}

static flow *flow_alloc(net *n)
{
    if (n->free_head != NO_FLOW) {
        flow *f = F(n, n->free_head);
        n->free_head = f->next_free;
        return f;
    }
    if (n->n_flows >= NO_FLOW - CHUNK)
        return NULL;
    /* a new chunk at each CHUNK-th flow, unless net_reserve made it */
    if ((n->n_flows & (CHUNK - 1)) == 0 && (n->n_flows >> CHUNK_BITS) >= n->n_chunks && !chunk_add(n))
        return NULL;
    if (grow((void **)&n->fst, &n->cap_fst, (size_t)n->n_flows + 1, sizeof(uint64_t)))
        return NULL;
    flow *f = F(n, n->n_flows);
    f->index = n->n_flows++;
    f->gen = 1;
    f->n = n;
    return f;
}

int net_reserve(net *n, size_t flows)
{
    size_t need = ((size_t)n->n_flows + flows + CHUNK - 1) >> CHUNK_BITS;
    if (need > (NO_FLOW >> CHUNK_BITS) - 1)
        return DP_EINPUT;
    while (n->n_chunks < need) {
        flow *c = chunk_add(n);
        if (!c)
            return DP_ENOMEM;
        memset(c, 0, CHUNK * sizeof(flow)); /* its pages now (calloc may leave them untouched) */
    }
    size_t total = n->n_flows + flows;
    if (grow((void **)&n->active, &n->cap_active, total, sizeof(uint32_t)) ||
        grow((void **)&n->fst, &n->cap_fst, total, sizeof(uint64_t)) ||
        grow((void **)&n->finished, &n->cap_finished, total, sizeof(fin_ent)))
        return DP_ENOMEM;
    memset(n->active + n->n_active, 0, (n->cap_active - n->n_active) * sizeof(uint32_t));
    memset(n->finished, 0, n->cap_finished * sizeof(fin_ent));
    return 0;
}

static void flow_release(net *n, flow *f)
{
    if (n->g)
        n->doms[f->dom].n_flows--;
    f->state = FLOW_FREE;
    if (++f->gen == 0)
        f->gen = 1;
    f->next_free = n->free_head;
    n->free_head = f->index;
}

/* Swap-remove an active flow from n->active (what a linear search would
 * do, in O(1)). */
void active_remove(net *n, flow *f)
{
    uint32_t k = f->apos, last = n->active[--n->n_active];
    n->active[k] = last;
    F(n, last)->apos = k;
}

static int activate(net *n, flow *f)
{
    for (int k = 0; k < f->np; k++) /* its links' holders take their flows back first */
        unhold(n, f->path[k]);
    if (grow((void **)&n->active, &n->cap_active, n->n_active + 1, sizeof(uint32_t)))
        return -1;
    f->state = FLOW_ACTIVE;
    f->rate = 0;
    f->tl = flow_now(n, f);              /* its bytes are as of now */
    f->finish_t = flow_finish(f, f->tl); /* now if it has none, whatever the fill gives it */
    f->apos = (uint32_t)n->n_active;
    n->active[n->n_active++] = f->index;
    for (int k = 0; k < f->np; k++)
        link_busy_inc(n, &n->links[f->path[k]]);
    if (n->star)
        star_activate(n, f);
    mark_dirty(n);
    return 0;
}

static void on_activate(sim_engine *e, void *ctx, uint64_t id)
{
    (void)e;
    (void)id;
    flow *f = ctx;
    net *n = f->n;
    n->n_pending--;
    if (activate(n, f)) { /* out of memory: the flow can never progress */
        flow_release(n, f);
        stall_all(n);
    }
}

uint64_t net_flow_start(net *n, const int *links, size_t n_links, double bytes, double latency_s,
                        double rate_cap_Bps, net_done_fn done, void *ctx)
{
    if (n_links > NET_MAX_PATH || !(bytes >= 0) || !isfinite(bytes) || !(latency_s >= 0) ||
        !isfinite(latency_s) || !(rate_cap_Bps > 0))
        return 0;
    for (size_t k = 0; k < n_links; k++)
        if (links[k] < 0 || (size_t)links[k] >= n->n_links)
            return 0;
    if (n->g && !dom_of(n, cur_dom(n)))
        return 0;
    flow *f = flow_alloc(n);
    if (!f)
        return 0;
    f->np = 0;
    for (size_t k = 0; k < n_links; k++) { /* a link listed twice counts once */
        int dup = 0;
        for (int j = 0; j < f->np; j++)
            dup |= f->path[j] == links[k];
        if (!dup)
            f->path[f->np++] = links[k];
    }
    f->bytes = f->remaining = bytes;
    f->cap = rate_cap_Bps;
    f->w = n->sharing == NET_SHARE_RTT ? 1 / fmax(2 * latency_s, NET_RTT_MIN) : 1;
    f->rate = 0;
    f->finish_t = INFINITY;
    f->done = done;
    f->ctx = ctx;
    f->seq = ++n->seq;
    f->frozen = 0;
    f->sset = STAR_OFF;
    *SST(n, f) = 0;
    f->dom = (uint32_t)cur_dom(n);
    if (n->g)
        n->doms[f->dom].n_flows++; /* dom_of made it above */
    uint64_t id = flow_id(f);
    if (latency_s > 0) {
        /* its activation, often the next event, reads and writes its
         * links: a cache miss each with 10^5 devices' links, unless fetched */
        for (int k = 0; k < f->np; k++)
            __builtin_prefetch(&n->links[f->path[k]]);
        f->state = FLOW_PENDING;
        if (!(f->act_ev = sim_at(dom_engine(n, f->dom), flow_now(n, f) + latency_s, on_activate, f))) {
            flow_release(n, f);
            return 0;
        }
        n->n_pending++;
    } else if (activate(n, f)) {
        flow_release(n, f);
        return 0;
    }
    return id;
}

double net_flow_remaining(const net *n, uint64_t id)
{
    flow *f = flow_of(n, id);
    if (!f)
        return 0;
    if (n->star && f->state == FLOW_ACTIVE)
        return star_rem(n, f, sim_now(n->e));
    if (f->state != FLOW_ACTIVE)
        return f->remaining;
    return flow_rem_at(f, flow_now(n, f));
}

int net_flow_cancel(net *n, uint64_t id, double *sent_bytes)
{
    flow *f = flow_of(n, id);
    if (sent_bytes)
        *sent_bytes = 0;
    if (!f)
        return DP_EINPUT;
    if (f->state == FLOW_PENDING) {
        sim_cancel(dom_engine(n, f->dom), f->act_ev);
        n->n_pending--;
    } else {
        double rem;
        if (n->star) {
            rem = star_cancel(n, f);
        } else {
            flow_catch_up(f, flow_now(n, f));
            rem = f->remaining;
        }
        double sent = f->bytes - rem;
        active_remove(n, f);
        for (int j = 0; j < f->np; j++) {
            link *l = &n->links[f->path[j]];
            l->bytes += sent;
            link_busy_dec(n, l);
        }
        if (sent_bytes)
            *sent_bytes = sent;
        mark_dirty(n);
    }
    flow_release(n, f);
    if (n->g) { /* its domain's last flow gone: no completion of it is due */
        net_dom *d = &n->doms[f->dom];
        if (!d->n_flows && d->done_ev) {
            sim_cancel(dom_engine(n, f->dom), d->done_ev);
            d->done_ev = 0;
            d->done_t = INFINITY;
        }
    }
    return 0;
}

double net_flow_rate(const net *n, uint64_t id)
{
    flow *f = flow_of(n, id);
    if (f && f->state == FLOW_ACTIVE && n->star)
        return star_rate(n, f);
    return (f && f->state == FLOW_ACTIVE) ? f->rate : 0;
}

size_t net_flows_active(const net *n)
{
    return n->n_active;
}
size_t net_flows_pending(const net *n)
{
    return n->n_pending;
}
uint64_t net_cap_changes(const net *n)
{
    return n->cap_changes;
}

uint64_t net_reshares(const net *n)
{
    return n->reshares;
}
uint64_t net_fills(const net *n)
{
    return n->fills;
}

/* ---- ends ------------------------------------------------------------------ */

/* n->finished[0, nf) into start (seq) order.  Often already in order (the
 * star path ends ties in entry order); 10^6 flows ending at one instant (a
 * model sent to every device) are put in order by an LSD radix sort over
 * RADIX_BITS-bit digits of seq, O(nf) (qsort took 0.15 s).  seqs are
 * distinct, so any sort gives the same order. */
static int by_seq(const void *a, const void *b);

static void sort_finished(net *n, size_t nf)
{
    size_t k0 = 1;
    uint64_t top = nf ? n->finished[0].seq : 0;
    while (k0 < nf && n->finished[k0 - 1].seq < n->finished[k0].seq)
        k0++;
    if (k0 >= nf)
        return;
    if (nf < 4096 || grow((void **)&n->fin_tmp, &n->cap_fin_tmp, nf, sizeof(fin_ent))) {
        qsort(n->finished, nf, sizeof(fin_ent), by_seq);
        return;
    }
    for (size_t k = 1; k < nf; k++)
        top = n->finished[k].seq > top ? n->finished[k].seq : top;
    fin_ent *a = n->finished, *b = n->fin_tmp;
    size_t cnt[1u << RADIX_BITS]; /* on the stack: runs of a sweep share no net but may share a thread pool */
    for (int shift = 0; shift < 64 && (top >> shift) != 0; shift += RADIX_BITS) {
        memset(cnt, 0, sizeof cnt);
        for (size_t k = 0; k < nf; k++)
            cnt[(a[k].seq >> shift) & RADIX_MASK]++;
        size_t sum = 0;
        for (size_t v = 0; v < (1u << RADIX_BITS); v++) {
            size_t c = cnt[v];
            cnt[v] = sum;
            sum += c;
        }
        for (size_t k = 0; k < nf; k++)
            b[cnt[(a[k].seq >> shift) & RADIX_MASK]++] = a[k];
        fin_ent *t = a;
        a = b;
        b = t;
    }
    if (a != n->finished)
        memcpy(n->finished, a, nf * sizeof *a);
}

static int by_seq(const void *a, const void *b)
{
    const fin_ent *x = a, *y = b;
    return (x->seq > y->seq) - (x->seq < y->seq);
}

void on_done(sim_engine *e, void *ctx, uint64_t id)
{
    (void)id;
    net *n = ctx;
    size_t dom = 0;
    if (n->g) { /* this domain's completion: its flows only */
        dom = eg_current(n->g);
        n->doms[dom].done_ev = 0;
        n->doms[dom].done_t = INFINITY;
    }
    n->done_ev = 0;
    if (n->star) {
        star_on_done(n);
        return;
    }
    double now = sim_now(e);
    size_t nf = 0, kept = 0;
    /* room for every flow to end (kept between completions): a list that
     * could not grow would leave a finished flow active, ending "now" again
     * and again */
    if (grow((void **)&n->finished, &n->cap_finished, n->n_active, sizeof(fin_ent))) {
        stall_all(n);
        return;
    }
    /* Finished: predicted to end by now, or with nothing left (rounding).
     * The others keep their order (a stable compaction, not swap-remove:
     * when 10^6 flows end at one instant the survivors stay in the order
     * they were started, which is their order in memory, so the passes
     * that follow stream through them instead of jumping at random). */
    for (size_t k = 0; k < n->n_active; k++) {
        flow *f = F(n, n->active[k]);
        if (f->dom == dom && (f->finish_t <= now || flow_rem_at(f, now) <= 1e-9 * f->bytes)) {
            n->finished[nf++] = (fin_ent){f->seq, f};
            for (int j = 0; j < f->np; j++) {
                link *l = &n->links[f->path[j]];
                l->bytes += f->bytes;
                link_busy_dec(n, l);
            }
            continue;
        }
        if (kept != k) {
            n->active[kept] = n->active[k];
            f->apos = (uint32_t)kept;
        }
        kept++;
    }
    n->n_active = kept;
    report_done(n, nf);
    net_reshare_now(n);
}

/* Distances ahead of the callback being run (report_done): the flow
 * record, then what its callback will touch (read through the flow). */
#define DPF_FLOW 16
#define DPF_CTX  8

/* The hint registered for f's callback, if any, on f's context. */
void dpf_hint(const net *n, const flow *f)
{
    for (int j = 0; j < n->n_dpf; j++)
        if (n->dpf[j].done == f->done) {
            n->dpf[j].fn(n->dpf[j].pctx, f->ctx);
            break;
        }
}

static void done_prefetch(const net *n, size_t k, size_t nf)
{
    if (k + DPF_FLOW < nf)
        __builtin_prefetch(&n->finished[k + DPF_FLOW].f->done);
    if (k + DPF_CTX < nf)
        dpf_hint(n, n->finished[k + DPF_CTX].f);
}

/* Report the nf flows in n->finished, released: callbacks in start order,
 * so simultaneous completions are reported deterministically whatever the
 * active list's order. */
void report_done(net *n, size_t nf)
{
    sort_finished(n, nf);
    /* 10^6 flows ending at one instant: their callbacks touch every
     * device's records once, a cache miss each, unless fetched ahead */
    int ahead = n->n_dpf > 0 && nf > DPF_FLOW;
    for (size_t k = 0; k < nf; k++) {
        if (ahead)
            done_prefetch(n, k, nf);
        flow *f = n->finished[k].f;
        net_done_fn cb = f->done;
        void *cctx = f->ctx;
        uint64_t fid = flow_id(f);
        DP_LOG(LOG_NET, LOG_DEBUG, sim_now(n->e), "flow %llu done (%.6g B)", (unsigned long long)fid,
               f->bytes);
        flow_release(n, f);
        if (cb)
            cb(cctx, fid);
    }
}
