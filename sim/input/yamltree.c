/* yamltree.c: libyaml events -> a tree of nodes with positions; overrides.
 *
 * Why a tree of our own rather than libyaml's document API: we need the
 * position of every node after overrides have edited the tree, an origin
 * for nodes an override made, aliases expanded under a node budget, and all
 * memory through dp_malloc so leaks show in dp_alloc_live().
 *
 * Memory: every node, string and child array of a document comes from the
 * document's arena (chunks of up to 8 MiB), and yt_free returns the chunks
 * at once.  A node per malloc, and a free per node, were a third of loading
 * 100,000 device groups.  A node an override replaces stays in the arena
 * until yt_free (overrides are few).
 *
 * While a collection is read its children wait on one shared stack (so no
 * array is regrown per child) and move to an exact-size arena array when
 * the collection ends.  The key path that messages name is assembled from
 * the open collections only when a message is written.
 *
 * Aliases are expanded by copying the anchored node; each copy counts
 * against YT_MAX_NODES, so a "billion laughs" document stops after four
 * million nodes (100,000 device groups written out need about 1.7 million) with an error instead of
 * exhausting memory.  An alias to an anchor whose node is still open (a node containing its own alias) is an
 * error: YAML allows such cycles, a scenario never needs them.
 */
#include "yamltree.h"

#include <ctype.h>

#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <yaml.h>

/* ---- arena ------------------------------------------------------------- */

typedef struct chunk {
    struct chunk *next;
    size_t cap, used; /* bytes of room after the header, and handed out */
} chunk;

#define CHUNK_FIRST (64u * 1024)
#define CHUNK_LAST  (8u * 1024 * 1024)

struct yt_doc {
    yt_node *root;
    size_t n_nodes;
    chunk *chunks;     /* the one being filled first */
    size_t next_chunk; /* room of the next chunk (doubles up to CHUNK_LAST) */
    char **strings;    /* origins of overrides, owned here */
    size_t n_strings;
};

/* `size` bytes, 8-aligned, living until yt_free; NULL when out of memory. */
static void *arena_alloc(yt_doc *d, size_t size)
{
    if (size > SIZE_MAX - 64)
        return NULL;
    size = (size + 7) & ~(size_t)7;
    chunk *c = d->chunks;
    if (!c || c->cap - c->used < size) {
        if (!d->next_chunk)
            d->next_chunk = CHUNK_FIRST;
        int own = size > d->next_chunk / 4; /* a big block gets a chunk of its own */
        size_t cap = own ? size : d->next_chunk;
        chunk *n = dp_malloc(sizeof *n + cap);
        if (!n)
            return NULL;
        n->cap = cap;
        n->used = 0;
        if (own && c) { /* behind the current chunk, which keeps its room */
            n->next = c->next;
            c->next = n;
        } else {
            n->next = c;
            d->chunks = n;
            if (!own && d->next_chunk < CHUNK_LAST)
                d->next_chunk *= 2;
        }
        c = n;
    }
    void *p = (char *)(c + 1) + c->used;
    c->used += size;
    return p;
}

static char *arena_strndup(yt_doc *d, const char *s, size_t len)
{
    char *t = arena_alloc(d, len + 1);
    if (t) {
        memcpy(t, s, len);
        t[len] = '\0';
    }
    return t;
}

/* ---- nodes ------------------------------------------------------------- */

/* A node, with `extra` bytes of room right after it (a scalar's text: one
 * allocation, and the text next to its node). */
static yt_node *node_alloc(yt_doc *d, yt_kind kind, int line, int column, size_t extra, dp_err *err,
                           const char *where)
{
    if (d->n_nodes >= YT_MAX_NODES) {
        dp_err_set(err, DP_EINPUT, "%s:%d:%d: document has more than %d nodes (aliases count once per use)",
                   where, line, column, YT_MAX_NODES);
        return NULL;
    }
    yt_node *n = arena_alloc(d, sizeof *n + extra);
    if (!n) {
        dp_err_set(err, DP_ENOMEM, "out of memory reading %s", where);
        return NULL;
    }
    d->n_nodes++;
    *n = (yt_node){.kind = kind, .line = line, .column = column};
    return n;
}

static yt_node *node_new(yt_doc *d, yt_kind kind, int line, int column, dp_err *err, const char *where)
{
    return node_alloc(d, kind, line, column, 0, err, where);
}

