/* report.c: results as text tables and JSON. */
#include "cli/report.h"

#include "dpsim_config.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

dp_table *report_table_new(void)
{
    /* the minimum widths are the layout the table always had */
    static const dp_col cols[] = {
        {"policy", 'l', 10, 0},     {"Tsend (s)", 'r', 12, 1}, {"Ttraining (s)", 'r', 14, 1},
        {"Ttotal (s)", 'r', 12, 1}, {"TFLOPS", 'r', 9, 1},     {"util", 'r', 7, 1},
        {"epochs", 'r', 8, 1},      {"events", 'r', 11, 1},    {"run", 'r', 7, 1},
    };
    return dp_table_new(cols, sizeof cols / sizeof *cols, NULL);
}

void report_table_add(dp_table *t, const res_run *r, long long run_id)
{
    dp_table_add(t, r->policy);
    dp_table_addf(t, "%.2f", r->tsend_s);
    dp_table_addf(t, "%.2f", r->ttraining_s);
    dp_table_addf(t, "%.2f", r->ttotal_s);
    dp_table_addf(t, "%.4f", r->tflops);
    dp_table_addf(t, "%.1f%%", 100 * r->utilization);
    dp_table_addf(t, "%zu", r->n_epochs);
    dp_table_addf(t, "%llu", (unsigned long long)r->events);
    if (run_id > 0)
        dp_table_addf(t, "#%lld", run_id);
    else
        dp_table_add(t, "-");
}

void report_table(FILE *out, const res_run *const *runs, const long long *ids, size_t n)
{
    dp_table *t = report_table_new();
    for (size_t k = 0; k < n; k++)
        if (runs[k])
            report_table_add(t, runs[k], ids ? ids[k] : 0);
    if (dp_table_print(t, out))
        fprintf(out, "(out of memory printing the table)\n");
    dp_table_free(t);
}

/* Past this many devices the breakdown lists the first REPORT_HEAD and
 * then each figure's minimum, median and maximum over all of them (unless
 * `all`): 100,000 rows tell nobody anything. */
#define REPORT_LIST_MAX 50
#define REPORT_HEAD     10
#define REPORT_COLS     9

/* The figures of device v in the table's column order. */
static void device_figures(const res_device *v, double *x)
{
    x[0] = (double)v->samples;
    x[1] = (double)v->batches;
    x[2] = v->compute_s;
    x[3] = v->send_s;
    x[4] = v->recv_s;
    x[5] = v->wait_s;
    x[6] = v->bytes_sent / 1e6;
    x[7] = v->bytes_recv / 1e6;
    x[8] = v->data_ready_s;
}

