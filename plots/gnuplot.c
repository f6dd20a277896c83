/* gnuplot.c: one gnuplot process per plot, fed through a pipe.
 *
 * Why a process and a pipe: no plotting library to link, and the whole
 * program (terminal, labels, inline data blocks) goes down the pipe, so no
 * script file is ever written.  What this file guarantees:
 *
 *  - Nothing from a user or a scenario reaches gnuplot except through
 *    plot_quote: gnuplot single-quoted strings do no escape processing and
 *    no `backquote` substitution (double-quoted ones do both).  Their
 *    documented escape for an apostrophe, doubling it, is not safe: gnuplot
 *    5.4's scanner rejects a doubled quote at the start of a string or two
 *    in a row (try: print 'a'''''), so an apostrophe is written as a
 *    concatenated "'" instead (a double-quoted string of just the
 *    apostrophe: nothing in it to substitute): it's -> 'it'."'".'s'.
 *    Control characters are replaced so a string never spans lines, and
 *    every terminal is set `noenhanced` so ^ _ @ & { } in a name are
 *    printed as they are.
 *  - gnuplot's stdout and stderr go to an anonymous temporary file, not a
 *    pipe: a pipe could fill while we are blocked writing gnuplot's stdin and
 *    both processes would wait forever.  The file is unlinked by tmpfile(),
 *    so nothing is left behind; after gnuplot exits its text is quoted in
 *    the error.
 *  - SIGPIPE is ignored around each write, so gnuplot dying early shows as
 *    EPIPE, latched and reported at close, never as our death.
 *  - exec failure is reported through a close-on-exec pipe (the child writes
 *    errno), so "gnuplot not installed" is told apart from "gnuplot failed".
 *  - gnuplot draws into OUT.part, renamed over OUT only on success.
 */
#include "plots.h"

#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

#define GP_BUF       65536
#define INSTALL_HINT "install it (apt-get install gnuplot-nox) or set DPSIM_GNUPLOT to its path"

struct plot_gp {
    pid_t pid;
    int fd;           /* gnuplot's stdin, write end */
    FILE *log;        /* gnuplot's stdout + stderr (anonymous temporary file) */
    int werr;         /* latched errno of the first failed write, 0 if none */
    size_t len;       /* bytes in buf */
    char *buf;        /* GP_BUF bytes */
    char *out, *part; /* final and temporary output paths */
    char prog[256];   /* the program started, for messages */
    /* batched (plot_batch_begin): the program goes to mem instead of a
     * process, and plot_batch_end draws it */
    int batched;
    char *mem;
    size_t mem_len, mem_cap;
};

/* The plots of a batch, in order: each one's program and paths. */
typedef struct batch_item {
    char *script, *out, *part;
    size_t len;
} batch_item;

static struct {
    int on;
    batch_item *items;
    size_t n, cap;
} batch;

/* Length of the valid UTF-8 sequence at s (1-4), 0 if invalid. */
static size_t utf8_len(const unsigned char *s)
{
    if (s[0] < 0x80)
        return 1;
    size_t n;
    unsigned min;
    unsigned cp;
    if ((s[0] & 0xe0) == 0xc0) {
        n = 2, min = 0x80, cp = s[0] & 0x1fu;
    } else if ((s[0] & 0xf0) == 0xe0) {
        n = 3, min = 0x800, cp = s[0] & 0x0fu;
    } else if ((s[0] & 0xf8) == 0xf0) {
        n = 4, min = 0x10000, cp = s[0] & 0x07u;
    } else {
        return 0;
    }
    for (size_t i = 1; i < n; i++) {
        if ((s[i] & 0xc0) != 0x80)
            return 0;
        cp = (cp << 6) | (s[i] & 0x3fu);
    }
    /* Overlong forms, surrogates and values past U+10FFFF are invalid. */
    if (cp < min || cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff))
        return 0;
    return n;
}

