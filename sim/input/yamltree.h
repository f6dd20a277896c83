/* yamltree.h: a YAML document as a tree of nodes that remember where they
 * came from (line and column in the file, or the override that set them),
 * built from libyaml's event parser.  Used by the scenario loader, and by
 * the calibration to find a value's place in a file.
 *
 * Limits (so hostile input cannot blow up memory or the stack): at most
 * YT_MAX_NODES nodes in a document, counting every copy an alias makes (this
 * is what stops "billion laughs"), and nesting at most YT_MAX_DEPTH deep.
 * One document per stream; map keys must be scalars.
 *
 * Ownership: yt_parse returns a document owned by the caller (yt_free);
 * every node, string and child array in it belongs to the document (one
 * arena, freed at once).  Nodes made outside yamltree (population.c's rows)
 * are read by the same functions but never freed by them.
 */
#ifndef DP_YAMLTREE_H
#define DP_YAMLTREE_H

#include "dp_common.h"
#include <stddef.h>

#define YT_MAX_NODES 4000000
#define YT_MAX_DEPTH 64

typedef enum { YT_SCALAR = 0, YT_MAP, YT_SEQ } yt_kind;

typedef struct yt_node yt_node;
struct yt_node {
    yt_kind kind;
    int line, column;   /* 1-based; 0 for nodes an override created */
    int plain;          /* SCALAR: unquoted (so `~`, `null` and "" mean no value) */
    const char *origin; /* NULL: from the file; else "override KEY=VALUE" */
    char *text;         /* SCALAR: the text ("" for an empty value) */
    size_t n;           /* MAP: pairs; SEQ: items */
    yt_node **keys;     /* MAP: key scalars */
    yt_node **items;    /* MAP: values; SEQ: items */
};

typedef struct yt_doc yt_doc;

/* Parse text (need not be NUL-terminated).  `name` prefixes messages:
 * "NAME:LINE:COLUMN: YAML syntax error: ...".  An empty document (nothing
 * but comments or blanks) gives a document whose root is NULL. */
yt_doc *yt_parse(const char *name, const char *text, size_t len, dp_err *err);
void yt_free(yt_doc *d);
yt_node *yt_root(const yt_doc *d);

/* 1 when the strings are equal; inline, for the short keys a loader
 * compares by the million (a call to strcmp per key cost more than the
 * compare). */
static inline int yt_key_is(const char *t, const char *k)
{
    if (t == k)
        return 1;
    while (*t && *t == *k)
        t++, k++;
    return *t == *k;
}

/* The value of `key` in a map, or NULL (also NULL if m is not a map). */
yt_node *yt_get(const yt_node *m, const char *key);
/* The key node of `key` in a map, or NULL. */
yt_node *yt_get_key(const yt_node *m, const char *key);
/* 1 if n is absent or a plain empty / `~` / `null` scalar. */
int yt_is_null(const yt_node *n);

/* Apply KEY=VALUE to the tree.  KEY is dotted; sequence items are found by
 * index, by their `name` (devices, sites) or, for items with a two-element
 * `between`, by `A-B` in either order.  Missing map keys along the way are
 * created.  VALUE is parsed as YAML (a scalar, or a flow list or map) and
 * every node it makes records the origin "override KEY=VALUE".  Errors
 * (DP_EINPUT) name the override. */
int yt_override(yt_doc *d, const char *key, const char *value, dp_err *err);

/* The node at dotted KEY, addressed as yt_override addresses it, or NULL
 * when some part is absent.  Borrowed from d.  Used to rewrite a value in
 * place in a file's text (`dpsim calibrate --out`). */
const yt_node *yt_find(const yt_doc *d, const char *key);

/* Levenshtein distance (bounded work: strings are cut at 64 bytes). */
size_t yt_edit_distance(const char *a, const char *b);
/* The candidate nearest to `word` if it is close (distance, with case
 * ignored, <= max(1, len/3)), else NULL; ties go to the candidate with
 * fewer case changes. */
const char *yt_nearest(const char *word, const char *const *cands, size_t n);

#endif
