/* test_json.c: the streaming JSON writer (sim/base/json.h): separators, string
 * escaping, exact doubles, misuse and out-of-memory latching. */
#include <criterion/criterion.h>
#include "leaks.h"

#include "dp_common.h"
#include "json.h"

#include <float.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static long live_at_start;
static void setup(void)
{
    live_at_start = dp_alloc_live();
}
static void teardown(void)
{
    dp_alloc_fail_after(0);
    leaks_verify(live_at_start);
}
TestSuite(json, .init = setup, .fini = teardown);

/* Text of a single string value. */
static char *str_json(const char *s)
{
    json_buf *j = json_new();
    json_str(j, s);
    cr_assert(json_ok(j));
    char *out = strdup(json_text(j));
    json_free(j);
    return out;
}

Test(json, nested_object_and_array_get_commas)
{
    json_buf *j = json_new();
    json_obj_begin(j);
    json_key(j, "a");
    json_int(j, 1);
    json_key(j, "b");
    json_arr_begin(j);
    json_int(j, -2);
    json_bool(j, 1);
    json_bool(j, 0);
    json_null(j);
    json_obj_begin(j);
    json_obj_end(j);
    json_arr_begin(j);
    json_arr_end(j);
    json_str(j, "x");
    json_arr_end(j);
    json_key(j, "c");
    json_str(j, NULL);
    json_obj_end(j);
    cr_assert(json_ok(j));
    cr_assert_str_eq(json_text(j), "{\"a\":1,\"b\":[-2,true,false,null,{},[],\"x\"],\"c\":null}");
    json_free(j);
}

Test(json, key_value_calls_write_a_member_each)
{
    json_buf *j = json_new();
    json_obj_begin(j);
    json_key_str(j, "s", "x");
    json_key_str(j, "n", NULL);
    json_key_num(j, "d", 0.5);
    json_key_int(j, "i", -3);
    json_key_bool(j, "b", 1);
    json_obj_end(j);
    cr_assert(json_ok(j));
    cr_assert_str_eq(json_text(j), "{\"s\":\"x\",\"n\":null,\"d\":0.5,\"i\":-3,\"b\":true}");
    json_free(j);
    /* outside an object: the buffer fails, as json_key alone would make it */
    j = json_new();
    json_arr_begin(j);
    json_key_int(j, "i", 1);
    json_arr_end(j);
    cr_assert(!json_ok(j));
    json_free(j);
}

Test(json, int64_extremes)
{
    json_buf *j = json_new();
    json_arr_begin(j);
    json_int(j, INT64_MIN);
    json_int(j, INT64_MAX);
    json_arr_end(j);
    cr_assert_str_eq(json_text(j), "[-9223372036854775808,9223372036854775807]");
    json_free(j);
}

Test(json, quotes_backslashes_and_named_escapes)
{
    char *s = str_json("a\"b\\c/\b\f\n\r\t");
    cr_assert_str_eq(s, "\"a\\\"b\\\\c/\\b\\f\\n\\r\\t\"");
    free(s);
}

Test(json, other_control_chars_use_u_escapes)
{
    char in[] = {0x01, 0x1f, 0x7f, 'z', 0};
    char *s = str_json(in);
    cr_assert_str_eq(s, "\"\\u0001\\u001f\\u007fz\"");
    free(s);
}

Test(json, valid_utf8_is_copied)
{
    /* 2-, 3- and 4-byte sequences: é, €, U+10348, and U+FFFF / U+10FFFF edges. */
    const char *in = "caf\xc3\xa9 \xe2\x82\xac \xf0\x90\x8d\x88 \xef\xbf\xbf \xf4\x8f\xbf\xbf";
    char *s = str_json(in);
    char want[128];
    snprintf(want, sizeof want, "\"%s\"", in);
    cr_assert_str_eq(s, want);
    free(s);
}

Test(json, invalid_utf8_becomes_replacement_char)
{
    /* lone continuation, overlong '/', UTF-16 surrogate, > U+10FFFF, truncated sequence at end */
    char *s = str_json("a\x80"
                       "b\xc0\xaf"
                       "c\xed\xa0\x80"
                       "d\xf4\x90\x80\x80"
                       "e\xe2\x82");
    cr_assert_str_eq(
        s, "\"a\\ufffdb\\ufffd\\ufffdc\\ufffd\\ufffd\\ufffdd\\ufffd\\ufffd\\ufffd\\ufffde\\ufffd\\ufffd\"");
    free(s);
}

Test(json, keys_are_escaped_too)
{
    json_buf *j = json_new();
    json_obj_begin(j);
    json_key(j, "k\"\n");
    json_int(j, 0);
    json_obj_end(j);
    cr_assert_str_eq(json_text(j), "{\"k\\\"\\n\":0}");
    json_free(j);
}

Test(json, doubles_round_trip_bit_exact)
{
    const double v[] = {0.1,  1.0 / 3.0,   -2.5e-300, 5e-324, DBL_MAX,       -DBL_MIN,           1e21,
                        1e22, 123456789.0, 0.0,       -0.0,   6.02214076e23, nextafter(1.0, 2.0)};
    for (size_t i = 0; i < sizeof v / sizeof v[0]; i++) {
        json_buf *j = json_new();
        json_num(j, v[i]);
        cr_assert(json_ok(j));
        double back = strtod(json_text(j), NULL);
        cr_expect(memcmp(&back, &v[i], sizeof back) == 0, "%.17g came back as %.17g from '%s'", v[i], back,
                  json_text(j));
        json_free(j);
    }
}

