/* cmd_plot.c: placeholder until the plots module lands (issue 5). */
#include "cli/cli.h"

int cmd_plot(int argc, char **argv)
{
    (void)argc;
    (void)argv;
    fprintf(stderr, "dpsim plot: not available in this build\n");
    return EXIT_RUN;
}
