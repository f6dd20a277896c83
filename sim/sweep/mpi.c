/* mpi.c: the MPI executor of `dpsim sweep --mpi` (sweep_impl.h), built only
 * with MPI (meson -Dmpi, DPSIM_HAVE_MPI).
 *
 * Roles.  Every rank parses the same command line and calls sweep_run.
 * Rank 0 plans the sweep exactly as a local sweep does (grid, registration,
 * runs already stored), then hands the runs still to do out one at a time,
 * costliest first (sweep_cost_estimate), to the other ranks and to one
 * thread of its own, and alone writes the database: SQLite on a network
 * file system is not safe to share between writers, and one writer never
 * waits for a lock.  A worker rank never opens the database.
 *
 * Messages (tags below), all MPI_BYTE or int64 point to point:
 *   0 -> w  HELLO   the scenario text and the sweep's spec_json: the worker
 *                   runs rank 0's text (not its own copy of the file) and
 *                   refuses to serve if its grid, policies or seeds differ;
 *   0 -> w  TASK    {pending index, grid point, policy index, seed}, or
 *                   pending index -1: stop;
 *   w -> 0  RESULT  header + scenario name + the packed run (wire.c) or the
 *                   failure message; rank 0 answers with the next TASK;
 *   w -> 0  BEAT    every second, from a thread of the worker, while it
 *                   lives (so rank 0 hears from it during a long run);
 *   w -> 0  ERROR   the worker cannot serve (its text); it stops.
 *
 * Liveness.  Rank 0 never blocks: it polls with MPI_Iprobe and sleeps
 * 0.2 ms when nothing came.  A worker silent for DPSIM_MPI_TIMEOUT seconds
 * (default 30) is taken for dead: its run in flight is reported at the end
 * and left for a resume, it gets nothing more, and the sweep goes on with
 * the others.  MPI itself does not report a dead peer here: with Open MPI
 * 4.1 a receive posted for a rank that died just never completes (measured:
 * MPI_Test keeps saying "not yet"), hence the heartbeats.  And Open MPI's
 * mpirun by default aborts the whole job when one process dies, before any
 * of this can help: start it with `mpirun --enable-recovery` for the rest
 * to go on (sim/sweep/README.md).  Workers likewise give up when rank 0 has
 * not answered for the timeout.
 *
 * Errors are returned by every MPI call (MPI_ERRORS_RETURN on
 * MPI_COMM_WORLD), never fatal: a failed send to a worker marks it dead.
 */
#include "sweep/sweep_impl.h"

#include "dpsim_config.h"

#include <errno.h>
#include <math.h>
#include <mpi.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

enum { TAG_HELLO = 101, TAG_TASK, TAG_RESULT, TAG_BEAT, TAG_ERROR };
enum { RS_OK = 1, RS_FAILED = 2, RS_FATAL = 3 };

/* Fixed part of a RESULT; the scenario name (name_len bytes), then the
 * packed run or the failure message follow. */
typedef struct rhdr {
    int64_t pend; /* index into plan.pending */
    int64_t status;
    int64_t name_len;
    char started[32];
} rhdr;

static int g_rank = -1, g_size = 0, g_beats = 0, g_master_ran = 0, g_abandon = 0;
static int g_dead; /* rank 0 took a rank for dead */

static double timeout_s(void)
{
    const char *t = getenv("DPSIM_MPI_TIMEOUT");
    char *end;
    double v = t ? strtod(t, &end) : 0;
    return t && end != t && *end == '\0' && v > 0 ? v : 30.0;
}

static void nap(long ns)
{
    struct timespec ts = {0, ns};
    nanosleep(&ts, NULL);
}

int sweep_mpi_init(int *rank, int *size, dp_err *err)
{
    int inited = 0;
    MPI_Initialized(&inited);
    if (!inited) {
        int provided = 0;
        /* Multiple: a worker's heartbeat thread sends while its main thread
         * sends results and receives tasks. */
        if (MPI_Init_thread(NULL, NULL, MPI_THREAD_MULTIPLE, &provided) != MPI_SUCCESS)
            return dp_err_set(err, DP_ERUN, "--mpi: MPI_Init_thread failed");
        g_beats = provided >= MPI_THREAD_MULTIPLE;
        MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    }
    MPI_Comm_rank(MPI_COMM_WORLD, &g_rank);
    MPI_Comm_size(MPI_COMM_WORLD, &g_size);
    *rank = g_rank;
    *size = g_size;
    return 0;
}