char *plot_quote(const char *s, char *buf, size_t cap)
{
    if (!buf || cap < 3) {
        if (buf && cap)
            buf[0] = '\0';
        return buf;
    }
    size_t o = 0;
    int in_sq = 0; /* inside an open '...' chunk */
    const unsigned char *p = (const unsigned char *)(s ? s : "");
    while (*p) {
        size_t n = utf8_len(p);
        char tmp[4];
        size_t tn;
        if (n == 0) {
            tmp[0] = '?', tn = 1, n = 1;
        } else if (n == 1 && (*p < 0x20 || *p == 0x7f)) {
            tmp[0] = ' ', tn = 1;
        } else {
            memcpy(tmp, p, n);
            tn = n;
        }
        if (tn == 1 && tmp[0] == '\'') {
            /* [close] [.] "'" : the expression is closed afterwards */
            size_t need = (size_t)in_sq + (o > 0) + 3;
            if (o + need + 1 > cap)
                break;
            if (in_sq)
                buf[o++] = '\'';
            if (o > 0)
                buf[o++] = '.';
            memcpy(buf + o, "\"'\"", 3);
            o += 3;
            in_sq = 0;
        } else {
            /* [.] [open] bytes, and room left to close the chunk */
            size_t need = (in_sq ? 0 : (size_t)(o > 0) + 1) + tn + 1;
            if (o + need + 1 > cap)
                break;
            if (!in_sq) {
                if (o > 0)
                    buf[o++] = '.';
                buf[o++] = '\'';
                in_sq = 1;
            }
            memcpy(buf + o, tmp, tn);
            o += tn;
        }
        p += n;
    }
    if (in_sq)
        buf[o++] = '\'';
    if (o == 0) {
        buf[o++] = '\'';
        buf[o++] = '\'';
    }
    buf[o] = '\0';
    return buf;
}

int plot_format_for(const char *out_path, const char **format, dp_err *err)
{
    const char *dot = out_path ? strrchr(out_path, '.') : NULL;
    const char *slash = out_path ? strrchr(out_path, '/') : NULL;
    if (dot && (!slash || dot > slash)) {
        static const char *const known[] = {"png", "svg", "pdf"};
        for (size_t k = 0; k < 3; k++)
            if (strcasecmp(dot + 1, known[k]) == 0) {
                *format = known[k];
                return 0;
            }
    }
    return dp_err_set(err, DP_EINPUT, "output file '%s': the name must end in .png, .svg or .pdf",
                      out_path ? out_path : "");
}

/* Write all of buf[0..n) to fd; on failure latch errno in gp->werr. */
static void write_all(plot_gp *gp, const char *p, size_t n)
{
    if (gp->werr)
        return;
    if (gp->batched) {
        if (gp->mem_len + n + 1 > gp->mem_cap) {
            size_t nc = gp->mem_cap ? gp->mem_cap : GP_BUF;
            while (nc < gp->mem_len + n + 1)
                nc *= 2;
            char *nm = dp_realloc(gp->mem, nc);
            if (!nm) {
                gp->werr = ENOMEM;
                return;
            }
            gp->mem = nm;
            gp->mem_cap = nc;
        }
        memcpy(gp->mem + gp->mem_len, p, n);
        gp->mem_len += n;
        return;
    }
    struct sigaction ign, old;
    memset(&ign, 0, sizeof ign);
    ign.sa_handler = SIG_IGN;
    sigemptyset(&ign.sa_mask);
    sigaction(SIGPIPE, &ign, &old);
    while (n > 0) {
        ssize_t w = write(gp->fd, p, n);
        if (w < 0) {
            if (errno == EINTR)
                continue;
            gp->werr = errno ? errno : EIO;
            break;
        }
        p += w;
        n -= (size_t)w;
    }
    sigaction(SIGPIPE, &old, NULL);
}

static void flush_buf(plot_gp *gp)
{
    write_all(gp, gp->buf, gp->len);
    gp->len = 0;
}

