/* dp_common.h: the two things every dpsim module shares.
 *
 *  - One allocation hook (dp_malloc & co.).  All library allocations go
 *    through it so tests can count live blocks (a leak is a non-zero count
 *    after a _free) and inject out-of-memory (dp_alloc_fail_after).
 *  - One error type (dp_err).  Fallible functions return an int status
 *    (0 ok, negative error) or NULL, and fill an optional dp_err with one
 *    human message that names the object, the value and, for input files,
 *    FILE:LINE:COLUMN.  A NULL dp_err* is allowed everywhere.
 */
#ifndef DP_COMMON_H
#define DP_COMMON_H

#include <stddef.h>
#include <stdint.h>

#if defined(__GNUC__)
#define DP_PRINTF(a, b) __attribute__((format(printf, a, b)))
#else
#define DP_PRINTF(a, b)
/* ---- files -------------------------------------------------------------- */
/* Read a whole regular file of at most max_bytes into a NUL-terminated
 * dp_malloc'd buffer (*len = its length).  `what` names the file's role in
 * messages ("scenario file", "trace file").  DP_EINPUT: missing, a
 * directory, not a regular file, over the limit (refused from its size,
 * unread), unreadable; DP_ENOMEM.  A file that grows while read is cut at
 * the size it had. */
char *dp_read_file(const char *path, const char *what, long max_bytes, size_t *len, dp_err *err);

#endif

/* ---- allocation ------------------------------------------------------- */
void *dp_malloc(size_t n);
void *dp_calloc(size_t count, size_t size); /* overflow-checked */
void *dp_realloc(void *p, size_t n);
/* Room for `need` elements of `elem` bytes in the array at *p (*cap of
 * them allocated): the capacity doubles from `first` until it holds need.
 * 0, or -1 when out of memory or the size overflows (the array as it was). */
int dp_grow(void **p, size_t *cap, size_t need, size_t elem, size_t first);
void dp_free(void *p);
char *dp_strdup(const char *s);
/* snprintf(dst, cap, "%s[%lld]", base, i), the same bytes (truncated to
 * cap - 1 and terminated when cap > 0), without the format machinery:
 * naming 10^6 devices with snprintf was a fifth of loading them. */
void dp_indexed_name(char *dst, size_t cap, const char *base, long long i);
/* Fault in [p, p + len) on a second thread while the caller fills it: a
 * new array of 10^6 records costs a page fault per 4 KiB, a fifth of
 * loading 10^6 devices, and the other core is idle then.  The kernel maps
 * zeroed pages without writing a byte (Linux's MADV_POPULATE_WRITE), so the
 * caller may write the range meanwhile; the range must stay allocated until
 * dp_prefault_wait.  NULL when it would not help (under 8 MiB, no such
 * madvise, no memory or thread for it): the pages then fault in as they are
 * written, as without. */
typedef struct dp_prefault dp_prefault;
dp_prefault *dp_prefault_start(void *p, size_t len);
/* Wait for it to end and free it (NULL: nothing to do). */
void dp_prefault_wait(dp_prefault *pf);
/* Number of blocks handed out and not yet freed (library-wide). */
long dp_alloc_live(void);
/* Make the k-th allocation from now (k >= 1) and every later one fail;
 * k = 0 turns failure injection off.  Test-only. */
void dp_alloc_fail_after(long k);
/* Make the k-th allocation from now fail and no other (a failure the
 * code may recover from); dp_alloc_fail_after(0) turns it off.  Test-only. */
void dp_alloc_fail_once(long k);

/* ---- errors ----------------------------------------------------------- */
enum {
    DP_OK = 0,
    DP_EINPUT = -2, /* bad input: exit code 2 */
    DP_ERUN = -1,   /* the run failed (I/O, database, stall): exit code 1 */
    DP_ENOMEM = -3,
};

typedef struct dp_err {
    int code;       /* one of the DP_E* values */
    char msg[1024]; /* one line, no trailing newline */
} dp_err;

/* Copy s to buf (len bytes, NUL-terminated; cut before an escape that does
 * not fit) with every control character escaped: \n, \r, \t, and \xHH for
 * the other C0 controls, DEL, the UTF-8 encoded C1 controls and every byte
 * that is not part of well-formed UTF-8 (8-bit terminals take 0x9b for CSI).  What is
 * printed from it stays one line and cannot drive the terminal.  Every
 * user-provided string printed to a terminal goes through it (dp_err_set
 * does it for messages).  Returns buf; s == NULL gives "". */
const char *dp_esc(char *buf, size_t len, const char *s);

/* An excerpt of s[0, n) (a line of an input file) for a message: at most
 * DP_EXCERPT_MAX characters of it, then "...", escaped as dp_esc does.
 * Messages quote files only through it, and only lines of files that passed
 * dp_csv_sniff: a scenario may name any file (`from_csv: /etc/shadow`). */
#define DP_EXCERPT_MAX 40
const char *dp_excerpt(char *buf, size_t len, const char *s, size_t n);
/* 0 when buf[0, len) looks like a CSV file (a trace, a device table) by its
 * first line that is not blank or a # comment (a UTF-8 BOM skipped): words
 * and numbers separated by commas, semicolons, tabs or spaces, where a word
 * is a letter or '_' then letters, digits and _ . ( ) / % + - [ ] (double
 * quotes around it allowed) and a number is a decimal one (judged on the
 * line's first 256 bytes).  Else the number of that line (1 for a first
 * line of binary bytes), which a message names without quoting it. */
long dp_csv_sniff(const char *buf, size_t len);

/* 1 when the environment variable `name` is set to anything but "" or "0"
 * (the switches that turn a fast path off to compare, e.g.
 * DPSIM_NET_NO_STAR). */
int dp_env_flag(const char *name);

/* The k-th smallest of v[0, n) (k < n, no NaN; v is reordered, v[0, k]
 * then holds the k + 1 smallest): Hoare's selection, O(n) expected, for a
 * median of 10^5 or 10^6 values without sorting them. */
double dp_kth_smallest(double *v, size_t n, size_t k);

/* Fill err (if not NULL) with code and a printf-style message, control
 * characters escaped (dp_esc); returns code. */
int dp_err_set(dp_err *err, int code, const char *fmt, ...) DP_PRINTF(3, 4);
/* Prefix an existing message: "PREFIX: old message". */
int dp_err_prefix(dp_err *err, const char *fmt, ...) DP_PRINTF(2, 3);

/* ---- files -------------------------------------------------------------- */
/* Read a whole regular file of at most max_bytes into a NUL-terminated
 * dp_malloc'd buffer (*len = its length).  `what` names the file's role in
 * messages ("scenario file", "trace file").  DP_EINPUT: missing, a
 * directory, not a regular file, over the limit (refused from its size,
 * unread), unreadable; DP_ENOMEM.  A file that grows while read is cut at
 * the size it had. */
char *dp_read_file(const char *path, const char *what, long max_bytes, size_t *len, dp_err *err);

#endif
