/* eafl.c: EAFL's client utility (eafl.h; docs/MODEL.md section 12).
 *
 * Oort (OSDI 2021, section 4.2) scores client i by
 *     U_i = |B_i| sqrt(1/|B_i| sum_{k in B_i} Loss(k)^2) x (T / t_i)^(1(T < t_i) x alpha),
 * its statistical utility (the samples it trains on, weighted by their
 * loss) times a penalty for a round t_i longer than the developer's
 * preferred duration T (alpha: the straggler penalty; FedScale's Oort,
 * thirdparty/oort/oort.py getTopK, multiplies the score by
 * (T / t_i)^round_penalty when t_i > T).  EAFL (FedEdge 2022) adds the
 * battery: its score is a weighted sum of Oort's utility, min-max
 * normalised over the candidates, and the client's battery level,
 *     S_i = w x (U_i - min U) / (max U - min U) + (1 - w) x battery_i,
 * the form a public Flower implementation of EAFL computes
 * (`calc_eafl_weight`: eafl_weight x normalised utility + (1 - eafl_weight)
 * x battery ratio).  The paper's own code was not in reach; the weighted
 * sum is taken from that implementation, and the paper's abstract (select
 * the clients with more battery "in conjunction with" Oort's system
 * efficiency) agrees with it.
 */
#include "eafl.h"

#include <math.h>

double eafl_oort_utility(double stat, double t, double T, double alpha)
{
    if (T > 0 && t > T)
        return stat * pow(T / t, alpha);
    return stat;
}

void eafl_scores(size_t n, const double *util, const double *soc, double w, double *score)
{
    double lo = INFINITY, hi = -INFINITY;
    for (size_t i = 0; i < n; i++) {
        lo = fmin(lo, util[i]);
        hi = fmax(hi, util[i]);
    }
    for (size_t i = 0; i < n; i++) {
        double u = hi > lo ? (util[i] - lo) / (hi - lo) : 0;
        score[i] = w * u + (1 - w) * soc[i];
    }
}
