/* calib_acc.h: `dpsim calibrate --accuracy`: the statistical-efficiency
 * model fitted to measured accuracies of policies' runs (calib_acc.c). */
#ifndef DP_CALIB_ACC_H
#define DP_CALIB_ACC_H

#include "scenario.h"

#include <stddef.h>

#define CALIB_ACC_MAX 32

typedef struct calib_acc_args {
    const char *scenario;
    const scn_override *ov;
    size_t n_ov;
    size_t n_points;
    const char *points[CALIB_ACC_MAX]; /* "POLICY@EPOCH=ACC[:W]" or "POLICY@Ts=ACC[:W]" */
    size_t n_predict;
    const char *predict[CALIB_ACC_MAX]; /* policies */
    const char *fit;                    /* "noise_scale,drift,curve" or NULL for that default */
} calib_acc_args;

/* Runs the policies, fits, prints; an exit code. */
int calibrate_accuracy(const calib_acc_args *a);

#endif
