/* scenario.h: a scenario file, loaded and validated.
 *
 * The loader (scenario.c, on libyaml) reads YAML into a node tree that keeps
 * each node's line and column, applies overrides (`KEY=VALUE`, used by
 * `dpsim run -o` and by sweeps), then converts the tree into the structs
 * below.  After scn_load_* returns, every value is validated: finite,
 * positive where it must be, units converted to base units (seconds, bytes,
 * bytes/s, FLOP), names unique, sites known, traces read.
 *
 * Units inside: seconds, bytes, bytes/s, FLOP, FLOP/s.  In files,
 * bandwidths are bits/s (`100Mbps`; a bare number is bits/s), sizes bytes
 * (`25MiB`), rates of bytes `4GB/s`, times `20ms`, compute `35.6TFLOPS`.
 *
 * Error messages (DP_EINPUT) have the form
 *     FILE:LINE:COLUMN: key.path: what is wrong (got VALUE)
 *
 * Ownership: scn_free frees the scenario and everything it points to.
 */
#ifndef DP_SCENARIO_H
#define DP_SCENARIO_H

#include "dp_common.h"
#include "trace.h"
#include "units.h"

#include <math.h>
#include <stdint.h>
#include <stdio.h>

typedef enum { SCN_GPU = 0, SCN_CPU = 1 } scn_kind;

/* network.sharing: max-min fairness (default) or RTT-weighted max-min
 * (sim/core/net.h, NET_SHARE_*) */
enum { SCN_SHARE_MAXMIN = 0, SCN_SHARE_RTT };
extern const char *const scn_sharing_names[]; /* "maxmin", "rtt", NULL */

/* A file the scenario read while loading (a trace), kept whole so that a
 * stored run can be simulated again from the database alone, from any
 * directory and after the file changed (store.h, `dpsim rerun`). */
typedef struct scn_file {
    char *name;    /* as written in the scenario (the key for lookups) */
    char *path;    /* where it was read: an absolute path when known */
    char *data;    /* its bytes (len of them, plus a terminating NUL) */
    size_t len;    /* bytes */
    uint64_t hash; /* FNV-1a 64 of data */
} scn_file;

typedef enum {
    SCN_COMPUTE_MEASURED = 0, /* batch_time: seconds for one batch of `batch` */
    SCN_COMPUTE_TABLE,        /* batch_table: [[n, seconds], ...] interpolated */
    SCN_COMPUTE_DERIVED,      /* peak_flops * efficiency (+ overhead) */
} scn_compute_kind;

/* Link outages: [start, end) intervals in seconds, sorted, disjoint; the
 * link carries nothing during each (capacity 0), whatever its trace says. */
typedef struct scn_outages {
    size_t n;
    double *start_s, *end_s;
} scn_outages;

/* Straggler episodes of each device of a group: starts form a Poisson
 * process of mean gap every_s, each lasts an exponential time of mean
 * lasting_s (overlapping episodes merge), and during one the batch cost is
 * multiplied by factor.  every_s == 0: none. */
typedef struct scn_stragglers {
    double every_s, lasting_s, factor;
} scn_stragglers;

/* Energy of each device of a group (scenarios/README.md "Energy";
 * docs/MODEL.md section 12): its power in each activity and, optionally,
 * a battery whose state of charge drives its availability.  on == 0: no
 * power figures (no energy is counted).  Fractions are of the capacity. */
typedef enum {
    SCN_CHARGE_NONE = 0,
    SCN_CHARGE_RATE = 1,      /* plugged in as soon as it is down */
    SCN_CHARGE_BERNOULLI = 2, /* plugged in at each every_s with probability p */
    SCN_CHARGE_TRACE = 3      /* plugged in while plug_trace is 1 */
} scn_charge_kind;
typedef struct scn_energy {
    int on; /* `power:` given */
    double compute_w, transmit_w, receive_w, idle_w;
    int battery;                   /* `battery:` given */
    double capacity_j;             /* capacity x voltage, joules */
    double charge, cutoff, resume; /* initial, leave below, come back at */
    int charging;                  /* scn_charge_kind */
    double charge_w;               /* power into the battery while plugged in */
    double every_s, p;             /* Bernoulli: plugged in with probability p, every every_s */
    trace *plug_trace;             /* TRACE: 1 plugged in, 0 not (owned) */
} scn_energy;

