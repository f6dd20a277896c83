/* yamltree.c: libyaml events -> a tree of nodes with positions; overrides.
 *
 * Why a tree of our own rather than libyaml's document API: we need the
 * position of every node after overrides have edited the tree, an origin
 * for nodes an override made, aliases expanded under a node budget, and all
 * memory through dp_malloc so leaks show in dp_alloc_live().
 *
 * Aliases are expanded by copying the anchored node; each copy counts
 * against YT_MAX_NODES, so a "billion laughs" document stops after four
 * million nodes (100,000 device groups written out need about 1.7 million) with an error instead of
 * exhausting memory.  An alias to an anchor whose node is still open (a node containing its own alias) is an
 * error: YAML allows such cycles, a scenario never needs them.
 */
#include "yamltree.h"

#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <yaml.h>

struct yt_doc {
    yt_node *root;
    size_t n_nodes;
    char **strings; /* origins of overrides, owned here */
    size_t n_strings;
};

typedef struct anchor {
    char *name;
    yt_node *node;
    int done;
} anchor;

typedef struct pctx {
    yaml_parser_t p;
    const char *name;
    const char *text;
    size_t len;
    dp_err *err;
    yt_doc *doc;
    anchor *anc;
    size_t n_anc, cap_anc;
    const char *path; /* key path of what is being read, for messages ("" at the top) */
} pctx;

/* "PATH: " for messages, or "" at the top level (the style of scenario.c's
 * messages: FILE:LINE:COL: key.path: what is wrong (got VALUE)). */
#define PATH_FMT       "%s%s"
#define PATH_ARG(path) (path), (path)[0] ? ": " : ""

static void node_free(yt_node *n)
{
    if (!n)
        return;
    for (size_t i = 0; i < n->n; i++) {
        if (n->keys)
            node_free(n->keys[i]);
        node_free(n->items[i]);
    }
    dp_free(n->keys);
    dp_free(n->items);
    dp_free(n->text);
    dp_free(n);
}

static yt_node *node_new(yt_doc *d, yt_kind kind, int line, int column, dp_err *err, const char *where)
{
    if (d->n_nodes >= YT_MAX_NODES) {
        dp_err_set(err, DP_EINPUT, "%s:%d:%d: document has more than %d nodes (aliases count once per use)",
                   where, line, column, YT_MAX_NODES);
        return NULL;
    }
    yt_node *n = dp_calloc(1, sizeof *n);
    if (!n) {
        dp_err_set(err, DP_ENOMEM, "out of memory reading %s", where);
        return NULL;
    }
    d->n_nodes++;
    n->kind = kind;
    n->line = line;
    n->column = column;
    return n;
}

/* Append a child (and its key for maps); on failure frees neither.  The
 * arrays double when full: one realloc per element made a 100k-item list
 * quadratic in copying (150 s and 1.5 GB under ASan). */
static int node_push(yt_node *parent, yt_node *key, yt_node *item)
{
    if (parent->n == parent->cap) {
        size_t cap = parent->cap ? 2 * parent->cap : 4;
        yt_node **items = dp_realloc(parent->items, cap * sizeof *items);
        if (!items)
            return DP_ENOMEM;
        parent->items = items;
        if (parent->kind == YT_MAP) {
            yt_node **keys = dp_realloc(parent->keys, cap * sizeof *keys);
            if (!keys)
                return DP_ENOMEM; /* items grew, keys did not: cap stays, so both retry */
            parent->keys = keys;
        }
        parent->cap = cap;
    }
    if (parent->kind == YT_MAP)
        parent->keys[parent->n] = key;
    parent->items[parent->n] = item;
    parent->n++;
    return 0;
}

static yt_node *node_copy(yt_doc *d, const yt_node *s, dp_err *err, const char *where)
{
    yt_node *n = node_new(d, s->kind, s->line, s->column, err, where);
    if (!n)
        return NULL;
    n->origin = s->origin;
    n->plain = s->plain;
    if (s->text && !(n->text = dp_strdup(s->text)))
        goto oom;
    for (size_t i = 0; i < s->n; i++) {
        yt_node *k = NULL, *v;
        if (s->kind == YT_MAP && !(k = node_copy(d, s->keys[i], err, where)))
            goto fail;
        if (!(v = node_copy(d, s->items[i], err, where))) {
            node_free(k);
            goto fail;
        }
        if (node_push(n, k, v)) {
            node_free(k);
            node_free(v);
            goto oom;
        }
    }
    return n;
oom:
    dp_err_set(err, DP_ENOMEM, "out of memory reading %s", where);
fail:
    node_free(n);
    return NULL;
}

