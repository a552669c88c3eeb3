/*
 * stellar.p4 -- the Stellar data plane for BMv2 simple_switch (v1model).
 *
 * A leaf or spine switch of a RoCEv2 AI-training fabric: adaptive,
 * congestion-aware path choice; flowlet-safe path switching with drain
 * detection; time-window adaptive ECN; elephant/mouse separation; traffic
 * classes and tenant policing; data-plane failover; telemetry including a
 * PSN-regression (reordering) detector.  The controller's view of it is
 * p4src/CONTRACT.md.
 *
 * Layout (ONF fabric-v1model style).  Each mechanism is one P4 control in
 * include/control/<block>.p4 (a mechanism with an ingress and an egress half
 * has one control per half); StellarIngress and StellarEgress instantiate
 * them and apply them in order.  The instance names give the P4Info names
 * StellarIngress.<instance>.<object> that p4src/CONTRACT.md lists.  State
 * shared by ingress and egress (queue delay, drain detection) and per-flow
 * state read by several blocks are top-level registers (include/registers.p4),
 * which v1model allows every control to use.
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
#include "include/control/pressure.p4"
#include "include/control/feedback.p4"
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
    Pressure() pressure;
    FeedbackLookup() feedback_lookup;
    FeedbackTag() feedback;
    Flowlet() flowlet;
    Queueing() queueing;
    Placement() placement;
    TelemetryIngress() telemetry;

    apply {
        /* In order; once a block has dropped the packet (meta.drop) only
         * telemetry runs. */
        config.apply(hdr, meta, standard_metadata);
        sanity.apply(hdr, meta, standard_metadata);
        if (meta.drop == 0) {
            routing.apply(hdr, meta, standard_metadata);
        }
        if (meta.drop == 0) {
            flow_lookup.apply(hdr, meta, standard_metadata);
        }
        if (meta.drop == 0) {
            qos.apply(hdr, meta, standard_metadata);
        }
        if (meta.drop == 0) {
            elephant.apply(hdr, meta, standard_metadata);
        }
        if (meta.drop == 0) {
            /* The queue first: path choice reads the state of that queue. */
            queueing.apply(hdr, meta, standard_metadata);
        }
        if (meta.drop == 0) {
            failover.apply(hdr, meta, standard_metadata);
        }
        if (meta.drop == 0) {
            feedback_lookup.apply(hdr, meta, standard_metadata);
        }
        if (meta.drop == 0) {
            path_choice.apply(hdr, meta, standard_metadata);
        }
        if (meta.drop == 0) {
            pressure.apply(hdr, meta, standard_metadata);
        }
        if (meta.drop == 0) {
            flowlet.apply(hdr, meta, standard_metadata);
        }
        if (meta.drop == 0) {
            placement.apply(hdr, meta, standard_metadata);
        }
        if (meta.drop == 0) {
            feedback.apply(hdr, meta, standard_metadata);
        }
        if (meta.drop == 1) {
            /* Blocks only record the reason; the drop itself happens once. */
            mark_to_drop(standard_metadata);
        }
        telemetry.apply(hdr, meta, standard_metadata);
    }
}

control StellarEgress(inout headers_t hdr,
                      inout metadata_t meta,
                      inout standard_metadata_t standard_metadata) {
    QdelayRecord() qdelay_record;
    DrainRecord() drain_record;
    Ecn() ecn;
    Reorder() reorder;
    FeedbackEgress() feedback;
    Rewrite() rewrite;
    TelemetryEgress() telemetry;

    apply {
        qdelay_record.apply(hdr, meta, standard_metadata);
        drain_record.apply(hdr, meta, standard_metadata);
        ecn.apply(hdr, meta, standard_metadata);
        feedback.apply(hdr, meta, standard_metadata);
        reorder.apply(hdr, meta, standard_metadata);
        rewrite.apply(hdr, meta, standard_metadata);
        telemetry.apply(hdr, meta, standard_metadata);
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
