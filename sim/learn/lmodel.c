/* lmodel.c: softmax regression and a one-hidden-layer MLP (lmodel.h). */
#include "lmodel.h"

#include <gsl/gsl_cblas.h>
#include <gsl/gsl_randist.h>
#include <gsl/gsl_rng.h>
#include <math.h>
#include <string.h>

/* The element-wise loops below (a gradient row, the transposed logits)
 * vectorised as at -O3: each element's arithmetic is the same, so the bits
 * are too (no reassociation, no fused multiply-add without -march). */
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC optimize("tree-vectorize", "vect-cost-model=dynamic")
#endif

int lm_init(lmodel *m, lm_kind kind, size_t dim, size_t classes, size_t hidden, dp_err *err)
{
    memset(m, 0, sizeof *m);
    m->kind = kind;
    m->dim = dim;
    m->classes = classes;
    m->hidden = kind == LM_MLP ? hidden : 0;
    m->n_params =
        kind == LM_MLP ? hidden * dim + hidden + classes * hidden + classes : classes * dim + classes;
    if (kind == LM_MLP && hidden == 0)
        return dp_err_set(err, DP_EINPUT, "an MLP needs a hidden width >= 1");
    return 0;
}

void lm_free(lmodel *m)
{
    dp_free(m->xb);
    dp_free(m->z);
    dp_free(m->h);
    dp_free(m->wt);
    m->xb = m->z = m->h = m->wt = NULL;
    m->packed = NULL;
    m->cap = 0;
}

static int reserve(lmodel *m, size_t n)
{
    if (n <= m->cap)
        return 0;
    size_t cap = n < 64 ? 64 : n;
    double *xb = dp_realloc(m->xb, cap * m->dim * sizeof *xb);
    if (xb)
        m->xb = xb;
    double *z = dp_realloc(m->z, cap * m->classes * sizeof *z);
    if (z)
        m->z = z;
    double *h = m->hidden ? dp_realloc(m->h, cap * m->hidden * 2 * sizeof *h) : m->h;
    if (h)
        m->h = h;
    if (!xb || !z || (m->hidden && !h))
        return -1;
    m->cap = cap;
    return 0;
}

void lm_init_weights(const lmodel *m, double *w, uint64_t seed)
{
    memset(w, 0, m->n_params * sizeof *w);
    if (m->kind != LM_MLP)
        return;
    gsl_rng *r = gsl_rng_alloc(gsl_rng_mt19937);
    if (!r)
        return;
    gsl_rng_set(r, (unsigned long)(seed ^ (seed >> 32)));
    double *w1 = w, *w2 = w + m->hidden * m->dim + m->hidden;
    double s1 = sqrt(2.0 / (double)m->dim), s2 = sqrt(2.0 / (double)m->hidden);
    for (size_t i = 0; i < m->hidden * m->dim; i++)
        w1[i] = gsl_ran_gaussian(r, s1);
    for (size_t i = 0; i < m->classes * m->hidden; i++)
        w2[i] = gsl_ran_gaussian(r, s2);
    gsl_rng_free(r);
}

/* Row-wise softmax of z (n x K) in place; returns the summed
 * cross-entropy of labels y (NULL: none) and the count of rows whose
 * largest logit is the label (first index on ties). */
static double softmax_rows(double *z, size_t n, size_t K, const int *y, size_t *correct)
{
    double loss = 0;
    for (size_t i = 0; i < n; i++) {
        double *r = z + i * K, mx = r[0];
        size_t am = 0;
        for (size_t k = 1; k < K; k++)
            if (r[k] > mx)
                mx = r[k], am = k;
        double sum = 0;
        for (size_t k = 0; k < K; k++)
            sum += r[k] = exp(r[k] - mx);
        for (size_t k = 0; k < K; k++)
            r[k] /= sum;
        if (y) {
            double p = r[y[i]];
            loss -= log(p > 1e-300 ? p : 1e-300);
            if (correct && (size_t)y[i] == am)
                (*correct)++;
        }
    }
    return loss;
}

/* Softmax regression's logits z[i] = b + W x_i for the n rows X[idx[i]]
 * (idx NULL: rows 0..n), summed in GSL's reference dgemm's order (each
 * logit's dot product from 0.0 over the features in order, then added to
 * the bias), so the bits are dgemm's.  Several classes at once: their sums
 * are independent chains the processor overlaps, where dgemm waits on one
 * addition after another; and no row is copied. */
typedef double lm_v2 __attribute__((vector_size(16)));
#define LM_VB 8 /* vectors (16 classes) summed at once */