/* Availability of each device of a group: either a seeded on/off process
 * (up for an exponential time of mean mtbf_s, then down for one of mean
 * mttr_s; every device starts up) or an on/off trace (values 1 up, 0 down;
 * a trace ending at 0 means the device never returns).  A device coming
 * back has lost the model; it keeps its data when data_persists (default
 * 1).  mtbf_s == 0 and trace == NULL: always up. */
typedef struct scn_avail {
    double mtbf_s, mttr_s;
    trace *trace;
    int data_persists;
} scn_avail;

typedef struct scn_link {
    double up_Bps;    /* device -> network, bytes/s, > 0 (INFINITY allowed only for server NIC) */
    double down_Bps;  /* network -> device */
    double latency_s; /* one way, >= 0 */
    trace *up_trace;  /* optional capacity over time (bytes/s); NULL = constant */
    trace *down_trace;
    scn_outages outages; /* both directions, every device of the group */
} scn_link;

typedef struct scn_group {
    char *name; /* unique */
    int count;  /* >= 1 (0 allowed only through overrides/sweeps: group skipped) */
    scn_kind kind;
    int site; /* index into scn_scenario.sites, -1 = none */
    double memory_bytes;
    int batch; /* >= 1 */
    scn_compute_kind compute;
    double batch_time_s; /* MEASURED */
    size_t table_n;      /* TABLE: points sorted by batch */
    double *table_batch, *table_s;
    double peak_flops;  /* DERIVED: FLOP/s */
    double efficiency;  /* DERIVED: (0, 1] */
    double overhead_s;  /* DERIVED: fixed per-batch cost, default 0 */
    double noise_cv;    /* multiplicative noise, lognormal with this CV; 0 = none */
    trace *speed_trace; /* optional availability: speed factor over time */
    scn_link link;
    int line, column; /* where the group starts, for messages */
    /* The dynamic world (docs in scenarios/README.md; all optional). */
    scn_stragglers stragglers;
    scn_avail avail;   /* the group's own, else the top-level `availability:` */
    scn_energy energy; /* `power:` and `battery:` (zeroed: none) */
    int item;          /* the `devices:` list item it came from (0-based) */
    int pop;           /* 1 + index into scn_scenario.pops when a population made it, else 0 */
    int pooled;        /* its name lives in its population's `names` block and it owns nothing
                          else (scn_free passes it by) */
} scn_group;

/* Many device groups made by one `devices:` item (scenarios/README.md,
 * "Device populations"): a device table (`from_csv: FILE`, one group per
 * row) or a population (a group whose values are drawn from distributions:
 * `count` groups of one device each, named NAME[0], NAME[1], ...).
 * `dpsim check` summarises each instead of listing its groups. */
typedef enum { SCN_POP_TABLE = 1, SCN_POP_DRAWN = 2 } scn_pop_kind;

typedef struct scn_population {
    scn_pop_kind kind;
    char *name;      /* DRAWN: the group's name; TABLE: the file as written */
    size_t first, n; /* its groups: groups[first .. first + n) */
    uint64_t seed;   /* DRAWN: the seed of its draws */
    unsigned drawn;  /* DRAWN: bit k set when the k-th drawable key (population.c) is drawn */
    int item;        /* the `devices:` item */
    char *names;     /* DRAWN: one block with the names of its pooled members, or NULL */
} scn_population;

