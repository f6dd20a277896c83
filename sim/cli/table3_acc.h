/* table3_acc.h: the accuracy part of `dpsim reproduce table3`: the
 * statistical-efficiency model (sim/learn/efficiency.h) fitted by
 * sim/calib/effit.h to the paper's three printed accuracies (a single card
 * 69.46% and C-ADP 70.56% at epoch 30, C-ADP 73.67% at epoch 50), then each
 * policy's accuracy at epochs 30 and 50 and its time to 70% and 73%
 * predicted from its run's updates.
 *
 * The runs' update logs come from cli/runlog.h (derived from the runs'
 * shares and epoch ends until the runtime's update stream fills them); the
 * single card takes D / b steps of its batch a epoch.
 */
#ifndef DP_TABLE3_ACC_H
#define DP_TABLE3_ACC_H

#include "calib/effit.h"
#include "results.h"
#include "scenario.h"

#include <stdio.h>

/* The paper's printed accuracies (its text; Table 3 gives C-ADP 74.36%). */
#define T3_ACC_SINGLE_30 0.6946
#define T3_ACC_CADP_30   0.7056
#define T3_ACC_CADP_50   0.7367
#define T3_ACC_TABLE     0.7436

enum { T3_NPOL = 3, T3_NPTS = 3 };

typedef struct t3_acc_row {
    const char *label;    /* "DDP" */
    double at[2];         /* accuracy at epochs 30 and 50 (NAN: not reached) */
    const char *role[2];  /* "fit" or "prediction" */
    double paper[2];      /* the paper's figure or NAN */
    double t_to[2];       /* time to 70% and 73% (s; NAN: not reached) */
    double extrapolation; /* effit_extrapolation of its log: 1 inside */
} t3_acc_row;

typedef struct t3_acc {
    effit_result fit;
    effit_point pts[T3_NPTS];
    eff_log *logs[T3_NPOL + 1]; /* ddp, deepspeed, cadp, single card */
    t3_acc_row rows[T3_NPOL];
    double single_batch;
} t3_acc;

/* runs: DDP, DeepSpeed, C-ADP of the testbed s.  0, or an error (a run
 * without epochs, out of memory, the fit refused). */
int t3_accuracy(const scn_scenario *s, res_run *const runs[T3_NPOL], t3_acc *a, dp_err *err);
void t3_accuracy_print(const t3_acc *a, FILE *out);
void t3_accuracy_free(t3_acc *a);

#endif
