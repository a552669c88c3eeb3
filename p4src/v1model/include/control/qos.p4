/*
 * qos.p4 -- traffic classes, tenant policing and queue selection (ingress).
 *
 * Step QOS (early): DSCP -> class; source subnet -> tenant; a per-tenant
 * two-rate three-colour meter demotes YELLOW traffic to the background class
 * and drops RED, so one tenant above its share cannot starve the others.
 * Step QUEUEING (late, once the elephant bit is known): (class, elephant) ->
 * strict-priority queue.  Numbering in p4src/CONTRACT.md s.1.
 *
 * Block file: included once per section (see stellar.p4, "Block files").
 */
#if defined(STELLAR_INGRESS_DECLS)

    /* Per tenant, bytes; configured with CIR/PIR by the controller.
     * Size: TENANT_SLOTS (8-bit tenant id). */
    @name("qos.tenant_meter")
    meter(TENANT_SLOTS, MeterType.bytes) qos_tenant_meter;
    /* Packets demoted (yellow) and dropped (red), per tenant. */
    @name("qos.tenant_yellow")
    counter(TENANT_SLOTS, CounterType.packets_and_bytes) qos_tenant_yellow;
    @name("qos.tenant_red")
    counter(TENANT_SLOTS, CounterType.packets_and_bytes) qos_tenant_red;

    @name("qos.set_class")
    action qos_set_class(traffic_class_t traffic_class) {
        meta.qos.traffic_class = traffic_class;
    }

    /* Every DSCP value; unknown DSCPs are elastic.  Size: DSCP_CLASS_SIZE. */
    @name("qos.dscp_class")
    table qos_dscp_class {
        key = {
            hdr.ipv4.dscp: exact;
        }
        actions = {
            qos_set_class;
        }
        default_action = qos_set_class(CLASS_ELASTIC);
        size = DSCP_CLASS_SIZE;
    }

    @name("qos.set_tenant")
    action qos_set_tenant(tenant_id_t tenant_id) {
        meta.qos.tenant = tenant_id;
    }

    /* Tenant subnets.  No match = tenant 0, not policed.  Size: TENANT_SIZE. */
    @name("qos.tenant")
    table qos_tenant {
        key = {
            hdr.ipv4.src_addr: lpm;
        }
        actions = {
            qos_set_tenant;
            NoAction;
        }
        default_action = NoAction();
        size = TENANT_SIZE;
    }

    @name("queueing.set_queue")
    action queueing_set_queue(queue_t queue) {
        meta.qos.queue = queue;
    }

    /* (class, elephant) -> strict-priority queue.  Empty = everything in
     * queue 0 (a switch without priority queues).  Size: QUEUE_MAP_SIZE. */
    @name("queueing.queue_map")
    table queueing_queue_map {
        key = {
            meta.qos.traffic_class: exact;
            meta.flow.elephant: exact;
        }
        actions = {
            queueing_set_queue;
        }
        default_action = queueing_set_queue(0);
        size = QUEUE_MAP_SIZE;
    }

#elif defined(STELLAR_STEP_QOS)
    {
        qos_dscp_class.apply();
        qos_tenant.apply();
        if (meta.qos.tenant != TENANT_NONE) {
            qos_tenant_meter.execute_meter((bit<32>)meta.qos.tenant, meta.qos.colour);
            if (meta.qos.colour == METER_YELLOW) {
                meta.qos.traffic_class = CLASS_BACKGROUND;
                qos_tenant_yellow.count((bit<32>)meta.qos.tenant);
            } else if (meta.qos.colour == METER_RED) {
                drop_packet(DROP_TENANT_RED);
                qos_tenant_red.count((bit<32>)meta.qos.tenant);
            }
        }
    }
#elif defined(STELLAR_STEP_QUEUEING)
    {
        queueing_queue_map.apply();
        standard_metadata.priority = meta.qos.queue;
    }
#endif