void plot_gp_printf(plot_gp *gp, const char *fmt, ...)
{
    if (!gp || gp->werr)
        return;
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(gp->buf + gp->len, GP_BUF - gp->len, fmt, ap);
    va_end(ap);
    if (n < 0)
        return;
    if ((size_t)n < GP_BUF - gp->len) {
        gp->len += (size_t)n;
    } else {
        /* Did not fit: flush what was there, then format into a block of
         * its own (rare: only very long lines). */
        flush_buf(gp);
        char *big = dp_malloc((size_t)n + 1);
        if (!big) {
            gp->werr = ENOMEM;
            return;
        }
        va_start(ap, fmt);
        vsnprintf(big, (size_t)n + 1, fmt, ap);
        va_end(ap);
        write_all(gp, big, (size_t)n);
        dp_free(big);
    }
    if (gp->len > GP_BUF / 2)
        flush_buf(gp);
}

void plot_gp_str(plot_gp *gp, const char *s)
{
    char q[2010]; /* 400 bytes of text, each at most 5 bytes quoted, + quotes */
    char lim[401];
    size_t n = strlen(s ? s : "");
    if (n > 400) {
        memcpy(lim, s, 400);
        lim[400] = '\0';
        s = lim;
    }
    plot_quote(s, q, sizeof q);
    plot_gp_printf(gp, "%s", q);
}

static void gp_free(plot_gp *gp)
{
    if (!gp)
        return;
    if (gp->fd >= 0)
        close(gp->fd);
    if (gp->log)
        fclose(gp->log);
    dp_free(gp->buf);
    dp_free(gp->out);
    dp_free(gp->part);
    dp_free(gp->mem);
    dp_free(gp);
}

static int has_control(const char *s)
{
    for (const unsigned char *p = (const unsigned char *)s; *p; p++)
        if (*p < 0x20 || *p == 0x7f)
            return 1;
    return 0;
}

/* Start gnuplot for gp (its stdin: gp->fd).  0, or an error (gp is left
 * for the caller to free). */
static int gp_spawn(plot_gp *gp, dp_err *err)
{
    const char *env = getenv("DPSIM_GNUPLOT");
    const int from_env = env && *env;
    snprintf(gp->prog, sizeof gp->prog, "%s", from_env ? env : "gnuplot");

    gp->log = tmpfile();
    int in[2] = {-1, -1}, st[2] = {-1, -1};
    if (!gp->log || pipe(in) || pipe(st)) {
        int e = errno;
        for (int k = 0; k < 2; k++) {
            if (in[k] >= 0)
                close(in[k]);
            if (st[k] >= 0)
                close(st[k]);
        }
        return dp_err_set(err, DP_ERUN, "cannot start gnuplot: %s", strerror(e));
    }
    fcntl(in[1], F_SETFD, FD_CLOEXEC);
    fcntl(st[0], F_SETFD, FD_CLOEXEC);
    fcntl(st[1], F_SETFD, FD_CLOEXEC);
    fflush(NULL); /* the child must not flush our buffered output twice */
    pid_t pid = fork();
    if (pid < 0) {
        int e = errno;
        close(in[0]), close(in[1]), close(st[0]), close(st[1]);
        return dp_err_set(err, DP_ERUN, "cannot start gnuplot: fork: %s", strerror(e));
    }
    if (pid == 0) {
        /* Child: only async-signal-safe calls from here to exec. */
        int lfd = fileno(gp->log);
        signal(SIGPIPE, SIG_DFL);
        if (dup2(in[0], 0) < 0 || dup2(lfd, 1) < 0 || dup2(lfd, 2) < 0) {
            int e = errno;
            ssize_t w = write(st[1], &e, sizeof e);
            (void)w;
            _exit(127);
        }
        close(in[0]);
        char *argv[] = {gp->prog, NULL};
        execvp(gp->prog, argv);
        int e = errno;
        ssize_t w = write(st[1], &e, sizeof e);
        (void)w;
        _exit(127);
    }
    close(in[0]);
    close(st[1]);
    int child_errno = 0;
    ssize_t r;
    do {
        r = read(st[0], &child_errno, sizeof child_errno);
    } while (r < 0 && errno == EINTR);
    close(st[0]);
    gp->pid = pid;
    gp->fd = in[1];
    if (r == (ssize_t)sizeof child_errno) {
        int status;
        while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
        }
        gp->pid = -1;
        if (child_errno == ENOENT)
            return dp_err_set(err, DP_ERUN, "gnuplot not found (%s%s): plots need gnuplot; " INSTALL_HINT,
                              from_env ? "DPSIM_GNUPLOT=" : "looked for 'gnuplot' on PATH",
                              from_env ? gp->prog : "");
        return dp_err_set(err, DP_ERUN, "cannot run gnuplot '%s': %s; " INSTALL_HINT, gp->prog,
                          strerror(child_errno));
    }
    return 0;
}