static int by_value(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static void device_row(dp_table *t, const char *name, const char *kind, const double *x)
{
    static const char *const fmt[REPORT_COLS] = {"%.0f", "%.0f", "%.2f", "%.2f", "%.2f",
                                                 "%.2f", "%.1f", "%.1f", "%.2f"};
    dp_table_add(t, name);
    dp_table_add(t, kind);
    for (int c = 0; c < REPORT_COLS; c++)
        dp_table_addf(t, fmt[c], x[c]);
}

void report_devices(FILE *out, const res_run *r, int all)
{
    /* Names may come from a database written by anyone: the table escapes them. */
    static const dp_col cols[] = {
        {"device", 'l', 16, 0},    {"kind", 'l', 4, 1},         {"samples", 'r', 9, 1},
        {"batches", 'r', 9, 1},    {"compute (s)", 'r', 12, 1}, {"send (s)", 'r', 10, 1},
        {"recv (s)", 'r', 10, 1},  {"wait (s)", 'r', 10, 1},    {"sent (MB)", 'r', 11, 1},
        {"recv (MB)", 'r', 11, 1}, {"ready (s)", 'r', 10, 1},
    };
    char pol[64];
    size_t n = r->n_devices, shown = all || n <= REPORT_LIST_MAX ? n : REPORT_HEAD;
    fprintf(out, "%s per device", dp_esc(pol, sizeof pol, r->policy));
    if (shown < n)
        fprintf(out,
                " (%zu devices: the first %zu, then each figure's min / median / max over all; --all "
                "lists every one)",
                n, shown);
    fprintf(out, ":\n");
    dp_table *t = dp_table_new(cols, sizeof cols / sizeof *cols, "  ");
    double x[REPORT_COLS];
    for (size_t d = 0; d < shown; d++) {
        const res_device *v = &r->devices[d];
        device_figures(v, x);
        device_row(t, v->name, v->kind, x);
    }
    double *col = shown == n ? NULL : dp_malloc(n * sizeof *col);
    if (shown < n && !col) {
        dp_table_note(t, "(out of memory for the summary)");
    } else if (shown < n) {
        dp_table_note(t, "...");
        double lo[REPORT_COLS], med[REPORT_COLS], hi[REPORT_COLS];
        for (int c = 0; c < REPORT_COLS; c++) {
            int nan = 0;
            for (size_t d = 0; d < n; d++) {
                device_figures(&r->devices[d], x);
                col[d] = x[c];
                nan |= isnan(x[c]);
            }
            if (nan) { /* qsort orders what a selection cannot */
                qsort(col, n, sizeof *col, by_value);
                lo[c] = col[0];
                hi[c] = col[n - 1];
                med[c] = n % 2 ? col[n / 2] : (col[n / 2 - 1] + col[n / 2]) / 2;
                continue;
            }
            lo[c] = hi[c] = col[0];
            for (size_t d = 1; d < n; d++) {
                lo[c] = col[d] < lo[c] ? col[d] : lo[c];
                hi[c] = col[d] > hi[c] ? col[d] : hi[c];
            }
            double upper = dp_kth_smallest(col, n, n / 2);
            if (n % 2) {
                med[c] = upper;
            } else { /* the largest below it: the (n/2 - 1)-th */
                double lower = col[0];
                for (size_t d = 1; d < n / 2; d++)
                    lower = col[d] > lower ? col[d] : lower;
                med[c] = (lower + upper) / 2;
            }
        }
        dp_free(col);
        device_row(t, "min", "", lo);
        device_row(t, "median", "", med);
        device_row(t, "max", "", hi);
    }
    if (dp_table_print(t, out))
        fprintf(out, "  (out of memory printing the table)\n");
    dp_table_free(t);
}

void report_json_begin(json_buf *j, const char *scenario)
{
    json_obj_begin(j);
    json_key_str(j, "format", "dpsim-runs");
    json_key_int(j, "format_version", 1);
    json_key_str(j, "dpsim_version", DPSIM_VERSION);
    json_key_str(j, "scenario", scenario);
    json_key(j, "runs");
    json_arr_begin(j);
}

void report_json_end(json_buf *j)
{
    json_arr_end(j);
    json_obj_end(j);
}

void report_json_run(json_buf *j, const res_run *r, const char *const *overrides, size_t n_overrides)
{
    json_obj_begin(j);
    json_key_str(j, "policy", r->policy);
    json_key_int(j, "seed", (int64_t)r->seed);
    json_key_num(j, "tsend_s", r->tsend_s);
    json_key_num(j, "ttraining_s", r->ttraining_s);
    json_key_num(j, "ttotal_s", r->ttotal_s);
    json_key_num(j, "tflops", r->tflops);
    json_key_num(j, "utilization", r->utilization);
    json_key_num(j, "samples_processed", r->samples_processed);
    json_key_num(j, "bytes_total", r->bytes_total);
    json_key_int(j, "events", (int64_t)r->events);
    json_key(j, "options"); /* the stored options text is a JSON object written by json.c */
    json_raw(j, r->options_json && r->options_json[0] ? r->options_json : "{}");
    json_key(j, "overrides");
    json_arr_begin(j);
    for (size_t k = 0; k < n_overrides; k++)
        json_str(j, overrides[k]);
    json_arr_end(j);
    json_key(j, "devices");
    json_arr_begin(j);
    for (size_t d = 0; d < r->n_devices; d++) {
        const res_device *v = &r->devices[d];
        json_obj_begin(j);
        json_key_str(j, "name", v->name);
        json_key_str(j, "group", v->group);
        json_key_str(j, "kind", v->kind);
        json_key_int(j, "samples", v->samples);
        json_key_int(j, "batches", v->batches);
        json_key_num(j, "compute_s", v->compute_s);
        json_key_num(j, "send_s", v->send_s);
        json_key_num(j, "recv_s", v->recv_s);
        json_key_num(j, "wait_s", v->wait_s);
        json_key_num(j, "bytes_sent", v->bytes_sent);
        json_key_num(j, "bytes_recv", v->bytes_recv);
        json_key_num(j, "data_ready_s", v->data_ready_s);
        json_obj_end(j);
    }
    json_arr_end(j);
    json_key(j, "epochs");
    json_arr_begin(j);
    for (size_t e = 0; e < r->n_epochs; e++)
        json_num(j, r->epochs[e].end_s);
    json_arr_end(j);
    if (r->n_evals) { /* only runs with `learning:` */
        json_key(j, "learning");
        json_obj_begin(j);
        json_key_str(j, "source", r->learn_source);
        json_key(j, "time_to_accuracy");
        json_arr_begin(j);
        for (size_t k = 0; k < r->n_tta; k++) {
            json_obj_begin(j);
            json_key_num(j, "target", r->tta_target[k]);
            json_key_num(j, "t_s", r->tta_s[k]); /* null: not reached */
            json_obj_end(j);
        }
        json_arr_end(j);
        json_key(j, "evaluations");
        json_arr_begin(j);
        for (size_t k = 0; k < r->n_evals; k++) {
            const res_eval *e = &r->evals[k];
            json_obj_begin(j);
            json_key_num(j, "t_s", e->t_s);
            json_key_num(j, "epochs", e->epochs);
            json_key_num(j, "samples", e->samples);
            json_key_int(j, "epoch", e->epoch);
            json_key_num(j, "test_acc", e->test_acc);
            json_key_num(j, "test_loss", e->test_loss);
            json_key_num(j, "train_loss", e->train_loss);
            json_obj_end(j);
        }
        json_arr_end(j);
        json_obj_end(j);
    }
    if (r->n_stats) { /* only policies and worlds that record some */
        json_key(j, "stats");
        json_arr_begin(j);
        for (size_t k = 0; k < r->n_stats; k++) {
            const res_stat *x = &r->stats[k];
            json_obj_begin(j);
            json_key_str(j, "name", x->name);
            json_key_str(j, "scope", res_scope_name(x->scope));
            json_key_int(j, "a", x->a);
            json_key_int(j, "b", x->b);
            json_key_num(j, "value", x->value);
            json_obj_end(j);
        }
        json_arr_end(j);
    }
    json_obj_end(j);
}

/* The accuracy reached (last evaluation) and the time to each target. */
static double last_acc(const res_run *r)
{
    return r->n_evals ? r->evals[r->n_evals - 1].test_acc : NAN;
}

int report_learning(FILE *out, res_run *const *runs, int n)
{
    const res_run *first = NULL;
    for (int k = 0; k < n && !first; k++)
        if (runs[k] && runs[k]->n_evals)
            first = runs[k];
    if (!first)
        return 0;
    if (!out)
        return 1;
    char src[128];
    fprintf(out,
            "\ntime to accuracy (%s: test accuracy of the global model, first evaluation at or above):\n",
            dp_esc(src, sizeof src, first->learn_source));
    fprintf(out, "%-12s %10s %10s", "policy", "final acc", "at (s)");
    for (size_t k = 0; k < first->n_tta; k++) {
        char h[32];
        snprintf(h, sizeof h, "t@%.4g (s)", first->tta_target[k]);
        fprintf(out, " %12s", h);
    }
    fprintf(out, "\n");
    for (int i = 0; i < n; i++) {
        const res_run *r = runs[i];
        if (!r || !r->n_evals)
            continue;
        char pol[64];
        fprintf(out, "%-12s %9.2f%% %10.2f", dp_esc(pol, sizeof pol, r->policy), 100 * last_acc(r),
                r->evals[r->n_evals - 1].t_s);
        for (size_t k = 0; k < r->n_tta; k++) {
            if (isnan(r->tta_s[k]))
                fprintf(out, " %12s", "not reached");
            else
                fprintf(out, " %12.2f", r->tta_s[k]);
        }
        fprintf(out, "\n");
    }
    return 1;
}

int report_plan(FILE *out, const res_run *r)
{
    for (size_t k = 0; k < r->n_stats; k++) {
        const res_stat *x = &r->stats[k];
        if (x->scope != RES_SCOPE_RUN || strcmp(x->name, "plan.objective_s") != 0)
            continue;
        double d = r->ttotal_s - x->value;
        char pol[64];
        if (out)
            fprintf(out, "%s: planned Ttotal %.2f s vs simulated %.2f s (%+.2f s, %+.1f%%)\n",
                    dp_esc(pol, sizeof pol, r->policy), x->value, r->ttotal_s, d,
                    x->value > 0 ? 100 * d / x->value : 0.0);
        return 1;
    }
    return 0;
}

int report_fast_forward(FILE *out, const res_run *r)
{
    for (size_t k = 0; k < r->n_stats; k++) {
        const res_stat *x = &r->stats[k];
        if (x->scope != RES_SCOPE_RUN || strcmp(x->name, "fast_forward") != 0)
            continue;
        char pol[64];
        if (out)
            fprintf(out,
                    "%s: fast_forward: epochs %lld-%lld (they repeat epoch %lld bit for bit: replayed, not "
                    "simulated; docs/MODEL.md)\n",
                    dp_esc(pol, sizeof pol, r->policy), (long long)x->a, (long long)x->b,
                    (long long)x->a - 1);
        return 1;
    }
    return 0;
}

void report_stats(FILE *out, const res_run *r)
{
    if (!r->n_stats)
        return;
    char pol[64], name[128];
    fprintf(out, "%s statistics (%zu):\n", dp_esc(pol, sizeof pol, r->policy), r->n_stats);
    fprintf(out, "  %-28s %-12s %8s %8s %16s\n", "name", "scope", "a", "b", "value");
    for (size_t k = 0; k < r->n_stats; k++) {
        const res_stat *x = &r->stats[k];
        fprintf(out, "  %-28s %-12s %8lld %8lld %16.6g\n", dp_esc(name, sizeof name, x->name),
                res_scope_name(x->scope), (long long)x->a, (long long)x->b, x->value);
    }
}
