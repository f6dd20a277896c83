/* jobs_apps.c: the applications of the Pollux workload traces (OSDI 2021
 * artifact, its workloads CSV files: name,time,application,num_replicas,
 * batch_size) and the dpsim model, data set and epochs each stands for.
 * A job of application A runs the world's scenario with these values set
 * (model.*, dataset.*, training.epochs) and its per-device batch
 * ceil(batch_size / num_replicas) on every device group.  The epochs are a
 * slice of each application's training (Pollux trains to a target
 * accuracy; dpsim runs a fixed number of epochs), chosen so that a
 * 160-job trace simulates in seconds; scenarios/README.md lists the table
 * and where each number comes from.
 *
 * Each application also carries Pollux's own measurement of its gradient
 * statistics at its initial batch (traces/pollux/APP.csv, one row per
 * epoch, from the artifact's simulator/traces/APP/validation-BATCH.csv),
 * so that a trace job's statistical efficiency under `pollux` is the
 * application's, not 1.  The per-epoch sample counts those traces imply
 * (progress steps x initial batch) are where the data sets' sizes were
 * checked: cifar10 391 x 128, ncf 19,418 x 256 (994,169 ratings x 5 with
 * four negatives each), bert 7,387 x 12, yolov3 2,069 x 8, deepspeech2
 * 357 x 20 (the 7,140 utterances below), imagenet 6,406 x 200 (the whole
 * of ImageNet, of which dpsim runs a slice). */
#include "jobs.h"

static const jobs_app apps[] = {
    {"cifar10", "resnet18-cifar", 10,
     "ResNet-18 on CIFAR-10: 11.2M params, 0.56 GMAC/sample (32x32), 50,000 samples of 3 KB", 128},
    {"imagenet", "resnet50", 2,
     "ResNet-50 on a 128,000-image ImageNet slice: presets.yaml's resnet50, 110 KB/sample", 200},
    {"ncf", "neumf", 1,
     "NeuMF (factors 32, 3 MLP layers) on MovieLens-1M: 1.60M params, 43,104 MAC/sample, 994,169 ratings x 5 "
     "(4 negatives each) of 12 B",
     256},
    {"deepspeech2", "deepspeech2", 2,
     "DeepSpeech2 (2 conv, 5 bidirectional GRU of 800) on CMU ARCTIC: 41.2M params, 7.76 GMAC per 3 s "
     "utterance, "
     "7,140 utterances of 96 KB",
     20},
    {"yolov3", "yolov3", 3,
     "YOLOv3 on PASCAL VOC: 61.9M params, 33 GMAC/sample at 416x416, 16,551 images of 150 KB", 8},
    {"bert", "bert-base", 2,
     "BERT-base fine-tuned on SQuAD: presets.yaml's bert-base, 88,641 samples of 2 KB", 12},
};

/* The overrides each application sets (same order as apps). */
static const char *const app_set[][7] = {
    {"model.name=resnet18-cifar", "model.params=11173962", "model.flops_per_sample=0.56e9",
     "dataset.name=cifar10", "dataset.samples=50000", "dataset.sample_bytes=3KB", NULL},
    {"model.name=resnet50", "model.params=25557032", "model.flops_per_sample=4.09e9",
     "dataset.name=imagenet-slice", "dataset.samples=128000", "dataset.sample_bytes=110KB", NULL},
    {"model.name=neumf", "model.params=1602657", "model.flops_per_sample=43104", "dataset.name=movielens-1m",
     "dataset.samples=4970845", "dataset.sample_bytes=12B", NULL},
    {"model.name=deepspeech2", "model.params=41187968", "model.flops_per_sample=7.76e9",
     "dataset.name=cmu-arctic", "dataset.samples=7140", "dataset.sample_bytes=96KB", NULL},
    {"model.name=yolov3", "model.params=61.9e6", "model.flops_per_sample=33e9", "dataset.name=voc",
     "dataset.samples=16551", "dataset.sample_bytes=150KB", NULL},
    {"model.name=bert-base", "model.params=110e6", "model.flops_per_sample=14.23e9", "dataset.name=squad",
     "dataset.samples=88641", "dataset.sample_bytes=2KB", NULL},
};

/* The traces, built in from traces/pollux/ (scenarios/meson.build). */
#define TRACE(app)                                                                                           \
    extern const char dpsim_pollux_##app[];                                                                  \
    extern const size_t dpsim_pollux_##app##_len;
TRACE(cifar10)
TRACE(imagenet)
TRACE(ncf)
TRACE(deepspeech2)
TRACE(yolov3)
TRACE(bert)

size_t jobs_app_count(void)
{
    return sizeof apps / sizeof apps[0];
}

const jobs_app *jobs_app_at(size_t i)
{
    return i < jobs_app_count() ? &apps[i] : NULL;
}

const char *const *jobs_app_overrides(size_t i)
{
    return i < jobs_app_count() ? app_set[i] : NULL;
}

const char *jobs_app_trace(size_t i, size_t *len)
{
    const char *const t[] = {dpsim_pollux_cifar10,     dpsim_pollux_imagenet, dpsim_pollux_ncf,
                             dpsim_pollux_deepspeech2, dpsim_pollux_yolov3,   dpsim_pollux_bert};
    const size_t n[] = {dpsim_pollux_cifar10_len,     dpsim_pollux_imagenet_len, dpsim_pollux_ncf_len,
                        dpsim_pollux_deepspeech2_len, dpsim_pollux_yolov3_len,   dpsim_pollux_bert_len};
    if (i >= jobs_app_count())
        return NULL;
    *len = n[i];
    return t[i];
}
