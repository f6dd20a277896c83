/* scenario.c: scenario files -> scn_scenario, validated.
 *
 * Pipeline: text -> yt_parse (libyaml, positions kept) -> overrides edit the
 * tree -> one pass over the tree that checks every key against the schema
 * and converts units -> cross checks (names, sites, memory, limits) ->
 * devices expanded.  The first problem found is the one message returned,
 * as "FILE:LINE:COLUMN: key.path: what is wrong (got VALUE)", or with
 * "override KEY=VALUE" in place of the position when an override made the
 * node.  Key paths name list items the way overrides address them
 * (`devices.rtx3090.link.up`, `wan.hz-remote.latency`), falling back to an
 * index (`devices[2]`) before the item's name is known.
 *
 * The loader is four files (scenario_impl.h holds what they share):
 *  scenario.c           the public calls: load, free, what a scenario implies
 *  scenario_keys.c      messages and the key readers (also for plug-ins)
 *  scenario_files.c     files and traces, the dynamic world's keys
 *  scenario_sections.c  the sections, one converter each, and the devices
 *
 * Limits (documented in scenarios/README.md) keep absurd values from
 * overflowing ints or allocating gigabytes: see the SCN_MAX_* below.
 */
#include "presets.h"
#include "scenario.h"
#include "scenario_impl.h"
#include "yamltree.h"

#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

/* The embedded copy of scenarios/paper-testbed.yaml (scenarios/meson.build). */
extern const char dpsim_builtin_paper_testbed[];
extern const size_t dpsim_builtin_paper_testbed_len;

/* ---- public ------------------------------------------------------------ */

uint64_t scn_hash(const char *p, size_t n)
{
    uint64_t h = 1469598103934665603ULL;
    for (size_t i = 0; i < n; i++) {
        h ^= (unsigned char)p[i];
        h *= 1099511628211ULL;
    }
    return h;
}

scn_scenario *scn_load_string(const char *name, const char *text, size_t len, const char *base_dir,
                              const scn_override *ov, size_t n_ov, dp_err *err)
{
    return scn_load_string_files(name, text, len, base_dir, NULL, 0, ov, n_ov, err);
}

static scn_scenario *load_parsed(const char *name, const char *text, size_t len, char *own,
                                 const char *base_dir, const scn_file *files, size_t n_files,
                                 const scn_override *ov, size_t n_ov, dp_err *err);

/* The loader.  `own`, when not NULL, is text itself, NUL-terminated and
 * dp_malloc'd: the scenario keeps it as s->text instead of a copy (a file
 * just read), and it is freed on every failure. */
static scn_scenario *load(const char *name, const char *text, size_t len, char *own, const char *base_dir,
                          const scn_file *files, size_t n_files, const scn_override *ov, size_t n_ov,
                          dp_err *err)
{
    scn_scenario *s = load_parsed(name, text, len, own, base_dir, files, n_files, ov, n_ov, err);
    if (!s)
        dp_free(own);
    return s;
}

scn_scenario *scn_load_string_files(const char *name, const char *text, size_t len, const char *base_dir,
                                    const scn_file *files, size_t n_files, const scn_override *ov,
                                    size_t n_ov, dp_err *err)
{
    return load(name, text, len, NULL, base_dir, files, n_files, ov, n_ov, err);
}

/* load's work; on failure `own` is the caller's to free, on success the
 * scenario's. */