/* Line and column (1-based) of a byte offset, for reader errors that only
 * carry an offset. */
static void offset_pos(const char *text, size_t len, size_t off, size_t *line, size_t *col)
{
    *line = 1;
    *col = 1;
    for (size_t i = 0; i < off && i < len; i++) {
        if (text[i] == '\n') {
            (*line)++;
            *col = 1;
        } else {
            (*col)++;
        }
    }
}

static int syntax_error(pctx *c)
{
    yaml_parser_t *p = &c->p;
    const char *problem = p->problem ? p->problem : "malformed YAML";
    size_t line = p->problem_mark.line + 1, col = p->problem_mark.column + 1;
    if (p->error == YAML_MEMORY_ERROR)
        return dp_err_set(c->err, DP_ENOMEM, "%s: out of memory parsing YAML", c->name);
    if (p->error == YAML_READER_ERROR) {
        offset_pos(c->text, c->len, p->problem_offset, &line, &col);
        return dp_err_set(c->err, DP_EINPUT,
                          "%s:%zu:%zu: " PATH_FMT "YAML syntax error: %s (got byte 0x%02x)", c->name, line,
                          col, PATH_ARG(c->path), problem, (unsigned)(p->problem_value & 0xff));
    }
    if (p->context)
        return dp_err_set(c->err, DP_EINPUT, "%s:%zu:%zu: " PATH_FMT "YAML syntax error: %s (%s at line %zu)",
                          c->name, line, col, PATH_ARG(c->path), problem, p->context,
                          (size_t)p->context_mark.line + 1);
    return dp_err_set(c->err, DP_EINPUT, "%s:%zu:%zu: " PATH_FMT "YAML syntax error: %s", c->name, line, col,
                      PATH_ARG(c->path), problem);
}

static int next_event(pctx *c, yaml_event_t *ev)
{
    if (!yaml_parser_parse(&c->p, ev))
        return syntax_error(c);
    return 0;
}

static int add_anchor(pctx *c, const char *name, yt_node *node)
{
    if (c->n_anc == c->cap_anc) {
        size_t cap = c->cap_anc ? 2 * c->cap_anc : 8;
        anchor *a = dp_realloc(c->anc, cap * sizeof *a);
        if (!a)
            return DP_ENOMEM;
        c->anc = a;
        c->cap_anc = cap;
    }
    char *nm = dp_strdup(name);
    if (!nm)
        return DP_ENOMEM;
    c->anc[c->n_anc++] = (anchor){nm, node, 0};
    return 0;
}

static anchor *find_anchor(pctx *c, const char *name)
{
    for (size_t i = c->n_anc; i-- > 0;)
        if (strcmp(c->anc[i].name, name) == 0)
            return &c->anc[i];
    return NULL;
}

static void mark_done(pctx *c, const yt_node *n)
{
    for (size_t i = c->n_anc; i-- > 0;)
        if (c->anc[i].node == n)
            c->anc[i].done = 1;
}

/* "path.key" (key cut to 200 bytes) or, with key NULL, "path[i]", cut to
 * fit buf.  Built by hand: snprintf here, once per node, was a tenth of
 * parsing a 100,000-group scenario. */
static void child_path(char *buf, size_t len, const char *path, const char *key, size_t i)
{
    char idx[32];
    size_t lp = strlen(path), k = 0;
    if (!key) {
        int w = snprintf(idx, sizeof idx, "[%zu]", i);
        key = idx;
        (void)w;
    } else if (lp) {
        if (lp > len - 2)
            lp = len - 2;
        memcpy(buf, path, lp);
        buf[lp] = '.';
        k = lp + 1;
        lp = 0;
    }
    if (lp) {
        if (lp > len - 1)
            lp = len - 1;
        memcpy(buf, path, lp);
        k = lp;
    }
    size_t lk = strnlen(key, 200);
    if (lk > len - 1 - k)
        lk = len - 1 - k;
    memcpy(buf + k, key, lk);
    buf[k + lk] = '\0';
}

