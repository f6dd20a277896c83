/* Energy and batteries (docs/MODEL.md section 11): the loader's units and
 * messages, energy integrated over activities, batteries driving
 * availability, and fedavg's rounds on them, against hand counts.
 */
#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "policy/eafl.h"
#include "policy/policy.h"
#include "policy/runtime.h"

#include "test_common.h"

TEST_SUITE_NO_LEAKS(energy);

static res_run *run(const char *policy, const scn_scenario *s)
{
    dp_err err = {0};
    res_run *r = policy_run(policy_find(policy), s, 1, &err);
    cr_assert(r, "%s: %s", policy, err.msg);
    return r;
}

static double stat(const res_run *r, const char *name, res_scope sc, int64_t a)
{
    const res_stat *x = res_find_stat(r, name, sc, a, 0);
    cr_assert(x, "no statistic %s", name);
    return x->value;
}

/* One phone computing back to back (100 batches of 1 s per round, a tiny
 * model on a fast link), 6.33 W while computing and nothing otherwise. */
static const char *EAFL = "model: { params: 1000, flops_per_sample: 1e6 }\n"
                          "dataset: { samples: 100000, sample_bytes: 100 }\n"
                          "training: { epochs: 1000 }\n"
                          "devices:\n"
                          "  - name: phone\n"
                          "    kind: cpu\n"
                          "    memory: 4GB\n"
                          "    batch: 10\n"
                          "    batch_time: 1s\n"
                          "    link: { up: 1Gbps, down: 1Gbps }\n"
                          "    power: { compute: 6.33W }\n"
                          "    battery: { capacity: 5000mAh, voltage: 5V, charge: 30%, cutoff: 0% }\n"
                          "policies:\n"
                          "  fedavg: { steps: 100, rounds: 1000 }\n";

/* EAFL's constants: 5,000 mAh at 5 V and 30% is 7.5 Wh; at 6.33 W of
 * compute it lasts 7.5 / 6.33 = 1.18483 h. */
Test(energy, eafl_battery_constants)
{
    scn_scenario *s = load(EAFL, NULL, 0);
    const scn_energy *e = &s->groups[0].energy;
    expect_close(e->capacity_j * e->charge, 7.5 * 3600);
    expect_close(e->compute_w, 6.33);
    cr_expect(scn_has_failures(s), "a battery makes devices able to go down");
    res_run *r = run("fedavg", s);
    expect_close(stat(r, "energy.compute_j", RES_SCOPE_RUN, 0), 7.5 * 3600);
    expect_close(stat(r, "energy_j", RES_SCOPE_DEVICE, 0), 7.5 * 3600);
    /* compute alone drained it: its compute seconds (the cut batch's part
     * included) are 7.5 Wh / 6.33 W */
    expect_close(r->devices[0].compute_s, 7.5 * 3600 / 6.33);
    cr_expect(fabs(r->devices[0].compute_s / 3600 - 1.185) < 5e-4, "%.9g h", r->devices[0].compute_s / 3600);
    expect_close(stat(r, "battery.soc", RES_SCOPE_DEVICE, 0), 0);
    expect_close(stat(r, "battery.drops", RES_SCOPE_RUN, 0), 1);
    /* no charger: the run ends when the fleet is empty, not as a failure */
    cr_expect(stat(r, "fedavg.exhausted_s", RES_SCOPE_RUN, 0) > 0);
    res_run_free(r);
    scn_free(s);
}

/* Two equal devices behind a server NIC of 1e6 B/s, access links 1e7 B/s,
 * a 1e6 B model, 1 W while transmitting and nothing else: one round of
 * `clients` devices (1: alone; 2: both upload at once). */
static const char *SHARED = "model: { params: 250000, flops_per_sample: 1e6 }\n"
                            "dataset: { samples: 20, sample_bytes: 1000 }\n"
                            "training: { epochs: 1 }\n"
                            "server: { nic: { up: 8Mbps, down: 8Mbps } }\n"
                            "devices:\n"
                            "  - { name: a, count: 2, kind: cpu, memory: 4GB, batch: 10, batch_time: 1s,\n"
                            "      link: { up: 80Mbps, down: 80Mbps }, power: { transmit: 1W } }\n"
                            "policies:\n"
                            "  fedavg: { steps: 1, rounds: 1 }\n";