int lm_pack(lmodel *m, const double *w)
{
    size_t d = m->dim, K = m->classes, KV = (K + 1) / 2;
    m->packed = NULL;
    if (m->kind != LM_SOFTMAX)
        return 0;
    if (!m->wt && !(m->wt = dp_malloc(d * KV * sizeof(lm_v2))))
        return DP_ENOMEM;
    for (size_t j = 0; j < d; j++)
        for (size_t k = 0; k < 2 * KV; k++)
            m->wt[j * 2 * KV + k] = k < K ? w[k * d + j] : 0.0;
    m->packed = w;
    return 0;
}

void lm_unpack(lmodel *m)
{
    m->packed = NULL;
}

/* Sums t[v] (v < vb, a constant where inlined, so t stays in registers)
 * of x times the vectors v0.. of every packed row, from 0.0, in order. */
static inline __attribute__((always_inline)) void packed_dots(const double *x, const double *wt, size_t d,
                                                              size_t KV, size_t v0, size_t vb, lm_v2 *out)
{
    lm_v2 t[LM_VB];
#pragma GCC unroll 8
    for (size_t v = 0; v < vb; v++)
        t[v] = (lm_v2){0.0, 0.0};
    for (size_t j = 0; j < d; j++) {
        lm_v2 xj = {x[j], x[j]};
        const double *r = wt + (j * KV + v0) * 2;
#pragma GCC unroll 8
        for (size_t v = 0; v < vb; v++) {
            lm_v2 wv;
            memcpy(&wv, r + 2 * v, sizeof wv);
            t[v] += xj * wv;
        }
    }
#pragma GCC unroll 8
    for (size_t v = 0; v < vb; v++)
        out[v] = t[v];
}

/* softmax_logits on packed weights: classes two a vector, up to LM_VB
 * vectors' sums at once, each from 0.0 over the features in order. */
static void packed_logits(const lmodel *m, const double *b, const double *X, const size_t *idx, size_t n,
                          double *z)
{
    size_t d = m->dim, K = m->classes, KV = (K + 1) / 2;
    const double *wt = m->wt;
    for (size_t i = 0; i < n; i++) {
        const double *x = X + (idx ? idx[i] : i) * d;
        double *zi = z + i * K;
        for (size_t v0 = 0; v0 < KV; v0 += LM_VB) {
            size_t vb = KV - v0 < LM_VB ? KV - v0 : LM_VB;
            lm_v2 t[LM_VB];
            switch (vb) {
            case 1:
                packed_dots(x, wt, d, KV, v0, 1, t);
                break;
            case 2:
                packed_dots(x, wt, d, KV, v0, 2, t);
                break;
            case 3:
                packed_dots(x, wt, d, KV, v0, 3, t);
                break;
            case 4:
                packed_dots(x, wt, d, KV, v0, 4, t);
                break;
            case 5:
                packed_dots(x, wt, d, KV, v0, 5, t);
                break;
            case 6:
                packed_dots(x, wt, d, KV, v0, 6, t);
                break;
            case 7:
                packed_dots(x, wt, d, KV, v0, 7, t);
                break;
            default:
                packed_dots(x, wt, d, KV, v0, 8, t);
                break;
            }
            for (size_t v = 0; v < vb; v++)
                for (size_t l = 0; l < 2 && 2 * (v0 + v) + l < K; l++) {
                    size_t k = 2 * (v0 + v) + l;
                    zi[k] = b[k] + t[v][l];
                }
        }
    }
}

static void softmax_logits(const lmodel *m, const double *w, const double *X, const size_t *idx, size_t n,
                           double *z)
{
    size_t d = m->dim, K = m->classes;
    const double *W = w, *b = w + K * d;
    if (m->packed == w) {
        packed_logits(m, b, X, idx, n, z);
        return;
    }
    for (size_t i = 0; i < n; i++) {
        const double *x = X + (idx ? idx[i] : i) * d;
        double *zi = z + i * K;
        size_t k = 0;
        for (; k + 4 <= K; k += 4) {
            const double *w0 = W + k * d, *w1 = w0 + d, *w2 = w1 + d, *w3 = w2 + d;
            double t0 = 0.0, t1 = 0.0, t2 = 0.0, t3 = 0.0;
            for (size_t j = 0; j < d; j++) {
                double xj = x[j];
                t0 += xj * w0[j];
                t1 += xj * w1[j];
                t2 += xj * w2[j];
                t3 += xj * w3[j];
            }
            zi[k] = b[k] + t0;
            zi[k + 1] = b[k + 1] + t1;
            zi[k + 2] = b[k + 2] + t2;
            zi[k + 3] = b[k + 3] + t3;
        }
        for (; k < K; k++) {
            const double *wk = W + k * d;
            double t = 0.0;
            for (size_t j = 0; j < d; j++)
                t += x[j] * wk[j];
            zi[k] = b[k] + t;
        }
    }
}