/* Build the node that starts with *ev (consumed here). */
static yt_node *parse_node(pctx *c, yaml_event_t *ev, int depth, const char *path)
{
    int line = (int)ev->start_mark.line + 1, col = (int)ev->start_mark.column + 1;
    yt_node *n = NULL;
    const char *anchor_name = NULL;
    if (depth > YT_MAX_DEPTH) {
        dp_err_set(c->err, DP_EINPUT, "%s:%d:%d: " PATH_FMT "nesting deeper than %d levels (got %d)", c->name,
                   line, col, PATH_ARG(path), YT_MAX_DEPTH, depth);
        yaml_event_delete(ev);
        return NULL;
    }
    switch (ev->type) {
    case YAML_ALIAS_EVENT: {
        const char *an = (const char *)ev->data.alias.anchor;
        anchor *a = find_anchor(c, an);
        if (!a)
            dp_err_set(c->err, DP_EINPUT, "%s:%d:%d: " PATH_FMT "unknown alias (got '*%.60s')", c->name, line,
                       col, PATH_ARG(path), an);
        else if (!a->done)
            dp_err_set(c->err, DP_EINPUT,
                       "%s:%d:%d: " PATH_FMT "alias refers to a node that contains it (got '*%.60s')",
                       c->name, line, col, PATH_ARG(path), an);
        else
            n = node_copy(c->doc, a->node, c->err, c->name);
        yaml_event_delete(ev);
        return n;
    }
    case YAML_SCALAR_EVENT: {
        size_t len = ev->data.scalar.length;
        const char *v = (const char *)ev->data.scalar.value;
        if (len && memchr(v, '\0', len)) {
            dp_err_set(c->err, DP_EINPUT,
                       "%s:%d:%d: " PATH_FMT "NUL character in a value (got '%.40s\\0...')", c->name, line,
                       col, PATH_ARG(path), v);
            break;
        }
        if (!(n = node_new(c->doc, YT_SCALAR, line, col, c->err, c->name)))
            break;
        n->plain = ev->data.scalar.style == YAML_PLAIN_SCALAR_STYLE;
        if (!(n->text = dp_malloc(len + 1))) {
            dp_err_set(c->err, DP_ENOMEM, "out of memory reading %s", c->name);
            node_free(n);
            n = NULL;
            break;
        }
        memcpy(n->text, v, len);
        n->text[len] = '\0';
        anchor_name = (const char *)ev->data.scalar.anchor;
        if (anchor_name && add_anchor(c, anchor_name, n)) {
            dp_err_set(c->err, DP_ENOMEM, "out of memory reading %s", c->name);
            node_free(n);
            n = NULL;
            break;
        }
        mark_done(c, n);
        break;
    }
    case YAML_SEQUENCE_START_EVENT:
    case YAML_MAPPING_START_EVENT: {
        int is_map = ev->type == YAML_MAPPING_START_EVENT;
        anchor_name = (const char *)(is_map ? ev->data.mapping_start.anchor : ev->data.sequence_start.anchor);
        if (!(n = node_new(c->doc, is_map ? YT_MAP : YT_SEQ, line, col, c->err, c->name)))
            break;
        if (anchor_name && add_anchor(c, anchor_name, n)) {
            dp_err_set(c->err, DP_ENOMEM, "out of memory reading %s", c->name);
            node_free(n);
            n = NULL;
            break;
        }
        yaml_event_delete(ev);
        /* Each iteration consumes at least one event, and libyaml stops at
         * the end of its input, so this loop is bounded. */
        for (size_t i = 0;; i++) {
            yaml_event_t e;
            char child[300];
            c->path = path;
            if (next_event(c, &e))
                goto fail;
            if (e.type == YAML_SEQUENCE_END_EVENT || e.type == YAML_MAPPING_END_EVENT) {
                yaml_event_delete(&e);
                break;
            }
            yt_node *key = NULL, *val;
            if (is_map) {
                if (!(key = parse_node(c, &e, depth + 1, path)))
                    goto fail;
                if (key->kind != YT_SCALAR) {
                    dp_err_set(c->err, DP_EINPUT,
                               "%s:%d:%d: " PATH_FMT "a mapping key must be a plain value (got %s)", c->name,
                               key->line, key->column, PATH_ARG(path),
                               key->kind == YT_MAP ? "a mapping" : "a list");
                    node_free(key);
                    goto fail;
                }
                child_path(child, sizeof child, path, key->text, 0);
                c->path = child;
                if (next_event(c, &e)) {
                    node_free(key);
                    goto fail;
                }
            } else {
                child_path(child, sizeof child, path, NULL, i);
            }
            if (!(val = parse_node(c, &e, depth + 1, child))) {
                node_free(key);
                goto fail;
            }
            if (node_push(n, key, val)) {
                node_free(key);
                node_free(val);
                dp_err_set(c->err, DP_ENOMEM, "out of memory reading %s", c->name);
                goto fail;
            }
        }
        mark_done(c, n);
        return n;
    fail:
        /* Anchors pointing into the freed subtree must not be used again;
         * parsing stops at the first error, so nothing looks them up. */
        node_free(n);
        return NULL;
    }
    default:
        dp_err_set(c->err, DP_EINPUT, "%s:%d:%d: " PATH_FMT "unexpected YAML event (got type %d)", c->name,
                   line, col, PATH_ARG(path), (int)ev->type);
        break;
    }
    yaml_event_delete(ev);
    return n;
}