/* One expanded device: group `group`, member `index` of count. Rank = position + 1. */
typedef struct scn_device {
    int group;
    int index;
    /* "rtx3090" when count == 1, else "rtx3090[2]" (0-based), at most
     * SCN_DEV_NAME_MAX - 1 bytes: in the scenario's one block of device
     * names (dev_names), not a buffer per device (10^5-10^6 of them) */
    const char *name;
} scn_device;
#define SCN_DEV_NAME_MAX 96

typedef struct scn_wan {
    int site_a, site_b;   /* indices, a != b; the pair is unordered and unique */
    double bandwidth_Bps; /* each direction */
    double latency_s;
    trace *trace;        /* optional, both directions */
    scn_outages outages; /* both directions */
} scn_wan;

/* Where the dataset lives (scenarios/README.md "Data where it lives";
 * scenario_data.c reads it): `dataset.parts`, `dataset.storage`,
 * `dataset.caches`.  NULL in scn_scenario when none is given: the whole
 * dataset is at the server, as always. */
enum { SCN_AT_SERVER = 0, SCN_AT_SITE = 1, SCN_AT_GROUP = 2 };
enum { SCN_CACHE_LRU = 0, SCN_CACHE_PLANNED = 1 };
extern const char *const scn_cache_policy_names[]; /* "lru", "planned", NULL */
typedef struct scn_part {
    int at;          /* SCN_AT_* */
    int idx;         /* SITE: site index; GROUP: first group; SERVER: -1 */
    int n_groups;    /* GROUP: groups[idx .. idx + n_groups) hold it, split evenly */
    int64_t samples; /* > 0; the parts sum to dataset.samples */
    size_t n_replicas;
    int *replicas; /* site indices, -1 the server: other holders of the same samples */
} scn_part;
typedef struct scn_store {
    int site;
    double read_Bps;   /* INFINITY: unlimited */
    double latency_s;  /* one way, between the storage and the site's network */
    double fails_at_s; /* INFINITY: never; else the storage is gone from then on */
} scn_store;
typedef struct scn_cache {
    int site;
    double capacity_bytes; /* >= 0 */
    int policy;            /* SCN_CACHE_* */
    double read_Bps;       /* INFINITY: unlimited */
} scn_cache;
typedef struct scn_data {
    size_t n_parts;
    scn_part *parts;
    scn_store *store; /* per site (n_sites), read_Bps INFINITY when not given */
    scn_cache *cache; /* per site; capacity 0 and site -1 where none */
    int any_cache, any_failure;
} scn_data;

struct yt_node;
struct yt_doc;