void sweep_mpi_end(int e, const dp_err *err)
{
    if (g_rank == 0 && !g_master_ran) {
        /* Bad input or nothing to do: release the workers waiting for HELLO. */
        int64_t stop[4] = {-1, 0, 0, 0};
        for (int r = 1; r < g_size; r++)
            MPI_Send(stop, 4, MPI_INT64_T, r, TAG_TASK, MPI_COMM_WORLD);
    }
    int fin = 0;
    MPI_Finalized(&fin);
    if (fin)
        return;
    if (g_abandon || (g_rank == 0 && g_dead)) {
        /* A second interrupt abandons the runs in flight; and with a dead
         * rank MPI_Finalize may wait for it forever (its collective fence
         * includes every rank; seen with Open MPI 4.1).  Everything is
         * stored and printed: end the job.  The caller's message would
         * come after MPI_Abort, so it is printed here. */
        fprintf(stderr, "dpsim: %s\n", err && err->msg[0] ? err->msg : "sweep: a rank died");
        fflush(NULL);
        MPI_Abort(MPI_COMM_WORLD, e == DP_EINPUT ? 2 : 1);
    }
    MPI_Finalize();
}

/* ---- running one task (worker ranks and rank 0's thread) ---------------- */

/* The scenario of the point last run, kept for the next task (tasks of a
 * point are handed out together). */
typedef struct exec_ctx {
    const sweep_cfg *c;
    sweep_source src; /* rank 0's text */
    const policy_def *pk[POLICY_MAX];
    size_t n_pk;
    size_t point;
    scn_scenario *s;
    char msg[1024]; /* why the point did not load */
    dp_err rerr;    /* why the last run failed */
} exec_ctx;

static void exec_clear(exec_ctx *x)
{
    scn_free(x->s);
    x->s = NULL;
    x->point = SIZE_MAX;
}

/* Run one task: *r the run (status RS_OK), or msg the failure (RS_FAILED),
 * or RS_FATAL for out of memory. */
static int exec_task(exec_ctx *x, size_t point, size_t pi, uint64_t seed, res_run **r, const char **name,
                     char *started, size_t started_len, const char **msg)
{
    const sweep_grid *g = x->c->grid;
    *r = NULL;
    *name = "";
    sweep_now_iso(started, started_len);
    if (point != x->point) {
        exec_clear(x);
        x->point = point;
        scn_override ov[SWEEP_MAX_AXES];
        sweep_point_overrides(g, point, ov);
        dp_err e = {0};
        x->s = sweep_load_src(&x->src, ov, sweep_grid_n_axes(g), &e);
        if (!x->s) {
            if (e.code == DP_ENOMEM)
                return RS_FATAL;
            snprintf(x->msg, sizeof x->msg, "%s", e.msg);
        }
    }
    if (!x->s) {
        *msg = x->msg;
        return RS_FAILED;
    }
    *name = x->s->name ? x->s->name : "";
    memset(&x->rerr, 0, sizeof x->rerr);
    double w0 = sweep_wall_s();
    *r = policy_run(x->pk[pi], x->s, seed, &x->rerr);
    if (!*r) {
        *msg = x->rerr.msg;
        return x->rerr.code == DP_ENOMEM ? RS_FATAL : RS_FAILED;
    }
    (*r)->wall_s = sweep_wall_s() - w0;
    if (!x->c->detail) { /* metrics only (sweep_cfg.detail) */
        (*r)->n_segments = 0;
        (*r)->n_bins = 0;
    }
    return RS_OK;
}

/* ---- worker ranks ---------------------------------------------------------- */

static atomic_int beat_stop;

static void *beat_main(void *arg)
{
    (void)arg;
    int zero = 0;
    while (!atomic_load(&beat_stop)) {
        if (MPI_Send(&zero, 1, MPI_INT, 0, TAG_BEAT, MPI_COMM_WORLD) != MPI_SUCCESS)
            break;
        for (int i = 0; i < 10 && !atomic_load(&beat_stop); i++)
            nap(100000000L);
    }
    return NULL;
}

/* Receive the next message from rank 0 (tag `tag`, or MPI_ANY_TAG) into a
 * new buffer, polling (a blocking receive would spin a core in Open MPI
 * and could not time out).  NULL on timeout or error; *got_tag its tag. */
static void *recv_from_master(int tag, int *len, int *got_tag, double tmo)
{
    double t0 = sweep_wall_s();
    for (;;) {
        int flag = 0;
        MPI_Status stt;
        if (MPI_Iprobe(0, tag, MPI_COMM_WORLD, &flag, &stt) != MPI_SUCCESS)
            return NULL;
        if (flag) {
            int n = 0;
            MPI_Get_count(&stt, MPI_BYTE, &n);
            void *buf = dp_malloc(n > 0 ? (size_t)n : 1);
            if (!buf)
                return NULL;
            if (MPI_Recv(buf, n, MPI_BYTE, 0, stt.MPI_TAG, MPI_COMM_WORLD, MPI_STATUS_IGNORE) !=
                MPI_SUCCESS) {
                dp_free(buf);
                return NULL;
            }
            *len = n;
            *got_tag = stt.MPI_TAG;
            return buf;
        }
        if (sweep_wall_s() - t0 > tmo)
            return NULL;
        nap(50000L);
    }
}

