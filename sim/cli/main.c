/* main.c: the dpsim binary is a thin shell over the library (sim/cli/cli.c). */
#include "cli/cli.h"

int main(int argc, char **argv)
{
    return dpsim_main(argc, argv);
}
