/* runtime.h: what a policy sees.  A policy is one file: a `policy_def`
 * (its name, label, plot colour, its options as a table, start/free) and
 * the code behind start.  It drives the simulation only through the
 * functions below: distribute data, compute, run collectives, schedule its
 * own events, end epochs, fail the run.  The runtime (runtime.c,
 * collective.c) keeps the bookkeeping every policy shares (activity
 * timeline, FLOPS over time, per-device counters, end-of-run figures); its
 * state is opaque here.  The synchronous family's machinery (sync.c) has
 * its own header, sync.h, as the load balancers' (lbsync.h) and the
 * communication-light family's (commlight.h) do.
 *
 * Adding a policy: write sim/policy/NAME.c defining `const policy_def
 * policy_NAME`, add one line to the registry (registry.c) and one to
 * sim/policy/meson.build.  A program may also register a policy at run time
 * (policy_register in policy.h) without touching sim/.
 *
 * Model: docs/MODEL.md section 4 (what each policy does).
 */
#ifndef DP_RUNTIME_H
#define DP_RUNTIME_H

#include "json.h"
#include "results.h"
#include "scenario.h"
#include "world.h"

#include <stddef.h>
#include <stdint.h>

typedef struct prt prt;
typedef struct policy_perf policy_perf;
typedef void (*prt_fn)(prt *rt, void *ctx);

/* How a synchronous policy holds the dataset, and how its collectives run. */
typedef enum { PRT_DATA_REPLICATE = 0, PRT_DATA_SHARD = 1 } prt_data_mode;
typedef enum { PRT_COLL_FLOWS = 0, PRT_COLL_ANALYTIC = 1 } prt_coll_mode;

/* ---- options: one table per policy ------------------------------------- */

/* Option types.  QUANTITY and NUMBER are stored as double, the others as
 * int (ENUM: the index into `names`; BOOL: 0/1, or -1 when `def` is -1 and
 * the key is absent, for defaults a `finish` hook resolves). */
typedef enum { POPT_QUANTITY = 0, POPT_INT, POPT_BOOL, POPT_ENUM } popt_type;

typedef struct popt {
    const char *key;          /* key in `policies.NAME`; NULL ends a table */
    const char *json;         /* name in the stored JSON (NULL: key) */
    popt_type type;           /* see above */
    scn_unit unit;            /* QUANTITY: its unit (SCN_UNIT_NUMBER: plain) */
    size_t offset;            /* into the policy's options struct */
    double def;               /* default */
    double lo, hi;            /* QUANTITY: lo 0 = must be > 0, lo -1 = >= 0; INT: range */
    const char *const *names; /* ENUM: NULL-terminated */
    const char *help;         /* one line for `dpsim run --help` and docs */
} popt;

/* An option whose help starts with this matters only in worlds with
 * failures (scenario `availability`): other runs leave it out of their
 * stored options and summaries, so adding one changes no stored run.  (A
 * prefix rather than a field: every option table stays as it is.) */
#define POPT_FAILURES "with failures: "
int popt_failures_only(const popt *o);
/* Likewise an option whose help starts with this is left out of the stored
 * options and summaries while it has its default value (an option added
 * after runs were stored: collective_progress). */
#define POPT_OPTIONAL "optional: "
int popt_left_out(const popt *o, const void *opts, int fails);
/* A scenario a policy refuses in its check, the message pointing at
 * policies.POLICY.KEY when the key is written, else at the policy's block,
 * else at the file (FILE:LINE:COLUMN: policies.POLICY.KEY: MESSAGE). */
int popt_fail(const scn_scenario *s, const char *policy, const char *key, dp_err *err, const char *fmt, ...)
    DP_PRINTF(5, 6);

