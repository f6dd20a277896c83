/* json.c: streaming JSON writer (json.h).
 *
 * State: a stack of open containers, each remembering whether it already
 * has an element (so the next one needs a comma), plus `after_key` (the
 * next value completes an object member, no comma).  Any misuse or failed
 * allocation sets `failed`, after which every call is a no-op: callers
 * check json_ok once at the end instead of after each call.
 */
#include "json.h"

#include "dp_common.h"

#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct json_buf {
    char *buf; /* always NUL-terminated when non-NULL */
    size_t len, cap;
    int failed;
    int depth;
    char open[JSON_MAX_DEPTH];              /* '{' or '[' per level */
    unsigned char has_elem[JSON_MAX_DEPTH]; /* level already holds an element */
    int after_key;                          /* a key was written, its value is due */
    int top_done;                           /* the single top-level value began */
};

json_buf *json_new(void)
{
    json_buf *j = dp_calloc(1, sizeof *j);
    if (!j)
        return NULL;
    j->cap = 256;
    j->buf = dp_malloc(j->cap);
    if (!j->buf) {
        dp_free(j);
        return NULL;
    }
    j->buf[0] = '\0';
    return j;
}

void json_free(json_buf *j)
{
    if (!j)
        return;
    dp_free(j->buf);
    dp_free(j);
}

static void put(json_buf *j, const char *s, size_t n)
{
    if (j->failed)
        return;
    if (n >= j->cap - j->len) {
        size_t cap = j->cap;
        while (n >= cap - j->len) {
            if (cap > SIZE_MAX / 2) {
                j->failed = 1;
                return;
            }
            cap *= 2;
        }
        char *b = dp_realloc(j->buf, cap);
        if (!b) {
            j->failed = 1;
            return;
        }
        j->buf = b;
        j->cap = cap;
    }
    memcpy(j->buf + j->len, s, n);
    j->len += n;
    j->buf[j->len] = '\0';
}

static void puts_(json_buf *j, const char *s)
{
    put(j, s, strlen(s));
}

/* Writes the separator a new value needs; 0 when the value may follow. */
static int begin_value(json_buf *j)
{
    if (!j || j->failed)
        return -1;
    if (j->depth == 0) {
        if (j->top_done) {
            j->failed = 1; /* a JSON text holds exactly one value */
            return -1;
        }
        j->top_done = 1;
        return 0;
    }
    int top = j->depth - 1;
    if (j->open[top] == '{') {
        if (!j->after_key) {
            j->failed = 1; /* object member without a key */
            return -1;
        }
        j->after_key = 0;
        return 0;
    }
    if (j->has_elem[top])
        put(j, ",", 1);
    j->has_elem[top] = 1;
    return j->failed ? -1 : 0;
}

/* Length of the valid UTF-8 sequence at s (1..4), or 0 if invalid.
 * Rejects overlongs, surrogates and code points above U+10FFFF. */
static int utf8_len(const unsigned char *s)
{
    unsigned c = s[0];
    unsigned lo = 0x80, hi = 0xBF;
    int n;
    if (c < 0x80)
        return 1;
    if (c >= 0xC2 && c <= 0xDF)
        n = 2;
    else if (c >= 0xE0 && c <= 0xEF) {
        n = 3;
        if (c == 0xE0)
            lo = 0xA0;
        else if (c == 0xED)
            hi = 0x9F;
    } else if (c >= 0xF0 && c <= 0xF4) {
        n = 4;
        if (c == 0xF0)
            lo = 0x90;
        else if (c == 0xF4)
            hi = 0x8F;
    } else
        return 0;
    if (s[1] < lo || s[1] > hi)
        return 0;
    for (int i = 2; i < n; i++)
        if (s[i] < 0x80 || s[i] > 0xBF) /* a NUL terminator fails here too */
            return 0;
    return n;
}

