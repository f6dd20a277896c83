/* presets.c: `preset: NAME` expansion on the YAML tree (presets.h), from
 * sim/input/presets.yaml compiled in (dpsim_builtin_presets). */
#include "presets.h"

#include <string.h>

extern const char dpsim_builtin_presets[];
extern const size_t dpsim_builtin_presets_len;

/* The origin values a preset filled in carry in messages (instead of a
 * FILE:LINE:COLUMN of the scenario). */
static const char preset_origin[] = "a preset's value (dpsim presets)";

static yt_doc *presets_doc(dp_err *err)
{
    yt_doc *d = yt_parse("<presets>", dpsim_builtin_presets, dpsim_builtin_presets_len, err);
    if (d && (!yt_root(d) || yt_root(d)->kind != YT_MAP)) {
        yt_free(d);
        dp_err_set(err, DP_ERUN, "<presets>: not a mapping (build error)");
        return NULL;
    }
    return d;
}

/* Drop key i of map m (its `preset`). */
static void map_drop(yt_node *m, size_t i)
{
    memmove(&m->keys[i], &m->keys[i + 1], (m->n - i - 1) * sizeof *m->keys);
    memmove(&m->items[i], &m->items[i + 1], (m->n - i - 1) * sizeof *m->items);
    m->n--;
}

/* What `check` says a preset filled in (scn_preset_notes). */
static void note(scn_preset_notes *nt, const char *line)
{
    nt->n_all++;
    if (nt->n < SCN_PRESET_NOTES_MAX && (nt->line[nt->n] = dp_strdup(line)))
        nt->n++;
}

void scn_preset_notes_free(scn_preset_notes *nt)
{
    for (size_t i = 0; nt && i < nt->n; i++)
        dp_free(nt->line[i]);
    if (nt)
        *nt = (scn_preset_notes){0};
}

/* Append "text" to buf (capacity cap), cut to fit. */
static void cat(char *buf, size_t cap, const char *text)
{
    size_t n = strlen(buf);
    if (n + 1 < cap)
        snprintf(buf + n, cap - n, "%s", text);
}

/* Expand the `preset` of map m (at dotted path `path` in doc) from section
 * `sect` of the presets; 0 when m has none. */
static int expand_one(yt_doc *doc, yt_node *m, const char *path, const char *label, const yt_node *sect,
                      const char *what, const char *file, int *used, scn_preset_notes *nt, dp_err *err)
{
    if (!m || m->kind != YT_MAP)
        return 0;
    size_t at = m->n;
    for (size_t i = 0; i < m->n; i++)
        if (yt_key_is(m->keys[i]->text, "preset"))
            at = i;
    if (at == m->n)
        return 0;
    const yt_node *v = m->items[at];
    if (v->kind != YT_SCALAR || !v->text[0])
        return dp_err_set(err, DP_EINPUT, "%s:%d:%d: %s.preset: must be a %s preset's name (dpsim presets)",
                          file, v->line, v->column, label, what);
    const yt_node *p = yt_get(sect, v->text);
    if (!p || p->kind != YT_MAP) {
        const char *names[256];
        size_t n = sect->n < 256 ? sect->n : 256;
        for (size_t i = 0; i < n; i++)
            names[i] = sect->keys[i]->text;
        const char *near = yt_nearest(v->text, names, n);
        char ev[128];
        return dp_err_set(err, DP_EINPUT,
                          "%s:%d:%d: %s.preset: unknown %s preset%s%s%s (got '%s'; dpsim presets lists them)",
                          file, v->line, v->column, label, what, near ? ", did you mean '" : "",
                          near ? near : "", near ? "'?" : "", dp_esc(ev, sizeof ev, v->text));
    }
    map_drop(m, at);
    /* "devices[0] (dc): a100-80gb: kind gpu, memory 80GB, ...; own: efficiency" */
    char line[1024], own[256] = "";
    const yt_node *name = yt_get(m, "name");
    snprintf(line, sizeof line, "%s%s%s%s: %s:", label, name && name->kind == YT_SCALAR ? " (" : "",
             name && name->kind == YT_SCALAR ? name->text : "", name && name->kind == YT_SCALAR ? ")" : "",
             v->text);
    for (size_t i = 0; i < p->n; i++) {
        const char *key = p->keys[i]->text;
        if (yt_key_is(key, "source"))
            continue;
        int mine = yt_get(m, key) != NULL;
        cat(mine ? own : line, mine ? sizeof own : sizeof line, mine && own[0] ? ", " : " ");
        cat(mine ? own : line, mine ? sizeof own : sizeof line, key);
        if (!mine) {
            cat(line, sizeof line, " ");
            cat(line, sizeof line, p->items[i]->kind == YT_SCALAR ? p->items[i]->text : "(list)");
            cat(line, sizeof line, ",");
        }
    }
    size_t ll = strlen(line);
    if (ll && line[ll - 1] == ',')
        line[ll - 1] = '\0';
    if (own[0]) {
        cat(line, sizeof line, "; the scenario's own:");
        cat(line, sizeof line, own);
    }
    note(nt, line);
    for (size_t i = 0; i < p->n; i++) {
        const char *key = p->keys[i]->text;
        if (yt_key_is(key, "source") || yt_get(m, key))
            continue; /* the scenario's own value wins */
        char kp[512];
        snprintf(kp, sizeof kp, "%s.%s", path, key);
        int r = yt_override(doc, kp, p->items[i]->text, err);
        if (r)
            return r;
        yt_node *made = (yt_node *)yt_find(doc, kp);
        if (made)
            made->origin = preset_origin;
    }
    (*used)++;
    return 0;
}

