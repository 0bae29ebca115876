/* test_util.h - small helpers the cmocka unit tests share: reading back what a printer wrote to
 * a tmpfile, counting its lines. Test-only, header-only. */
#ifndef FDMINI_TEST_UTIL_H
#define FDMINI_TEST_UTIL_H

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include <cmocka.h>

/* Everything written to f so far (f is left rewound), NUL-terminated; the caller frees it. */
static inline char *read_all(FILE *f)
{
  long n = ftell(f);
  assert_true(n >= 0);
  char *s = malloc((size_t)n + 1);
  assert_non_null(s);
  rewind(f);
  assert_int_equal(fread(s, 1, (size_t)n, f), (size_t)n);
  s[n] = '\0';
  return s;
}

/* Newlines in s. */
static inline int count_lines(const char *s)
{
  int n = 0;
  for (; *s; s++) n += *s == '\n';
  return n;
}

#endif