typedef struct scn_scenario {
    char *name;
    char *path;         /* file name used in messages ("<builtin:paper-testbed>" for embedded) */
    char *text;         /* the source text, as read (stored with results) */
    uint64_t text_hash; /* FNV-1a 64 of text */
    /* values given as a bare number where a unit is expected (accepted in
     * the base unit; `check` lists them): "FILE:LINE:COL: key: 20 -> 20 s
     * (no unit)", the first SCN_UNITLESS_MAX, and how many in all */
#define SCN_UNITLESS_MAX 20
    char *unitless[SCN_UNITLESS_MAX];
    size_t n_unitless, n_unitless_all;
    /* what `preset:` keys filled in (presets.h scn_preset_notes), for
     * `check`: the first SCN_PRESET_NOTES_MAX lines, and how many in all */
#define SCN_PRESET_NOTES_MAX 24
    char *preset_notes[SCN_PRESET_NOTES_MAX];
    size_t n_preset_notes, n_preset_notes_all;
    /* the unit each override's value was read in, for scn_value_si:
     * origin is the tree's "override KEY=VALUE" text, unit a scn_unit (the
     * first SCN_OV_UNITS_MAX overrides the loader read) */
#define SCN_OV_UNITS_MAX 64
    struct {
        const char *origin;
        int unit;
    } ov_units[SCN_OV_UNITS_MAX];
    size_t n_ov_units;
    size_t n_files; /* the trace files read, each name once, in the order read */
    scn_file *files;

    struct {
        char *name;
        double params;
        double bytes_per_param;        /* default 4 */
        double flops_per_sample;       /* as the paper counts it */
        double train_flops_per_sample; /* default 6 * flops_per_sample (MAC -> FLOP, x3 for training) */
        double state_factor; /* model-state bytes = state_factor * model bytes; default 4 (weights, grads, 2
                                Adam moments) */
        double activation_bytes_per_sample; /* default 0 */
        double model_bytes;                 /* = params * bytes_per_param */
    } model;

    struct {
        char *name;
        int64_t samples;     /* >= 1 */
        double sample_bytes; /* > 0 */
    } dataset;

    struct {
        int epochs;    /* >= 1 */
        uint64_t seed; /* default 1 */
    } training;

    struct {
        double nic_up_Bps, nic_down_Bps; /* INFINITY = unlimited (default) */
        double aggregate_Bps;            /* model bytes averaged per second; default INFINITY */
        int site;                        /* -1 = none; default: first site if sites exist */
    } server;
    /* `servers:` regional parameter servers (Cloudless-Training;
     * scenarios/README.md "Regional servers"), at most one per site, in
     * file order: world node n_devices + 1 + k.  A device's server is its
     * site's, else the server above. */
    size_t n_servers;
    struct scn_rserver {
        int site;
        double nic_up_Bps, nic_down_Bps; /* INFINITY = unlimited */
        double aggregate_Bps;            /* INFINITY = instant */
    } * servers;

    struct {
        double tcp_window_bytes; /* 0 = no window cap (default) */
        int sharing;             /* SCN_SHARE_*: how flows split a shared link (network.sharing) */
    } network;

    /* Optional device-to-device interconnect for collectives (all-reduce,
     * reduce-scatter, all-gather).  When bandwidth_Bps > 0 every device has
     * a dedicated up and down link of this capacity (and this one-way
     * latency) used for peer traffic instead of its access link; sites and
     * WAN links are still crossed between sites.  0 = collectives use the
     * access links (default).  YAML: `interconnect: { bandwidth: 10Gbps, latency: 50us }` */
    struct {
        double bandwidth_Bps;
        double latency_s;
    } interconnect;

    size_t n_sites;
    char **sites;

    size_t n_wan;
    scn_wan *wan;

    /* Top-level `availability:`, the default of every group (mtbf_s 0 and
     * trace NULL: none). */
    scn_avail availability;

    size_t n_groups;
    scn_group *groups;

    size_t n_pops; /* device tables and populations, in file order */
    scn_population *pops;

    size_t n_devices; /* sum of counts */
    scn_device *devices;
    char *dev_names; /* the devices' names, one after another (scn_device.name) */
    /* scn_has_failures, worked out once by the loader (a scenario does not
     * change after loading; each policy asks, and 100,000 groups are a
     * pass through memory each time). */
    int failures;

    /* `policies:` as written (a mapping, or NULL when absent): each policy
     * reads its own options from it (policy.h); the tree belongs to the
     * scenario. */
    const struct yt_node *policies;
    /* `learning:` as written (a mapping, or NULL when absent): the
     * learner's options (sim/learn), read and checked there. */
    const struct yt_node *learning;
    /* `compression:` as written (a mapping, or NULL when absent): how
     * models and gradients travel (sim/policy/compress.c). */
    const struct yt_node *compression;
    /* `jobs:` (a list, or a trace file's name) and `scheduler:` as written
     * (NULL when absent): many jobs in one world (sim/jobs/ reads them). */
    const struct yt_node *jobs, *scheduler;
    /* `dataset.parts`, `.storage`, `.caches` (NULL: all data at the server) */
    scn_data *data;
    struct yt_doc *tree;
} scn_scenario;