static void send_error(const char *text)
{
    MPI_Send(text, (int)strlen(text) + 1, MPI_BYTE, 0, TAG_ERROR, MPI_COMM_WORLD);
}

static int send_result(int64_t pend, int status, const char *name, const char *started, const void *body,
                       size_t body_len, dp_err *err)
{
    rhdr h;
    memset(&h, 0, sizeof h);
    h.pend = pend;
    h.status = status;
    h.name_len = (int64_t)strlen(name);
    snprintf(h.started, sizeof h.started, "%s", started);
    size_t n = sizeof h + (size_t)h.name_len + body_len;
    if (n > INT32_MAX)
        return dp_err_set(err, DP_ERUN, "--mpi: a result of %zu bytes is too large to send", n);
    uint8_t *m = dp_malloc(n);
    if (!m)
        return dp_err_set(err, DP_ENOMEM, "out of memory sending a result");
    memcpy(m, &h, sizeof h);
    memcpy(m + sizeof h, name, (size_t)h.name_len);
    if (body_len)
        memcpy(m + sizeof h + (size_t)h.name_len, body, body_len);
    int rc = MPI_Send(m, (int)n, MPI_BYTE, 0, TAG_RESULT, MPI_COMM_WORLD);
    dp_free(m);
    return rc == MPI_SUCCESS ? 0
                             : dp_err_set(err, DP_ERUN, "--mpi: rank %d: sending a result failed", g_rank);
}

static int worker_serve(exec_ctx *x, double tmo, dp_err *err)
{
    for (int received = 0;; received++) {
        int len = 0, tag = 0;
        int64_t *t = recv_from_master(TAG_TASK, &len, &tag, tmo);
        if (!t)
            return dp_err_set(err, DP_ERUN, "--mpi: rank %d: no task from rank 0 for %.0f s; giving up",
                              g_rank, tmo);
        int64_t tk[4] = {-1, 0, 0, 0};
        if (len == (int)sizeof tk)
            memcpy(tk, t, sizeof tk);
        dp_free(t);
        if (tk[0] < 0)
            return 0;
        if (tk[1] < 0 || (size_t)tk[1] >= sweep_grid_n_points(x->c->grid) || tk[2] < 0 ||
            (size_t)tk[2] >= x->n_pk || tk[3] < 1)
            return dp_err_set(err, DP_ERUN, "--mpi: rank %d: a task out of range", g_rank);
        sweep_test_raise(g_rank, received, 1); /* test-only: a known point to die at */
        res_run *r = NULL;
        const char *name = "", *msg = "";
        char started[32];
        int st = exec_task(x, (size_t)tk[1], (size_t)tk[2], (uint64_t)tk[3], &r, &name, started,
                           sizeof started, &msg);
        int e = 0;
        if (st == RS_OK) {
            uint8_t *b = NULL;
            size_t bl = 0;
            e = sweep_wire_pack_run(r, &b, &bl, err);
            res_run_free(r);
            if (!e)
                e = send_result(tk[0], RS_OK, name, started, b, bl, err);
            dp_free(b);
        } else {
            e = send_result(tk[0], st, name, started, msg, strlen(msg) + 1, err);
            if (!e && st == RS_FATAL)
                e = dp_err_set(err, DP_ENOMEM, "--mpi: rank %d: out of memory: %s", g_rank, msg);
        }
        if (e)
            return e;
    }
}

static int plan_policies(const sweep_cfg *c, const policy_def **pk, size_t *n_pk)
{
    *n_pk = 0;
    for (size_t k = 0; k < policy_count(); k++)
        for (size_t i = 0; i < c->n_policies; i++)
            if (c->policies[i] == policy_at(k))
                pk[(*n_pk)++] = policy_at(k);
    return 0;
}

