/* units.h: quantities with units, as written in scenario files, overrides
 * and sweep specs, to and from base units.  The one number/unit parser of
 * dpsim (scenario loader, policies' options, sweep ranges, plots' axes).
 *
 * Units inside: seconds, bytes, bytes/s, FLOP/s.  In text, bandwidths are
 * bits/s (`100Mbps`; a bare number is bits/s), sizes bytes (`25MiB`), rates
 * of bytes `4GB/s`, times `20ms`, compute `35.6TFLOPS`.
 */
#ifndef DP_UNITS_H
#define DP_UNITS_H

#include "dp_common.h"

#include <stddef.h>

/* Unit parsing (exposed for tests and for sweep specs).  Each returns 0 and
 * the value in base units, or DP_EINPUT with a message naming the text.
 * A bare number is base units (bits/s for bandwidth). */
typedef enum {
    SCN_UNIT_BANDWIDTH, /* bps Kbps Mbps Gbps Tbps -> bytes/s */
    SCN_UNIT_BYTES,     /* B KB MB GB TB KiB MiB GiB TiB */
    SCN_UNIT_RATE,      /* B/s KB/s MB/s GB/s KiB/s MiB/s GiB/s */
    SCN_UNIT_TIME,      /* s ms us ns min h */
    SCN_UNIT_FLOPS,     /* FLOPS KFLOPS MFLOPS GFLOPS TFLOPS PFLOPS */
    SCN_UNIT_NUMBER,    /* plain number, no unit */
} scn_unit;
int scn_parse_quantity(const char *text, scn_unit unit, double *out, dp_err *err);
/* Format a value in base units with a human unit ("100 Mbps", "25 MiB"). */
void scn_format_quantity(double value, scn_unit unit, char *buf, size_t len);

/* Length of the decimal number at the start of s,
 * [+-]digits[.digits][(e|E)[+-]digits], or 0 if there is none.  Stricter
 * than strtod on purpose: no "inf", "nan", hex or leading blanks, which no
 * scenario value means; a '.' followed by '.' ends the number ("1..8" is a
 * sweep range). */
size_t units_number_len(const char *s);

#endif
