/* cliopt.c: one option parser for every command (getopt_long), so that
 * --opt=value, --opt value, -o value, -ovalue and bundled short options
 * (-qd x.db) work the same everywhere, and the options most commands share
 * (--db, --no-db, --json, --quiet, --set, --log, --help) are parsed once.
 *
 * A command passes its own options as a getopt_long table plus a short
 * option string and a callback; the shared ones it accepts are chosen by
 * CLI_O_* bits.  Positional arguments (GNU getopt permutes them to the end)
 * are collected in order. */
#include "cli/cli.h"
#include "log.h"
#include "yamltree.h"

#include <getopt.h>
#include <string.h>

enum { K_NODB = 0x1000, K_JSON, K_LOG };

static const struct {
    unsigned bit;
    struct option opt;
    char short_;
} shared[] = {
    {0, {"help", no_argument, NULL, 'h'}, 'h'},
    {CLI_O_DB, {"db", required_argument, NULL, 'd'}, 'd'},
    {CLI_O_NODB, {"no-db", no_argument, NULL, K_NODB}, 0},
    {CLI_O_JSON, {"json", no_argument, NULL, K_JSON}, 0},
    {CLI_O_QUIET, {"quiet", no_argument, NULL, 'q'}, 'q'},
    {CLI_O_SET, {"set", required_argument, NULL, 's'}, 's'},
    {CLI_O_LOG, {"log", required_argument, NULL, K_LOG}, 0},
};
#define N_SHARED (sizeof shared / sizeof *shared)
#define MAX_LONG 64

void cli_opts_free(cli_opts *o)
{
    for (size_t k = 0; k < o->n_ov; k++)
        dp_free(o->ov_buf[k]);
    o->n_ov = 0;
}

/* "the option as typed" for messages: --name or -c. */
static void opt_label(char *buf, size_t len, int c, const struct option *longs, int longidx, char **argv)
{
    if (longidx >= 0 && longs[longidx].name)
        snprintf(buf, len, "--%s", longs[longidx].name);
    else if (c > 0 && c < 0x100)
        snprintf(buf, len, "-%c", c);
    else
        snprintf(buf, len, "%s", argv[optind - 1]);
}

/* "unknown option '--polcy', did you mean '--policy'?" (the nearest of
 * the command's long options, as commands are suggested). */
static int unknown_long(const char *cmd, const char *arg, const struct option *longs, size_t n)
{
    char word[64];
    snprintf(word, sizeof word, "%.*s", (int)strcspn(arg + 2, "="), arg + 2);
    const char *names[MAX_LONG];
    for (size_t k = 0; k < n && k < MAX_LONG; k++)
        names[k] = longs[k].name;
    const char *near = strncmp(arg, "--", 2) == 0 ? yt_nearest(word, names, n) : NULL;
    if (near)
        return cli_usage_error(cmd, "unknown option '%s', did you mean '--%s'?", arg, near);
    return cli_usage_error(cmd, "unknown option '%s'", arg);
}

