/* dp_common.c: allocation hook with a live-block counter and failure
 * injection, and the error helper.  The counter is atomic because sweeps
 * run simulations in worker processes, but tests may also use threads. */
#include "dp_common.h"

#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <errno.h>
#include <string.h>
#include <pthread.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

static atomic_long live_blocks;
static atomic_long fail_countdown; /* 0 = off */
static atomic_int fail_once;       /* dp_alloc_fail_once: the k-th alone fails */

static int should_fail(void)
{
    long k = atomic_load(&fail_countdown);
    if (k == 0)
        return 0;
    if (k == 1) {
        if (atomic_load(&fail_once))
            atomic_store(&fail_countdown, 0);
        return 1; /* else stays at 1: every later allocation fails too */
    }
    atomic_fetch_sub(&fail_countdown, 1);
    return 0;
}

void *dp_malloc(size_t n)
{
    if (should_fail())
        return NULL;
    void *p = malloc(n ? n : 1);
    if (p)
        atomic_fetch_add(&live_blocks, 1);
    return p;
}

void *dp_calloc(size_t count, size_t size)
{
    if (size && count > SIZE_MAX / size)
        return NULL;
    if (should_fail())
        return NULL;
    void *p = calloc(count ? count : 1, size ? size : 1);
    if (p)
        atomic_fetch_add(&live_blocks, 1);
    return p;
}

void *dp_realloc(void *p, size_t n)
{
    if (!p)
        return dp_malloc(n);
    if (should_fail())
        return NULL;
    return realloc(p, n ? n : 1);
}

int dp_grow(void **p, size_t *cap, size_t need, size_t elem, size_t first)
{
    if (need <= *cap)
        return 0;
    size_t nc = *cap ? *cap : (first ? first : 1);
    while (nc < need) {
        if (nc > SIZE_MAX / 2)
            return -1;
        nc *= 2;
    }
    if (elem && nc > SIZE_MAX / elem)
        return -1;
    void *np = dp_realloc(*p, nc * elem);
    if (!np)
        return -1;
    *p = np;
    *cap = nc;
    return 0;
}

void dp_free(void *p)
{
    if (!p)
        return;
    atomic_fetch_sub(&live_blocks, 1);
    free(p);
}

char *dp_strdup(const char *s)
{
    if (!s)
        return NULL;
    size_t n = strlen(s) + 1;
    char *d = dp_malloc(n);
    if (d)
        memcpy(d, s, n);
    return d;
}

/* ---- prefaulting -------------------------------------------------------- */

#define PREFAULT_MIN   ((size_t)8 << 20)
#define PREFAULT_CHUNK ((size_t)2 << 20) /* pages the caller reached first are skipped a chunk at a time */

struct dp_prefault {
    pthread_t th;
    char *lo, *hi; /* page-aligned */
};

static void *prefault_main(void *arg)
{
#ifdef MADV_POPULATE_WRITE
    dp_prefault *pf = arg;
    for (char *p = pf->lo; p < pf->hi; p += PREFAULT_CHUNK) {
        size_t n = (size_t)(pf->hi - p) < PREFAULT_CHUNK ? (size_t)(pf->hi - p) : PREFAULT_CHUNK;
        if (madvise(p, n, MADV_POPULATE_WRITE))
            break; /* not supported here (an older kernel, valgrind): the caller faults them in */
    }
#else
    (void)arg;
#endif
    return NULL;
}

dp_prefault *dp_prefault_start(void *p, size_t len)
{
#ifdef MADV_POPULATE_WRITE
    if (!p || len < PREFAULT_MIN)
        return NULL;
    long pg = sysconf(_SC_PAGESIZE);
    if (pg <= 0)
        return NULL;
    uintptr_t a = ((uintptr_t)p + (uintptr_t)pg - 1) & ~((uintptr_t)pg - 1);
    uintptr_t b = ((uintptr_t)p + len) & ~((uintptr_t)pg - 1);
    if (b <= a)
        return NULL;
    dp_prefault *pf = dp_malloc(sizeof *pf);
    if (!pf)
        return NULL;
    pf->lo = (char *)a;
    pf->hi = (char *)b;
    if (pthread_create(&pf->th, NULL, prefault_main, pf)) {
        dp_free(pf);
        return NULL;
    }
    return pf;
#else
    (void)p;
    (void)len;
    return NULL;
#endif
}

