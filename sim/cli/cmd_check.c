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
    const char *file = NULL;
    scn_override ov[64];
    size_t n_ov = 0;
    for (int i = 1; i < argc; i++) {
        if (cli_is_help(argv[i])) {
            help();
            return EXIT_OK;
        } else if (strcmp(argv[i], "-s") == 0 || strcmp(argv[i], "--set") == 0) {
            if (++i >= argc)
                return cli_usage_error("check", "%s needs KEY=VALUE", argv[i - 1]);
            if (n_ov == 64 || cli_parse_override(argv[i], &ov[n_ov]))
                return cli_usage_error("check", "bad override '%s' (want KEY=VALUE, at most 64)", argv[i]);
            n_ov++;
        } else if (argv[i][0] == '-' && argv[i][1]) {
            return cli_usage_error("check", "unknown option '%s'", argv[i]);
        } else if (file) {
            return cli_usage_error("check", "one scenario at a time (got '%s' and '%s')", file, argv[i]);
        } else {
            file = argv[i];
        }
    }
    if (!file)
        return cli_usage_error("check", "missing SCENARIO");
    dp_err err = {0};
    scn_scenario *s = cli_load_scenario(file, ov, n_ov, &err);
    if (!s)
        return cli_fail(&err);
    scn_print_summary(s, stdout);
    printf("policies\n");
    for (size_t k = 0; k < policy_count(); k++)
        policy_print_options(policy_at(k), s, stdout);
    scn_free(s);
    return EXIT_OK;
}
