/* test_units.c: quantities with units (scn_parse_quantity /
 * scn_format_quantity): every unit family, rejection of bad text, and exact
 * round trips parse(format(x)) == x. */
#include "scenario.h"

#include <criterion/criterion.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static double parse_ok(const char *text, scn_unit u)
{
    double v = -1;
    dp_err e = {0};
    int rc = scn_parse_quantity(text, u, &v, &e);
    cr_assert_eq(rc, 0, "'%s' should parse: %s", text, e.msg);
    return v;
}

static void parse_bad(const char *text, scn_unit u, const char *needle)
{
    double v = 12345;
    dp_err e = {0};
    int rc = scn_parse_quantity(text, u, &v, &e);
    cr_assert_eq(rc, DP_EINPUT, "'%s' should be rejected", text);
    cr_assert_eq(e.code, DP_EINPUT);
    cr_assert(strstr(e.msg, needle), "message for '%s' lacks '%s': %s", text, needle, e.msg);
    cr_assert_eq(v, 12345, "output must be untouched on error");
}

Test(units, bandwidth_is_bits_per_second_in_text_bytes_inside)
{
    cr_assert_float_eq(parse_ok("100Mbps", SCN_UNIT_BANDWIDTH), 12.5e6, 1e-6);
    cr_assert_float_eq(parse_ok("10Gbps", SCN_UNIT_BANDWIDTH), 1.25e9, 1e-3);
    cr_assert_float_eq(parse_ok("8", SCN_UNIT_BANDWIDTH), 1.0, 1e-12);
    cr_assert_float_eq(parse_ok("1 Kbps", SCN_UNIT_BANDWIDTH), 125.0, 1e-12);
    cr_assert_float_eq(parse_ok("800bps", SCN_UNIT_BANDWIDTH), 100.0, 1e-12);
    cr_assert_float_eq(parse_ok("1Tbps", SCN_UNIT_BANDWIDTH), 1.25e11, 1);
    cr_assert_float_eq(parse_ok("12.5MB/s", SCN_UNIT_BANDWIDTH), 12.5e6, 1e-6);
}

Test(units, bit_rates_spelt_out_equal_the_bps_forms)
{
    /* "10 Mbit/s" is how papers and the brief write it: the same bits as 10Mbps */
    const char *pairs[][2] = {{"10 Mbit/s", "10Mbps"}, {"1Gbit/s", "1Gbps"},   {"64 kbit/s", "64kbps"},
                              {"64Kbit/s", "64Kbps"},  {"800bit/s", "800bps"}, {"2Tbit/s", "2Tbps"}};
    for (size_t i = 0; i < sizeof pairs / sizeof pairs[0]; i++) {
        cr_assert_eq(parse_ok(pairs[i][0], SCN_UNIT_BANDWIDTH), parse_ok(pairs[i][1], SCN_UNIT_BANDWIDTH),
                     "%s", pairs[i][0]);
        cr_assert_eq(parse_ok(pairs[i][0], SCN_UNIT_RATE), parse_ok(pairs[i][1], SCN_UNIT_RATE), "%s",
                     pairs[i][0]);
    }
    cr_assert_float_eq(parse_ok("10 Mbit/s", SCN_UNIT_BANDWIDTH), 1.25e6, 1e-9);
}

Test(units, sizes_decimal_and_binary)
{
    cr_assert_float_eq(parse_ok("25MiB", SCN_UNIT_BYTES), 25.0 * 1048576, 1e-6);
    cr_assert_float_eq(parse_ok("24GiB", SCN_UNIT_BYTES), 24.0 * 1073741824, 1e-3);
    cr_assert_float_eq(parse_ok("150MB", SCN_UNIT_BYTES), 150e6, 1e-6);
    cr_assert_float_eq(parse_ok("3KB", SCN_UNIT_BYTES), 3000, 1e-9);
    cr_assert_float_eq(parse_ok("2KiB", SCN_UNIT_BYTES), 2048, 1e-9);
    cr_assert_float_eq(parse_ok("115000", SCN_UNIT_BYTES), 115000, 1e-9);
    cr_assert_float_eq(parse_ok("1B", SCN_UNIT_BYTES), 1, 1e-12);
}

