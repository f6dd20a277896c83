// ns3_queue: ns-3's hold model over one of its schedulers, the peer of
// tests/bench_engine.c (issue 16).  P events are scheduled at exponential
// times (mean 1 s); each event, when it fires, draws an exponential
// increment (mean 1 s) and schedules one more, so P stay pending.  The
// STEPS events after the initial fill are timed (processor time), as in
// bench_engine; the random draw is inside the loop, from ns-3's
// ExponentialRandomVariable (MRG32k3a + log), or with --rng=xorshift from
// the same xorshift + log as bench_engine, which isolates the queue.
//
// --bare: the scheduler alone (Scheduler::Insert and RemoveNext on keys,
// no event objects, no Simulator, no dispatch): the bare queue, as the
// issue 39 side-by-side asks for beside the full simulator.
//
// Usage: ns3_queue SCHEDULER PENDING STEPS [REPS] [--rng=ns3|xorshift] [--bare]
//   SCHEDULER: Map, List, Heap, Calendar, PriorityQueue (ns3::<name>Scheduler)
// Prints one line: "ns3 SCHEDULER PENDING pending (rng R): median X M
// events/s (min, max); peak RSS M MB".  Built only where libns3-dev is installed
// (tests/bench/meson.build); tests/bench/side_by_side.sh runs it.
#include <ns3/core-module.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <sys/resource.h>
#include <time.h>
#include <vector>

using namespace ns3;

namespace
{

uint64_t xs = 88172645463325252ull; // bench_engine's seed and generator

double xorshift_exp()
{
    xs ^= xs << 13;
    xs ^= xs >> 7;
    xs ^= xs << 17;
    return -std::log(static_cast<double>((xs >> 11) + 1) * 0x1.0p-53);
}

// Processor time of this process, as bench_engine measures: the machine
// is shared, so wall time would measure the neighbours too.
double CpuSeconds()
{
    struct timespec ts;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
    return static_cast<double>(ts.tv_sec) + 1e-9 * static_cast<double>(ts.tv_nsec);
}

struct Hold {
    Ptr<ExponentialRandomVariable> erv;
    bool use_xorshift = false;
    uint64_t count = 0, steps = 0;
    double t_end = 0;

    double Draw() { return use_xorshift ? xorshift_exp() : erv->GetValue(); }

    void Cb()
    {
        if (++count == steps) {
            t_end = CpuSeconds();
            Simulator::Stop();
            return;
        }
        Simulator::Schedule(Delay(), &Hold::Cb, this);
    }

    // Integer nanoseconds (ns-3's default resolution) straight into a Time:
    // the cheapest conversion ns-3 offers; Seconds(double) costs about 15%
    // more per event through its int64x64 arithmetic.
    Time Delay() { return TimeStep(static_cast<uint64_t>(std::llround(Draw() * 1e9))); }
};

double RunOnce(const std::string &sched, uint64_t pending, uint64_t steps, bool use_xorshift)
{
    ObjectFactory factory;
    factory.SetTypeId("ns3::" + sched + "Scheduler");
    Simulator::SetScheduler(factory);
    Hold h;
    h.erv = CreateObject<ExponentialRandomVariable>();
    h.erv->SetAttribute("Mean", DoubleValue(1.0));
    h.use_xorshift = use_xorshift;
    h.steps = steps;
    for (uint64_t i = 0; i < pending; i++) {
        Simulator::Schedule(h.Delay(), &Hold::Cb, &h);
    }
    double t0 = CpuSeconds();
    Simulator::Run();
    double dt = h.t_end - t0;
    Simulator::Destroy();
    return static_cast<double>(steps) / dt;
}

// The hold model on the scheduler alone: keys in, keys out.
double RunBare(const std::string &sched, uint64_t pending, uint64_t steps, bool use_xorshift)
{
    ObjectFactory factory;
    factory.SetTypeId("ns3::" + sched + "Scheduler");
    Ptr<Scheduler> q = factory.Create<Scheduler>();
    Hold h; // its Draw only
    h.erv = CreateObject<ExponentialRandomVariable>();
    h.erv->SetAttribute("Mean", DoubleValue(1.0));
    h.use_xorshift = use_xorshift;
    uint32_t uid = 0;
    for (uint64_t i = 0; i < pending; i++) {
        Scheduler::Event ev;
        ev.impl = nullptr;
        ev.key.m_ts = static_cast<uint64_t>(std::llround(h.Draw() * 1e9));
        ev.key.m_uid = uid++;
        ev.key.m_context = 0;
        q->Insert(ev);
    }
    double t0 = CpuSeconds();
    for (uint64_t k = 0; k < steps; k++) {
        Scheduler::Event ev = q->RemoveNext();
        ev.key.m_ts += static_cast<uint64_t>(std::llround(h.Draw() * 1e9));
        ev.key.m_uid = uid++;
        q->Insert(ev);
    }
    double dt = CpuSeconds() - t0;
    return static_cast<double>(steps) / dt;
}

int Usage()
{
    std::fprintf(stderr, "usage: ns3_queue SCHEDULER PENDING STEPS [REPS] [--rng=ns3|xorshift] [--bare]\n"
                         "  SCHEDULER: Map, List, Heap, Calendar or PriorityQueue\n");
    return 2;
}

} // namespace

int main(int argc, char **argv)
{
    std::vector<std::string> pos;
    bool use_xorshift = false, bare = false;
    for (int i = 1; i < argc; i++) {
        if (std::strcmp(argv[i], "--bare") == 0)
            bare = true;
        else if (std::strcmp(argv[i], "--rng=xorshift") == 0)
            use_xorshift = true;
        else if (std::strcmp(argv[i], "--rng=ns3") == 0)
            use_xorshift = false;
        else if (argv[i][0] == '-')
            return Usage();
        else
            pos.emplace_back(argv[i]);
    }
    if (pos.size() < 3 || pos.size() > 4)
        return Usage();
    static const char *known[] = {"Map", "List", "Heap", "Calendar", "PriorityQueue"};
    if (std::find_if(std::begin(known), std::end(known), [&](const char *k) { return pos[0] == k; }) ==
        std::end(known)) {
        std::fprintf(stderr, "ns3_queue: unknown scheduler '%s'\n", pos[0].c_str());
        return Usage();
    }
    char *end = nullptr;
    unsigned long long pending = std::strtoull(pos[1].c_str(), &end, 10);
    if (*end || pending == 0)
        return Usage();
    unsigned long long steps = std::strtoull(pos[2].c_str(), &end, 10);
    if (*end || steps == 0)
        return Usage();
    unsigned long long reps = 1;
    if (pos.size() == 4) {
        reps = std::strtoull(pos[3].c_str(), &end, 10);
        if (*end || reps == 0 || reps > 100)
            return Usage();
    }
    std::vector<double> rate;
    for (unsigned long long r = 0; r < reps; r++)
        rate.push_back(bare ? RunBare(pos[0], pending, steps, use_xorshift)
                            : RunOnce(pos[0], pending, steps, use_xorshift));
    std::sort(rate.begin(), rate.end());
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    std::printf(
        "ns3 %s%s %llu pending (rng %s): median %.3f M events/s (min %.3f, max %.3f); peak RSS %.1f MB\n",
        pos[0].c_str(), bare ? " (bare)" : "", pending, use_xorshift ? "xorshift" : "ns3", rate[rate.size() / 2] / 1e6,
        rate.front() / 1e6, rate.back() / 1e6, static_cast<double>(ru.ru_maxrss) / 1024.0);
    return 0;
}