int sweep_mpi_worker(const sweep_cfg *c, dp_err *err)
{
    /* Rank 0 may spend a while checking the grid and reading the database
     * before it says hello: wait longer than for a task. */
    double tmo = timeout_s();
    int len = 0, tag = 0;
    char *hello = recv_from_master(MPI_ANY_TAG, &len, &tag, 10 * tmo + 600);
    if (!hello)
        return dp_err_set(err, DP_ERUN, "--mpi: rank %d: no word from rank 0; giving up", g_rank);
    if (tag != TAG_HELLO) { /* a stop: rank 0 found nothing to hand out, or bad input */
        dp_free(hello);
        return 0;
    }
    /* HELLO: spec_json NUL text */
    size_t sl = strnlen(hello, (size_t)len);
    if (sl == (size_t)len) {
        dp_free(hello);
        send_error("a malformed HELLO");
        return dp_err_set(err, DP_ERUN, "--mpi: rank %d: a malformed HELLO from rank 0", g_rank);
    }
    exec_ctx x;
    memset(&x, 0, sizeof x);
    x.c = c;
    x.point = SIZE_MAX;
    x.src = c->src;
    x.src.text = hello + sl + 1;
    x.src.len = (size_t)len - sl - 1;
    plan_policies(c, x.pk, &x.n_pk);

    int e = 0;
    dp_err le = {0};
    scn_scenario *base = sweep_load_src(&x.src, NULL, 0, &le);
    if (!base) {
        e = dp_err_set(err, DP_ERUN, "--mpi: rank %d: rank 0's scenario does not load here: %s", g_rank,
                       le.msg);
    } else {
        /* The seeds run are rank 0's choice (--seeds, or 1 without
         * randomness); spec_json holds them. */
        char *mine = sweep_spec_json(c->grid, base->text_hash, x.pk, x.n_pk, c->seeds);
        char *one = c->seeds != 1 ? sweep_spec_json(c->grid, base->text_hash, x.pk, x.n_pk, 1) : NULL;
        if (!(mine && strcmp(mine, hello) == 0) && !(one && strcmp(one, hello) == 0))
            e = dp_err_set(err, DP_ERUN,
                           "--mpi: rank %d: its sweep (%s) differs from rank 0's (%s): every rank must be "
                           "started with the same arguments",
                           g_rank, mine ? mine : "?", hello);
        dp_free(one);
        dp_free(mine);
        scn_free(base);
    }
    if (e) {
        send_error(err->msg);
        dp_free(hello);
        return e;
    }
    pthread_t beat;
    int have_beat = 0;
    atomic_store(&beat_stop, 0);
    if (g_beats)
        have_beat = pthread_create(&beat, NULL, beat_main, NULL) == 0;
    e = worker_serve(&x, tmo, err);
    if (e && e != DP_ENOMEM)
        send_error(err->msg);
    if (have_beat) {
        atomic_store(&beat_stop, 1);
        pthread_join(beat, NULL);
    }
    exec_clear(&x);
    dp_free(hello);
    return e;
}

/* ---- rank 0 -------------------------------------------------------------- */

/* Rank 0's own worker thread: takes one task at a time from the master
 * loop through this mailbox. */
typedef struct local_box {
    pthread_mutex_t mu;
    pthread_cond_t cv;
    int has_task, has_result, quit;
    int64_t pend;
    size_t point, pi;
    uint64_t seed;
    int status;
    res_run *r;
    char name[256];
    char started[32];
    char msg[1024];
    exec_ctx x;
} local_box;

static void *local_main(void *arg)
{
    local_box *b = arg;
    pthread_mutex_lock(&b->mu);
    for (;;) {
        while (!b->has_task && !b->quit)
            pthread_cond_wait(&b->cv, &b->mu);
        if (b->quit)
            break;
        size_t point = b->point, pi = b->pi;
        uint64_t seed = b->seed;
        pthread_mutex_unlock(&b->mu);
        res_run *r = NULL;
        const char *name = "", *msg = "";
        char started[32];
        int st = exec_task(&b->x, point, pi, seed, &r, &name, started, sizeof started, &msg);
        pthread_mutex_lock(&b->mu);
        b->status = st;
        b->r = r;
        snprintf(b->name, sizeof b->name, "%s", name);
        snprintf(b->started, sizeof b->started, "%s", started);
        snprintf(b->msg, sizeof b->msg, "%s", st == RS_OK ? "" : msg);
        b->has_task = 0;
        b->has_result = 1;
    }
    pthread_mutex_unlock(&b->mu);
    return NULL;
}

enum { W_IDLE = 0, W_BUSY, W_DONE, W_DEAD };

typedef struct wstate {
    int state;
    int64_t pend; /* in flight when W_BUSY */
    double last;  /* host time last heard from */
} wstate;

typedef struct master {
    plan *p;
    sweep_stats *stats;
    store *st;
    size_t *order; /* pending indices, costliest first */
    size_t next;
    int stopping;
    uint32_t *left; /* runs left per local point, for "points done" */
    sweep_progress pg;
    size_t lost;
    char lost_msg[512];
    int e;
    dp_err *err;
} master;

/* Costliest first, ties in plan order (so a point's runs stay together). */
static const double *sort_cost;
static int cmp_cost(const void *x, const void *y)
{
    size_t a = *(const size_t *)x, b = *(const size_t *)y;
    if (sort_cost[a] != sort_cost[b])
        return sort_cost[a] < sort_cost[b] ? 1 : -1;
    return (a > b) - (a < b);
}

