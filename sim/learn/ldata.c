/* ldata.c: loading the learner's data sets (ldata.h). */
#include "ldata.h"

#include <errno.h>
#include <pthread.h>
#include <math.h>
#include <stdio.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <zlib.h>

/* strtod, with the common case first: a plain integer of up to 9 digits
 * followed by a separator (the built-in digits are all such) converts
 * exactly without it.  Parsing the 1,797 x 65 digits twice with strtod was
 * a fifth of a small learning run. */
static double num(const char *q, char **e)
{
    unsigned v = 0;
    int k = 0;
    while (k < 9 && q[k] >= '0' && q[k] <= '9')
        v = v * 10 + (unsigned)(q[k++] - '0');
    char c = q[k];
    if (k > 0 && (c == ',' || c == ' ' || c == '\t' || c == '\r' || c == '\n' || c == '\0')) {
        *e = (char *)(uintptr_t)(q + k);
        return (double)v;
    }
    return strtod(q, e);
}

/* The digits set, compiled in from scenarios/data/digits.csv.gz. */
extern const char dpsim_data_digits[];
extern const size_t dpsim_data_digits_len;

/* Decompressed inputs larger than this are refused (Fashion-MNIST's
 * training images are 47 MB). */
#define LDATA_MAX_BYTES (1L << 30)

/* The whole (possibly gzipped) file, decompressed and NUL-terminated. */
static char *read_gz(const char *path, size_t *len, dp_err *err)
{
    struct stat st;
    if (stat(path, &st) != 0) {
        dp_err_set(err, DP_EINPUT, "learning data file %s: %s", path, strerror(errno));
        return NULL;
    }
    if (!S_ISREG(st.st_mode)) {
        dp_err_set(err, DP_EINPUT, "learning data file %s: not a regular file", path);
        return NULL;
    }
    gzFile f = gzopen(path, "rb");
    if (!f) {
        dp_err_set(err, DP_EINPUT, "learning data file %s: cannot open", path);
        return NULL;
    }
    size_t cap = 1 << 16, n = 0;
    char *buf = dp_malloc(cap + 1);
    for (;;) {
        if (!buf) {
            gzclose(f);
            dp_err_set(err, DP_ENOMEM, "out of memory reading %s", path);
            return NULL;
        }
        if (n == cap) {
            if (cap >= (size_t)LDATA_MAX_BYTES) {
                dp_free(buf);
                gzclose(f);
                dp_err_set(err, DP_EINPUT, "learning data file %s: over %ld bytes", path, LDATA_MAX_BYTES);
                return NULL;
            }
            cap *= 2;
            char *nb = dp_realloc(buf, cap + 1);
            if (!nb)
                dp_free(buf);
            buf = nb;
            continue;
        }
        int got = gzread(f, buf + n, (unsigned)(cap - n > (1u << 30) ? (1u << 30) : cap - n));
        if (got < 0) {
            int e;
            const char *m = gzerror(f, &e);
            dp_err_set(err, DP_EINPUT, "learning data file %s: %s", path, m ? m : "read error");
            dp_free(buf);
            gzclose(f);
            return NULL;
        }
        if (got == 0)
            break;
        n += (size_t)got;
    }
    gzclose(f);
    buf[n] = 0;
    *len = n;
    return buf;
}

static char *inflate_mem(const char *src, size_t srclen, size_t *len, dp_err *err)
{
    z_stream z;
    memset(&z, 0, sizeof z);
    if (inflateInit2(&z, 16 + MAX_WBITS) != Z_OK) {
        dp_err_set(err, DP_ENOMEM, "out of memory (zlib)");
        return NULL;
    }
    size_t cap = 1 << 19, n = 0;
    char *buf = dp_malloc(cap + 1);
    z.next_in = (Bytef *)(uintptr_t)src;
    z.avail_in = (uInt)srclen;
    int rc = Z_OK;
    while (buf && rc != Z_STREAM_END) {
        if (n == cap) {
            cap *= 2;
            char *nb = dp_realloc(buf, cap + 1);
            if (!nb)
                dp_free(buf);
            buf = nb;
            if (!buf)
                break;
        }
        z.next_out = (Bytef *)buf + n;
        z.avail_out = (uInt)(cap - n);
        rc = inflate(&z, Z_NO_FLUSH);
        n = cap - z.avail_out;
        if (rc != Z_OK && rc != Z_STREAM_END) {
            dp_free(buf);
            buf = NULL;
            inflateEnd(&z);
            dp_err_set(err, DP_ERUN, "the built-in data set is corrupt (zlib %d)", rc);
            return NULL;
        }
    }
    inflateEnd(&z);
    if (!buf) {
        dp_err_set(err, DP_ENOMEM, "out of memory unpacking the built-in data set");
        return NULL;
    }
    buf[n] = 0;
    *len = n;
    return buf;
}

