/* plot_batches.c: `dpsim plot batches`: how a load-balancing run split its
 * global batch.  One run (as the timeline): per device, its mean batch in
 * each epoch with a bar from its smallest to its largest (top), and the
 * seconds it waited at barriers in that epoch (bottom), from the run's
 * device_epoch statistics batch_mean, batch_min, batch_max and wait_s
 * (run_stats; recorded by equal_finish, dlb, lbbsp and lbb).  Per epoch,
 * not per iteration: the store keeps per-epoch figures so a run of 10^4
 * iterations on 10^3 devices stays small.  At most MAX_DEV devices are
 * drawn (the first ones), as a legend of more is unreadable. */
#include "plots.h"

#include <stdio.h>

#define MAX_DEV 16

static int fail_sql(sqlite3 *db, sqlite3_stmt *q, dp_err *err)
{
    int rc = dp_err_set(err, DP_ERUN, "plot batches: reading the database: %s", sqlite3_errmsg(db));
    sqlite3_finalize(q);
    return rc;
}

static const char *const palette[] = {"#0072b2", "#d55e00", "#009e73", "#cc79a7", "#e69f00", "#56b4e9",
                                      "#f0e442", "#000000", "#999999", "#882255", "#44aa99", "#117733",
                                      "#332288", "#aa4499", "#88ccee", "#ddcc77"};