Test(units, rates_times_flops_numbers)
{
    cr_assert_float_eq(parse_ok("4GB/s", SCN_UNIT_RATE), 4e9, 1e-3);
    cr_assert_float_eq(parse_ok("1MiB/s", SCN_UNIT_RATE), 1048576, 1e-6);
    cr_assert_float_eq(parse_ok("8Mbps", SCN_UNIT_RATE), 1e6, 1e-6);
    cr_assert_float_eq(parse_ok("20ms", SCN_UNIT_TIME), 0.02, 1e-15);
    cr_assert_float_eq(parse_ok("0.43s", SCN_UNIT_TIME), 0.43, 1e-15);
    cr_assert_float_eq(parse_ok("50us", SCN_UNIT_TIME), 50e-6, 1e-18);
    cr_assert_float_eq(parse_ok("2min", SCN_UNIT_TIME), 120, 1e-12);
    cr_assert_float_eq(parse_ok("1h", SCN_UNIT_TIME), 3600, 1e-12);
    cr_assert_float_eq(parse_ok("35.6TFLOPS", SCN_UNIT_FLOPS), 35.6e12, 1);
    cr_assert_float_eq(parse_ok("0.2TFLOPS", SCN_UNIT_FLOPS), 0.2e12, 1);
    cr_assert_float_eq(parse_ok("22.8e9", SCN_UNIT_FLOPS), 22.8e9, 1);
    cr_assert_float_eq(parse_ok("-3.5", SCN_UNIT_NUMBER), -3.5, 1e-15);
    cr_assert_float_eq(parse_ok("1e3", SCN_UNIT_NUMBER), 1000, 1e-12);
}

Test(units, rejects_unknown_units_with_a_suggestion)
{
    parse_bad("100Mbs", SCN_UNIT_BANDWIDTH, "did you mean 'Mbps'?");
    parse_bad("100Mbs", SCN_UNIT_BANDWIDTH, "(got '100Mbs')");
    parse_bad("25MiBs", SCN_UNIT_BYTES, "unknown size unit");
    parse_bad("3 parsecs", SCN_UNIT_TIME, "unknown time unit 'parsecs'");
    parse_bad("5GB", SCN_UNIT_BANDWIDTH, "unknown bandwidth unit");
    parse_bad("5ms", SCN_UNIT_NUMBER, "without a unit");
}

Test(units, rejects_non_numbers_nan_inf_and_overflow)
{
    parse_bad("fast", SCN_UNIT_BANDWIDTH, "expected a number");
    parse_bad("", SCN_UNIT_TIME, "expected a number");
    parse_bad("nan", SCN_UNIT_NUMBER, "expected a number");
    parse_bad("inf", SCN_UNIT_NUMBER, "expected a number");
    parse_bad("-inf", SCN_UNIT_NUMBER, "expected a number");
    parse_bad("0x10", SCN_UNIT_NUMBER, "without a unit");
    parse_bad("1e999", SCN_UNIT_NUMBER, "out of range");
    parse_bad("1e307TFLOPS", SCN_UNIT_FLOPS, "out of range");
    parse_bad(" 5", SCN_UNIT_NUMBER, "expected a number");
    parse_bad(NULL, SCN_UNIT_NUMBER, "missing");
}

static void roundtrip(double x, scn_unit u)
{
    char buf[64];
    scn_format_quantity(x, u, buf, sizeof buf);
    double y = -1;
    dp_err e = {0};
    cr_assert_eq(scn_parse_quantity(buf, u, &y, &e), 0, "format gave unparsable '%s': %s", buf, e.msg);
    cr_assert(x == y, "round trip of %.17g (unit %d) via '%s' gave %.17g", x, (int)u, buf, y);
}

Test(units, format_round_trips_exactly)
{
    const double vals[] = {0,      1,       0.125,  12.5e6,  1.25e9,  25.0 * 1048576, 0.43,
                           0.02,   1e-9,    3600,   35.6e12, 1.0 / 3, 2.0 / 3 * 1e7,  123456789.123,
                           1e-300, 1.7e300, 5e-324, 115000,  0.1,     7.77e-5};
    const scn_unit units[] = {SCN_UNIT_BANDWIDTH, SCN_UNIT_BYTES, SCN_UNIT_RATE,
                              SCN_UNIT_TIME,      SCN_UNIT_FLOPS, SCN_UNIT_NUMBER};
    for (size_t u = 0; u < sizeof units / sizeof units[0]; u++)
        for (size_t i = 0; i < sizeof vals / sizeof vals[0]; i++)
            roundtrip(vals[i], units[u]);
    /* A pseudo-random sweep over many magnitudes (fixed seed: deterministic). */
    unsigned long long st = 88172645463325252ULL;
    for (int i = 0; i < 2000; i++) {
        st ^= st << 13;
        st ^= st >> 7;
        st ^= st << 17;
        double mant = (double)(st >> 11) / 9007199254740992.0;
        double x = mant * pow(10, (int)(st % 40) - 20);
        roundtrip(x, units[i % 6]);
    }
}

