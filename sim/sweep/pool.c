/* pool.c: a sweep's runs in forked worker processes, with progress.
 *
 * Process model.  The parent expands the grid, registers the sweep, looks
 * up which runs are stored already, then forks `jobs` workers and closes
 * its own database connection (a connection must not cross fork()).  The
 * runs still to do are an array every worker inherits; workers claim the
 * next index from a counter in a shared anonymous mapping, so a slow run
 * never holds up a queue behind it.  Each worker opens its own connection
 * and commits every run (ok or failed) as one transaction the moment it
 * ends, then tells the parent over a pipe (fixed-size messages below
 * PIPE_BUF, so writes from several workers never interleave).  The parent
 * only counts, draws progress and, at the end, reads the stored runs back
 * for the summary.  So an interrupt, or SIGKILL of everything, loses at
 * most the runs in flight, and SQLite's transactions keep the file
 * consistent.
 *
 */
#include "sweep/sweep_impl.h"

#include "dpsim_config.h"

#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#ifdef __linux__
#include <sys/prctl.h>
#endif

void sweep_test_raise(int rank, long count, int worker)
{
    static int parsed, want_rank = -1, sig;
    static long n;
    if (!parsed) {
        parsed = 1;
        const char *e = getenv("DPSIM_TEST_RAISE");
        if (!e || sscanf(e, "%d:%ld:%d", &want_rank, &n, &sig) != 3)
            want_rank = -1;
    }
    if (want_rank >= 0 && want_rank == rank && (want_rank > 0) == (worker != 0) && count == n)
        raise(sig);
}

/* ---- clocks (host time, never inside a simulation) --------------------- */

double sweep_wall_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

void sweep_now_iso(char *buf, size_t len)
{
    time_t t = time(NULL);
    struct tm tm;
    gmtime_r(&t, &tm);
    strftime(buf, len, "%Y-%m-%dT%H:%M:%SZ", &tm);
}

/* Point-major expansion of the shard into tasks. */
/* ---- workers ------------------------------------------------------------- */

enum { WR_OK = 1, WR_FAILED, WR_ALREADY, WR_DBERR };
enum { WORKER_EXIT_DB = 3 };

/* Fixed size and at most PIPE_BUF (512 on every POSIX system), so each is
 * written atomically however many workers share the pipe. */
typedef struct wmsg {
    int32_t task; /* index into plan.pending, -1 for none */
    int32_t status;
    char text[504];
} wmsg;
_Static_assert(sizeof(wmsg) <= 512, "a worker message must fit in PIPE_BUF");

/* What parent and workers share: the next pending index to claim, the
 * stop request (1 = start no new run), and a write lock.  Workers take
 * wlock around each store_put_*: SQLite's own busy handler, when two
 * writers meet, sleeps 1, 2, 5, 10... ms, longer than a whole small run,
 * while a futex hands the lock over at once (measured on tiny.yaml: two
 * workers went no faster than one without it).  The mutex is robust, so a
 * worker killed while holding it cannot block the others; SQLite's lock
 * still guards against other processes. */
typedef struct shared {
    atomic_size_t next;
    atomic_int stop;
    int have_wlock;
    pthread_mutex_t wlock;
} shared;

static void wlock_init(shared *sh)
{
    pthread_mutexattr_t a;
    sh->have_wlock = 0;
    if (pthread_mutexattr_init(&a))
        return;
    if (pthread_mutexattr_setpshared(&a, PTHREAD_PROCESS_SHARED) == 0 &&
        pthread_mutexattr_setrobust(&a, PTHREAD_MUTEX_ROBUST) == 0 && pthread_mutex_init(&sh->wlock, &a) == 0)
        sh->have_wlock = 1; /* else: SQLite's busy handler alone, slower but correct */
    pthread_mutexattr_destroy(&a);
}

