/* cmd_solve.c: dpsim solve SCENARIO: the C-ADP allocation alone. */
#include "cli/cli.h"
#include "json.h"
#include "policy/cadp.h"
#include "policy/policy.h"
#include "slv.h"

#include <getopt.h>
#include <math.h>
#include <string.h>

static void help(void)
{
    printf(
        "usage: dpsim solve SCENARIO [--method exact|alm] [--rounding batch|largest-remainder] [--json]\n\n"
        "Solve C-ADP's data allocation (docs/MODEL.md section 5) for the scenario without\n"
        "simulating: how many samples each device gets so that sending the data once\n"
        "plus every epoch's slowest device is as short as possible.  Inputs come from\n"
        "the scenario: a_i = sample_bytes / server-to-device bandwidth, c_i =\n"
        "batch_time_i / batch_i, comm_i = per-epoch model exchange, and the server\n"
        "NIC or WAN links the devices can saturate together (shared links: their\n"
        "data and every participant's model exchange cross them at their capacity).\n\n"
        "Prints per device its samples, batches, send time and per-epoch compute\n"
        "time, then the objective (send + epochs x slowest epoch + aggregation), the\n"
        "relaxed lower bound, the gap, the solver's status, time and iterations.\n\n"
        "  -m, --method M       exact (default; relaxed optimum + integer search) or\n"
        "                       alm (the paper's augmented Lagrangian, Algorithm 1)\n"
        "  -r, --rounding R     alm's rounding: batch (default) or largest-remainder\n"
        "      --paper-model    the paper's model: comm counted for every device (the\n"
        "                       paper's constant) and no shared links; default: a device\n"
        "                       given 0 samples skips the exchange\n"
        "  -s, --set KEY=VALUE  override a scenario value\n"
        "      --json           one JSON object: method, allocation, objective_s,\n"
        "                       lower_bound_s, iterations, status, shared_links, ...\n");
}

typedef struct solve_args {
    const char *method, *rounding;
    int paper;
} solve_args;

enum { K_PAPER = 0x2000 };

static const struct option own[] = {{"method", required_argument, NULL, 'm'},
                                    {"rounding", required_argument, NULL, 'r'},
                                    {"paper-model", no_argument, NULL, K_PAPER},
                                    {NULL, 0, NULL, 0}};

static int on_opt(void *ctx, int key, const char *arg, const char *label)
{
    solve_args *a = ctx;
    if (key == 'm')
        a->method = arg;
    else if (key == 'r')
        a->rounding = arg;
    else if (key == K_PAPER)
        a->paper = 1;
    else
        return cli_usage_error("solve", "unknown option '%s'", label);
    return -1;
}