/* 0 when out_path's directory exists and is writable, else an error
 * naming it.  Checked before gnuplot starts: gnuplot that cannot open its
 * output draws to its stdout instead, and its error would be the image. */
static int check_out_dir(const char *out_path, dp_err *err)
{
    char dir[3001];
    const char *slash = strrchr(out_path, '/');
    if (!slash)
        snprintf(dir, sizeof dir, ".");
    else if (slash == out_path)
        snprintf(dir, sizeof dir, "/");
    else
        snprintf(dir, sizeof dir, "%.*s", (int)(slash - out_path), out_path);
    struct stat sb;
    if (stat(dir, &sb) != 0)
        return dp_err_set(err, DP_ERUN, "cannot write %s: directory '%s': %s", out_path, dir,
                          strerror(errno));
    if (!S_ISDIR(sb.st_mode))
        return dp_err_set(err, DP_ERUN, "cannot write %s: '%s' is not a directory", out_path, dir);
    if (access(dir, W_OK) != 0)
        return dp_err_set(err, DP_ERUN, "cannot write %s: directory '%s': %s", out_path, dir,
                          strerror(errno));
    return 0;
}

/* 1 when the file gnuplot wrote at path is whole: a PNG ends with its IEND
 * chunk, a PDF with %%EOF, an SVG with </svg> (each told by its first
 * bytes).  gnuplot exits 0 even when its output was cut short (a full
 * disk), so the file itself is the only witness. */
static int file_complete(const char *path)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return 0;
    unsigned char head[8] = {0}, tail[1024];
    size_t nh = fread(head, 1, sizeof head, f), nt = 0;
    long size = fseek(f, 0, SEEK_END) == 0 ? ftell(f) : -1;
    if (size > 0 && fseek(f, size > (long)sizeof tail ? size - (long)sizeof tail : 0, SEEK_SET) == 0)
        nt = fread(tail, 1, sizeof tail, f);
    fclose(f);
    if (size <= 0)
        return 0;
    static const unsigned char png_sig[8] = {0x89, 'P', 'N', 'G', '\r', '\n', 0x1a, '\n'};
    static const unsigned char png_end[12] = {0, 0, 0, 0, 'I', 'E', 'N', 'D', 0xae, 0x42, 0x60, 0x82};
    const char *mark = NULL;
    if (nh == 8 && !memcmp(head, png_sig, 8))
        return nt >= 12 && !memcmp(tail + nt - 12, png_end, 12);
    if (nh >= 4 && !memcmp(head, "%PDF", 4))
        mark = "%%EOF";
    else if (nh >= 5 && (!memcmp(head, "<?xml", 5) || !memcmp(head, "<svg", 4)))
        mark = "</svg>";
    if (!mark)
        return 1; /* a format not checked here */
    size_t ml = strlen(mark);
    for (size_t i = nt >= ml ? nt - ml + 1 : 0; i-- > 0;)
        if (!memcmp(tail + i, mark, ml))
            return 1;
    return 0;
}

