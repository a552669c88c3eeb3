/*
 * stellar.p4 -- the Stellar data plane for BMv2 simple_switch (v1model).
 *
 * A leaf or spine switch of a RoCEv2 AI-training fabric: adaptive,
 * congestion-aware path choice; flowlet-safe path switching with drain
 * detection; time-window adaptive ECN; elephant/mouse separation; traffic
 * classes and tenant policing; data-plane failover; telemetry including a
 * PSN-regression (reordering) detector.  The blocks live one per file in
 * include/control/; the controller's view is p4src/CONTRACT.md.
 *
 * Kept inside what p4c's BMv2 back end and p4sim both accept: no varbit,
 * header unions, action profiles/selectors, value sets or generic functions;
 * no table applied twice or inside an action; logic in apply blocks, actions
 * only assign; hash() and random() write metadata; registers indexed with
 * bit<32> (valid with the default V1MODEL_VERSION); no division, modulo or
 * saturating arithmetic on run-time values.
 */
#include <core.p4>
#include <v1model.p4>

#include "../include/define.p4"
#include "../include/size.p4"
#include "../include/header.p4"
#include "../include/metadata.p4"
#include "../include/functions.p4"
#include "include/registers.p4"
#include "include/parser.p4"
#include "include/control/config.p4"
#include "include/control/sanity.p4"
#include "include/control/routing.p4"
#include "include/control/qos.p4"
#include "include/control/flowlet.p4"
#include "include/control/elephant.p4"
#include "include/control/failover.p4"
#include "include/control/path_choice.p4"
#include "include/control/ecn.p4"
#include "include/control/reorder.p4"
#include "include/control/rewrite.p4"
#include "include/control/telemetry.p4"

control StellarIngress(inout headers_t hdr,
                       inout metadata_t meta,
                       inout standard_metadata_t standard_metadata) {
    Config() config;
    Sanity() sanity;
    Routing() routing;
    Qos() qos;
    FlowLookup() flow_lookup;
    Elephant() elephant;
    Failover() failover;
    PathChoice() path_choice;
    Flowlet() flowlet;
    Queueing() queueing;
    TelemetryIngress() telemetry;

    apply {
        config.apply(meta);
        sanity.apply(hdr, meta, standard_metadata);
        if (meta.drop == 0) {
            routing.apply(hdr, meta, standard_metadata);
        }
        if (meta.drop == 0) {
            qos.apply(hdr, meta, standard_metadata);
        }
        if (meta.drop == 0) {
            flow_lookup.apply(hdr, meta, standard_metadata);
            elephant.apply(hdr, meta, standard_metadata);
            failover.apply(meta);
            path_choice.apply(meta, standard_metadata);
            flowlet.apply(hdr, meta, standard_metadata);
        }
        if (meta.drop == 0) {
            queueing.apply(meta, standard_metadata);
        }
        telemetry.apply(hdr, meta, standard_metadata);
    }
}

control StellarEgress(inout headers_t hdr,
                      inout metadata_t meta,
                      inout standard_metadata_t standard_metadata) {
    QueueDelayRecord() qdelay;
    DrainRecord() drain;
    Ecn() ecn;
    Reorder() reorder;
    Rewrite() rewrite;
    TelemetryEgress() telemetry;

    apply {
        qdelay.apply(standard_metadata);
        drain.apply(meta, standard_metadata);
        ecn.apply(hdr, meta, standard_metadata);
        reorder.apply(hdr, meta, standard_metadata);
        rewrite.apply(hdr, standard_metadata);
        telemetry.apply(meta, standard_metadata);
    }
}

V1Switch(
    StellarParser(),
    StellarVerifyChecksum(),
    StellarIngress(),
    StellarEgress(),
    StellarComputeChecksum(),
    StellarDeparser()
) main;