int plot_draw_batches(sqlite3 *db, const plot_sel *sel, const char *out_path, dp_err *err)
{
    plot_run *r;
    size_t n;
    int rc = plot_runs_select(db, sel, 1, &r, &n, err);
    if (rc)
        return rc;
    sqlite3_stmt *q = NULL;
    if (sqlite3_prepare_v2(db,
                           "SELECT count(DISTINCT a), max(b) FROM run_stats WHERE run_id = ?1"
                           " AND scope = 'device_epoch' AND name = 'batch_mean'",
                           -1, &q, NULL) != SQLITE_OK) {
        dp_free(r);
        return fail_sql(db, q, err);
    }
    sqlite3_bind_int64(q, 1, r->id);
    if (sqlite3_step(q) != SQLITE_ROW) {
        dp_free(r);
        return fail_sql(db, q, err);
    }
    int64_t n_dev = sqlite3_column_int64(q, 0), n_ep = sqlite3_column_int64(q, 1);
    sqlite3_finalize(q);
    if (n_dev == 0) {
        rc = dp_err_set(err, DP_EINPUT,
                        "batches: run #%lld (%s) has no batch statistics per device and epoch; the "
                        "load-balancing policies (equal_finish, dlb, lbbsp, lbb) record them",
                        (long long)r->id, r->policy);
        dp_free(r);
        return rc;
    }
    size_t nd = n_dev < MAX_DEV ? (size_t)n_dev : MAX_DEV;
    plot_gp *gp = plot_gp_open(out_path, 1200, 900, err);
    if (!gp) {
        dp_free(r);
        return err ? err->code : DP_ERUN;
    }
    /* inline data: one block per device, rows "epoch mean min max wait" */
    if (sqlite3_prepare_v2(db,
                           "SELECT m.b, m.value, lo.value, hi.value, w.value, d.name"
                           " FROM run_stats m"
                           " JOIN run_stats lo ON lo.run_id = m.run_id AND lo.a = m.a AND lo.b = m.b"
                           "  AND lo.scope = 'device_epoch' AND lo.name = 'batch_min'"
                           " JOIN run_stats hi ON hi.run_id = m.run_id AND hi.a = m.a AND hi.b = m.b"
                           "  AND hi.scope = 'device_epoch' AND hi.name = 'batch_max'"
                           " LEFT JOIN run_stats w ON w.run_id = m.run_id AND w.a = m.a AND w.b = m.b"
                           "  AND w.scope = 'device_epoch' AND w.name = 'wait_s'"
                           " LEFT JOIN run_devices d ON d.run_id = m.run_id AND d.idx = m.a"
                           " WHERE m.run_id = ?1 AND m.a = ?2 AND m.scope = 'device_epoch'"
                           "  AND m.name = 'batch_mean' ORDER BY m.b",
                           -1, &q, NULL) != SQLITE_OK) {
        plot_gp_abort(gp);
        dp_free(r);
        return fail_sql(db, q, err);
    }
    char names[MAX_DEV][96];
    for (size_t d = 0; d < nd; d++) {
        sqlite3_reset(q);
        sqlite3_bind_int64(q, 1, r->id);
        sqlite3_bind_int64(q, 2, (sqlite3_int64)d);
        snprintf(names[d], sizeof names[d], "device %zu", d);
        plot_gp_printf(gp, "$d%zu << EOD\n", d);
        int step;
        while ((step = sqlite3_step(q)) == SQLITE_ROW) {
            double w = sqlite3_column_type(q, 4) == SQLITE_NULL ? 0 : sqlite3_column_double(q, 4);
            /* devices side by side within an epoch, so bars do not hide each other */
            double x =
                (double)sqlite3_column_int64(q, 0) + 0.5 * ((double)d - 0.5 * (double)(nd - 1)) / (double)nd;
            plot_gp_printf(gp, "%.10g %.10g %.10g %.10g %.10g\n", x, sqlite3_column_double(q, 1),
                           sqlite3_column_double(q, 2), sqlite3_column_double(q, 3), w);
            if (sqlite3_column_type(q, 5) != SQLITE_NULL)
                snprintf(names[d], sizeof names[d], "%s", (const char *)sqlite3_column_text(q, 5));
        }
        if (step != SQLITE_DONE) {
            plot_gp_abort(gp);
            dp_free(r);
            return fail_sql(db, q, err);
        }
        plot_gp_printf(gp, "EOD\n");
    }
    sqlite3_finalize(q);
    plot_gp_printf(
        gp,
        "set multiplot layout 2,1\nset grid lc rgb '#d0d0d0'\nset key outside right top box opaque\n"
        "set xrange [0.5:%.10g]\nset xtics 1\nset bars small\n"
        "set lmargin at screen 0.08\nset rmargin at screen 0.8\n",
        (double)n_ep + 0.5);
    char t1[600];
    snprintf(t1, sizeof t1, "Batch per device and epoch, run #%lld: %s on scenario '%s'%s", (long long)r->id,
             plot_policy_label(r->policy), r->scenario, n_dev > MAX_DEV ? " (first 16 devices)" : "");
    plot_gp_printf(gp, "set title ");
    plot_gp_str(gp, sel->title ? sel->title : t1);
    plot_gp_printf(gp, " font ',14'\nset ylabel 'samples per iteration (mean; bar: min to max)'\n"
                       "set yrange [0:*]\nplot ");
    for (size_t d = 0; d < nd; d++) {
        plot_gp_printf(gp, "%s$d%zu using 1:2:3:4 with yerrorlines lw 2 pt 7 ps 0.8 lc rgb '%s' title ",
                       d ? ", \\\n  " : "", d, palette[d % (sizeof palette / sizeof *palette)]);
        plot_gp_str(gp, names[d]);
    }
    plot_gp_printf(gp, "\nset title 'seconds waiting at barriers, per epoch' font ',12'\n"
                       "set xlabel 'epoch'\nset ylabel 'wait (s)'\nplot ");
    for (size_t d = 0; d < nd; d++) {
        plot_gp_printf(gp, "%s$d%zu using 1:5 with linespoints lw 2 pt 7 ps 0.8 lc rgb '%s' notitle",
                       d ? ", \\\n  " : "", d, palette[d % (sizeof palette / sizeof *palette)]);
    }
    plot_gp_printf(gp, "\nunset multiplot\n");
    dp_free(r);
    return plot_gp_close(gp, err);
}