static scn_scenario *load_parsed(const char *name, const char *text, size_t len, char *own,
                                 const char *base_dir, const scn_file *files, size_t n_files,
                                 const scn_override *ov, size_t n_ov, dp_err *err)
{
    if (!name)
        name = "<string>";
    if (!text)
        len = 0;
    if (len > (size_t)SCN_MAX_FILE_BYTES) {
        dp_err_set(err, DP_EINPUT, "%s: scenario is larger than the 64 MiB limit (got %zu bytes)", name, len);
        return NULL;
    }
    if (n_ov && !ov) {
        dp_err_set(err, DP_EINPUT, "%s: %zu overrides but no override list", name, n_ov);
        return NULL;
    }
    yt_doc *doc = yt_parse(name, text, len, err);
    if (!doc)
        return NULL;
    const yt_node *root = yt_root(doc);
    char g[80];
    if (!root) {
        dp_err_set(err, DP_EINPUT, "%s:1:1: empty scenario file (no YAML document)", name);
        yt_free(doc);
        return NULL;
    }
    if (root->kind != YT_MAP) {
        dp_err_set(err, DP_EINPUT, "%s:%d:%d: the top level must be a mapping of keys (got %s)", name,
                   root->line, root->column, scni_got(root, g, sizeof g));
        yt_free(doc);
        return NULL;
    }
    /* Presets first, written out as the stored text (presets.h), so that
     * overrides apply on top of them and a stored run keeps its values. */
    int presets = 0;
    char *expanded = NULL;
    scn_preset_notes notes = {0};
    if (scn_presets_expand(doc, name, &presets, &notes, err) ||
        (presets && !(expanded = scn_presets_emit(doc)) && dp_err_set(err, DP_ENOMEM, "out of memory"))) {
        scn_preset_notes_free(&notes);
        yt_free(doc);
        return NULL;
    }
    if (expanded) {
        text = expanded;
        len = strlen(expanded);
    }
    for (size_t i = 0; i < n_ov; i++) {
        if (yt_override(doc, ov[i].key, ov[i].value, err)) {
            scn_preset_notes_free(&notes);
            yt_free(doc);
            dp_free(expanded);
            return NULL;
        }
    }
    scn_scenario *s = dp_calloc(1, sizeof *s);
    cv c = {name, base_dir, err, s, files, files ? n_files : 0, NULL, 0, 0, 1};
    if (!s) {
        scn_preset_notes_free(&notes);
        yt_free(doc);
        dp_free(expanded);
        scni_oom(&c);
        return NULL;
    }
    memcpy(s->preset_notes, notes.line, sizeof s->preset_notes); /* s owns them now */
    s->n_preset_notes = notes.n;
    s->n_preset_notes_all = notes.n_all;
    int r = 0;
    /* The text kept: the expanded one when presets were used, else own. */
    char *keep = expanded ? expanded : own;
    if (!(s->path = dp_strdup(name)) || !(s->text = keep ? keep : dp_malloc(len + 1)))
        r = scni_oom(&c);
    if (!s->text)
        dp_free(expanded);
    if (r == 0) {
        if (!keep && len)
            memcpy(s->text, text, len);
        s->text[len] = '\0';
        s->text_hash = scn_hash(text, len);
        r = scni_convert(&c, yt_root(doc));
    }
    s->tree = doc; /* policies' options are read from it later */
    if (r < 0) {
        if (own && s->text == own)
            s->text = NULL; /* the caller frees it */
        scn_free(s);
        return NULL;
    }
    if (own && s->text != own)
        dp_free(own); /* ours on success, and replaced by the expanded text */
    return s;
}

scn_scenario *scn_load_file(const char *path, const scn_override *ov, size_t n_ov, dp_err *err)
{
    if (!path || !*path) {
        dp_err_set(err, DP_EINPUT, "scenario file name is empty");
        return NULL;
    }
    size_t len = 0;
    char *text = dp_read_file(path, "scenario file", SCN_MAX_FILE_BYTES, &len, err);
    if (!text)
        return NULL;
    /* Traces resolve against the scenario's directory. */
    char dir[4096];
    const char *slash = strrchr(path, '/');
    if (!slash)
        snprintf(dir, sizeof dir, ".");
    else if (slash == path)
        snprintf(dir, sizeof dir, "/");
    else
        snprintf(dir, sizeof dir, "%.*s", (int)(slash - path), path);
    return load(path, text, len, text, dir, NULL, 0, ov, n_ov, err); /* the scenario keeps text */
}

scn_scenario *scn_load_builtin(const char *which, const scn_override *ov, size_t n_ov, dp_err *err)
{
    if (!which || strcmp(which, "paper-testbed") != 0) {
        dp_err_set(err, DP_EINPUT, "no built-in scenario named '%s' (have: paper-testbed)",
                   which ? which : "");
        return NULL;
    }
    return scn_load_string("<builtin:paper-testbed>", dpsim_builtin_paper_testbed,
                           dpsim_builtin_paper_testbed_len, NULL, ov, n_ov, err);
}

static void outages_free(scn_outages *o)
{
    dp_free(o->start_s);
    dp_free(o->end_s);
}

