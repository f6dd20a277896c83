/* efficiency_impl.h: the structures behind efficiency.h, shared by
 * efficiency.c (the model) and efficiency_read.c (reading it).  Not for
 * use outside sim/learn. */
#ifndef DP_EFFICIENCY_IMPL_H
#define DP_EFFICIENCY_IMPL_H

#include "learn/efficiency.h"

typedef struct eff_rec {
    double t;
    int epoch;
    eff_kind kind;
    double m;   /* SYNC: M; ASYNC: m; LOCAL: M_step */
    double x;   /* ASYNC: staleness; LOCAL: H */
    double rho; /* LOCAL: participation */
} eff_rec;

struct eff_log {
    eff_rec *r;
    size_t n, cap;
};

struct eff_params {
    double M0;
    eff_bn_kind bn_kind;
    double bn;        /* EFF_BN_CONST */
    double *bn_epoch; /* EFF_BN_EPOCH */
    size_t n_bn_epoch;
    double *tr_p, *tr_b; /* EFF_BN_TRACE: the rows' progress and B_noise */
    size_t n_tr;
    double a, kappa;
    int use_rho;
    double *cu_p, *cu_m; /* the reference curve */
    size_t n_cu;
};

#endif