static double joules_per_byte(int clients)
{
    char k[64];
    snprintf(k, sizeof k, "%d", clients);
    scn_override ov = {"policies.fedavg.clients", k};
    scn_scenario *s = load(SHARED, &ov, 1);
    res_run *r = run("fedavg", s);
    double M = s->model.model_bytes, j = stat(r, "energy.transmit_j", RES_SCOPE_RUN, 0);
    res_run_free(r);
    scn_free(s);
    return j / (clients * M);
}

/* Transmit energy follows the flows' durations: a transfer sharing its
 * bottleneck max-min with one equal flow lasts twice as long, so its
 * energy per byte is twice that of the same transfer alone. */
Test(energy, shared_link_doubles_energy_per_byte)
{
    double alone = joules_per_byte(1), shared = joules_per_byte(2);
    expect_close(alone, 1e-6); /* 1 W x 1 s for 1e6 B */
    expect_close(shared, 2 * alone);
}

/* Eight equal devices, every one in every round, no charger: a round costs
 * each E_round = 2 W x 5 s of compute + 1 W x 1 s of upload = 11 J
 * (receiving and idling are free), so a battery holding E0 above its
 * cutoff first fails in round floor(E0 / E_round) + 1. */
static int64_t first_drop_round(const char *capacity)
{
    scn_override ov = {"devices.p.battery.capacity", capacity};
    scn_scenario *s = load("model: { params: 250000, flops_per_sample: 1e6 }\n"
                           "dataset: { samples: 800, sample_bytes: 1000 }\n"
                           "training: { epochs: 1000 }\n"
                           "devices:\n"
                           "  - { name: p, count: 8, kind: cpu, memory: 4GB, batch: 10, batch_time: 1s,\n"
                           "      link: { up: 8Mbps, down: 80Mbps },\n"
                           "      power: { compute: 2W, transmit: 1W },\n"
                           "      battery: { capacity: 100J, charge: 100%, cutoff: 0% } }\n"
                           "policies:\n"
                           "  fedavg: { steps: 5, rounds: 1 }\n",
                           &ov, 1);
    res_run *r = run("fedavg", s);
    double v = stat(r, "fedavg.first_drop_round", RES_SCOPE_RUN, 0);
    /* every device goes in that round, and no later round completes */
    expect_close(stat(r, "battery.devices_dropped", RES_SCOPE_RUN, 0), 8);
    expect_close(stat(r, "fedavg.rounds", RES_SCOPE_RUN, 0), v - 1);
    res_run_free(r);
    scn_free(s);
    return (int64_t)v;
}

Test(energy, first_dropout_round_by_hand)
{
    const double e_round = 2 * 5 + 1 * 1;
    const char *caps[] = {"100J", "50J", "12J", "1000J"};
    const double e0[] = {100, 50, 12, 1000};
    for (int i = 0; i < 4; i++)
        cr_expect_eq(first_drop_round(caps[i]), (int64_t)floor(e0[i] / e_round) + 1, "E0 = %g J", e0[i]);
}

/* A charger brings a device back: at its cutoff it charges at 10 W to 50%
 * and rejoins, so the rounds go on past the first drop. */
Test(energy, charger_brings_devices_back)
{
    scn_scenario *s = load("model: { params: 250000, flops_per_sample: 1e6 }\n"
                           "dataset: { samples: 200, sample_bytes: 1000 }\n"
                           "training: { epochs: 30 }\n"
                           "devices:\n"
                           "  - { name: p, count: 2, kind: cpu, memory: 4GB, batch: 10, batch_time: 1s,\n"
                           "      link: { up: 8Mbps, down: 80Mbps }, power: { compute: 2W, transmit: 1W },\n"
                           "      battery: { capacity: 100J, cutoff: 10%,\n"
                           "                 charging: { rate: 10W, resume: 50% } } }\n"
                           "policies:\n"
                           "  fedavg: { steps: 5, rounds: 1 }\n",
                           NULL, 0);
    res_run *r = run("fedavg", s);
    cr_expect_eq(r->n_epochs, 30, "every round completes");
    cr_expect(stat(r, "battery.drops", RES_SCOPE_RUN, 0) >= 2);
    /* a device down charges 40 J at 10 W: 4 s out, at least */
    cr_expect(stat(r, "battery.first_drop_s", RES_SCOPE_RUN, 0) < r->ttotal_s - 4);
    res_run_free(r);
    scn_free(s);
}