/* Append a child (and its key for maps), for overrides: the arrays are
 * copied into new ones one longer (the old ones stay in the arena; an
 * override adds at most a key per level, so no room is kept spare). */
static int node_push(yt_doc *d, yt_node *parent, yt_node *key, yt_node *item)
{
    size_t n = parent->n;
    yt_node **items = arena_alloc(d, (n + 1) * sizeof *items), **keys = NULL;
    if (!items || (parent->kind == YT_MAP && !(keys = arena_alloc(d, (n + 1) * sizeof *keys))))
        return DP_ENOMEM;
    if (n) {
        memcpy(items, parent->items, n * sizeof *items);
        if (keys)
            memcpy(keys, parent->keys, n * sizeof *keys);
    }
    parent->items = items;
    if (keys)
        parent->keys = keys;
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
    if (s->text && !(n->text = arena_strndup(d, s->text, strlen(s->text))))
        goto oom;
    if (s->n) {
        if (!(n->items = arena_alloc(d, s->n * sizeof *n->items)) ||
            (s->kind == YT_MAP && !(n->keys = arena_alloc(d, s->n * sizeof *n->keys))))
            goto oom;
        n->n = s->n;
    }
    for (size_t i = 0; i < s->n; i++) {
        if (s->kind == YT_MAP && !(n->keys[i] = node_copy(d, s->keys[i], err, where)))
            return NULL;
        if (!(n->items[i] = node_copy(d, s->items[i], err, where)))
            return NULL;
    }
    return n;
oom:
    dp_err_set(err, DP_ENOMEM, "out of memory reading %s", where);
    return NULL;
}

/* ---- parsing ----------------------------------------------------------- */

typedef struct anchor {
    char *name;
    yt_node *node;
    int done;
} anchor;

/* An open collection, for the key path of messages: a mapping names the
 * key whose value is being read ("a.KEY"), a list the item ("a[3]"); `on`
 * is 0 while there is none (a mapping's key, or the event before an item,
 * is read at the collection's own path). */
typedef struct frame {
    const char *key; /* NULL in a list */
    size_t index;
    int on;
} frame;

typedef struct pctx {
    yaml_parser_t p;
    const char *name;
    const char *text;
    size_t len;
    dp_err *err;
    yt_doc *doc;
    anchor *anc;
    size_t n_anc, cap_anc;
    frame fr[YT_MAX_DEPTH + 2];
    int n_fr;
    yt_node **stk; /* children of the open collections (a map's as key, value, ...) */
    size_t n_stk, cap_stk;
} pctx;

/* The key path of the node being read ("" at the top), in the style of
 * scenario.c's messages: FILE:LINE:COL: key.path: what is wrong (got
 * VALUE).  A key is cut to 200 bytes, the path to 299. */
static const char *cur_path(const pctx *c, char *buf, size_t len)
{
    size_t k = 0;
    buf[0] = '\0';
    for (int i = 0; i < c->n_fr; i++) {
        const frame *f = &c->fr[i];
        char idx[32];
        const char *part = f->key;
        if (!f->on)
            continue;
        if (!part) {
            snprintf(idx, sizeof idx, "[%zu]", f->index);
            part = idx;
        } else if (k && k < len - 1) {
            buf[k++] = '.';
        }
        size_t lp = strnlen(part, 200);
        if (lp > len - 1 - k)
            lp = len - 1 - k;
        memcpy(buf + k, part, lp);
        k += lp;
        buf[k] = '\0';
    }
    return buf;
}

/* "PATH: " for messages, or "" at the top level. */
#define PATH_FMT      "%s%s"
#define PATH_ARG(buf) (buf), (buf)[0] ? ": " : ""

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
    char path[300];
    cur_path(c, path, sizeof path);
    if (p->error == YAML_MEMORY_ERROR)
        return dp_err_set(c->err, DP_ENOMEM, "%s: out of memory parsing YAML", c->name);
    if (p->error == YAML_READER_ERROR) {
        offset_pos(c->text, c->len, p->problem_offset, &line, &col);
        return dp_err_set(c->err, DP_EINPUT,
                          "%s:%zu:%zu: " PATH_FMT "YAML syntax error: %s (got byte 0x%02x)", c->name, line,
                          col, PATH_ARG(path), problem, (unsigned)(p->problem_value & 0xff));
    }
    if (p->context)
        return dp_err_set(c->err, DP_EINPUT, "%s:%zu:%zu: " PATH_FMT "YAML syntax error: %s (%s at line %zu)",
                          c->name, line, col, PATH_ARG(path), problem, p->context,
                          (size_t)p->context_mark.line + 1);
    return dp_err_set(c->err, DP_EINPUT, "%s:%zu:%zu: " PATH_FMT "YAML syntax error: %s", c->name, line, col,
                      PATH_ARG(path), problem);
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