typedef struct policy_def {
    const char *name;    /* key under `policies:` and for --policy: [a-z0-9_]+ */
    const char *label;   /* in tables and plots: "C-ADP" */
    const char *color;   /* plot colour, "#rrggbb"; NULL: one no policy uses */
    const char *summary; /* one line for --help */
    const popt *opts;    /* option table (may be NULL: no options) */
    size_t opts_size;    /* bytes of the options struct (at most POLICY_OPTS_MAX) */
    /* Optional: resolve defaults that depend on other options (e.g. ZeRO's
     * overlap by stage), in place. */
    void (*finish)(void *opts);
    /* Optional: refuse a scenario this policy cannot run, before any
     * simulation (DP_EINPUT with a message naming policies.NAME.KEY, NAME
     * being p->name). */
    int (*check)(const struct policy_def *p, const scn_scenario *s, const void *opts, dp_err *err);
    /* Schedule the first actions (data distribution...); 0 or an error
     * (message in prt_err(rt)). */
    int (*start)(prt *rt, const void *opts);
    /* Free what start allocated (prt_state); also called when start failed. */
    void (*free)(prt *rt, const void *opts);
    /* Optional: device d went down (up = 0: what it was computing is lost,
     * its transfers are cut) or came back (up = 1), in a world with failures
     * (scenario `availability`).  NULL: the policy cannot run in such a
     * world, and runs that need it are refused with a message. */
    void (*on_device)(prt *rt, const void *opts, size_t d, int up);
    /* Optional: steady-state fast-forward (docs/MODEL.md, "Steady state").
     * Called at an epoch boundary, between events, once the epoch's last
     * handler has returned: write into buf (at most cap bytes) everything of
     * the policy's state that decides what it does from now on, and return
     * its size (the runtime calls again with a larger buf when it exceeds
     * cap), or 0 when the policy cannot tell (then no fast-forward, and time
     * is not restarted at this boundary).  A policy with this hook promises
     * that, in a periodic world (prt_periodic), its epochs depend on that
     * state and on times relative to prt_now only, that it keeps no
     * simulated time across an epoch boundary, and that it starts each
     * next epoch from an event at prt_now (prt_at), so nothing else is
     * pending at the boundary.  NULL: the policy never fast-forwards. */
    size_t (*steady_state)(prt *rt, const void *opts, unsigned char *buf, size_t cap);
    /* Optional: hooks for speed alone (runtime_perf.h), which change no
     * result; a policy may ignore them. */
    const struct policy_perf *perf;
    /* Optional: a policy family's method table (lbsync.h's lb_method), for
     * hooks the family's members share: they find it as p->family in check
     * and prt_policy(rt)->family elsewhere. */
    const void *family;
} policy_def;

#define POLICY_OPTS_MAX 256

/* ---- the runtime ------------------------------------------------------- */

size_t prt_n(const prt *rt);                 /* devices */
const policy_def *prt_policy(const prt *rt); /* the policy running */
const scn_scenario *prt_scn(const prt *rt);  /* borrowed for the run */
world *prt_world(const prt *rt);
double prt_now(const prt *rt);
uint64_t prt_seed(const prt *rt); /* the run's seed (a planner that simulates reuses it) */
dp_err *prt_err(const prt *rt);
int prt_failed(const prt *rt);
/* Samples per epoch (share) and samples left in the current epoch (left),
 * per device: the policy's to set; the runtime reloads left from share at
 * each epoch (prt_end_epoch) and reports share as each device's samples. */
int64_t *prt_share(prt *rt);
int64_t *prt_left(prt *rt);
int prt_epoch(const prt *rt); /* current epoch, 1-based */
/* The policy's own state (NULL at start); the policy frees it in `free`. */
void *prt_state(const prt *rt);
void prt_set_state(prt *rt, void *state);
/* 1 while device d is up (always, in a world without failures). */
int prt_device_up(const prt *rt, size_t d);
/* ---- failures (worlds with `availability`; docs in scenarios/README.md) --
 * When device d goes down the runtime cuts its transfers (world.h), drops
 * the batch it was computing (its seconds so far count as computed, not
 * as progress), marks every collective it is in as blocked for good, then
 * calls the policy's on_device hook; when it comes back, the hook again.
 * Seconds the device computed so far, including batches cut short: */
double prt_compute_s(const prt *rt, size_t d);
/* Bytes sent between two servers (regional servers and the main one): no
 * device's link carries them, so they join the run's bytes moved here.
 * Not for policies that fast-forward (not folded). */
void prt_add_between_servers(prt *rt, double bytes);
/* Energy (scenario `power:` / `battery:`, docs/MODEL.md section 11): the
 * joules device d's battery holds above its cutoff now (INFINITY without a
 * battery), and its power figures (NULL without). */
double prt_energy_left(const prt *rt, size_t d);
const scn_energy *prt_energy_of(const prt *rt, size_t d);
/* Device d's battery level now, charge / capacity (0..1; 1 without a battery). */
double prt_energy_soc(const prt *rt, size_t d);
/* Abandon everything in flight (a job restart): computes, transfers,
 * collectives, and every event scheduled with prt_at before now (they are
 * dropped when they come up).  Activities go to waiting. */
