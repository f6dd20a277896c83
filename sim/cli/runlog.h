/* runlog.h: a run's update log (sim/learn/efficiency.h): the one the
 * runtime logged from the update stream (res_run.learn_log: runs with
 * learning.efficiency), else (runs without it, as reproduce table3's)
 * derived from its result, for the policies whose schedule is plain from
 * it:
 *   ddp, deepspeed: the equal split with Join: micro-step k of an epoch has
 *     the samples of every device that still has some (at most its batch);
 *     one synchronous update per micro-step (DeepSpeed: per grad_accum
 *     micro-steps), spread evenly over the epoch's simulated time;
 *   cadp: one average per epoch, at its end, of the devices with a share:
 *     H = the epoch's samples / the participants' summed batch, M_step =
 *     that sum, rho = participants / devices.
 * Other policies: DP_EINPUT saying so. */
#ifndef DP_RUNLOG_H
#define DP_RUNLOG_H

#include "learn/efficiency.h"
#include "results.h"
#include "scenario.h"

int runlog_derive(const scn_scenario *s, const res_run *r, eff_log **out, dp_err *err);
/* One device of batch b over D samples a epoch, `epochs` epochs; record
 * times count steps (1, 2, ...). */
int runlog_single(double D, double b, int epochs, eff_log *l);

#endif
