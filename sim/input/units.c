/* units.c: quantities with units, as written in scenario files and sweep
 * specs, to and from base units (seconds, bytes, bytes/s, FLOP/s).
 *
 * Invariants: a parsed value is always finite (NaN and infinities are
 * rejected, so no caller has to check again); bandwidths in text are bits/s
 * and come back as bytes/s; scn_format_quantity output parses back to the
 * identical double (it retries with more digits, then falls back to the base
 * unit, where the conversion is exact).
 *
 * The number is checked by hand before strtod because strtod also accepts
 * "inf", "nan", hex floats and leading spaces, none of which belong in a
 * scenario file.
 */
#include "units.h"
#include "yamltree.h"

#include <ctype.h>
#include <float.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct unit_def {
    const char *name;
    double factor; /* base units per one of these */
} unit_def;

/* Bandwidth: text in bits/s, base bytes/s.  Byte rates are accepted too
 * (a bandwidth of `12.5MB/s` is unambiguous). */
static const unit_def bw_units[] = {
    {"bps", 1.0 / 8},
    {"Kbps", 1e3 / 8},
    {"kbps", 1e3 / 8},
    {"Mbps", 1e6 / 8},
    {"Gbps", 1e9 / 8},
    {"Tbps", 1e12 / 8},
    {"B/s", 1},
    {"KB/s", 1e3},
    {"kB/s", 1e3},
    {"MB/s", 1e6},
    {"GB/s", 1e9},
    {"TB/s", 1e12},
    {"KiB/s", 1024.0},
    {"MiB/s", 1048576.0},
    {"GiB/s", 1073741824.0},
    /* the same bit rates spelt out, as people write them ("10 Mbit/s") */
    {"bit/s", 1.0 / 8},
    {"Kbit/s", 1e3 / 8},
    {"kbit/s", 1e3 / 8},
    {"Mbit/s", 1e6 / 8},
    {"Gbit/s", 1e9 / 8},
    {"Tbit/s", 1e12 / 8},
};
static const unit_def byte_units[] = {
    {"B", 1},     {"KB", 1e3},     {"kB", 1e3},        {"MB", 1e6},           {"GB", 1e9},
    {"TB", 1e12}, {"KiB", 1024.0}, {"MiB", 1048576.0}, {"GiB", 1073741824.0}, {"TiB", 1099511627776.0},
};
/* Byte rates: text and base in bytes/s; bit rates are accepted too. */
static const unit_def rate_units[] = {
    {"B/s", 1},
    {"KB/s", 1e3},
    {"kB/s", 1e3},
    {"MB/s", 1e6},
    {"GB/s", 1e9},
    {"TB/s", 1e12},
    {"KiB/s", 1024.0},
    {"MiB/s", 1048576.0},
    {"GiB/s", 1073741824.0},
    {"TiB/s", 1099511627776.0},
    {"bps", 1.0 / 8},
    {"Kbps", 1e3 / 8},
    {"kbps", 1e3 / 8},
    {"Mbps", 1e6 / 8},
    {"Gbps", 1e9 / 8},
    {"Tbps", 1e12 / 8},
    {"bit/s", 1.0 / 8},
    {"Kbit/s", 1e3 / 8},
    {"kbit/s", 1e3 / 8},
    {"Mbit/s", 1e6 / 8},
    {"Gbit/s", 1e9 / 8},
    {"Tbit/s", 1e12 / 8},
};
static const unit_def time_units[] = {
    {"s", 1}, {"ms", 1e-3}, {"us", 1e-6}, {"ns", 1e-9}, {"min", 60}, {"h", 3600},
};
static const unit_def flops_units[] = {
    {"FLOPS", 1}, {"KFLOPS", 1e3}, {"MFLOPS", 1e6}, {"GFLOPS", 1e9}, {"TFLOPS", 1e12}, {"PFLOPS", 1e15},
};

static const unit_def *units_of(scn_unit u, size_t *n, const char **what)
{
    switch (u) {
    case SCN_UNIT_BANDWIDTH:
        *n = sizeof bw_units / sizeof bw_units[0];
        *what = "bandwidth";
        return bw_units;
    case SCN_UNIT_BYTES:
        *n = sizeof byte_units / sizeof byte_units[0];
        *what = "size";
        return byte_units;
    case SCN_UNIT_RATE:
        *n = sizeof rate_units / sizeof rate_units[0];
        *what = "rate";
        return rate_units;
    case SCN_UNIT_TIME:
        *n = sizeof time_units / sizeof time_units[0];
        *what = "time";
        return time_units;
    case SCN_UNIT_FLOPS:
        *n = sizeof flops_units / sizeof flops_units[0];
        *what = "compute speed";
        return flops_units;
    case SCN_UNIT_NUMBER:
    default:
        *n = 0;
        *what = "number";
        return NULL;
    }
}

