/* results.h: what one simulated run produces (docs/MODEL.md section 6).
 *
 * Filled by a policy (sim/policy/), then printed by the CLI, written by the
 * store (sim/store/) and read back by it for `show`, `export` and plots.
 * All times in simulated seconds, sizes in bytes.
 *
 * Ownership: res_run_free frees the run and every array it holds;
 * res_run_free(NULL) is a no-op.
 */
#ifndef DP_RESULTS_H
#define DP_RESULTS_H

#include "dp_common.h"
#include <stddef.h>
#include <stdint.h>

/* What a device is doing during a timeline segment (the Gantt chart). */
typedef enum {
    RES_ACT_RECV_DATA = 0,  /* receiving its data share */
    RES_ACT_RECV_MODEL = 1, /* receiving the (initial or averaged) model */
    RES_ACT_COMPUTE = 2,    /* forward/backward */
    RES_ACT_SEND = 3,       /* uploading its model / gradients in a collective */
    RES_ACT_WAIT = 4,       /* idle, waiting for others */
    RES_ACT_COUNT
} res_activity;

const char *res_activity_name(res_activity a); /* "recv_data", ... */

/* The longest name, group and kind a device record keeps (bytes, without
 * the terminating 0): longer ones are cut. */
#define RES_NAME_MAX  95
#define RES_GROUP_MAX 63
#define RES_KIND_MAX  7

typedef struct res_device {
    /* strings owned by the run (res_device_names; "" until then): a name
     * each, the group shared by its consecutive devices, so a record of
     * 10^5-10^6 devices is 96 bytes and its name, not 240 */
    const char *name;
    const char *group;
    const char *kind; /* "gpu" / "cpu" */
    int64_t samples;  /* samples it trains on per epoch */
    int64_t batches;  /* batches it computed over the whole run */
    double compute_s; /* busy computing */
    double send_s;    /* time with at least one outgoing flow active */
    double recv_s;    /* time with at least one incoming flow active */
    double wait_s;    /* Ttotal - compute - (communication not overlapped) */
    double bytes_sent;
    double bytes_recv;
    double data_ready_s; /* when it held its full data share (and the model) */
} res_device;

typedef struct res_epoch {
    int epoch; /* 1-based */
    double end_s;
} res_epoch;

typedef struct res_segment {
    int device; /* 0-based index into devices */
    res_activity act;
    double t0_s, t1_s;
} res_segment;

/* Figures beyond the common ones, which a policy or the world adds for its
 * own story: load balancing's batch per device and epoch, local SGD's
 * averaging rounds, an asynchronous server's staleness histogram, failures
 * and link utilisation.  Each is a name with a scope and up to two indices;
 * every kind of statistic is listed, with its meaning, in
 * sim/store/SCHEMA.md (table run_stats). */
typedef enum {
    RES_SCOPE_RUN = 0,      /* a, b unused (0) */
    RES_SCOPE_DEVICE,       /* a = device index */
    RES_SCOPE_DEVICE_EPOCH, /* a = device index, b = epoch (1-based) */
    RES_SCOPE_LINK,         /* a = link index in the world (net.h), b unused */
    RES_SCOPE_BIN,          /* a histogram: a = bin index, b = its lower edge (integer) */
    RES_SCOPE_COUNT
} res_scope;

const char *res_scope_name(res_scope s); /* "run", "device", "device_epoch", "link", "bin" */
int res_scope_by_name(const char *name); /* -1 if unknown */

typedef struct res_stat {
    char name[40]; /* [a-z0-9_.]: "batch_mean", "staleness", "link.busy_fraction" */
    res_scope scope;
    int64_t a, b;
    double value;
} res_stat;

/* Learning (scenario `learning:`; docs/MODEL.md "Learning"): the global
 * model evaluated on the held-out split at simulated time t_s. */
typedef struct res_eval {
    double t_s;
    double epochs;  /* epoch-equivalents: training samples consumed / training set size */
    double samples; /* training samples consumed by updates by then */
    int epoch;      /* the simulation's epoch then */
    double test_acc, test_loss, train_loss;
} res_eval;

