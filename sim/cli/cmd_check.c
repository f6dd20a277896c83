/* cmd_check.c: dpsim check FILE: load, validate, summarise. */
#include "cli/cli.h"
#include "policy/policy.h"

#include <stdlib.h>
#include <string.h>

static void help(void)
{
    printf("usage: dpsim check SCENARIO [--set KEY=VALUE]...\n\n"
           "Load and validate a scenario file and print a summary: each device\n"
           "group, counts, total devices, compute speed (samples/s), link speeds,\n"
           "dataset and model sizes.  SCENARIO may be builtin:paper-testbed.\n\n"
           "  -s, --set KEY=VALUE   override a scenario value before validation\n"
           "                        (e.g. devices.cpu4.link.down=50Mbps)\n"
           "  -h, --help            this help\n\n"
           "Bad input exits 2 with FILE:LINE:COLUMN: key.path: what is wrong (got VALUE).\n");
}

int cmd_check(int argc, char **argv)
{
    cli_opts o = {0};
    int rc = cli_parse(argc, argv, "check", CLI_O_SET | CLI_O_LOG, NULL, NULL, NULL, NULL, help, &o);
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
    scn_print_summary(s, stdout);
    printf("policies\n");
    for (size_t k = 0; k < policy_count(); k++)
        policy_print_options(policy_at(k), s, stdout);
    scn_free(s);
    return EXIT_OK;
}
