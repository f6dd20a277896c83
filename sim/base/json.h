/* json.h: a tiny streaming JSON writer into a growable buffer.
 *
 * Used for `dpsim ... --json` output and for the JSON columns of the
 * results database (options_json, overrides_json, point_json, spec_json).
 * Separators are inserted automatically: call json_key before each member
 * value inside an object, nothing between array elements.
 *
 *     json_buf *j = json_new();
 *     json_obj_begin(j);
 *     json_key(j, "policy"); json_str(j, "ddp");
 *     json_key(j, "bucket_bytes"); json_num(j, 26214400);
 *     json_obj_end(j);
 *     if (json_ok(j)) puts(json_text(j));   // {"policy":"ddp","bucket_bytes":26214400}
 *     json_free(j);
 *
 * Output is compact (no spaces or newlines) and deterministic, so equal
 * calls give byte-equal text: the database compares JSON text directly
 * (the unique index on sweep points).
 *
 * Numbers: json_num prints the shortest of "%.15g", "%.16g" and "%.17g"
 * that reads back (strtod) to the same double, so every finite double
 * round-trips exactly and 0.097 prints as 0.097.  JSON has no NaN or infinity: json_num writes `null` for
 * them and callers that care should avoid passing them. Strings: `"`, `\` and control characters (< 0x20, and
 * 0x7f) are escaped
 * (\" \\ \b \f \n \r \t, others \u00XX); valid UTF-8 is copied as is; a byte
 * that does not start a valid UTF-8 sequence is written as \ufffd, so the
 * output is always valid JSON in valid UTF-8.
 *
 * Errors: the writer never fails loudly.  An allocation failure, or a call
 * out of place (a value in an object without a key, a key outside an object,
 * an unbalanced end, nesting deeper than JSON_MAX_DEPTH), latches an error;
 * later calls do nothing, json_text returns "" and json_ok returns 0.
 * json_ok also returns 0 while an object or array is still open.
 *
 * Ownership: json_new returns a buffer the caller frees with json_free
 * (json_free(NULL) is a no-op); json_new returns NULL only when out of
 * memory, and every other function accepts a NULL buffer and does nothing.
 */
#ifndef DP_JSON_H
#define DP_JSON_H

#include <stddef.h>
#include <stdint.h>

#define JSON_MAX_DEPTH 64

typedef struct json_buf json_buf;

json_buf *json_new(void);
void json_free(json_buf *j);

void json_obj_begin(json_buf *j);
void json_obj_end(json_buf *j);
void json_arr_begin(json_buf *j);
void json_arr_end(json_buf *j);
/* A member name inside an object; the next call must write its value. */
void json_key(json_buf *j, const char *key);
/* A string value (NULL writes null). */
void json_str(json_buf *j, const char *s);
void json_num(json_buf *j, double v);
void json_int(json_buf *j, int64_t v);
void json_bool(json_buf *j, int b);
void json_null(json_buf *j);
/* An object member: json_key then the value, in one call. */
void json_key_str(json_buf *j, const char *key, const char *s);
void json_key_num(json_buf *j, const char *key, double v);
void json_key_int(json_buf *j, const char *key, int64_t v);
void json_key_bool(json_buf *j, const char *key, int b);
/* A value that is already JSON text (e.g. a stored options_json object),
 * copied as is: the caller vouches that it is one valid JSON value (NULL or
 * "" writes null). */
void json_raw(json_buf *j, const char *text);
/* The text json_num writes for v (finite), into buf (cap >= 32). */
void json_fmt_double(double v, char *buf, size_t cap);

/* The text written so far, NUL-terminated; borrowed, valid until the next
 * call on j or json_free.  Never NULL ("" for a NULL or failed buffer). */
const char *json_text(const json_buf *j);
/* 1 when exactly one complete value was written (every call succeeded and
 * all objects/arrays are closed), else 0. */
int json_ok(const json_buf *j);

#endif
