/* slv_par.c: the solvers' helper thread (see slv_par.h).
 *
 * Claims go through one 64-bit word, (job << 32) | next chunk, changed by
 * compare-and-swap: a helper still holding a finished job's description
 * cannot take a chunk of the next job, because its claim names the old job.
 * The job's description is written under the mutex before the word is
 * published, and read under the mutex by the helper when it wakes. */
#include "slv_par.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>

#include "slv.h"

/* Below this many items a pass is short (about 1 ms at 10^5) and the
 * thread's wake-ups would be a visible part of it. */
#define PAR_MIN_DEFAULT 131072

static _Atomic size_t par_min = PAR_MIN_DEFAULT;

void slv_set_par_min(size_t n)
{
    atomic_store(&par_min, n ? n : PAR_MIN_DEFAULT);
}

struct slv_par {
    pthread_t th;
    pthread_mutex_t mu;
    pthread_cond_t wake; /* the helper waits here for a job or quit */
    pthread_cond_t done; /* the caller waits here for the last chunk */
    int quit;
    uint32_t job; /* under mu: the posted job's number */
    slv_par_fn fn;
    void *ctx;
    size_t n, k;            /* under mu: items and chunks of the posted job */
    size_t finished;        /* under mu: chunks of the posted job done */
    _Atomic uint64_t claim; /* (job << 32) | next chunk */
};

/* Take the next chunk of job j (of k chunks); k if none is left. */
static size_t take(slv_par *p, uint32_t j, size_t k)
{
    uint64_t w = atomic_load(&p->claim);
    for (;;) {
        if ((uint32_t)(w >> 32) != j || (w & 0xffffffffu) >= k)
            return k;
        if (atomic_compare_exchange_weak(&p->claim, &w, w + 1))
            return (size_t)(w & 0xffffffffu);
    }
}

/* Run job j's chunks until none is left; count them done. */
static void work(slv_par *p, uint32_t j, slv_par_fn fn, void *ctx, size_t n, size_t k)
{
    for (size_t c; (c = take(p, j, k)) < k;) {
        fn(ctx, c, slv_par_lo(n, k, c), slv_par_lo(n, k, c + 1));
        pthread_mutex_lock(&p->mu);
        if (++p->finished == k)
            pthread_cond_signal(&p->done);
        pthread_mutex_unlock(&p->mu);
    }
}

static void *helper_main(void *arg)
{
    slv_par *p = arg;
    uint32_t seen = 0;
    pthread_mutex_lock(&p->mu);
    for (;;) {
        while (p->job == seen && !p->quit)
            pthread_cond_wait(&p->wake, &p->mu);
        if (p->quit)
            break;
        seen = p->job;
        slv_par_fn fn = p->fn;
        void *ctx = p->ctx;
        size_t n = p->n, k = p->k;
        pthread_mutex_unlock(&p->mu);
        work(p, seen, fn, ctx, n, k);
        pthread_mutex_lock(&p->mu);
    }
    pthread_mutex_unlock(&p->mu);
    return NULL;
}

slv_par *slv_par_new(size_t n)
{
    if (n < atomic_load(&par_min))
        return NULL;
    slv_par *p = dp_calloc(1, sizeof *p);
    if (!p)
        return NULL;
    if (pthread_mutex_init(&p->mu, NULL)) {
        dp_free(p);
        return NULL;
    }
    if (pthread_cond_init(&p->wake, NULL)) {
        pthread_mutex_destroy(&p->mu);
        dp_free(p);
        return NULL;
    }
    if (pthread_cond_init(&p->done, NULL)) {
        pthread_cond_destroy(&p->wake);
        pthread_mutex_destroy(&p->mu);
        dp_free(p);
        return NULL;
    }
    atomic_init(&p->claim, 0);
    if (pthread_create(&p->th, NULL, helper_main, p)) {
        pthread_cond_destroy(&p->done);
        pthread_cond_destroy(&p->wake);
        pthread_mutex_destroy(&p->mu);
        dp_free(p);
        return NULL;
    }
    return p;
}

void slv_par_free(slv_par *p)
{
    if (!p)
        return;
    pthread_mutex_lock(&p->mu);
    p->quit = 1;
    pthread_cond_signal(&p->wake);
    pthread_mutex_unlock(&p->mu);
    pthread_join(p->th, NULL);
    pthread_cond_destroy(&p->done);
    pthread_cond_destroy(&p->wake);
    pthread_mutex_destroy(&p->mu);
    dp_free(p);
}

size_t slv_par_run(slv_par *p, size_t n, slv_par_fn fn, void *ctx)
{
    size_t k = n < SLV_PAR_CHUNKS ? (n ? n : 1) : SLV_PAR_CHUNKS;
    if (!p) {
        k = 1;
        fn(ctx, 0, 0, n);
        return k;
    }
    pthread_mutex_lock(&p->mu);
    uint32_t j = ++p->job;
    if (j == 0) /* 0 is the helper's "seen nothing yet" */
        j = p->job = 1;
    p->fn = fn;
    p->ctx = ctx;
    p->n = n;
    p->k = k;
    p->finished = 0;
    atomic_store(&p->claim, (uint64_t)j << 32);
    pthread_cond_signal(&p->wake);
    pthread_mutex_unlock(&p->mu);
    work(p, j, fn, ctx, n, k);
    pthread_mutex_lock(&p->mu);
    while (p->finished < k)
        pthread_cond_wait(&p->done, &p->mu);
    pthread_mutex_unlock(&p->mu);
    return k;
}