static ldata *ldata_alloc(size_t n_train, size_t n_test, size_t dim, dp_err *err)
{
    ldata *d = dp_calloc(1, sizeof *d);
    if (d) {
        d->dim = dim;
        d->n_train = n_train;
        d->n_test = n_test;
        d->x_train = dp_calloc(n_train * dim, sizeof(double));
        d->y_train = dp_calloc(n_train, sizeof(int));
        d->x_test = dp_calloc(n_test ? n_test * dim : 1, sizeof(double));
        d->y_test = dp_calloc(n_test ? n_test : 1, sizeof(int));
    }
    if (!d || !d->x_train || !d->y_train || !d->x_test || !d->y_test) {
        ldata_free(d);
        dp_err_set(err, DP_ENOMEM, "out of memory for the learning data set");
        return NULL;
    }
    return d;
}

void ldata_free(ldata *d)
{
    if (!d)
        return;
    dp_free(d->x_train);
    dp_free(d->y_train);
    dp_free(d->x_test);
    dp_free(d->y_test);
    dp_free(d);
}

/* Rows of numbers, the label last.  A fixed permutation (an LCG-driven
 * Fisher-Yates, independent of the run's seed) picks ceil(frac * n) rows
 * for the test split, so every run holds out the same rows. */
static ldata *parse_csv(const char *what, const char *text, size_t len, double frac, dp_err *err)
{
    size_t rows = 0, cols = 0;
    /* First pass: shape, every row the same width, numbers only. */
    const char *p = text, *end = text + len;
    size_t line = 0;
    while (p < end) {
        line++;
        const char *eol = memchr(p, '\n', (size_t)(end - p));
        if (!eol)
            eol = end;
        size_t c = 0;
        const char *q = p;
        int blank = 1;
        for (const char *r = p; r < eol; r++)
            if (*r != ' ' && *r != '\r' && *r != '\t')
                blank = 0;
        if (!blank) {
            while (q < eol) {
                char *e;
                errno = 0;
                double v = num(q, &e);
                if (e == q || !isfinite(v)) {
                    dp_err_set(err, DP_EINPUT, "%s:%zu: expected a number in column %zu", what, line, c + 1);
                    return NULL;
                }
                c++;
                q = e;
                while (q < eol && (*q == ' ' || *q == '\r' || *q == '\t'))
                    q++;
                if (q < eol && *q == ',')
                    q++;
                else if (q < eol) {
                    dp_err_set(err, DP_EINPUT, "%s:%zu: expected ',' after column %zu", what, line, c);
                    return NULL;
                }
            }
            if (rows == 0)
                cols = c;
            else if (c != cols) {
                dp_err_set(err, DP_EINPUT, "%s:%zu: %zu columns, the first row has %zu", what, line, c, cols);
                return NULL;
            }
            rows++;
        }
        p = eol + 1;
    }
    if (rows < 2 || cols < 2) {
        dp_err_set(err, DP_EINPUT, "%s: expected at least 2 rows of features then a label (got %zu x %zu)",
                   what, rows, cols);
        return NULL;
    }
    size_t n_test = (size_t)ceil(frac * (double)rows);
    if (n_test < 1 || n_test >= rows) {
        dp_err_set(err, DP_EINPUT, "%s: a test fraction of %g leaves %zu of %zu rows for testing", what, frac,
                   n_test, rows);
        return NULL;
    }
    size_t *perm = dp_malloc(rows * sizeof *perm);
    double *x = dp_malloc(rows * (cols - 1) * sizeof *x);
    int *y = dp_malloc(rows * sizeof *y);
    ldata *d = NULL;
    if (!perm || !x || !y) {
        dp_err_set(err, DP_ENOMEM, "out of memory reading %s", what);
        goto out;
    }
    double xmax = 0;
    int ymax = 0;
    p = text;
    line = 0;
    for (size_t r = 0; r < rows;) {
        line++;
        const char *eol = memchr(p, '\n', (size_t)(end - p));
        if (!eol)
            eol = end;
        int blank = 1;
        for (const char *q = p; q < eol; q++)
            if (*q != ' ' && *q != '\r' && *q != '\t')
                blank = 0;
        if (!blank) {
            const char *q = p;
            for (size_t c = 0; c < cols; c++) {
                char *e;
                double v = num(q, &e);
                q = e;
                while (q < eol && *q != ',')
                    q++;
                q++;
                if (c + 1 < cols) {
                    x[r * (cols - 1) + c] = v;
                    if (fabs(v) > xmax)
                        xmax = fabs(v);
                } else {
                    if (v != floor(v) || v < 0 || v > 65535) {
                        dp_err_set(err, DP_EINPUT,
                                   "%s:%zu: the label (last column) must be a class 0..65535 (got %g)", what,
                                   line, v);
                        goto out;
                    }
                    y[r] = (int)v;
                    if (y[r] > ymax)
                        ymax = y[r];
                }
            }
            r++;
        }
        p = eol + 1;
    }
    for (size_t i = 0; i < rows; i++)
        perm[i] = i;
    uint64_t st = 0x9e3779b97f4a7c15ULL;
    for (size_t i = rows - 1; i > 0; i--) {
        st = st * 6364136223846793005ULL + 1442695040888963407ULL;
        size_t j = (size_t)((st >> 33) % (i + 1));
        size_t t = perm[i];
        perm[i] = perm[j];
        perm[j] = t;
    }
    d = ldata_alloc(rows - n_test, n_test, cols - 1, err);
    if (!d)
        goto out;
    d->classes = (size_t)ymax + 1;
    double scale = xmax > 0 ? 1.0 / xmax : 1.0;
    for (size_t i = 0; i < rows; i++) {
        size_t src = perm[i];
        int test = i < n_test;
        size_t k = test ? i : i - n_test;
        double *dst = (test ? d->x_test : d->x_train) + k * d->dim;
        for (size_t c = 0; c < d->dim; c++)
            dst[c] = x[src * d->dim + c] * scale;
        (test ? d->y_test : d->y_train)[k] = y[src];
    }
out:
    dp_free(perm);
    dp_free(x);
    dp_free(y);
    return d;
}