yt_doc *yt_parse(const char *name, const char *text, size_t len, dp_err *err)
{
    pctx c;
    memset(&c, 0, sizeof c);
    c.name = name ? name : "<input>";
    c.path = "";
    c.text = text;
    c.len = len;
    c.err = err;
    yt_doc *d = dp_calloc(1, sizeof *d);
    if (!d) {
        dp_err_set(err, DP_ENOMEM, "out of memory reading %s", c.name);
        return NULL;
    }
    c.doc = d;
    if (!yaml_parser_initialize(&c.p)) {
        dp_free(d);
        dp_err_set(err, DP_ENOMEM, "out of memory reading %s", c.name);
        return NULL;
    }
    yaml_parser_set_input_string(&c.p, (const unsigned char *)(text ? text : ""), text ? len : 0);
    yaml_event_t ev;
    int docs = 0, ok = 0;
    for (;;) {
        c.path = ""; /* not a finished node's path buffer */
        if (next_event(&c, &ev))
            break;
        if (ev.type == YAML_STREAM_END_EVENT) {
            yaml_event_delete(&ev);
            ok = 1;
            break;
        }
        if (ev.type == YAML_STREAM_START_EVENT || ev.type == YAML_DOCUMENT_END_EVENT) {
            yaml_event_delete(&ev);
            continue;
        }
        if (ev.type == YAML_DOCUMENT_START_EVENT) {
            int line = (int)ev.start_mark.line + 1, col = (int)ev.start_mark.column + 1;
            yaml_event_delete(&ev);
            if (++docs > 1) {
                dp_err_set(err, DP_EINPUT,
                           "%s:%d:%d: more than one YAML document (a scenario is one) (got %d)", c.name, line,
                           col, docs);
                break;
            }
            continue;
        }
        /* The document's root node. */
        if (!(d->root = parse_node(&c, &ev, 0, "")))
            break;
    }
    for (size_t i = 0; i < c.n_anc; i++)
        dp_free(c.anc[i].name);
    dp_free(c.anc);
    yaml_parser_delete(&c.p);
    if (!ok) {
        yt_free(d);
        return NULL;
    }
    /* A document that is only `---` or `~` is as empty as no document. */
    if (d->root && d->root->kind == YT_SCALAR && yt_is_null(d->root)) {
        node_free(d->root);
        d->root = NULL;
    }
    return d;
}

void yt_free(yt_doc *d)
{
    if (!d)
        return;
    node_free(d->root);
    for (size_t i = 0; i < d->n_strings; i++)
        dp_free(d->strings[i]);
    dp_free(d->strings);
    dp_free(d);
}

yt_node *yt_root(const yt_doc *d)
{
    return d ? d->root : NULL;
}

/* The index of `key` in map m, or -1 (not a map, or no such key).  Last
 * wins, as in most YAML loaders; the scenario loader reports duplicates
 * before it looks anything up. */
static ptrdiff_t find_key(const yt_node *m, const char *key)
{
    if (!m || m->kind != YT_MAP)
        return -1;
    for (size_t i = m->n; i-- > 0;)
        if (strcmp(m->keys[i]->text, key) == 0)
            return (ptrdiff_t)i;
    return -1;
}

