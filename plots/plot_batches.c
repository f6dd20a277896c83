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

static const char *const palette[] = {"#0072b2", "#d55e00", "#009e73", "#cc79a7", "#e69f00", "#56b4e9",
                                      "#f0e442", "#000000", "#999999", "#882255", "#44aa99", "#117733",
                                      "#332288", "#aa4499", "#88ccee", "#ddcc77"};

static int has_batches(store *st, int64_t id, dp_err *err)
{
    store_batches b;
    if (store_batches_get(st, id, 1, &b, err))
        return -1;
    int has = b.n_devices > 0;
    store_batches_free(&b);
    return has;
}

int plot_draw_batches(store *st, const plot_sel *sel, const char *out_path, dp_err *err)
{
    plot_run run;
    const plot_run *r = &run;
    int rc = plot_one_run_with(st, sel, has_batches, "batch statistics (a load-balancing policy)", &run, err);
    if (rc)
        return rc;
    store_batches bt;
    store_devices dev = {0};
    plot_gp *gp = NULL;
    if ((rc = store_batches_get(st, r->id, MAX_DEV, &bt, err)))
        goto done;
    if (bt.n_devices == 0) {
        rc = dp_err_set(err, DP_EINPUT,
                        "batches: run #%lld (%s) has no batch statistics per device and epoch; the "
                        "load-balancing policies (equal_finish, dlb, lbbsp, lbb) record them",
                        (long long)r->id, r->policy);
        goto done;
    }
    if ((rc = store_devices_get(st, r->id, &dev, err)))
        goto done;
    size_t n_dev = bt.n_devices, nd = n_dev < MAX_DEV ? n_dev : MAX_DEV;
    int64_t n_ep = bt.n_epochs;
    if (!(gp = plot_open(sel, out_path, 1200, 900, err))) {
        rc = err ? err->code : DP_ERUN;
        goto done;
    }
    /* inline data: one block per device, rows "epoch mean min max wait";
     * bt.row is ordered by device, then epoch */
    char names[MAX_DEV][96];
    size_t i = 0;
    for (size_t d = 0; d < nd; d++) {
        snprintf(names[d], sizeof names[d], "device %zu", d);
        plot_gp_printf(gp, "$d%zu << EOD\n", d);
        while (i < bt.n && bt.row[i].device < (int64_t)d)
            i++;
        for (; i < bt.n && bt.row[i].device == (int64_t)d; i++) {
            const store_batch_row *x = &bt.row[i];
            /* devices side by side within an epoch, so bars do not hide each other */
            double pos = (double)x->epoch + 0.5 * ((double)d - 0.5 * (double)(nd - 1)) / (double)nd;
            plot_gp_printf(gp, "%.10g %.10g %.10g %.10g %.10g\n", pos, x->mean, x->min, x->max, x->wait_s);
            const char *name = store_device_name(&dev, (int64_t)d);
            if (name)
                snprintf(names[d], sizeof names[d], "%s", name);
        }
        plot_gp_printf(gp, "EOD\n");
    }
    plot_gp_printf(
        gp,
        "set multiplot layout 2,1\nset grid lc rgb '#d0d0d0'\nset key outside right top box opaque\n"
        "set xrange [0.5:%.10g]\nset xtics 1\nset bars small\n"
        "set lmargin at screen 0.08\nset rmargin at screen 0.8\n",
        (double)n_ep + 0.5);
    char t1[600];
    snprintf(t1, sizeof t1, "Batch per device and epoch, run #%lld: %s on scenario '%s'%s", (long long)r->id,
             plot_policy_label(r->policy), r->scenario, n_dev > MAX_DEV ? " (first 16 devices)" : "");
    plot_title(gp, sel->title, t1, NULL);
    plot_gp_printf(gp, "set ylabel 'samples per iteration (mean; bar: min to max)'\n"
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
    rc = plot_gp_close(gp, err);
    gp = NULL;
done:
    plot_gp_abort(gp);
    store_devices_free(&dev);
    store_batches_free(&bt);
    return rc;
}