static uint32_t be32(const unsigned char *p)
{
    return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}

/* One IDX file: images (magic 0x803, n x rows x cols bytes) or labels
 * (0x801, n bytes).  Tries NAME then NAME.gz in dir. */
static unsigned char *read_idx(const char *dir, const char *name, int images, size_t *n, size_t *dim,
                               dp_err *err)
{
    char path[4096];
    struct stat st;
    snprintf(path, sizeof path, "%s/%s", dir, name);
    if (stat(path, &st) != 0)
        snprintf(path, sizeof path, "%s/%s.gz", dir, name);
    size_t len;
    char *buf = read_gz(path, &len, err);
    if (!buf)
        return NULL;
    const unsigned char *u = (const unsigned char *)buf;
    size_t head = images ? 16 : 8;
    if (len < head || be32(u) != (images ? 0x803u : 0x801u)) {
        dp_err_set(err, DP_EINPUT, "%s: not an IDX %s file (magic %s)", path, images ? "image" : "label",
                   images ? "0x00000803" : "0x00000801");
        dp_free(buf);
        return NULL;
    }
    *n = be32(u + 4);
    *dim = images ? (size_t)be32(u + 8) * be32(u + 12) : 1;
    if (*n == 0 || *dim == 0 || *dim > 1000000 || (len - head) / *dim < *n) {
        dp_err_set(err, DP_EINPUT, "%s: the header announces %zu x %zu values, the file holds %zu bytes",
                   path, *n, *dim, len - head);
        dp_free(buf);
        return NULL;
    }
    memmove(buf, buf + head, *n * *dim);
    return (unsigned char *)buf;
}