int scn_presets_expand(yt_doc *doc, const char *file, int *used, scn_preset_notes *notes, dp_err *err)
{
    *used = 0;
    yt_node *root = yt_root(doc);
    if (!root || root->kind != YT_MAP)
        return 0;
    /* Cheap test first: no scenario without `preset` pays for parsing them. */
    int any = 0;
    yt_node *devs = yt_get(root, "devices");
    yt_node *model = yt_get(root, "model");
    yt_node *wan = yt_get(root, "wan");
    if (model && model->kind == YT_MAP && yt_get(model, "preset"))
        any = 1;
    for (size_t i = 0; !any && wan && wan->kind == YT_SEQ && i < wan->n; i++)
        any = wan->items[i]->kind == YT_MAP && yt_get(wan->items[i], "preset");
    for (size_t i = 0; !any && devs && devs->kind == YT_SEQ && i < devs->n; i++) {
        yt_node *it = devs->items[i];
        if (it->kind == YT_MAP && (yt_get(it, "preset") || yt_get(yt_get(it, "link"), "preset")))
            any = 1;
    }
    if (!any)
        return 0;
    yt_doc *pd = presets_doc(err);
    if (!pd)
        return err ? err->code : DP_ERUN;
    const yt_node *pr = yt_root(pd);
    const yt_node *pdev = yt_get(pr, "devices"), *pmod = yt_get(pr, "models"), *plink = yt_get(pr, "links");
    const yt_node *pwan = yt_get(pr, "wan");
    int r = expand_one(doc, model, "model", "model", pmod, "model", file, used, notes, err);
    for (size_t i = 0; r == 0 && devs && devs->kind == YT_SEQ && i < devs->n; i++) {
        char path[64], label[64];
        snprintf(path, sizeof path, "devices.%zu", i);
        snprintf(label, sizeof label, "devices[%zu]", i);
        r = expand_one(doc, devs->items[i], path, label, pdev, "device", file, used, notes, err);
        if (r == 0 && devs->items[i]->kind == YT_MAP) {
            snprintf(path, sizeof path, "devices.%zu.link", i);
            snprintf(label, sizeof label, "devices[%zu].link", i);
            r = expand_one(doc, yt_get(devs->items[i], "link"), path, label, plink, "link", file, used, notes,
                           err);
        }
    }
    for (size_t i = 0; r == 0 && wan && wan->kind == YT_SEQ && i < wan->n; i++) {
        char path[64], label[64];
        snprintf(path, sizeof path, "wan.%zu", i);
        snprintf(label, sizeof label, "wan[%zu]", i);
        r = expand_one(doc, wan->items[i], path, label, pwan, "WAN", file, used, notes, err);
    }
    yt_free(pd);
    return r;
}

/* ---- writing the tree back as YAML ------------------------------------------- */

typedef struct sbuf {
    char *p;
    size_t len, cap;
    int oom;
} sbuf;

