/* cmd_presets.c: dpsim presets: the values `preset: NAME` fills in. */
#include "cli/cli.h"
#include "presets.h"

#include <stdio.h>

static void help(void)
{
    printf("usage: dpsim presets\n\n"
           "List the presets a scenario can start from, with their values and where\n"
           "each value comes from (a datasheet, a model card, a paper or a published\n"
           "measurement, with the arithmetic; a value none of them gives is left out,\n"
           "for the scenario to give):\n"
           "  devices   a device group's kind, memory, peak_flops, efficiency\n"
           "            (devices: [{name: gpu, preset: a100-80gb, batch: 64, ...}])\n"
           "  models    the model mapping (model: {preset: resnet50})\n"
           "  links     a device's access link (link: {preset: dc-ethernet-25g})\n"
           "  wan       a WAN link's latency between two sites, measured between cloud\n"
           "            regions (wan: [{between: [eu, us], preset: azure-eastus-westeurope,\n"
           "            bandwidth: 1Gbps}]); the bandwidth is the scenario's\n"
           "A key the scenario gives itself, or a --set, wins over the preset's value;\n"
           "`dpsim check` prints the values a scenario ends up with and what each preset\n"
           "filled in, and stored runs keep them (the database holds the scenario with\n"
           "its presets written out).\n\n"
           "  -h, --help   this help\n");
}

int cmd_presets(int argc, char **argv)
{
    cli_opts o = {0};
    int rc = cli_parse(argc, argv, "presets", 0, NULL, NULL, NULL, NULL, help, &o);
    if (rc < 0) {
        rc = o.n_pos ? cli_usage_error("presets", "takes no argument (got '%s')", o.pos[0]) : EXIT_OK;
        if (rc == EXIT_OK)
            scn_presets_print(stdout);
    }
    cli_opts_free(&o);
    return rc;
}
