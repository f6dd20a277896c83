/* slurm.c: a sweep as a Slurm job array (sweep.h): the shard of an array
 * task from Slurm's variables (`--shard slurm`), and the job script
 * (`--print-sbatch`).  Pure: no processes, no database; the caller reads
 * the environment and writes the file. */
#include "sweep/sweep.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

/* A whole number 0..1000000 from a variable's text; -1 if not. */
static long env_num(const char *text)
{
    if (!text || !*text)
        return -1;
    char *end;
    errno = 0;
    long v = strtol(text, &end, 10);
    if (errno || *end || end == text || v < 0 || v > 1000000)
        return -1;
    return v;
}

int sweep_shard_slurm(const char *id, const char *count, const char *min, const char *step, unsigned *k,
                      unsigned *n, dp_err *err)
{
    if (!id || !count)
        return dp_err_set(err, DP_EINPUT,
                          "--shard slurm: %s is not set: not inside a Slurm job array (submit with sbatch "
                          "--array=0-N, see dpsim sweep --print-sbatch), or give --shard K/N",
                          !id ? "SLURM_ARRAY_TASK_ID" : "SLURM_ARRAY_TASK_COUNT");
    long vi = env_num(id), vc = env_num(count), vm = min ? env_num(min) : 0, vs = step ? env_num(step) : 1;
    if (vi < 0 || vc < 1 || vm < 0 || vs < 1)
        return dp_err_set(err, DP_EINPUT,
                          "--shard slurm: want whole numbers in SLURM_ARRAY_TASK_ID (got '%s'), "
                          "SLURM_ARRAY_TASK_COUNT >= 1 (got '%s'), SLURM_ARRAY_TASK_MIN (got '%s') and "
                          "SLURM_ARRAY_TASK_STEP >= 1 (got '%s')",
                          id, count, min ? min : "unset", step ? step : "unset");
    if (vi < vm || (vi - vm) % vs != 0 || (vi - vm) / vs + 1 > vc)
        return dp_err_set(
            err, DP_EINPUT,
            "--shard slurm: task %ld is not one of %ld tasks %ld, %ld, ... (SLURM_ARRAY_TASK_ID=%s, "
            "SLURM_ARRAY_TASK_MIN=%s, SLURM_ARRAY_TASK_STEP=%s, SLURM_ARRAY_TASK_COUNT=%s): give the "
            "array as a range (--array=0-%ld or with a step), not a list, or use --shard K/N",
            vi, vc, vm, vm + vs, id, min ? min : "unset", step ? step : "unset", count, vc - 1);
    *k = (unsigned)((vi - vm) / vs + 1);
    *n = (unsigned)vc;
    return 0;
}

/* Write s single-quoted for bash ('it'\''s'). */
static void put_quoted(FILE *out, const char *s)
{
    fputc('\'', out);
    for (; *s; s++) {
        if (*s == '\'')
            fputs("'\\''", out);
        else
            fputc(*s, out);
    }
    fputc('\'', out);
}

/* Does option a (exactly, or as "a=VALUE") match name? *inline_val = 1 for
 * the "=VALUE" form. */
static int is_opt(const char *a, const char *name, int *inline_val)
{
    size_t n = strlen(name);
    if (strncmp(a, name, n) != 0)
        return 0;
    if (a[n] == '\0') {
        *inline_val = 0;
        return 1;
    }
    if (a[n] == '=' && name[1] == '-') {
        *inline_val = 1;
        return 1;
    }
    return 0;
}

