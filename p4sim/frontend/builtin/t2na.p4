/*
 * p4sim's built-in view of the Tofino2 Native Architecture (T2NA).
 *
 * `#include <t2na.p4>` resolves to this file: the declarations of <tna.p4>
 * with Tofino2's own intrinsic metadata layout (32-bit enqueue stamp and
 * queue delay), Tofino2's deparser fields, and the ghost thread's metadata
 * and block type.  As with bf-p4c, it needs __TARGET_TOFINO__ == 2 (p4sim
 * defines it so when the program has not).
 */
#ifndef _P4SIM_T2NA_P4_
#define _P4SIM_T2NA_P4_

#ifndef __TARGET_TOFINO__
#define __TARGET_TOFINO__ 2
#endif

#if __TARGET_TOFINO__ != 2
#error t2na.p4 needs __TARGET_TOFINO__ == 2
#endif

#define _P4SIM_T2NA_ 1
#include "tna.p4"

#endif  /* _P4SIM_T2NA_P4_ */