void prt_abort(prt *rt);
/* Go back to the start of `epoch` (after a restart from a checkpoint):
 * epoch ends and device-epoch statistics recorded from `epoch` on are
 * forgotten, `left` reloads from `share`. */
void prt_rollback(prt *rt, int epoch);
/* prt_distribute again, after a failure: counts the bytes as resent and
 * leaves Tsend and each device's data_ready alone. */
int prt_resend(prt *rt, const double *data_bytes, const int *skip, prt_fn per_dev, void **ctx);
/* The run's failure figures (stored as run statistics in dynamic worlds). */
void prt_add_restart(prt *rt);
void prt_add_lost_s(prt *rt, double compute_s);
void prt_add_blocked_s(prt *rt, double s);
void prt_add_resent(prt *rt, double bytes);

/* Count bytes device d exchanged with the server outside prt_distribute
 * (model uploads/downloads the policy sends itself with world_transfer). */
void prt_add_server_bytes(prt *rt, size_t d, double bytes);

/* Record a statistic of this run (results.h res_stat; stored in run_stats,
 * shown by `run` and `show`).  0, or DP_ENOMEM after failing the run. */
int prt_stat(prt *rt, const char *name, res_scope scope, int64_t a, int64_t b, double value);

/* Policy `policy`'s options (another's: a policy that reuses a sibling's
 * planner) from this run's scenario into opts (that policy's options
 * struct, size bytes).  0 or DP_EINPUT (the message in prt_err). */
int prt_options_of(prt *rt, const char *policy, void *opts, size_t size);
/* Run policy p on s from scratch, beside this run (a planner that
 * simulates candidates: C-ADP's `solver: simulate`).  The caller frees the
 * result; NULL with err set when the run fails. */
res_run *prt_simulate(const policy_def *p, const scn_scenario *s, uint64_t seed, dp_err *err);

/* The run fails: the first failure's message is kept (err), the engine
 * stops after the current handler, prt_run returns the code.  Returns code. */
int prt_fail(prt *rt, int code, const char *fmt, ...) DP_PRINTF(3, 4);
/* Device d (0-based) switches to activity a now. */
void prt_set_act(prt *rt, size_t d, res_activity a);
/* Device d computes a batch of n samples now; fn(rt, ctx) runs when done.
 * `part` (0, 1] is the share of the batch's work done now (1 = the whole
 * batch; DeepSpeed stage 3 runs forward and backward apart); FLOPS and
 * samples are credited in proportion.  *dt_out (may be NULL) gets the
 * duration. */
int prt_compute(prt *rt, size_t d, int n, double part, prt_fn fn, void *ctx, double *dt_out);
/* Device d computes one step of n >= 1 samples, for policies that size
 * steps freely: the cost model for any n (batch_table interpolated,
 * peak_flops linear, batch_time scaled linearly as batch_time * n / batch
 * instead of the ceil model of whole batches), counted as one batch. */
int prt_compute_step(prt *rt, size_t d, int n, prt_fn fn, void *ctx, double *dt_out);
/* Device d computes its prt_left(rt)[d] > 0 samples in batches of bs >= 1
 * (the last may be short; prt_compute's ceil model; otherwise the run
 * fails with DP_EINPUT, a policy's bug), then fn(rt, ctx) runs with
 * prt_left(rt)[d] == 0: after one batch when it has more than one to go
 * and its batch times vary (noise, stragglers, a speed trace; call again),
 * or after all of them in one engine event when they do not (cmp_plain).
 * Such a run of batches gives every batch the end time, records and FLOPS
 * of its own event; what moves is only the order of equal-time events and
 * of the run's sums (docs/MODEL.md).  DPSIM_COMPUTE_PER_BATCH=1 or
 * prt_set_compute_per_batch(1) turns it off. */
int prt_compute_left(prt *rt, size_t d, int bs, prt_fn fn, void *ctx);
void prt_set_compute_per_batch(int on);
/* Send every device with data_bytes[d] > 0 or model its share and the model
 * from the server, all flows at once; per_dev(rt, ctx_d) runs when device
 * d holds both; `skip[d]` (may be NULL) leaves a device out entirely. */
