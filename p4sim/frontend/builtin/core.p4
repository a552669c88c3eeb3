/*
 * p4sim's built-in view of the P4_16 core library.
 *
 * `#include <core.p4>` resolves to this file.  It declares only what p4sim
 * implements; the p4sim checker recognises the packet_in/packet_out methods
 * and `verify` by name, so the declarations here give their signatures
 * (directions, argument counts, type parameters) to the type checker.
 *
 * Type parameters use deliberately unusual names because p4sim's lexer keeps
 * one program-wide table of type names (see p4sim/frontend/lexer.py).
 */
#ifndef _CORE_P4_
#define _CORE_P4_

/* Error codes a parser can signal; the runtime encodes error.X as its index. */
error {
    NoError,
    PacketTooShort,
    NoMatch,
    StackOutOfBounds,
    HeaderTooShort,
    ParserTimeout,
    ParserInvalidArgument
}

/* The packet as seen by a parser. */
extern packet_in {
    /* Copy the next header from the packet into `hdr` and make it valid. */
    void extract<CoreHdrT>(out CoreHdrT hdr);
    /* A header with a varbit field: that field takes `variableFieldSizeInBits` bits. */
    void extract<CoreVarHdrT>(out CoreVarHdrT variableSizeHeader, in bit<32> variableFieldSizeInBits);
    /* Peek at the next bits without consuming them. */
    CoreLookT lookahead<CoreLookT>();
    /* Skip bits (a multiple of 8 in BMv2). */
    void advance(in bit<32> sizeInBits);
    /* Packet length in bytes. */
    bit<32> length();
}

/* The packet being assembled by a deparser. */
extern packet_out {
    /* Append a header (if valid), a header stack or a struct of headers. */
    void emit<CoreEmitT>(in CoreEmitT hdr);
}

/* In a parser: when `check` is false, stop parsing with `toSignal`. */
extern void verify(in bool check, in error toSignal);

/* The action that does nothing; tables often use it as their default. */
@noWarn("unused")
action NoAction() {}

/* Match kinds every architecture offers. */
match_kind {
    exact,
    ternary,
    lpm
}

#endif  /* _CORE_P4_ */
