/* ldata.h: the learner's data sets (docs/MODEL.md "Learning").
 *
 * A data set is a training and a test split of feature vectors (float64,
 * scaled to [0, 1]) with integer labels 0..classes-1.  Sources:
 *  - "digits": the UCI optical digits (1,797 x 64, 10 classes), compiled
 *    into the library from scenarios/data/digits.csv.gz (provenance and
 *    licence in scenarios/data/README.md); split 1,437 train / 360 test by a
 *    fixed permutation (the same for every run and seed).
 *  - "fashion-mnist": Fashion-MNIST's four IDX files (60,000 + 10,000 x
 *    784) in Debian's dataset-fashion-mnist location or a given directory.
 *  - a directory holding the four IDX files under the MNIST names
 *    (train-images-idx3-ubyte[.gz], ...).
 *  - a CSV file (.csv or .csv.gz): one sample a line, features then the
 *    label last, numbers only; the test split is a fixed fraction.
 * Files are read with zlib, so each may be gzipped or not.
 *
 * Ownership: ldata_load returns a set the caller frees with ldata_free.
 */
#ifndef DP_LDATA_H
#define DP_LDATA_H

#include "dp_common.h"

#include <stddef.h>

typedef struct ldata {
    char name[64];
    size_t dim, classes;
    size_t n_train, n_test;
    double *x_train; /* n_train x dim, row-major */
    int *y_train;
    double *x_test;
    int *y_test;
} ldata;

/* Where Debian's dataset-fashion-mnist installs the IDX files. */
#define LDATA_FASHION_DIR "/usr/share/datasets/fashion-mnist"

/* Load `source` ("digits", "fashion-mnist", a directory of IDX files, or
 * a CSV file; relative paths against base_dir, which may be NULL).
 * test_fraction: the CSV's held-out share (digits uses 0.2).  NULL with
 * err set (DP_EINPUT: missing file, bad shape, with the file named;
 * DP_ENOMEM). */
ldata *ldata_load(const char *source, const char *base_dir, double test_fraction, dp_err *err);
void ldata_free(ldata *d);
/* The built-in digits are inflated and parsed once a process and kept for
 * later loads; this releases that copy (tests that count live blocks call
 * it first; the next load parses again). */
void ldata_cache_free(void);
/* Standardise every feature to mean 0 and standard deviation 1 over the
 * training split (the same shift and scale applied to the test split; a
 * constant feature becomes 0). */
void ldata_standardize(ldata *d);

#endif
