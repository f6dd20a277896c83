/* lmodel.h: the learner's models (docs/MODEL.md "Learning"): softmax
 * regression and a one-hidden-layer MLP (ReLU), cross-entropy loss,
 * float64, batch products through GSL's CBLAS.
 *
 * Weights are one flat array of lm->n_params doubles:
 *   softmax: W (classes x dim), b (classes)
 *   mlp:     W1 (hidden x dim), b1 (hidden), W2 (classes x hidden), b2 (classes)
 * The model object holds only shapes and scratch space; several weight
 * arrays (every device's local model) share one model object.  Not
 * thread-safe (the scratch): one per run.
 */
#ifndef DP_LMODEL_H
#define DP_LMODEL_H

#include "dp_common.h"

#include <stddef.h>
#include <stdint.h>

typedef enum { LM_SOFTMAX = 0, LM_MLP = 1 } lm_kind;

typedef struct lmodel {
    lm_kind kind;
    size_t dim, classes, hidden, n_params;
    size_t cap;           /* rows the scratch holds */
    double *xb, *z, *h;   /* cap x dim, cap x classes, cap x hidden */
    double *wt;           /* softmax: the packed weights (lm_pack), dim x classes rounded up to even */
    const double *packed; /* the weights wt holds (NULL: none) */
} lmodel;

int lm_init(lmodel *m, lm_kind kind, size_t dim, size_t classes, size_t hidden, dp_err *err);
void lm_free(lmodel *m);
/* The initial weights: zero for softmax; He-normal W1 and W2 for the MLP
 * (zero biases), from a Mersenne Twister seeded with `seed`. */
void lm_init_weights(const lmodel *m, double *w, uint64_t seed);
/* g = the SUM over the n rows idx[0..n) of X (labels y) of the per-sample
 * gradients of the cross-entropy loss at weights w (g has n_params
 * entries; overwritten).  Returns the summed loss, or NAN when out of
 * memory.  Callers divide by n themselves (a mean gradient). */
double lm_grad_sum(lmodel *m, const double *w, const double *X, const int *y, const size_t *idx, size_t n,
                   double *g);
/* acc[j] += g[j] / c for the g lm_grad_sum gives on the n rows: the same
 * bits as calling it then adding (c = 1: the sum itself), without the
 * gradient's own array for one row of softmax regression.  tmp: n_params
 * of scratch.  0 or DP_ENOMEM. */
int lm_grad_add(lmodel *m, const double *w, const double *X, const int *y, const size_t *idx, size_t n,
                double c, double *acc, double *tmp);
/* Softmax regression: the logits on weights w that follow, until
 * lm_unpack, read w transposed (two classes a vector), which the caller
 * must not change meanwhile: many rows at one model (an evaluation, a sync
 * of every device's batch).  The same bits.  0 or DP_ENOMEM (nothing
 * packed: the plain path). */
int lm_pack(lmodel *m, const double *w);
void lm_unpack(lmodel *m);
/* Accuracy and mean loss of weights w over rows [0, n) of X. */
int lm_eval(lmodel *m, const double *w, const double *X, const int *y, size_t n, double *acc, double *loss);

#endif
