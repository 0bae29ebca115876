/* test_json.c - the JSON writer's strings (src/io/json.c): escapes, valid UTF-8 kept byte for
 * byte, and each byte of invalid UTF-8 (a stray byte, a truncated sequence, overlong forms,
 * surrogates, code points past U+10FFFF) written as \ufffd, in values and keys alike. */
#define _POSIX_C_SOURCE 200809L /* open_memstream */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>
#include <mpi.h>

#include "json.h"

/* The record {key: value} as json.c writes it, compared with {want_key: want}; `what` names
 * the case in a failure. */
static void expect_record(const char *key, const char *value, const char *want_key,
                          const char *want, const char *what)
{
  char *buf = NULL;
  size_t len = 0;
  FILE *f = open_memstream(&buf, &len);
  assert_non_null(f);
  fd_json j;
  json_open(&j, f);
  json_str(&j, key, value);
  json_close(&j);
  assert_int_equal(fclose(f), 0);
  char expect[512];
  snprintf(expect, sizeof expect, "{\n  \"%s\": \"%s\"\n}\n", want_key, want);
  if (strcmp(buf, expect) != 0) fail_msg("%s: wrote %s, expected %s", what, buf, expect);
  free(buf);
}

static void expect_json_string(const char *value, const char *want, const char *what)
{
  expect_record("k", value, "k", want, what);
}

static void test_escapes(void **state)
{
  (void)state;
  expect_json_string("plain /path/ 1.0", "plain /path/ 1.0", "ASCII");
  expect_json_string("q\"b\\n\nt\x01\x1f\x7f", "q\\\"b\\\\n\\u000at\\u0001\\u001f\x7f",
                     "quote, backslash, control bytes; DEL as it is");
  expect_json_string("", "", "empty");
}

/* valid sequences of 2, 3 and 4 bytes, at the edges of each length's range, copied as they are */
static void test_valid_utf8_is_kept(void **state)
{
  (void)state;
  const char *valid[] = {
      "\xc3\xa9t\xc3\xa9 \xe2\x88\x91 \xf0\x9f\x98\x80",  /* é t é, ∑, an emoji */
      "\xc2\x80\xdf\xbf",                                 /* U+0080, U+07FF */
      "\xe0\xa0\x80\xed\x9f\xbf\xee\x80\x80\xef\xbf\xbf", /* U+0800, U+D7FF, U+E000, U+FFFF */
      "\xf0\x90\x80\x80\xf4\x8f\xbf\xbf",                 /* U+10000, U+10FFFF */
      "\xef\xbf\xbd",                                     /* U+FFFD itself */
  };
  for (size_t i = 0; i < sizeof valid / sizeof valid[0]; i++)
    expect_json_string(valid[i], valid[i], "valid");
}

/* every byte of an invalid sequence becomes one \ufffd; what follows it is read afresh */
static void test_invalid_utf8_becomes_replacement_characters(void **state)
{
  (void)state;
  static const struct {
    const char *in, *out, *what;
  } cases[] = {
      {"d/s\xff", "d/s\\ufffd", "the snapshot folder of the issue"},
      {"\x80x\xbf", "\\ufffdx\\ufffd", "continuation bytes with no lead"},
      {"\xc0\xaf\xc1\xbf", "\\ufffd\\ufffd\\ufffd\\ufffd", "overlong 2 bytes ('/', U+7F)"},
      {"\xe0\x80\xaf", "\\ufffd\\ufffd\\ufffd", "overlong 3 bytes ('/')"},
      {"\xe0\x9f\xbf", "\\ufffd\\ufffd\\ufffd", "overlong 3 bytes (U+07FF)"},
      {"\xf0\x80\x80\xaf", "\\ufffd\\ufffd\\ufffd\\ufffd", "overlong 4 bytes ('/')"},
      {"\xf0\x8f\xbf\xbf", "\\ufffd\\ufffd\\ufffd\\ufffd", "overlong 4 bytes (U+FFFF)"},
      {"\xed\xa0\x80\xed\xbf\xbf", "\\ufffd\\ufffd\\ufffd\\ufffd\\ufffd\\ufffd", "surrogates"},
      {"\xf4\x90\x80\x80", "\\ufffd\\ufffd\\ufffd\\ufffd", "U+110000"},
      {"\xf5\x80\x80\x80\xf8\xfe", "\\ufffd\\ufffd\\ufffd\\ufffd\\ufffd\\ufffd", "no such lead"},
      {"ab\xe2\x82", "ab\\ufffd\\ufffd", "3 bytes truncated by the end"},
      {"\xf0\x9f\x98", "\\ufffd\\ufffd\\ufffd", "4 bytes truncated by the end"},
      {"\xe2\x82x\xc3", "\\ufffd\\ufffdx\\ufffd", "cut by an ASCII byte"},
      {"\xc3\"", "\\ufffd\\\"", "cut by a quote, escaped"},
      {"\xe2\x82\xc3\xa9", "\\ufffd\\ufffd\xc3\xa9", "cut by a valid sequence, kept"},
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++)
    expect_json_string(cases[i].in, cases[i].out, cases[i].what);
}

/* keys go through the same escaping (mpi_env's keys are environment variable names) */
static void test_keys_are_escaped(void **state)
{
  (void)state;
  expect_record("MPICH_\xff\"x", "v", "MPICH_\\ufffd\\\"x", "v", "invalid key");
  expect_record("\xc3\xa9", "v", "\xc3\xa9", "v", "valid key");
}

int main(int argc, char **argv)
{
  MPI_Init(&argc, &argv);
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_escapes),
      cmocka_unit_test(test_valid_utf8_is_kept),
      cmocka_unit_test(test_invalid_utf8_becomes_replacement_characters),
      cmocka_unit_test(test_keys_are_escaped),
  };
  int failed = cmocka_run_group_tests(tests, NULL, NULL);
  MPI_Finalize();
  return failed;
}
