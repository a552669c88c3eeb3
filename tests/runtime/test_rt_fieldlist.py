"""Field lists: *_preserving_field_list keeps only the @field_list(N) metadata fields."""
from irb import assign, binop, bit, builtin, header, if_, lit, mem, path, program, struct
from p4sim.frontend import ir
from rtkit import pack, switch_for


def annotated(name, width, ann):
    return ir.Field(name, bit(width), annotations=ann)


def resubmit_program(meta_fields):
    R = header("r_t", ("keep", 8), ("lose", 8), ("inst", 8))
    H = struct("headers", ("r", R))
    M = ir.StructT("metadata", meta_fields)

    def ingress(b):
        first = binop("==", mem(b.sm, "instance_type"), lit(0, 32))
        return [
            if_(first,
                ir.Block(None, [assign(mem(b.meta, "keep"), lit(7, 8)), assign(mem(b.meta, "lose"), lit(9, 8)),
                                builtin("resubmit_preserving_field_list", [lit(1, 8)])]),
                ir.Block(None, [assign(path(b.hdr, "r.keep"), mem(b.meta, "keep")),
                                assign(path(b.hdr, "r.lose"), mem(b.meta, "lose")),
                                assign(path(b.hdr, "r.inst"), ir.Cast(bit(8), None, mem(b.sm, "instance_type")))])),
            assign(mem(b.sm, "egress_spec"), lit(1, 9))]

    return program(H, M, ingress=ingress)


def test_resubmit_preserves_only_fields_in_the_field_list():
    prog = resubmit_program([annotated("keep", 8, {"field_list": "1"}), annotated("lose", 8, {"field_list": "2"})])
    sw = switch_for(prog)
    sw.send(0, pack([(0, 8), (0, 8), (0, 8)]))
    [(_, out)] = sw.take_output()
    assert out == bytes([7, 0, 6])  # keep survived, lose was reset, instance_type RESUBMIT


def test_field_list_with_no_annotated_field_preserves_nothing():
    prog = resubmit_program([ir.Field("keep", bit(8)), ir.Field("lose", bit(8))])
    sw = switch_for(prog)
    sw.send(0, pack([(0, 8), (0, 8), (0, 8)]))
    [(_, out)] = sw.take_output()
    assert out == bytes([0, 0, 6])


def test_a_field_can_be_in_several_field_lists():
    prog = resubmit_program([annotated("keep", 8, {"field_list": "3, 1"}), annotated("lose", 8, {})])
    sw = switch_for(prog)
    sw.send(0, pack([(0, 8), (0, 8), (0, 8)]))
    [(_, out)] = sw.take_output()
    assert out == bytes([7, 0, 6])