static void wlock(shared *sh)
{
    if (sh->have_wlock && pthread_mutex_lock(&sh->wlock) == EOWNERDEAD)
        pthread_mutex_consistent(&sh->wlock); /* its holder died; the database rolled it back */
}

static void wunlock(shared *sh)
{
    if (sh->have_wlock)
        pthread_mutex_unlock(&sh->wlock);
}

static void send_msg(int fd, long task_i, int status, const char *text)
{
    wmsg m;
    memset(&m, 0, sizeof m);
    m.task = (int32_t)task_i;
    m.status = status;
    if (text)
        snprintf(m.text, sizeof m.text, "%s", text);
    /* A write of at most PIPE_BUF bytes to a pipe is all or nothing. */
    while (write(fd, &m, sizeof m) < 0 && errno == EINTR)
        ;
}

/* The scenario of one point, loaded once per point a worker meets. */
typedef struct wpoint {
    size_t point;
    scn_scenario *s; /* NULL when it did not load: msg says why */
    char msg[1024];
    char *json;
    char *ov_text[SWEEP_MAX_AXES];
} wpoint;

static void wpoint_clear(wpoint *w, size_t n_axes)
{
    scn_free(w->s);
    dp_free(w->json);
    for (size_t a = 0; a < n_axes; a++)
        dp_free(w->ov_text[a]);
    memset(w, 0, sizeof *w);
    w->point = SIZE_MAX;
}

static int wpoint_load(wpoint *w, const plan *p, size_t point)
{
    const sweep_grid *g = p->cfg->grid;
    wpoint_clear(w, sweep_grid_n_axes(g));
    w->point = point;
    scn_override ov[SWEEP_MAX_AXES];
    sweep_point_overrides(g, point, ov);
    if (!(w->json = sweep_point_json(g, point)))
        return DP_ENOMEM;
    for (size_t a = 0; a < sweep_grid_n_axes(g); a++) {
        size_t len = strlen(ov[a].key) + strlen(ov[a].value) + 2;
        if (!(w->ov_text[a] = dp_malloc(len)))
            return DP_ENOMEM;
        snprintf(w->ov_text[a], len, "%s=%s", ov[a].key, ov[a].value);
    }
    dp_err e = {0};
    w->s = sweep_load_src(&p->cfg->src, ov, sweep_grid_n_axes(g), &e);
    if (!w->s) {
        if (e.code == DP_ENOMEM)
            return DP_ENOMEM;
        snprintf(w->msg, sizeof w->msg, "%s", e.msg);
    }
    return 0;
}

/* Is the run stored (by us earlier, or by a concurrent sweep on the same
 * file)?  1 when there is nothing left to do for it. */
static int stored_already(store *st, const plan *p, const wpoint *w, const task *t)
{
    int done = 0;
    if (store_point_done(st, p->sweep_id, w->json, policy_name(p->pk[t->pi]), t->seed, DPSIM_VERSION, &done,
                         NULL))
        return 0;
    return done == 1 || (done == 2 && !p->cfg->retry_failed);
}

