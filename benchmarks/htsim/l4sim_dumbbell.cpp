// -*- c-basic-offset: 4; indent-tabs-mode: nil -*-
// l4sim's speed dumbbell (crates/l4sim-core/examples/speed.rs) in htsim (Broadcom/csg-htsim):
// N TcpSrc/TcpSink flows, each s_i -> r0 over its own 1 Gbit/s / 1 ms access link, r0 -> r1
// a MBPS / 20 ms bottleneck with a drop-tail Queue of 100 packets of 1500 B, r1 -> d_i over
// its own 1 Gbit/s / 1 ms access link; ACKs come back the same way (reverse bottleneck queue
// large, as l4sim's). No loggers. Only the event loop is timed.
//
//     l4sim_dumbbell FLOWS MBPS SECONDS
//
// Prints one line starting "RESULT" with wall seconds, delivered bytes and goodput.
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <vector>

#include "config.h"
#include "eventlist.h"
#include "network.h"
#include "pipe.h"
#include "queue.h"
#include "route.h"
#include "tcp.h"

int main(int argc, char** argv) {
    int flows = argc > 1 ? atoi(argv[1]) : 1;
    uint64_t mbps = argc > 2 ? strtoull(argv[2], nullptr, 10) : 10;
    double secs = argc > 3 ? atof(argv[3]) : 60;
    if (flows < 1 || mbps < 1 || secs <= 0) {
        fprintf(stderr, "usage: %s FLOWS MBPS SECONDS\n", argv[0]);
        return 2;
    }

    EventList eventlist;
    eventlist.setEndtime(timeFromSec(secs));
    Packet::set_packet_size(1500);  // htsim's default; l4sim: 1448 B MSS + 52 B headers
    const mem_b big = memFromPkt(100000);
    const linkspeed_bps access = speedFromMbps((uint64_t)1000);
    const linkspeed_bps bneck = speedFromMbps(mbps);

    // Shared bottleneck, both directions.
    Queue q_fwd(bneck, memFromPkt(100), eventlist, nullptr);
    Pipe p_fwd(timeFromMs(20), eventlist);
    Queue q_rev(bneck, big, eventlist, nullptr);
    Pipe p_rev(timeFromMs(20), eventlist);

    TcpRtxTimerScanner scanner(timeFromMs(10), eventlist);
    std::vector<TcpSrc*> srcs;
    std::vector<TcpSink*> sinks;
    for (int i = 0; i < flows; i++) {
        TcpSrc* src = new TcpSrc(nullptr, nullptr, eventlist);
        TcpSink* snk = new TcpSink();
        // RFC 5681's initial ssthresh ("arbitrarily high"), as l4sim; htsim's default is 100
        // packets.
        src->set_ssthresh(0xffffffffu);
        scanner.registerTcp(*src);

        route_t* out = new route_t();
        out->push_back(new Queue(access, big, eventlist, nullptr));  // s_i -> r0
        out->push_back(new Pipe(timeFromMs(1), eventlist));
        out->push_back(&q_fwd);  // r0 -> r1
        out->push_back(&p_fwd);
        out->push_back(new Queue(access, big, eventlist, nullptr));  // r1 -> d_i
        out->push_back(new Pipe(timeFromMs(1), eventlist));
        out->push_back(snk);

        route_t* back = new route_t();
        back->push_back(new Queue(access, big, eventlist, nullptr));  // d_i -> r1
        back->push_back(new Pipe(timeFromMs(1), eventlist));
        back->push_back(&q_rev);  // r1 -> r0
        back->push_back(&p_rev);
        back->push_back(new Queue(access, big, eventlist, nullptr));  // r0 -> s_i
        back->push_back(new Pipe(timeFromMs(1), eventlist));
        back->push_back(src);

        src->connect(*out, *back, *snk, 0);
        srcs.push_back(src);
        sinks.push_back(snk);
    }

    auto t0 = std::chrono::steady_clock::now();
    while (eventlist.doNextEvent()) {
    }
    double wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();

    uint64_t delivered = 0;
    for (TcpSink* s : sinks) delivered += s->_cumulative_ack;  // in-order bytes
    uint32_t drops = (uint32_t)q_fwd.num_drops();
    printf("RESULT flows %d mbps %llu secs %g wall %.6f delivered_bytes %llu goodput_mbps %.3f "
           "bottleneck_drops %u\n",
           flows, (unsigned long long)mbps, secs, wall, (unsigned long long)delivered,
           delivered * 8.0 / secs / 1e6, drops);
    return 0;
}