yt_node *yt_get(const yt_node *m, const char *key)
{
    ptrdiff_t i = find_key(m, key);
    return i < 0 ? NULL : m->items[i];
}

yt_node *yt_get_key(const yt_node *m, const char *key)
{
    ptrdiff_t i = find_key(m, key);
    return i < 0 ? NULL : m->keys[i];
}

int yt_is_null(const yt_node *n)
{
    if (!n)
        return 1;
    if (n->kind != YT_SCALAR || !n->plain)
        return 0;
    return n->text[0] == '\0' || strcmp(n->text, "~") == 0 || strcmp(n->text, "null") == 0 ||
           strcmp(n->text, "Null") == 0 || strcmp(n->text, "NULL") == 0;
}

/* ---- overrides --------------------------------------------------------- */

static void set_origin(yt_node *n, const char *origin)
{
    n->origin = origin;
    n->line = n->column = 0;
    for (size_t i = 0; i < n->n; i++) {
        if (n->keys)
            set_origin(n->keys[i], origin);
        set_origin(n->items[i], origin);
    }
}

static size_t count_nodes(const yt_node *n)
{
    size_t k = 1;
    for (size_t i = 0; i < n->n; i++)
        k += (n->keys ? count_nodes(n->keys[i]) : 0) + count_nodes(n->items[i]);
    return k;
}

/* The name an item of a sequence is addressed by: `name`, a plain scalar
 * item itself (`sites: [a, b]`), or "A-B" from `between`. */
static int item_matches(const yt_node *it, const char *seg)
{
    if (it->kind == YT_SCALAR)
        return strcmp(it->text, seg) == 0;
    const yt_node *nm = yt_get(it, "name");
    if (nm && nm->kind == YT_SCALAR && strcmp(nm->text, seg) == 0)
        return 1;
    const yt_node *bw = yt_get(it, "between");
    if (bw && bw->kind == YT_SEQ && bw->n == 2 && bw->items[0]->kind == YT_SCALAR &&
        bw->items[1]->kind == YT_SCALAR) {
        const char *a = bw->items[0]->text, *b = bw->items[1]->text;
        size_t la = strlen(a), lb = strlen(b), ls = strlen(seg);
        if (ls == la + lb + 1) {
            if (strncmp(seg, a, la) == 0 && seg[la] == '-' && strcmp(seg + la + 1, b) == 0)
                return 1;
            if (strncmp(seg, b, lb) == 0 && seg[lb] == '-' && strcmp(seg + lb + 1, a) == 0)
                return 1;
        }
    }
    return 0;
}

static void item_label(const yt_node *it, size_t idx, char *buf, size_t len)
{
    if (it->kind == YT_SCALAR) {
        snprintf(buf, len, "%s", it->text);
        return;
    }
    const yt_node *nm = yt_get(it, "name");
    if (nm && nm->kind == YT_SCALAR) {
        snprintf(buf, len, "%s", nm->text);
        return;
    }
    const yt_node *bw = yt_get(it, "between");
    if (bw && bw->kind == YT_SEQ && bw->n == 2 && bw->items[0]->kind == YT_SCALAR &&
        bw->items[1]->kind == YT_SCALAR) {
        snprintf(buf, len, "%s-%s", bw->items[0]->text, bw->items[1]->text);
        return;
    }
    snprintf(buf, len, "%zu", idx);
}

static long seq_find(const yt_node *seq, const char *seg)
{
    size_t i;
    for (i = 0; seg[i] >= '0' && seg[i] <= '9'; i++)
        ;
    if (i > 0 && seg[i] == '\0' && i < 10) {
        long k = strtol(seg, NULL, 10);
        return (size_t)k < seq->n ? k : -1;
    }
    for (i = 0; i < seq->n; i++)
        if (item_matches(seq->items[i], seg))
            return (long)i;
    return -1;
}

