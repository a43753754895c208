// Queue Protection on a DOCSIS 3.1 upstream, with CableLabs' ns-3 docsis module: the
// counterpart of l4sim's `reproduce docsis-qprot` case `nqb-cbr-1.5x-link` (and `none`)
// with DCTCP in place of TCP Prague (ns-3 mainline has no Prague).
//
//   n0 ---- CM ==== CMTS ---- n3       >--- upstream (data) --->
//     1 Gb/s, 5 ms    1 Gb/s, 5 ms     DOCSIS: 0.5 ms each way, 2 ms MAP interval
//
// The CM's queue is the module's DualQueueCoupledAqm with QueueProtection; the
// aggregate service flow's AMSR is 50 Mbit/s on a ~100 Mbit/s OFDMA channel; the low-latency
// service flow has 5 Mbit/s of proactive grants (PGS, GGI one MAP interval) or none (best
// effort). Two TCP DCTCP flows (ECT(1)) run from 0 s; from 2 s an unresponsive Not-ECT UDP
// flow at 75 Mbit/s (1500 B IP packets) marked DSCP EF: the module's classifier puts EF,
// ECT(1) and CE in the L queue (not NQB's DSCP 45).
//
// Prints one line of `key=value` pairs: the L queue's sojourn p99 and mean over the whole
// run and over the bad flow's time, the TCP flows' goodput, the UDP packets sent and
// sanctioned (redirected to the Classic queue by Queue Protection), the TCP flows' share of
// time in CWR and how the L queue's CE marks spread over 25 ms windows and MAP intervals
// (from 2 s), and the channel's derived capacity and MAP interval.

#include "ns3/applications-module.h"
#include "ns3/bridge-module.h"
#include "ns3/cm-net-device.h"
#include "ns3/cmts-upstream-scheduler.h"
#include "ns3/core-module.h"
#include "ns3/docsis-configuration.h"
#include "ns3/docsis-helper.h"
#include "ns3/dual-queue-coupled-aqm.h"
#include "ns3/internet-module.h"
#include "ns3/network-module.h"
#include "ns3/queue-protection.h"
#include "ns3/traffic-control-module.h"

#include <algorithm>
#include <cmath>
#include <iomanip>
#include <iostream>
#include <map>
#include <numeric>
#include <vector>

using namespace ns3;
using namespace ns3::docsis;

namespace
{
struct Sample
{
    double t;
    double sojournMs;
};

std::vector<Sample> g_sojourn;
uint64_t g_lMarked = 0; // L packets the dual queue marked CE
uint64_t g_udpSanctioned = 0;
uint64_t g_tcpSanctioned = 0;
uint64_t g_udpSent = 0;
// From g_spreadFrom on: the CE marks per 25 ms window and per 2 ms MAP interval (by index),
// and each TCP flow's time in CWR (its socket's CongState trace).
const double g_spreadFrom = 2;
std::map<int64_t, uint32_t> g_marksPer25ms;
std::map<int64_t, uint32_t> g_marksPerMap;
struct CwrTime
{
    bool in = false;
    double since = 0;
    double total = 0;
} g_cwr[2];
double g_vqFrom = 0; // the AlignVq means cover [g_vqFrom, end)
struct VqMeans
{
    double actual = 0;  // actual L bytes (queue and staged in the CM)
    double average = 0; // their EWMA
    double allowed = 0; // calcAllowedAQ
    double vqMs = 0;    // the virtual queue, as delay
    uint64_t n = 0;
} g_vq;

void
LowLatencyDequeue(Time sojourn, Time /*estimate*/, Time /*classic*/, bool marked, uint32_t)
{
    g_lMarked += marked;
    if (marked && Simulator::Now().GetSeconds() >= g_spreadFrom)
    {
        g_marksPer25ms[Simulator::Now().GetMicroSeconds() / 25000]++;
        g_marksPerMap[Simulator::Now().GetMicroSeconds() / 2000]++;
    }
    g_sojourn.push_back({Simulator::Now().GetSeconds(), sojourn.GetSeconds() * 1e3});
}

void
Sanction(Ptr<const QueueDiscItem> item,
         uint32_t,
         uint32_t,
         int64_t,
         int64_t,
         int64_t,
         int64_t,
         uint16_t)
{
    Ipv4Header hdr;
    item->GetPacket()->PeekHeader(hdr);
    (hdr.GetProtocol() == 17 ? g_udpSanctioned : g_tcpSanctioned)++;
}

void
AlignVq(uint32_t actual, Time vq, uint32_t average, uint32_t allowed, bool)
{
    if (Simulator::Now().GetSeconds() < g_vqFrom)
    {
        return;
    }
    g_vq.actual += actual;
    g_vq.average += average;
    g_vq.allowed += allowed;
    g_vq.vqMs += vq.GetSeconds() * 1e3;
    g_vq.n++;
}

void
UdpTx(Ptr<const Packet>)
{
    g_udpSent++;
}

void
CongState(std::string context, TcpSocketState::TcpCongState_t, TcpSocketState::TcpCongState_t now)
{
    CwrTime& c = g_cwr[context.find("SocketList/1/") != std::string::npos];
    double t = std::max(Simulator::Now().GetSeconds(), g_spreadFrom);
    if (c.in)
    {
        c.total += t - c.since;
    }
    c.in = now == TcpSocketState::CA_CWR;
    c.since = t;
}

// The sender's sockets exist once BulkSend has started (at 0 s).
void
TraceCongState()
{
    Config::Connect("/NodeList/0/$ns3::TcpL4Protocol/SocketList/*/CongState",
                    MakeCallback(&CongState));
}

// The nearest-rank quantile the docsis module's own examples use.
double
Quantile(std::vector<double> v, double q)
{
    if (v.empty())
    {
        return NAN;
    }
    std::sort(v.begin(), v.end());
    return v[static_cast<size_t>(std::ceil((v.size() - 1) * q))];
}

double
Mean(const std::vector<double>& v)
{
    return v.empty() ? NAN : std::accumulate(v.begin(), v.end(), 0.0) / v.size();
}

std::vector<double>
SojournFrom(double start)
{
    std::vector<double> out;
    for (const auto& s : g_sojourn)
    {
        if (s.t >= start)
        {
            out.push_back(s.sojournMs);
        }
    }
    return out;
}
} // namespace

