/*
 * qos.p4 -- traffic classes, tenant policing and queue selection (ingress).
 *
 * Step QOS (early): DSCP -> class; source subnet -> tenant; a per-tenant
 * two-rate three-colour meter demotes YELLOW traffic to the background class
 * and drops RED, so one tenant above its share cannot starve the others.
 * Step QUEUEING (late, once the elephant bit is known): (class, elephant) ->
 * strict-priority queue.  Numbering in p4src/CONTRACT.md s.1.
 */
#ifndef _STELLAR_CONTROL_QOS_P4_
#define _STELLAR_CONTROL_QOS_P4_

control Qos(inout headers_t hdr,
            inout metadata_t meta,
            inout standard_metadata_t standard_metadata) {

    /* Per tenant, bytes; configured with CIR/PIR by the controller.
     * Size: TENANT_SLOTS (8-bit tenant id). */
    meter(TENANT_SLOTS, MeterType.bytes) tenant_meter;
    /* Packets demoted (yellow) and dropped (red), per tenant. */
    counter(TENANT_SLOTS, CounterType.packets_and_bytes) tenant_yellow;
    counter(TENANT_SLOTS, CounterType.packets_and_bytes) tenant_red;

    action set_class(traffic_class_t traffic_class) {
        meta.qos.traffic_class = traffic_class;
    }

    /* Every DSCP value; unknown DSCPs are elastic.  Size: DSCP_CLASS_SIZE. */
    table dscp_class {
        key = {
            hdr.ipv4.dscp: exact;
        }
        actions = {
            set_class;
        }
        default_action = set_class(CLASS_ELASTIC);
        size = DSCP_CLASS_SIZE;
    }

    action set_tenant(tenant_id_t tenant_id) {
        meta.qos.tenant = tenant_id;
    }

    /* Tenant subnets.  No match = tenant 0, not policed.  Size: TENANT_SIZE. */
    table tenant {
        key = {
            hdr.ipv4.src_addr: lpm;
        }
        actions = {
            set_tenant;
            NoAction;
        }
        default_action = NoAction();
        size = TENANT_SIZE;
    }

    apply {
        dscp_class.apply();
        tenant.apply();
        if (meta.qos.tenant != TENANT_NONE) {
            /* Demotion, per flow (ORDER_GUARD_DEMOTION): once a packet of the
             * flow is YELLOW the flow stays demoted to background until it has
             * drained here and a packet is GREEN again, so a green packet never
             * overtakes a demoted one in the lower queue.  Needs the flow's
             * state, hence after FlowLookup.  A flow without a slot (collision)
             * is not demoted at all: it has nowhere to keep the bit.  With the
             * guard off, every YELLOW packet alone is demoted (the old rule). */
            tenant_meter.execute_meter((bit<32>)meta.qos.tenant, meta.qos.colour);
            if (meta.qos.colour == METER_YELLOW) {
                meta.qos.yellow = 1;
                tenant_yellow.count((bit<32>)meta.qos.tenant);
            } else if (meta.qos.colour == METER_RED) {
                meta.drop = 1;
                meta.drop_reason = DROP_TENANT_RED;
                tenant_red.count((bit<32>)meta.qos.tenant);
            }
        }
        if ((meta.cfg.order_guards & ORDER_GUARD_DEMOTION) == 0) {
            if (meta.qos.yellow == 1) {
                meta.qos.traffic_class = CLASS_BACKGROUND;
            }
        } else if (meta.flow.slot_busy == 0) {
            if (meta.qos.yellow == 1) {
                meta.flow.status = meta.flow.status | FLOW_STATE_DEMOTED;
            } else if ((meta.flow.status & FLOW_STATE_DEMOTED) != 0 &&
                       meta.flow.departed_seq == meta.flow.last_seq) {
                meta.flow.status = meta.flow.status & ~FLOW_STATE_DEMOTED;
            }
            if ((meta.flow.status & FLOW_STATE_DEMOTED) != 0) {
                meta.qos.traffic_class = CLASS_BACKGROUND;
            }
        }
    }
}

control Queueing(inout headers_t hdr,
                 inout metadata_t meta,
                 inout standard_metadata_t standard_metadata) {

    action set_queue(queue_t queue) {
        meta.qos.queue = queue;
    }

    /* (class, elephant) -> strict-priority queue.  Empty = everything in
     * queue 0 (a switch without priority queues).  Size: QUEUE_MAP_SIZE. */
    table queue_map {
        key = {
            meta.qos.traffic_class: exact;
            meta.flow.elephant: exact;
        }
        actions = {
            set_queue;
        }
        default_action = set_queue(0);
        size = QUEUE_MAP_SIZE;
    }

    apply {
        queue_map.apply();
        standard_metadata.priority = meta.qos.queue;
    }
}

#endif  /* _STELLAR_CONTROL_QOS_P4_ */