void dp_prefault_wait(dp_prefault *pf)
{
    if (!pf)
        return;
    pthread_join(pf->th, NULL);
    dp_free(pf);
}

void dp_indexed_name(char *dst, size_t cap, const char *base, long long i)
{
    if (cap == 0)
        return;
    char tail[24]; /* "[-9223372036854775808]" */
    size_t t = sizeof tail;
    tail[--t] = ']';
    unsigned long long u = i < 0 ? 0ull - (unsigned long long)i : (unsigned long long)i;
    do
        tail[--t] = (char)('0' + u % 10);
    while ((u /= 10) > 0);
    if (i < 0)
        tail[--t] = '-';
    tail[--t] = '[';
    size_t nb = strnlen(base, cap - 1), nt = sizeof tail - t;
    memcpy(dst, base, nb);
    if (nt > cap - 1 - nb)
        nt = cap - 1 - nb;
    memcpy(dst + nb, tail + t, nt);
    dst[nb + nt] = '\0';
}

long dp_alloc_live(void)
{
    return atomic_load(&live_blocks);
}

void dp_alloc_fail_after(long k)
{
    atomic_store(&fail_once, 0);
    atomic_store(&fail_countdown, k);
}

void dp_alloc_fail_once(long k)
{
    atomic_store(&fail_once, 1);
    atomic_store(&fail_countdown, k);
}

/* Length of the well-formed UTF-8 sequence at p (2 to 4), or 0: a stray
 * continuation byte, a bad lead byte, a cut or overlong sequence, a
 * surrogate or a code point past U+10FFFF. */
static int utf8_seq(const unsigned char *p)
{
    unsigned c = p[0];
    int n = c >= 0xc2 && c <= 0xdf ? 2 : c >= 0xe0 && c <= 0xef ? 3 : c >= 0xf0 && c <= 0xf4 ? 4 : 0;
    for (int k = 1; k < n; k++)
        if ((p[k] & 0xc0) != 0x80)
            return 0;
    if ((c == 0xe0 && p[1] < 0xa0) || (c == 0xed && p[1] > 0x9f) || (c == 0xf0 && p[1] < 0x90) ||
        (c == 0xf4 && p[1] > 0x8f))
        return 0;
    return n;
}

const char *dp_esc(char *buf, size_t len, const char *s)
{
    static const char hex[] = "0123456789abcdef";
    if (!len)
        return buf;
    size_t o = 0;
    for (const unsigned char *p = (const unsigned char *)(s ? s : ""); *p;) {
        char e[9];
        size_t k = 0;
        unsigned c = *p;
        int n = c < 0x80 ? 1 : utf8_seq(p);
        if (c == '\n' || c == '\r' || c == '\t') {
            e[k++] = '\\';
            e[k++] = c == '\n' ? 'n' : c == '\r' ? 'r' : 't';
            n = 1;
        } else if (c < 0x20 || c == 0x7f || n == 0 || (c == 0xc2 && p[1] <= 0x9f)) {
            /* C0 controls, DEL, C1 controls (U+0080..U+009F) in UTF-8, and
             * bytes that are not UTF-8 (a lone 0x9b is CSI to an 8-bit
             * terminal): each byte as \xHH. */
            n = n ? n : 1;
            for (int b = 0; b < n; b++) {
                e[k++] = '\\';
                e[k++] = 'x';
                e[k++] = hex[p[b] >> 4];
                e[k++] = hex[p[b] & 15];
            }
        } else {
            for (int b = 0; b < n; b++)
                e[k++] = (char)p[b];
        }
        if (o + k >= len)
            break; /* cut whole escapes only */
        memcpy(buf + o, e, k);
        o += k;
        p += n;
    }
    buf[o] = '\0';
    return buf;
}

