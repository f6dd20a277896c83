/* scenario_impl.h: what the scenario loader's modules share (scenario.c,
 * population.c); not for use outside sim/input.
 *
 * The loader's state (cv), its message helpers and key readers: every
 * reader checks one key against the schema, converts units and, on a bad
 * value, returns DP_EINPUT with the one message
 *     FILE:LINE:COLUMN: key.path: what is wrong (got VALUE)
 * naming c->file (the scenario, or the device table being read).
 */
#ifndef DP_SCENARIO_IMPL_H
#define DP_SCENARIO_IMPL_H

#include "scenario.h"
#include "yamltree.h"

#define SCN_MAX_FILE_BYTES   (64L * 1024 * 1024)
#define SCN_MAX_DEVICES      1000000 /* total over all groups */
#define SCN_MAX_SAMPLES      1e15
#define SCN_MAX_EPOCHS       1000000
#define SCN_MAX_BATCH        10000000
#define SCN_MAX_PARAMS       1e13
#define SCN_MAX_SAMPLE_BYTES 1e12
#define SCN_MAX_SITES        1000
#define SCN_MAX_TABLE        10000
#define SCN_MAX_GRAD_ACCUM   1000000
#define SCN_MAX_NOISE        10.0
#define SCN_NAME_MAX         80

typedef struct scni_name_slot {
    uint32_t hash;  /* of the name (name_hash, cut to 32 bits) */
    uint32_t group; /* group index + 1; 0: empty */
} scni_name_slot;

typedef struct cv {
    const char *file; /* the file messages name: the scenario, or a device table while it is read */
    const char *base_dir;
    dp_err *err;
    scn_scenario *s;
    const scn_file *given; /* trace contents to use instead of the disk (rerun) */
    size_t n_given;
    /* conv_devices: open-addressing set of group names seen so far (mask +
     * 1 slots, a power of two kept over twice the groups), so the
     * duplicate-name check is linear, not quadratic. */
    scni_name_slot *names;
    size_t names_mask;
    size_t groups_cap; /* room in s->groups */
    /* 1 while the loader converts the tree (one thread, before any run):
     * reads then note the unit of values an override set (scni_note_unit);
     * 0 for readers after loading (policies' options at run time), which
     * must not write to a scenario runs may share. */
    int loading;
} cv;

/* Note that node n, read in unit u, came from an override (n->origin set):
 * scn_value_si then converts that override's value in the unit the
 * scenario read it in.  A no-op for other nodes and outside loading. */
void scni_note_unit(cv *c, const yt_node *n, scn_unit u);

int scni_fail(cv *c, const yt_node *n, const char *path, const char *fmt, ...) DP_PRINTF(4, 5);
int scni_oom(cv *c);
/* The "got" text of a node: its scalar, cut to 60 bytes, or its shape. */
const char *scni_got(const yt_node *n, char *buf, size_t len);
/* "a.b" (or "b" when a is empty), cut to fit. */
void scni_join(char *buf, size_t len, const char *a, const char *b);
int scni_check_map(cv *c, const yt_node *n, const char *path, const char *const *keys,
                   const char *const *required);
/* scni_check_map that also hands out what it found in its one pass over
 * n's keys: vals[j] and knodes[j] are the value and key node of keys[j], or
 * NULL when absent (both arrays as long as keys, without its NULL). */
int scni_check_map_at(cv *c, const yt_node *n, const char *path, const char *const *keys,
                      const char *const *required, const yt_node **vals, const yt_node **knodes);
int scni_get_scalar(cv *c, const yt_node *m, const char *path, const char *key, int required,
                    const yt_node **out);
int scni_get_pos(cv *c, const yt_node *m, const char *path, const char *key, scn_unit u, int required,
                 double def, int nonneg, double max, double *out);
int scni_get_int(cv *c, const yt_node *m, const char *path, const char *key, int required, int64_t def,
                 double lo, double hi, const char *what, int64_t *out);
/* The same readers given the value node v of m[key] (NULL: absent), as
 * scni_check_map_at found it, instead of looking it up again. */
int scni_scalar_at(cv *c, const yt_node *m, const yt_node *v, const char *path, const char *key, int required,
                   const yt_node **out);
int scni_q_at(cv *c, const yt_node *m, const yt_node *v, const char *path, const char *key, scn_unit u,
              int required, double def, double *out, const yt_node **node);
int scni_pos_at(cv *c, const yt_node *m, const yt_node *v, const char *path, const char *key, scn_unit u,
                int required, double def, int nonneg, double max, double *out);
int scni_int_at(cv *c, const yt_node *m, const yt_node *v, const char *path, const char *key, int required,
                int64_t def, double lo, double hi, const char *what, int64_t *out);