static int fill_idx(const char *dir, const char *split, double **x, int **y, size_t *n, size_t *dim,
                    size_t *classes, dp_err *err)
{
    char iname[64], lname[64];
    snprintf(iname, sizeof iname, "%s-images-idx3-ubyte", split);
    snprintf(lname, sizeof lname, "%s-labels-idx1-ubyte", split);
    size_t ni, nl, d1;
    unsigned char *img = read_idx(dir, iname, 1, &ni, dim, err);
    if (!img)
        return err ? err->code : DP_EINPUT;
    unsigned char *lab = read_idx(dir, lname, 0, &nl, &d1, err);
    if (!lab) {
        dp_free(img);
        return err ? err->code : DP_EINPUT;
    }
    int rc = 0;
    if (ni != nl) {
        rc = dp_err_set(err, DP_EINPUT, "%s/%s: %zu labels for %zu images", dir, lname, nl, ni);
    } else {
        *n = ni;
        *x = dp_malloc(ni * *dim * sizeof **x);
        *y = dp_malloc(ni * sizeof **y);
        if (!*x || !*y)
            rc = dp_err_set(err, DP_ENOMEM, "out of memory reading %s", dir);
        for (size_t i = 0; !rc && i < ni * *dim; i++)
            (*x)[i] = img[i] / 255.0;
        for (size_t i = 0; !rc && i < ni; i++) {
            (*y)[i] = lab[i];
            if ((size_t)lab[i] + 1 > *classes)
                *classes = (size_t)lab[i] + 1;
        }
    }
    dp_free(img);
    dp_free(lab);
    return rc;
}

static ldata *load_idx_dir(const char *dir, dp_err *err)
{
    ldata *d = dp_calloc(1, sizeof *d);
    if (!d) {
        dp_err_set(err, DP_ENOMEM, "out of memory");
        return NULL;
    }
    size_t dim2 = 0;
    if (fill_idx(dir, "train", &d->x_train, &d->y_train, &d->n_train, &d->dim, &d->classes, err) ||
        fill_idx(dir, "t10k", &d->x_test, &d->y_test, &d->n_test, &dim2, &d->classes, err)) {
        ldata_free(d);
        return NULL;
    }
    if (dim2 != d->dim) {
        dp_err_set(err, DP_EINPUT, "%s: test images have %zu pixels, training images %zu", dir, dim2, d->dim);
        ldata_free(d);
        return NULL;
    }
    return d;
}

static ldata *ldata_copy(const ldata *s, dp_err *err)
{
    ldata *d = ldata_alloc(s->n_train, s->n_test, s->dim, err);
    if (!d)
        return NULL;
    memcpy(d->name, s->name, sizeof d->name);
    d->classes = s->classes;
    memcpy(d->x_train, s->x_train, s->n_train * s->dim * sizeof *d->x_train);
    memcpy(d->y_train, s->y_train, s->n_train * sizeof *d->y_train);
    memcpy(d->x_test, s->x_test, s->n_test * s->dim * sizeof *d->x_test);
    memcpy(d->y_test, s->y_test, s->n_test * sizeof *d->y_test);
    return d;
}

/* The built-in digits, inflated and parsed once a process (a run reads
 * `learning:` when it checks the scenario and again for each policy it
 * runs); callers get their own copy, which they standardise. */
static pthread_mutex_t digits_lock = PTHREAD_MUTEX_INITIALIZER;
static ldata *digits_parsed;