static int stk_grow(pctx *c)
{
    size_t cap = c->cap_stk ? 2 * c->cap_stk : 256;
    yt_node **s = dp_realloc(c->stk, cap * sizeof *s);
    if (!s)
        return DP_ENOMEM;
    c->stk = s;
    c->cap_stk = cap;
    return 0;
}

static inline int stk_push(pctx *c, yt_node *n)
{
    if (c->n_stk == c->cap_stk && stk_grow(c))
        return DP_ENOMEM;
    c->stk[c->n_stk++] = n;
    return 0;
}

/* Move the children collection n gathered on the stack from `base` on into
 * arrays of its own. */
static int take_children(pctx *c, yt_node *n, size_t base)
{
    size_t k = c->n_stk - base, m = n->kind == YT_MAP ? k / 2 : k;
    yt_node **s = c->stk + base;
    c->n_stk = base;
    if (!m)
        return 0;
    if (!(n->items = arena_alloc(c->doc, m * sizeof *n->items)))
        return DP_ENOMEM;
    if (n->kind == YT_MAP) {
        if (!(n->keys = arena_alloc(c->doc, m * sizeof *n->keys)))
            return DP_ENOMEM;
        for (size_t i = 0; i < m; i++) {
            n->keys[i] = s[2 * i];
            n->items[i] = s[2 * i + 1];
        }
    } else {
        memcpy(n->items, s, m * sizeof *s);
    }
    n->n = m;
    return 0;
}

/* Build the node that starts with *ev (consumed here).  The open
 * collections above it are c->fr[0 .. depth). */