/* A trace charger plugs a device in only from t = 1 h: the fleet drops
 * within minutes and every round after waits for the plug; a Bernoulli
 * charger (p = 0.5 every minute) brings them back too. */
Test(energy, trace_and_bernoulli_chargers)
{
    const char *chargers[] = {"{ rate: 10W, resume: 50%, trace: data/plugged-after-1h.csv }",
                              "{ rate: 10W, resume: 50%, every: 1min, probability: 0.5 }"};
    for (int i = 0; i < 2; i++) {
        char text[2048];
        snprintf(text, sizeof text,
                 "model: { params: 250000, flops_per_sample: 1e6 }\n"
                 "dataset: { samples: 200, sample_bytes: 1000 }\n"
                 "training: { epochs: 30 }\n"
                 "devices:\n"
                 "  - { name: p, count: 2, kind: cpu, memory: 4GB, batch: 10, batch_time: 1s,\n"
                 "      link: { up: 8Mbps, down: 80Mbps }, power: { compute: 2W, transmit: 1W },\n"
                 "      battery: { capacity: 100J, cutoff: 10%%, charging: %s } }\n"
                 "policies:\n"
                 "  fedavg: { steps: 5, rounds: 1 }\n",
                 chargers[i]);
        dp_err err = {0};
        char dir[1024];
        snprintf(dir, sizeof dir, "%s/tests", getenv("DPSIM_SRC") ? getenv("DPSIM_SRC") : "..");
        scn_scenario *s = scn_load_string("test.yaml", text, strlen(text), dir, NULL, 0, &err);
        cr_assert(s, "%s", err.msg);
        res_run *r = run("fedavg", s);
        cr_expect_eq(r->n_epochs, 30, "every round completes");
        cr_expect(stat(r, "battery.drops", RES_SCOPE_RUN, 0) >= 2);
        if (i == 0)
            cr_expect(r->ttotal_s > 3600 + 4, "Ttotal %g", r->ttotal_s); /* 40 J at 10 W after the plug */
        res_run_free(r);
        scn_free(s);
    }
}

/* Selection by energy never completes fewer rounds than random selection
 * on a fleet without chargers whose batteries differ. */
Test(energy, energy_aware_selection_outlasts_random)
{
    const char *fleet = "model: { params: 250000, flops_per_sample: 1e6 }\n"
                        "dataset: { samples: 1600, sample_bytes: 1000 }\n"
                        "training: { epochs: 1000 }\n"
                        "devices:\n"
                        "  - { name: p, count: 8, kind: cpu, memory: 4GB, batch: 10, batch_time: 1s,\n"
                        "      link: { up: 8Mbps, down: 80Mbps }, power: { compute: 2W, transmit: 1W },\n"
                        "      battery: { capacity: 100J, charge: 100% } }\n"
                        "  - { name: q, count: 8, kind: cpu, memory: 4GB, batch: 10, batch_time: 1s,\n"
                        "      link: { up: 8Mbps, down: 80Mbps }, power: { compute: 2W, transmit: 1W },\n"
                        "      battery: { capacity: 100J, charge: 35% } }\n"
                        "policies:\n"
                        "  fedavg: { steps: 5, rounds: 1, clients: 4 }\n";
    double rounds[2];
    const char *sel[] = {"random", "energy"};
    for (int i = 0; i < 2; i++) {
        scn_override ov = {"policies.fedavg.select", sel[i]};
        scn_scenario *s = load(fleet, &ov, 1);
        res_run *r = run("fedavg", s);
        rounds[i] = stat(r, "fedavg.rounds", RES_SCOPE_RUN, 0);
        res_run_free(r);
        scn_free(s);
    }
    cr_expect(rounds[1] >= rounds[0], "energy %g, random %g", rounds[1], rounds[0]);
}

/* One device under flsgd (sync: server, H = 1): 2 steps of 1 s; after the
 * first, the background average's upload (M = 4,000 B at 64 kbit/s: 0.5
 * s) runs while it computes the second; after the second, the forced last
 * average's upload (0.5 s, marked a send).  Computing and transmitting at
 * once, the powers add: E = 3 W x 1 + (3 + 2) W x 0.5 + 3 W x 0.5 + 2 W x
 * 0.5 = 8 J (7 J with the radio's share left out). */