static void link_free(scn_link *l)
{
    trace_free(l->up_trace);
    trace_free(l->down_trace);
    outages_free(&l->outages);
}

int scni_any_failures(const scn_scenario *s)
{
    for (size_t i = 0; i < s->n_groups; i++)
        if (s->groups[i].count > 0 &&
            (s->groups[i].avail.mtbf_s > 0 || s->groups[i].avail.trace || s->groups[i].energy.battery))
            return 1;
    return 0;
}

int scn_has_failures(const scn_scenario *s)
{
    return s ? s->failures : 0;
}

int scn_is_dynamic(const scn_scenario *s)
{
    if (scn_has_failures(s))
        return 1;
    for (size_t i = 0; s && i < s->n_groups; i++)
        if (s->groups[i].count > 0 && (s->groups[i].stragglers.every_s > 0 || s->groups[i].link.outages.n))
            return 1;
    for (size_t i = 0; s && i < s->n_wan; i++)
        if (s->wan[i].outages.n)
            return 1;
    return 0;
}

void scn_free(scn_scenario *s)
{
    if (!s)
        return;
    dp_free(s->servers);
    dp_free(s->name);
    dp_free(s->path);
    dp_free(s->text);
    for (size_t i = 0; i < s->n_unitless; i++)
        dp_free(s->unitless[i]);
    for (size_t i = 0; i < s->n_preset_notes; i++)
        dp_free(s->preset_notes[i]);
    dp_free(s->model.name);
    dp_free(s->dataset.name);
    scni_free_data(s);
    for (size_t i = 0; i < s->n_sites; i++)
        dp_free(s->sites[i]);
    dp_free(s->sites);
    for (size_t i = 0; i < s->n_wan; i++) {
        trace_free(s->wan[i].trace);
        outages_free(&s->wan[i].outages);
    }
    trace_free(s->availability.trace);
    dp_free(s->wan);
    for (size_t i = 0; i < s->n_groups; i++) {
        scn_group *g = &s->groups[i];
        if (g->pooled) /* name in its population's block, nothing else owned */
            continue;
        dp_free(g->name);
        dp_free(g->table_batch);
        dp_free(g->table_s);
        trace_free(g->speed_trace);
        trace_free(g->avail.trace);
        trace_free(g->energy.plug_trace);
        link_free(&g->link);
    }
    dp_free(s->groups);
    scni_free_pops(s);
    dp_free(s->devices);
    dp_free(s->dev_names);
    yt_free(s->tree);
    for (size_t i = 0; i < s->n_files; i++) {
        dp_free(s->files[i].name);
        dp_free(s->files[i].path);
        dp_free(s->files[i].data);
    }
    dp_free(s->files);
    dp_free(s);
}

double scn_cost_table(const double *b, const double *t, size_t m, double x)
{
    if (m == 0)
        return 0;
    if (m == 1)
        return t[0] * x / b[0];
    size_t k = 0; /* segment [k, k+1] used, clamped to the ends for extrapolation */
    while (k + 2 < m && b[k + 1] < x)
        k++;
    double v = t[k] + (t[k + 1] - t[k]) * (x - b[k]) / (b[k + 1] - b[k]);
    /* Extrapolating below the first point can reach 0 or less; fall
     * back to proportional scaling of the first point there. */
    if (!(v > 0))
        v = t[0] * x / b[0];
    return v;
}

double scn_batch_cost(const scn_scenario *s, const scn_group *g, double x, int whole)
{
    switch (g->compute) {
    case SCN_COMPUTE_MEASURED:
        /* The paper's ceil model: a short batch costs a full one. */
        return scn_cost_measured(g->batch_time_s, g->batch, x, whole);
    case SCN_COMPUTE_TABLE:
        return scn_cost_table(g->table_batch, g->table_s, g->table_n, x);
    case SCN_COMPUTE_DERIVED:
    default:
        return scn_cost_derived(g->overhead_s, s->model.train_flops_per_sample, g->peak_flops * g->efficiency,
                                x);
    }
}

double scn_batch_time(const scn_scenario *s, const scn_group *g, int n)
{
    if (!s || !g || n < 1)
        return 0;
    return scn_batch_cost(s, g, (double)n, 1);
}
