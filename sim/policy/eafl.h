/* eafl.h: EAFL's client utility (Arouj and Abdelmoniem, "Towards
 * Energy-Aware Federated Learning on Battery-Powered Clients", FedEdge
 * 2022, arXiv 2208.04505), built on Oort's (Lai et al., "Oort: Efficient
 * Federated Learning via Guided Participant Selection", OSDI 2021).
 * fedavg's `select: eafl` ranks the devices up by eafl_scores
 * (docs/MODEL.md section 12). */
#ifndef DP_EAFL_H
#define DP_EAFL_H

#include <stddef.h>

/* Oort's utility of one client: its statistical utility `stat` times its
 * system utility (T / t)^alpha when its round t is longer than the
 * preferred round T (1 otherwise; T <= 0: no preferred round). */
double eafl_oort_utility(double stat, double t, double T, double alpha);

/* EAFL's score of n clients into score[0..n): w x the min-max normalised
 * Oort utility + (1 - w) x the battery level soc[i] (0..1).  Normalised:
 * (U_i - min U) / (max U - min U), 0 for every client when all are equal. */
void eafl_scores(size_t n, const double *util, const double *soc, double w, double *score);

#endif