/* A plot_gp for out_path, no process yet (gnuplot's part of plot_gp_open). */
static plot_gp *gp_new(const char *out_path, dp_err *err)
{
    /* A name with a newline cannot be quoted faithfully: replacing the
     * character would write a file under another name. */
    if (has_control(out_path) || strlen(out_path) > 3000) {
        dp_err_set(err, DP_EINPUT, "output file '%.200s': control characters or a name over 3000 bytes",
                   out_path);
        return NULL;
    }
    if (check_out_dir(out_path, err))
        return NULL;
    plot_gp *gp = dp_calloc(1, sizeof *gp);
    if (!gp) {
        dp_err_set(err, DP_ENOMEM, "out of memory starting gnuplot");
        return NULL;
    }
    gp->fd = -1;
    gp->pid = -1;
    gp->buf = dp_malloc(GP_BUF);
    gp->out = dp_strdup(out_path);
    gp->part = dp_malloc(strlen(out_path) + 6);
    if (!gp->buf || !gp->out || !gp->part) {
        gp_free(gp);
        dp_err_set(err, DP_ENOMEM, "out of memory starting gnuplot");
        return NULL;
    }
    sprintf(gp->part, "%s.part", out_path);
    return gp;
}

/* gp_new and gp_spawn: gnuplot running for out_path, or NULL (err says why). */
static plot_gp *gp_start(const char *out_path, dp_err *err)
{
    plot_gp *gp = gp_new(out_path, err);
    if (gp && gp_spawn(gp, err)) {
        gp_free(gp);
        return NULL;
    }
    return gp;
}

plot_gp *plot_gp_open(const char *out_path, int width_px, int height_px, dp_err *err)
{
    const char *format;
    if (plot_format_for(out_path, &format, err))
        return NULL;
    plot_gp *gp = batch.on ? gp_new(out_path, err) : gp_start(out_path, err);
    if (!gp)
        return NULL;
    gp->batched = batch.on;

    if (!strcmp(format, "png"))
        plot_gp_printf(gp,
                       "set terminal pngcairo size %d,%d noenhanced font 'Sans,12' background rgb 'white'\n",
                       width_px, height_px);
    else if (!strcmp(format, "svg"))
        plot_gp_printf(gp, "set terminal svg size %d,%d noenhanced font 'Sans,12' background rgb 'white'\n",
                       width_px, height_px);
    else
        plot_gp_printf(gp, "set terminal pdfcairo size %.2fin,%.2fin noenhanced font 'Sans,9'\n",
                       width_px / 100.0, height_px / 100.0);
    plot_gp_printf(gp, "set encoding utf8\nset output ");
    plot_gp_str(gp, gp->part);
    plot_gp_printf(gp, "\n");
    return gp;
}

/* Up to cap-1 bytes of gnuplot's output, on one line: the last lines, where
 * its error message is, with runs of blanks and newlines squeezed. */
static void read_log(plot_gp *gp, char *out, size_t cap)
{
    out[0] = '\0';
    if (!gp->log || cap < 2)
        return;
    fflush(gp->log);
    if (fseek(gp->log, 0, SEEK_END))
        return;
    long size = ftell(gp->log);
    long from = size > 4000 ? size - 4000 : 0;
    fseek(gp->log, from, SEEK_SET);
    char raw[4001], norm[4001];
    size_t n = fread(raw, 1, sizeof raw - 1, gp->log);
    /* Not text (gnuplot drew an image to its stdout): say so, never quote it. */
    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)raw[i];
        if ((c < 0x20 && c != '\n' && c != '\r' && c != '\t') || c == 0x7f) {
            snprintf(out, cap, "(%ld bytes of output that is not text)", size);
            return;
        }
    }
    size_t o = 0;
    int sep = 0; /* 0 none pending, 1 a blank, 2 a line break */
    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)raw[i];
        if (c <= ' ' || c == 0x7f) {
            int k = c == '\n' ? 2 : 1;
            sep = k > sep ? k : sep;
            continue;
        }
        if (sep && o > 0) {
            if (sep == 2)
                norm[o++] = ' ', norm[o++] = '|';
            norm[o++] = ' ';
        }
        sep = 0;
        norm[o++] = (char)c;
        if (o + 4 >= sizeof norm)
            break;
    }
    norm[o] = '\0';
    if (o < cap) {
        memcpy(out, norm, o + 1);
    } else {
        /* the tail is where gnuplot says what went wrong */
        snprintf(out, cap, "...%s", norm + (o - (cap - 4)));
    }
}

