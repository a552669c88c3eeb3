/*
 * qos.p4 (TNA) -- DSCP -> class, tenant policing, class -> queue.
 *
 * As v1model, with TNA's meter (MeterColor_t: RED is 3) and the queue chosen
 * through ig_intr_md_for_tm.qid instead of standard_metadata.priority.
 */
control Qos(inout tna_headers_t hdr, inout tna_ingress_metadata_t meta,
            in bit<16> parser_err) {
    /* Per-tenant byte meters; rates from the controller (P4Runtime meter
     * config).  Size: TENANT_SLOTS. */
    Meter<tenant_id_t>(TENANT_SLOTS, MeterType_t.BYTES) tenant_meter;

    action set_class(bit<2> traffic_class) {
        meta.traffic_class = traffic_class;
        hdr.bridged.traffic_class = traffic_class;
    }
    /* DSCP -> class.  Size: DSCP_CLASS_SIZE. */
    table dscp_class {
        key = { hdr.ipv4.dscp: exact; }
        actions = { set_class; }
        default_action = set_class(CLASS_ELASTIC);
        size = DSCP_CLASS_SIZE;
    }
    action set_tenant(tenant_id_t tenant_id) { meta.tenant = tenant_id; }
    /* Source prefix -> tenant.  Size: TENANT_SIZE. */
    table tenant {
        key = { hdr.ipv4.src_addr: lpm; }
        actions = { set_tenant; NoAction; }
        default_action = NoAction();
        size = TENANT_SIZE;
    }
    /* One table per gate (README.md, "Tofino-1"): truncated or non-IPv4
     * input (dropped by the sanity checks) is not classified or metered */
    apply {
        if (parser_err == 0 && hdr.ipv4.isValid()) {
            dscp_class.apply();
        }
        if (parser_err == 0 && hdr.ipv4.isValid()) {
            tenant.apply();
        }
        if (parser_err == 0 && hdr.ipv4.isValid() && meta.tenant != TENANT_NONE &&
                !meta.resub.isValid()) {   /* meter each packet once */
            meta.colour = tenant_meter.execute(meta.tenant);
        }
        if (meta.colour == (bit<8>) MeterColor_t.RED) {
            meta.red = 1;                      /* dropped at the end of ingress (stellar.p4) */
        }
    }
}

/* (class, elephant) -> queue: mice ahead of elephants of their class. */
control Queueing(inout tna_ingress_metadata_t meta,
                 inout ingress_intrinsic_metadata_for_tm_t ig_tm_md) {
    /* also the queue a second pass's drain test reads `departed` for (the
     * resubmit header: flowlet.p4 validates it in the same stage) */
    action set_queue(QueueId_t qid) {
        ig_tm_md.qid = qid;
        meta.qid = (bit<5>) qid;
        meta.resub.qid = (bit<5>) qid;
    }
    /* Size: QUEUE_MAP_SIZE. */
    table queue_map {
        key = { meta.traffic_class: exact; meta.elephant: exact; }
        actions = { set_queue; }
        default_action = set_queue(0);
        size = QUEUE_MAP_SIZE;
    }
    apply { queue_map.apply(); }
}