int prt_distribute(prt *rt, const double *data_bytes, const int *skip, prt_fn per_dev, void **ctx);
/* ---- data where it lives (scenario dataset.parts, .storage, .caches;
 * runtime_data.c) -----------------------------------------------------------
 * With those keys prt_distribute and prt_resend send each device's data
 * from where it lives (its own samples stay, the rest from its site, then
 * the nearest sites; docs/MODEL.md section 1).  1 when the scenario places
 * its data so: */
int prt_data_placed(const prt *rt);
/* Samples device d holds itself (its slice of a part on its group). */
int64_t prt_data_local(const prt *rt, size_t d);
/* The byte term of a locality-aware split: bytes/s at which device d
 * receives samples it does not hold, from its nearest holder other than
 * itself that is up (from the server without dataset.parts), over the
 * path's bottleneck as if alone (C-ADP's rate; sim/core/dplace.h
 * dpl_read_rate); 0 when no other holder is left, INFINITY when nothing
 * limits it. */
double prt_data_rate(const prt *rt, size_t d);
/* Bring device d n samples it does not hold, each read from its nearest
 * holder that is up over the real path, as a distribution reads them;
 * done(ctx, 0) runs when they have all arrived (from an event now when
 * nothing moves; never when d goes down first).  src >= 0: the samples of
 * device src's first distribution not yet handed on (a failed device's
 * share; src == d: d's own again), those no holder has passed over (ask
 * prt_data_available first), then as for src < 0: any samples, the pools
 * nearest d first.  Without dataset.parts: one flow of n samples from the
 * server, exactly as before.  `resent`: counted as data sent again.
 * Returns the samples no pool could give (counted in data.samples_lost;
 * the caller's to drop), or a negative error (the run failed). */
int64_t prt_data_fetch(prt *rt, size_t d, int64_t n, long src, int resent, net_done_fn done, void *ctx);
/* Of the next n samples of device src's first distribution not yet handed
 * on, how many a holder that is up still has (n without dataset.parts). */
int64_t prt_data_available(const prt *rt, size_t src, int64_t n);
/* Samples of the dataset some holder that is up still has (the dataset's
 * samples without dataset.parts). */
int64_t prt_data_reachable(const prt *rt);
/* n samples are lost for good (no holder has them): data.samples_lost
 * counts them; the policy drops them from its shares. */
void prt_data_lose(prt *rt, int64_t n);
/* Device d reads the samples of its first distribution again (a device
 * that keeps no copy), through its site's cache (hits at the cache's
 * rate, misses from where they live); fn(rt, ctx) runs when they have all
 * arrived (from an event now when nothing moves).  A storage gone for
 * good with no replica loses its samples: the device's share shrinks. */
int prt_data_reread(prt *rt, size_t d, prt_fn fn, void *ctx);
/* 1 if some device has samples left in the current epoch. */
int prt_work_left(const prt *rt);
/* The current epoch ends now: record it; then either start the next (epoch
 * + 1, `left` reloaded from `share`; returns 1) or, after the last, end the
 * run (returns 0): the engine runs no further event, and Ttotal is now.
 * Negative (run failed) when out of memory.  Call it the instant the
 * epoch's model is averaged (an all-reduce done, the server's average
 * done, the last push applied), before the averaged model is sent out: the
 * model is trained once it is averaged (docs/MODEL.md, "When a run ends"),
 * the same for every policy; downloads after it open the next epoch. */
int prt_end_epoch(prt *rt);
/* The policy ends the run now, before its last epoch, having nothing left
 * it can do (a fleet whose batteries are empty for good: fedavg); the
 * epoch under way is not recorded as ended. */
void prt_finish(prt *rt);
/* Schedule fn(rt, ctx) at absolute time t (>= now); DP_ENOMEM when the
 * event queue is full (the caller fails the run). */
int prt_at(prt *rt, double t, prt_fn fn, void *ctx);
/* 1 when the world is periodic (no noise, trace, straggler, failure or
 * outage) and the policy has a steady_state hook: the runtime then restarts
 * the engine's clock at 0 at each clean epoch boundary (prt_now is the time
 * since that boundary; everything recorded is shifted back exactly), and
 * may fast-forward through epochs that repeat.  Such a policy starts the
 * next epoch from prt_at(rt, prt_now(rt), ...) after prt_end_epoch. */
int prt_periodic(const prt *rt);