int cli_parse(int argc, char **argv, const char *cmd, unsigned want, const struct option *own,
              const char *own_short, cli_on_opt on, void *ctx, void (*help)(void), cli_opts *o)
{
    struct option longs[MAX_LONG + 1];
    char shorts[128] = ":"; /* leading ':' : a missing argument returns ':' */
    size_t n = 0;
    memset(o->pos, 0, sizeof o->pos);
    o->n_pos = 0;
    o->n_ov = 0;
    o->n_log = 0;
    o->cmd = cmd;
    if (want & CLI_O_DB)
        o->db = "results.db";
    for (size_t k = 0; k < N_SHARED; k++) {
        if (shared[k].bit && !(want & shared[k].bit))
            continue;
        longs[n++] = shared[k].opt;
        if (shared[k].short_) {
            size_t l = strlen(shorts);
            shorts[l] = shared[k].short_;
            shorts[l + 1] = '\0';
            if (shared[k].opt.has_arg == required_argument)
                strcat(shorts, ":");
        }
    }
    for (size_t k = 0; own && own[k].name && n < MAX_LONG; k++)
        longs[n++] = own[k];
    memset(&longs[n], 0, sizeof longs[n]);
    if (own_short && strlen(shorts) + strlen(own_short) < sizeof shorts)
        strcat(shorts, own_short);

    optind = 0; /* glibc: 0 re-initialises the scanner for this argv */
    opterr = 0; /* our own messages, naming the command */
    for (;;) {
        int longidx = -1;
        int c = getopt_long(argc, argv, shorts, longs, &longidx);
        if (c == -1)
            break;
        char label[64];
        if (c == '?') {
            if (optopt && optopt < 0x100 && argv[optind - 1][1] != '-')
                return cli_usage_error(cmd, "unknown option '-%c'", optopt);
            return unknown_long(cmd, argv[optind - 1], longs, n);
        }
        if (c == ':') {
            if (optopt && optopt < 0x100 && argv[optind - 1][1] != '-')
                return cli_usage_error(cmd, "-%c needs a value", optopt);
            return cli_usage_error(cmd, "%s needs a value", argv[optind - 1]);
        }
        opt_label(label, sizeof label, c, longs, longidx, argv);
        switch (c) {
        case 'h':
            help();
            return EXIT_OK;
        case 'd':
            if (want & CLI_O_DB) {
                o->db = optarg;
                continue;
            }
            break;
        case K_NODB:
            o->db = NULL;
            continue;
        case K_JSON:
            o->json = 1;
            continue;
        case 'q':
            if (want & CLI_O_QUIET) {
                o->quiet = 1;
                continue;
            }
            break;
        case 's':
            if (want & CLI_O_SET) {
                if (o->n_ov == CLI_MAX_SET)
                    return cli_usage_error(cmd, "at most %d --set", CLI_MAX_SET);
                /* `--set key= 20Mbps` or `--set key =20Mbps`: the shell cut
                 * one value in two at a space */
                const char *eq = strchr(optarg, '=');
                if ((eq && !eq[1] && optind < argc) || (!eq && optind < argc && argv[optind][0] == '='))
                    return cli_usage_error(cmd,
                                           "--set '%s' then '%s': a space split the override; write it "
                                           "as one word, KEY=VALUE, quoted if the value has a space "
                                           "(--set '%s%s')",
                                           optarg, argv[optind], optarg, argv[optind]);
                o->ov_text[o->n_ov] = optarg;
                o->ov_buf[o->n_ov] = dp_strdup(optarg);
                if (!o->ov_buf[o->n_ov])
                    return cli_usage_error(cmd, "out of memory");
                if (cli_parse_override(o->ov_buf[o->n_ov], &o->ov[o->n_ov])) {
                    dp_free(o->ov_buf[o->n_ov]);
                    return cli_usage_error(cmd, "bad override '%s' (want KEY=VALUE)", optarg);
                }
                o->n_ov++;
                continue;
            }
            break;
        case K_LOG: {
            dp_err err = {0};
            if (o->n_log == CLI_MAX_LOG)
                return cli_usage_error(cmd, "at most %d --log", CLI_MAX_LOG);
            if (log_enable(optarg, &err))
                return cli_usage_error(cmd, "--log: %s", err.msg);
            o->log_text[o->n_log++] = optarg;
            continue;
        }
        default:
            break;
        }
        if (!on)
            return cli_usage_error(cmd, "unknown option '%s'", label);
        int rc = on(ctx, c, optarg, label);
        if (rc >= 0)
            return rc;
    }
    for (int i = optind; i < argc; i++) {
        if (o->n_pos == CLI_MAX_POS)
            return cli_usage_error(cmd, "too many arguments (at most %d)", CLI_MAX_POS);
        o->pos[o->n_pos++] = argv[i];
    }
    return -1;
}

int cli_one_pos(const cli_opts *o, const char *what)
{
    if (o->n_pos == 1)
        return -1;
    if (o->n_pos == 0)
        return cli_usage_error(o->cmd, "missing %s", what);
    return cli_usage_error(o->cmd, "one %s at a time (got '%s' and '%s')", what, o->pos[0], o->pos[1]);
}
