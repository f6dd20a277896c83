// simgrid_flows: SimGrid's peer of tests/bench_net.c part 1 (issue 16).
// F flows leave one server through its NIC (1.25e9 B/s) and each crosses
// its own access link (flow i: 1e6 x (1 + i mod 200) B/s), all started at
// time 0, latency 0, sizes 1e6 x (1 + i mod 997) + i bytes: the same world
// as bench_net.c and tests/bench/dpsim_flows.c, run to completion.
// The platform is a star zone (each host's route is its own links), so it
// costs O(F) memory.  Options for SimGrid's models go in as usual:
//   --cfg=network/model:CM02 --cfg=network/optim:Lazy ...
//   simgrid_flows F [--wan] [--ends FILE] [--cfg=...]
// --wan: every odd flow also crosses one shared WAN link of 2e8 B/s (a
// world of two shared links); --ends FILE: each flow's end, "i end_s" a
// line, in flow order (then one actor per flow waits for its own comm, so
// the processor time is not comparable: the driver times runs without it).
// Prints one line: "simgrid F flows: makespan S s, N completions, cpu C s,
// peak RSS M MB".  Built only where libsimgrid-dev is installed
// (tests/bench/meson.build); tests/bench/side_by_side.sh runs it.
#include <simgrid/s4u.hpp>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <sys/resource.h>
#include <time.h>
#include <vector>

namespace sg4 = simgrid::s4u;

namespace
{

std::vector<sg4::Host *> devices;
sg4::Host *server = nullptr;
double makespan = 0;
size_t completions = 0;
std::vector<double> ends; // --ends: flow i's end

double Bytes(size_t i)
{
    return 1e6 * static_cast<double>(1 + i % 997) + static_cast<double>(i);
}

void Sender()
{
    std::vector<sg4::CommPtr> comms;
    comms.reserve(devices.size());
    for (size_t i = 0; i < devices.size(); i++) {
        comms.push_back(sg4::Comm::sendto_async(server, devices[i], static_cast<uint64_t>(Bytes(i))));
    }
    for (auto &c : comms) {
        c->wait();
        completions++;
    }
    makespan = sg4::Engine::get_clock();
}

// --ends: flow i's own waiter.
void Flow(size_t i)
{
    sg4::Comm::sendto_async(server, devices[i], static_cast<uint64_t>(Bytes(i)))->wait();
    ends[i] = sg4::Engine::get_clock();
    completions++;
    if (ends[i] > makespan)
        makespan = ends[i];
}

// Processor time of this process: the machine is shared, so wall time
// would measure the neighbours too.
double CpuSeconds()
{
    struct timespec ts;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
    return static_cast<double>(ts.tv_sec) + 1e-9 * static_cast<double>(ts.tv_nsec);
}

} // namespace

int main(int argc, char **argv)
{
    sg4::Engine e(&argc, argv); // consumes --cfg=... and --log=...
    bool wan_on = false;
    const char *ends_file = nullptr;
    for (int a = 2; a < argc; a++) {
        if (!std::strcmp(argv[a], "--wan"))
            wan_on = true;
        else if (!std::strcmp(argv[a], "--ends") && a + 1 < argc)
            ends_file = argv[++a];
        else
            argc = 0; // usage
    }
    if (argc < 2) {
        std::fprintf(stderr, "usage: simgrid_flows F [--wan] [--ends FILE] [--cfg=network/model:CM02 ...]\n");
        return 2;
    }
    char *end = nullptr;
    unsigned long long F = std::strtoull(argv[1], &end, 10);
    if (*end || F == 0 || F > 1000000) {
        std::fprintf(stderr, "simgrid_flows: F must be 1..1000000 (got '%s')\n", argv[1]);
        return 2;
    }
    auto *zone = sg4::create_star_zone("world");
    server = zone->create_host("server", 1e9);
    const sg4::Link *nic = zone->create_link("nic", 1.25e9)->set_latency(0)->seal();
    zone->add_route(server->get_netpoint(), nullptr, nullptr, nullptr, {sg4::LinkInRoute(nic)}, true);
    const sg4::Link *wan = zone->create_link("wan", 2e8)->set_latency(0)->seal();
    for (unsigned long long i = 0; i < F; i++) {
        std::string name = "d" + std::to_string(i);
        sg4::Host *h = zone->create_host(name, 1e9);
        const sg4::Link *acc =
            zone->create_link("acc" + std::to_string(i), 1e6 * static_cast<double>(1 + i % 200))
                ->set_latency(0)
                ->seal();
        if (wan_on && i % 2)
            zone->add_route(h->get_netpoint(), nullptr, nullptr, nullptr,
                            {sg4::LinkInRoute(acc), sg4::LinkInRoute(wan)}, true);
        else
            zone->add_route(h->get_netpoint(), nullptr, nullptr, nullptr, {sg4::LinkInRoute(acc)}, true);
        devices.push_back(h);
    }
    zone->seal();
    if (ends_file) {
        ends.assign(F, 0);
        for (size_t i = 0; i < F; i++)
            sg4::Actor::create("f" + std::to_string(i), server, Flow, i);
    } else {
        sg4::Actor::create("sender", server, Sender);
    }
    double t0 = CpuSeconds();
    e.run();
    double cpu = CpuSeconds() - t0;
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    std::printf("simgrid %llu flows: makespan %.9g s, %zu completions, cpu %.3f s, peak RSS %.1f MB\n", F,
                makespan, completions, cpu, static_cast<double>(ru.ru_maxrss) / 1024.0);
    bool ok = completions == F;
    if (ends_file) {
        FILE *fp = std::fopen(ends_file, "w");
        for (size_t i = 0; fp && i < F; i++)
            std::fprintf(fp, "%zu %.17g\n", i, ends[i]);
        ok = ok && fp && std::fclose(fp) == 0;
    }
    return ok ? 0 : 1;
}