static void put_string(json_buf *j, const char *str)
{
    const unsigned char *s = (const unsigned char *)str;
    put(j, "\"", 1);
    while (*s && !j->failed) {
        /* Copy the longest run that needs no escaping in one call. */
        const unsigned char *run = s;
        while (*s >= 0x20 && *s < 0x7f && *s != '"' && *s != '\\')
            s++;
        if (s > run)
            put(j, (const char *)run, (size_t)(s - run));
        if (!*s)
            break;
        char esc[8];
        switch (*s) {
        case '"':
            puts_(j, "\\\"");
            break;
        case '\\':
            puts_(j, "\\\\");
            break;
        case '\b':
            puts_(j, "\\b");
            break;
        case '\f':
            puts_(j, "\\f");
            break;
        case '\n':
            puts_(j, "\\n");
            break;
        case '\r':
            puts_(j, "\\r");
            break;
        case '\t':
            puts_(j, "\\t");
            break;
        default:
            if (*s < 0x20 || *s == 0x7f) {
                snprintf(esc, sizeof esc, "\\u%04x", (unsigned)*s);
                puts_(j, esc);
            } else {
                int n = utf8_len(s);
                if (n == 0) {
                    puts_(j, "\\ufffd");
                    n = 1;
                } else
                    put(j, (const char *)s, (size_t)n);
                s += n;
                continue;
            }
        }
        s++;
    }
    put(j, "\"", 1);
}

static void open_container(json_buf *j, char c)
{
    if (begin_value(j) != 0)
        return;
    if (j->depth == JSON_MAX_DEPTH) {
        j->failed = 1;
        return;
    }
    j->open[j->depth] = c;
    j->has_elem[j->depth] = 0;
    j->depth++;
    put(j, &c, 1);
}

static void close_container(json_buf *j, char open, char close)
{
    if (!j || j->failed)
        return;
    if (j->depth == 0 || j->open[j->depth - 1] != open || j->after_key) {
        j->failed = 1;
        return;
    }
    j->depth--;
    put(j, &close, 1);
}

void json_obj_begin(json_buf *j)
{
    open_container(j, '{');
}
void json_obj_end(json_buf *j)
{
    close_container(j, '{', '}');
}
void json_arr_begin(json_buf *j)
{
    open_container(j, '[');
}
void json_arr_end(json_buf *j)
{
    close_container(j, '[', ']');
}

void json_key(json_buf *j, const char *key)
{
    if (!j || j->failed)
        return;
    int top = j->depth - 1;
    if (top < 0 || j->open[top] != '{' || j->after_key || !key) {
        j->failed = 1;
        return;
    }
    if (j->has_elem[top])
        put(j, ",", 1);
    j->has_elem[top] = 1;
    put_string(j, key);
    put(j, ":", 1);
    j->after_key = 1;
}

void json_str(json_buf *j, const char *s)
{
    if (begin_value(j) != 0)
        return;
    if (s)
        put_string(j, s);
    else
        puts_(j, "null");
}

void json_num(json_buf *j, double v)
{
    if (begin_value(j) != 0)
        return;
    if (!isfinite(v)) {
        puts_(j, "null");
        return;
    }
    char b[32];
    json_fmt_double(v, b, sizeof b);
    puts_(j, b);
}

void json_fmt_double(double v, char *buf, size_t cap)
{
    /* The shortest of %.15g, %.16g, %.17g that reads back to the same bits:
     * 0.097 rather than 0.097000000000000003.  %.17g always round-trips. */
    static const char *const fmt[] = {"%.15g", "%.16g"};
    for (size_t k = 0; k < 2; k++) {
        snprintf(buf, cap, fmt[k], v);
        if (strtod(buf, NULL) == v)
            return;
    }
    snprintf(buf, cap, "%.17g", v);
}

void json_raw(json_buf *j, const char *text)
{
    if (begin_value(j) != 0)
        return;
    puts_(j, text && *text ? text : "null");
}

void json_int(json_buf *j, int64_t v)
{
    if (begin_value(j) != 0)
        return;
    char b[24];
    snprintf(b, sizeof b, "%" PRId64, v);
    puts_(j, b);
}

void json_bool(json_buf *j, int v)
{
    if (begin_value(j) != 0)
        return;
    puts_(j, v ? "true" : "false");
}

void json_null(json_buf *j)
{
    if (begin_value(j) != 0)
        return;
    puts_(j, "null");
}

const char *json_text(const json_buf *j)
{
    if (!j || j->failed)
        return "";
    return j->buf;
}

int json_ok(const json_buf *j)
{
    return j && !j->failed && j->depth == 0 && !j->after_key && j->top_done;
}

void json_key_str(json_buf *j, const char *key, const char *s)
{
    json_key(j, key);
    json_str(j, s);
}

void json_key_num(json_buf *j, const char *key, double v)
{
    json_key(j, key);
    json_num(j, v);
}

void json_key_int(json_buf *j, const char *key, int64_t v)
{
    json_key(j, key);
    json_int(j, v);
}

void json_key_bool(json_buf *j, const char *key, int b)
{
    json_key(j, key);
    json_bool(j, b);
}