Test(json, doubles_print_as_the_shortest_text_that_round_trips)
{
    /* the example and friends: no 0.097000000000000003 */
    const struct {
        double v;
        const char *text;
    } c[] = {{0.097, "0.097"}, {0.1, "0.1"},           {1.0 / 3.0, "0.3333333333333333"},
             {1e21, "1e+21"},  {26214400, "26214400"}, {nextafter(1.0, 2.0), "1.0000000000000002"}};
    for (size_t i = 0; i < sizeof c / sizeof c[0]; i++) {
        char b[32];
        json_fmt_double(c[i].v, b, sizeof b);
        cr_expect_str_eq(b, c[i].text);
    }
    /* random bit patterns: always the same double back */
    uint64_t x = 0x9E3779B97F4A7C15u;
    for (int i = 0; i < 200000; i++) {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        double v;
        memcpy(&v, &x, sizeof v);
        if (!isfinite(v))
            continue;
        char b[32], full[32];
        json_fmt_double(v, b, sizeof b);
        snprintf(full, sizeof full, "%.17g", v);
        double back = strtod(b, NULL);
        cr_assert(memcmp(&back, &v, sizeof v) == 0, "%s does not read back as %s", b, full);
    }
}

Test(json, raw_values_are_copied_as_is)
{
    json_buf *j = json_new();
    json_obj_begin(j);
    json_key(j, "options");
    json_raw(j, "{\"bucket\":26214400}");
    json_key(j, "none");
    json_raw(j, NULL);
    json_obj_end(j);
    cr_assert(json_ok(j));
    cr_assert_str_eq(json_text(j), "{\"options\":{\"bucket\":26214400},\"none\":null}");
    json_free(j);
}

Test(json, nan_and_infinity_become_null)
{
    json_buf *j = json_new();
    json_arr_begin(j);
    json_num(j, NAN);
    json_num(j, INFINITY);
    json_num(j, -INFINITY);
    json_arr_end(j);
    cr_assert(json_ok(j));
    cr_assert_str_eq(json_text(j), "[null,null,null]");
    json_free(j);
}

Test(json, value_without_key_in_object_is_an_error)
{
    json_buf *j = json_new();
    json_obj_begin(j);
    json_int(j, 1);
    json_obj_end(j);
    cr_assert_not(json_ok(j));
    cr_assert_str_eq(json_text(j), "");
    json_free(j);
}

Test(json, structural_misuse_is_latched)
{
    json_buf *j = json_new();
    json_key(j, "top"); /* key outside an object */
    cr_assert_not(json_ok(j));
    json_free(j);

    j = json_new();
    json_arr_begin(j);
    json_obj_end(j); /* mismatched end */
    cr_assert_not(json_ok(j));
    json_free(j);

    j = json_new();
    json_obj_begin(j);
    json_key(j, "a");
    json_obj_end(j); /* key without value */
    cr_assert_not(json_ok(j));
    json_free(j);

    j = json_new();
    json_int(j, 1);
    json_int(j, 2); /* two top-level values */
    cr_assert_not(json_ok(j));
    json_free(j);

    j = json_new();
    json_arr_begin(j); /* left open */
    cr_assert_not(json_ok(j));
    json_free(j);

    j = json_new(); /* nothing written */
    cr_assert_not(json_ok(j));
    json_free(j);
}

Test(json, depth_limit)
{
    json_buf *j = json_new();
    for (int i = 0; i < JSON_MAX_DEPTH; i++)
        json_arr_begin(j);
    for (int i = 0; i < JSON_MAX_DEPTH; i++)
        json_arr_end(j);
    cr_assert(json_ok(j));
    json_free(j);

    j = json_new();
    for (int i = 0; i <= JSON_MAX_DEPTH; i++)
        json_arr_begin(j);
    cr_assert_not(json_ok(j));
    json_free(j);
}

Test(json, null_buffer_is_harmless)
{
    json_obj_begin(NULL);
    json_key(NULL, "a");
    json_num(NULL, 1.0);
    json_str(NULL, "x");
    json_obj_end(NULL);
    cr_assert_str_eq(json_text(NULL), "");
    cr_assert_not(json_ok(NULL));
    json_free(NULL);
}

Test(json, long_output_grows_buffer)
{
    json_buf *j = json_new();
    json_arr_begin(j);
    for (int i = 0; i < 10000; i++)
        json_str(j, "0123456789");
    json_arr_end(j);
    cr_assert(json_ok(j));
    cr_assert_eq(strlen(json_text(j)), 2 + 10000 * 12 + 9999);
    json_free(j);
}

Test(json, out_of_memory_is_reported_not_crashed)
{
    /* Fail the k-th allocation for every k until the writer needs no more. */
    int succeeded = 0;
    for (long k = 1; k < 50 && !succeeded; k++) {
        dp_alloc_fail_after(k);
        json_buf *j = json_new();
        if (j) {
            json_arr_begin(j);
            for (int i = 0; i < 200; i++)
                json_str(j, "a fairly long string to force the buffer to grow");
            json_arr_end(j);
            succeeded = json_ok(j);
            if (!succeeded)
                cr_assert_str_eq(json_text(j), "");
        }
        json_free(j);
        dp_alloc_fail_after(0);
    }
    cr_assert(succeeded, "writer never succeeded under failure injection");
}
