// simgrid_rtt: SimGrid's side of the RTT-sharing comparison (README.md
// here): the world of rtt_world.h as a star zone (the server's route is
// its NIC; device i's is its access link, and the WAN link for odd i),
// each link with its latency, one flow per device from time 0.  Run with
// --cfg=network/model:CM02 (weight 1/latency, no correction factors) and
// tighter precisions (--cfg=maxmin/precision:1e-9
// --cfg=surf/precision:1e-9).  `simgrid_rtt N SEED [--cfg=...]` prints one
// line per device, "i end_s".  Built only where libsimgrid-dev is installed.
#include <simgrid/s4u.hpp>

#include "rtt_world.h"

#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

namespace sg4 = simgrid::s4u;

namespace
{
rtt_world world;
std::vector<sg4::Host *> devices;
sg4::Host *server = nullptr;
double end_t[RTT_MAX_N];

// One actor per flow: a blocking sendto, then the clock.
void Send(int i)
{
    sg4::Comm::sendto(server, devices[i], static_cast<uint64_t>(world.bytes[i]));
    end_t[i] = sg4::Engine::get_clock();
}
} // namespace

int main(int argc, char **argv)
{
    sg4::Engine e(&argc, argv);
    if (argc != 3 || rtt_world_make(&world, std::atoi(argv[1]), std::strtoull(argv[2], nullptr, 10))) {
        std::fprintf(stderr, "usage: simgrid_rtt N(1-%d) SEED [--cfg=...]\n", RTT_MAX_N);
        return 2;
    }
    auto *zone = sg4::create_star_zone("world");
    server = zone->create_host("server", 1e9);
    const sg4::Link *nic = zone->create_link("nic", world.nic_Bps)->set_latency(world.nic_lat)->seal();
    const sg4::Link *wan = zone->create_link("wan", world.wan_Bps)->set_latency(world.wan_lat)->seal();
    zone->add_route(server->get_netpoint(), nullptr, nullptr, nullptr, {sg4::LinkInRoute(nic)}, true);
    for (int i = 0; i < world.n; i++) {
        sg4::Host *h = zone->create_host("d" + std::to_string(i), 1e9);
        const sg4::Link *acc =
            zone->create_link("acc" + std::to_string(i), world.acc_Bps[i])->set_latency(world.acc_lat[i])->seal();
        if (i % 2)
            zone->add_route(h->get_netpoint(), nullptr, nullptr, nullptr,
                            {sg4::LinkInRoute(wan), sg4::LinkInRoute(acc)}, true);
        else
            zone->add_route(h->get_netpoint(), nullptr, nullptr, nullptr, {sg4::LinkInRoute(acc)}, true);
        devices.push_back(h);
    }
    zone->seal();
    for (int i = 0; i < world.n; i++)
        sg4::Actor::create("sender" + std::to_string(i), server, Send, i);
    e.run();
    for (int i = 0; i < world.n; i++)
        std::printf("%d %.12g\n", i, end_t[i]);
    return 0;
}