const char *dp_excerpt(char *buf, size_t len, const char *s, size_t n)
{
    char cut[DP_EXCERPT_MAX + 4];
    size_t k = 0;
    for (; k < n && k < DP_EXCERPT_MAX && s[k]; k++)
        cut[k] = s[k];
    /* never end inside a UTF-8 sequence: dp_esc would show its bytes */
    while (k > 0 && k < n && s[k] && ((unsigned char)s[k] & 0xc0) == 0x80)
        k--;
    int more = k < n && s[k];
    if (more)
        cut[k++] = '.', cut[k++] = '.', cut[k++] = '.';
    cut[k] = '\0';
    return dp_esc(buf, len, cut);
}

static int sniff_sep(char c)
{
    return c == ',' || c == ';' || c == ' ' || c == '\t';
}

/* A CSV cell as dp_csv_sniff accepts it: a word or a decimal number. */
static int sniff_cell(const char *p, size_t n)
{
    if (n >= 2 && p[0] == '"' && p[n - 1] == '"')
        p++, n -= 2;
    if (!n)
        return 0;
    unsigned char c = (unsigned char)p[0];
    if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_') {
        for (size_t i = 1; i < n; i++) {
            c = (unsigned char)p[i];
            if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
                  (c && strchr("_.()/%+-[]", c))))
                return 0;
        }
        return 1;
    }
    /* [+-] digits [. digits] [e [+-] digits] */
    size_t i = 0, d = 0;
    if (p[i] == '+' || p[i] == '-')
        i++;
    while (i < n && p[i] >= '0' && p[i] <= '9')
        i++, d++;
    if (i < n && p[i] == '.')
        for (i++; i < n && p[i] >= '0' && p[i] <= '9'; i++)
            d++;
    if (!d)
        return 0;
    if (i < n && (p[i] == 'e' || p[i] == 'E')) {
        i++;
        if (i < n && (p[i] == '+' || p[i] == '-'))
            i++;
        if (i >= n || p[i] < '0' || p[i] > '9')
            return 0;
        while (i < n && p[i] >= '0' && p[i] <= '9')
            i++;
    }
    return i == n;
}

long dp_csv_sniff(const char *buf, size_t len)
{
    const char *p = buf, *end = buf + len;
    if (len >= 3 && !memcmp(p, "\xef\xbb\xbf", 3))
        p += 3;
    for (long line = 1; p < end; line++) {
        const char *nl = memchr(p, '\n', (size_t)(end - p));
        const char *le = nl ? nl : end;
        while (p < le && (*p == ' ' || *p == '\t'))
            p++;
        const char *e = le;
        while (e > p && (e[-1] == ' ' || e[-1] == '\t' || e[-1] == '\r'))
            e--;
        if (p == e || *p == '#') {
            p = nl ? nl + 1 : end;
            continue;
        }
        /* A long line is judged by its first 256 bytes (its length is the
         * reader's to report); a cell cut there is not judged. */
        int cut = e - p > 256;
        if (cut)
            e = p + 256;
        while (p < e) { /* cells between separators */
            const char *q = p;
            while (q < e && !sniff_sep(*q))
                q++;
            if (q > p && !(cut && q == e) && !sniff_cell(p, (size_t)(q - p)))
                return line;
            p = q;
            while (p < e && sniff_sep(*p))
                p++;
        }
        return 0;
    }
    return 0; /* nothing but blanks and comments: the reader says "empty" */
}

