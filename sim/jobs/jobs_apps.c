/* jobs_apps.c: the applications of the Pollux workload traces (OSDI 2021
 * artifact, its workloads CSV files: name,time,application,num_replicas,
 * batch_size) and the dpsim model, data set and epochs each stands for.
 * A job of application A runs the world's scenario with these values set
 * (model.*, dataset.*, training.epochs) and its per-device batch
 * ceil(batch_size / num_replicas) on every device group.  The epochs are a
 * slice of each application's training (Pollux trains to a target
 * accuracy; dpsim runs a fixed number of epochs), chosen so that a
 * 160-job trace simulates in seconds; scenarios/README.md lists the table. */
#include "jobs.h"

static const jobs_app apps[] = {
    {"cifar10", "resnet18-cifar", 10, "ResNet-18 on CIFAR-10: 11.2M params, 0.56 GFLOP/sample (32x32), 50,000 samples of 3 KB"},
    {"imagenet", "resnet50", 2, "ResNet-50 on a 128,000-image ImageNet slice: presets.yaml's resnet50, 110 KB/sample"},
    {"ncf", "neumf", 5, "NeuMF on MovieLens-1M: 5.2M params (estimate), 1 MFLOP/sample (estimate), 1,000,209 samples of 16 B"},
    {"deepspeech2", "deepspeech2", 2, "DeepSpeech2 on a 10,000-utterance slice: 38M params, 20 GFLOP/sample, 256 KB/sample (estimates)"},
    {"yolov3", "yolov3", 3, "YOLOv3 on PASCAL VOC: 61.9M params, 33 GFLOP/sample at 416x416, 16,551 images of 150 KB"},
    {"bert", "bert-base", 2, "BERT-base fine-tuned on SQuAD: presets.yaml's bert-base, 88,641 samples of 2 KB"},
};

/* The overrides each application sets (same order as apps). */
static const char *const app_set[][7] = {
    {"model.name=resnet18-cifar", "model.params=11173962", "model.flops_per_sample=0.56e9",
     "dataset.name=cifar10", "dataset.samples=50000", "dataset.sample_bytes=3KB", NULL},
    {"model.name=resnet50", "model.params=25557032", "model.flops_per_sample=4.09e9", "dataset.name=imagenet-slice",
     "dataset.samples=128000", "dataset.sample_bytes=110KB", NULL},
    {"model.name=neumf", "model.params=5.2e6", "model.flops_per_sample=1e6", "dataset.name=movielens-1m",
     "dataset.samples=1000209", "dataset.sample_bytes=16B", NULL},
    {"model.name=deepspeech2", "model.params=38e6", "model.flops_per_sample=20e9", "dataset.name=librispeech-slice",
     "dataset.samples=10000", "dataset.sample_bytes=256KB", NULL},
    {"model.name=yolov3", "model.params=61.9e6", "model.flops_per_sample=33e9", "dataset.name=voc",
     "dataset.samples=16551", "dataset.sample_bytes=150KB", NULL},
    {"model.name=bert-base", "model.params=110e6", "model.flops_per_sample=14.23e9", "dataset.name=squad",
     "dataset.samples=88641", "dataset.sample_bytes=2KB", NULL},
};

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