static int seq_missing(dp_err *err, const char *key, const char *parent, const yt_node *seq, const char *seg)
{
    const char *what = strcmp(parent, "devices") == 0 ? "device"
                       : strcmp(parent, "sites") == 0 ? "site"
                       : strcmp(parent, "wan") == 0   ? "wan link"
                                                      : "item";
    char have[400] = "";
    size_t used = 0;
    for (size_t i = 0; i < seq->n; i++) {
        char lab[100];
        item_label(seq->items[i], i, lab, sizeof lab);
        int w = snprintf(have + used, sizeof have - used, "%s%s", i ? ", " : "", lab);
        if (w < 0 || (size_t)w >= sizeof have - used) {
            snprintf(have + (sizeof have - 5), 5, "...");
            break;
        }
        used += (size_t)w;
    }
    return dp_err_set(err, DP_EINPUT, "override '%s': no %s named '%s' (have: %s)", key, what, seg,
                      seq->n ? have : "none");
}

static yt_node *scalar_key(yt_doc *d, const char *text, const char *origin)
{
    yt_node *k = node_new(d, YT_SCALAR, 0, 0, NULL, "override");
    if (!k)
        return NULL;
    k->origin = origin;
    k->plain = 1;
    if (!(k->text = dp_strdup(text))) {
        node_free(k);
        d->n_nodes--;
        return NULL;
    }
    return k;
}

int yt_override(yt_doc *d, const char *key, const char *value, dp_err *err)
{
    if (!d || !key || !value)
        return dp_err_set(err, DP_EINPUT, "override: missing key or value");
    size_t klen = strlen(key);
    if (klen == 0 || klen > 256)
        return dp_err_set(err, DP_EINPUT, "override '%.60s': key must be 1 to 256 characters", key);
    if (key[0] == '.' || key[klen - 1] == '.' || strstr(key, ".."))
        return dp_err_set(err, DP_EINPUT, "override '%s': empty part in key path", key);
    if (!d->root || d->root->kind != YT_MAP)
        return dp_err_set(err, DP_EINPUT, "override '%s': the scenario is not a mapping", key);

    /* The origin string lives as long as the document. */
    size_t olen = strlen("override =") + klen + strlen(value) + 1;
    char *origin = dp_malloc(olen);
    char **strs = origin ? dp_realloc(d->strings, (d->n_strings + 1) * sizeof *strs) : NULL;
    if (!strs) {
        dp_free(origin);
        return dp_err_set(err, DP_ENOMEM, "out of memory applying override '%s'", key);
    }
    d->strings = strs;
    snprintf(origin, olen, "override %s=%s", key, value);
    d->strings[d->n_strings++] = origin;

    /* VALUE as YAML, so `[[1, 0.02], [64, 0.4]]` and `{file: x}` work. */
    dp_err perr;
    yt_doc *vd = yt_parse(origin, value, strlen(value), &perr);
    if (!vd)
        return dp_err_set(err, perr.code, "%s", perr.msg);
    yt_node *val = vd->root;
    vd->root = NULL;
    yt_free(vd);
    if (!val) {
        val = scalar_key(d, "", origin);
        if (!val)
            return dp_err_set(err, DP_ENOMEM, "out of memory applying override '%s'", key);
    } else {
        d->n_nodes += count_nodes(val);
    }
    set_origin(val, origin);

    char segbuf[257];
    memcpy(segbuf, key, klen + 1);
    yt_node *cur = d->root;
    const char *parent = "";
    char path[300] = "";
    char *seg = segbuf;
    int rc = 0;
    for (;;) {
        char *dot = strchr(seg, '.');
        int last = dot == NULL;
        if (dot)
            *dot = '\0';
        if (cur->kind == YT_SEQ) {
            long i = seq_find(cur, seg);
            if (i < 0) {
                rc = seq_missing(err, key, parent, cur, seg);
                break;
            }
            if (last) {
                node_free(cur->items[i]);
                cur->items[i] = val;
                val = NULL;
                break;
            }
            cur = cur->items[i];
        } else if (cur->kind == YT_MAP) {
            size_t i;
            for (i = cur->n; i-- > 0;)
                if (strcmp(cur->keys[i]->text, seg) == 0)
                    break;
            if (i == (size_t)-1 && !last && cur == d->root &&
                (strcmp(seg, "devices") == 0 || strcmp(seg, "wan") == 0 || strcmp(seg, "sites") == 0)) {
                /* A list addressed by item name: an absent list has no items. */
                yt_node empty = {.kind = YT_SEQ};
                char *nx = dot + 1, *nd = strchr(nx, '.');
                if (nd)
                    *nd = '\0';
                rc = seq_missing(err, key, seg, &empty, nx);
                break;
            }
            if (i == (size_t)-1) {
                /* Absent: create it (the loader checks it is a known key). */
                yt_node *k = scalar_key(d, seg, origin);
                yt_node *v = last ? val : node_new(d, YT_MAP, 0, 0, NULL, "override");
                if (v && !last)
                    v->origin = origin;
                if (!k || !v || node_push(cur, k, v)) {
                    node_free(k);
                    if (!last)
                        node_free(v);
                    rc = dp_err_set(err, DP_ENOMEM, "out of memory applying override '%s'", key);
                    break;
                }
                if (last) {
                    val = NULL;
                    break;
                }
                cur = v;
            } else if (last) {
                node_free(cur->items[i]);
                cur->items[i] = val;
                val = NULL;
                break;
            } else {
                if (yt_is_null(cur->items[i])) {
                    /* `policies:` with nothing under it: becomes a map. */
                    yt_node *v = node_new(d, YT_MAP, 0, 0, NULL, "override");
                    if (!v) {
                        rc = dp_err_set(err, DP_ENOMEM, "out of memory applying override '%s'", key);
                        break;
                    }
                    v->origin = origin;
                    node_free(cur->items[i]);
                    cur->items[i] = v;
                }
                cur = cur->items[i];
            }
        } else {
            rc = dp_err_set(err, DP_EINPUT, "override '%s': '%s' is a single value and has no key '%s'", key,
                            path, seg);
            break;
        }
        size_t pl = strlen(path);
        snprintf(path + pl, sizeof path - pl, "%s%s", pl ? "." : "", seg);
        parent = seg;
        seg = dot + 1;
    }
    node_free(val);
    return rc;
}