/* Forward pass over the n rows in m->xb; probabilities in m->z, hidden
 * activations (after ReLU) in m->h. */
static void forward(lmodel *m, const double *w, size_t n)
{
    size_t d = m->dim, K = m->classes, H = m->hidden;
    if (m->kind == LM_SOFTMAX) {
        softmax_logits(m, w, m->xb, NULL, n, m->z);
        return;
    }
    const double *W1 = w, *b1 = w + H * d, *W2 = b1 + H, *b2 = W2 + K * H;
    for (size_t i = 0; i < n; i++)
        memcpy(m->h + i * H, b1, H * sizeof *b1);
    cblas_dgemm(CblasRowMajor, CblasNoTrans, CblasTrans, (int)n, (int)H, (int)d, 1.0, m->xb, (int)d, W1,
                (int)d, 1.0, m->h, (int)H);
    for (size_t i = 0; i < n * H; i++)
        if (m->h[i] < 0)
            m->h[i] = 0;
    for (size_t i = 0; i < n; i++)
        memcpy(m->z + i * K, b2, K * sizeof *b2);
    cblas_dgemm(CblasRowMajor, CblasNoTrans, CblasTrans, (int)n, (int)K, (int)H, 1.0, m->h, (int)H, W2,
                (int)H, 1.0, m->z, (int)K);
}

/* lm_grad_sum for softmax regression (g zeroed, scratch reserved): the
 * rows read in place, and gW = sum over the rows in order of (p - onehot)
 * x^T, each entry from 0.0 as GSL's dgemm sums it (its skipped zero
 * factors add nothing: an entry that starts at +0 never becomes -0). */
static double softmax_grad_sum(lmodel *m, const double *w, const double *X, const int *y, const size_t *idx,
                               size_t n, double *g)
{
    size_t d = m->dim, K = m->classes;
    softmax_logits(m, w, X, idx, n, m->z);
    double loss = 0;
    double *gW = g, *gb = g + K * d;
    for (size_t i = 0; i < n; i++) {
        int yi = y[idx[i]];
        double *r = m->z + i * K;
        loss += softmax_rows(r, 1, K, &yi, NULL);
        r[yi] -= 1.0; /* dL/dz = p - onehot */
        const double *x = X + idx[i] * d;
        for (size_t k = 0; k < K; k++) {
            double rk = r[k];
            if (rk == 0.0)
                continue;
            double *gk = gW + k * d;
            for (size_t j = 0; j < d; j++)
                gk[j] += rk * x[j];
        }
    }
    for (size_t i = 0; i < n; i++)
        for (size_t k = 0; k < K; k++)
            gb[k] += m->z[i * K + k];
    return loss;
}

double lm_grad_sum(lmodel *m, const double *w, const double *X, const int *y, const size_t *idx, size_t n,
                   double *g)
{
    size_t d = m->dim, K = m->classes, H = m->hidden;
    memset(g, 0, m->n_params * sizeof *g);
    if (n == 0)
        return 0;
    if (reserve(m, n))
        return NAN;
    if (m->kind == LM_SOFTMAX)
        return softmax_grad_sum(m, w, X, y, idx, n, g);
    for (size_t i = 0; i < n; i++)
        memcpy(m->xb + i * d, X + idx[i] * d, d * sizeof *X);
    forward(m, w, n);
    double loss = 0;
    for (size_t i = 0; i < n; i++) {
        int yi = y[idx[i]];
        loss += softmax_rows(m->z + i * K, 1, K, &yi, NULL);
        m->z[i * K + (size_t)yi] -= 1.0; /* dL/dz = p - onehot */
    }
    if (m->kind == LM_SOFTMAX) {
        double *gW = g, *gb = g + K * d;
        cblas_dgemm(CblasRowMajor, CblasTrans, CblasNoTrans, (int)K, (int)d, (int)n, 1.0, m->z, (int)K, m->xb,
                    (int)d, 0.0, gW, (int)d);
        for (size_t i = 0; i < n; i++)
            for (size_t k = 0; k < K; k++)
                gb[k] += m->z[i * K + k];
        return loss;
    }
    const double *W2 = w + H * d + H;
    double *gW1 = g, *gb1 = g + H * d, *gW2 = gb1 + H, *gb2 = gW2 + K * H;
    double *dh = m->h + n * H; /* second half of the hidden scratch */
    cblas_dgemm(CblasRowMajor, CblasTrans, CblasNoTrans, (int)K, (int)H, (int)n, 1.0, m->z, (int)K, m->h,
                (int)H, 0.0, gW2, (int)H);
    for (size_t i = 0; i < n; i++)
        for (size_t k = 0; k < K; k++)
            gb2[k] += m->z[i * K + k];
    cblas_dgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, (int)n, (int)H, (int)K, 1.0, m->z, (int)K, W2,
                (int)H, 0.0, dh, (int)H);
    for (size_t i = 0; i < n * H; i++)
        if (m->h[i] <= 0)
            dh[i] = 0;
    cblas_dgemm(CblasRowMajor, CblasTrans, CblasNoTrans, (int)H, (int)d, (int)n, 1.0, dh, (int)H, m->xb,
                (int)d, 0.0, gW1, (int)d);
    for (size_t i = 0; i < n; i++)
        for (size_t j = 0; j < H; j++)
            gb1[j] += dh[i * H + j];
    return loss;
}