static const char *OVERLAP =
    "model: { params: 1000, flops_per_sample: 1e6 }\n"
    "dataset: { samples: 20, sample_bytes: 1B }\n"
    "training: { epochs: 1 }\n"
    "server: { nic: { up: 1Gbps, down: 1Gbps } }\n"
    "devices:\n"
    "  - { name: p, kind: cpu, memory: 4GB, batch: 10, batch_time: 1s,\n"
    "      link: { up: 64kbps, down: 1Gbps }, power: { compute: 3W, transmit: 2W } }\n"
    "policies:\n"
    "  flsgd: { steps: 1, sync: server }\n";

Test(energy, compute_and_transmit_powers_add)
{
    scn_scenario *s = load(OVERLAP, NULL, 0);
    res_run *r = run("flsgd", s);
    expect_close(stat(r, "energy.total_j", RES_SCOPE_RUN, 0), 3 * 1 + (3 + 2) * 0.5 + 3 * 0.5 + 2 * 0.5);
    expect_close(stat(r, "energy.compute_j", RES_SCOPE_RUN, 0), 3 * 2);
    expect_close(stat(r, "energy.transmit_j", RES_SCOPE_RUN, 0), 2 * (0.5 + 0.5));
    res_run_free(r);
    scn_free(s);
}

/* The same with a 4.5 J battery (cutoff 0): 3 J go in the first step, the
 * other 1.5 J at 5 W while it computes and uploads: it leaves 0.3 s into
 * the second step, after the distribution (4,020 B at 1 Gbit/s); a
 * charger brings it back to finish. */
Test(energy, overlap_drains_the_battery_at_the_sum)
{
    char text[1200];
    snprintf(text, sizeof text, "%s", OVERLAP);
    char *at = strstr(text, "transmit: 2W } }");
    cr_assert(at);
    snprintf(at, sizeof text - (size_t)(at - text),
             "transmit: 2W },\n      battery: { capacity: 4.5J, charge: 100%%, cutoff: 0%%, charging: { "
             "rate: 100W } } }\n"
             "policies:\n  flsgd: { steps: 1, sync: server }\n");
    scn_scenario *s = load(text, NULL, 0);
    res_run *r = run("flsgd", s);
    expect_close(stat(r, "battery.first_drop_s", RES_SCOPE_RUN, 0), 4020 / 1.25e8 + 1 + 1.5 / 5);
    res_run_free(r);
    scn_free(s);
}

/* EAFL's score on a hand example: Oort's utility stat x (T/t)^alpha for a
 * round longer than T = 10 s (alpha 2), min-max normalised, weighted 0.7
 * against the battery levels 0.9, 0.3, 0.5. */
Test(energy, eafl_score_by_hand)
{
    double util[3] = {eafl_oort_utility(100, 20, 10, 2), eafl_oort_utility(60, 8, 10, 2),
                      eafl_oort_utility(80, 10, 10, 2)};
    cr_expect(fabs(util[0] - 25) <= 1e-12 && util[1] == 60 && util[2] == 80, "%g %g %g", util[0], util[1],
              util[2]);
    cr_expect_eq(eafl_oort_utility(100, 20, 0, 2), 100, "no preferred round: no penalty");
    double soc[3] = {0.9, 0.3, 0.5}, score[3];
    eafl_scores(3, util, soc, 0.7, score);
    double want[3] = {0.3 * 0.9, 0.7 * 35.0 / 55.0 + 0.3 * 0.3, 0.7 + 0.3 * 0.5};
    for (int i = 0; i < 3; i++)
        cr_expect(fabs(score[i] - want[i]) <= 1e-12, "score %d: %.17g, want %.17g", i, score[i], want[i]);
    double same[2] = {4, 4}, s2[2];
    eafl_scores(2, same, soc, 0.7, s2);
    cr_expect(fabs(s2[0] - 0.27) <= 1e-12 && fabs(s2[1] - 0.09) <= 1e-12, "equal utilities normalise to 0");
}

/* fedavg `select: eafl` in a run: two fast phones at 50% and two slow ones
 * (a round over the preferred 10 s) at 90%.  With w = 0.7 the fast ones
 * score 0.7 + 0.3 x 0.5 = 0.85 against 0.3 x 0.9 = 0.27; with w = 0.2,
 * 0.2 + 0.8 x 0.5 = 0.6 against 0.8 x 0.9 = 0.72: the slow ones. */