typedef struct res_run {
    char policy[32]; /* "ddp", "deepspeed", "cadp" */
    /* how plots show the policy ("C-ADP", "#2ca02c"), stored with the run so
     * any binary draws it as the one that ran it ("" = not known) */
    char policy_label[48], policy_color[16];
    char *options_json; /* the policy options used, as a JSON object */
    uint64_t seed;

    double tsend_s, ttraining_s, ttotal_s;
    double tflops;            /* paper's count: flops_per_sample * samples processed / Ttraining / 1e12 */
    double utilization;       /* busy compute seconds in [Tsend, Ttotal] / (N * Ttraining) */
    double samples_processed; /* over all epochs and devices */
    double bytes_total;       /* bytes moved over the network */
    uint64_t events;          /* engine events processed */
    double wall_s; /* host seconds the simulation took (not deterministic; not in --json determinism) */

    size_t n_devices;
    res_device *devices;

    size_t n_epochs;
    res_epoch *epochs;

    /* Cluster FLOPS over time (paper's Figure 6): flops_bins[k] is the mean
     * FLOP/s (paper's count) over [k*bin_s, (k+1)*bin_s). */
    double bin_s;
    size_t n_bins;
    double *flops_bins;

    /* Timeline: segments per device, adjacent equal activities merged.
     * timeline_res_s == 0: exact segments; > 0: the run was long, and each
     * segment is a run of bins of this width showing the bin's dominant
     * activity (sim/policy/policy.c). */
    double timeline_res_s;
    size_t n_segments, cap_segments;
    res_segment *segments;

    /* Learning (n_evals == 0 without `learning:`): evaluations in time
     * order, and per target accuracy its time to accuracy (NAN: not
     * reached).  learn_source: "sgd" (the learner) or "efficiency" (the
     * statistical-efficiency model); "" without learning. */
    size_t n_evals;
    res_eval *evals;
    size_t n_tta;
    double *tta_target, *tta_s;
    char learn_source[16];
    /* The run's updates for the statistical-efficiency model (an eff_log,
     * sim/learn/efficiency.h), logged beside the learner's when
     * learning.efficiency is set; NULL otherwise.  Owned: res_run_free
     * frees it through learn_log_free (core does not know its type). */
    void *learn_log;
    void (*learn_log_free)(void *);

    /* Further statistics, in the order added (see res_stat). */
    size_t n_stats, cap_stats;
    res_stat *stats;

    struct res_strings *strings; /* the devices' names, groups and kinds (results.c) */
} res_run;

res_run *res_run_new(size_t n_devices, dp_err *err);
/* A run of n_devices whose device records come later (res_run_devices):
 * devices is NULL until then (segments may be added meanwhile), so a
 * simulation of 10^5-10^6 devices does not hold 96 bytes a device from
 * its start.  NULL (err set) when out of memory. */
res_run *res_run_new_deferred(size_t n_devices, dp_err *err);
/* Make the n_devices records of a run from res_run_new_deferred, zeroed,
 * names "" (res_device_names).  0, or DP_ENOMEM (the run unchanged). */
int res_run_devices(res_run *r);
void res_run_free(res_run *r);
/* Set device d's name, group and kind (copied, each cut to its
 * RES_*_MAX); a group equal to device d - 1's shares its copy.  0 or
 * DP_ENOMEM (the record unchanged). */
int res_device_names(res_run *r, size_t d, const char *name, const char *group, const char *kind);
/* Append a timeline segment, merging with the device's previous one when
 * contiguous and of the same activity.  0 or DP_ENOMEM. */
int res_add_segment(res_run *r, int device, res_activity act, double t0_s, double t1_s);
/* Append an epoch end. */
int res_add_epoch(res_run *r, int epoch, double end_s);
/* Append a statistic (name cut to 39 bytes).  0 or DP_ENOMEM. */
int res_add_stat(res_run *r, const char *name, res_scope scope, int64_t a, int64_t b, double value);
/* The first statistic with this name, scope and indices, or NULL. */
const res_stat *res_find_stat(const res_run *r, const char *name, res_scope scope, int64_t a, int64_t b);

/* Append an evaluation, a time to accuracy (NAN: not reached); 0 or
 * DP_ENOMEM (the run unchanged). */
int res_add_eval(res_run *r, const res_eval *e);
int res_add_tta(res_run *r, double target, double t_s);

#endif