/* An override KEY=VALUE applied to the YAML tree before conversion.
 * KEY is a dotted path; list elements of `devices` are addressed by name
 * (`devices.rtx3090.link.down`), those of `wan` by `A-B` site names
 * (`wan.hz-remote.bandwidth`), others by index.  VALUE is parsed as a YAML
 * scalar (so units work: `50Mbps`).  An unknown KEY is an error naming it. */
typedef struct scn_override {
    const char *key;
    const char *value;
} scn_override;

/* The override KEY=VALUE as a number in SI base units (bytes/s, bytes,
 * s, FLOP/s, or a plain number), for the results database: 1 with *si and
 * *unit ("B/s", "B", "s", "FLOP/s", "" for a plain number, NULL when the
 * unit is not known: a bare number no loader read as a quantity, e.g. a
 * policy option, stored as written), 0 when VALUE is not a number (a name,
 * a list).  With s (the scenario loaded with this override), a value is
 * read in the unit the scenario read it in (so a bare 100 on a bandwidth
 * key is 100 bit/s = 12.5 B/s); without s, or for a key the loader did not
 * read, the value's own unit suffix decides. */
int scn_value_si(const scn_scenario *s, const char *key, const char *value, double *si, const char **unit);

/* Load a file.  `ov` may be NULL when n_ov == 0.  NULL on error. */
scn_scenario *scn_load_file(const char *path, const scn_override *ov, size_t n_ov, dp_err *err);
/* Load from text; `name` is the file name used in messages and `path`.
 * Relative trace paths are resolved against `base_dir` (NULL = cwd). */
scn_scenario *scn_load_string(const char *name, const char *text, size_t len, const char *base_dir,
                              const scn_override *ov, size_t n_ov, dp_err *err);
/* scn_load_string, except that a trace whose file name (as written in the
 * scenario) is the name of one of files[0..n_files) is read from that
 * entry's data instead of the disk; other traces are read from disk as
 * usual.  This is how a stored run is simulated again (`dpsim rerun`) with
 * the trace contents the database kept.  files is borrowed for the call;
 * the scenario's own files array holds copies. */
scn_scenario *scn_load_string_files(const char *name, const char *text, size_t len, const char *base_dir,
                                    const scn_file *files, size_t n_files, const scn_override *ov,
                                    size_t n_ov, dp_err *err);
/* FNV-1a 64 of n bytes: the hash of scenario texts and trace files. */
uint64_t scn_hash(const char *p, size_t n);
/* Load a scenario compiled into the binary: `which` = "paper-testbed"
 * (scenarios/paper-testbed.yaml at build time).  Messages and `path` say
 * "<builtin:paper-testbed>"; relative trace paths resolve against the cwd. */
scn_scenario *scn_load_builtin(const char *which, const scn_override *ov, size_t n_ov, dp_err *err);
void scn_free(scn_scenario *s);

/* 1 when some device group has an availability process, trace or battery: devices
 * may go down (policies need an on_device hook). */
int scn_has_failures(const scn_scenario *s);
/* 1 when the world changes by itself: failures, stragglers or outages. */
int scn_is_dynamic(const scn_scenario *s);

/* Seconds for device group g to process one batch of n samples (n >= 1),
 * without noise.  MEASURED: n <= batch costs a full batch (the paper's
 * ceil model), larger n scales by ceil(n / batch).  TABLE: piecewise linear
 * in n, extrapolated linearly past the ends.  DERIVED:
 * overhead + n * train_flops_per_sample / (peak * efficiency). */
double scn_batch_time(const scn_scenario *s, const scn_group *g, int n);

/* ---- the batch-cost model: the one place it is written ------------------
 * (docs/MODEL.md "Compute").  Every cost of a batch goes through these:
 * scn_batch_time above, the compute model's dense fast path (compute.c,
 * which keeps a group's parameters beside its device) and the load
 * balancers' real-valued costs (lbsync.c).  Same expressions, same bits
 * wherever they are called from.
 * Seconds for x samples on group g: `whole` (x a whole number) uses the
 * ceil model of MEASURED groups; otherwise x may be real and a MEASURED
 * group scales linearly (batch_time * x / batch). */
