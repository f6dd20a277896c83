/* lsq.c: one trust-region least-squares run (lsq.h). */
#include "calib/lsq.h"
#include "dp_common.h"

#include <gsl/gsl_errno.h>
#include <gsl/gsl_multifit_nlinear.h>

int lsq_run(lsq_resid_fn f, void *ctx, size_t n_resid, size_t np, double *u0, size_t max_iter)
{
    size_t nr = n_resid > np ? n_resid : np;
    gsl_multifit_nlinear_fdf fdf = {0};
    fdf.f = f;
    fdf.df = NULL; /* finite differences */
    fdf.n = nr;
    fdf.p = np;
    fdf.params = ctx;
    gsl_multifit_nlinear_parameters fp = gsl_multifit_nlinear_default_parameters();
    gsl_multifit_nlinear_workspace *w = gsl_multifit_nlinear_alloc(gsl_multifit_nlinear_trust, &fp, nr, np);
    gsl_vector *u = gsl_vector_alloc(np);
    if (!w || !u) {
        if (w)
            gsl_multifit_nlinear_free(w);
        if (u)
            gsl_vector_free(u);
        return DP_ENOMEM;
    }
    for (size_t i = 0; i < np; i++)
        gsl_vector_set(u, i, u0[i]);
    gsl_error_handler_t *old = gsl_set_error_handler_off();
    int info = 0, status = gsl_multifit_nlinear_init(u, &fdf, w);
    if (status == GSL_SUCCESS)
        status = gsl_multifit_nlinear_driver(max_iter, 1e-12, 1e-14, 1e-15, NULL, NULL, &info, w);
    gsl_set_error_handler(old);
    const gsl_vector *x = gsl_multifit_nlinear_position(w);
    for (size_t i = 0; i < np; i++)
        u0[i] = gsl_vector_get(x, i);
    gsl_multifit_nlinear_free(w);
    gsl_vector_free(u);
    /* Hitting the iteration limit or a tolerance too small to meet still
     * leaves a usable point; only a model failure is reported. */
    return status == GSL_EBADFUNC ? DP_ERUN : 0;
}