Test(units, format_is_human)
{
    char buf[64];
    scn_format_quantity(12.5e6, SCN_UNIT_BANDWIDTH, buf, sizeof buf);
    cr_assert_str_eq(buf, "100 Mbps");
    scn_format_quantity(25.0 * 1048576, SCN_UNIT_BYTES, buf, sizeof buf);
    cr_assert_str_eq(buf, "25 MiB");
    scn_format_quantity(0.02, SCN_UNIT_TIME, buf, sizeof buf);
    cr_assert_str_eq(buf, "20 ms");
    scn_format_quantity(4e9, SCN_UNIT_RATE, buf, sizeof buf);
    cr_assert_str_eq(buf, "4 GB/s");
    scn_format_quantity(INFINITY, SCN_UNIT_BANDWIDTH, buf, sizeof buf);
    cr_assert_str_eq(buf, "unlimited");
    scn_format_quantity(1.0, SCN_UNIT_BYTES, buf, 3); /* truncates, never overruns */
    cr_assert_eq(strlen(buf), 2);
}

/* dp_esc and dp_err_set: user text never reaches the terminal raw. */
Test(units, control_characters_are_escaped)
{
    char b[64];
    cr_expect_str_eq(dp_esc(b, sizeof b, "1\n\033[2J\033[31mRED"), "1\\n\\x1b[2J\\x1b[31mRED");
    cr_expect_str_eq(dp_esc(b, sizeof b, "a\tb\rc\x7f\a"), "a\\tb\\rc\\x7f\\x07");
    /* C1 CSI in UTF-8 is escaped; other UTF-8 passes unchanged */
    cr_expect_str_eq(dp_esc(b, sizeof b,
                            "x\xc2\x9b"
                            "31m \xc3\xa9"),
                     "x\\xc2\\x9b31m \xc3\xa9");
    cr_expect_str_eq(dp_esc(b, sizeof b, NULL), "");
    /* bytes that are not UTF-8 (a lone 8-bit CSI, a cut, overlong or
     * surrogate sequence) are escaped one by one; 4-byte UTF-8 passes */
    cr_expect_str_eq(dp_esc(b, sizeof b,
                            "a\x9b"
                            "2J\xc3"),
                     "a\\x9b2J\\xc3");
    cr_expect_str_eq(dp_esc(b, sizeof b, "\xc0\xaf\xed\xa0\x80"), "\\xc0\\xaf\\xed\\xa0\\x80");
    cr_expect_str_eq(dp_esc(b, sizeof b, "\xf0\x9f\x98\x80!"), "\xf0\x9f\x98\x80!");
    /* cut before an escape that does not fit, never inside one */
    cr_expect_str_eq(dp_esc(b, 6, "ab\033c"), "ab");
    dp_err e = {0};
    dp_err_set(&e, DP_EINPUT, "k: bad (got '%s')", "v\n\033]0;title\a");
    cr_expect_str_eq(e.msg, "k: bad (got 'v\\n\\x1b]0;title\\x07')");
    dp_err_prefix(&e, "f\033:%d", 3);
    cr_expect_str_eq(e.msg, "f\\x1b:3: k: bad (got 'v\\n\\x1b]0;title\\x07')");
}

/* Short decimals skip strtod (units.c, fast_decimal): the double must be
 * strtod's, bit for bit, for every shape of number: signs, leading and
 * trailing zeros, fractions, exponents at and past the fast path's limits
 * (15 digits, 10^+-22), and numbers strtod rounds (0.1, 1e23). */