double scn_batch_cost(const scn_scenario *s, const scn_group *g, double x, int whole);
/* The model on a group's parameters: MEASURED (ceil model when whole),
 * DERIVED (rate = peak * efficiency), TABLE (m >= 1 points b -> t). */
static inline double scn_cost_measured(double batch_time_s, int batch, double x, int whole)
{
    return whole ? ceil(x / (double)batch) * batch_time_s : batch_time_s * x / batch;
}
static inline double scn_cost_derived(double overhead_s, double flops_per_sample, double rate, double x)
{
    return overhead_s + x * flops_per_sample / rate;
}
double scn_cost_table(const double *b, const double *t, size_t m, double x);

/* Print the `dpsim check` summary (the world; cmd_check adds the policies).
 * Device groups written one by one are listed one by one up to
 * SCN_SUMMARY_LIST of them; past that (unless `all`) the first
 * SCN_SUMMARY_SHOW are listed and the others summarised in one block: their
 * count per kind and site, min / median / max of batch time, samples/s,
 * link up and down, latency and memory, and how many have traces, failures
 * and the like.  Tables and populations always get such a block. */
#define SCN_SUMMARY_LIST 50
#define SCN_SUMMARY_SHOW 10
void scn_print_summary(const scn_scenario *s, int all, FILE *out);

/* ---- reading mappings the loader keeps for plug-ins ---------------------
 * The `policies:` mapping (NULL when absent) and readers with the loader's
 * own checks and messages ("FILE:LINE:COLUMN: path.key: what (got VALUE)",
 * did-you-mean for unknown keys and values).  Each reader returns 1 when
 * the key was set, 0 when absent (*out = def), DP_EINPUT on a bad value.
 * `path` is the mapping's key path ("policies.ddp"). */
const struct yt_node *scn_policies(const scn_scenario *s);
/* The `learning:` mapping (NULL when absent), read by sim/learn. */
const struct yt_node *scn_learning(const scn_scenario *s);
/* The `compression:` mapping (NULL when absent), read by sim/policy. */
const struct yt_node *scn_compression(const scn_scenario *s);
/* `jobs:` and `scheduler:` (NULL when absent), read by sim/jobs. */
const struct yt_node *scn_jobs(const scn_scenario *s);
const struct yt_node *scn_scheduler(const scn_scenario *s);
int scn_read_keys(const scn_scenario *s, const struct yt_node *m, const char *path, const char *const *keys,
                  dp_err *err);
/* A quantity > 0 (>= 0 with nonneg) and at most max. */
int scn_read_quantity(const scn_scenario *s, const struct yt_node *m, const char *path, const char *key,
                      scn_unit u, double def, int nonneg, double max, double *out, dp_err *err);
/* A whole number in [lo, hi]. */
int scn_read_int(const scn_scenario *s, const struct yt_node *m, const char *path, const char *key,
                 int64_t def, double lo, double hi, int64_t *out, dp_err *err);
int scn_read_bool(const scn_scenario *s, const struct yt_node *m, const char *path, const char *key, int def,
                  int *out, dp_err *err);
/* One of names (NULL-terminated); *out = its index. */
int scn_read_enum(const scn_scenario *s, const struct yt_node *m, const char *path, const char *key,
                  const char *const *names, int def, int *out, dp_err *err);
/* A message at node n (or the file when NULL) about `path`. */
int scn_read_fail(const scn_scenario *s, const struct yt_node *n, const char *path, dp_err *err,
                  const char *fmt, ...) DP_PRINTF(5, 6);
/* The "got" text of a node for messages (its scalar, cut, or its shape). */
const char *scn_read_got(const struct yt_node *n, char *buf, size_t len);

#endif
