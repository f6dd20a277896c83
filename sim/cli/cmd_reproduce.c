/* cmd_reproduce.c: placeholder until Table 3 calibration lands. */
#include "cli/cli.h"

int cmd_reproduce(int argc, char **argv)
{
    (void)argc;
    (void)argv;
    fprintf(stderr, "dpsim reproduce: not available in this build\n");
    return EXIT_RUN;
}