static ldata *load_digits(dp_err *err)
{
    pthread_mutex_lock(&digits_lock);
    if (!digits_parsed) {
        size_t len;
        char *text = inflate_mem(dpsim_data_digits, dpsim_data_digits_len, &len, err);
        if (text)
            digits_parsed = parse_csv("digits.csv.gz (built in)", text, len, 0.2, err);
        dp_free(text);
    }
    ldata *d = digits_parsed ? ldata_copy(digits_parsed, err) : NULL;
    pthread_mutex_unlock(&digits_lock);
    return d;
}

void ldata_cache_free(void)
{
    pthread_mutex_lock(&digits_lock);
    ldata_free(digits_parsed);
    digits_parsed = NULL;
    pthread_mutex_unlock(&digits_lock);
}

ldata *ldata_load(const char *source, const char *base_dir, double test_fraction, dp_err *err)
{
    ldata *d = NULL;
    if (strcmp(source, "digits") == 0) {
        if (!(d = load_digits(err)))
            return NULL;
    } else if (strcmp(source, "fashion-mnist") == 0) {
        struct stat st;
        if (stat(LDATA_FASHION_DIR, &st) != 0) {
            dp_err_set(
                err, DP_EINPUT,
                "Fashion-MNIST is not installed (no %s): apt-get install dataset-fashion-mnist, or give "
                "the directory holding its four IDX files as learning.data",
                LDATA_FASHION_DIR);
            return NULL;
        }
        d = load_idx_dir(LDATA_FASHION_DIR, err);
    } else {
        char path[4096];
        if (source[0] != '/' && base_dir && *base_dir)
            snprintf(path, sizeof path, "%s/%s", base_dir, source);
        else
            snprintf(path, sizeof path, "%s", source);
        struct stat st;
        if (stat(path, &st) != 0) {
            dp_err_set(err, DP_EINPUT,
                       "learning data %s: %s (expected digits, fashion-mnist, a CSV file or a "
                       "directory of IDX files)",
                       path, strerror(errno));
            return NULL;
        }
        if (S_ISDIR(st.st_mode)) {
            d = load_idx_dir(path, err);
        } else {
            size_t len;
            char *text = read_gz(path, &len, err);
            if (!text)
                return NULL;
            d = parse_csv(path, text, len, test_fraction, err);
            dp_free(text);
        }
    }
    if (d) {
        const char *base = strrchr(source, '/');
        snprintf(d->name, sizeof d->name, "%s", base ? base + 1 : source);
        if (d->classes < 2) {
            dp_err_set(err, DP_EINPUT, "learning data %s: one class only", source);
            ldata_free(d);
            return NULL;
        }
    }
    return d;
}

void ldata_standardize(ldata *d)
{
    /* row by row (the arrays are row-major): column passes over 60,000
     * rows of 784 features were 2 s of cache misses */
    size_t D = d->dim;
    double *mean = dp_calloc(D ? D : 1, sizeof *mean), *inv = dp_calloc(D ? D : 1, sizeof *inv);
    if (!mean || !inv) { /* left as read: the caller's results are then unit features */
        dp_free(mean);
        dp_free(inv);
        return;
    }
    for (size_t i = 0; i < d->n_train; i++)
        for (size_t c = 0; c < D; c++)
            mean[c] += d->x_train[i * D + c];
    for (size_t c = 0; c < D; c++)
        mean[c] /= (double)d->n_train;
    for (size_t i = 0; i < d->n_train; i++)
        for (size_t c = 0; c < D; c++) {
            double x = d->x_train[i * D + c] - mean[c];
            inv[c] += x * x;
        }
    for (size_t c = 0; c < D; c++) {
        double sd = sqrt(inv[c] / (double)d->n_train);
        inv[c] = sd > 0 ? 1.0 / sd : 0.0;
    }
    for (size_t i = 0; i < d->n_train; i++)
        for (size_t c = 0; c < D; c++)
            d->x_train[i * D + c] = (d->x_train[i * D + c] - mean[c]) * inv[c];
    for (size_t i = 0; i < d->n_test; i++)
        for (size_t c = 0; c < D; c++)
            d->x_test[i * D + c] = (d->x_test[i * D + c] - mean[c]) * inv[c];
    dp_free(mean);
    dp_free(inv);
}