int dp_err_set(dp_err *err, int code, const char *fmt, ...)
{
    if (err) {
        /* Messages carry user text (values, names, file names): escape it
         * here, once, so no message can hold a raw control character. */
        char raw[sizeof err->msg];
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(raw, sizeof raw, fmt, ap);
        va_end(ap);
        dp_esc(err->msg, sizeof err->msg, raw);
        err->code = code;
    }
    return code;
}

int dp_err_prefix(dp_err *err, const char *fmt, ...)
{
    if (!err)
        return DP_ERUN;
    char raw[512], pre[512], old[sizeof err->msg];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(raw, sizeof raw, fmt, ap);
    va_end(ap);
    dp_esc(pre, sizeof pre, raw);
    memcpy(old, err->msg, sizeof old);
    /* Truncation is fine here: the message is for people. */
    size_t np = strlen(pre);
    if (np > sizeof err->msg - 3)
        np = sizeof err->msg - 3;
    memcpy(err->msg, pre, np);
    err->msg[np] = ':';
    err->msg[np + 1] = ' ';
    size_t room = sizeof err->msg - np - 3, no = strlen(old);
    if (no > room)
        no = room;
    memcpy(err->msg + np + 2, old, no);
    err->msg[np + 2 + no] = '\0';
    return err->code;
}

char *dp_read_file(const char *path, const char *what, long max_bytes, size_t *len, dp_err *err)
{
    struct stat st;
    if (stat(path, &st) != 0) {
        dp_err_set(err, DP_EINPUT, "%s: cannot open %s: %s", path, what, strerror(errno));
        return NULL;
    }
    if (S_ISDIR(st.st_mode)) {
        dp_err_set(err, DP_EINPUT, "%s: is a directory, not a %s", path, what);
        return NULL;
    }
    if (!S_ISREG(st.st_mode)) {
        dp_err_set(err, DP_EINPUT, "%s: not a regular file", path);
        return NULL;
    }
    if (st.st_size > max_bytes) {
        dp_err_set(err, DP_EINPUT, "%s: %s is larger than the %ld MiB limit (got %lld bytes)", path, what,
                   max_bytes >> 20, (long long)st.st_size);
        return NULL;
    }
    FILE *f = fopen(path, "rb");
    if (!f) {
        dp_err_set(err, DP_EINPUT, "%s: cannot open %s: %s", path, what, strerror(errno));
        return NULL;
    }
    size_t cap = (size_t)st.st_size + 1;
    char *buf = dp_malloc(cap);
    if (!buf) {
        fclose(f);
        dp_err_set(err, DP_ENOMEM, "%s: out of memory", path);
        return NULL;
    }
    /* At most cap - 1 bytes: a file that grew since stat is cut, not overrun. */
    size_t n = fread(buf, 1, cap - 1, f);
    int bad = ferror(f);
    fclose(f);
    if (bad) {
        dp_free(buf);
        dp_err_set(err, DP_EINPUT, "%s: read error", path);
        return NULL;
    }
    buf[n] = '\0';
    *len = n;
    return buf;
}

int dp_env_flag(const char *name)
{
    const char *v = getenv(name);
    return v && *v && strcmp(v, "0") != 0;
}

double dp_kth_smallest(double *v, size_t n, size_t k)
{
    size_t lo = 0, hi = n - 1;
    while (lo < hi) {
        double a = v[lo], b = v[lo + (hi - lo) / 2], c = v[hi];
        double pivot = a < b ? (b < c ? b : (a < c ? c : a)) : (a < c ? a : (b < c ? c : b));
        size_t i = lo, j = hi;
        for (;;) { /* the pivot is in [lo, hi], so neither scan runs off it */
            while (v[i] < pivot)
                i++;
            while (v[j] > pivot)
                j--;
            if (i >= j)
                break;
            double t = v[i];
            v[i++] = v[j];
            v[j--] = t;
        }
        /* v[lo .. j] <= pivot <= v[j + 1 .. hi] */
        if (k <= j)
            hi = j;
        else
            lo = j + 1;
    }
    return v[k];
}
