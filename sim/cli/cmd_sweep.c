/* cmd_sweep.c: placeholder until sweeps land (issue 6). */
#include "cli/cli.h"

int cmd_sweep(int argc, char **argv)
{
    (void)argc;
    (void)argv;
    fprintf(stderr, "dpsim sweep: not available in this build\n");
    return EXIT_RUN;
}

int cmd_merge(int argc, char **argv)
{
    (void)argc;
    (void)argv;
    fprintf(stderr, "dpsim merge: not available in this build\n");
    return EXIT_RUN;
}