const yt_node *yt_find(const yt_doc *d, const char *key)
{
    if (!d || !d->root || !key)
        return NULL;
    char segbuf[257];
    size_t klen = strlen(key);
    if (klen == 0 || klen >= sizeof segbuf)
        return NULL;
    memcpy(segbuf, key, klen + 1);
    const yt_node *cur = d->root;
    char *seg = segbuf;
    for (;;) {
        char *dot = strchr(seg, '.');
        if (dot)
            *dot = '\0';
        if (cur->kind == YT_SEQ) {
            long i = seq_find(cur, seg);
            if (i < 0)
                return NULL;
            cur = cur->items[i];
        } else if (cur->kind == YT_MAP) {
            /* The last of duplicate keys, as yt_override picks. */
            size_t i;
            for (i = cur->n; i-- > 0;)
                if (strcmp(cur->keys[i]->text, seg) == 0)
                    break;
            if (i == (size_t)-1)
                return NULL;
            cur = cur->items[i];
        } else {
            return NULL;
        }
        if (!dot)
            return cur;
        seg = dot + 1;
    }
}

/* ---- near misses ------------------------------------------------------- */

size_t yt_edit_distance(const char *a, const char *b)
{
    size_t la = strlen(a), lb = strlen(b);
    if (la > 64)
        la = 64;
    if (lb > 64)
        lb = 64;
    size_t row[65], prev[65];
    for (size_t j = 0; j <= lb; j++)
        prev[j] = j;
    for (size_t i = 1; i <= la; i++) {
        row[0] = i;
        for (size_t j = 1; j <= lb; j++) {
            size_t sub = prev[j - 1] + (a[i - 1] != b[j - 1]);
            size_t del = prev[j] + 1, ins = row[j - 1] + 1;
            row[j] = sub < del ? (sub < ins ? sub : ins) : (del < ins ? del : ins);
        }
        memcpy(prev, row, (lb + 1) * sizeof row[0]);
    }
    return prev[lb];
}

const char *yt_nearest(const char *word, const char *const *cands, size_t n)
{
    /* Close means at most a third of the word changed (at least one edit
     * allowed), and not every character: 'c' is not a typo of 'a'. */
    size_t lw = strlen(word);
    size_t limit = lw / 3 > 1 ? lw / 3 : 1;
    const char *best = NULL;
    size_t bestd = (size_t)-1;
    for (size_t i = 0; i < n; i++) {
        size_t dd = yt_edit_distance(word, cands[i]);
        if (dd < bestd) {
            bestd = dd;
            best = cands[i];
        }
    }
    return bestd <= limit && bestd < lw ? best : NULL;
}