static yt_node *parse_node(pctx *c, yaml_event_t *ev, int depth)
{
    int line = (int)ev->start_mark.line + 1, col = (int)ev->start_mark.column + 1;
    yt_node *n = NULL;
    const char *anchor_name = NULL;
    char path[300];
    if (depth > YT_MAX_DEPTH) {
        dp_err_set(c->err, DP_EINPUT, "%s:%d:%d: " PATH_FMT "nesting deeper than %d levels (got %d)", c->name,
                   line, col, PATH_ARG(cur_path(c, path, sizeof path)), YT_MAX_DEPTH, depth);
        yaml_event_delete(ev);
        return NULL;
    }
    switch (ev->type) {
    case YAML_ALIAS_EVENT: {
        const char *an = (const char *)ev->data.alias.anchor;
        anchor *a = find_anchor(c, an);
        if (!a)
            dp_err_set(c->err, DP_EINPUT, "%s:%d:%d: " PATH_FMT "unknown alias (got '*%.60s')", c->name, line,
                       col, PATH_ARG(cur_path(c, path, sizeof path)), an);
        else if (!a->done)
            dp_err_set(c->err, DP_EINPUT,
                       "%s:%d:%d: " PATH_FMT "alias refers to a node that contains it (got '*%.60s')",
                       c->name, line, col, PATH_ARG(cur_path(c, path, sizeof path)), an);
        else
            n = node_copy(c->doc, a->node, c->err, c->name);
        yaml_event_delete(ev);
        return n;
    }
    case YAML_SCALAR_EVENT: {
        size_t len = ev->data.scalar.length;
        const char *v = (const char *)ev->data.scalar.value;
        /* Only an escape ("\0", "\x00", "\u0000") can make a NUL: the
         * reader refuses the raw byte, and other styles have no escapes. */
        if (ev->data.scalar.style == YAML_DOUBLE_QUOTED_SCALAR_STYLE && len && memchr(v, '\0', len)) {
            dp_err_set(c->err, DP_EINPUT,
                       "%s:%d:%d: " PATH_FMT "NUL character in a value (got '%.40s\\0...')", c->name, line,
                       col, PATH_ARG(cur_path(c, path, sizeof path)), v);
            break;
        }
        if (!(n = node_alloc(c->doc, YT_SCALAR, line, col, len + 1, c->err, c->name)))
            break;
        n->plain = ev->data.scalar.style == YAML_PLAIN_SCALAR_STYLE;
        n->text = (char *)(n + 1);
        memcpy(n->text, v, len);
        n->text[len] = '\0';
        anchor_name = (const char *)ev->data.scalar.anchor;
        if (anchor_name && add_anchor(c, anchor_name, n)) {
            dp_err_set(c->err, DP_ENOMEM, "out of memory reading %s", c->name);
            n = NULL;
            break;
        }
        if (c->n_anc)
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
            n = NULL;
            break;
        }
        yaml_event_delete(ev);
        frame *f = &c->fr[depth];
        *f = (frame){NULL, 0, 0};
        c->n_fr = depth + 1;
        size_t base = c->n_stk;
        /* Each iteration consumes at least one event, and libyaml stops at
         * the end of its input, so this loop is bounded. */
        for (size_t i = 0;; i++) {
            yaml_event_t e;
            f->on = 0;
            c->n_fr = depth + 1;
            if (next_event(c, &e))
                return NULL;
            if (e.type == YAML_SEQUENCE_END_EVENT || e.type == YAML_MAPPING_END_EVENT) {
                yaml_event_delete(&e);
                break;
            }
            yt_node *key = NULL, *val;
            if (is_map) {
                if (!(key = parse_node(c, &e, depth + 1)))
                    return NULL;
                c->n_fr = depth + 1;
                if (key->kind != YT_SCALAR) {
                    dp_err_set(c->err, DP_EINPUT,
                               "%s:%d:%d: " PATH_FMT "a mapping key must be a plain value (got %s)", c->name,
                               key->line, key->column, PATH_ARG(cur_path(c, path, sizeof path)),
                               key->kind == YT_MAP ? "a mapping" : "a list");
                    return NULL;
                }
                f->key = key->text;
                f->on = 1;
                if (next_event(c, &e))
                    return NULL;
            } else {
                f->index = i;
                f->on = 1;
            }
            if (!(val = parse_node(c, &e, depth + 1)))
                return NULL;
            if ((is_map && stk_push(c, key)) || stk_push(c, val)) {
                dp_err_set(c->err, DP_ENOMEM, "out of memory reading %s", c->name);
                return NULL;
            }
        }
        c->n_fr = depth;
        if (take_children(c, n, base)) {
            dp_err_set(c->err, DP_ENOMEM, "out of memory reading %s", c->name);
            return NULL;
        }
        if (c->n_anc)
            mark_done(c, n);
        /* On an error above, nodes stay in the arena (yt_free returns them),
         * and anchors pointing into the unfinished tree are not used again:
         * parsing stops at the first error. */
        return n;
    }
    default:
        dp_err_set(c->err, DP_EINPUT, "%s:%d:%d: " PATH_FMT "unexpected YAML event (got type %d)", c->name,
                   line, col, PATH_ARG(cur_path(c, path, sizeof path)), (int)ev->type);
        break;
    }
    yaml_event_delete(ev);
    return n;
}

/* Parse a whole stream into d: *root is its one document's root node, or
 * NULL for an empty document. */
static int parse_into(yt_doc *d, const char *name, const char *text, size_t len, yt_node **root, dp_err *err)
{
    pctx c;
    memset(&c, 0, sizeof c);
    c.name = name;
    c.text = text;
    c.len = len;
    c.err = err;
    c.doc = d;
    *root = NULL;
    if (!yaml_parser_initialize(&c.p))
        return dp_err_set(err, DP_ENOMEM, "out of memory reading %s", c.name);
    yaml_parser_set_input_string(&c.p, (const unsigned char *)(text ? text : ""), text ? len : 0);
    yaml_event_t ev;
    int docs = 0, rc = 0;
    for (;;) {
        c.n_fr = 0;
        if ((rc = next_event(&c, &ev)))
            break;
        if (ev.type == YAML_STREAM_END_EVENT) {
            yaml_event_delete(&ev);
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
                rc = dp_err_set(err, DP_EINPUT,
                                "%s:%d:%d: more than one YAML document (a scenario is one) (got %d)", c.name,
                                line, col, docs);
                break;
            }
            continue;
        }
        /* The document's root node. */
        if (!(*root = parse_node(&c, &ev, 0))) {
            rc = err && err->code ? err->code : DP_EINPUT;
            break;
        }
    }
    for (size_t i = 0; i < c.n_anc; i++)
        dp_free(c.anc[i].name);
    dp_free(c.anc);
    dp_free(c.stk);
    yaml_parser_delete(&c.p);
    if (rc)
        return rc;
    /* A document that is only `---` or `~` is as empty as no document. */
    if (*root && (*root)->kind == YT_SCALAR && yt_is_null(*root))
        *root = NULL;
    return 0;
}

