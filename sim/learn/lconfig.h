/* lconfig.h: the learner's configuration, as read from `learning:`
 * (private to sim/learn; the keys are documented in scenarios/README.md). */
#ifndef DP_LCONFIG_H
#define DP_LCONFIG_H

#include "learner.h"
#include "ldata.h"
#include "lmodel.h"

enum { LRN_PART_IID = 0, LRN_PART_LABELS, LRN_PART_DIRICHLET, LRN_PART_POLICY };
enum { LRN_STALE_NONE = 0, LRN_STALE_DIVIDE };
enum { LRN_SAMPLES_EPOCH = 0, LRN_SAMPLES_SAME };
enum { LRN_FEAT_STANDARDIZE = 0, LRN_FEAT_UNIT };

extern const char *const lrn_model_names[];
extern const char *const lrn_partition_names[];
extern const char *const lrn_staleness_names[];
extern const char *const lrn_samples_names[];
extern const char *const lrn_features_names[];

struct lrn_cfg {
    ldata *data;
    double test_fraction;
    lm_kind model;
    size_t hidden;
    int partition;
    int labels_per_device;
    double alpha;
    int has_seed;
    uint64_t seed;
    double lr, lr_factor;
    int lr_every;
    int staleness;
    int eval_epochs;
    double eval_every_s;
    double *targets;
    size_t n_targets;
    int stop_at_target;
    int samples;
    int features;
};

#endif
