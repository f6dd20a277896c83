/* bench_solver.c: timings of the allocation solvers (not a test).
 *
 *   exact on N = 10^6 devices (target < 1 s, < 500 MB peak RSS), without and
 *   with per-device model exchange; alm on N = 8 and N = 1000: time,
 *   iterations, status and the objective gap to exact.
 *
 * Prints the median of REPS repetitions; wall time from CLOCK_MONOTONIC
 * (a benchmark may read the clock; the library never does), peak RSS from
 * getrusage.  Usage: bench_solver [reps] [N_large]. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>

#include "slv.h"

static uint64_t rng = 2024;
static double urand(void)
{
    rng = rng * 6364136223846793005ULL + 1442695040888963407ULL;
    return (double)(rng >> 11) / 9007199254740992.0;
}

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static double peak_mb(void)
{
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    return (double)ru.ru_maxrss / 1024.0; /* Linux: KiB */
}

static int cmp_d(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static double median(double *v, int n)
{
    qsort(v, (size_t)n, sizeof *v, cmp_d);
    return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

typedef struct inst {
    slv_problem p;
    double *a, *t, *comm;
    int *b;
} inst;

/* A heterogeneous fleet: a quarter GPUs (batch 64, fast), the rest CPUs
 * (batch 4), links from 10 Mbit/s to 1 Gbit/s for 115 KB samples. */
static void inst_make(inst *in, size_t n, int64_t D, int with_comm)
{
    rng = 2024 + 7 * (uint64_t)n + (uint64_t)with_comm; /* same instance whatever ran before */
    in->a = malloc(n * sizeof(double));
    in->t = malloc(n * sizeof(double));
    in->comm = malloc(n * sizeof(double));
    in->b = malloc(n * sizeof(int));
    if (!in->a || !in->t || !in->comm || !in->b) {
        fprintf(stderr, "bench_solver: out of memory\n");
        exit(1);
    }
    for (size_t i = 0; i < n; i++) {
        double bw = 1e7 * pow(100.0, urand()) / 8; /* bytes/s */
        in->a[i] = 115e3 / bw;
        int gpu = urand() < 0.25;
        in->b[i] = gpu ? 64 : 4;
        in->t[i] = gpu ? 0.43 * (0.8 + 0.4 * urand()) : 1.5 + 3 * urand();
        in->comm[i] = 2 * 500e6 / bw;
    }
    memset(&in->p, 0, sizeof in->p);
    in->p.n = n;
    in->p.send_s = in->a;
    in->p.batch = in->b;
    in->p.batch_s = in->t;
    in->p.comm_s = with_comm ? in->comm : NULL;
    in->p.allow_exclude = with_comm;
    in->p.epochs = 50;
    in->p.samples = D;
}

static void inst_free(inst *in)
{
    free(in->a);
    free(in->t);
    free(in->comm);
    free(in->b);
}

static void bench_exact(size_t n, int64_t D, int with_comm, int reps)
{
    inst in;
    inst_make(&in, n, D, with_comm);
    double *ts = malloc((size_t)reps * sizeof(double)), *cpu = malloc((size_t)reps * sizeof(double));
    slv_result *r = NULL;
    for (int k = 0; k < reps; k++) {
        slv_result_free(r);
        r = NULL;
        dp_err err = {0};
        double t0 = now_s();
        if (slv_solve_problem("exact", &in.p, NULL, &r, &err) != 0) {
            fprintf(stderr, "exact failed: %s\n", err.msg);
            exit(1);
        }
        ts[k] = now_s() - t0;
        cpu[k] = r->solve_seconds;
    }
    printf("exact  N=%-8zu D=%-10lld comm=%d  median %.3f s (solver CPU %.3f s)  peak RSS %.0f MB  levels "
           "%ld  breakpoints %ld  "
           "status %s  gap to relaxed %.3g%%  to integer bound %.3g%%\n",
           n, (long long)D, with_comm, median(ts, reps), median(cpu, reps), peak_mb(), r->iterations,
           r->outer_iterations, slv_status_name(r->status),
           100 * (r->objective_s - r->lower_bound_s) / r->lower_bound_s,
           100 * (r->objective_s - r->int_lower_bound_s) / r->int_lower_bound_s);
    slv_result_free(r);
    free(ts);
    free(cpu);
    inst_free(&in);
}

static void bench_alm(size_t n, int64_t D, int reps)
{
    inst in;
    inst_make(&in, n, D, 0);
    slv_result *e = NULL, *r = NULL;
    dp_err err = {0};
    if (slv_solve_problem("exact", &in.p, NULL, &e, &err) != 0) {
        fprintf(stderr, "exact failed: %s\n", err.msg);
        exit(1);
    }
    double *ts = malloc((size_t)reps * sizeof(double));
    for (int k = 0; k < reps; k++) {
        slv_result_free(r);
        r = NULL;
        double t0 = now_s();
        if (slv_solve_problem("alm", &in.p, NULL, &r, &err) != 0) {
            fprintf(stderr, "alm failed: %s\n", err.msg);
            exit(1);
        }
        ts[k] = now_s() - t0;
    }
    printf("alm    N=%-8zu D=%-10lld median %.4f s  inner %ld  outer %ld  status %s  relaxed gap %.3g%%  "
           "objective %.6g vs exact %.6g (gap %.3g%%)\n",
           n, (long long)D, median(ts, reps), r->iterations, r->outer_iterations, slv_status_name(r->status),
           100 * (r->relaxed_s - r->lower_bound_s) / r->lower_bound_s, r->objective_s, e->objective_s,
           100 * (r->objective_s - e->objective_s) / e->objective_s);
    slv_result_free(r);
    slv_result_free(e);
    free(ts);
    inst_free(&in);
}

int main(int argc, char **argv)
{
    int reps = argc > 1 ? atoi(argv[1]) : 5;
    size_t big = argc > 2 ? (size_t)atol(argv[2]) : 1000000;
    if (reps < 1)
        reps = 1;
    bench_alm(8, 100000, reps);
    if (!getenv("BENCH_NO_ALM1000"))
        bench_alm(1000, 1000000, reps);
    bench_exact(8, 100000, 0, reps);
    bench_exact(8, 100000, 1, reps);
    bench_exact(1000, 1000000, 0, reps);
    bench_exact(1000, 1000000, 1, reps);
    bench_exact(100000, 10000000, 0, reps);
    bench_exact(big, 100000000, 0, reps);
    bench_exact(big, 100000000, 1, reps);
    return 0;
}