static int grow_items(void);

/* gnuplot has its whole program: close its stdin and wait for it. */
static pid_t gp_wait(plot_gp *gp, int *status)
{
    close(gp->fd);
    gp->fd = -1;
    pid_t w;
    while ((w = waitpid(gp->pid, status, 0)) < 0 && errno == EINTR) {
    }
    gp->pid = -1;
    return w;
}

/* A batched plot's program joins the batch (gp is freed). */
static int batch_add(plot_gp *gp, dp_err *err)
{
    plot_gp_printf(gp, "unset output\nreset\n"); /* the next program starts from gnuplot's defaults */
    flush_buf(gp);
    int rc = 0;
    if (gp->werr || (batch.n == batch.cap && grow_items()))
        rc = dp_err_set(err, DP_ENOMEM, "out of memory drawing %s", gp->out);
    else {
        batch.items[batch.n++] = (batch_item){gp->mem, gp->out, gp->part, gp->mem_len};
        gp->mem = gp->out = gp->part = NULL;
    }
    gp_free(gp);
    return rc;
}

int plot_gp_close(plot_gp *gp, dp_err *err)
{
    if (!gp)
        return 0;
    if (gp->batched)
        return batch_add(gp, err);
    plot_gp_printf(gp, "unset output\n");
    flush_buf(gp);
    int status = 0;
    pid_t w = gp_wait(gp, &status);
    char log[600];
    read_log(gp, log, sizeof log);
    int rc = 0;
    if (w < 0) {
        rc = dp_err_set(err, DP_ERUN, "gnuplot: cannot wait for it: %s", strerror(errno));
    } else if (WIFSIGNALED(status)) {
        rc = dp_err_set(err, DP_ERUN, "gnuplot ('%s') was killed by signal %d drawing %s%s%s", gp->prog,
                        WTERMSIG(status), gp->out, *log ? ": " : "", log);
    } else if (WEXITSTATUS(status) != 0) {
        rc = dp_err_set(err, DP_ERUN, "gnuplot ('%s') failed (exit status %d) drawing %s%s%s", gp->prog,
                        WEXITSTATUS(status), gp->out, *log ? ": " : "", log);
    } else if (gp->werr) {
        rc = dp_err_set(err, DP_ERUN,
                        "gnuplot ('%s') exited before reading the whole plot (%s) drawing %s%s%s", gp->prog,
                        strerror(gp->werr), gp->out, *log ? ": " : "", log);
    } else {
        struct stat sb;
        if (stat(gp->part, &sb) || sb.st_size == 0)
            rc = dp_err_set(err, DP_ERUN, "gnuplot ('%s') exited without writing %s%s%s", gp->prog, gp->out,
                            *log ? ": " : "", log);
        else if (!file_complete(gp->part))
            rc = dp_err_set(err, DP_ERUN,
                            "gnuplot ('%s') exited 0 but %s is incomplete (%lld bytes, cut short: is the "
                            "disk full?)%s%s",
                            gp->prog, gp->out, (long long)sb.st_size, *log ? ": " : "", log);
        else if (rename(gp->part, gp->out))
            rc = dp_err_set(err, DP_ERUN, "cannot rename %s to %s: %s", gp->part, gp->out, strerror(errno));
    }
    if (rc)
        unlink(gp->part);
    gp_free(gp);
    return rc;
}