/* ---- the update stream (learning; learn_stream.c) ----------------------
 * With `learning:` in the scenario, the runtime trains a real model on the
 * schedule the policy simulates (docs/MODEL.md "Learning").  Every batch a
 * device completes is a step, by itself; a policy declares how its devices
 * hold models and reports when models meet.  Without `learning:` each of
 * these does nothing, so a policy calls them unconditionally.
 *   SYNC:  every device computes gradients at one shared model, which
 *          prt_learn_sync updates (DDP, ZeRO, the load balancers);
 *   LOCAL: every device steps its own model, which prt_learn_average
 *          averages (C-ADP, local SGD, FL-SGD, hierarchical);
 *   ASYNC: every device computes gradients at the copy it pulled last
 *          (prt_learn_pull), applied to the server's model by
 *          prt_learn_push (asynchronous parameter server). */
typedef enum { PRT_LEARN_SYNC = 0, PRT_LEARN_LOCAL = 1, PRT_LEARN_ASYNC = 2 } prt_learn_kind;
int prt_learning(const prt *rt);
void prt_learn_mode(prt *rt, prt_learn_kind m);
/* A synchronous optimizer step among members[0..m) (NULL: every device):
 * the gradients since the last step averaged as PyTorch does (by_samples
 * 0: the mean of per-rank means, a rank with none adds zero; 1: the mean
 * over the global batch), applied to the shared model. */
void prt_learn_sync(prt *rt, const size_t *members, size_t m, int by_samples);
/* A model average among members[0..m) (NULL: every device), each model
 * weighted by the samples it trained on since its last average (since its
 * last average into the global model when into_global): into the global
 * (server's) model and/or back into every member's model. */
void prt_learn_average(prt *rt, const size_t *members, size_t m, int into_global, int to_members);
/* A background average (FL-SGD): begin snapshots the members' models
 * (weighted by the samples each trained on since its previous snapshot);
 * end, when the average has travelled, moves the global model to the
 * snapshots' average and every member to it plus its own steps since. */
void prt_learn_average_begin(prt *rt, const size_t *members, size_t m);
void prt_learn_average_end(prt *rt, const size_t *members, size_t m);
/* Device d's gradients since its pull applied to the server's model now;
 * returns the staleness (updates applied since that pull). */
long prt_learn_push(prt *rt, size_t d);
/* Device d copies the server's model now (a pull, a model download). */
void prt_learn_pull(prt *rt, size_t d);
/* Policies whose decisions read training statistics (AdaCoOpt; each
 * needs learning on, else returns DP_EINPUT / 0 / NULL): the learner's
 * parameter count, device d's model (d >= n: the global one), the
 * learning rate now, and the mean gradient g (n_params entries, or NULL)
 * and mean loss of device d's next k rows at its model (at the global one
 * with at_global), its data stream not advanced.  0 or an error. */
size_t prt_learn_params(const prt *rt);
const double *prt_learn_weights(const prt *rt, size_t d);
double prt_learn_lr(const prt *rt);
int prt_learn_probe(prt *rt, size_t d, int at_global, size_t k, double *g, double *loss);
/* Device d's local steps use lr x f from now on. */
void prt_learn_lr_scale(prt *rt, size_t d, double f);
/* A model average among members[0..m) weighted by weights[0..m) (not by
 * samples), into the global model and back to every member. */
void prt_learn_average_weighted(prt *rt, const size_t *members, size_t m, const double *weights);
/* Groups that push asynchronously (FedGSync): an exact model average
 * among members[0..m) (weighted by samples since their last average) back
 * into every member, the global model untouched; and device d's model
 * (its group's, members[0..m)) mixed into the global one, global = (1 -
 * alpha) global + alpha x, x as it arrives: delta-coded when delta_bits >
 * 0 (prt_delta_wire_bytes), else with the run's compression.  Returns the
 * staleness (global updates since d's pull). */
void prt_learn_group_average(prt *rt, const size_t *members, size_t m);
long prt_learn_merge(prt *rt, size_t d, const size_t *members, size_t m, double alpha, int delta_bits);
/* Members' models moved to (1 - beta) x their own + beta x the global
 * model (a regional server averaging in the global model it received). */
void prt_learn_mix_global(prt *rt, const size_t *members, size_t m, double beta);
/* A checkpoint of the model is complete now; a restart loads it (every
 * device's model and pending gradients). */
void prt_learn_checkpoint(prt *rt);
void prt_learn_restore(prt *rt);