int lm_grad_add(lmodel *m, const double *w, const double *X, const int *y, const size_t *idx, size_t n,
                double c, double *acc, double *tmp)
{
    size_t d = m->dim, K = m->classes;
    if (m->kind != LM_SOFTMAX) {
        if (isnan(lm_grad_sum(m, w, X, y, idx, n, tmp)))
            return DP_ENOMEM;
        for (size_t j = 0; j < m->n_params; j++)
            acc[j] += tmp[j] / c;
        return 0;
    }
    /* Softmax regression: entry (k, j) of the gradient is, as GSL's dgemm
     * sums it, 0.0 plus r_ik x_ij over the rows in order (the terms it
     * skips, r_ik = 0, add a zero that changes nothing: the sum starts at
     * +0 and never becomes -0), so it is summed here one class at a time
     * in tmp and added to acc at once.  Dividing by a power of two is
     * multiplying by its exact reciprocal. */
    if (n == 0)
        return 0;
    if (reserve(m, n))
        return DP_ENOMEM;
    softmax_logits(m, w, X, idx, n, m->z);
    for (size_t i = 0; i < n; i++) {
        int yi = y[idx[i]];
        softmax_rows(m->z + i * K, 1, K, &yi, NULL);
        m->z[i * K + (size_t)yi] -= 1.0; /* dL/dz = p - onehot */
    }
    int e, pow2 = c > 0 && frexp(c, &e) == 0.5;
    double inv = 1.0 / c;
    for (size_t k = 0; k < K; k++) {
        double *ak = acc + k * d;
        if (n == 1) { /* 0.0 + r x is r x (but for a zero's sign, which acc's sums never show) */
            double rk = m->z[k];
            const double *x = X + idx[0] * d;
            if (pow2)
                for (size_t j = 0; j < d; j++)
                    ak[j] += (rk * x[j]) * inv;
            else
                for (size_t j = 0; j < d; j++)
                    ak[j] += (rk * x[j]) / c;
            continue;
        }
        memset(tmp, 0, d * sizeof *tmp);
        for (size_t i = 0; i < n; i++) {
            double rik = m->z[i * K + k];
            const double *x = X + idx[i] * d;
            for (size_t j = 0; j < d; j++)
                tmp[j] += rik * x[j];
        }
        if (pow2)
            for (size_t j = 0; j < d; j++)
                ak[j] += tmp[j] * inv;
        else
            for (size_t j = 0; j < d; j++)
                ak[j] += tmp[j] / c;
    }
    double *ab = acc + K * d;
    for (size_t k = 0; k < K; k++) {
        double t = 0.0;
        for (size_t i = 0; i < n; i++)
            t += m->z[i * K + k];
        ab[k] += t / c;
    }
    return 0;
}

int lm_eval(lmodel *m, const double *w, const double *X, const int *y, size_t n, double *acc, double *loss)
{
    const size_t chunk = 256;
    if (reserve(m, chunk))
        return DP_ENOMEM;
    size_t correct = 0;
    double sum = 0;
    for (size_t i0 = 0; i0 < n; i0 += chunk) {
        size_t c = n - i0 < chunk ? n - i0 : chunk;
        if (m->kind == LM_SOFTMAX) { /* the rows read in place */
            softmax_logits(m, w, X + i0 * m->dim, NULL, c, m->z);
        } else {
            memcpy(m->xb, X + i0 * m->dim, c * m->dim * sizeof *X);
            forward(m, w, c);
        }
        sum += softmax_rows(m->z, c, m->classes, y + i0, &correct);
    }
    *acc = n ? (double)correct / (double)n : 0;
    *loss = n ? sum / (double)n : 0;
    return 0;
}
