/* fedgsync.h: FedGSync's grouping of devices by their gradients, a pure
 * function so that tests can check it on gradients of known data
 * (tests/test_fedgsync.c).  The policy is sim/policy/fedgsync.c;
 * docs/MODEL.md section 4 "FedGSync". */
#ifndef DP_FEDGSYNC_H
#define DP_FEDGSYNC_H

#include <stddef.h>
#include <stdint.h>

/* Cluster n gradients (the rows of G, n x P, row-major) into K groups:
 * each row scaled to unit length (the grouping follows the gradients'
 * directions, i.e. the data, not their sizes), the rows centred and
 * projected on their first `comp` principal components (a GSL SVD of the
 * centred rows, whichever orientation is taller), then approximate K-means
 * on the projections: k-means++ seeding from `seed`, Lloyd's iterations
 * until no point moves (at most 100), the best of `restarts` seedings by
 * the sum of squared distances (the first on ties).  group[i] in 0..K-1,
 * every group non-empty (an empty cluster takes the point farthest from
 * its centre), numbered in the order of their lowest row (row 0 is in
 * group 0).  Deterministic for the same inputs.  0, DP_EINPUT (K < 1 or
 * K > n) or DP_ENOMEM. */
int fgs_group(const double *G, size_t n, size_t P, size_t K, size_t comp, uint64_t seed, int restarts,
              int *group);

#endif
