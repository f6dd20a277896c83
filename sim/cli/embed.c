/* embed.c: build-time tool that turns a file into a C array, so scenario
 * files can be compiled into the binary without xxd or a script.
 * usage: dpsim-embed OUT.c SYMBOL IN */
#include <stdio.h>

int main(int argc, char **argv)
{
    if (argc != 4) {
        fprintf(stderr, "usage: %s OUT.c SYMBOL IN\n", argv[0]);
        return 2;
    }
    FILE *in = fopen(argv[3], "rb");
    if (!in) {
        perror(argv[3]);
        return 1;
    }
    FILE *out = fopen(argv[1], "wb");
    if (!out) {
        perror(argv[1]);
        fclose(in);
        return 1;
    }
    fprintf(out, "/* generated from %s by dpsim-embed; do not edit */\n#include <stddef.h>\n", argv[3]);
    fprintf(out, "const char %s[] = {\n", argv[2]);
    int c;
    size_t n = 0;
    while ((c = fgetc(in)) != EOF) {
        /* as a signed char's value: bytes over 127 (a gzip file) must not
         * overflow `const char` */
        fprintf(out, "%d,%s", c > 127 ? c - 256 : c, (++n % 20) ? "" : "\n");
    }
    fprintf(out, "0};\nconst size_t %s_len = %zu;\n", argv[2], n);
    fclose(in);
    return fclose(out) ? 1 : 0;
}