static int order_tasks(master *m)
{
    plan *p = m->p;
    const sweep_grid *g = p->cfg->grid;
    double *cost = dp_malloc((p->n_pending ? p->n_pending : 1) * sizeof *cost);
    m->order = dp_malloc((p->n_pending ? p->n_pending : 1) * sizeof *m->order);
    if (!cost || !m->order) {
        dp_free(cost);
        return dp_err_set(m->err, DP_ENOMEM, "out of memory ordering %zu runs", p->n_pending);
    }
    size_t last_point = SIZE_MAX;
    double last_cost = 0;
    /* Estimating loads each point's scenario (0.25 ms for the paper
     * testbed on the development machine), before any worker has work:
     * past this many points, the plan's order instead. */
    const size_t max_estimated = 100000;
    int estimate = p->n_lpoints <= max_estimated;
    for (size_t i = 0; i < p->n_pending; i++) {
        const task *t = &p->tasks[p->pending[i]];
        if (estimate && t->point != last_point) {
            scn_override ov[SWEEP_MAX_AXES];
            sweep_point_overrides(g, t->point, ov);
            dp_err e = {0};
            scn_scenario *s = scn_load_string(p->cfg->src.name, p->cfg->src.text, p->cfg->src.len,
                                              p->cfg->src.base_dir, ov, sweep_grid_n_axes(g), &e);
            /* A point that does not load fails at once: cheapest. */
            last_cost = s ? sweep_cost_estimate(s) : 0;
            scn_free(s);
            last_point = t->point;
        }
        cost[i] = last_cost;
        m->order[i] = i;
    }
    sort_cost = cost;
    qsort(m->order, p->n_pending, sizeof *m->order, cmp_cost);
    sort_cost = NULL;
    dp_free(cost);
    return 0;
}

/* The next task to hand out, or -1 when none is left (or stopping). */
static int64_t next_task(master *m)
{
    if (m->stopping || m->e || m->next >= m->p->n_pending)
        return -1;
    return (int64_t)m->order[m->next++];
}

static int send_task(master *m, int rank, int64_t pend)
{
    int64_t msg[4] = {-1, 0, 0, 0};
    if (pend >= 0) {
        const task *t = &m->p->tasks[m->p->pending[pend]];
        msg[0] = pend;
        msg[1] = (int64_t)t->point;
        msg[2] = t->pi;
        msg[3] = t->seed;
    }
    return MPI_Send(msg, 4, MPI_INT64_T, rank, TAG_TASK, MPI_COMM_WORLD) == MPI_SUCCESS ? 0 : -1;
}

static void note_lost(master *m, const char *fmt, int rank, int64_t pend)
{
    m->lost++;
    if (m->lost == 1) {
        const task *t = &m->p->tasks[m->p->pending[pend]];
        char *l = sweep_point_label(m->p->cfg->grid, t->point);
        snprintf(m->lost_msg, sizeof m->lost_msg, fmt, rank, policy_name(m->p->pk[t->pi]), l ? l : "?",
                 (unsigned)t->seed);
        dp_free(l);
    }
}

/* Store one finished task (from a rank or the local thread). */
static void store_result(master *m, int64_t pend, int status, const char *name, const char *started,
                         res_run *r, const char *msg)
{
    plan *p = m->p;
    const sweep_grid *g = p->cfg->grid;
    const task *t = &p->tasks[p->pending[pend]];
    size_t na = sweep_grid_n_axes(g);
    scn_override ov[SWEEP_MAX_AXES];
    sweep_point_overrides(g, t->point, ov);
    char *ovt[SWEEP_MAX_AXES] = {0};
    char *pj = sweep_point_json(g, t->point);
    int oom = !pj;
    for (size_t a = 0; a < na && !oom; a++) {
        size_t len = strlen(ov[a].key) + strlen(ov[a].value) + 2;
        if (!(ovt[a] = dp_malloc(len)))
            oom = 1;
        else
            snprintf(ovt[a], len, "%s=%s", ov[a].key, ov[a].value);
    }
    dp_err e = {0};
    int rc = 0;
    if (oom) {
        rc = dp_err_set(&e, DP_ENOMEM, "out of memory storing a run");
    } else if (status == RS_OK) {
        /* The run's scenario as store_put_run reads it: name, text, hash. */
        scn_scenario s;
        memset(&s, 0, sizeof s);
        s.name = (char *)name;
        s.text = p->base->text;
        s.text_hash = p->base->text_hash;
        rc = store_put_run(m->st, &s, (const char *const *)ovt, na, r, DPSIM_VERSION, started, p->sweep_id,
                           pj, NULL, &e);
    } else {
        rc = store_put_failed(m->st, p->base->name, p->cfg->src.text, p->base->text_hash,
                              (const char *const *)ovt, na, policy_name(p->pk[t->pi]), t->seed, DPSIM_VERSION,
                              started, p->sweep_id, pj, msg, NULL, &e);
    }
    if (rc && !oom) {
        /* A concurrent sweep on the same file may have stored it meanwhile. */
        int done = 0;
        if (store_point_done(m->st, p->sweep_id, pj, policy_name(p->pk[t->pi]), t->seed, DPSIM_VERSION, &done,
                             NULL) == 0 &&
            (done == 1 || (done == 2 && !p->cfg->retry_failed))) {
            rc = 0;
            status = 0;
        }
    }
    for (size_t a = 0; a < na; a++)
        dp_free(ovt[a]);
    dp_free(pj);
    if (rc) {
        if (!m->e)
            m->e = dp_err_set(m->err, rc == DP_ENOMEM ? DP_ENOMEM : DP_ERUN, "%s", e.msg);
        m->stopping = 1; /* a broken database fails every later run too */
        return;
    }
    m->pg.done++;
    if (status == RS_OK)
        m->stats->runs_ok++;
    else if (status == RS_FAILED) {
        m->stats->runs_failed++;
        m->pg.failed++;
    } else
        m->stats->runs_before++;
    if (m->left[t->lp] && --m->left[t->lp] == 0)
        m->pg.points_done++;
    sweep_test_raise(0, (long)m->pg.done, 0);
}