int
main(int argc, char* argv[])
{
    double durationS = 12;
    double badStartS = 2;
    bool qprot = true;
    bool pgs = true;
    bool bad = true;
    bool pacing = true;
    std::string estimator = "QDelayCoupledV"; // MULPI Annex N.3: a CM uses the virtual queue
    double loopDelayOffset = 1; // MAP intervals the CM adds to its loop-delay estimate
    DataRate amsr("50Mbps");
    DataRate ggr("5Mbps");
    DataRate badRate("75Mbps");
    uint32_t numUsSc = 280; // 35 minislots of 48 B per 135 us frame: 99.6 Mbit/s
    double distanceKm = 100; // the module's RTT estimate is distance / 1e5 s: 1 ms
    Time docsisDelay = MicroSeconds(500);
    Time accessDelay = MilliSeconds(5);

    CommandLine cmd;
    cmd.AddValue("duration", "Simulated seconds", durationS);
    cmd.AddValue("qprot", "Queue Protection on the CM's dual queue", qprot);
    cmd.AddValue("pgs", "5 Mbit/s of proactive grants (else best effort)", pgs);
    cmd.AddValue("bad", "Add the 75 Mbit/s unresponsive UDP flow from 2 s", bad);
    cmd.AddValue("estimator", "CM's L delay estimate: QDelayCoupledV or QDelayCoupledL", estimator);
    cmd.AddValue("pacing", "Pace the DCTCP flows (as Linux's fq qdisc paces every flow)", pacing);
    cmd.AddValue("loopDelayOffset",
                 "MAP intervals added to the CM's loop-delay estimate (the module's default 1)",
                 loopDelayOffset);
    cmd.Parse(argc, argv);

    // DCTCP sends ECT(1) when UseEct0 is false; with pacing as Linux paces every flow.
    Config::SetDefault("ns3::TcpL4Protocol::SocketType", StringValue("ns3::TcpDctcp"));
    Config::SetDefault("ns3::TcpDctcp::UseEct0", BooleanValue(false));
    Config::SetDefault("ns3::TcpSocketState::EnablePacing", BooleanValue(pacing));
    Config::SetDefault("ns3::TcpL4Protocol::RecoveryType",
                       TypeIdValue(TcpClassicRecovery::GetTypeId()));
    Config::SetDefault("ns3::TcpSocket::SegmentSize", UintegerValue(1448));
    Config::SetDefault("ns3::TcpSocket::SndBufSize", UintegerValue(4 << 20));
    Config::SetDefault("ns3::TcpSocket::RcvBufSize", UintegerValue(4 << 20));
    Config::SetDefault("ns3::docsis::DocsisNetDevice::MapInterval", TimeValue(MilliSeconds(2)));
    Config::SetDefault("ns3::docsis::QueueProtection::QProtectOn", BooleanValue(qprot));
    Config::SetDefault("ns3::docsis::CmNetDevice::LoopDelayOffset", DoubleValue(loopDelayOffset));

    NodeContainer nodes;
    nodes.Create(4);
    Ptr<Node> n0 = nodes.Get(0);
    Ptr<Node> cm = nodes.Get(1);
    Ptr<Node> cmts = nodes.Get(2);
    Ptr<Node> n3 = nodes.Get(3);

    SimpleNetDeviceHelper access;
    access.SetDeviceAttribute("DataRate", DataRateValue(DataRate("1Gbps")));
    access.SetChannelAttribute("Delay", TimeValue(accessDelay));
    NetDeviceContainer n0cm = access.Install(NodeContainer(n0, cm));
    NetDeviceContainer cmtsn3 = access.Install(NodeContainer(cmts, n3));

    DocsisHelper docsis;
    docsis.SetCmAttribute("NumUsSc", UintegerValue(numUsSc));
    docsis.SetCmtsAttribute("NumUsSc", UintegerValue(numUsSc));
    docsis.SetCmAttribute("MaximumDistance", DoubleValue(distanceKm));
    docsis.SetCmtsAttribute("MaximumDistance", DoubleValue(distanceKm));
    docsis.SetChannelAttribute("Delay", TimeValue(docsisDelay));

    // The aggregate's token bucket holds one MAP interval's tokens (the module refills it per
    // MAP and caps it at the Maximum Traffic Burst; l4sim's bucket is max(3044 B, one
    // interval's tokens)). 13000 B covers 50 Mbit/s x 2.025 ms with the module's MAC-header
    // allowance on the rate.
    Ptr<AggregateServiceFlow> up = CreateObject<AggregateServiceFlow>();
    up->m_maxSustainedRate = amsr;
    up->m_peakRate = DataRate("100Mbps");
    up->m_maxTrafficBurst = 13000;
    Ptr<ServiceFlow> upC = CreateObject<ServiceFlow>(CLASSIC_SFID);
    up->SetClassicServiceFlow(upC);
    Ptr<ServiceFlow> upL = CreateObject<ServiceFlow>(LOW_LATENCY_SFID);
    if (pgs)
    {
        upL->m_guaranteedGrantRate = ggr;
        upL->m_guaranteedGrantInterval = 2000; // us: one grant per MAP interval
    }
    up->SetLowLatencyServiceFlow(upL);

    Ptr<AggregateServiceFlow> down = CreateObject<AggregateServiceFlow>();
    down->m_maxSustainedRate = DataRate("1Gbps");
    down->m_peakRate = DataRate("2Gbps");
    down->m_maxTrafficBurst = static_cast<uint32_t>(1e9 * 0.1 / 8);
    down->SetClassicServiceFlow(CreateObject<ServiceFlow>(CLASSIC_SFID));
    down->SetLowLatencyServiceFlow(CreateObject<ServiceFlow>(LOW_LATENCY_SFID));

    NetDeviceContainer link = docsis.Install(cmts, cm, up, down);
    Ptr<CmNetDevice> cmDev = docsis.GetUpstream(link);
    Ptr<DualQueueCoupledAqm> cmQueue = cmDev->GetQueue();
    cmQueue->SetAttribute("LlEstimator", StringValue(estimator));

    InternetStackHelper internet;
    internet.Install(nodes);
    Ipv4AddressHelper ipv4;
    ipv4.SetBase("10.1.1.0", "255.255.255.252");
    NetDeviceContainer ends(n0cm.Get(0), cmtsn3.Get(1));
    Ipv4InterfaceContainer ip = ipv4.Assign(ends);

    // Static ARP entries, so that no packet waits for address resolution.
    for (uint32_t i = 0; i < 2; i++)
    {
        Ptr<NetDevice> dev = ends.Get(i);
        Ptr<NetDevice> peer = ends.Get(1 - i);
        Ptr<Ipv4L3Protocol> l3 = dev->GetNode()->GetObject<Ipv4L3Protocol>();
        Ptr<ArpCache> cache = l3->GetInterface(l3->GetInterfaceForDevice(dev))->GetArpCache();
        ArpCache::Entry* e = cache->Add(ip.GetAddress(1 - i));
        e->SetMacAddress(Mac48Address::ConvertFrom(peer->GetAddress()));
        e->MarkPermanent();
    }

    BridgeHelper bridge;
    bridge.Install(cm, NetDeviceContainer(n0cm.Get(1), link.Get(1)));
    bridge.Install(cmts, NetDeviceContainer(cmtsn3.Get(0), link.Get(0)));
    Ipv4GlobalRoutingHelper::PopulateRoutingTables();

    Ipv4Address dst = ip.GetAddress(1);
    ApplicationContainer sinks;
    for (uint16_t k = 0; k < 2; k++)
    {
        uint16_t port = 5000 + k;
        BulkSendHelper src("ns3::TcpSocketFactory", InetSocketAddress(dst, port));
        src.SetAttribute("MaxBytes", UintegerValue(0));
        ApplicationContainer a = src.Install(n0);
        a.Start(Seconds(0));
        a.Stop(Seconds(durationS));
        PacketSinkHelper sink("ns3::TcpSocketFactory", InetSocketAddress(Ipv4Address::GetAny(), port));
        ApplicationContainer s = sink.Install(n3);
        s.Start(Seconds(0));
        sinks.Add(s);
    }

    Ptr<UdpClient> udp;
    if (bad)
    {
        const uint32_t ipBytes = 1500;
        udp = CreateObject<UdpClient>();
        udp->SetAttribute("Remote", AddressValue(InetSocketAddress(dst, 6000)));
        udp->SetAttribute("PacketSize", UintegerValue(ipBytes - 20 - 8));
        udp->SetAttribute("Interval", TimeValue(Seconds(ipBytes * 8.0 / badRate.GetBitRate())));
        udp->SetAttribute("MaxPackets", UintegerValue(0));
        // DSCP EF (46), Not-ECT: the module's classifier sends EF to the L queue.
        udp->SetAttribute("Tos", UintegerValue(Ipv4Header::DSCP_EF << 2));
        udp->SetStartTime(Seconds(badStartS));
        udp->SetStopTime(Seconds(durationS));
        n0->AddApplication(udp);
        udp->TraceConnectWithoutContext("Tx", MakeCallback(&UdpTx));
        Ptr<UdpServer> server = CreateObject<UdpServer>();
        server->SetAttribute("Port", UintegerValue(6000));
        n3->AddApplication(server);
    }

    cmQueue->TraceConnectWithoutContext("LowLatencyDequeue", MakeCallback(&LowLatencyDequeue));
    cmQueue->GetQueueProtection()->TraceConnectWithoutContext("Sanction", MakeCallback(&Sanction));
    g_vqFrom = bad ? badStartS : 0;
    cmQueue->TraceConnectWithoutContext("AlignVq", MakeCallback(&AlignVq));

    Simulator::Schedule(MilliSeconds(1), &TraceCongState);
    Simulator::Stop(Seconds(durationS));
    Simulator::Run();

    double tcpBytes = 0;
    for (uint32_t k = 0; k < sinks.GetN(); k++)
    {
        tcpBytes += DynamicCast<PacketSink>(sinks.Get(k))->GetTotalRx();
    }
    std::vector<double> all = SojournFrom(0);
    std::vector<double> during = SojournFrom(badStartS);
    std::cout << std::fixed << std::setprecision(4);
    std::cout << "l_p99_ms=" << Quantile(all, 0.99) << " l_mean_ms=" << Mean(all)
              << " l_p99_bad_ms=" << Quantile(during, 0.99) << " l_mean_bad_ms=" << Mean(during)
              << " l_packets=" << all.size() << " l_marked=" << g_lMarked << " tcp_mbps=" << tcpBytes * 8 / durationS / 1e6
              << " udp_sent=" << g_udpSent << " udp_sanctioned=" << g_udpSanctioned
              << " tcp_sanctioned=" << g_tcpSanctioned;
    if (g_vq.n)
    {
        std::cout << " vq_actual_b=" << g_vq.actual / g_vq.n << " vq_avg_b=" << g_vq.average / g_vq.n
                  << " vq_allowed_b=" << g_vq.allowed / g_vq.n << " vq_ms=" << g_vq.vqMs / g_vq.n;
    }
    double span = durationS - g_spreadFrom;
    double cwr = 0;
    for (CwrTime& c : g_cwr)
    {
        cwr += (c.total + (c.in ? durationS - c.since : 0)) / span / 2;
    }
    uint64_t mapMarks = 0;
    for (const auto& m : g_marksPerMap)
    {
        mapMarks += m.second;
    }
    std::cout << " cwr_frac=" << cwr << " marked_25ms_frac=" << g_marksPer25ms.size() / (span / 0.025)
              << " marks_per_marked_map=" << (g_marksPerMap.empty() ? 0.0 : double(mapMarks) / g_marksPerMap.size());
    std::cout
              << " us_capacity_mbps=" << cmDev->GetUsCapacity() / 1e6
              << " map_us=" << cmDev->GetActualMapInterval().GetMicroSeconds()
              << " min_req_gnt_frames=" << cmDev->GetMinReqGntDelay() << std::endl;
    Simulator::Destroy();
    return 0;
}
