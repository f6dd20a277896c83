/* cmd_check.c: dpsim check FILE: load, validate, summarise. */
#include "learner.h"
#include "cli/cli.h"
#include "jobs/jobs.h"
#include "policy/policy.h"

#include <getopt.h>
#include <stdlib.h>
#include <string.h>

static void help(void)
{
    printf("usage: dpsim check SCENARIO [--all] [--set KEY=VALUE]...\n\n"
           "Load and validate a scenario file and print a summary: each device\n"
           "group, counts, total devices, compute speed (samples/s), link speeds,\n"
           "dataset and model sizes.  SCENARIO may be builtin:paper-testbed.\n"
           "With more than %d groups written one by one, the first %d are listed\n"
           "and the others summarised in one block (count per kind and site;\n"
           "min, median and max of batch time, samples/s, links, latency and\n"
           "memory); device tables and drawn populations are always summarised.\n\n"
           "  -a, --all             list every group written one by one\n"
           "  -s, --set KEY=VALUE   override a scenario value before validation\n"
           "                        (e.g. devices.cpu4.link.down=50Mbps)\n"
           "  -h, --help            this help\n\n"
           "A time, bandwidth, size or rate given as a bare number is read in the base\n"
           "unit (s, bit/s, B, B/s) and listed at the end (\"20 -> 20 s (no unit)\"), in\n"
           "case a unit was forgotten (not for keys that name their unit: sample_bytes).\n"
           "Bad input exits 2 with FILE:LINE:COLUMN: key.path: what is wrong (got VALUE).\n",
           SCN_SUMMARY_LIST, SCN_SUMMARY_SHOW);
}

static const struct option own[] = {{"all", no_argument, NULL, 'a'}, {NULL, 0, NULL, 0}};

static int on_opt(void *ctx, int key, const char *arg, const char *label)
{
    (void)arg;
    if (key != 'a')
        return cli_usage_error("check", "unknown option '%s'", label);
    *(int *)ctx = 1;
    return -1;
}

/* A titled list of the loader's notes: the first n of n_all lines. */
static void notes(const char *title, char *const *line, size_t n, size_t n_all)
{
    char e[1100];
    if (!n_all)
        return;
    printf("%s\n", title);
    for (size_t k = 0; k < n; k++)
        printf("  %s\n", dp_esc(e, sizeof e, line[k]));
    if (n_all > n)
        printf("  ... and %zu more\n", n_all - n);
}

int cmd_check(int argc, char **argv)
{
    cli_opts o = {0};
    int all = 0;
    int rc = cli_parse(argc, argv, "check", CLI_O_SET | CLI_O_LOG, own, "a", on_opt, &all, help, &o);
    if (rc >= 0 || (rc = cli_one_pos(&o, "SCENARIO")) >= 0) {
        cli_opts_free(&o);
        return rc;
    }
    const char *file = o.pos[0];
    dp_err err = {0};
    scn_scenario *s = cli_load_scenario(file, o.ov, o.n_ov, &err);
    cli_opts_free(&o);
    if (!s)
        return cli_fail(&err);
    jobs_spec *js =
        jobs_in(s) ? jobs_load_ov(s, o.ov, o.n_ov, &err) : NULL; /* `jobs:` checked too (sim/jobs/) */
    if (jobs_in(s) && !js) {
        scn_free(s);
        return cli_fail(&err);
    }
    scn_print_summary(s, all, stdout);
    if (js)
        printf("jobs\n  %zu jobs (%zu distinct settings), scheduler %s: run them with dpsim jobs\n", js->n,
               js->n_scn, js->sched->name);
    jobs_free(js);
    printf("policies\n");
    for (size_t k = 0; k < policy_count(); k++)
        policy_print_options(policy_at(k), s, stdout);
    lrn_cfg *lc = NULL; /* cli_load_scenario checked it */
    if (scn_learning(s) && lrn_cfg_read(s, &lc, &err) == 0 && lc) {
        char d[512];
        lrn_cfg_describe(lc, d, sizeof d);
        printf("learning\n  %s\n", d);
    }
    lrn_cfg_free(lc);
    /* where the values above came from */
    notes("presets (dpsim presets; the values above include them)", s->preset_notes, s->n_preset_notes,
          s->n_preset_notes_all);
    /* accepted as documented, but perhaps not meant */
    notes("no unit (read in the base unit: scenarios/README.md, Units)", s->unitless, s->n_unitless,
          s->n_unitless_all);
    scn_free(s);
    return EXIT_OK;
}