int sweep_sbatch_write(FILE *out, int argc, char **argv, const char *scenario_abs, unsigned tasks,
                       dp_err *err)
{
    if (!out || !scenario_abs || tasks < 1)
        return dp_err_set(err, DP_EINPUT, "sweep_sbatch_write: missing output, scenario or task count");
    /* Options that take a value (sweep's own list, cmd_sweep.c): their
     * value is not SCENARIO. */
    static const char *const with_value[] = {"-V", "--vary", "-p", "--policy", "--seeds",
                                             "-j", "--jobs", "-d", "--db",     "--shard"};
    /* Set by the script itself, or meaningless in it. */
    static const char *const dropped[] = {"--print-sbatch", "--mpi", "-q",   "--quiet", "-j",
                                          "--jobs",         "-d",    "--db", "--shard"};
    fprintf(out,
            "#!/bin/bash\n"
            "# A dpsim sweep as a Slurm job array, written by `dpsim sweep --print-sbatch`.\n"
            "# Edit the #SBATCH lines for your cluster (partition, time, CPUs), then submit\n"
            "# with `bash THIS_FILE`: it submits itself as the array, and `dpsim merge` as\n"
            "# a job that starts when every task has ended.  (`sbatch THIS_FILE` runs the\n"
            "# array only; merge afterwards with the command at the end.)\n"
            "#\n"
            "# Each task runs its shard of the grid (--shard slurm: task ID - MIN + 1 of\n"
            "# SLURM_ARRAY_TASK_COUNT) into a database on the node's local disk (SQLite\n"
            "# must not be written over a network file system), then copies it to\n"
            "# $OUT/shards/.  Submitting again resumes: each task starts from its copied\n"
            "# shard and runs only what is missing.  Change --array's size freely: the\n"
            "# sharding follows it (but keep it between runs of the same sweep).\n"
            "#SBATCH --job-name=dpsim-sweep\n"
            "#SBATCH --array=0-%u\n"
            "#SBATCH --cpus-per-task=4\n"
            "#SBATCH --time=01:00:00\n"
            "#SBATCH --output=dpsim-sweep-%%A_%%a.out\n"
            "set -euo pipefail\n"
            "DPSIM=${DPSIM:-dpsim}           # the dpsim binary (same version on every node)\n"
            "OUT=${DPSIM_OUT:-$PWD}          # shared directory: shards/ and the merged results.db\n"
            "MERGED=${DPSIM_MERGED:-$OUT/results.db}\n"
            "\n"
            "if [ -z \"${SLURM_ARRAY_TASK_ID:-}\" ]; then\n"
            "    # Submitting: the array, then the merge once all its tasks have ended\n"
            "    # (afterany: the shards that finished are merged even if one failed).\n"
            "    mkdir -p \"$OUT/shards\"\n"
            "    jid=$(sbatch --parsable --export=ALL,DPSIM=\"$DPSIM\",DPSIM_OUT=\"$OUT\" \"$0\")\n"
            "    sbatch --dependency=afterany:\"${jid%%%%;*}\" --job-name=dpsim-merge "
            "--output=dpsim-merge-%%j.out \\\n"
            "        --wrap=\"shopt -s nullglob; \\\"$DPSIM\\\" merge \\\"$MERGED\\\" "
            "\\\"$OUT\\\"/shards/shard-*.db\"\n"
            "    echo \"submitted array job $jid and its merge into $MERGED\"\n"
            "    exit 0\n"
            "fi\n"
            "\n"
            "SHARD=\"$OUT/shards/shard-$SLURM_ARRAY_TASK_ID.db\"\n"
            "LOCAL=\"${TMPDIR:-/tmp}/dpsim-$SLURM_ARRAY_JOB_ID-$SLURM_ARRAY_TASK_ID\"\n"
            "mkdir -p \"$LOCAL\" \"$OUT/shards\"\n"
            "trap 'rm -rf \"$LOCAL\"' EXIT\n"
            "if [ -f \"$SHARD\" ]; then cp \"$SHARD\" \"$LOCAL/shard.db\"; fi  # resume\n"
            "status=0\n"
            "\"$DPSIM\" sweep",
            tasks - 1);
    int after_value = 0, drop_value = 0, scenario_done = 0;
    for (int i = 0; i < argc; i++) {
        const char *a = argv[i];
        if (after_value) {
            after_value = 0;
            if (!drop_value) {
                fputc(' ', out);
                put_quoted(out, a);
            }
            continue;
        }
        int inl = 0, takes = 0, drop = 0;
        for (size_t j = 0; j < sizeof with_value / sizeof *with_value; j++)
            if (is_opt(a, with_value[j], &inl))
                takes = 1;
        for (size_t j = 0; j < sizeof dropped / sizeof *dropped; j++)
            if (is_opt(a, dropped[j], &inl))
                drop = 1;
        if (a[0] == '-' && a[1]) {
            if (takes && !inl) {
                after_value = 1;
                drop_value = drop;
            }
            if (!drop) {
                fputs(" \\\n    ", out);
                put_quoted(out, a);
            }
        } else if (!scenario_done) {
            scenario_done = 1;
            fputc(' ', out);
            put_quoted(out, scenario_abs);
        }
    }
    fprintf(out,
            " \\\n"
            "    --shard slurm --jobs \"${SLURM_CPUS_PER_TASK:-1}\" --db \"$LOCAL/shard.db\" || status=$?\n"
            "# Copy back whatever is stored, even after a failure or an interrupt (a\n"
            "# resubmission resumes from it), through `dpsim merge` into a fresh file:\n"
            "# unlike cp it also takes runs still in the journal of a killed sweep.\n"
            "if [ -f \"$LOCAL/shard.db\" ]; then\n"
            "    rm -f \"$SHARD.part\"\n"
            "    \"$DPSIM\" merge \"$SHARD.part\" \"$LOCAL/shard.db\" >/dev/null && mv \"$SHARD.part\" "
            "\"$SHARD\"\n"
            "fi\n"
            "exit \"$status\"\n"
            "# Merge by hand: dpsim merge results.db shards/shard-*.db\n");
    if (ferror(out))
        return dp_err_set(err, DP_ERUN, "--print-sbatch: writing the script failed");
    return 0;
}