int cmd_solve(int argc, char **argv)
{
    solve_args a = {0};
    cli_opts o = {0};
    int prc =
        cli_parse(argc, argv, "solve", CLI_O_SET | CLI_O_JSON | CLI_O_LOG, own, "m:r:", on_opt, &a, help, &o);
    if (prc >= 0 || (prc = cli_one_pos(&o, "SCENARIO")) >= 0) {
        cli_opts_free(&o);
        return prc;
    }
    const char *file = o.pos[0], *method = a.method, *rounding = a.rounding;
    int json = o.json, paper = a.paper;
    dp_err err = {0};
    scn_scenario *s = cli_load_scenario(file, o.ov, o.n_ov, &err);
    cli_opts_free(&o);
    if (!s)
        return cli_fail(&err);
    cadp_opts co;
    if (policy_options(policy_find("cadp"), s, &co, sizeof co, &err)) {
        scn_free(s);
        return cli_fail(&err);
    }
    if (!method)
        method = cadp_method(&co);
    if (!slv_method_by_name(method)) {
        scn_free(s);
        return cli_usage_error("solve", "unknown method '%s' (have: exact, alm)", method);
    }
    slv_params prm;
    slv_params_default(&prm);
    prm.rounding = cadp_slv_rounding(&co);
    if (rounding) {
        if (!strcmp(rounding, "batch"))
            prm.rounding = SLV_ROUND_BATCH;
        else if (!strcmp(rounding, "largest-remainder") || !strcmp(rounding, "largest_remainder"))
            prm.rounding = SLV_ROUND_LARGEST_REMAINDER;
        else {
            scn_free(s);
            return cli_usage_error("solve", "unknown rounding '%s' (have: batch, largest-remainder)",
                                   rounding);
        }
    }
    cadp_inputs in;
    slv_result *r = NULL;
    size_t classes = 0;
    double t0 = cli_wall_s();
    int rc = cadp_plan(s, &co, method, &prm, paper, &in, &r, &classes, NULL, &err);
    double wall = cli_wall_s() - t0;
    if (rc) {
        scn_free(s);
        return cli_fail(&err);
    }
    slv_problem p;
    cadp_problem(s, &co, &in, &p);
    double gap = r->objective_s - r->lower_bound_s;
    if (json) {
        json_buf *j = json_new();
        json_obj_begin(j);
        json_key_str(j, "scenario", s->name);
        json_key_str(j, "method", method);
        json_key_str(j, "rounding", slv_rounding_name(r->rounding));
        json_key_str(j, "status", slv_status_name(r->status));
        json_key(j, "allocation");
        json_arr_begin(j);
        for (size_t d = 0; d < r->n; d++)
            json_int(j, r->alloc[d]);
        json_arr_end(j);
        json_key_num(j, "objective_s", r->objective_s);
        json_key_num(j, "lower_bound_s", r->lower_bound_s);
        json_key_num(j, "gap_s", gap);
        json_key_num(j, "send_s", r->send_s);
        json_key_num(j, "epoch_s", r->epoch_s);
        json_key_int(j, "iterations", r->iterations);
        json_key_int(j, "outer_iterations", r->outer_iterations);
        json_key_num(j, "solve_seconds", wall);
        json_key_int(j, "classes", (int64_t)classes);
        json_key_int(j, "shared_links", paper ? 0 : (int64_t)in.n_links);
        json_obj_end(j);
        fputs(json_text(j), stdout);
        fputc('\n', stdout);
        json_free(j);
    } else {
        char en[256];
        printf("%s: C-ADP allocation by %s (%s rounding), %d epochs, %lld samples\n\n",
               dp_esc(en, sizeof en, s->name), method, slv_rounding_name(r->rounding), s->training.epochs,
               (long long)s->dataset.samples);
        printf("  %-16s %10s %9s %11s %16s %14s\n", "device", "samples", "batches", "send (s)",
               "epoch compute (s)", "exchange (s)");
        for (size_t d = 0; d < r->n; d++) {
            long long b = (long long)((r->alloc[d] + in.batch[d] - 1) / in.batch[d]);
            printf("  %-16s %10lld %9lld %11.2f %16.2f %14.2f\n", s->devices[d].name, (long long)r->alloc[d],
                   b, in.send_s[d] * (double)r->alloc[d], in.batch_s[d] * (double)b,
                   r->alloc[d] ? in.comm_s[d] : 0.0);
        }
        size_t parts = 0;
        for (size_t d = 0; d < r->n; d++)
            parts += r->alloc[d] > 0 || !p.allow_exclude;
        printf("\n  objective     %12.3f s  (the planned Ttotal: send %.3f + %d x (epoch %.3f + aggregation "
               "%zu x %.3f))\n",
               r->objective_s, r->send_s, s->training.epochs, r->epoch_s, parts, p.agg_s);
        if (in.n_links && !paper)
            printf("  shared links  %12zu    (server NIC or WAN links their devices can saturate; the\n"
                   "                               exchange column is each device's own, before them)\n",
                   in.n_links);
        printf("  lower bound   %12.3f s  (relaxed optimum)\n", r->lower_bound_s);
        printf("  gap           %12.3f s  (%.4f%%)\n", gap,
               r->lower_bound_s > 0 ? 100 * gap / r->lower_bound_s : 0);
        printf("  status        %s, %ld iterations (%ld outer), %.3f ms\n", slv_status_name(r->status),
               r->iterations, r->outer_iterations, 1e3 * r->solve_seconds);
    }
    slv_result_free(r);
    cadp_inputs_free(&in);
    scn_free(s);
    return EXIT_OK;
}
