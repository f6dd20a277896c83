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

/* Write s single-quoted for sh and bash ('it'\''s'): inside single quotes
 * nothing is special (not $, `, \, " nor a newline), so any byte string is
 * passed on as one word. */
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

/* " \\\n    OPT 'VALUE'" (VALUE NULL: the option alone). */
static void put_opt(FILE *out, const char *opt, const char *value)
{
    fprintf(out, " \\\n    %s", opt);
    if (value) {
        fputc(' ', out);
        put_quoted(out, value);
    }
}

int sweep_sbatch_write(FILE *out, const sweep_sbatch_spec *sp, dp_err *err)
{
    if (!out || !sp || !sp->scenario_abs || !sp->grid || sp->tasks < 1)
        return dp_err_set(err, DP_EINPUT, "sweep_sbatch_write: missing output, scenario, grid or task count");
    /* No value known at generation time is pasted into shell code
     * unquoted: the script's own values ($DPSIM, $OUT, $MERGED: the user's
     * environment and directory names) are always expanded inside double
     * quotes, and reach the merge job through its environment (exported,
     * sbatch's default --export=ALL) rather than pasted into its --wrap
     * command, which Slurm runs with /bin/sh: a fixed, single-quoted text
     * in plain POSIX sh (no shopt, no arrays). */
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
            "export DPSIM DPSIM_OUT=\"$OUT\" DPSIM_MERGED=\"$MERGED\"\n"
            "\n"
            "if [ -z \"${SLURM_ARRAY_TASK_ID:-}\" ]; then\n"
            "    # Submitting: the array, then the merge once all its tasks have ended\n"
            "    # (afterany: the shards that finished are merged even if one failed).\n"
            "    # Both jobs take this environment (DPSIM, DPSIM_OUT, DPSIM_MERGED).\n"
            "    mkdir -p \"$OUT/shards\"\n"
            "    jid=$(sbatch --parsable --export=ALL \"$0\")\n"
            "    sbatch --export=ALL --dependency=afterany:\"${jid%%%%;*}\" --job-name=dpsim-merge "
            "--output=dpsim-merge-%%j.out \\\n"
            "        --wrap='set --; for f in \"$DPSIM_OUT\"/shards/shard-*.db; do "
            "if [ -f \"$f\" ]; then set -- \"$@\" \"$f\"; fi; done; "
            "exec \"$DPSIM\" merge \"$DPSIM_MERGED\" \"$@\"'\n"
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
            "\"$DPSIM\" sweep ",
            sp->tasks - 1);
    /* The sweep's options as parsed (not argv's text: bundled short options
     * like -qp ddp are already taken apart), each value single-quoted. */
    put_quoted(out, sp->scenario_abs);
    char buf[4200];
    for (size_t a = 0; a < sweep_grid_n_axes(sp->grid); a++) {
        snprintf(buf, sizeof buf, "%s=%s", sweep_grid_key(sp->grid, a), sweep_grid_spec(sp->grid, a));
        put_opt(out, "--vary", buf);
    }
    if (sp->n_policies) {
        size_t k = 0;
        buf[0] = '\0';
        for (size_t i = 0; i < sp->n_policies && k < sizeof buf; i++) {
            const char *name = policy_name(sp->policies[i]);
            k += (size_t)snprintf(buf + k, sizeof buf - k, "%s%s", i ? "," : "", name);
        }
        put_opt(out, "--policy", buf);
    }
    if (sp->seeds > 1) {
        snprintf(buf, sizeof buf, "%u", sp->seeds);
        put_opt(out, "--seeds", buf);
    }
    if (sp->retry_failed)
        put_opt(out, "--retry-failed", NULL);
    if (sp->detail)
        put_opt(out, "--detail", NULL);
    for (size_t i = 0; i < sp->n_log; i++)
        put_opt(out, "--log", sp->log[i]);
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