static int worker_run_one(store *st, shared *sh, const plan *p, const wpoint *w, const task *t, dp_err *err)
{
    const sweep_grid *g = p->cfg->grid;
    const policy_def *k = p->pk[t->pi];
    char started[32];
    sweep_now_iso(started, sizeof started);
    const char *const *ovs = (const char *const *)w->ov_text;
    dp_err rerr = {0};
    res_run *r = NULL;
    if (w->s) {
        double w0 = sweep_wall_s();
        r = policy_run(k, w->s, t->seed, &rerr);
        if (r)
            r->wall_s = sweep_wall_s() - w0;
    }
    int rc, ok = r != NULL;
    if (r && !p->cfg->detail) { /* metrics only (sweep_cfg.detail) */
        r->n_segments = 0;
        r->n_bins = 0;
    }
    if (r) {
        wlock(sh);
        rc = store_put_run(st, w->s, ovs, sweep_grid_n_axes(g), r, DPSIM_VERSION, started, p->sweep_id,
                           w->json, NULL, err);
        wunlock(sh);
        res_run_free(r);
    } else {
        const char *msg = w->s ? rerr.msg : w->msg;
        if (rerr.code == DP_ENOMEM)
            return dp_err_set(err, DP_ENOMEM, "out of memory running %s: %s", policy_name(k), rerr.msg);
        wlock(sh);
        rc = store_put_failed(st, p->base->name, p->cfg->src.text, p->base->text_hash, ovs,
                              sweep_grid_n_axes(g), policy_name(k), t->seed, DPSIM_VERSION, started,
                              p->sweep_id, w->json, msg, NULL, err);
        wunlock(sh);
    }
    if (rc) {
        /* A concurrent sweep on the same file may have stored this run
         * between our check and our write; that is not a failure. */
        if (stored_already(st, p, w, t))
            return WR_ALREADY;
        return rc;
    }
    return ok ? WR_OK : WR_FAILED;
}

static void worker_main(const plan *p, shared *sh, int wfd, pid_t parent)
{
    /* The parent coordinates interrupts: a terminal's Ctrl-C reaches the
     * whole process group, and workers must finish their run, not die. */
    signal(SIGINT, SIG_IGN);
    signal(SIGTERM, SIG_DFL);
    signal(SIGPIPE, SIG_DFL);
#ifdef __linux__
    /* If the parent is killed (even by SIGKILL), stop too, rather than
     * racing a resumed sweep for the same runs. */
    prctl(PR_SET_PDEATHSIG, SIGKILL);
#endif
    if (getppid() != parent)
        _exit(0);
    dp_err err = {0};
    store *st = store_open(p->cfg->db_path, 0, &err);
    if (!st) {
        send_msg(wfd, -1, WR_DBERR, err.msg);
        _exit(WORKER_EXIT_DB);
    }
    wpoint w;
    memset(&w, 0, sizeof w);
    w.point = SIZE_MAX;
    int code = 0;
    for (;;) {
        if (atomic_load(&sh->stop) || getppid() != parent)
            break;
        size_t i = atomic_fetch_add(&sh->next, 1);
        if (i >= p->n_pending)
            break;
        const task *t = &p->tasks[p->pending[i]];
        if (t->point != w.point && wpoint_load(&w, p, t->point)) {
            send_msg(wfd, (long)i, WR_DBERR, "out of memory loading a sweep point");
            code = WORKER_EXIT_DB;
            break;
        }
        if (stored_already(st, p, &w, t)) {
            send_msg(wfd, (long)i, WR_ALREADY, NULL);
            continue;
        }
        int r = worker_run_one(st, sh, p, &w, t, &err);
        if (r < 0) {
            send_msg(wfd, (long)i, WR_DBERR, err.msg);
            code = WORKER_EXIT_DB;
            break;
        }
        send_msg(wfd, (long)i, r, NULL);
    }
    wpoint_clear(&w, sweep_grid_n_axes(p->cfg->grid));
    store_close(st);
    close(wfd);
    /* _exit: the parent's stdio buffers and atexit handlers are not ours. */
    _exit(code);
}

/* ---- progress ------------------------------------------------------------ */

static void fmt_duration(char *buf, size_t len, double s)
{
    if (!isfinite(s) || s < 0)
        snprintf(buf, len, "--");
    else if (s >= 3600)
        snprintf(buf, len, "%dh%02dm", (int)(s / 3600), (int)fmod(s / 60, 60));
    else if (s >= 60)
        snprintf(buf, len, "%dm%02ds", (int)(s / 60), (int)fmod(s, 60));
    else
        snprintf(buf, len, "%.1fs", s);
}