/* The base unit a bare number is in. */
static double bare_factor(scn_unit u)
{
    return u == SCN_UNIT_BANDWIDTH ? 1.0 / 8 : 1.0;
}

size_t units_number_len(const char *s)
{
    size_t i = 0, digits = 0;
    if (s[i] == '+' || s[i] == '-')
        i++;
    while (isdigit((unsigned char)s[i])) {
        i++;
        digits++;
    }
    if (s[i] == '.' && s[i + 1] != '.') {
        i++;
        while (isdigit((unsigned char)s[i])) {
            i++;
            digits++;
        }
    }
    if (digits == 0)
        return 0;
    if (s[i] == 'e' || s[i] == 'E') {
        size_t j = i + 1;
        if (s[j] == '+' || s[j] == '-')
            j++;
        if (isdigit((unsigned char)s[j])) {
            while (isdigit((unsigned char)s[j]))
                j++;
            i = j;
        }
    }
    return i;
}

/* strtod's result for a short decimal, without strtod (a fifth of reading
 * a quantity): with at most 15 digits the digits are an integer m < 2^53,
 * exact in a double, and so is 10^e for |e| <= 22; m * 10^e or m / 10^-e is
 * then one correctly rounded operation, the same double strtod returns
 * (Clinger's fast path).  s[0 .. len) is a number units_number_len
 * accepted; returns 0 when it does not qualify (strtod then decides). */
static int fast_decimal(const char *s, size_t len, double *out)
{
#if defined(FLT_EVAL_METHOD) && FLT_EVAL_METHOD == 0
    static const double p10[] = {1e0,  1e1,  1e2,  1e3,  1e4,  1e5,  1e6,  1e7,  1e8,  1e9,  1e10, 1e11,
                                 1e12, 1e13, 1e14, 1e15, 1e16, 1e17, 1e18, 1e19, 1e20, 1e21, 1e22};
    size_t i = 0;
    int neg = 0, digits = 0, frac = 0;
    uint64_t m = 0;
    if (s[i] == '+' || s[i] == '-')
        neg = s[i++] == '-';
    for (; i < len && s[i] >= '0' && s[i] <= '9'; i++, digits++)
        m = m * 10 + (uint64_t)(s[i] - '0');
    if (i < len && s[i] == '.')
        for (i++; i < len && s[i] >= '0' && s[i] <= '9'; i++, digits++, frac++)
            m = m * 10 + (uint64_t)(s[i] - '0');
    if (digits > 15)
        return 0;
    int e = 0;
    if (i < len && (s[i] == 'e' || s[i] == 'E')) {
        int eneg = 0, ed = 0;
        i++;
        if (s[i] == '+' || s[i] == '-')
            eneg = s[i++] == '-';
        for (; i < len && ed < 4; i++, ed++)
            e = e * 10 + (s[i] - '0');
        if (i < len)
            return 0; /* a long exponent */
        e = eneg ? -e : e;
    }
    e -= frac;
    if (i != len || e < -22 || e > 22)
        return 0;
    double v = e >= 0 ? (double)m * p10[e] : (double)m / p10[-e];
    *out = neg ? -v : v;
    return 1;
#else
    (void)s;
    (void)len;
    (void)out;
    return 0; /* excess precision would round twice */
#endif
}

int scn_parse_quantity(const char *text, scn_unit unit, double *out, dp_err *err)
{
    size_t n_units;
    const char *what;
    const unit_def *units = units_of(unit, &n_units, &what);
    if (!text)
        return dp_err_set(err, DP_EINPUT, "missing %s (got nothing)", what);
    size_t len = units_number_len(text);
    if (len == 0)
        return dp_err_set(err, DP_EINPUT, "not a %s: expected a number%s (got '%.80s')", what,
                          units ? " with an optional unit" : "", text);
    if (len >= 64)
        return dp_err_set(err, DP_EINPUT, "number too long (got '%.80s')", text);
    double v;
    if (!fast_decimal(text, len, &v)) {
        char num[64];
        memcpy(num, text, len);
        num[len] = '\0';
        v = strtod(num, NULL);
    }
    if (!isfinite(v))
        return dp_err_set(err, DP_EINPUT, "%s out of range (got '%.80s')", what, text);
    const char *u = text + len;
    while (*u == ' ')
        u++;
    double factor;
    if (*u == '\0') {
        factor = bare_factor(unit);
    } else {
        if (!units)
            return dp_err_set(err, DP_EINPUT, "expected a plain number without a unit (got '%.80s')", text);
        size_t k;
        for (k = 0; k < n_units; k++)
            if (u[0] == units[k].name[0] && yt_key_is(u, units[k].name))
                break;
        if (k == n_units) {
            const char *names[32];
            char known[256] = "";
            for (size_t j = 0; j < n_units && j < 32; j++) {
                names[j] = units[j].name;
                if (strlen(known) + strlen(units[j].name) + 3 < sizeof known) {
                    if (j)
                        strcat(known, ", ");
                    strcat(known, units[j].name);
                }
            }
            const char *near = yt_nearest(u, names, n_units < 32 ? n_units : 32);
            if (near)
                return dp_err_set(err, DP_EINPUT, "unknown %s unit '%.40s', did you mean '%s'? (got '%.80s')",
                                  what, u, near, text);
            return dp_err_set(err, DP_EINPUT, "unknown %s unit '%.40s' (known: %s) (got '%.80s')", what, u,
                              known, text);
        }
        factor = units[k].factor;
    }
    double r = v * factor;
    if (!isfinite(r))
        return dp_err_set(err, DP_EINPUT, "%s out of range (got '%.80s')", what, text);
    *out = r;
    return 0;
}

