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
 * Block files.  Each mechanism lives in one file under include/control/.
 * A block contributes declarations (tables, actions, counters, registers) to
 * StellarIngress/StellarEgress and one or more apply steps; the file is
 * included once per section, selected by a STELLAR_* macro:
 *   STELLAR_INGRESS_DECLS / STELLAR_EGRESS_DECLS  declarations in the control
 *   STELLAR_STEP_<NAME>                           one step of an apply block
 * Each step is a block statement, so its local variables stay its own.
 * Declarations carry @name("<block>.<object>"), which gives the P4Info names
 * StellarIngress.<block>.<object> that the contract lists.  (Blocks are not
 * sub-controls instantiated inside StellarIngress because p4sim, the
 * embedded target, runs only the six blocks the package instantiates.)
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

control StellarIngress(inout headers_t hdr,
                       inout metadata_t meta,
                       inout standard_metadata_t standard_metadata) {

    /* Every drop in ingress goes through here, so telemetry can count it. */
    action drop_packet(in bit<8> reason) {
        meta.drop = 1;
        meta.drop_reason = reason;
        mark_to_drop(standard_metadata);
    }

#define STELLAR_INGRESS_DECLS
#include "include/control/config.p4"
#include "include/control/routing.p4"
#include "include/control/qos.p4"
#include "include/control/flowlet.p4"
#include "include/control/elephant.p4"
#include "include/control/telemetry.p4"
#undef STELLAR_INGRESS_DECLS

    apply {
        /* Steps in order; once a packet is dropped only telemetry runs. */
#define STELLAR_STEP_CONFIG
#include "include/control/config.p4"
#undef STELLAR_STEP_CONFIG
#define STELLAR_STEP_SANITY
#include "include/control/sanity.p4"
#undef STELLAR_STEP_SANITY
        if (meta.drop == 0) {
#define STELLAR_STEP_ROUTING
#include "include/control/routing.p4"
#undef STELLAR_STEP_ROUTING
        }
        if (meta.drop == 0) {
#define STELLAR_STEP_QOS
#include "include/control/qos.p4"
#undef STELLAR_STEP_QOS
        }
        if (meta.drop == 0) {
#define STELLAR_STEP_FLOW_LOOKUP
#include "include/control/flowlet.p4"
#undef STELLAR_STEP_FLOW_LOOKUP
        }
        if (meta.drop == 0) {
#define STELLAR_STEP_ELEPHANT
#include "include/control/elephant.p4"
#undef STELLAR_STEP_ELEPHANT
        }
        if (meta.drop == 0) {
#define STELLAR_STEP_FAILOVER
#include "include/control/failover.p4"
#undef STELLAR_STEP_FAILOVER
        }
        if (meta.drop == 0) {
#define STELLAR_STEP_PATH_CHOICE
#include "include/control/path_choice.p4"
#undef STELLAR_STEP_PATH_CHOICE
        }
        if (meta.drop == 0) {
#define STELLAR_STEP_FLOWLET
#include "include/control/flowlet.p4"
#undef STELLAR_STEP_FLOWLET
        }
        if (meta.drop == 0) {
#define STELLAR_STEP_QUEUEING
#include "include/control/qos.p4"
#undef STELLAR_STEP_QUEUEING
        }
#define STELLAR_STEP_TELEMETRY_INGRESS
#include "include/control/telemetry.p4"
#undef STELLAR_STEP_TELEMETRY_INGRESS
    }
}

control StellarEgress(inout headers_t hdr,
                      inout metadata_t meta,
                      inout standard_metadata_t standard_metadata) {

#define STELLAR_EGRESS_DECLS
#include "include/control/ecn.p4"
#include "include/control/reorder.p4"
#include "include/control/rewrite.p4"
#include "include/control/telemetry.p4"
#undef STELLAR_EGRESS_DECLS

    apply {
#define STELLAR_STEP_QDELAY_RECORD
#include "include/control/path_choice.p4"
#undef STELLAR_STEP_QDELAY_RECORD
#define STELLAR_STEP_DRAIN_RECORD
#include "include/control/flowlet.p4"
#undef STELLAR_STEP_DRAIN_RECORD
#define STELLAR_STEP_ECN
#include "include/control/ecn.p4"
#undef STELLAR_STEP_ECN
#define STELLAR_STEP_REORDER
#include "include/control/reorder.p4"
#undef STELLAR_STEP_REORDER
#define STELLAR_STEP_REWRITE
#include "include/control/rewrite.p4"
#undef STELLAR_STEP_REWRITE
#define STELLAR_STEP_TELEMETRY_EGRESS
#include "include/control/telemetry.p4"
#undef STELLAR_STEP_TELEMETRY_EGRESS
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
