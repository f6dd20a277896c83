/* adacoopt.h: AdaCoOpt's per-round decision (Liu et al., IWQoS 2023;
 * after control_algorithm/adaptive_tau.py of the authors' code), a pure
 * function so that tests can check it by hand (tests/test_adacoopt.c).
 * The policy is sim/policy/adacoopt.c; docs/MODEL.md section 4. */
#ifndef DP_ADACOOPT_H
#define DP_ADACOOPT_H

#include <stddef.h>

typedef struct aco_in {
    size_t n;
    const double *D;     /* local data sizes D_i */
    double eta;          /* the step size */
    int tau_max;         /* tau is chosen in 1..tau_max */
    double budget;       /* tau x s: the per-client samples of a round */
    double first_loss;   /* F(w0): the global loss at the first round */
    double beta, rho, c; /* smoothness, Lipschitz and convexity estimates */
    double delta;        /* gradient divergence estimate */
    int has_est;         /* 0: no estimate yet (keep tau_prev, s = floor(budget / tau_prev)) */
    int tau_prev;
    const double *speed; /* samples per second per client (NULL or <= 0: no cap) */
    double round_time;   /* seconds a round's tau steps may take (<= 0: no caps) */
} aco_in;

/* The convergence-gap bound of tau (the code's gap1 + gap2, K = 1):
 * q = 1 - eta c, s = floor(budget / tau),
 * h = max(0, (delta / beta)((eta beta + 1)^tau - 1) - delta eta tau),
 * gap = q^tau F0 + (1 - q^tau)/(1 - q^tau) x ((1 - q^tau) beta eta^2
 *       sum D_i^2 / ((1 - q^tau)(1 - q) 2 D^2 s) + rho h). */
double aco_gap(const aco_in *in, int tau);
/* tau (the smallest gap; ties: the smaller tau; none finite: 1), s, and
 * the batches b[0..n): s x n split in proportion to D_i, capped at
 * floor(round_time / tau x speed_i) (at least 1) by water-filling, the
 * rest one sample at a time to the uncapped client of largest
 * D_i^2 / (b_i (b_i + 1)) (the largest drop of sum D_i^2 / b_i). */
void aco_decide(const aco_in *in, int *tau, int *s, int *b);

#endif