/* The smallest nonzero value of a unit a run can honour. */
double scni_unit_floor(scn_unit u);
/* The bytes of a file the scenario names (recorded in s->files, so a
 * rerun reads the stored copy); `what` names it in messages ("trace file"). */
int scni_file_contents(cv *c, const yt_node *fnode, const char *kp, const char *what, const char *file,
                       const scn_file **out, char *shown, size_t shown_len);
int scni_site_index(const scn_scenario *s, const char *name);
int scni_unknown_site(cv *c, const yt_node *n, const char *kp);

/* Room for one more device group: its index in *gi (s->n_groups grows by
 * one; the group is zeroed). */
int scni_new_group(cv *c, size_t *gi);
/* Room for `more` groups beyond those made, in one step (a population's
 * members); 0 or the out-of-memory status. */
int scni_reserve_groups(cv *c, size_t more);
/* Record group gi's name (already in s->groups[gi].name); a name seen
 * before is an error at node n, key path kp. */
int scni_name_add(cv *c, size_t gi, const yt_node *n, const char *kp);
/* The key path of device-group item `it` (index item) in messages:
 * `devices.NAME` when it has a usable name, else `devices[item]`. */
void scni_group_path(const yt_node *it, size_t item, char *path, size_t len);
/* Convert the device-group mapping `it` (item `item` of `devices`) into
 * s->groups[gi]; *total counts devices so far. */
int scni_conv_group(cv *c, const yt_node *it, size_t item, size_t gi, int64_t *total);
/* Memory check of a group: model state plus a batch of activations must
 * fit; a message is at node `at`, key path PATH.batch (path: the group's). */
int scni_check_memory(cv *c, const scn_group *g, const yt_node *at, const char *path);

/* population.c: `devices:` items that make many groups. */
/* `- from_csv: FILE`: one group per row of a CSV table. */
int scni_conv_table(cv *c, const yt_node *it, size_t item, int64_t *total);
/* What item `it` of `devices` makes, from one pass over its keys: a
 * device table (it has `from_csv`), a population (a `seed`, or a drawable
 * key holding a distribution), else one group. */
enum { SCNI_ITEM_GROUP, SCNI_ITEM_TABLE, SCNI_ITEM_POPULATION };
int scni_item_kind(const yt_node *it);
/* A group with drawn values: `count` groups of one device, each drawing its own. */
int scni_conv_population(cv *c, const yt_node *it, size_t item, int64_t *total);
/* Free a scenario's populations. */
void scni_free_pops(scn_scenario *s);

/* ---- between the loader's files (scenario.c lists them) ----------------- */
/* scenario.c */
int scni_any_failures(const scn_scenario *s);
/* scenario_keys.c */
int scni_check_name(cv *c, const yt_node *n, const char *kp);
int scni_dup_str(cv *c, char **dst, const char *src);
int scni_enum_at(cv *c, const yt_node *m, const yt_node *v, const char *path, const char *key,
                 const char *const *names, int def, int *out);
int scni_get_bool(cv *c, const yt_node *m, const char *path, const char *key, int def, int *out);
int scni_get_enum(cv *c, const yt_node *m, const char *path, const char *key, const char *const *names,
                  int def, int *out);
int scni_get_text(cv *c, const yt_node *m, const char *path, const char *key, const char *def, char **dst);
void scni_where(const cv *c, const yt_node *n, char *buf, size_t len);
/* scenario_files.c */
int scni_check_pair(cv *c, const yt_node *p, const char *pk, const char *what);
int scni_get_avail(cv *c, const yt_node *n, const char *path, scn_avail *a);
int scni_get_outages(cv *c, const yt_node *l, const char *path, scn_outages *o);
int scni_get_stragglers(cv *c, const yt_node *n, const char *path, scn_stragglers *st);
int scni_get_trace(cv *c, const yt_node *n, const char *path, const char *key, int bits, trace **out);
/* scenario_data.c: dataset.parts, .storage, .caches (after the devices) */
int scni_conv_data(cv *c, const yt_node *dataset);
void scni_free_data(scn_scenario *s);
void scni_print_data(const scn_scenario *s, FILE *out); /* the `check` summary's lines */
/* scenario_energy.c: group g's `power:` and `battery:` (value nodes, NULL
 * when absent); a battery drives availability, so a group with its own
 * `availability:` (own_avail, key node avail_key) cannot have one. */
int scni_get_energy(cv *c, const yt_node *power, const yt_node *battery, const char *path, scn_group *g,
                    int own_avail, const yt_node *avail_key);
/* scenario_servers.c: the top-level `servers:` list (NULL: none). */
int scni_conv_servers(cv *c, const yt_node *list);
/* scenario_sections.c */
int scni_convert(cv *c, const yt_node *root);

#endif