void sweep_progress_draw(sweep_progress *pg, int final)
{
    if (!pg->on)
        return;
    double now = sweep_wall_s();
    if (!final && now - pg->last < (pg->tty ? 0.1 : 5.0))
        return;
    pg->last = now;
    double el = now - pg->t0;
    double rate = el > 0 ? (double)pg->done / el : 0;
    char tm[32];
    /* While running: the time left; at the end: the time it took. */
    fmt_duration(tm, sizeof tm, final ? el : rate > 0 ? (double)(pg->total - pg->done) / rate : NAN);
    const char *tm_what = final ? "took" : "ETA";
    if (pg->tty) {
        char bar[25];
        size_t fill = pg->total ? pg->done * 24 / pg->total : 24;
        for (size_t i = 0; i < 24; i++)
            bar[i] = i < fill ? '#' : '.';
        bar[24] = '\0';
        fprintf(pg->out, "\r[%s] %zu/%zu runs, %zu/%zu points, %zu failed, %.1f runs/s, %s %s\033[K", bar,
                pg->done, pg->total, pg->points_done, pg->points_total, pg->failed, rate, tm_what, tm);
        if (final)
            fputc('\n', pg->out);
    } else {
        fprintf(pg->out,
                "dpsim sweep: %zu/%zu runs (%.0f%%), %zu/%zu points, %zu failed, %.1f runs/s, %s %s\n",
                pg->done, pg->total, pg->total ? 100.0 * (double)pg->done / (double)pg->total : 100.0,
                pg->points_done, pg->points_total, pg->failed, rate, tm_what, tm);
    }
    fflush(pg->out);
    pg->drawn = 1;
}

/* ---- the parent ---------------------------------------------------------- */