yt_doc *yt_parse(const char *name, const char *text, size_t len, dp_err *err)
{
    if (!name)
        name = "<input>";
    yt_doc *d = dp_calloc(1, sizeof *d);
    if (!d) {
        dp_err_set(err, DP_ENOMEM, "out of memory reading %s", name);
        return NULL;
    }
    if (parse_into(d, name, text, len, &d->root, err)) {
        yt_free(d);
        return NULL;
    }
    return d;
}

void yt_free(yt_doc *d)
{
    if (!d)
        return;
    for (chunk *c = d->chunks, *nx; c; c = nx) {
        nx = c->next;
        dp_free(c);
    }
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
 * before it looks anything up.  The first byte rules out most keys without
 * a call: a device group's keys mostly start with different letters, so a
 * lookup compares about one string, not every key's (hashing the key
 * looked up cost more than the compares it saved). */
static ptrdiff_t find_key(const yt_node *m, const char *key)
{
    if (!m || m->kind != YT_MAP)
        return -1;
    for (size_t i = m->n; i-- > 0;) {
        const char *t = m->keys[i]->text;
        if (t[0] == key[0] && yt_key_is(t, key))
            return (ptrdiff_t)i;
    }
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
    const char *t = n->text;
    switch (t[0]) { /* most values start with another letter: no string compared */
    case '\0':
        return 1;
    case '~':
        return t[1] == '\0';
    case 'n':
    case 'N':
        return strcmp(t, "~") == 0 || strcmp(t, "null") == 0 || strcmp(t, "Null") == 0 ||
               strcmp(t, "NULL") == 0;
    default:
        return 0;
    }
}

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
    if (!(k->text = arena_strndup(d, text, strlen(text))))
        return NULL;
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
    yt_node *val;
    if (parse_into(d, origin, value, strlen(value), &val, &perr))
        return dp_err_set(err, perr.code, "%s", perr.msg);
    if (!val) {
        val = scalar_key(d, "", origin);
        if (!val)
            return dp_err_set(err, DP_ENOMEM, "out of memory applying override '%s'", key);
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
                cur->items[i] = val; /* the node replaced stays in the arena */
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
                if (!k || !v || node_push(d, cur, k, v)) {
                    rc = dp_err_set(err, DP_ENOMEM, "out of memory applying override '%s'", key);
                    break;
                }
                if (last)
                    break;
                cur = v;
            } else if (last) {
                cur->items[i] = val;
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

/* Levenshtein distance of the first 64 bytes, case-folded (fold = 1) or not. */
static size_t edit_distance(const char *a, const char *b, int fold)
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
            char x = a[i - 1], y = b[j - 1];
            if (fold)
                x = (char)tolower((unsigned char)x), y = (char)tolower((unsigned char)y);
            size_t sub = prev[j - 1] + (x != y);
            size_t del = prev[j] + 1, ins = row[j - 1] + 1;
            row[j] = sub < del ? (sub < ins ? sub : ins) : (del < ins ? del : ins);
        }
        memcpy(prev, row, (lb + 1) * sizeof row[0]);
    }
    return prev[lb];
}

size_t yt_edit_distance(const char *a, const char *b)
{
    return edit_distance(a, b, 0);
}

const char *yt_nearest(const char *word, const char *const *cands, size_t n)
{
    /* Close means at most a third of the word changed (at least one edit
     * allowed), and not every character: 'c' is not a typo of 'a'.  Case
     * changes count as no change first (`--policy DDP` means ddp), then
     * as one each, which breaks ties: `100mbps` is Mbps, not bps, though
     * both are one edit away. */
    size_t lw = strlen(word);
    size_t limit = lw / 3 > 1 ? lw / 3 : 1;
    const char *best = NULL;
    size_t bestf = (size_t)-1, bestd = (size_t)-1;
    for (size_t i = 0; i < n; i++) {
        size_t f = edit_distance(word, cands[i], 1), dd = edit_distance(word, cands[i], 0);
        if (f < bestf || (f == bestf && dd < bestd)) {
            bestf = f;
            bestd = dd;
            best = cands[i];
        }
    }
    return bestf <= limit && bestf < lw ? best : NULL;
}