/* Store a RESULT; returns its status (RS_FATAL: the rank stops serving). */
static int handle_result(master *m, const uint8_t *buf, int len, int rank)
{
    rhdr h;
    if (len < (int)sizeof h)
        return 0;
    memcpy(&h, buf, sizeof h);
    h.started[sizeof h.started - 1] = '\0';
    if (h.pend < 0 || (size_t)h.pend >= m->p->n_pending || h.name_len < 0 ||
        (size_t)h.name_len > (size_t)len - sizeof h)
        return 0;
    char *name = dp_malloc((size_t)h.name_len + 1);
    if (!name) {
        if (!m->e)
            m->e = dp_err_set(m->err, DP_ENOMEM, "out of memory receiving a run");
        return 0;
    }
    memcpy(name, buf + sizeof h, (size_t)h.name_len);
    name[h.name_len] = '\0';
    const uint8_t *body = buf + sizeof h + h.name_len;
    size_t blen = (size_t)len - sizeof h - (size_t)h.name_len;
    if (h.status == RS_OK) {
        res_run *r = NULL;
        dp_err e = {0};
        if (sweep_wire_unpack_run(body, blen, &r, &e)) {
            if (!m->e)
                m->e = dp_err_set(m->err, e.code, "--mpi: rank %d: %s", rank, e.msg);
            m->stopping = 1;
        } else {
            store_result(m, h.pend, RS_OK, name, h.started, r, NULL);
            res_run_free(r);
        }
    } else if (h.status == RS_FAILED) {
        char *msg = dp_malloc(blen + 1);
        if (msg) {
            memcpy(msg, body, blen);
            msg[blen] = '\0';
            store_result(m, h.pend, RS_FAILED, name, h.started, NULL, msg);
            dp_free(msg);
        }
    } else {
        note_lost(m, "rank %d ran out of memory on %s at %s (seed %u)", rank, h.pend);
    }
    dp_free(name);
    return (int)h.status;
}