void plot_gp_abort(plot_gp *gp)
{
    if (!gp)
        return;
    if (gp->fd >= 0) {
        close(gp->fd);
        gp->fd = -1;
    }
    if (gp->pid > 0) {
        kill(gp->pid, SIGTERM);
        int status;
        while (waitpid(gp->pid, &status, 0) < 0 && errno == EINTR) {
        }
    }
    unlink(gp->part);
    gp_free(gp);
}

plot_gp *plot_open(const plot_sel *sel, const char *out_path, int w, int h, dp_err *err)
{
    return plot_gp_open(out_path, sel && sel->width_px > 0 ? sel->width_px : w,
                        sel && sel->height_px > 0 ? sel->height_px : h, err);
}

void plot_title(plot_gp *gp, const char *user, const char *line1, const char *line2)
{
    plot_gp_printf(gp, "set title ");
    if (user) {
        plot_gp_str(gp, user);
    } else {
        plot_gp_str(gp, line1);
        if (line2 && *line2) {
            plot_gp_printf(gp, " . \"\\n\" . ");
            plot_gp_str(gp, line2);
        }
    }
    plot_gp_printf(gp, " font ',14'\n");
}

/* ---- batches ------------------------------------------------------------------ */

static int grow_items(void)
{
    size_t nc = batch.cap ? 2 * batch.cap : 8;
    batch_item *ni = dp_realloc(batch.items, nc * sizeof *ni);
    if (!ni)
        return -1;
    batch.items = ni;
    batch.cap = nc;
    return 0;
}

static void batch_clear(void)
{
    for (size_t k = 0; k < batch.n; k++) {
        dp_free(batch.items[k].script);
        dp_free(batch.items[k].out);
        dp_free(batch.items[k].part);
    }
    dp_free(batch.items);
    batch.items = NULL;
    batch.n = batch.cap = 0;
}

void plot_batch_begin(void)
{
    batch_clear();
    batch.on = 1;
}

/* Every program in one gnuplot: 1 when it exited cleanly having written
 * every part file, 0 otherwise (*started 0: it could not start, err says
 * why). */
static int batch_draw_all(int *started, dp_err *err)
{
    plot_gp *gp = gp_start(batch.items[0].out, err);
    *started = gp != NULL;
    if (!gp)
        return 0;
    for (size_t k = 0; k < batch.n; k++)
        write_all(gp, batch.items[k].script, batch.items[k].len);
    int status = 0;
    pid_t w = gp_wait(gp, &status);
    int ok = w >= 0 && WIFEXITED(status) && WEXITSTATUS(status) == 0 && !gp->werr;
    for (size_t k = 0; ok && k < batch.n; k++) {
        ok = file_complete(batch.items[k].part); /* else drawn again one by one, to say which */
    }
    gp_free(gp);
    return ok;
}

int plot_batch_end(dp_err *err)
{
    batch.on = 0;
    if (!batch.n)
        return 0;
    int rc = 0, started = 0;
    if (batch_draw_all(&started, err)) {
        for (size_t k = 0; !rc && k < batch.n; k++)
            if (rename(batch.items[k].part, batch.items[k].out))
                rc = dp_err_set(err, DP_ERUN, "cannot rename %s to %s: %s", batch.items[k].part,
                                batch.items[k].out, strerror(errno));
    } else if (!started) {
        rc = err && err->code ? err->code : DP_ERUN; /* gnuplot missing or not started: err says why */
    } else {
        /* Something went wrong: draw them one by one, each with its own
         * process, so the error names the plot and quotes gnuplot. */
        for (size_t k = 0; k < batch.n; k++)
            unlink(batch.items[k].part);
        for (size_t k = 0; !rc && k < batch.n; k++) {
            plot_gp *gp = gp_start(batch.items[k].out, err);
            if (!gp) {
                rc = err && err->code ? err->code : DP_ERUN;
                break;
            }
            write_all(gp, batch.items[k].script, batch.items[k].len);
            rc = plot_gp_close(gp, err);
        }
    }
    for (size_t k = 0; rc && k < batch.n; k++)
        unlink(batch.items[k].part);
    batch_clear();
    return rc;
}
