/* sched_registry.c: the built-in cluster schedulers (sched.h), in the
 * order of tables and plots.  Adding one: a file defining `const sched_def
 * sched_NAME`, one line here and one in meson.build. */
#include "sched.h"

#include <stdio.h>
#include <string.h>

extern const sched_def sched_static, sched_fifo, sched_srf, sched_las, sched_themis, sched_pollux;

static const sched_def *const builtin[] = {&sched_static, &sched_fifo,   &sched_srf,
                                           &sched_las,    &sched_themis, &sched_pollux};
#define N_SCHED (sizeof builtin / sizeof builtin[0])

size_t sched_count(void)
{
    return N_SCHED;
}

const sched_def *sched_at(size_t i)
{
    return i < N_SCHED ? builtin[i] : NULL;
}

const sched_def *sched_find(const char *name)
{
    for (size_t i = 0; name && i < N_SCHED; i++)
        if (strcmp(builtin[i]->name, name) == 0)
            return builtin[i];
    return NULL;
}

void sched_names(char *buf, size_t len, const char *sep)
{
    size_t k = 0;
    if (len)
        buf[0] = '\0';
    for (size_t i = 0; i < N_SCHED && k < len; i++)
        k += (size_t)snprintf(buf + k, len - k, "%s%s", i ? sep : "", builtin[i]->name);
}

void sched_print_help(void *file)
{
    FILE *f = file;
    for (size_t i = 0; i < N_SCHED; i++)
        fprintf(f, "  %-8s %s\n", builtin[i]->name, builtin[i]->summary);
}

void sched_sort(const sched_job *jobs, size_t m, size_t *order,
                int (*cmp)(const sched_job *a, const sched_job *b, const sched_ctx *c), const sched_ctx *c)
{
    for (size_t i = 0; i < m; i++)
        order[i] = i;
    for (size_t i = 1; i < m; i++) {
        size_t x = order[i], k = i;
        while (k > 0 && cmp(&jobs[x], &jobs[order[k - 1]], c) < 0) {
            order[k] = order[k - 1];
            k--;
        }
        order[k] = x;
    }
}

int sched_by_arrival(const sched_job *a, const sched_job *b)
{
    if (a->arrival_s != b->arrival_s)
        return a->arrival_s < b->arrival_s ? -1 : 1;
    if (a->weight != b->weight)
        return a->weight > b->weight ? -1 : 1;
    return a->id < b->id ? -1 : a->id > b->id;
}