int sweep_mpi_master(plan *p, sweep_stats *stats, dp_err *err)
{
    const sweep_cfg *c = p->cfg;
    g_master_ran = 1;
    master m;
    memset(&m, 0, sizeof m);
    m.p = p;
    m.stats = stats;
    m.err = err;
    /* Without heartbeats (an MPI without MPI_THREAD_MULTIPLE) a long run
     * is indistinguishable from a dead rank: no rank is then taken for
     * dead, and a death ends the job as mpirun decides. */
    double tmo = g_beats ? timeout_s() : INFINITY;
    int nw = g_size - 1;
    wstate *ws = dp_calloc((size_t)g_size, sizeof *ws);
    m.left = dp_calloc(p->n_lpoints ? p->n_lpoints : 1, sizeof *m.left);
    size_t hello_len = strlen(p->spec_json) + 1 + c->src.len;
    char *hello = dp_malloc(hello_len);
    int e = 0;
    if (!ws || !m.left || !hello)
        e = dp_err_set(err, DP_ENOMEM, "out of memory starting %d ranks", g_size);
    if (!e && hello_len > INT32_MAX)
        e = dp_err_set(err, DP_EINPUT, "--mpi: a scenario of %zu bytes is too large to send", c->src.len);
    if (!e)
        e = order_tasks(&m);
    if (!e && !(m.st = store_open(c->db_path, 0, err)))
        e = err ? err->code : DP_ERUN;
    local_box *lb = NULL;
    pthread_t lt;
    int have_lt = 0;
    if (!e) {
        lb = dp_calloc(1, sizeof *lb);
        if (!lb)
            e = dp_err_set(err, DP_ENOMEM, "out of memory starting rank 0's worker");
    }
    if (e) {
        /* Release the workers before returning. */
        g_master_ran = 0;
        store_close(m.st);
        dp_free(ws);
        dp_free(m.left);
        dp_free(hello);
        dp_free(m.order);
        dp_free(lb);
        return e;
    }
    for (size_t i = 0; i < p->n_pending; i++)
        m.left[p->tasks[p->pending[i]].lp]++;
    m.pg.out = c->progress_out ? c->progress_out : stderr;
    m.pg.on = c->progress != 0;
    m.pg.tty = m.pg.on && isatty(fileno(m.pg.out));
    m.pg.total = p->n_pending;
    m.pg.points_total = p->n_lpoints;
    for (size_t lp = 0; lp < p->n_lpoints; lp++)
        m.pg.points_done += m.left[lp] == 0;
    m.pg.t0 = m.pg.last = sweep_wall_s();

    memcpy(hello, p->spec_json, strlen(p->spec_json) + 1);
    memcpy(hello + strlen(p->spec_json) + 1, c->src.text, c->src.len);
    double now = sweep_wall_s();
    for (int r = 1; r < g_size; r++) {
        ws[r].last = now;
        if (MPI_Send(hello, (int)hello_len, MPI_BYTE, r, TAG_HELLO, MPI_COMM_WORLD) != MPI_SUCCESS) {
            ws[r].state = W_DEAD;
            continue;
        }
        int64_t t = next_task(&m);
        if (send_task(&m, r, t) != 0)
            ws[r].state = W_DEAD;
        else if (t < 0)
            ws[r].state = W_DONE;
        else
            ws[r].state = W_BUSY, ws[r].pend = t;
        if (ws[r].state == W_DEAD && t >= 0)
            m.order[--m.next] = (size_t)t; /* never sent: hand it to another */
    }
    /* Rank 0's own thread: same exec_task on rank 0's text. */
    pthread_mutex_init(&lb->mu, NULL);
    pthread_cond_init(&lb->cv, NULL);
    lb->x.c = c;
    lb->x.src = c->src;
    lb->x.point = SIZE_MAX;
    memcpy(lb->x.pk, p->pk, sizeof p->pk);
    lb->x.n_pk = p->n_pk;
    wstate lw = {W_IDLE, -1, now};
    have_lt = pthread_create(&lt, NULL, local_main, lb) == 0;
    if (!have_lt)
        lw.state = W_DONE;
    stats->jobs = (unsigned)nw + (have_lt ? 1u : 0u);

    int stop_seen = 0;
    uint8_t *buf = NULL;
    size_t cap = 0;
    for (;;) {
        int sig = c->stop ? (int)*c->stop : 0;
        if (sig >= 1 && !stop_seen) {
            stop_seen = 1;
            m.stopping = 1;
            if (m.pg.tty && m.pg.drawn)
                fputc('\n', m.pg.out);
            if (c->progress)
                fprintf(m.pg.out,
                        "dpsim sweep: interrupted: finishing the runs in flight (interrupt again to "
                        "abandon them)\n");
        }
        if (sig >= 2) {
            g_abandon = 1;
            break;
        }
        int busy = 0;
        /* Rank 0's thread. */
        if (have_lt) {
            pthread_mutex_lock(&lb->mu);
            if (lb->has_result) {
                lb->has_result = 0;
                if (lb->status == RS_FATAL)
                    note_lost(&m, "rank %d (rank 0's thread) ran out of memory on %s at %s (seed %u)", 0,
                              lb->pend);
                else
                    store_result(&m, lb->pend, lb->status, lb->name, lb->started, lb->r, lb->msg);
                res_run_free(lb->r);
                lb->r = NULL;
                lw.state = W_IDLE;
                busy = 1;
            }
            if (lw.state == W_IDLE) {
                int64_t t = next_task(&m);
                if (t < 0) {
                    lw.state = W_DONE;
                } else {
                    const task *tk = &p->tasks[p->pending[t]];
                    lb->pend = t;
                    lb->point = tk->point;
                    lb->pi = tk->pi;
                    lb->seed = tk->seed;
                    lb->has_task = 1;
                    lw.state = W_BUSY;
                    pthread_cond_signal(&lb->cv);
                }
            }
            pthread_mutex_unlock(&lb->mu);
        }
        /* The ranks. */
        int flag = 0;
        MPI_Status stt;
        if (MPI_Iprobe(MPI_ANY_SOURCE, MPI_ANY_TAG, MPI_COMM_WORLD, &flag, &stt) == MPI_SUCCESS && flag) {
            busy = 1;
            int n = 0, r = stt.MPI_SOURCE;
            MPI_Get_count(&stt, MPI_BYTE, &n);
            if ((size_t)n + 1 > cap) {
                uint8_t *nb = dp_realloc(buf, (size_t)n + 1);
                if (!nb) {
                    if (!m.e)
                        m.e = dp_err_set(err, DP_ENOMEM, "out of memory receiving %d bytes", n);
                    break;
                }
                buf = nb;
                cap = (size_t)n + 1;
            }
            /* Non-blocking: a large message comes in pieces, and a rank
             * that dies half-way would leave a blocking receive waiting
             * forever. */
            MPI_Request rq;
            int rc = MPI_Irecv(buf, n, MPI_BYTE, r, stt.MPI_TAG, MPI_COMM_WORLD, &rq);
            double r0 = sweep_wall_s();
            int got = 0;
            while (rc == MPI_SUCCESS && !got) {
                rc = MPI_Test(&rq, &got, MPI_STATUS_IGNORE);
                if (!got && sweep_wall_s() - r0 > tmo)
                    break;
                if (!got)
                    nap(50000L);
            }
            if (rc == MPI_SUCCESS && !got && r > 0 && r < g_size) {
                /* The request stays posted: its buffer must outlive it. */
                buf = NULL;
                cap = 0;
                if (ws[r].state == W_BUSY)
                    note_lost(&m, "rank %d died (a message cut short) while sending %s at %s (seed %u)", r,
                              ws[r].pend);
                ws[r].state = W_DEAD;
                g_dead = 1;
                continue;
            }
            if (rc == MPI_SUCCESS && r > 0 && r < g_size && ws[r].state != W_DEAD) {
                ws[r].last = sweep_wall_s();
                if (stt.MPI_TAG == TAG_RESULT && ws[r].state == W_BUSY) {
                    if (handle_result(&m, buf, n, r) == RS_FATAL) {
                        ws[r].state = W_DONE; /* it stopped serving */
                        continue;
                    }
                    int64_t t = next_task(&m);
                    if (send_task(&m, r, t) != 0) {
                        ws[r].state = W_DEAD;
                        if (t >= 0)
                            m.order[--m.next] = (size_t)t;
                    } else if (t < 0)
                        ws[r].state = W_DONE;
                    else
                        ws[r].pend = t;
                } else if (stt.MPI_TAG == TAG_ERROR) {
                    buf[n] = '\0';
                    if (!m.e)
                        m.e = dp_err_set(err, DP_ERUN, "%s", (const char *)buf);
                    if (ws[r].state == W_BUSY)
                        note_lost(&m, "rank %d stopped while running %s at %s (seed %u)", r, ws[r].pend);
                    ws[r].state = W_DEAD;
                }
            }
        }
        /* Liveness: a rank silent for the timeout is taken for dead. */
        now = sweep_wall_s();
        int active = lw.state == W_BUSY || lw.state == W_IDLE;
        for (int r = 1; r < g_size; r++) {
            if (ws[r].state == W_BUSY && now - ws[r].last > tmo) {
                ws[r].state = W_DEAD;
                g_dead = 1;
                note_lost(&m, "rank %d went silent (died?) while running %s at %s (seed %u)", r, ws[r].pend);
                if (m.pg.tty && m.pg.drawn)
                    fputc('\n', m.pg.out);
                if (c->progress)
                    fprintf(m.pg.out,
                            "dpsim sweep: rank %d silent for %.0f s: taken for dead, its run in flight is "
                            "left for a resume\n",
                            r, tmo);
            }
            active |= ws[r].state == W_BUSY;
        }
        if (!active)
            break;
        if (!busy) {
            sweep_progress_draw(&m.pg, 0);
            nap(200000L);
        }
    }
    if (have_lt) {
        pthread_mutex_lock(&lb->mu);
        lb->quit = 1;
        pthread_cond_signal(&lb->cv);
        pthread_mutex_unlock(&lb->mu);
        if (g_abandon)
            pthread_detach(lt); /* MPI_Abort ends the process */
        else
            pthread_join(lt, NULL);
    }
    if (!g_abandon) {
        exec_clear(&lb->x);
        pthread_mutex_destroy(&lb->mu);
        pthread_cond_destroy(&lb->cv);
        dp_free(lb);
    }
    sweep_progress_draw(&m.pg, 1);
    store_close(m.st);
    stats->interrupted = stop_seen;
    e = m.e;
    if (!e && m.lost)
        e = dp_err_set(err, DP_ERUN,
                       "--mpi: %zu run%s lost with %s (first: %s); run the same command again to "
                       "resume",
                       m.lost, m.lost == 1 ? "" : "s", m.lost == 1 ? "its rank" : "their ranks", m.lost_msg);
    else if (e && m.lost && err)
        dp_err_prefix(err, "%zu run%s lost (%s); and", m.lost, m.lost == 1 ? "" : "s", m.lost_msg);
    dp_free(buf);
    dp_free(ws);
    dp_free(m.left);
    dp_free(hello);
    dp_free(m.order);
    return e;
}