Test(energy, eafl_selection_follows_the_weight)
{
    const char *fleet = "model: { params: 1000, flops_per_sample: 1e6 }\n"
                        "dataset: { samples: 400, sample_bytes: 100 }\n"
                        "training: { epochs: 1 }\n"
                        "devices:\n"
                        "  - { name: fast, count: 2, kind: cpu, memory: 4GB, batch: 10, batch_time: 1s,\n"
                        "      link: { up: 1Gbps, down: 1Gbps }, power: { compute: 1W },\n"
                        "      battery: { capacity: 1000J, charge: 50% } }\n"
                        "  - { name: slow, count: 2, kind: cpu, memory: 4GB, batch: 10, batch_time: 4s,\n"
                        "      link: { up: 1Gbps, down: 1Gbps }, power: { compute: 1W },\n"
                        "      battery: { capacity: 1000J, charge: 90% } }\n"
                        "policies:\n"
                        "  fedavg: { steps: 5, rounds: 1, clients: 2, select: eafl, deadline: 10s }\n";
    const char *w[] = {"0.7", "0.2"};
    for (int i = 0; i < 2; i++) {
        scn_override ov = {"policies.fedavg.weight", w[i]};
        scn_scenario *s = load(fleet, &ov, 1);
        res_run *r = run("fedavg", s);
        for (int d = 0; d < 4; d++) {
            int chosen = (d < 2) == (i == 0);
            cr_expect_eq(stat(r, "local_steps", RES_SCOPE_DEVICE, d), chosen ? 5 : 0, "w %s, device %d", w[i],
                         d);
        }
        res_run_free(r);
        scn_free(s);
    }
}

static void expect_refused(const char *text, const char *where, const char *what)
{
    dp_err err = {0};
    scn_scenario *s = scn_load_string("test.yaml", text, strlen(text), NULL, NULL, 0, &err);
    cr_expect_null(s, "accepted: %s", text);
    scn_free(s);
    cr_expect_eq(err.code, DP_EINPUT);
    cr_expect(strstr(err.msg, where), "want %s in: %s", where, err.msg);
    cr_expect(strstr(err.msg, what), "want '%s' in: %s", what, err.msg);
}

#define HEAD                                                                                                 \
    "model: { params: 1000, flops_per_sample: 1e6 }\n"                                                       \
    "dataset: { samples: 100, sample_bytes: 100 }\n"                                                         \
    "training: { epochs: 1 }\n"                                                                              \
    "devices:\n"                                                                                             \
    "  - name: p\n"                                                                                          \
    "    kind: cpu\n"                                                                                        \
    "    memory: 4GB\n"                                                                                      \
    "    batch: 10\n"                                                                                        \
    "    batch_time: 1s\n"                                                                                   \
    "    link: { up: 1Gbps, down: 1Gbps }\n"

Test(energy, bad_input_names_file_line_column)
{
    expect_refused(HEAD "    battery: { capacity: 5000mAh, voltage: 3.85V }\n", "test.yaml:11:14",
                   "a battery needs the device's power figures");
    expect_refused(HEAD "    power: { compute: 6W }\n    battery: { capacity: 5000mAh }\n", "test.yaml:12:26",
                   "needs a voltage");
    expect_refused(HEAD "    power: { compute: 6 Watts }\n", "test.yaml:11:23", "unknown unit");
    expect_refused(HEAD "    power: { }\n", "test.yaml:11:12", "at least one of");
    expect_refused(HEAD
                   "    power: { compute: 6W }\n    battery: { capacity: 10Wh, charge: 3%, cutoff: 5% }\n",
                   "test.yaml:12:40", "starts above its cutoff");
    expect_refused(HEAD "    power: { compute: 6W }\n    battery: { capacity: 10Wh, charge: 130% }\n",
                   "test.yaml:12:40", "at most 1");
    expect_refused(HEAD "    power: { compute: 6W }\n    availability: { mtbf: 1h, mttr: 1h }\n"
                        "    battery: { capacity: 10Wh }\n",
                   "test.yaml:12:5", "not both");
    expect_refused(
        HEAD
        "    power: { compute: 6W }\n    battery: { capacity: 10Wh, charging: { rate: 5W, every: 1h } }\n",
        "test.yaml:12:42", "needs both every and probability");
}