/* ---- compression (compress.c) ------------------------------------------
 * With `compression:` in the scenario (scenarios/README.md), the models
 * and gradients a policy sends travel compressed: a policy sizes each such
 * send (an upload, a push, a ring collective's tensor) with prt_wire_bytes,
 * and the learner receives the same lossy transform (lrn_set_compress).
 * Downloads of the averaged or server model travel exact (M bytes).
 * Bytes of a model or gradient payload of `bytes` (the scenario's model
 * bytes, or a part of them, scaled) on the wire: */
double prt_wire_bytes(const prt *rt, double bytes);
/* A model sent delta-coded (FedGSync's pushes between groups): the
 * difference against the last model the sender sent, coded with the run's
 * method when it has one, else quantised to `bits` bits (lcompress.h);
 * its bytes on the wire (bits <= 0: prt_wire_bytes). */
double prt_delta_wire_bytes(const prt *rt, int bits, double bytes);
/* The run's setting (method LC_NONE: off). */
const struct lc_cfg *prt_compress(const prt *rt);
/* Read and check `compression:` (FILE:LINE:COL messages, DP_EINPUT). */
int prt_compress_read(const scn_scenario *s, struct lc_cfg *c, dp_err *err);
extern const char *const prt_compress_names[]; /* none, topk, quantize */

/* ---- collectives (collective.c) --------------------------------------- */
typedef enum { COLL_ALLREDUCE = 0, COLL_REDUCE_SCATTER, COLL_ALLGATHER } coll_kind;
/* Ring collective over all devices on `bytes` (the full tensor, M):
 * all-reduce 2(N-1) rounds, reduce-scatter and all-gather N-1 rounds, each
 * round every device sends bytes/N to its successor and ends when all its
 * flows end.  mode flows: real flows through the network model; analytic:
 * no flows, round time max over ring edges of latency + (bytes/N) / rate,
 * rate = min over the edge's links of capacity / ring edges crossing the
 * link (exact under max-min sharing when flows that share a link have
 * equal latencies).  fn(rt, ctx) runs when the collective ends. */
int coll_start(prt *rt, coll_kind k, double bytes, prt_coll_mode mode, prt_fn fn, void *ctx);
/* The same over members[0..m) only, in that ring order (distinct device
 * indices; the array is copied): a site's devices, the survivors of a
 * failure.  m < 2 ends at once. */
int coll_start_among(prt *rt, coll_kind k, double bytes, prt_coll_mode mode, const size_t *members, size_t m,
                     prt_fn fn, void *ctx);
/* How the collectives started from now on progress: 0 (default) with a
 * barrier after every round (all of a round's flows end before the next
 * starts); 1 pipelined, rank by rank: a member sends its next chunk once
 * its own send and the chunk it receives of the round have ended (MPI's
 * ring all-reduce, one send-receive per step).  Option
 * collective_progress (barrier, pipelined; docs/MODEL.md section 4). */
void coll_set_progress(prt *rt, int pipelined);
extern const char *const popt_progress_names[]; /* barrier, pipelined */
/* Give up the collectives a device going down broke (they never end): the
 * members stop showing as communicating for them.  For a policy whose
 * collectives run beside compute (FL-SGD's background average) and which
 * starts its average again among the devices left, where prt_abort would
 * also drop every compute. */
void coll_drop_broken(prt *rt);
/* The analytic duration of a collective over all devices now (tests,
 * docs); negative when out of memory. */
double coll_analytic_s(prt *rt, coll_kind k, double bytes);
/* Events one ring collective as flows takes over n devices, round by
 * round: policies that use flows refuse scenarios past the per-run event
 * budget up front, unless coll_closed_form_possible (one event per
 * collective: collective.c). */
double coll_ring_events(size_t n);
int coll_check_flows(const scn_scenario *s, const char *policy, prt_coll_mode mode, dp_err *err);
/* 1 when a ring over every device can run its rounds in closed form in
 * this scenario (no failures; no trace or outage on the links a ring
 * crosses; no WAN link that several ring edges could share). */
int coll_closed_form_possible(const scn_scenario *s);
/* Tests: 1 runs every collective round as flows (the reference the closed
 * form is checked against), 0 lets rounds run in closed form (default;
 * DPSIM_COLL_PER_FLOW=1 in the environment gives 1 for a process). */
void coll_set_per_flow(int on);

/* Equal split into prt_share and the bytes each device receives. */
int equal_split(prt *rt, prt_data_mode data, double *bytes);

/* Option value names shared by several policies. */
extern const char *const popt_data_names[];       /* replicate, shard */
extern const char *const popt_collective_names[]; /* flows, analytic */

#endif