Test(units, short_decimals_parse_to_strtods_double_bit_for_bit)
{
    static const char *const fixed[] = {"0",
                                        "-0",
                                        "+0",
                                        "0.0",
                                        "-0.0e5",
                                        "1",
                                        "-1",
                                        "0.1",
                                        "0.2",
                                        "0.3",
                                        "1.001",
                                        "1.996",
                                        "123456789012345",
                                        "1234567890123456",
                                        "12345678901234567",
                                        "0.000000000000001",
                                        "9.999999999999999",
                                        "1e22",
                                        "1e23",
                                        "1e-22",
                                        "1e-23",
                                        "4.35e-22",
                                        "3.3e+21",
                                        "000012.5",
                                        "12.50000",
                                        "1.7976931348623157e308",
                                        "5e-324",
                                        "2.5e0",
                                        "7E3",
                                        "7e03",
                                        "1e0004",
                                        "8.8817841970012523e-16"};
    for (size_t i = 0; i < sizeof fixed / sizeof fixed[0]; i++) {
        double v = 0;
        dp_err e = {0};
        if (scn_parse_quantity(fixed[i], SCN_UNIT_NUMBER, &v, &e) != 0)
            continue; /* out of range: the same rejection as before */
        double w = strtod(fixed[i], NULL);
        cr_expect(memcmp(&v, &w, sizeof v) == 0, "'%s': %.17g, strtod %.17g", fixed[i], v, w);
    }
    /* random decimals of 1 to 18 digits with a point anywhere and an
     * exponent or not: a seeded stream, the same cases on every run */
    uint64_t x = 88172645463325252ull;
    for (int n = 0; n < 200000; n++) {
        char t[64];
        size_t k = 0;
        x ^= x << 13, x ^= x >> 7, x ^= x << 17;
        if (x & 1)
            t[k++] = '-';
        int digits = 1 + (int)((x >> 1) % 18), point = (int)((x >> 6) % (unsigned)(digits + 1));
        for (int d = 0; d < digits; d++) {
            if (d == point && d > 0)
                t[k++] = '.';
            x ^= x << 13, x ^= x >> 7, x ^= x << 17;
            t[k++] = (char)('0' + x % 10);
        }
        if ((x >> 8) % 3 == 0)
            k += (size_t)snprintf(t + k, sizeof t - k, "e%d", (int)((x >> 12) % 61) - 30);
        t[k] = '\0';
        double v = 0, w = strtod(t, NULL);
        dp_err e = {0};
        cr_assert_eq(scn_parse_quantity(t, SCN_UNIT_NUMBER, &v, &e), 0, "'%s': %s", t, e.msg);
        cr_assert(memcmp(&v, &w, sizeof v) == 0, "'%s': %.17g, strtod %.17g", t, v, w);
    }
}

/* dp_prefault: pages are faulted in beside the caller, who writes the
 * range meanwhile; every byte written stays, every other byte stays 0.
 * Below 8 MiB (or a NULL range) there is nothing to wait for. */
Test(units, prefault_keeps_what_the_caller_writes)
{
    cr_assert_null(dp_prefault_start(NULL, 64u << 20));
    char small[4096];
    cr_assert_null(dp_prefault_start(small, sizeof small));
    dp_prefault_wait(NULL);
    size_t len = (24u << 20) + 123; /* not a whole number of pages */
    unsigned char *p = dp_calloc(len, 1);
    cr_assert_not_null(p);
    dp_prefault *pf = dp_prefault_start(p + 7, len - 7); /* unaligned: only whole pages inside */
    for (size_t i = 0; i < len; i += 4093)
        p[i] = (unsigned char)(i % 251 + 1);
    dp_prefault_wait(pf);
    for (size_t i = 0; i < len; i++)
        if (p[i] != (i % 4093 == 0 ? (unsigned char)(i % 251 + 1) : 0))
            cr_assert_fail("byte %zu is %u", i, p[i]);
    dp_free(p);
}

/* Device names "base[i]" are made without snprintf (dp_indexed_name): the
 * same bytes as snprintf for every buffer size, truncation included. */
Test(units, indexed_names_match_snprintf)
{
    const char *bases[] = {"", "d", "phone", "a-rather-long-group-name-of-forty-chars!"};
    const long long idx[] = {0, 1, 9, 10, 99, 12345, 999999, -1, -42, INT64_MAX, INT64_MIN};
    for (size_t b = 0; b < sizeof bases / sizeof *bases; b++)
        for (size_t k = 0; k < sizeof idx / sizeof *idx; k++)
            for (size_t cap = 0; cap <= 72; cap++) {
                char want[80], got[80];
                memset(want, '#', sizeof want);
                memset(got, '#', sizeof got);
                snprintf(want, cap, "%s[%lld]", bases[b], idx[k]);
                dp_indexed_name(got, cap, bases[b], idx[k]);
                cr_assert(memcmp(want, got, sizeof want) == 0, "'%s'[%lld], cap %zu: '%.*s' vs '%.*s'",
                          bases[b], idx[k], cap, (int)cap, got, (int)cap, want);
            }
}
