/* lsq.h: one run of GSL's trust-region least squares (Levenberg-Marquardt,
 * forward-difference Jacobian), shared by the scenario fit (calib.c) and
 * the accuracy fit (effit.c).  Internal to sim/calib. */
#ifndef DP_CALIB_LSQ_H
#define DP_CALIB_LSQ_H

#include <gsl/gsl_vector.h>
#include <stddef.h>

typedef int (*lsq_resid_fn)(const gsl_vector *u, void *ctx, gsl_vector *f);

/* From u[0..np), at most max_iter iterations; the end point back in u.
 * There are n_resid residuals, padded with zeros up to np (multifit wants
 * at least as many as parameters; the padding moves neither cost nor
 * optimum: f must set entries beyond its own to 0).  Returns 0, DP_ENOMEM,
 * or DP_ERUN when f failed (GSL_EBADFUNC).  GSL's error handler is off
 * during the run. */
int lsq_run(lsq_resid_fn f, void *ctx, size_t n_resid, size_t np, double *u, size_t max_iter);

#endif