static void put(sbuf *b, const char *s, size_t n)
{
    if (b->oom)
        return;
    if (b->len + n + 1 > b->cap) {
        size_t cap = b->cap ? b->cap * 2 : 4096;
        while (cap < b->len + n + 1)
            cap *= 2;
        char *q = dp_realloc(b->p, cap);
        if (!q) {
            b->oom = 1;
            return;
        }
        b->p = q;
        b->cap = cap;
    }
    memcpy(b->p + b->len, s, n);
    b->len += n;
    b->p[b->len] = '\0';
}

static void puts_(sbuf *b, const char *s)
{
    put(b, s, strlen(s));
}

/* A scalar: plain when it is made of characters no YAML context reads
 * otherwise (so `~`, numbers and unit quantities stay plain), else
 * double-quoted with escapes. */
static void put_scalar(sbuf *b, const yt_node *n)
{
    const char *t = n->text;
    int plain = n->plain && t[0] != '\0' && t[0] != '-' && t[0] != '&' && t[0] != '*' && t[0] != '!';
    for (const char *p = t; plain && *p; p++)
        plain = (*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') || (*p >= '0' && *p <= '9') ||
                strchr("._+-/~()%", *p);
    if (plain || (n->plain && !t[0])) {
        puts_(b, t[0] ? t : "~");
        return;
    }
    put(b, "\"", 1);
    for (const unsigned char *p = (const unsigned char *)t; *p; p++) {
        char e[8];
        if (*p == '"' || *p == '\\')
            snprintf(e, sizeof e, "\\%c", *p);
        else if (*p < 0x20 || *p == 0x7f)
            snprintf(e, sizeof e, "\\x%02x", *p);
        else
            snprintf(e, sizeof e, "%c", *p);
        puts_(b, e);
    }
    put(b, "\"", 1);
}

static void put_node(sbuf *b, const yt_node *n)
{
    if (n->kind == YT_SCALAR) {
        put_scalar(b, n);
        return;
    }
    put(b, n->kind == YT_MAP ? "{" : "[", 1);
    for (size_t i = 0; i < n->n; i++) {
        if (i)
            put(b, ", ", 2);
        if (n->kind == YT_MAP) {
            put_scalar(b, n->keys[i]);
            put(b, ": ", 2);
        }
        put_node(b, n->items[i]);
    }
    put(b, n->kind == YT_MAP ? "}" : "]", 1);
}

char *scn_presets_emit(const yt_doc *doc)
{
    sbuf b = {0};
    const yt_node *root = yt_root(doc);
    puts_(&b, "# written out by dpsim with its presets expanded\n");
    for (size_t i = 0; root && root->kind == YT_MAP && i < root->n; i++) {
        put_scalar(&b, root->keys[i]);
        put(&b, ": ", 2);
        put_node(&b, root->items[i]);
        put(&b, "\n", 1);
    }
    if (b.oom) {
        dp_free(b.p);
        return NULL;
    }
    return b.p;
}

/* ---- dpsim presets --------------------------------------------------------- */

void scn_presets_print(FILE *out)
{
    dp_err e = {0};
    yt_doc *pd = presets_doc(&e);
    if (!pd) {
        fprintf(out, "dpsim: %s\n", e.msg);
        return;
    }
    static const char *const sections[][2] = {{"devices", "devices[].preset"},
                                              {"models", "model.preset"},
                                              {"links", "devices[].link.preset"},
                                              {"wan", "wan[].preset, with the scenario's own bandwidth"}};
    for (size_t s = 0; s < sizeof sections / sizeof sections[0]; s++) {
        const yt_node *sect = yt_get(yt_root(pd), sections[s][0]);
        fprintf(out, "%s%s (%s):\n", s ? "\n" : "", sections[s][0], sections[s][1]);
        for (size_t i = 0; sect && sect->kind == YT_MAP && i < sect->n; i++) {
            const yt_node *p = sect->items[i];
            fprintf(out, "  %-16s", sect->keys[i]->text);
            for (size_t k = 0; p->kind == YT_MAP && k < p->n; k++)
                if (!yt_key_is(p->keys[k]->text, "source") && p->items[k]->kind == YT_SCALAR)
                    fprintf(out, " %s %s", p->keys[k]->text, p->items[k]->text);
            const yt_node *src = yt_get(p, "source");
            fprintf(out, "\n  %-16s  source: %s\n", "", src && src->kind == YT_SCALAR ? src->text : "(none)");
        }
    }
    yt_free(pd);
}