/* Pick the display unit for a value in base units: the largest whose
 * factor is <= |value|. */
static void pick_unit(double value, scn_unit unit, const char **name, double *factor)
{
    static const unit_def bw_show[] = {
        {"bps", 1.0 / 8}, {"Kbps", 1e3 / 8}, {"Mbps", 1e6 / 8}, {"Gbps", 1e9 / 8}, {"Tbps", 1e12 / 8}};
    static const unit_def byte_show[] = {
        {"B", 1}, {"KiB", 1024.0}, {"MiB", 1048576.0}, {"GiB", 1073741824.0}, {"TiB", 1099511627776.0}};
    static const unit_def rate_show[] = {
        {"B/s", 1}, {"KB/s", 1e3}, {"MB/s", 1e6}, {"GB/s", 1e9}, {"TB/s", 1e12}};
    static const unit_def time_show[] = {{"ns", 1e-9}, {"us", 1e-6}, {"ms", 1e-3}, {"s", 1}};
    const unit_def *t;
    size_t n;
    switch (unit) {
    case SCN_UNIT_BANDWIDTH:
        t = bw_show;
        n = 5;
        break;
    case SCN_UNIT_BYTES:
        t = byte_show;
        n = 5;
        break;
    case SCN_UNIT_RATE:
        t = rate_show;
        n = 5;
        break;
    case SCN_UNIT_TIME:
        t = time_show;
        n = 4;
        break;
    case SCN_UNIT_FLOPS:
        t = flops_units;
        n = sizeof flops_units / sizeof flops_units[0];
        break;
    default:
        *name = "";
        *factor = 1;
        return;
    }
    double a = fabs(value);
    size_t k = 0;
    /* Times below a second shown in s would be "0.02 s"; bytes below a KiB
     * in B; otherwise the largest unit not above the value. */
    for (size_t j = 0; j < n; j++)
        if (a >= t[j].factor)
            k = j;
    if (unit == SCN_UNIT_TIME && a == 0)
        k = 3;
    *name = t[k].name;
    *factor = t[k].factor;
}

void scn_format_quantity(double value, scn_unit unit, char *buf, size_t len)
{
    if (!buf || len == 0)
        return;
    if (isnan(value)) {
        snprintf(buf, len, "nan");
        return;
    }
    if (isinf(value)) {
        snprintf(buf, len, "%sunlimited", value < 0 ? "-" : "");
        return;
    }
    const char *name;
    double factor;
    pick_unit(value, unit, &name, &factor);
    double check;
    for (int prec = 4; prec <= 17; prec++) {
        if (unit == SCN_UNIT_NUMBER)
            snprintf(buf, len, "%.*g", prec, value);
        else
            snprintf(buf, len, "%.*g %s", prec, value / factor, name);
        if (scn_parse_quantity(buf, unit, &check, NULL) == 0 && check == value)
            return;
    }
    /* Base unit: bits/s for bandwidth (x8 is exact), otherwise the base
     * itself, with the 17 digits a double needs. */
    if (unit == SCN_UNIT_BANDWIDTH)
        snprintf(buf, len, "%.17g bps", value * 8);
    else if (unit == SCN_UNIT_NUMBER)
        snprintf(buf, len, "%.17g", value);
    else {
        const char *base = unit == SCN_UNIT_BYTES  ? "B"
                           : unit == SCN_UNIT_RATE ? "B/s"
                           : unit == SCN_UNIT_TIME ? "s"
                                                   : "FLOPS";
        snprintf(buf, len, "%.17g %s", value, base);
    }
}