int sweep_run_workers(plan *p, sweep_stats *stats, dp_err *err)
{
    const sweep_cfg *c = p->cfg;
    unsigned jobs = c->jobs;
    if (jobs > p->n_pending)
        jobs = (unsigned)p->n_pending;
    /* Runs left per point, for the "points done" count. */
    uint32_t *left = dp_calloc(p->n_lpoints ? p->n_lpoints : 1, sizeof *left);
    pid_t *pids = dp_calloc(jobs, sizeof *pids);
    shared *sh = mmap(NULL, sizeof *sh, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    int fds[2] = {-1, -1};
    int e = 0;
    if (!left || !pids)
        e = dp_err_set(err, DP_ENOMEM, "out of memory starting %u workers", jobs);
    else if (sh == MAP_FAILED)
        e = dp_err_set(err, DP_ERUN, "sweep: shared memory for the workers: %s", strerror(errno));
    else if (pipe(fds) < 0)
        e = dp_err_set(err, DP_ERUN, "sweep: pipe for the workers: %s", strerror(errno));
    if (e) {
        if (sh != MAP_FAILED)
            munmap(sh, sizeof *sh);
        dp_free(left);
        dp_free(pids);
        return e;
    }
    atomic_init(&sh->next, 0);
    atomic_init(&sh->stop, 0);
    wlock_init(sh);
    for (size_t i = 0; i < p->n_pending; i++)
        left[p->tasks[p->pending[i]].lp]++;

    sweep_progress pg = {0};
    pg.out = c->progress_out ? c->progress_out : stderr;
    pg.on = c->progress != 0;
    pg.tty = pg.on && isatty(fileno(pg.out));
    pg.total = p->n_pending;
    pg.points_total = p->n_lpoints;
    for (size_t lp = 0; lp < p->n_lpoints; lp++)
        pg.points_done += left[lp] == 0;
    pg.t0 = pg.last = sweep_wall_s();

    fflush(stdout);
    fflush(stderr);
    if (c->summary_out)
        fflush(c->summary_out);
    fflush(pg.out);
    pid_t self = getpid();
    unsigned started = 0;
    for (; started < jobs; started++) {
        pid_t pid = fork();
        if (pid == 0) {
            close(fds[0]);
            dp_free(left); /* the parent's bookkeeping: a worker never uses it */
            dp_free(pids);
            worker_main(p, sh, fds[1], self);
        }
        if (pid < 0) {
            e = dp_err_set(err, DP_ERUN, "sweep: starting worker %u of %u: %s", started + 1, jobs,
                           strerror(errno));
            atomic_store(&sh->stop, 1);
            break;
        }
        pids[started] = pid;
    }
    stats->jobs = started;
    close(fds[1]);

    int stop_seen = 0, killed = 0;
    char buf[sizeof(wmsg) * 8];
    size_t have = 0;
    for (;;) {
        int sig = c->stop ? (int)*c->stop : 0;
        if (sig >= 1 && !stop_seen) {
            stop_seen = 1;
            atomic_store(&sh->stop, 1);
            if (pg.tty && pg.drawn)
                fputc('\n', pg.out);
            if (c->progress)
                fprintf(pg.out, "dpsim sweep: interrupted: finishing the runs in flight (interrupt again to "
                                "abandon them)\n");
        }
        if (sig >= 2 && !killed) {
            killed = 1;
            for (unsigned j = 0; j < started; j++)
                kill(pids[j], SIGKILL);
        }
        struct pollfd pf = {fds[0], POLLIN, 0};
        int pr = poll(&pf, 1, 100);
        if (pr < 0 && errno != EINTR) {
            e = dp_err_set(err, DP_ERUN, "sweep: waiting for the workers: %s", strerror(errno));
            atomic_store(&sh->stop, 1);
            break;
        }
        if (pr <= 0) {
            sweep_progress_draw(&pg, 0);
            continue;
        }
        ssize_t n = read(fds[0], buf + have, sizeof buf - have);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            break; /* every worker closed its end: all are done */
        have += (size_t)n;
        size_t off = 0;
        for (; have - off >= sizeof(wmsg); off += sizeof(wmsg)) {
            wmsg m;
            memcpy(&m, buf + off, sizeof m);
            if (m.status == WR_DBERR) {
                if (!e)
                    e = dp_err_set(err, DP_ERUN, "%s", m.text);
                atomic_store(&sh->stop, 1); /* a broken database fails the others too */
                continue;
            }
            if (m.task < 0 || (size_t)m.task >= p->n_pending)
                continue;
            pg.done++;
            if (m.status == WR_OK)
                stats->runs_ok++;
            else if (m.status == WR_FAILED) {
                stats->runs_failed++;
                pg.failed++;
            } else
                stats->runs_before++;
            size_t lp = p->tasks[p->pending[m.task]].lp;
            if (left[lp] && --left[lp] == 0)
                pg.points_done++;
            sweep_test_raise(0, (long)pg.done, 0);
        }
        memmove(buf, buf + off, have - off);
        have -= off;
        sweep_progress_draw(&pg, 0);
    }
    close(fds[0]);
    for (unsigned j = 0; j < started; j++) {
        int status = 0;
        while (waitpid(pids[j], &status, 0) < 0 && errno == EINTR)
            ;
        if (WIFSIGNALED(status) && !stop_seen && !e)
            e = dp_err_set(err, DP_ERUN,
                           "sweep: worker %u (pid %ld) died of signal %d; %zu runs stored so far", j + 1,
                           (long)pids[j], WTERMSIG(status), stats->runs_ok + stats->runs_failed);
        else if (WIFEXITED(status) && WEXITSTATUS(status) != 0 && !e)
            e = dp_err_set(err, DP_ERUN, "sweep: worker %u (pid %ld) failed (exit status %d)", j + 1,
                           (long)pids[j], WEXITSTATUS(status));
    }
    sweep_progress_draw(&pg, 1);
    stats->interrupted = stop_seen;
    if (sh->have_wlock)
        pthread_mutex_destroy(&sh->wlock);
    munmap(sh, sizeof *sh);
    dp_free(left);
    dp_free(pids);
    return e;
}
